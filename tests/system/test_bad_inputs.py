"""Bad inputs, systematically: every corpus reader (brat, JSONL, DocBin, i2b2 XML) through
`read_corpus` and `factory extract`, and the router CLI `factory redact`.

For each bad input the tests check the four promises of the project:
  (a) the message names the file and the record (id) or line;
  (b) it holds no PHI of the record: the bad record carries a distinctive invented patient
      (PHI_NAME, PHI_ID) and neither may show up in the message, the report or any log/output line;
  (c) the good records of the same batch are all processed (`--on-error skip`; `factory redact`
      always skips and goes on, and ends with exit status 3 unless --allow-partial);
  (d) nothing is half-written: an output is complete or absent, an earlier output at the same path
      is left as it was when a run fails, and no temp file is left behind.
Inputs that are odd but valid (a byte order mark, CRLF line ends, a 5 MB note) must read correctly,
with every span still on its annotated string.

Every name, ID and address below is invented for these tests.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest
import spacy
import srsly
from spacy.language import Language
from spacy.tokens import DocBin
from typer.testing import CliRunner

from deid_factory.cli import app
from deid_factory.package import default_pack_dir
from deid_factory.readers import ReadReport, read_corpus
from deid_factory.records import RecordError, read_records, validate_record
from deid_factory.redact_engine import redact_files
from deid_runtime import merger, pack_component  # noqa: F401  (registers the deid_* factories)
from deid_runtime.regex_pack import RegexPack
from deid_runtime.router import Router, split_long_text

runner = CliRunner()

PHI_NAME = "Zacarías Ortuño"
PHI_ID = "48213977K"
PHI_EMAIL = "zortuno@correo.es"
PHI_PHONE = "612 345 678"
# Every string a message must not contain: the whole name, each of its words, the ID.
PHI = (PHI_NAME, "Zacarías", "Ortuño", "Ortu", PHI_ID, PHI_EMAIL, PHI_PHONE)
BAD_TEXT = f"Paciente {PHI_NAME}, DNI {PHI_ID}, acude por disnea."
BOM = "\ufeff"

# Good records: id -> (text, [(annotated string, canonical label)]).
GOOD = {
    "good-1": ("Paciente Lucía Ferrer, natural de Teruel.", [("Lucía Ferrer", "PERSON"), ("Teruel", "LOCATION")]),
    "good-2": ("Remitida por la Dra. Inés Vidal desde Soria.", [("Inés Vidal", "PERSON"), ("Soria", "LOCATION")]),
}
# More good records, written by some bad cases into the same file as the bad record (after it, where
# the format allows), so that "the rest of the file is still read" is checked too.
MORE_GOOD = {
    "good-3": ("Acompañado por su hermano Pablo Gil, vecino de Huesca.", [("Pablo Gil", "PERSON"), ("Huesca", "LOCATION")]),
    "good-4": ("Control en Jaca con la Dra. Rosa Lago.", [("Jaca", "LOCATION"), ("Rosa Lago", "PERSON")]),
}
BAD_SPANS = [(PHI_NAME, "PERSON"), (PHI_ID, "ID")]

BRAT_LABELS = {"PERSON": "NOMBRE_SUJETO_ASISTENCIA", "LOCATION": "TERRITORIO", "ID": "ID_SUJETO_ASISTENCIA"}
I2B2_LABELS = {"PERSON": ("NAME", "PATIENT"), "LOCATION": ("LOCATION", "CITY"), "ID": ("ID", "MEDICALRECORD")}
LABEL_MAPS = {"brat": "meddocan", "i2b2": "i2b2", "jsonl": None, "docbin": None}
SUFFIX = {"brat": ".ann", "jsonl": ".jsonl", "docbin": ".spacy", "i2b2": ".xml"}


def offsets(text: str, spans: list[tuple[str, str]]) -> list[tuple[int, int, str, str]]:
    """(start, end, label, annotated string) of each (string, label), found in the text."""
    out = []
    for value, label in spans:
        start = text.index(value)
        out.append((start, start + len(value), label, value))
    return out


# ----------------------------------------------------------------------------- corpus writers
def brat_ann(text: str, spans: list[tuple[str, str]], shift: int = 0) -> str:
    return "".join(f"T{i}\t{BRAT_LABELS[label]} {s + shift} {e + shift}\t{value}\n"
                   for i, (s, e, label, value) in enumerate(offsets(text, spans), start=1))


def write_brat(folder: Path, rid: str, text: str, spans: list[tuple[str, str]]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{rid}.txt").write_text(text, encoding="utf-8", newline="")
    (folder / f"{rid}.ann").write_text(brat_ann(text, spans), encoding="utf-8", newline="")


def jsonl_line(rid: str, text: str, spans: list[tuple[str, str]], **extra) -> str:
    rows = [{"start": s, "end": e, "label": label, "text": value} for s, e, label, value in offsets(text, spans)]
    return json.dumps({"id": rid, "lang": "es", "text": text, "spans": rows, **extra}, ensure_ascii=False)


def docbin_bytes(docs: list[tuple[str, str, list[tuple[int, int, str]]]]) -> bytes:
    """A DocBin of (id, text, [(start, end, label)]) docs. Labels may be anything (spaCy does not check)."""
    nlp = spacy.blank("es")
    db = DocBin(store_user_data=True)
    for rid, text, spans in docs:
        doc = nlp.tokenizer(text)  # the tokenizer has no max_length: a 5 MB note goes in too
        doc.ents = [doc.char_span(s, e, label=label) for s, e, label in spans]
        doc.user_data["id"] = rid
        db.add(doc)
    return db.to_bytes()


def i2b2_xml(text: str, tags: list[tuple[str, str, int, int, str]], newline: str = "\n") -> str:
    """An i2b2 2014-style note; tags are (category, type, start, end, text attribute)."""
    lines = ['<?xml version="1.0" encoding="UTF-8" ?>', "<deIdi2b2>", f"<TEXT><![CDATA[{text}]]></TEXT>", "<TAGS>"]
    lines += [f'<{cat} id="P{i}" start="{s}" end="{e}" text="{shown}" TYPE="{typ}" comment="" />'
              for i, (cat, typ, s, e, shown) in enumerate(tags)]
    lines += ["</TAGS>", "</deIdi2b2>", ""]
    return newline.join(lines)


def i2b2_tags(text: str, spans: list[tuple[str, str]]) -> list[tuple[str, str, int, int, str]]:
    return [(*I2B2_LABELS[label], s, e, value) for s, e, label, value in offsets(text, spans)]


def write_good(fmt: str, folder: Path) -> None:
    """The two GOOD records, in `fmt`, in `folder` (files named good*; bad cases use bad*)."""
    folder.mkdir(parents=True, exist_ok=True)
    if fmt == "brat":
        for rid, (text, spans) in GOOD.items():
            write_brat(folder, rid, text, spans)
    elif fmt == "jsonl":
        (folder / "good.jsonl").write_text("".join(jsonl_line(r, t, s) + "\n" for r, (t, s) in GOOD.items()), encoding="utf-8")
    elif fmt == "docbin":
        docs = [(r, t, [(s, e, label) for s, e, label, _ in offsets(t, sp)]) for r, (t, sp) in GOOD.items()]
        (folder / "good.spacy").write_bytes(docbin_bytes(docs))
    else:
        for rid, (text, spans) in GOOD.items():
            (folder / f"{rid}.xml").write_text(i2b2_xml(text, i2b2_tags(text, spans)), encoding="utf-8")


# ----------------------------------------------------------------------------- the bad cases
@dataclass
class BadCase:
    fmt: str
    name: str
    build: Callable[[Path], None]  # writes the bad input (and any MORE_GOOD records) into the corpus folder
    file: str  # the file the message must name
    marker: str  # the record id (quoted) or ":<line>" the message must name
    problem: str  # what the message must say (a plain substring)
    more_good: tuple[str, ...] = ()  # MORE_GOOD ids the build wrote, which must be extracted too


def _brat_bad(txt: str | bytes | None, ann: str | bytes | None) -> Callable[[Path], None]:
    def build(folder: Path) -> None:
        for suffix, content in ((".txt", txt), (".ann", ann)):
            if content is None:
                continue
            data = content if isinstance(content, bytes) else content.encode("utf-8")
            (folder / f"bad{suffix}").write_bytes(data)
    return build


_NAME_AT = BAD_TEXT.index(PHI_NAME)
_NAME_END = _NAME_AT + len(PHI_NAME)
_SURNAME_AT = BAD_TEXT.index("Ortuño")
_ID_AT = BAD_TEXT.index(PHI_ID)

BRAT_CASES = [
    BadCase("brat", "empty files", _brat_bad("", ""), "bad.ann", "'bad'", "empty text"),
    BadCase("brat", "txt not UTF-8", _brat_bad(BAD_TEXT.encode("latin-1"), brat_ann(BAD_TEXT, BAD_SPANS)),
            "bad.txt", "'bad'", "not UTF-8"),
    BadCase("brat", "ann not UTF-8", _brat_bad(BAD_TEXT, brat_ann(BAD_TEXT, BAD_SPANS).encode("latin-1")),
            "bad.ann", "'bad'", "not UTF-8"),
    BadCase("brat", "offsets outside the text", _brat_bad(BAD_TEXT, f"T1\tNOMBRE_SUJETO_ASISTENCIA {_NAME_AT} 999\t{PHI_NAME}\n"),
            "bad.ann", "'bad'", "outside the text"),
    BadCase("brat", "offsets not on the annotated string",
            _brat_bad(BAD_TEXT, f"T1\tNOMBRE_SUJETO_ASISTENCIA {_NAME_AT + 2} {_NAME_END + 2}\t{PHI_NAME}\n"),
            "bad.ann", "'bad'", "differs from the text slice"),
    BadCase("brat", "overlapping spans",
            _brat_bad(BAD_TEXT, f"T1\tNOMBRE_SUJETO_ASISTENCIA {_NAME_AT} {_NAME_END}\t{PHI_NAME}\n"
                                f"T2\tTERRITORIO {_SURNAME_AT} {_NAME_END}\tOrtuño\n"),
            "bad.ann", "'bad'", "overlap"),
    BadCase("brat", "unknown label", _brat_bad(BAD_TEXT, f"T1\tCIUDAD_INVENTADA {_ID_AT} {_ID_AT + len(PHI_ID)}\t{PHI_ID}\n"),
            "bad.ann", "'bad'", "not in the label map"),
    BadCase("brat", "annotation line cut short", _brat_bad(BAD_TEXT, f"T1\tNOMBRE_SUJETO_ASISTENCIA {_NAME_AT}\t{PHI_NAME}\n"),
            "bad.ann:1", "'bad'", "malformed offsets"),
    BadCase("brat", "txt without ann", _brat_bad(BAD_TEXT, None), "bad.txt", "'bad'", "no annotation file"),
    BadCase("brat", "ann without txt", _brat_bad(None, brat_ann(BAD_TEXT, BAD_SPANS)), "bad.ann", "'bad'", "no text file"),
]


def _jsonl_bad(*lines: str | bytes, end: bytes = b"\n") -> Callable[[Path], None]:
    """bad.jsonl made of these lines (MORE_GOOD ids are written as good records)."""
    def build(folder: Path) -> None:
        out = []
        for line in lines:
            if isinstance(line, str) and line in MORE_GOOD:
                line = jsonl_line(line, *MORE_GOOD[line])
            out.append(line if isinstance(line, bytes) else line.encode("utf-8"))
        (folder / "bad.jsonl").write_bytes(b"\n".join(out) + (end if out else b""))
    return build


def _bad_json(**changes) -> str:
    data = json.loads(jsonl_line("bad", BAD_TEXT, BAD_SPANS))
    data.update(changes)
    return json.dumps(data, ensure_ascii=False)


_BAD_LINE = jsonl_line("bad", BAD_TEXT, BAD_SPANS)
JSONL_CASES = [
    BadCase("jsonl", "empty file", _jsonl_bad(), "bad.jsonl", "bad.jsonl", "empty file"),
    BadCase("jsonl", "empty text", _jsonl_bad("good-3", _bad_json(text="  \n", spans=[]), "good-4"),
            "bad.jsonl:2", "'bad'", "empty text", ("good-3", "good-4")),
    BadCase("jsonl", "line not UTF-8", _jsonl_bad("good-3", _BAD_LINE.encode("latin-1"), "good-4"),
            "bad.jsonl:2", "bad.jsonl:2", "not UTF-8", ("good-3", "good-4")),
    BadCase("jsonl", "offsets outside the text",
            _jsonl_bad("good-3", _bad_json(spans=[{"start": _NAME_AT, "end": 999, "label": "PERSON"}]), "good-4"),
            "bad.jsonl:2", "'bad'", "outside the text", ("good-3", "good-4")),
    BadCase("jsonl", "offsets not on the annotated string",
            _jsonl_bad("good-3", _bad_json(spans=[{"start": _NAME_AT + 2, "end": _NAME_END + 2, "label": "PERSON", "text": PHI_NAME}]), "good-4"),
            "bad.jsonl:2", "'bad'", "differs from the text slice", ("good-3", "good-4")),
    BadCase("jsonl", "overlapping spans",
            _jsonl_bad("good-3", _bad_json(spans=[{"start": _NAME_AT, "end": _NAME_END, "label": "PERSON"},
                                                  {"start": _SURNAME_AT, "end": _NAME_END, "label": "LOCATION"}]), "good-4"),
            "bad.jsonl:2", "'bad'", "overlap", ("good-3", "good-4")),
    BadCase("jsonl", "unknown label",
            _jsonl_bad("good-3", _bad_json(spans=[{"start": _ID_AT, "end": _ID_AT + len(PHI_ID), "label": "DNI"}]), "good-4"),
            "bad.jsonl:2", "'bad'", "not canonical", ("good-3", "good-4")),
    BadCase("jsonl", "record without text", _jsonl_bad("good-3", json.dumps({"id": "bad", "body": BAD_TEXT}), "good-4"),
            "bad.jsonl:2", "'bad'", "needs at least", ("good-3", "good-4")),
    # the last line cut in the middle, as a crash or a full disk leaves it: no newline, invalid JSON
    BadCase("jsonl", "last line cut short", _jsonl_bad("good-3", "good-4", _BAD_LINE[: len(_BAD_LINE) // 2 + 5], end=b""),
            "bad.jsonl:3", "bad.jsonl:3", "not valid JSON", ("good-3", "good-4")),
]


def _docbin_bad(data: Callable[[], bytes]) -> Callable[[Path], None]:
    def build(folder: Path) -> None:
        (folder / "bad.spacy").write_bytes(data())
    return build


def _bad_docbin(label: str = "PERSON", text: str = BAD_TEXT) -> bytes:
    spans = [(_NAME_AT, _NAME_END, label)] if text == BAD_TEXT else []
    return docbin_bytes([("bad", text, spans)])


DOCBIN_CASES = [
    # a file that cannot be opened has no record ids to name: the file is the locator
    BadCase("docbin", "empty file", _docbin_bad(lambda: b""), "bad.spacy", "bad.spacy", "empty file"),
    BadCase("docbin", "file cut short", _docbin_bad(lambda: _bad_docbin()[: len(_bad_docbin()) // 2]),
            "bad.spacy", "bad.spacy", "cut short"),
    BadCase("docbin", "not a DocBin", _docbin_bad(lambda: BAD_TEXT.encode("utf-8")), "bad.spacy", "bad.spacy", "not a spaCy DocBin"),
    BadCase("docbin", "unknown label", _docbin_bad(lambda: _bad_docbin(label="NOMBRE")), "bad.spacy#0", "'bad'", "not canonical"),
    BadCase("docbin", "empty text", _docbin_bad(lambda: _bad_docbin(text="")), "bad.spacy#0", "'bad'", "empty text"),
]


def _i2b2_bad(content: Callable[[], str | bytes]) -> Callable[[Path], None]:
    def build(folder: Path) -> None:
        data = content()
        (folder / "bad.xml").write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    return build


def _bad_xml(tags=None) -> str:
    return i2b2_xml(BAD_TEXT, i2b2_tags(BAD_TEXT, BAD_SPANS) if tags is None else tags)


I2B2_CASES = [
    BadCase("i2b2", "empty file", _i2b2_bad(lambda: ""), "bad.xml", "'bad'", "empty file"),
    # latin-1 bytes under a UTF-8 (default) declaration
    BadCase("i2b2", "not UTF-8", _i2b2_bad(lambda: _bad_xml().encode("latin-1")), "bad.xml", "'bad'", "not UTF-8"),
    BadCase("i2b2", "file cut short", _i2b2_bad(lambda: _bad_xml()[: len(_bad_xml()) // 2]), "bad.xml", "'bad'", "not well-formed XML"),
    BadCase("i2b2", "offsets outside the text", _i2b2_bad(lambda: _bad_xml([("NAME", "PATIENT", _NAME_AT, 999, PHI_NAME)])),
            "bad.xml", "'bad'", "outside the text"),
    BadCase("i2b2", "offsets not on the annotated string",
            _i2b2_bad(lambda: _bad_xml([("NAME", "PATIENT", _NAME_AT + 2, _NAME_END + 2, PHI_NAME)])),
            "bad.xml", "'bad'", "differs from the text slice"),
    BadCase("i2b2", "overlapping spans",
            _i2b2_bad(lambda: _bad_xml([("NAME", "PATIENT", _NAME_AT, _NAME_END, PHI_NAME),
                                        ("LOCATION", "CITY", _SURNAME_AT, _NAME_END, "Ortuño")])),
            "bad.xml", "'bad'", "overlap"),
    BadCase("i2b2", "unknown label", _i2b2_bad(lambda: _bad_xml([("SECRET", "DNI", _ID_AT, _ID_AT + len(PHI_ID), PHI_ID)])),
            "bad.xml", "'bad'", "not in the label map"),
    BadCase("i2b2", "no TEXT element", _i2b2_bad(lambda: f'<deIdi2b2><NOTE>{BAD_TEXT}</NOTE><TAGS/></deIdi2b2>'),
            "bad.xml", "'bad'", "no <TEXT> element"),
]

ALL_CASES = BRAT_CASES + JSONL_CASES + DOCBIN_CASES + I2B2_CASES


def case_id(case: BadCase) -> str:
    return f"{case.fmt}-{case.name.replace(' ', '_')}"


def assert_names_source_without_phi(message: str, case: BadCase) -> None:
    assert case.file in message, message
    assert case.marker in message, message
    assert case.problem in message, message
    for phi in PHI:
        assert phi not in message, f"PHI {phi!r} in: {message}"


def assert_no_phi(*texts: str) -> None:
    for text in texts:
        for phi in PHI:
            assert phi not in text, f"PHI {phi!r} leaked"


def temp_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*.tmp"))


def make_corpus(tmp_path: Path, case: BadCase) -> Path:
    folder = tmp_path / "corpus"
    write_good(case.fmt, folder)
    case.build(folder)
    return folder


def cli_failure_message(result) -> str:
    """The error text of a failed CliRunner run: the exception it raised or what it printed."""
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        return str(result.exception)
    return result.output


# ----------------------------------------------------------------------------- readers / extract
@pytest.mark.parametrize("case", ALL_CASES, ids=case_id)
def test_reader_error_names_file_and_record_without_phi(case, tmp_path, caplog, capsys):
    folder = make_corpus(tmp_path, case)
    with caplog.at_level(logging.DEBUG):
        with pytest.raises(RecordError) as err:
            list(read_corpus(folder, case.fmt, LABEL_MAPS[case.fmt], "es"))
    assert_names_source_without_phi(str(err.value), case)
    captured = capsys.readouterr()
    assert_no_phi(caplog.text, captured.out, captured.err)


@pytest.mark.parametrize("case", ALL_CASES, ids=case_id)
def test_extract_skips_the_bad_record_and_keeps_every_good_one(case, tmp_path, caplog, capsys):
    folder = make_corpus(tmp_path, case)
    out, report = tmp_path / "out" / "extract.jsonl", tmp_path / "out" / "extract.report.json"
    args = ["extract", str(folder), "--format", case.fmt, "--lang", "es", "--out", str(out), "--report", str(report),
            "--on-error", "skip"]
    if LABEL_MAPS[case.fmt]:
        args += ["--label-map", LABEL_MAPS[case.fmt]]
    with caplog.at_level(logging.DEBUG):
        result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    records = list(read_records(out))
    expected = {**GOOD, **{rid: MORE_GOOD[rid] for rid in case.more_good}}
    assert sorted(r.id for r in records) == sorted(expected)
    for record in records:  # each good record complete, with its spans on their strings
        validate_record(record)
        text, spans = expected[record.id]
        assert record.text == text
        assert sorted((record.text[s.start:s.end], s.label) for s in record.spans) == sorted(spans)
    rep = srsly.read_json(report)["reader"]
    assert rep["records_skipped"] == 1 and rep["records_ok"] == len(expected)
    assert_names_source_without_phi(rep["skipped"][0]["reason"], case)
    assert Path(rep["skipped"][0]["source"]).name.startswith("bad")
    # the CLI tells which record it skipped, and why, without its text
    assert_names_source_without_phi(result.output, case)
    captured = capsys.readouterr()
    assert_no_phi(out.read_text(encoding="utf-8"), caplog.text, captured.out, captured.err)
    assert temp_files(tmp_path / "out") == []


@pytest.mark.parametrize("case", ALL_CASES, ids=case_id)
def test_failed_extract_leaves_the_earlier_output_intact(case, tmp_path):
    folder = make_corpus(tmp_path, case)
    out = tmp_path / "out" / "extract.jsonl"
    out.parent.mkdir()
    earlier = jsonl_line("earlier", *GOOD["good-1"]) + "\n"
    out.write_text(earlier, encoding="utf-8")
    args = ["extract", str(folder), "--format", case.fmt, "--lang", "es", "--out", str(out)]
    if LABEL_MAPS[case.fmt]:
        args += ["--label-map", LABEL_MAPS[case.fmt]]
    result = runner.invoke(app, args)
    assert result.exit_code != 0
    assert_names_source_without_phi(cli_failure_message(result), case)
    assert out.read_text(encoding="utf-8") == earlier
    assert sorted(p.name for p in out.parent.iterdir()) == ["extract.jsonl"]  # no temp file left


# ----------------------------------------------------------------------------- BOM, CRLF: valid, must align
def spans_as_annotated(record) -> list[tuple[str, str]]:
    return sorted((record.text[s.start:s.end], s.label) for s in record.spans)


def test_brat_bom_offsets_counting_the_bom_as_brat_does(tmp_path):
    # brat decodes the .txt as plain UTF-8, so a BOM is character 0 and offsets count it (MEDDOCAN's
    # BOM files are annotated that way). The reader drops the BOM and moves the spans back by one.
    text, spans = GOOD["good-1"]
    folder = tmp_path / "brat"
    folder.mkdir()
    (folder / "bom.txt").write_text(BOM + text, encoding="utf-8")
    (folder / "bom.ann").write_text(brat_ann(text, spans, shift=1), encoding="utf-8")
    (rec,) = read_corpus(folder, "brat", "meddocan", "es")
    assert rec.text == text and not rec.text.startswith(BOM)
    assert spans_as_annotated(rec) == sorted(spans)


def test_brat_bom_offsets_counted_after_the_bom_are_recognised(tmp_path):
    # Tools that decode with utf-8-sig count from after the BOM: their annotated strings match
    # without the move, and the reader takes that reading instead.
    text, spans = GOOD["good-2"]
    folder = tmp_path / "brat"
    folder.mkdir()
    (folder / "bom.txt").write_text(BOM + text, encoding="utf-8")
    (folder / "bom.ann").write_text(BOM + brat_ann(text, spans), encoding="utf-8")  # a BOM in the .ann too
    report = ReadReport()
    (rec,) = read_corpus(folder, "brat", "meddocan", "es", report=report)
    assert rec.text == text
    # the BOM of the .ann used to hide its first line as an unknown annotation kind: the span was lost
    assert spans_as_annotated(rec) == sorted(spans) and report.spans_kept == 2
    assert not report.ignored_annotations


def test_jsonl_bom_and_crlf_files_read_every_record_with_aligned_spans(tmp_path):
    crlf_text = "Paciente Lucía Ferrer.\r\nNatural de Teruel.\r\n"
    spans = [("Lucía Ferrer", "PERSON"), ("Teruel", "LOCATION")]
    lines = [jsonl_line("crlf", crlf_text, spans), jsonl_line("good-2", *GOOD["good-2"])]
    path = tmp_path / "windows.jsonl"
    # written by a Windows tool: a BOM first, CRLF after every line
    path.write_bytes((BOM + "\r\n".join(lines) + "\r\n").encode("utf-8"))
    records = list(read_corpus(path, "jsonl", None, "es"))
    assert [r.id for r in records] == ["crlf", "good-2"]
    assert records[0].text == crlf_text  # a CRLF inside the text is two characters, as in the offsets
    assert spans_as_annotated(records[0]) == sorted(spans)
    assert spans_as_annotated(records[1]) == sorted(GOOD["good-2"][1])


def test_jsonl_unicode_line_separator_inside_a_text_does_not_split_the_record(tmp_path):
    text = "Paciente Lucía Ferrer.\u2028Natural de Teruel.\x85Fin."
    path = tmp_path / "in.jsonl"
    path.write_text(jsonl_line("sep", text, [("Teruel", "LOCATION")]) + "\n", encoding="utf-8")
    (rec,) = read_corpus(path, "jsonl", None, "es")
    assert rec.text == text and spans_as_annotated(rec) == [("Teruel", "LOCATION")]


def test_i2b2_bom_and_crlf_files_align(tmp_path):
    text = "\nRecord date: 2091-03-14\nMr. Oscar Whitfield, 67 years old, seen at Lakeside Clinic, Boston.\n"
    spans = [("Oscar Whitfield", "PERSON"), ("Boston", "LOCATION")]
    folder = tmp_path / "i2b2"
    folder.mkdir()
    xml = i2b2_xml(text, i2b2_tags(text, spans))
    (folder / "bom.xml").write_bytes((BOM + xml).encode("utf-8"))
    # CRLF files: the XML parser turns every CRLF into LF (XML line-end normalisation), and offsets
    # count the text the parser gives, as every XML-reading i2b2 tool does
    (folder / "crlf.xml").write_bytes(i2b2_xml(text.replace("\n", "\r\n"), i2b2_tags(text, spans), newline="\r\n").encode("utf-8"))
    records = list(read_corpus(folder, "i2b2", "i2b2", "en"))
    assert [r.id for r in records] == ["bom", "crlf"]
    for rec in records:
        assert rec.text == text
        assert spans_as_annotated(rec) == sorted(spans)


# ----------------------------------------------------------------------------- a 5 MB note
FIVE_MB = 5 * 1024 * 1024
FILLER = "Refiere disnea de esfuerzo y tos seca desde hace una semana, sin fiebre ni dolor torácico.\n"


def long_note(size: int = FIVE_MB) -> tuple[str, list[tuple[str, str]]]:
    """A note of about `size` characters with PHI at its start, past 1,000,000 characters (spaCy's
    default max_length) and at its end."""
    body = FILLER * (size // len(FILLER) // 3)
    text = (f"Paciente {PHI_NAME}.\n\n" + body + "Natural de Teruel.\n\n" + body
            + f"DNI {PHI_ID} en la ficha.\n" + body + "Control en Soria.\n")
    return text, [(PHI_NAME, "PERSON"), ("Teruel", "LOCATION"), (PHI_ID, "ID"), ("Soria", "LOCATION")]


@pytest.mark.parametrize("fmt", ["brat", "jsonl", "docbin", "i2b2"])
def test_a_5_mb_note_reads_whole_with_aligned_spans(fmt, tmp_path):
    text, spans = long_note()
    assert len(text) > 4_900_000 and text.index("Soria") > 4_900_000
    folder = tmp_path / "corpus"
    folder.mkdir()
    if fmt == "brat":
        write_brat(folder, "big", text, spans)
    elif fmt == "jsonl":
        (folder / "big.jsonl").write_text(jsonl_line("big", text, spans) + "\n", encoding="utf-8")
    elif fmt == "docbin":
        (folder / "big.spacy").write_bytes(docbin_bytes([("big", text, [(s, e, lab) for s, e, lab, _ in offsets(text, spans)])]))
    else:
        (folder / "big.xml").write_text(i2b2_xml(text, i2b2_tags(text, spans)), encoding="utf-8")
    started = time.perf_counter()
    (rec,) = read_corpus(folder, fmt, LABEL_MAPS[fmt], "es")
    assert time.perf_counter() - started < 30
    assert rec.id == "big" and rec.text == text
    assert spans_as_annotated(rec) == sorted(spans)


# ----------------------------------------------------------------------------- unknown language
def test_extract_refuses_a_language_code_spacy_does_not_know(tmp_path):
    folder = tmp_path / "corpus"
    write_good("jsonl", folder)
    with pytest.raises(ValueError, match="unknown language code 'zz'"):
        list(read_corpus(folder, "jsonl", None, "zz"))
    out = tmp_path / "out.jsonl"
    out.write_text("earlier\n", encoding="utf-8")
    result = runner.invoke(app, ["extract", str(folder), "--format", "jsonl", "--lang", "zz", "--out", str(out)])
    assert result.exit_code == 1
    assert "unknown language code 'zz'" in result.output
    assert out.read_text(encoding="utf-8") == "earlier\n"  # nothing read, nothing written


def test_a_record_declaring_another_language_is_kept_for_detect_to_judge(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text(_bad_json(lang="xx") + "\n", encoding="utf-8")
    (rec,) = read_corpus(path, "jsonl", None, "es")
    assert rec.lang == "es" and rec.meta["declared_lang"] == "xx"
    assert spans_as_annotated(rec) == sorted(BAD_SPANS)


# ============================================================================= factory redact
ES_NOTE = (f"El paciente {PHI_NAME} acude a urgencias por dolor abdominal de dos días de evolución. "
           f"Teléfono de contacto {PHI_PHONE}, correo {PHI_EMAIL}.")
ES_NOTE_2 = "La paciente refiere cefalea intensa desde ayer por la tarde. Correo de su hija ines.vidal@correo.es."
FR_NOTE = "Le patient est admis aux urgences pour une douleur thoracique. Courriel jean.dupont@exemple.fr."
NO_LANGUAGE = f"{PHI_PHONE} -- 03/04/2020 -- 12:30"  # no letters: no language can be detected


def regex_pipeline(lang: str) -> Language:
    """A deid pipeline without NER: the locale regex pack + the merger (builds in about a second)."""
    nlp = spacy.blank(lang)
    nlp.add_pipe("deid_regex_pack", config={"write_ents": False}).pack = RegexPack.from_dir(default_pack_dir(lang))
    nlp.add_pipe("deid_merger")
    return nlp


@pytest.fixture(scope="module")
def bad_inputs_pipelines() -> dict[str, Language]:
    return {"es": regex_pipeline("es"), "fr": regex_pipeline("fr")}


def redact(inputs: list[Path], out: Path, pipelines: dict, output_format: str = "jsonl", fallback="union", **kwargs) -> dict:
    return redact_files(inputs, out, output_format, "tag", router=Router(pipelines, fallback=fallback), progress=False, **kwargs)


def jsonl_rows(path: Path) -> dict[str, dict]:
    return {row["id"]: row for row in map(json.loads, path.read_text(encoding="utf-8").splitlines())}


def write_mixed_batch(folder: Path) -> None:
    """Good and bad inputs side by side, as a real hand-over folder looks."""
    folder.mkdir(parents=True)
    (folder / "good.txt").write_text(ES_NOTE, encoding="utf-8")
    (folder / "crlf.txt").write_bytes(ES_NOTE.replace(". ", ".\r\n").encode("utf-8") + b"\r\n")
    (folder / "bom.txt").write_bytes((BOM + ES_NOTE).encode("utf-8"))
    (folder / "empty.txt").write_bytes(b"")
    (folder / "blank.txt").write_text(" \r\n\t\n", encoding="utf-8")
    (folder / "bom-only.txt").write_bytes(BOM.encode("utf-8"))
    (folder / "latin1.txt").write_bytes(ES_NOTE.encode("latin-1"))
    (folder / "empty.jsonl").write_bytes(b"")
    records = [
        json.dumps({"id": "r-fr", "lang": "xx", "text": FR_NOTE}),  # a declared language without a pipeline
        json.dumps({"id": "r-digits", "text": NO_LANGUAGE}),
        json.dumps({"id": "r-blank", "text": "   "}),
        json.dumps({"id": "r-es", "text": ES_NOTE_2}),
        json.dumps({"id": "r-sep", "text": ES_NOTE_2 + "\u2028" + ES_NOTE_2}, ensure_ascii=False),
    ]
    data = (BOM + "\r\n".join(records) + "\r\n").encode("utf-8")
    data += json.dumps({"id": "r-latin1", "text": ES_NOTE}, ensure_ascii=False).encode("latin-1") + b"\n"
    data += json.dumps({"id": "r-cut", "text": ES_NOTE}, ensure_ascii=False).encode("utf-8")[:40]  # cut short, no newline
    (folder / "records.jsonl").write_bytes(data)


EXPECTED_WRITTEN = {"good", "crlf", "bom", "r-fr", "r-digits", "r-es", "r-sep"}


def expected_problems(folder: Path) -> dict[str, str]:
    return {
        str(folder / "empty.txt"): "empty", str(folder / "blank.txt"): "empty", str(folder / "bom-only.txt"): "empty",
        str(folder / "latin1.txt"): "not UTF-8", str(folder / "empty.jsonl"): "empty",
        f"{folder / 'records.jsonl'}:3": "record 'r-blank' is empty",
        f"{folder / 'records.jsonl'}:6": "not UTF-8", f"{folder / 'records.jsonl'}:7": "not valid JSON",
    }


def test_redact_mixed_batch_reports_each_bad_input_and_writes_every_good_one(bad_inputs_pipelines, tmp_path, caplog, capsys):
    folder = tmp_path / "in"
    write_mixed_batch(folder)
    out = tmp_path / "out" / "redacted.jsonl"
    with caplog.at_level(logging.DEBUG):
        report = redact([folder], out, bad_inputs_pipelines)
    rows = jsonl_rows(out)
    assert set(rows) == EXPECTED_WRITTEN and report["written"] == len(EXPECTED_WRITTEN)
    # (a) each bad input by file (and line), with what is wrong
    problems = {p["input"]: p["problem"] for p in report["skipped"]}
    expected = expected_problems(folder)
    assert set(problems) == set(expected)
    for where, problem in expected.items():
        assert problems[where].startswith(problem), (where, problems[where])
    # (b) no PHI anywhere but in the (redacted) output
    captured = capsys.readouterr()
    assert_no_phi(json.dumps(report, ensure_ascii=False), caplog.text, captured.out, captured.err)
    for where in expected:
        assert where in caplog.text
    # every written document is redacted, with spans that index its original text
    originals = {"good": ES_NOTE, "crlf": ES_NOTE.replace(". ", ".\r\n") + "\r\n", "bom": BOM + ES_NOTE}
    for rid, original in originals.items():
        row = rows[rid]
        assert {(original[s["start"]:s["end"]], s["label"]) for s in row["spans"]} >= {(PHI_PHONE, "PHONE"), (PHI_EMAIL, "EMAIL")}
        assert PHI_EMAIL not in row["redacted"] and PHI_PHONE not in row["redacted"]
    # CRLF kept, a BOM file keeps its BOM (and its offsets count it, as brat does)
    assert rows["crlf"]["redacted"].count("\r\n") == originals["crlf"].count("\r\n") and "\n" not in rows["crlf"]["redacted"].replace("\r\n", "")
    assert rows["bom"]["redacted"] == BOM + rows["good"]["redacted"]
    # a record is not split at a Unicode line separator inside its text
    assert rows["r-sep"]["redacted"].count("[EMAIL]") == 2 and "\u2028" in rows["r-sep"]["redacted"]
    # a declared language is honoured, not re-detected: "xx" has no pipeline; text without letters
    # cannot be detected; both go to the fallback asked for (union), still redacted, reported by input
    assert rows["r-fr"]["pipeline"] == "fallback" and "jean.dupont" not in rows["r-fr"]["redacted"]
    assert rows["r-digits"]["pipeline"] == "fallback" and PHI_PHONE not in rows["r-digits"]["redacted"]
    records = folder / "records.jsonl"
    assert report["unrouted"] == [
        {"input": f"{records}:1", "id": "r-fr", "lang": "xx", "how": "declared", "pipeline": "fallback",
         "reason": "declared language 'xx' has no pipeline"},
        {"input": f"{records}:2", "id": "r-digits", "lang": "unknown", "how": "detected", "pipeline": "fallback",
         "reason": "too short to detect its language (0 letters, need 40)"}]
    assert report["router"]["unrouted_languages"] == {"xx": 1, "unknown": 1}
    assert report["complete"] is False  # inputs were skipped
    assert temp_files(tmp_path / "out") == []


def test_redact_text_and_brat_outputs_keep_line_ends_and_bom(bad_inputs_pipelines, tmp_path):
    folder = tmp_path / "in"
    write_mixed_batch(folder)
    text_out = tmp_path / "text"
    report = redact([folder], text_out, bad_inputs_pipelines, "text")
    assert sorted(p.stem for p in text_out.iterdir()) == sorted(EXPECTED_WRITTEN)
    crlf_in = (folder / "crlf.txt").read_bytes()
    crlf_out = (text_out / "crlf.txt").read_bytes()
    assert crlf_out.count(b"\r\n") == crlf_in.count(b"\r\n") and crlf_out.count(b"\n") == crlf_in.count(b"\n")
    assert b"[PHONE]" in crlf_out and PHI_PHONE.encode() not in crlf_out
    assert (text_out / "bom.txt").read_bytes() == BOM.encode("utf-8") + (text_out / "good.txt").read_bytes()
    assert report["written"] == len(EXPECTED_WRITTEN) and temp_files(text_out) == []

    # brat output of the CRLF and BOM files reads back through the brat reader with every span aligned:
    # redacted, the spans sit on the tags; annotated (--mode annotate), on the PHI of the original
    canonical = {lab: lab for lab in ("PERSON", "AGE", "DATE", "ADDRESS", "LOCATION", "ORGANIZATION", "PROFESSION",
                                      "PHONE", "EMAIL", "URL", "IP", "ID")}
    brat_out = tmp_path / "brat"
    redact([folder / "crlf.txt", folder / "bom.txt"], brat_out, bad_inputs_pipelines, "brat")
    assert (brat_out / "crlf.txt").read_bytes() == crlf_out
    assert (brat_out / "bom.txt").read_bytes() == (text_out / "bom.txt").read_bytes()
    for rid in ("crlf", "bom"):
        redacted = (brat_out / f"{rid}.txt").read_bytes().decode("utf-8")  # offsets count the BOM, as brat's do
        lines = [line.split("\t") for line in (brat_out / f"{rid}.ann").read_text(encoding="utf-8").splitlines()]
        tags = {(redacted[int(mid.split()[1]):int(mid.split()[2])], mid.split()[0]) for _, mid, _ in lines}
        assert tags >= {("[PHONE]", "PHONE"), ("[EMAIL]", "EMAIL")} and all(value == f"[{mid.split()[0]}]" for _, mid, value in lines)
    annotated = tmp_path / "annotated"
    redact_files([folder / "crlf.txt", folder / "bom.txt"], annotated, "brat", "annotate",
                 router=Router(bad_inputs_pipelines), progress=False)
    assert (annotated / "crlf.txt").read_bytes() == crlf_in
    assert (annotated / "bom.txt").read_bytes() == (folder / "bom.txt").read_bytes()
    records = {r.id: r for r in read_corpus(annotated, "brat", canonical, "es")}
    for rid in ("crlf", "bom"):
        assert {(v, lab) for v, lab in spans_as_annotated(records[rid])} >= {(PHI_PHONE, "PHONE"), (PHI_EMAIL, "EMAIL")}


def test_redact_without_fallback_does_not_write_unrouted_documents(bad_inputs_pipelines, tmp_path, caplog):
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "digits.txt").write_text(NO_LANGUAGE, encoding="utf-8")
    (folder / "es.txt").write_text(ES_NOTE, encoding="utf-8")
    out = tmp_path / "out"
    with caplog.at_level(logging.DEBUG):
        report = redact([folder], out, bad_inputs_pipelines, "text", fallback=None)
    # with no fallback (the default) it would come out unredacted: not written, named by file and id
    assert sorted(p.name for p in out.iterdir()) == ["es.txt"]
    assert report["skipped"] == [] and report["not_written"] == 1 and report["complete"] is False
    assert report["unrouted"] == [{"input": str(folder / "digits.txt"), "id": "digits", "lang": "unknown", "how": "detected",
                                   "pipeline": "none", "reason": "too short to detect its language (0 letters, need 40)"}]
    assert f"{folder / 'digits.txt'}: document 'digits' not redacted" in caplog.text
    assert_no_phi(caplog.text)


def test_redact_two_documents_with_one_output_name_keeps_the_first_and_reports_the_second(bad_inputs_pipelines, tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.txt").write_text(ES_NOTE, encoding="utf-8")
    (folder / "b.jsonl").write_text(json.dumps({"id": "a", "text": FR_NOTE}) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    report = redact([folder], out, bad_inputs_pipelines, "text")
    assert "[EMAIL]" in (out / "a.txt").read_text(encoding="utf-8") and "urgencias" in (out / "a.txt").read_text(encoding="utf-8")
    assert report["written"] == 1
    assert report["skipped"] == [{"input": f"{folder / 'b.jsonl'}:1", "problem": f"output name 'a' already written for {folder / 'a.txt'}"}]


@Language.component("bad_inputs_fail_on_marker")
def _fail_on_marker(doc):
    """Fault injection: a component that breaks on one document, as a real bug would mid-batch."""
    if "FALLA-AQUI" in doc.text:
        raise RuntimeError("component failed")
    return doc


def test_redact_that_fails_midway_leaves_no_partial_output(tmp_path):
    # 300 notes: the router reads 256 at a time, so the first 256 are done when note 280 breaks;
    # outputs are committed document by document, so those 256 are kept
    nlp = regex_pipeline("es")
    nlp.add_pipe("bad_inputs_fail_on_marker")
    folder = tmp_path / "in"
    folder.mkdir()
    for i in range(300):
        (folder / f"doc-{i:03d}.txt").write_text(ES_NOTE_2 + (" FALLA-AQUI" if i == 280 else ""), encoding="utf-8")
    out = tmp_path / "out" / "redacted.jsonl"
    out.parent.mkdir()
    out.write_text('{"id": "earlier"}\n', encoding="utf-8")
    with pytest.raises(RuntimeError):
        redact_files([folder], out, "jsonl", router=Router({"es": nlp}), progress=False)
    assert out.read_text(encoding="utf-8") == '{"id": "earlier"}\n'  # the earlier output, whole
    # the documents finished before the failure are kept, whole rows, in redacted.jsonl.partial,
    # and the shards they came in are in the journal a re-run resumes from
    assert sorted(p.name for p in out.parent.iterdir()) == ["redacted.jsonl", "redacted.jsonl.partial",
                                                            "redacted.jsonl.redact-journal.jsonl"]
    rows = [json.loads(line) for line in (out.parent / "redacted.jsonl.partial").read_text(encoding="utf-8").splitlines()]
    assert [r["id"] for r in rows] == [f"doc-{i:03d}" for i in range(256)]
    assert all(r["redacted"] == ES_NOTE_2.replace("ines.vidal@correo.es", "[EMAIL]") for r in rows)

    text_out = tmp_path / "text"
    with pytest.raises(RuntimeError):
        redact_files([folder], text_out, "text", router=Router({"es": nlp}), progress=False)
    # one file per document: the ones written before the failure are complete, the rest absent
    written = sorted(p.name for p in text_out.iterdir())
    assert written == [f"doc-{i:03d}.txt" for i in range(256)]
    expected = ES_NOTE_2.replace("ines.vidal@correo.es", "[EMAIL]")
    assert all((text_out / name).read_text(encoding="utf-8") == expected for name in written)
    assert temp_files(tmp_path) == []


def test_split_long_text_cuts_at_paragraphs_and_joins_back():
    text = ("Primera línea del párrafo.\nSegunda línea.\n\n" * 40) + "x" * 700
    pieces = split_long_text(text, 500)
    assert "".join(pieces) == text
    assert all(0 < len(p) <= 500 for p in pieces)
    assert all(p.endswith("\n\n") for p in pieces[:-2])  # at paragraph breaks while there are some
    assert pieces[-2:] == ["x" * 500, "x" * 200]  # a run without any break is cut hard


def test_router_runs_a_document_over_max_length_in_pieces_with_exact_offsets(bad_inputs_pipelines):
    text = "\n".join(f"Nota {i}: la paciente refiere dolor; teléfono de contacto 6{i:02d} 345 678, correo p{i}@correo.es."
                     for i in range(60))
    whole = Router(bad_inputs_pipelines)(text).doc
    small = regex_pipeline("es")
    small.max_length = 300  # the same pipeline, forced to work in ~10 pieces
    routed = Router({"es": small, "fr": bad_inputs_pipelines["fr"]})(text)
    assert routed.pipeline == "es" and routed.doc.text == text
    got = [(e.start_char, e.end_char, e.label_, e._.deid_source) for e in routed.doc.ents]
    assert got == [(e.start_char, e.end_char, e.label_, e._.deid_source) for e in whole.ents]
    assert len(got) == 120


def test_redact_a_5_mb_document_through_the_cli(bad_inputs_pipelines, tmp_path, caplog):
    # spaCy refuses texts over nlp.max_length (1,000,000 characters): the router must not crash on
    # a 5 MB note, nor cut it, and PHI far past the first million characters must be redacted.
    body = FILLER * (FIVE_MB // len(FILLER) // 2)
    text = f"Paciente con teléfono {PHI_PHONE}.\n\n" + body + f"Correo {PHI_EMAIL}.\n\n" + body + f"DNI {PHI_ID} en la ficha.\n"
    assert len(text) > 5_000_000
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "big.txt").write_text(text, encoding="utf-8")
    (folder / "empty.txt").write_text("", encoding="utf-8")
    pipelines_dir = tmp_path / "pipelines"
    pipelines_dir.mkdir()
    for lang, nlp in bad_inputs_pipelines.items():
        nlp.to_disk(pipelines_dir / f"deid_{lang}")
    out, report_path = tmp_path / "out", tmp_path / "report.json"
    with caplog.at_level(logging.DEBUG):
        result = runner.invoke(app, ["redact", str(folder), "--out", str(out), "--format", "text", "--mode", "tag",
                                     "--pipelines", f"{pipelines_dir / 'deid_es'},{pipelines_dir / 'deid_fr'}",
                                     "--report", str(report_path), "--quiet"])
    assert result.exit_code == 3, result.output  # the empty file was skipped: an incomplete run
    redacted = (out / "big.txt").read_text(encoding="utf-8")
    assert redacted == f"Paciente con teléfono [PHONE].\n\n" + body + "Correo [EMAIL].\n\n" + body + "DNI [ID] en la ficha.\n"
    report = srsly.read_json(report_path)
    assert report["written"] == 1 and report["skipped"] == [{"input": str(folder / "empty.txt"), "problem": "empty"}]
    assert "1 inputs skipped" in result.output
    assert_no_phi(result.output, caplog.text, json.dumps(report, ensure_ascii=False))
