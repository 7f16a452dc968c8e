"""Redaction modes, document-consistent surrogates, date shifting, and the redact CLI."""

import json
import re

import pytest

from conftest import spans_of, use_checkout_surrogate_data  # tests/ is on sys.path (pyproject's pythonpath)
from deid_runtime.redact import Redactor, redact_text, shift_date

# the surrogates draw from languages/<lc>/surrogate_data/ of this checkout: alone, this module imported
# nothing that registers them (deid_factory.locale does, on import), and its surrogate tests failed
use_checkout_surrogate_data()
KEY = b"a test key of 32 bytes, not used"  # surrogate mode draws from a secret key

TEXT = "ANA PÉREZ GARCÍA ingresó el 03/04/2020. Ana Pérez García volvió el 3 de abril de 2020 a Lugo."


SPANS = spans_of(TEXT, [("ANA PÉREZ GARCÍA", "PERSON"), ("03/04/2020", "DATE"), ("Ana Pérez García", "PERSON"),
                      ("3 de abril de 2020", "DATE"), ("Lugo", "LOCATION")])


def test_tags_and_masks():
    tagged, spans = redact_text(TEXT, SPANS, "tag")
    assert tagged == "[PERSON] ingresó el [DATE]. [PERSON] volvió el [DATE] a [LOCATION]."
    assert [tagged[s:e] for s, e, _ in spans] == ["[PERSON]", "[DATE]", "[PERSON]", "[DATE]", "[LOCATION]"]
    masked, spans = redact_text(TEXT, SPANS, "mask")
    assert masked == "***** ingresó el *****. ***** volvió el ***** a *****."
    assert [masked[s:e] for s, e, _ in spans] == ["*****"] * 5
    kept, _ = redact_text(TEXT, SPANS, "mask", mask_length="keep")
    assert len(kept) == len(TEXT) and "PÉREZ" not in kept and "*** ***** ******" in kept
    with pytest.raises(ValueError, match="mode"):
        redact_text(TEXT, SPANS, "blur")
    with pytest.raises(ValueError, match="mask length"):
        redact_text(TEXT, SPANS, "mask", mask_length="short")


def test_a_mask_does_not_tell_the_length_of_what_it_hides():
    """Issue 30: "HOSPITAL UNIVERSITARIO LA PAZ" masked word by word kept the shape of the name (8,
    13, 2 and 3 letters): by default every masked span is the same five characters."""
    text = "Ingresa en HOSPITAL UNIVERSITARIO LA PAZ, visto por Dr. Gil y por Dra. Montserrat Puigdemont."
    spans = spans_of(text, [("HOSPITAL UNIVERSITARIO LA PAZ", "ORGANIZATION"), ("Gil", "PERSON"),
                          ("Montserrat Puigdemont", "PERSON")])
    masked, placed = redact_text(text, spans, "mask")
    assert {masked[s:e] for s, e, _ in placed} == {"*****"}
    assert masked == "Ingresa en *****, visto por Dr. ***** y por Dra. *****."


def test_surrogates_are_consistent_and_dates_shift_by_one_offset():
    out, spans = redact_text(TEXT, SPANS, "surrogate", lang="es", doc_id="doc-1", key=KEY)
    values = [out[s:e] for s, e, _ in spans]
    for original in ("PÉREZ", "Pérez", "03/04/2020", "Lugo"):
        assert original not in out
    # same person, different casing: same surrogate, casing kept per mention
    assert values[0] == values[0].upper() and values[0].casefold() == values[2].casefold()
    assert len(values[0].split()) == 3
    # both dates moved by the same number of days and kept their format
    assert re.fullmatch(r"\d{2}/\d{2}/\d{4}", values[1])
    assert re.fullmatch(r"\d{1,2} de [a-z]+ de \d{4}", values[3])
    sur = Redactor(KEY).document("doc-1", "es")
    assert shift_date("03/04/2020", sur.date_shift, "es") == values[1]
    assert shift_date("3 de abril de 2020", sur.date_shift, "es") == values[3]
    # deterministic per (key, document), different across documents
    assert redact_text(TEXT, SPANS, "surrogate", lang="es", doc_id="doc-1", key=KEY)[0] == out
    assert redact_text(TEXT, SPANS, "surrogate", lang="es", doc_id="doc-2", key=KEY)[0] != out


@pytest.mark.parametrize("value,days,lang,expected", [
    ("03/04/2020", 30, "es", "03/05/2020"),
    ("3/4/20", -3, "fr", "31/3/20"),
    ("04/03/2020", 1, "en", "04/04/2020"),
    ("2020-04-03", 365, "de", "2021-04-03"),
    ("3 de abril de 2020", 30, "es", "3 de mayo de 2020"),
    ("April 3, 2020", -3, "en", "March 31, 2020"),
    ("12 MARS 2019", 20, "fr", "1 AVRIL 2019"),
    ("2019", -10, "es", "2018"),
    ("ayer", 5, "es", None),
])
def test_shift_date_keeps_the_format(value, days, lang, expected):
    assert shift_date(value, days, lang) == expected


def _router():
    import spacy

    from deid_factory.package import default_pack_dir
    from deid_runtime import merger, pack_component  # noqa: F401
    from deid_runtime.regex_pack import RegexPack
    from deid_runtime.router import Router

    pipes = {}
    for lang in ("es", "fr"):
        nlp = spacy.blank(lang)
        nlp.add_pipe("deid_regex_pack", config={"write_ents": False}).pack = RegexPack.from_dir(default_pack_dir(lang))
        nlp.add_pipe("deid_merger")
        pipes[lang] = nlp
    return Router(pipes)


ES_DOC = "La paciente acude a urgencias por dolor abdominal. Teléfono de contacto 612 345 678, correo ana.perez@correo.es."
FR_DOC = "Le patient est admis aux urgences pour une douleur thoracique. Courriel jean.dupont@exemple.fr."


def test_redact_cli_handles_folders_jsonl_bad_and_empty_files(tmp_path, caplog):
    from deid_factory.redact_engine import redact_files

    src = tmp_path / "in"
    (src / "sub").mkdir(parents=True)
    (src / "a.txt").write_text(ES_DOC, encoding="utf-8")
    (src / "sub" / "b.txt").write_text(FR_DOC, encoding="utf-8")
    (src / "empty.txt").write_text("  \n", encoding="utf-8")
    (src / "latin1.txt").write_bytes("Paciente José, teléfono 612 345 678".encode("latin-1"))
    records = tmp_path / "records.jsonl"
    records.write_text(json.dumps({"id": "r1", "text": FR_DOC}) + "\nnot json\n", encoding="utf-8")

    router = _router()
    out = tmp_path / "out"
    with caplog.at_level("INFO"):
        report = redact_files([src, records], out, "text", "tag", router=router, progress=False)
    assert report["written"] == 3
    problems = {p["input"].split("/")[-1]: p["problem"] for p in report["skipped"]}
    assert problems["empty.txt"] == "empty" and problems["latin1.txt"].startswith("not UTF-8")
    assert problems["records.jsonl:2"] == "not valid JSON"
    # two inputs: each keeps its folder's name under OUT (a JSONL record is named by its id)
    a = (out / "in" / "a.txt").read_text(encoding="utf-8")
    assert "[PHONE]" in a and "[EMAIL]" in a and "ana.perez" not in a
    assert "[EMAIL]" in (out / "in" / "sub" / "b.txt").read_text(encoding="utf-8")
    assert (out / "r1.txt").exists()
    assert report["router"]["by_pipeline"] == {"es": 1, "fr": 2}
    # no PHI in the log
    assert "ana.perez" not in caplog.text and "612 345" not in caplog.text

    jl = tmp_path / "spans.jsonl"
    redact_files([src / "a.txt"], jl, "jsonl", "mask", router=_router(), progress=False)
    row = json.loads(jl.read_text(encoding="utf-8"))
    assert row["lang"] == "es" and {s["label"] for s in row["spans"]} >= {"PHONE", "EMAIL"}
    # the default mask has one width whatever it hides (a mask as long as the value tells its length)
    assert row["redacted"].count("*****") == 2 and "612" not in row["redacted"]
    redact_files([src / "a.txt"], jl, "jsonl", "mask", router=_router(), progress=False, mask_length="keep")
    assert len(json.loads(jl.read_text(encoding="utf-8"))["redacted"]) == len(ES_DOC)

    brat = tmp_path / "brat"
    redact_files([src / "a.txt"], brat, "brat", router=_router(), progress=False)
    ann = (brat / "a.ann").read_text(encoding="utf-8").splitlines()
    t = (brat / "a.txt").read_text(encoding="utf-8")
    for line in ann:
        _, mid, value = line.split("\t")
        label, s, e = mid.split()
        assert t[int(s):int(e)] == value


def test_the_mode_and_format_are_checked_once_before_anything_runs(tmp_path):
    """The redaction modes are the runtime's (deid_runtime.redact.MODES) plus annotate; a mode or a
    format that is none of them stops the run with one line listing the choices, before any input
    is read or output written (the command's options take the same values)."""
    from deid_factory.redact_engine import OutputFormat, RedactMode, redact_files
    from deid_runtime.redact import MODES

    assert {m.value for m in RedactMode if m.redacts} == set(MODES) and not RedactMode.ANNOTATE.redacts
    (tmp_path / "a.txt").write_text(ES_DOC, encoding="utf-8")
    out = tmp_path / "out"
    with pytest.raises(ValueError, match=r"unknown mode 'blank' \(expected one of tag, mask, surrogate, annotate\)"):
        redact_files([tmp_path / "a.txt"], out, "text", "blank", router=_router(), progress=False)
    with pytest.raises(ValueError, match=r"unknown output format 'csv' \(expected one of text, jsonl, brat\)"):
        redact_files([tmp_path / "a.txt"], out, "csv", RedactMode.TAG, router=_router(), progress=False)
    with pytest.raises(ValueError, match="needs --format jsonl or brat"):
        redact_files([tmp_path / "a.txt"], out, OutputFormat.TEXT, "annotate", router=_router(), progress=False)
    assert not out.exists()
    report = redact_files([tmp_path / "a.txt"], out, OutputFormat.TEXT, RedactMode.MASK, router=_router(), progress=False)
    assert report["mode"] == "mask" and report["format"] == "text" and json.loads(json.dumps(report))["mode"] == "mask"
    assert "*****" in (out / "a.txt").read_text(encoding="utf-8")


# ----------------------------------------------------------------------------- surrogate mode of the CLI
def test_redact_cli_refuses_surrogate_mode_without_a_key(tmp_path, monkeypatch):
    """The old default seeded surrogates with crc32(seed:doc_id), seed 0: anyone could undo them."""
    from typer.testing import CliRunner

    from deid_factory.cli import app
    from deid_runtime.redact import KEY_ENV

    monkeypatch.delenv(KEY_ENV, raising=False)
    (tmp_path / "a.txt").write_text(ES_DOC, encoding="utf-8")
    result = CliRunner().invoke(app, ["redact", str(tmp_path / "a.txt"), "--out", str(tmp_path / "out"), "--mode", "surrogate"])
    assert result.exit_code == 1
    assert result.output.strip().count("\n") == 0 and "surrogate mode needs a secret key" in result.output
    assert not (tmp_path / "out").exists()
    (tmp_path / "short.key").write_text("abc", encoding="utf-8")
    result = CliRunner().invoke(app, ["redact", str(tmp_path / "a.txt"), "--out", str(tmp_path / "out"), "--mode",
                                      "surrogate", "--key-file", str(tmp_path / "short.key")])
    assert result.exit_code == 1 and "at least 16" in result.output


def test_redact_cli_surrogates_come_from_the_key(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from deid_factory.cli import app
    from deid_runtime.redact import KEY_ENV

    pipes = tmp_path / "pipes"
    pipes.mkdir()
    for lang, nlp in _router().pipelines.items():
        nlp.to_disk(pipes / lang)
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.txt").write_text(ES_DOC, encoding="utf-8")
    key_file = tmp_path / "surrogate.key"
    key_file.write_bytes(KEY)

    def run(*extra, env=None):
        out = tmp_path / f"out{len(list(tmp_path.glob('out*')))}"
        monkeypatch.delenv(KEY_ENV, raising=False)
        for name, value in (env or {}).items():
            monkeypatch.setenv(name, value)
        result = CliRunner().invoke(app, ["redact", str(tmp_path / "in"), "--out", str(out), "--mode", "surrogate", "-q",
                                          "--pipelines", f"{pipes / 'es'},{pipes / 'fr'}", *extra])
        assert result.exit_code == 0, result.output
        return (out / "a.txt").read_text(encoding="utf-8")

    from_file = run("--key-file", str(key_file))
    assert "612 345 678" not in from_file and "ana.perez" not in from_file
    assert re.search(r"\b6\d\d \d{3} \d{3}\b", from_file)  # a Spanish mobile again, same layout
    assert run("--key-file", str(key_file)) == from_file  # reproducible with the key
    assert run(env={KEY_ENV: KEY.decode()}) == from_file  # the key from the environment
    assert run(env={KEY_ENV: "another secret key, 32 bytes long"}) != from_file
    assert run("--demo-key") != from_file


def test_patient_id_of_jsonl_records_shares_surrogates_across_documents(tmp_path):
    from deid_factory.redact_engine import redact_files

    text = "Paciente con teléfono 612 345 678 y correo ana.perez@correo.es."
    rows = [{"id": "n1", "patient_id": "P1", "text": text}, {"id": "n2", "patient_id": "P1", "text": text},
            {"id": "n3", "patient_id": "P2", "text": text}]
    records = tmp_path / "notes.jsonl"
    records.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    redact_files([records], out, "jsonl", "surrogate", router=_router(), progress=False, key=KEY)
    redacted = {row["id"]: row["redacted"] for row in map(json.loads, out.read_text(encoding="utf-8").splitlines())}
    assert redacted["n1"] == redacted["n2"] != redacted["n3"]
    assert "612 345 678" not in redacted["n1"]


# ----------------------------------------------------------------------------- factory redact fails closed
# Invented notes. The pipeline is the tests' tiny trained deid_es (NER + es pack + merger); only es is loaded.
ES_NOTE = ("Paciente Lucía Ferrer Soto, de 54 años, ingresa el 12/03/2021 en el Hospital Valdeluz. "
           "Teléfono de contacto 612 345 678, correo lucia.ferrer@correo.es.")
EN_NOTE = ("Patient Thaddeus Wexley was seen at Harrowgate Infirmary for chest pain and shortness of breath. "
           "Call (617) 555-0123 or write to t.wexley@example.org.")
EN_PHI = ("Thaddeus", "Wexley", "555-0123", "t.wexley@example.org")
SHORT_ES = "Paciente Lucía Ferrer Soto, de 54 años."  # 29 letters: too short to detect


def _factory(args) -> tuple[int, str]:
    """`factory ...` in a child process, as a user runs it: exit status and everything printed."""
    import subprocess
    import sys

    ret = subprocess.run([sys.executable, "-m", "deid_factory", *map(str, args)], capture_output=True, text=True, timeout=300)
    return ret.returncode, ret.stdout + ret.stderr


def _redact(args, caplog) -> tuple[int, str]:
    """`factory redact ...` in this process (faster than a child): exit status, output and log."""
    from typer.testing import CliRunner

    from deid_factory.cli import app

    caplog.clear()
    with caplog.at_level("INFO"):
        result = CliRunner().invoke(app, ["redact", *map(str, args)])
    return result.exit_code, result.output + caplog.text


def test_a_document_without_a_pipeline_is_not_written_and_fails_the_run(train_pipeline, tmp_path, caplog):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "es.txt").write_text(ES_NOTE, encoding="utf-8")
    (notes / "en.txt").write_text(EN_NOTE, encoding="utf-8")
    out = tmp_path / "out"
    code, printed = _factory(["redact", notes, "--out", out, "--pipelines", train_pipeline, "--quiet"])
    assert code == 3, printed
    assert sorted(p.name for p in out.iterdir()) == ["es.txt"]  # the English note is not written at all
    assert f"{notes / 'en.txt'}: document 'en' not redacted (detected 'en' (1.00), which has no pipeline): not written" in printed
    assert "1 documents written" in printed and "1 documents not routed" in printed and "error: incomplete run" in printed
    assert not [phi for phi in EN_PHI if phi in printed]
    # --allow-partial accepts the incomplete run; the document is still not written
    code, printed = _redact([notes, "--out", tmp_path / "out2", "--pipelines", train_pipeline, "--quiet",
                             "--allow-partial"], caplog)
    assert code == 0, printed
    assert sorted(p.name for p in (tmp_path / "out2").iterdir()) == ["es.txt"]


def test_a_short_note_is_routed_by_its_declared_or_forced_language_never_by_a_guess(train_pipeline, tmp_path):
    from deid_factory.redact_engine import redact_files
    from deid_runtime.router import Router

    router = lambda **kw: Router.from_names([str(train_pipeline)], **kw)  # noqa: E731
    note = tmp_path / "short.txt"
    note.write_text(SHORT_ES, encoding="utf-8")
    records = tmp_path / "records.jsonl"
    records.write_text(json.dumps({"id": "r1", "lang": "es", "text": SHORT_ES}, ensure_ascii=False) + "\n", encoding="utf-8")
    # detection is not trusted on 29 letters: not written
    report = redact_files([note], tmp_path / "a", "text", router=router(), progress=False)
    assert report["written"] == 0 and report["complete"] is False
    assert report["unrouted"][0]["reason"] == "too short to detect its language (29 letters, need 40)"
    # the record's own "lang" routes it, and so does --lang
    report = redact_files([records], tmp_path / "b", "text", router=router(), progress=False)
    assert report["complete"] and report["router"]["by_how"] == {"declared": 1}
    report = redact_files([note], tmp_path / "c", "text", router=router(force_lang="es"), progress=False)
    assert report["complete"] and report["router"]["by_how"] == {"forced": 1}
    for redacted in ((tmp_path / "b" / "r1.txt").read_text(encoding="utf-8"), (tmp_path / "c" / "short.txt").read_text(encoding="utf-8")):
        assert "Lucía" not in redacted and "Ferrer" not in redacted and "[PERSON]" in redacted


def test_spanish_notes_detected_as_portuguese_are_not_written_unless_their_language_is_given(tmp_path, caplog):
    """Issue 13: with only deid_es installed, short Spanish notes that langdetect reads as Portuguese
    were written with their names in place ("NOMBRE: ...", "Firmado: Dr. ..."), exit status 0."""
    from deid_factory.redact_engine import redact_files
    from deid_runtime.router import Router

    es_only = _router().pipelines["es"]
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "nombre.txt").write_text("NOMBRE: Ana Souto Pereira. NHC: 123456. Fecha de nacimiento: 12/03/1960.", encoding="utf-8")
    (notes / "firma.txt").write_text("Se remite a consulta externa de Neumología. Firmado: Dr. Tiago Moreira Lopes.", encoding="utf-8")
    with caplog.at_level("INFO"):
        report = redact_files([notes], tmp_path / "out", "text", router=Router({"es": es_only}), progress=False)
    assert report["written"] == 0 and report["not_written"] == 2 and report["complete"] is False
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())
    reasons = {u["id"]: u["reason"] for u in report["unrouted"]}
    assert reasons["nombre"] == "detected 'pt' (1.00), which has no pipeline"
    assert reasons["firma"].startswith("detected 'pt' (0.")  # es came second, below the floor
    assert "Souto" not in caplog.text and "Moreira" not in caplog.text
    # the user who knows the language says so, and every note is redacted by the es pipeline
    report = redact_files([notes], tmp_path / "forced", "text", router=Router({"es": es_only}, force_lang="es"), progress=False)
    assert report["complete"] and report["router"]["by_pipeline"] == {"es": 2}
    assert "[DATE]" in (tmp_path / "forced" / "nombre.txt").read_text(encoding="utf-8")


def test_union_fallback_runs_every_pipeline_and_every_pack_of_the_project(train_pipeline, tmp_path, caplog):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "en.txt").write_text(EN_NOTE, encoding="utf-8")
    out = tmp_path / "out"
    code, printed = _redact([notes, "--out", out, "--pipelines", train_pipeline, "--fallback", "union", "--quiet"], caplog)
    assert code == 0, printed
    redacted = (out / "en.txt").read_text(encoding="utf-8")
    # the US phone format is the en pack's (the es pipeline alone leaves it), the e-mail any pack's
    assert "555-0123" not in redacted and "t.wexley@example.org" not in redacted
    assert "went to the fallback 'union'" in printed and not [phi for phi in EN_PHI if phi in printed]


def test_a_named_fallback_pipeline_takes_what_no_pipeline_takes(train_pipeline, tmp_path, caplog):
    """The other opt-in of issue 13: `--fallback es` (a Spanish-only warehouse) sends unroutable
    documents to that pipeline, says so in one line per document, and the run is complete."""
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "en.txt").write_text(EN_NOTE, encoding="utf-8")
    (notes / "short.txt").write_text(SHORT_ES, encoding="utf-8")
    out = tmp_path / "out"
    code, printed = _redact([notes, "--out", out, "--pipelines", train_pipeline, "--fallback", "es", "--quiet"], caplog)
    assert code == 0, printed
    assert sorted(p.name for p in out.iterdir()) == ["en.txt", "short.txt"]
    assert "t.wexley@example.org" not in (out / "en.txt").read_text(encoding="utf-8")
    assert printed.count("went to the fallback 'es'") == 2 and not [phi for phi in EN_PHI if phi in printed]
    code, printed = _redact([notes, "--out", tmp_path / "x", "--pipelines", train_pipeline, "--fallback", "it"], caplog)
    assert code == 1 and "fallback 'it' is not 'union' nor one of the loaded pipelines" in printed


def test_brat_output_is_redacted_and_the_phi_strings_need_mode_annotate(train_pipeline, tmp_path, caplog):
    from deid_factory.readers import read_corpus

    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "es.txt").write_text(ES_NOTE, encoding="utf-8")
    out = tmp_path / "brat"
    code, printed = _redact([notes, "--out", out, "--format", "brat", "--pipelines", train_pipeline, "--quiet"], caplog)
    assert code == 0, printed
    text, ann = (out / "es.txt").read_text(encoding="utf-8"), (out / "es.ann").read_text(encoding="utf-8")
    for phi in ("612 345 678", "lucia.ferrer@correo.es", "12/03/2021"):
        assert phi not in text and phi not in ann
    lines = [line.split("\t") for line in ann.splitlines()]
    assert {"PHONE", "EMAIL", "DATE"} <= {mid.split()[0] for _, mid, _ in lines}
    for _, mid, value in lines:  # T lines sit on the tags of the redacted text
        label, start, end = mid.split()
        assert text[int(start):int(end)] == value == f"[{label}]"
    # annotation output is explicit, and reads back through the brat reader with the PHI spans
    code, printed = _redact([notes, "--out", tmp_path / "ann", "--format", "brat", "--mode", "annotate",
                              "--pipelines", train_pipeline, "--quiet"], caplog)
    assert code == 0, printed
    assert (tmp_path / "ann" / "es.txt").read_text(encoding="utf-8") == ES_NOTE
    canonical = {lab: lab for lab in ("PERSON", "AGE", "DATE", "ADDRESS", "LOCATION", "ORGANIZATION", "PROFESSION",
                                      "PHONE", "EMAIL", "URL", "IP", "ID")}
    (record,) = read_corpus(tmp_path / "ann", "brat", canonical, "es")
    assert {("612 345 678", "PHONE"), ("lucia.ferrer@correo.es", "EMAIL")} <= {(t, s.label) for t, s in zip(record.span_texts(), record.spans)}
    # annotate as records; and never as plain text (it would be the original)
    code, printed = _redact([notes, "--out", tmp_path / "ann.jsonl", "--format", "jsonl", "--mode", "annotate",
                              "--pipelines", train_pipeline, "--quiet"], caplog)
    row = json.loads((tmp_path / "ann.jsonl").read_text(encoding="utf-8"))
    assert code == 0 and row["text"] == ES_NOTE and row["lang"] == "es" and row["meta"]["pipeline"] == "es"
    assert {(ES_NOTE[s["start"]:s["end"]], s["label"]) for s in row["spans"]} >= {("612 345 678", "PHONE")}
    code, printed = _redact([notes, "--out", tmp_path / "t", "--mode", "annotate", "--pipelines", train_pipeline], caplog)
    assert code == 1 and "needs --format jsonl or brat" in printed and not (tmp_path / "t").exists()


def test_a_misspelled_input_or_skipped_inputs_fail_the_run(train_pipeline, tmp_path, caplog):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "es.txt").write_text(ES_NOTE, encoding="utf-8")
    out = tmp_path / "out"
    code, printed = _redact([tmp_path / "nots", notes, "--out", out, "--pipelines", train_pipeline, "--quiet"], caplog)
    assert code == 1 and f"error: input not found: {tmp_path / 'nots'}" in printed and not out.exists()
    (notes / "latin1.txt").write_bytes(ES_NOTE.encode("latin-1"))
    code, printed = _redact([notes, "--out", out, "--pipelines", train_pipeline, "--quiet"], caplog)
    assert code == 3 and f"{notes / 'latin1.txt'}: not UTF-8" in printed and "1 inputs skipped" in printed
    assert (out / "es.txt").exists()
    code, printed = _redact([tmp_path / "nots", notes, "--out", out, "--pipelines", train_pipeline,
                              "--quiet", "--allow-partial"], caplog)
    assert code == 0 and "2 inputs skipped" in printed
    empty = tmp_path / "empty"
    empty.mkdir()
    code, printed = _redact([empty, "--out", out, "--pipelines", train_pipeline, "--quiet"], caplog)
    assert code == 3 and "no .txt or .jsonl files" in printed and "0 documents written" in printed


def test_a_killed_run_keeps_every_document_it_finished_whole(train_pipeline, tmp_path):
    """Issue 13: outputs are committed file by file, so a run killed with SIGKILL (no clean-up at
    all, as an out-of-memory kill) keeps what it finished: whole .txt files, and whole JSONL rows in
    OUT.partial; a finished OUT is never left half-written."""
    import signal
    import subprocess
    import sys
    import time

    notes = tmp_path / "notes"
    notes.mkdir()
    n = 3000
    for i in range(n):
        (notes / f"n{i:04d}.txt").write_text(ES_NOTE.replace("54 años", f"{i % 90 + 10} años"), encoding="utf-8")
    for output_format, out in (("text", tmp_path / "out"), ("jsonl", tmp_path / "out.jsonl")):
        proc = subprocess.Popen([sys.executable, "-m", "deid_factory", "redact", str(notes), "--out", str(out), "--format",
                                 output_format, "--pipelines", str(train_pipeline), "--lang", "es", "--quiet"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        partial = out.with_name(out.name + ".partial")
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and proc.poll() is None:
            if (out.is_dir() and any(out.glob("*.txt"))) or (partial.exists() and partial.stat().st_size):
                break
            time.sleep(0.02)
        assert proc.poll() is None, "the run ended before it could be killed"
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        if output_format == "text":
            done = sorted(out.glob("*.txt"))
            assert 0 < len(done) < n
            for path in done:  # each one whole and redacted
                text = path.read_text(encoding="utf-8")
                assert text.endswith("[EMAIL].") and "612 345 678" not in text and "lucia.ferrer" not in text, path
        else:
            assert not out.exists()
            data = partial.read_bytes()
            assert data.endswith(b"\n")
            rows = [json.loads(line) for line in data.decode("utf-8").splitlines()]
            assert 0 < len(rows) < n and all(r["redacted"].endswith("[EMAIL].") for r in rows)


@pytest.mark.skipif(not __import__("os").path.exists("/proc/self/status"), reason="reads VmHWM from /proc")
def test_a_long_single_line_note_is_redacted_in_bounded_memory(tmp_path):
    """Issue 13: a 10 MB single-line note reached 19 GB RSS and was killed, a 2 MB one took 5.6 GB.
    `factory redact` on a 4 MB single-line note (a child process: its own peak) stays far under
    1 GB, and every e-mail and phone of the note is tagged, those far past spaCy's 1,000,000
    characters included. (bench/bench_redact.py measures the 10 MB note.)"""
    import subprocess
    import sys

    from deid_factory.package import assemble_pipeline

    assemble_pipeline(None, "es", tmp_path / "deid_es")  # regex-only deid_es: the pack and the merger
    sentence = "Nota {i}: la paciente refiere dolor, teléfono 6{p:02d} 345 678, correo p{i}@correo.es; "
    text = "".join(sentence.format(i=i, p=i % 100) for i in range(52_000))
    assert len(text.encode("utf-8")) > 4_000_000 and "\n" not in text
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "long.txt").write_text(text, encoding="utf-8")
    child = ("import sys\nfrom deid_factory import main\nsys.argv = sys.argv[1:]\ncode = 0\ntry:\n    main()\n"
             "except SystemExit as e:\n    code = e.code or 0\n"
             "peak = [l for l in open('/proc/self/status') if l.startswith('VmHWM')][0].split()[1]\n"
             "print('PEAK', int(peak) // 1024, 'EXIT', code)\n")
    ret = subprocess.run([sys.executable, "-c", child, "factory", "redact", str(tmp_path / "in"), "--out", str(tmp_path / "out"),
                          "--pipelines", str(tmp_path / "deid_es"), "--quiet"], capture_output=True, text=True, timeout=900)
    peak_mb, code = (int(x) for x in re.search(r"PEAK (\d+) EXIT (\d+)", ret.stdout).groups())
    assert code == 0, ret.stdout + ret.stderr
    assert peak_mb < 800, peak_mb
    redacted = (tmp_path / "out" / "long.txt").read_text(encoding="utf-8")
    assert redacted == "".join(f"Nota {i}: la paciente refiere dolor, teléfono [PHONE], correo [EMAIL]; " for i in range(52_000))


def test_progress_bar_has_a_total_and_an_eta(train_pipeline, tmp_path, capsys, monkeypatch):
    import sys

    from deid_factory.redact_engine import redact_files
    from deid_runtime.router import Router

    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)  # a bar is drawn on a terminal only

    notes = tmp_path / "notes"
    notes.mkdir()
    for i in range(3):
        (notes / f"n{i}.txt").write_text(ES_NOTE, encoding="utf-8")
    redact_files([notes], tmp_path / "out", "text", router=Router.from_names([str(train_pipeline)]), progress=True)
    bar = capsys.readouterr().err.replace("\r", "\n").strip().splitlines()[-1]
    # a percentage needs a total (input bytes), "elapsed<remaining" is the ETA
    assert re.search(r"^redact: 100%\|.*\[\d\d:\d\d<00:00, .*3 docs\]$", bar), bar


def test_recall_bias_masks_more_and_refuses_a_pipeline_without_the_knob(train_pipeline, tmp_path, caplog):
    """--recall-bias is the tagger's o_bias: a higher bias turns unsure tokens into PHI, so at least as
    many characters are tagged; a pipeline without deid_tagger cannot honour it and the run refuses."""
    import spacy

    from deid_factory.redact_engine import set_recall_bias
    from deid_runtime.router import RouterError

    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "es.txt").write_text(ES_NOTE, encoding="utf-8")
    tagged = {}
    for bias in ("0", "30"):
        out = tmp_path / f"out{bias}"
        code, printed = _redact([notes, "--out", out, "--pipelines", train_pipeline, "--lang", "es", "--quiet",
                                 "--recall-bias", bias], caplog)
        assert code == 0, printed
        text = (out / "es.txt").read_text(encoding="utf-8")
        tagged[bias] = len(re.findall(r"\[[A-Z]+\]", text)), len(re.sub(r"\[[A-Z]+\]", "", text))
    assert tagged["30"][1] < tagged["0"][1]  # fewer characters left in clear text
    with pytest.raises(RouterError, match="deid_tagger"):
        set_recall_bias({"xx": spacy.blank("es")}, 2.0)
    with pytest.raises(ValueError):
        set_recall_bias({}, -1.0)
    with pytest.raises(ValueError, match="high"):  # an unknown preset names the ones there are
        set_recall_bias({}, "highest")
    # the preset: the documented o_bias, set on the pipeline's tagger
    from deid_runtime.biluo_tagger import RECALL_PRESETS

    nlp = spacy.load(train_pipeline)
    set_recall_bias({"es": nlp}, "high")
    assert nlp.get_pipe("deid_tagger").o_bias == RECALL_PRESETS["high"] > 0
    code, printed = _redact([notes, "--out", tmp_path / "high", "--pipelines", train_pipeline, "--lang", "es",
                             "--quiet", "--recall-bias", "high"], caplog)
    assert code == 0, printed


def test_non_overlapping_takes_a_one_shot_iterator():
    """Overlapping spans given as a generator: the slow path must not sort an exhausted iterator
    (it returned no span at all, and the text would have been written with its PHI)."""
    from deid_runtime.redact import non_overlapping

    spans = [(0, 5, "PERSON"), (3, 8, "ID"), (10, 12, "DATE")]
    assert non_overlapping(iter(spans)) == non_overlapping(spans) != []
    assert (10, 12, "DATE") in non_overlapping(s for s in spans)


# ----------------------------------------------------------------------------- issue 25: clinical facts
# The issue's note (fictitious). Every string of FACTS must come out of redaction unchanged.
ISSUE_NOTE = ("Paciente: Rosario Benítez Carmona, 71 años. Acude acompañada de su hijo Andrés.\n"
              "Tratamiento: enalapril 10 mg/24h, metformina 850 mg 1-0-1, furosemida 40 mg/12h, AAS 100 mg.\n"
              "Analítica: leucocitos 8.200/mm3, Hb 13,2 g/dl, plaquetas 245.000, creatinina 1,1 mg/dl, HbA1c 7,4 %.\n"
              "TA 135/85 mmHg, FC 78 lpm, SatO2 96 %. Se cita en 3 meses con el Dr. Ferrández.\n")
FACTS = ["enalapril", "10 mg/24h", "metformina", "850 mg", "1-0-1", "furosemida", "40 mg/12h", "AAS", "100 mg",
         "leucocitos 8.200/mm3", "Hb 13,2 g/dl", "plaquetas 245.000", "creatinina 1,1 mg/dl", "HbA1c 7,4 %",
         "TA 135/85 mmHg", "FC 78 lpm", "SatO2 96 %", "en 3 meses"]


def _es_lexicon():
    from deid_factory.package import default_pack_dir
    from deid_runtime.regex_pack import RegexPack

    return RegexPack.from_dir(default_pack_dir("es")).clinical


def test_surrogate_mode_writes_a_visible_tag_for_a_span_that_is_not_of_its_kind():
    """Spans a bad NER gave to a dose: none gets a plausible value, each is a visible "[LABEL?]" and
    counted; the real name and age still get surrogates. Tag and mask modes are unchanged."""
    from deid_runtime.redact import UNSURE, redact

    items = [("Rosario Benítez Carmona", "PERSON"), ("71 años", "AGE"), ("mg/24h", "PERSON"), ("40 mg/12h", "AGE"),
             ("AAS", "ORGANIZATION"), ("en 3 meses", "DATE"), ("Ferrández", "PERSON")]
    spans = spans_of(ISSUE_NOTE, items)
    done = redact(ISSUE_NOTE, spans, "surrogate", lang="es", doc_id="n", key=KEY, lexicon=_es_lexicon())
    assert "enalapril 10 [PERSON?]," in done.text and "furosemida [AGE?]," in done.text
    assert "[ORGANIZATION?] 100 mg" in done.text and "Se cita [DATE?] con" in done.text
    assert "Rosario" not in done.text and "Ferrández" not in done.text and "71 años" not in done.text
    assert [done.text[s:e] for s, e, _ in done.spans][2:6] == ["[PERSON?]", "[AGE?]", "[ORGANIZATION?]", "[DATE?]"]
    assert done.counts() == {"surrogate": {"AGE": 1, "PERSON": 2}, UNSURE: {"AGE": 1, "DATE": 1, "ORGANIZATION": 1, "PERSON": 1}}
    assert [a[3] for a in done.actions] == ["surrogate", "surrogate", UNSURE, UNSURE, UNSURE, UNSURE, "surrogate"]
    assert [a[:3] for a in done.actions] == spans  # offsets of the original, never its text
    # the names of the document are learnt from the sure spans only: "mg" is no one's surname
    assert redact(ISSUE_NOTE, spans, "tag").counts() == {"tag": {"AGE": 2, "DATE": 1, "ORGANIZATION": 1, "PERSON": 3}}
    assert redact(ISSUE_NOTE, spans, "tag").text == redact_text(ISSUE_NOTE, spans, "tag")[0]


def _issue_ner(doc):
    """A stand-in NER that does what the issue's did: the patient is a PERSON, a dose an AGE."""
    text = doc.text
    doc.ents = [doc.char_span(text.index(v), text.index(v) + len(v), label=label, alignment_mode="expand")
                for v, label in (("Rosario Benítez Carmona", "PERSON"), ("mg/12h", "AGE")) if v in text]
    return doc


def test_redact_cli_counts_what_was_done_in_the_summary_the_journal_and_the_report(tmp_path, monkeypatch):
    """Issue 25, wanted 4: replacements per label and the spans masked because they failed their
    check, in the summary line, in each journal entry and, with --report, per document (ids, labels,
    offsets; never text). The dose is kept out of the AGE by the merger, so here the clinical
    lexicon is left out of the pack and the label shapes are off: the surrogate check alone must
    catch it."""
    import spacy
    from spacy.language import Language

    from deid_factory.package import default_pack_dir
    from deid_factory.redact_cli import _summary
    from deid_factory.redact_engine import redact_files
    from deid_factory.scaleout import ShardJournal
    from deid_runtime.regex_pack import RegexPack
    from deid_runtime.router import Router

    if "issue25_ner" not in Language.factories:
        Language.component("issue25_ner", func=_issue_ner)
    pack = RegexPack.from_dir(default_pack_dir("es"))
    pack.clinical = None  # no facts marked: the merger lets the AGE through
    nlp = spacy.blank("es")
    nlp.add_pipe("issue25_ner")
    nlp.add_pipe("deid_regex_pack", config={"write_ents": False}).pack = pack
    # nor its label shapes, which drop an AGE holding a unit ("mg/12h") before the surrogates see it
    nlp.add_pipe("deid_merger", config={"shape_checks": False})
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.txt").write_text(ISSUE_NOTE, encoding="utf-8")
    kept = []  # the journal's text when the run removes it
    monkeypatch.setattr(ShardJournal, "remove", lambda self: (self.close(), kept.append(self.path.read_text(encoding="utf-8"))))
    out = tmp_path / "out"
    report = redact_files([notes], out, "text", "surrogate", router=Router({"es": nlp}), progress=False, key=KEY,
                          per_document=True)
    # the patient, "su hijo Andrés" and "el Dr. Ferrández" (the last two found by the context rules)
    assert report["redaction"] == {"surrogate": {"PERSON": 3}, "unsure": {"AGE": 1}}
    line = _summary(report, out)
    assert "3 spans replaced by surrogates {'PERSON': 3}" in line
    assert "1 spans masked as [LABEL?] instead of replaced (failed their label's check) {'AGE': 1}" in line
    start = ISSUE_NOTE.index("mg/12h")
    (doc,) = report["documents"]
    assert doc["id"] == "a" and doc["counts"] == report["redaction"]
    assert [start, start + len("mg/12h"), "AGE", "unsure"] in doc["spans"]
    written = (out / "a.txt").read_text(encoding="utf-8")
    assert "furosemida 40 [AGE?]," in written and "Rosario" not in written
    assert "Andrés" not in written and "Ferrández" not in written
    journal = [json.loads(row) for row in kept[0].splitlines()]
    assert journal[1]["summary"]["redaction"] == report["redaction"]
    assert journal[1]["summary"]["documents"][0]["spans"] == doc["spans"]
    assert "Rosario" not in kept[0] and "mg/12h" not in kept[0] and "Rosario" not in json.dumps(report)
    # without --report the documents are not kept in memory; the counts are
    report = redact_files([notes], tmp_path / "out2", "text", "surrogate", router=Router({"es": nlp}), progress=False,
                          key=KEY)
    assert "documents" not in report and report["redaction"]["unsure"] == {"AGE": 1}


@pytest.mark.parametrize("bias", ["0", "high", "30"])
def test_the_issues_note_through_a_real_pipeline_keeps_every_clinical_fact(train_pipeline, tmp_path, caplog, bias):
    """The issue's note through the tests' tiny trained deid_es, with `factory redact`, in every mode,
    at the packaged setting, at --recall-bias high and at 30 (nearly every token PHI: a very bad NER):
    every dose, unit, lab value, schedule, duration and drug name comes out unchanged, and the
    patient's name never."""
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "issue.txt").write_text(ISSUE_NOTE, encoding="utf-8")
    (tmp_path / "key").write_bytes(KEY)
    for mode in ("tag", "mask", "surrogate"):
        out = tmp_path / f"out-{mode}"
        code, printed = _redact([notes, "--out", out, "--pipelines", train_pipeline, "--lang", "es", "--quiet",
                                 "--recall-bias", bias, "--mode", mode, "--key-file", tmp_path / "key"], caplog)
        assert code == 0, printed
        written = (out / "issue.txt").read_text(encoding="utf-8")
        changed = [f for f in FACTS if written.count(f) < ISSUE_NOTE.count(f)]
        assert not changed, (mode, bias, changed, written)
        assert "Rosario" not in written and "Benítez" not in written, (mode, bias)


@pytest.mark.parametrize("lang,value", [
    ("es", "1-0-1"), ("es", "1-1-1"), ("es", "2-2-2"), ("es", "en 3 meses"), ("es", "cada 12 horas"), ("es", "40 mg/12h"),
    ("es", "durante 2 semanas"), ("es", "c/8h"), ("fr", "dans 3 mois"), ("fr", "toutes les 8 heures"),
    ("en", "every 8 hours"), ("en", "for 2 weeks"), ("de", "alle 8 Stunden"), ("de", "in 3 Monaten"),
    ("it", "ogni 8 ore"), ("pt", "de 8 em 8 horas"), ("nl", "elke 8 uur")])
def test_the_date_shift_never_touches_durations_and_schedules(lang, value):
    """Issue 25, wanted 3: "en 3 meses", "cada 12 horas", "40 mg/12h", "1-1-1" are not dates. The
    shift refuses them ("1-1-1" was moved as the 1st of January 2001), and surrogate mode writes a
    DATE span over one as "[DATE?]", never as an invented date."""
    from deid_factory.package import default_pack_dir
    from deid_runtime.regex_pack import RegexPack

    RegexPack.from_dir(default_pack_dir(lang))  # registers the locale's clinical lexicon
    assert shift_date(value, 30, lang) is None
    text = f"Pauta: {value}."
    out = redact_text(text, [(7, 7 + len(value), "DATE")], "surrogate", lang=lang, doc_id="d", key=KEY)[0]
    assert out == "Pauta: [DATE?].", out


# ------------------------------------------------------------------ issue 30: a command line that behaves
def test_no_progress_bar_off_a_terminal_and_log_lines_on_their_own_lines(train_pipeline, tmp_path):
    """stderr to a file or a pipe (CI logs, `2> log`): no bar, whose carriage returns glued the first
    ERROR line to it; every line a log line, starting with its level."""
    notes = tmp_path / "notes"
    notes.mkdir()
    for i in range(3):
        (notes / f"n{i}.txt").write_text(ES_NOTE, encoding="utf-8")
    (notes / "empty.txt").write_text("  \n", encoding="utf-8")
    (notes / "latin1.txt").write_bytes("Paciente Mar\xeda".encode("latin-1"))
    import subprocess
    import sys

    ret = subprocess.run([sys.executable, "-m", "deid_factory", "redact", str(notes), "--out", str(tmp_path / "out"),
                          "--pipelines", str(train_pipeline)], capture_output=True, text=True, timeout=300)
    assert ret.returncode == 3
    assert "\r" not in ret.stderr and "redact:" not in ret.stderr and "%|" not in ret.stderr
    lines = [line for line in ret.stderr.splitlines() if line.strip()]
    assert any(line.startswith("ERROR: ") and "latin1.txt" in line for line in lines), lines
    assert all(line.startswith(("ERROR: ", "WARNING: ", "INFO: ", "error: ")) for line in lines), lines


def test_an_output_folder_inside_the_input_folder_is_never_read_as_input(tmp_path, caplog):
    """`factory redact notes/ --out notes/red` twice: the second run used to redact notes/red/* too,
    writing notes/red/red/..."""
    from deid_factory.redact_engine import journal_path, redact_files

    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.txt").write_text(ES_DOC, encoding="utf-8")
    (notes / "b.txt").write_text(ES_DOC, encoding="utf-8")
    out = notes / "red"
    for _ in range(2):
        result = redact_files([notes], out, "text", router=_router(), progress=False, lang="es")
        assert result["written"] == 2 and result["complete"], result
        assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == ["a.txt", "b.txt"]
    # a JSONL output and its journal inside the input folder are not inputs either
    notes = tmp_path / "notes2"
    notes.mkdir()
    (notes / "a.txt").write_text(ES_DOC, encoding="utf-8")
    (notes / "b.txt").write_text(ES_DOC, encoding="utf-8")
    jl = notes / "red.jsonl"
    redact_files([notes], jl, "jsonl", router=_router(), progress=False, lang="es")
    result = redact_files([notes], jl, "jsonl", router=_router(), progress=False, lang="es")
    assert result["written"] == 2 and len(jl.read_text(encoding="utf-8").splitlines()) == 2
    assert not journal_path(jl).exists()


def test_several_input_folders_keep_their_own_names_and_the_summary_agrees(tmp_path, caplog):
    """Two folders holding files of the same name were flattened into one output: the second was
    skipped (exit 3) and the summary said "1 documents written; per pipeline {'es': 2}"."""
    from deid_factory.redact_cli import _summary
    from deid_factory.redact_engine import redact_files

    for folder in ("ward", "clinic"):
        (tmp_path / folder / "day1").mkdir(parents=True)
        (tmp_path / folder / "day1" / "note.txt").write_text(ES_DOC, encoding="utf-8")
    out = tmp_path / "out"
    result = redact_files([tmp_path / "ward", tmp_path / "clinic"], out, "text", router=_router(), progress=False, lang="es")
    assert result["complete"] and result["written"] == 2, result
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*.txt")) == ["clinic/day1/note.txt", "ward/day1/note.txt"]
    line = _summary(result, out)
    assert line.startswith(f"2 documents written to {out} (per pipeline {{'es': 2}})"), line
    # one folder alone: names relative to it, as before
    single = redact_files([tmp_path / "ward"], tmp_path / "one", "text", router=_router(), progress=False, lang="es")
    assert single["written"] == 1 and (tmp_path / "one" / "day1" / "note.txt").exists()


def test_mask_length_option_of_the_command(tmp_path, caplog):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.txt").write_text(ES_DOC, encoding="utf-8")
    from deid_factory.redact_engine import redact_files

    redact_files([notes], tmp_path / "fixed", "text", "mask", router=_router(), progress=False, lang="es")
    fixed = (tmp_path / "fixed" / "a.txt").read_text(encoding="utf-8")
    assert "612 345 678" not in fixed and "*****," in fixed and "*** *** ***" not in fixed
    redact_files([notes], tmp_path / "keep", "text", "mask", router=_router(), progress=False, lang="es", mask_length="keep")
    kept = (tmp_path / "keep" / "a.txt").read_text(encoding="utf-8")
    assert len(kept) == len(ES_DOC) and "*** *** ***" in kept
    with pytest.raises(ValueError, match="mask length"):
        redact_files([notes], tmp_path / "bad", "text", "mask", router=_router(), progress=False, lang="es", mask_length="x")
