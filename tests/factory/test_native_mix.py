"""A build for another language mixes the translated source with the target's own synthetic corpus
(corpora/synth/<target>/), and without an installed Argos route builds on the native part alone
(decided at extract: the source is then not extracted at all)."""

from __future__ import annotations

import json

import pytest

from deid_factory.extract import extract
from deid_factory.placeholders import placeholder_file
from deid_factory.records import Record, Span, read_records, write_records
from deid_factory.argos_env import RouteMissing
from deid_factory.translate_job import TranslateOptions, translate_file


def _source(tmp_path, lang: str = "fr", n: int = 4):
    text = "Le patient Jean Martin est vu le 3 mars 2021 pour une douleur abdominale."
    records = [Record(f"src-{i}", lang, text, [Span(11, 22, "PERSON"), Span(33, 45, "DATE")], {}) for i in range(n)]
    path = tmp_path / "src.jsonl"
    write_records(path, records)
    return path


def test_extract_mixes_the_targets_own_synthetic_corpus(tmp_path):
    src = _source(tmp_path)
    rep = extract(src, "jsonl", "fr", tmp_path / "half.jsonl", lang="es", native_share=0.5)
    half = list(read_records(tmp_path / "half.jsonl"))
    assert rep["native_synth"] == {"share": 0.5, "records": 4, "source_records": 4}
    assert sorted(r.lang for r in half) == ["es"] * 4 + ["fr"] * 4
    assert all(r.spans for r in half)
    # which records are which is the build's decision (the record's language), not a mark on the record
    assert rep["build"]["uses"] == {"fr": "translate", "es": "as_written"} and rep["build"]["records"] == {"fr": 4, "es": 4}
    assert not any("native_synth" in r.meta or "native" in r.meta for r in half)

    quarter = extract(src, "jsonl", "fr", tmp_path / "q.jsonl", lang="es", native_share=0.2)
    assert quarter["native_synth"]["records"] == 1  # 4 source records * 0.2 / 0.8

    only = extract(src, "jsonl", "fr", tmp_path / "only.jsonl", lang="es", native_share=1.0, n=6)
    assert [r.lang for r in read_records(tmp_path / "only.jsonl")] == ["es"] * 6
    assert only["build"]["uses"]["fr"] == "skipped" and "reader" not in only  # the source is not even read

    none = extract(src, "jsonl", "fr", tmp_path / "none.jsonl", lang="xx", native_share=0.5)
    assert none["native_synth"]["records"] == 0 and "corpora/synth/xx" in none["native_synth"]["reason"]
    assert none["records_written"] == 4 and "corpora/synth/xx" in none["build"]["skipped"][0]["why"]
    same = extract(src, "jsonl", "fr", tmp_path / "same.jsonl", lang="fr", native_share=0.5)
    assert "native_synth" not in same  # a build in the source's own language has nothing to mix
    with pytest.raises(ValueError, match="between 0 and 1"):
        extract(src, "jsonl", "fr", tmp_path / "bad.jsonl", lang="es", native_share=1.5)


def test_translate_passes_native_records_through_and_skips_without_a_route(tmp_path):
    """translate alone (its route not decided at extract: extract was not told where the packages
    are) still skips the source without a route, with --if-no-route skip."""
    src = _source(tmp_path)
    extract(src, "jsonl", "fr", tmp_path / "mixed.jsonl", lang="es", native_share=0.5)
    placeholder_file(tmp_path / "mixed.jsonl", tmp_path / "ph.jsonl", "es")
    empty = tmp_path / "no_packages"
    empty.mkdir()
    with pytest.raises(RouteMissing):
        translate_file(tmp_path / "ph.jsonl", tmp_path / "fail.jsonl", TranslateOptions("fr", "es", packages_dir=empty,
                       argos_dir=tmp_path / "argos", progress=False))
    report = translate_file(tmp_path / "ph.jsonl", tmp_path / "tr.jsonl", TranslateOptions("fr", "es", packages_dir=empty,
                            argos_dir=tmp_path / "argos", progress=False, if_no_route="skip"))
    out = list(read_records(tmp_path / "tr.jsonl"))
    assert report["skipped_no_route"] == 4 and report["native_passed_through"] == 4
    assert "translate-fr_es" in report["no_route"] or "translate-fr_en" in report["no_route"]
    assert len(out) == 4 and all(r.lang == "es" and r.meta["translation"]["skipped"] for r in out)
    # the native texts are untouched: same placeholder text in, same text out
    by_id = {r.id: r for r in read_records(tmp_path / "ph.jsonl")}
    assert all(r.text == by_id[r.id].text for r in out)


def test_translate_cli_says_in_one_line_that_translation_was_skipped(tmp_path):
    from typer.testing import CliRunner

    from deid_factory.cli import app

    src = _source(tmp_path)
    extract(src, "jsonl", "fr", tmp_path / "mixed.jsonl", lang="es", native_share=0.5)
    placeholder_file(tmp_path / "mixed.jsonl", tmp_path / "ph.jsonl", "es")
    (tmp_path / "pk").mkdir()
    args = ["translate", str(tmp_path / "ph.jsonl"), str(tmp_path / "tr.jsonl"), "--source-lang", "fr", "--lang", "es",
            "--packages-dir", str(tmp_path / "pk"), "--argos-dir", str(tmp_path / "argos"), "--no-progress", "--if-no-route", "skip"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    lines = [l for l in result.output.splitlines() if l.startswith("translation skipped")]
    assert len(lines) == 1 and "4 fr records not used" in lines[0] and ".argosmodel" in lines[0]
    # the offline way first (a folder of files), never an online package manager as the advice
    assert "languages/es/assets/argos/" in lines[0] and "argospm" not in lines[0]
    assert lines[0].index("Offline:") < lines[0].index("online")
    # nothing native to fall back on: a clear failure, not an empty model
    write_records(tmp_path / "only_fr.jsonl", [r for r in read_records(tmp_path / "ph.jsonl") if r.lang == "fr"])
    args[1], args[2] = str(tmp_path / "only_fr.jsonl"), str(tmp_path / "tr2.jsonl")
    failed = CliRunner().invoke(app, args)
    assert failed.exit_code == 1 and "no records left" in failed.output


def test_native_records_pass_through_an_installed_route(argos_home, argos_packages, tmp_path):
    """With the es -> en -> fr copy-model route: the es records are translated through the pivot,
    the fr record of the mix is written as it is, never sent to Argos."""
    text = "Paciente Ana Ruiz, ingresa el 3 de marzo."
    es = [Record(f"es-{i}", "es", text, [Span(9, 17, "PERSON"), Span(30, 40, "DATE")], {}) for i in range(2)]
    fr = Record("fr-0", "fr", "Patiente Anne Roux, vue le 3 mars.", [Span(9, 18, "PERSON"), Span(27, 33, "DATE")], {})
    write_records(tmp_path / "mixed.jsonl", [*es, fr])
    placeholder_file(tmp_path / "mixed.jsonl", tmp_path / "ph.jsonl", "fr")
    report = translate_file(tmp_path / "ph.jsonl", tmp_path / "tr.jsonl", TranslateOptions("es", "fr", packages_dir=argos_packages["pivot"],
                            argos_dir=tmp_path / "argos", beam_size=1, progress=False))
    out = {r.id: r for r in read_records(tmp_path / "tr.jsonl")}
    assert report["route"] == ["es", "en", "fr"] and report["native_passed_through"] == 1
    assert out["fr-0"].meta["translation"]["reason"] == "already in the target language"
    assert all(out[r.id].meta["translation"]["route"] == ["es", "en", "fr"] for r in es)
    assert json.dumps(report)  # the report stays JSON


def test_a_run_without_the_route_removes_what_an_earlier_run_translated(argos_home, argos_packages, tmp_path):
    """An earlier build translated part of the source (interrupted), then the packages were removed
    and the build run again: its one line says translation was skipped and the build goes on with
    the native records, so the records translated before must not stay in the corpus as if native."""
    text = "Paciente Ana Ruiz, ingresa el 3 de marzo."
    es = [Record(f"es-{i}", "es", text, [Span(9, 17, "PERSON"), Span(30, 40, "DATE")], {}) for i in range(3)]
    fr = Record("fr-0", "fr", "Patiente Anne Roux, vue le 3 mars.", [Span(9, 18, "PERSON"), Span(27, 33, "DATE")], {})
    write_records(tmp_path / "mixed.jsonl", [*es, fr])
    placeholder_file(tmp_path / "mixed.jsonl", tmp_path / "ph.jsonl", "fr")
    first = translate_file(tmp_path / "ph.jsonl", tmp_path / "tr.jsonl", TranslateOptions(
        "es", "fr", packages_dir=argos_packages["pivot"], argos_dir=tmp_path / "argos", beam_size=1, progress=False, limit=2))
    assert first["kept"] + first["repaired"] == 2 and first["route"] == ["es", "en", "fr"]  # 2 of the 3 es records
    (tmp_path / "none").mkdir()
    again = translate_file(tmp_path / "ph.jsonl", tmp_path / "tr.jsonl", TranslateOptions(
        "es", "fr", packages_dir=tmp_path / "none", argos_dir=tmp_path / "argos_empty", progress=False, if_no_route="skip"))
    out = list(read_records(tmp_path / "tr.jsonl"))
    assert [r.id for r in out] == ["fr-0"]
    assert again["skipped_no_route"] == 3 and again["removed_earlier_translations"] == 2
    assert again["kept"] + again["repaired"] == 1 and again["resumed_from"] == 0


def test_records_the_generator_wrote_in_the_target_language_keep_their_values(tmp_path):
    """The synthetic corpus of the target language already holds fictitious target-locale values in
    more forms than the surrogate engine draws: the surrogate stage keeps them as written, and
    surrogates only what was translated (or any record when it is not given the originals)."""
    from deid_factory.surrogates.stage import surrogate_file

    src = _source(tmp_path, n=6)
    extract(src, "jsonl", "fr", tmp_path / "mixed.jsonl", lang="es", native_share=0.5)
    placeholder_file(tmp_path / "mixed.jsonl", tmp_path / "ph.jsonl", "es")
    (tmp_path / "pk").mkdir()
    translate_file(tmp_path / "ph.jsonl", tmp_path / "tr.jsonl", TranslateOptions("fr", "es", packages_dir=tmp_path / "pk",
                   argos_dir=tmp_path / "argos", progress=False, if_no_route="skip"))
    generated = {r.id: r for r in read_records(tmp_path / "mixed.jsonl") if r.lang == "es"}
    assert len(generated) == 6

    report = surrogate_file(tmp_path / "tr.jsonl", tmp_path / "final", "es", seed=1, splits="1,0,0",
                            generated=tmp_path / "mixed.jsonl")
    out = {r.id: r for r in read_records(tmp_path / "final" / "records.jsonl")}
    assert report["kept_as_generated"] == 6 and report["records_out"] == 6
    for rid, original in generated.items():
        assert out[rid].text == original.text
        assert [(s.start, s.end, s.label) for s in out[rid].spans] == [(s.start, s.end, s.label) for s in original.spans]

    # without the originals the same records are surrogate-replaced, as before
    again = surrogate_file(tmp_path / "tr.jsonl", tmp_path / "final2", "es", seed=1, splits="1,0,0")
    redrawn = {r.id: r for r in read_records(tmp_path / "final2" / "records.jsonl")}
    assert again["kept_as_generated"] == 0
    assert sum(redrawn[rid].text != original.text for rid, original in generated.items()) >= 5


def test_a_same_language_synthetic_build_keeps_the_generated_values(tmp_path):
    from deid_factory.surrogates.stage import surrogate_file

    rep = extract("-", "synth", "es", tmp_path / "ex.jsonl", n=8, seed=3, lang="es")
    assert rep["build"]["uses"] == {"es": "as_written"} and rep["build"]["translation"] == "none"
    placeholder_file(tmp_path / "ex.jsonl", tmp_path / "ph.jsonl", "es")
    translate_file(tmp_path / "ph.jsonl", tmp_path / "tr.jsonl", TranslateOptions("es", "es", progress=False))
    report = surrogate_file(tmp_path / "tr.jsonl", tmp_path / "final", "es", seed=1, splits="1,0,0",
                            generated=tmp_path / "ex.jsonl")
    originals = {r.id: r.text for r in read_records(tmp_path / "ex.jsonl")}
    out = list(read_records(tmp_path / "final" / "records.jsonl"))
    assert report["kept_as_generated"] == 8 and all(r.text == originals[r.id] for r in out)
    # records that were in another language before translation (here: the same notes marked fr)
    # are translated ones: never kept as written
    as_french = [r for r in read_records(tmp_path / "ex.jsonl")]
    for record in as_french:
        record.lang = "fr"
    write_records(tmp_path / "ex_fr.jsonl", as_french)
    other = surrogate_file(tmp_path / "tr.jsonl", tmp_path / "final_fr", "es", seed=1, splits="1,0,0",
                           generated=tmp_path / "ex_fr.jsonl")
    assert other["kept_as_generated"] == 0
