"""Redaction modes, document-consistent surrogates, date shifting, and the redact CLI."""

import json
import re

import pytest

from deid_factory.runtime.redact import Redactor, redact_text, shift_date

KEY = b"a test key of 32 bytes, not used"  # surrogate mode draws from a secret key

TEXT = "ANA PÉREZ GARCÍA ingresó el 03/04/2020. Ana Pérez García volvió el 3 de abril de 2020 a Lugo."


def _spans(text, items):
    out, pos = [], 0
    for value, label in items:
        start = text.index(value, pos)
        out.append((start, start + len(value), label))
        pos = start + len(value)
    return out


SPANS = _spans(TEXT, [("ANA PÉREZ GARCÍA", "PERSON"), ("03/04/2020", "DATE"), ("Ana Pérez García", "PERSON"),
                      ("3 de abril de 2020", "DATE"), ("Lugo", "LOCATION")])


def test_tags_and_masks():
    tagged, spans = redact_text(TEXT, SPANS, "tag")
    assert tagged == "[PERSON] ingresó el [DATE]. [PERSON] volvió el [DATE] a [LOCATION]."
    assert [tagged[s:e] for s, e, _ in spans] == ["[PERSON]", "[DATE]", "[PERSON]", "[DATE]", "[LOCATION]"]
    masked, _ = redact_text(TEXT, SPANS, "mask")
    assert len(masked) == len(TEXT) and "PÉREZ" not in masked and "*** ***** ******" in masked
    with pytest.raises(ValueError, match="mode"):
        redact_text(TEXT, SPANS, "blur")


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
    from deid_factory.runtime import merger, pack_component  # noqa: F401
    from deid_factory.runtime.regex_pack import RegexPack
    from deid_factory.runtime.router import Router

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
    from deid_factory.redact_cli import redact_files

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
    a = (out / "a.txt").read_text(encoding="utf-8")
    assert "[PHONE]" in a and "[EMAIL]" in a and "ana.perez" not in a
    assert "[EMAIL]" in (out / "sub" / "b.txt").read_text(encoding="utf-8")
    assert (out / "r1.txt").exists()
    assert report["router"]["by_pipeline"] == {"es": 1, "fr": 2}
    # no PHI in the log
    assert "ana.perez" not in caplog.text and "612 345" not in caplog.text

    jl = tmp_path / "spans.jsonl"
    redact_files([src / "a.txt"], jl, "jsonl", "mask", router=_router(), progress=False)
    row = json.loads(jl.read_text(encoding="utf-8"))
    assert row["lang"] == "es" and {s["label"] for s in row["spans"]} >= {"PHONE", "EMAIL"}
    assert len(row["redacted"]) == len(ES_DOC)

    brat = tmp_path / "brat"
    redact_files([src / "a.txt"], brat, "brat", router=_router(), progress=False)
    ann = (brat / "a.ann").read_text(encoding="utf-8").splitlines()
    t = (brat / "a.txt").read_text(encoding="utf-8")
    for line in ann:
        _, mid, value = line.split("\t")
        label, s, e = mid.split()
        assert t[int(s):int(e)] == value


# ----------------------------------------------------------------------------- surrogate mode of the CLI
def test_redact_cli_refuses_surrogate_mode_without_a_key(tmp_path, monkeypatch):
    """The old default seeded surrogates with crc32(seed:doc_id), seed 0: anyone could undo them."""
    from typer.testing import CliRunner

    from deid_factory.cli import app
    from deid_factory.runtime.redact import KEY_ENV

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
    from deid_factory.runtime.redact import KEY_ENV

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
    from deid_factory.redact_cli import redact_files

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
