"""The build is decided once: `factory extract` writes corpus/build.json (languages, native or
translated, the route, what is not used and why), and detect, filter, placeholder, translate and
surrogate do what it says (`--build`) instead of each deriving it again from flags of their own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from deid_factory.argos_env import RouteMissing
from deid_factory.build_decision import BuildDecision, BuildDecisionError
from deid_factory.cli import app
from deid_factory.extract import NothingToBuild, decide, extract
from deid_factory.records import Record, read_records, write_records
from deid_factory.synth import generate_records


def _stand_in_package(folder: Path, source: str, target: str) -> Path:
    """An .argosmodel with only its metadata: what deciding reads (translate would need a model)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"translate-{source}_{target}.argosmodel"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(f"translate-{source}_{target}/metadata.json",
                    json.dumps({"from_code": source, "to_code": target, "type": "translate"}))
    return path


def _run(*args) -> tuple[int, str]:
    result = CliRunner().invoke(app, [str(a) for a in args])
    return result.exit_code, result.output


def _notes(n: int, seed: int = 3, lang: str = "es") -> list[Record]:
    """Annotated notes (the embedded generator stands in for a user's own)."""
    notes = list(generate_records(n, seed, lang))
    for i, note in enumerate(notes):
        note.id = f"note-{i:02d}"
    return notes


# ----------------------------------------------------------------------------- deciding
def test_a_build_in_the_source_language_translates_nothing():
    synth = decide("es", "es", "synth")
    assert synth.uses == {"es": "as_written"} and synth.translation == "none" and not synth.native
    annotated = decide("es", "es", "brat")  # native auto: your own annotated notes in the build's language
    assert annotated.uses == {"es": "native"} and annotated.native and annotated.keeps_all
    forced = decide("es", "es", "brat", native="no")
    assert forced.uses == {"es": "surrogates"} and not forced.native
    with pytest.raises(ValueError, match="must be in the build's language"):
        decide("es", "fr", "brat", native="yes")


def test_the_route_is_looked_for_where_translate_will_find_it(tmp_path):
    packages, installed = tmp_path / "assets" / "argos", tmp_path / "assets" / "argos_installed"
    packages.mkdir(parents=True)
    skipped = decide("es", "fr", "synth", native_share=0.5, packages_dir=packages, argos_dir=installed, if_no_route="skip")
    assert skipped.uses == {"es": "skipped", "fr": "as_written"} and skipped.translation_skipped
    assert "translate-es_en.argosmodel" in skipped.skipped[0]["why"] and "languages/fr/assets/argos/" in skipped.skipped[0]["why"]
    with pytest.raises(RouteMissing, match="no Argos route es -> fr"):
        decide("es", "fr", "synth", native_share=0.5, packages_dir=packages, argos_dir=installed, if_no_route="fail")
    with pytest.raises(NothingToBuild, match="no records left to build fr"):  # no route and nothing native
        decide("es", "fr", "synth", native_share=0.0, packages_dir=packages, argos_dir=installed, if_no_route="skip")

    _stand_in_package(packages, "es", "en")
    assert decide("es", "fr", "synth", native_share=0.5, packages_dir=packages, argos_dir=installed,
                  if_no_route="skip").translation_skipped  # half a pivot route is none
    _stand_in_package(packages, "en", "fr")  # the pivot route (pivot_lang en of languages/fr/locale.yml)
    pivot = decide("es", "fr", "synth", native_share=0.5, packages_dir=packages, argos_dir=installed, if_no_route="fail")
    assert pivot.route == ["es", "en", "fr"] and pivot.uses == {"es": "translate", "fr": "as_written"}
    # a package Argos has installed already counts too, and the direct route wins
    (installed / "translate-es_fr").mkdir(parents=True)
    (installed / "translate-es_fr" / "metadata.json").write_text(json.dumps({"from_code": "es", "to_code": "fr"}))
    assert decide("es", "fr", "synth", packages_dir=packages, argos_dir=installed).route == ["es", "fr"]
    # told neither folder, extract does not guess: translate looks (and applies its own --if-no-route)
    assert decide("es", "fr", "synth").translation == "unchecked"


def test_the_decision_agrees_with_argos_on_real_packages(argos_home, argos_packages, tmp_path):
    """The route read from the packages' metadata is the one ArgosRoute.open takes."""
    from deid_factory.argos_env import ArgosRoute

    decided = decide("es", "fr", "synth", packages_dir=argos_packages["pivot"], argos_dir=tmp_path / "argos")
    opened = ArgosRoute.open("es", "fr", argos_packages["pivot"], tmp_path / "argos")
    assert decided.route == opened.route == ["es", "en", "fr"]
    # once installed, the packages folder is no longer needed to find it
    assert decide("es", "fr", "synth", packages_dir=tmp_path / "empty", argos_dir=tmp_path / "argos").route == ["es", "en", "fr"]


def test_without_a_route_the_source_is_not_read_at_all(tmp_path):
    """A translation build with no route extracts no source record: a source that could not even
    be read passes, and the build file says what was left out and why."""
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"id": "x", "text": "no closing brace"\n', encoding="utf-8")
    packages = tmp_path / "argos"
    packages.mkdir()
    rep = extract(broken, "jsonl", "es", tmp_path / "out.jsonl", n=5, seed=2, lang="fr", native_share=0.5,
                  packages_dir=packages, if_no_route="skip", build_path=tmp_path / "build.json")
    records = list(read_records(tmp_path / "out.jsonl"))
    assert [r.lang for r in records] == ["fr"] * 5  # n records of the native corpus, as with native_share 1
    build = BuildDecision.read(tmp_path / "build.json")
    assert build.to_dict() == rep["build"] and build.records == {"es": 0, "fr": 5}
    assert build.skipped[0]["what"] == "es source records" and "no Argos route es -> fr" in build.skipped[0]["why"]
    assert "reader" not in rep
    # with the route, the same source is read (and its bad line named)
    _stand_in_package(packages, "es", "fr")
    with pytest.raises(ValueError, match="broken.jsonl"):
        extract(broken, "jsonl", "es", tmp_path / "out2.jsonl", lang="fr", native_share=0.5, packages_dir=packages)


def test_a_build_file_that_is_not_one_is_named(tmp_path):
    bad = tmp_path / "build.json"
    bad.write_text(json.dumps({"lang": "fr", "source_lang": "es", "source_format": "synth", "uses": {"fr": "maybe"}}))
    with pytest.raises(BuildDecisionError, match=f"{bad}: unknown use"):
        BuildDecision.read(bad)
    code, printed = _run("detect", tmp_path / "in.jsonl", tmp_path / "out.jsonl", "--build", tmp_path / "missing.json")
    assert code == 2 and "no build decision" in printed and "factory extract" in printed


# ----------------------------------------------------------------------------- the stages read it
def test_the_build_file_drives_detect_and_filter_of_a_mixed_build(tmp_path):
    """A fr build from an es source with half native fr records: detect checks the fr records
    against French (not the source's Spanish), filter passes them whole; the same stages told only
    the source language drop or judge them."""
    write_records(tmp_path / "src.jsonl", _notes(6))
    build = tmp_path / "build.json"
    code, printed = _run("extract", tmp_path / "src.jsonl", "--format", "jsonl", "--source-lang", "es", "--lang", "fr",
                         "--native-share", "0.5", "--out", tmp_path / "ex.jsonl", "--build", build)
    assert code == 0, printed
    assert "build fr from jsonl es: 6 es records to translate" in printed and "6 fr synthetic records (kept as written)" in printed

    assert _run("detect", tmp_path / "ex.jsonl", tmp_path / "det.jsonl", "--build", build,
                "--report", tmp_path / "det.json")[0] == 0
    assert json.loads((tmp_path / "det.json").read_text())["records_kept"] == 12
    assert _run("detect", tmp_path / "ex.jsonl", tmp_path / "det_es.jsonl", "--source-lang", "es",
                "--report", tmp_path / "det_es.json")[0] == 0
    assert json.loads((tmp_path / "det_es.json").read_text())["dropped_by_language"] == {"fr": 6}
    code, printed = _run("detect", tmp_path / "ex.jsonl", tmp_path / "x.jsonl", "--build", build, "--source-lang", "es")
    assert code != 0 and "not both" in printed  # one source of truth per run

    # thresholds so tight that they would remove nearly every judged record
    code, printed = _run("filter", tmp_path / "det.jsonl", tmp_path / "filt.jsonl", "--build", build, "--k-std", "0.01",
                         "--report", tmp_path / "filt.json")
    assert code == 0, printed
    report = json.loads((tmp_path / "filt.json").read_text())
    kept = list(read_records(tmp_path / "filt.jsonl"))
    assert report["thresholds"]["as_written_kept"] == 6 and sum(r.lang == "fr" for r in kept) == 6
    assert sum(r.lang == "es" for r in kept) < 6  # the translated part is judged
    assert _run("filter", tmp_path / "det.jsonl", tmp_path / "filt_es.jsonl", "--source-lang", "es", "--lang", "fr",
                "--k-std", "0.01")[0] == 0
    assert sum(r.lang == "fr" for r in read_records(tmp_path / "filt_es.jsonl")) < 6  # judged too without the build


def _build_through_the_stages(tmp_path: Path, notes: list[Record], *extract_options: str) -> tuple[dict, Path]:
    """extract (with extract_options) .. surrogate on `notes`, every later stage told only --build."""
    write_records(tmp_path / "notes.jsonl", notes)
    c, build = tmp_path / "corpus", tmp_path / "corpus" / "build.json"
    steps = [
        ["extract", tmp_path / "notes.jsonl", "--format", "jsonl", "--lang", "es", *extract_options,
         "--out", c / "extracted.jsonl", "--build", build],
        ["detect", c / "extracted.jsonl", c / "detected.jsonl", "--build", build],
        ["filter", c / "detected.jsonl", c / "filtered.jsonl", "--build", build, "--k-std", "1.0"],
        ["placeholder", c / "filtered.jsonl", c / "placeholder.jsonl", "--build", build],
        ["translate", c / "placeholder.jsonl", c / "translated.jsonl", "--build", build, "--no-progress"],
        ["surrogate", c / "translated.jsonl", c / "final", "--build", build, "--originals", c / "filtered.jsonl",
         "--seed", "1"],
    ]
    for step in steps:
        code, printed = _run(*step)
        assert code == 0, (step[0], printed)
    return json.loads((c / "final" / "report.json").read_text()), c


def test_a_native_build_file_keeps_every_note_as_annotated(tmp_path):
    """Annotated notes in the build's language (native auto): detection and thresholds only report,
    the notes train as annotated; the same notes with `--native no` at extract lose the note that
    is not Spanish and the over-long one, and get surrogates."""
    notes = _notes(10)
    notes[0].text = "Patient stable.\n" + "The patient was discharged home today and will be seen again in clinic next week. " * 3
    notes[0].spans = []
    notes[1].text = notes[1].text * 12  # far over the length threshold
    report, corpus = _build_through_the_stages(tmp_path / "native", notes)
    assert json.loads((corpus / "build.json").read_text())["uses"] == {"es": "native"}
    final = {r.id: r for r in read_records(corpus / "final" / "records.jsonl")}
    assert report["native"] and set(final) == {n.id for n in notes}
    assert all(final[n.id].text == n.text for n in notes)  # as annotated, no surrogate

    report, corpus = _build_through_the_stages(tmp_path / "not_native", notes, "--native", "no")
    assert json.loads((corpus / "build.json").read_text())["uses"] == {"es": "surrogates"}
    final = {r.id: r for r in read_records(corpus / "final" / "records.jsonl")}
    assert not report["native"] and notes[0].id not in final and notes[1].id not in final
    assert sum(final[n.id].text != n.text for n in notes[2:]) >= 6  # surrogates drawn


# ----------------------------------------------------------------------------- through the project
@pytest.mark.slow
def test_a_fr_build_without_a_route_extracts_no_spanish_record_and_says_so(tmp_path):
    """`spacy project run` of the corpus steps of languages/fr with no Argos package: extract writes
    the native French records alone, says in one line that translation is skipped and why, every
    later step passes them through, and translate says it translated nothing. Adding the packages
    changes extract's deps: the next run decides again."""
    from test_build_e2e import FACTORY_ROOT, _copy_project

    project = _copy_project("fr", tmp_path)
    env = {**os.environ, **FACTORY_ROOT}

    def run(step: str) -> str:
        ret = subprocess.run([sys.executable, "-m", "spacy", "project", "run", step, str(project), "--vars.n_records", "6"],
                             cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
        assert ret.returncode == 0, (step, ret.stdout[-3000:], ret.stderr[-3000:])
        return ret.stdout + ret.stderr

    printed = "".join(run(step) for step in ("extract", "detect", "filter", "placeholder", "translate"))
    corpus = project / "corpus"
    assert [r.lang for r in read_records(corpus / "extracted.jsonl")] == ["fr"] * 6
    build = json.loads((corpus / "build.json").read_text())
    assert build["uses"] == {"es": "skipped", "fr": "as_written"} and build["translation"] == "skipped"
    said = [line for line in printed.splitlines() if line.startswith("translation skipped")]
    assert len(said) == 1 and "the es source records are not extracted" in said[0] and "assets/argos" in said[0]
    assert json.loads((corpus / "detect_report.json").read_text())["records_read"] == 6
    translated = json.loads((corpus / "translate_report.json").read_text())
    assert translated["translated"] == 0 and translated["passed_through"] == 6
    assert translated["translation"].startswith("skipped at extract")
    assert "translate es -> fr: 0 translated, 0 dropped {}, 6 passed through (already in fr)" in printed
    assert "1000 kept" not in printed and "es records not used" not in printed

    # the packages arrive: extract's deps changed, so it runs again (no --force) and decides again
    argos = project / "assets" / "argos"
    _stand_in_package(argos, "es", "en")
    _stand_in_package(argos, "en", "fr")
    again = run("extract")
    assert "Skipping 'extract'" not in again
    build = json.loads((corpus / "build.json").read_text())
    assert build["translation"] == "route" and build["route"] == ["es", "en", "fr"] and build["uses"]["es"] == "translate"
    assert sorted({r.lang for r in read_records(corpus / "extracted.jsonl")}) == ["es", "fr"]
