"""Readers: brat, JSONL, DocBin, i2b2 XML, inline markup -> validated records with canonical labels."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import srsly

from deid_factory import PROJECT_ROOT
from deid_factory.readers import ReadReport, read_corpus
from deid_factory.records import RecordError, validate_record

FIXTURES = PROJECT_ROOT / "corpora" / "fixtures"
MEDDOCAN = PROJECT_ROOT.parent / "shared" / "corpora" / "meddocan"


def _brat(tmp_path: Path, name: str, text: str, ann: str) -> Path:
    folder = tmp_path / "brat"
    folder.mkdir(exist_ok=True)
    (folder / f"{name}.txt").write_text(text, encoding="utf-8", newline="")
    (folder / f"{name}.ann").write_text(ann, encoding="utf-8", newline="")
    return folder


# ----------------------------------------------------------------------------- brat
def test_brat_fixture_maps_labels_drops_sex_and_ignores_notes():
    report = ReadReport()
    records = list(read_corpus(FIXTURES / "brat", "brat", "meddocan", "es", report=report))
    assert len(records) == 1
    rec = records[0]
    assert rec.id == "nota-001" and rec.lang == "es"
    got = {(rec.text[s.start:s.end], s.label) for s in rec.spans}
    assert ("Lucía Ferrer Olmedo", "PERSON") in got
    assert ("Tomás Ibarra Sáez", "PERSON") in got
    assert ("Centro de Salud Los Álamos", "ORGANIZATION") in got
    assert ("calle Goya 14", "ADDRESS") in got
    assert ("4471902", "ID") in got
    assert all(s.label != "SEXO_SUJETO_ASISTENCIA" for s in rec.spans)
    assert report.dropped_labels == {"SEXO_SUJETO_ASISTENCIA": 1}
    assert report.ignored_annotations == {"note": 1, "relation": 1}
    assert report.spans_read == 12 and report.spans_kept == 11
    # the finer corpus label travels as an attribute
    staff = next(s for s in rec.spans if rec.text[s.start:s.end] == "Tomás Ibarra Sáez")
    assert staff.attrs["source_label"] == "NOMBRE_PERSONAL_SANITARIO"
    validate_record(rec)


def test_brat_offsets_count_crlf_as_two_characters(tmp_path):
    text = "Nombre: Rosa Vidal\r\nCiudad: Teruel\r\n"
    start = text.index("Teruel")
    folder = _brat(tmp_path, "crlf", text, f"T1\tTERRITORIO {start} {start + 6}\tTeruel\n")
    (rec,) = read_corpus(folder, "brat", "meddocan", "es")
    assert rec.text[rec.spans[0].start:rec.spans[0].end] == "Teruel"


def test_brat_spans_are_trimmed_and_counted(tmp_path):
    text = "Vive en Huesca, con su hija."
    start = text.index("Huesca")
    # annotation includes the comma and a leading space, as careless annotators do
    folder = _brat(tmp_path, "trim", text, f"T1\tTERRITORIO {start - 1} {start + 7}\t Huesca,\n")
    report = ReadReport()
    (rec,) = read_corpus(folder, "brat", "meddocan", "es", report=report)
    assert (rec.spans[0].start, rec.spans[0].end) == (start, start + 6)
    assert report.trimmed == 1


def test_brat_discontinuous_annotation_gives_one_span_per_fragment(tmp_path):
    text = "Dr. Juan y Pedro Soler Mas"
    a, b = text.index("Juan"), text.index("Soler")
    folder = _brat(tmp_path, "disc", text, f"T1\tNOMBRE_PERSONAL_SANITARIO {a} {a + 4};{b} {b + 9}\tJuan Soler Mas\n")
    (rec,) = read_corpus(folder, "brat", "meddocan", "es")
    assert [rec.text[s.start:s.end] for s in rec.spans] == ["Juan", "Soler Mas"]
    _brat(tmp_path, "disc", text, f"T1\tNOMBRE_PERSONAL_SANITARIO {a} {a + 4};{b} {b + 9}\tJuan Soler Max\n")
    with pytest.raises(RecordError, match="disc.ann:1.*discontinuous annotation T1.*differs"):
        list(read_corpus(folder, "brat", "meddocan", "es"))


def test_brat_text_mismatch_names_file_and_record_without_phi(tmp_path):
    text = "Paciente: Carmen Lago Prieto, 61 años."
    start = text.index("Carmen")
    folder = _brat(tmp_path, "malo", text, f"T1\tNOMBRE_SUJETO_ASISTENCIA {start} {start + 18}\tCarmen Lago Pietro\n")
    with pytest.raises(RecordError) as err:
        list(read_corpus(folder, "brat", "meddocan", "es"))
    message = str(err.value)
    assert "malo.ann" in message and "'malo'" in message and f"[{start},{start + 18})" in message
    assert "differs" in message
    assert "Carmen" not in message and "Pietro" not in message


def test_brat_bad_record_is_skipped_and_reported_when_asked(tmp_path):
    good = "Natural de Soria."
    s = good.index("Soria")
    folder = _brat(tmp_path, "a-good", good, f"T1\tTERRITORIO {s} {s + 5}\tSoria\n")
    bad = "Edad: 40 años."
    _brat(tmp_path, "b-bad", bad, "T1\tEDAD_SUJETO_ASISTENCIA 6 99\t40 años\n")
    report = ReadReport()
    records = list(read_corpus(folder, "brat", "meddocan", "es", on_error="skip", report=report))
    assert [r.id for r in records] == ["a-good"]
    assert report.to_dict()["records_skipped"] == 1
    assert report.skipped[0]["id"] == "b-bad" and "outside the text" in report.skipped[0]["reason"]


def test_overlapping_spans_of_different_labels_are_an_error(tmp_path):
    text = "Hospital de Teruel"
    folder = _brat(tmp_path, "ov", text, "T1\tHOSPITAL 0 18\tHospital de Teruel\nT2\tTERRITORIO 12 18\tTeruel\n")
    with pytest.raises(RecordError, match="overlap with different labels"):
        list(read_corpus(folder, "brat", "meddocan", "es"))


def test_exact_duplicate_spans_are_dropped_and_counted(tmp_path):
    text = "Vive en Lugo."
    folder = _brat(tmp_path, "dup", text, "T1\tTERRITORIO 8 12\tLugo\nT2\tTERRITORIO 8 12\tLugo\n")
    report = ReadReport()
    (rec,) = read_corpus(folder, "brat", "meddocan", "es", report=report)
    assert len(rec.spans) == 1 and report.duplicates == 1


def test_label_missing_from_the_map_is_an_error(tmp_path):
    folder = _brat(tmp_path, "lab", "Vive en Lugo.", "T1\tCIUDAD_INVENTADA 8 12\tLugo\n")
    with pytest.raises(RecordError, match="not in the label map"):
        list(read_corpus(folder, "brat", "meddocan", "es"))


def test_non_utf8_files_are_clear_errors(tmp_path):
    folder = _brat(tmp_path, "latin", "Vive en Ávila.", "T1\tTERRITORIO 8 13\tÁvila\n")
    (folder / "latin.ann").write_bytes("T1\tTERRITORIO 8 13\tÁvila\n".encode("latin-1"))
    with pytest.raises(RecordError, match="latin.ann.*not UTF-8"):
        list(read_corpus(folder, "brat", "meddocan", "es"))
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b'{"id": "a", "text": "ok"}\n{"id": "b", "text": "\xe1"}\n')
    with pytest.raises(RecordError, match=r"bad\.jsonl:2: not UTF-8"):
        list(read_corpus(path, "jsonl", None, "es"))


def test_synth_through_the_dispatcher():
    report = ReadReport()
    records = list(read_corpus(None, "synth", lang="es", n=5, seed=2, report=report))
    assert [r.id for r in records][-1] == "synth-es-2-000004"
    assert report.records_ok == 5 and report.spans_kept == sum(len(r.spans) for r in records)


def test_txt_without_ann_is_an_error(tmp_path):
    folder = tmp_path / "sola"
    folder.mkdir()
    (folder / "x.txt").write_text("texto", encoding="utf-8")
    with pytest.raises(RecordError, match="no annotation file"):
        list(read_corpus(folder, "brat", "meddocan", "es"))


# ----------------------------------------------------------------------------- jsonl
def test_jsonl_reader_keeps_attributes_and_checks_text(tmp_path):
    path = tmp_path / "in.jsonl"
    srsly.write_jsonl(path, [
        {"id": "r1", "text": "Dra. Elena Ruiz", "spans": [{"start": 5, "end": 15, "label": "PERSON", "annotator": "gold"}]},
        {"id": "r2", "text": "Sin datos."},
    ])
    records = list(read_corpus(path, "jsonl", None, "es"))
    assert [r.id for r in records] == ["r1", "r2"]
    assert records[0].spans[0].attrs["annotator"] == "gold"
    srsly.write_jsonl(path, [{"id": "r3", "text": "Dra. Elena Ruiz", "spans": [{"start": 5, "end": 15, "label": "PERSON", "text": "Elena Rui"}]}])
    with pytest.raises(RecordError, match="differs"):
        list(read_corpus(path, "jsonl", None, "es"))


def test_jsonl_non_canonical_label_without_map_and_broken_line(tmp_path):
    path = tmp_path / "in.jsonl"
    srsly.write_jsonl(path, [{"id": "r1", "text": "Vive en Lugo", "spans": [{"start": 8, "end": 12, "label": "CITY"}]}])
    with pytest.raises(RecordError, match="not canonical"):
        list(read_corpus(path, "jsonl", None, "es"))
    path.write_text('{"id": "r1", "text": "ok"}\n{not json\n', encoding="utf-8")
    with pytest.raises(RecordError, match=r"in\.jsonl:2"):
        list(read_corpus(path, "jsonl", None, "es"))


def test_duplicate_record_ids_are_an_error(tmp_path):
    path = tmp_path / "in.jsonl"
    srsly.write_jsonl(path, [{"id": "r1", "text": "uno"}, {"id": "r1", "text": "dos"}])
    with pytest.raises(RecordError, match="duplicate record id"):
        list(read_corpus(path, "jsonl", None, "es"))


# ----------------------------------------------------------------------------- docbin
def test_docbin_reader_reads_entities_and_ids(tmp_path):
    import spacy
    from spacy.tokens import DocBin

    nlp = spacy.blank("es")
    doc = nlp("Remitida por el Dr. Luis Mora desde Cuenca .")
    doc.ents = [doc.char_span(20, 29, "PERSON"), doc.char_span(36, 42, "LOCATION")]
    doc.user_data["id"] = "doc-7"
    db = DocBin(store_user_data=True)
    db.add(doc)
    db.add(nlp("Sin PHI en esta nota ."))
    db.to_disk(tmp_path / "corpus.spacy")
    records = list(read_corpus(tmp_path / "corpus.spacy", "docbin", None, "es"))
    assert [r.id for r in records] == ["doc-7", "corpus-000001"]
    assert [(records[0].text[s.start:s.end], s.label) for s in records[0].spans] == [("Luis Mora", "PERSON"), ("Cuenca", "LOCATION")]


def test_docbin_reader_rejects_a_foreign_file(tmp_path):
    (tmp_path / "x.spacy").write_bytes(b"not a docbin")
    with pytest.raises(RecordError, match="not a spaCy DocBin"):
        list(read_corpus(tmp_path / "x.spacy", "docbin", None, "es"))


# ----------------------------------------------------------------------------- i2b2
I2B2_TEXT = "\nRecord date: 2091-03-14\nMr. Oscar Whitfield, 67 years old, seen at Lakeside Clinic, Boston MA 02118.\nPhone 617-555-0199.\n"


def write_i2b2(folder: Path, name: str = "note-1", wrong_text: bool = False) -> Path:
    """An i2b2 2014-style XML note (invented), offsets computed from the text."""
    folder.mkdir(parents=True, exist_ok=True)
    tags = []
    for i, (cat, typ, value) in enumerate([("DATE", "DATE", "2091-03-14"), ("NAME", "PATIENT", "Oscar Whitfield"),
                                          ("AGE", "AGE", "67"), ("LOCATION", "HOSPITAL", "Lakeside Clinic"),
                                          ("LOCATION", "CITY", "Boston"), ("LOCATION", "STATE", "MA"),
                                          ("LOCATION", "ZIP", "02118"), ("CONTACT", "PHONE", "617-555-0199")]):
        start = I2B2_TEXT.index(value)
        shown = value[:-1] + "X" if wrong_text and i == 1 else value
        tags.append(f'<{cat} id="P{i}" start="{start}" end="{start + len(value)}" text="{shown}" TYPE="{typ}" comment="" />')
    xml = ('<?xml version="1.0" encoding="UTF-8" ?>\n<deIdi2b2>\n<TEXT><![CDATA[' + I2B2_TEXT + "]]></TEXT>\n<TAGS>\n"
           + "\n".join(tags) + "\n</TAGS>\n</deIdi2b2>\n")
    path = folder / f"{name}.xml"
    path.write_text(xml, encoding="utf-8")
    return path


def test_i2b2_reader_uses_category_and_type(tmp_path):
    write_i2b2(tmp_path / "i2b2")
    (rec,) = read_corpus(tmp_path / "i2b2", "i2b2", "i2b2", "en")
    got = [(rec.text[s.start:s.end], s.label) for s in rec.spans]
    assert got == [("2091-03-14", "DATE"), ("Oscar Whitfield", "PERSON"), ("67", "AGE"), ("Lakeside Clinic", "ORGANIZATION"),
                   ("Boston", "LOCATION"), ("MA", "LOCATION"), ("02118", "LOCATION"), ("617-555-0199", "PHONE")]


def test_i2b2_2006_inline_format(tmp_path):
    xml = ('<ROOT>\n<RECORD ID="41">\n<TEXT>\nAdmitted 03/04/2092 by Dr. <PHI TYPE="DOCTOR">Ann Kirby</PHI> '
           'to <PHI TYPE="HOSPITAL">Riverside General</PHI>.\n</TEXT>\n</RECORD>\n'
           '<RECORD ID="42">\n<TEXT>Patient <PHI TYPE="PATIENT">Lee Park</PHI>, MRN <PHI TYPE="ID">4471-22</PHI>.</TEXT>\n</RECORD>\n</ROOT>\n')
    (tmp_path / "batch.xml").write_text(xml, encoding="utf-8")
    records = list(read_corpus(tmp_path / "batch.xml", "i2b2", "i2b2", "en"))
    assert [r.id for r in records] == ["batch-41", "batch-42"]
    assert [(records[0].text[s.start:s.end], s.label) for s in records[0].spans] == [("Ann Kirby", "PERSON"), ("Riverside General", "ORGANIZATION")]
    assert [(records[1].text[s.start:s.end], s.label) for s in records[1].spans] == [("Lee Park", "PERSON"), ("4471-22", "ID")]


def test_i2b2_reader_checks_the_text_attribute(tmp_path):
    write_i2b2(tmp_path / "i2b2", wrong_text=True)
    with pytest.raises(RecordError, match="note-1.xml.*differs"):
        list(read_corpus(tmp_path / "i2b2", "i2b2", "i2b2", "en"))


def test_i2b2_reader_reports_broken_xml(tmp_path):
    (tmp_path / "bad.xml").write_text("<deIdi2b2><TEXT>unclosed", encoding="utf-8")
    with pytest.raises(RecordError, match="bad.xml.*not well-formed"):
        list(read_corpus(tmp_path / "bad.xml", "i2b2", "i2b2", "en"))


# ----------------------------------------------------------------------------- MEDDOCAN
@pytest.mark.shared(MEDDOCAN / "train")
def test_meddocan_train_reads_cleanly():
    report = ReadReport()
    records = list(read_corpus(MEDDOCAN / "train", "brat", "meddocan", "es", report=report))
    assert len(records) == 500 and not report.skipped
    for r in records:
        validate_record(r)
    assert report.dropped_labels["SEXO_SUJETO_ASISTENCIA"] > 0
    assert set(report.labels) <= {"PERSON", "AGE", "DATE", "ADDRESS", "LOCATION", "ORGANIZATION", "PROFESSION", "PHONE", "EMAIL", "URL", "IP", "ID"}
    assert report.labels["PERSON"] > 1000


def test_whole_json_lines_stops_at_a_torn_or_broken_line(tmp_path):
    """What a killed appender leaves: the whole lines before the first cut or unparsable one, and
    their byte length, so translate and redact's journal resume from exactly there."""
    from deid_factory.readers.jsonl import whole_json_lines

    path = tmp_path / "out.jsonl"
    path.write_bytes(b'{"id": "a"}\n{"id": "b"}\n{"id": "c"')
    assert whole_json_lines(path) == ([{"id": "a"}, {"id": "b"}], len(b'{"id": "a"}\n{"id": "b"}\n'))
    path.write_bytes(b'{"id": "a"}\nnot json\n{"id": "c"}\n')
    assert whole_json_lines(path) == ([{"id": "a"}], len(b'{"id": "a"}\n'))
    path.write_bytes(b"")
    assert whole_json_lines(path) == ([], 0)


def test_json_lines_rules_bom_blank_torn_and_bad_lines(tmp_path):
    """The one JSONL splitter: a BOM before the first line dropped, blank lines marked, a line not
    UTF-8 or not JSON named by its number (never its content), a last line without newline marked."""
    from deid_factory.records import NOT_JSON, NOT_UTF8, json_lines

    path = tmp_path / "in.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"id": "a"}\r\n  \n\xff\n{"id": \n{"t": "x\xe2\x80\xa8y"}\n{"id": "c"}')
    lines = list(json_lines(path))
    assert [(x.lineno, x.value, x.problem, x.blank, x.complete) for x in lines] == [
        (1, {"id": "a"}, None, False, True), (2, None, None, True, True), (3, None, NOT_UTF8, False, True),
        (4, None, NOT_JSON, False, True), (5, {"t": "x\u2028y"}, None, False, True), (6, {"id": "c"}, None, False, False)]
    assert sum(x.size for x in lines) == path.stat().st_size and lines[3].where == f"{path}:4"


# ----------------------------------------------------------------------------- inline markup
INLINE = FIXTURES / "inline" / "notas.txt"


def _inline(tmp_path: Path, text: str, name: str = "notes.txt") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8", newline="")
    return path


def test_inline_fixture_gives_exact_offsets_in_the_text_without_markup():
    """Each span's offsets cut its surface text out of the de-bracketed text; bracket pairs that are
    not markup ("[sic]" inside a span, "[1]", a link, "(n=3)") stay text; touching spans stay two."""
    report = ReadReport()
    records = list(read_corpus(INLINE, "inline", lang="es", report=report))
    assert [r.id for r in records] == ["notas-01", "notas-02", "notas-03"]
    assert [r.meta["document"] for r in records] == [1, 2, 3]
    got = [[(r.text[s.start:s.end], s.label) for s in r.spans] for r in records]
    assert got[0] == [("Clínica [sic] Santa Úrsula", "ORGANIZATION"), ("Íñigo Larrañaga Goñi", "PERSON"),
                      ("58 años", "AGE"), ("lunes 7/3/2022", "DATE"), ("943 11 22 33", "PHONE"),
                      ("600 987 654", "PHONE"), ("JuanRamón", "PERSON"), ("Etxeberria", "PERSON")]
    assert got[1] == [("Maite Urrutia", "PERSON"), ("neumóloga", "PROFESSION"), ("Hospital de Basurto", "ORGANIZATION"),
                      ("c/ Autonomía 12, 48012", "ADDRESS"), ("Bilbao", "LOCATION")]
    assert got[2] == [("amaia", "PERSON"), ("amaia.g@correo.test", "EMAIL")]
    first = records[0].text
    assert first.startswith("Clínica [sic] Santa Úrsula · Unidad")  # the blank line before it is not text
    for kept in ("guía [1] y el protocolo [v2.3].", "(n=3)", "[anexo](figura 2)", "[la web](https://ejemplo.org)",
                 "Tel.: 943 11 22 33/600 987 654 · Contacto: JuanRamónEtxeberria"):
        assert kept in first
    assert records[1].text.endswith("Hb 13,2 g/dl [12-16]; PCR < 5 mg/l.")  # blank lines after it dropped too
    assert not any(")(" in r.text or "](" in r.text.replace("](figura", "").replace("](https", "") for r in records)
    assert report.spans_kept == 15 and report.trimmed == 0
    for r in records:
        validate_record(r)


def _marked(text: str, spans: list[tuple[int, int, str]]) -> str:
    """The inline markup of a text and its (non-overlapping, sorted) spans."""
    out, at = [], 0
    for start, end, label in spans:
        out += [text[at:start], "[", text[start:end], f"]({label})"]
        at = end
    return "".join(out + [text[at:]])


def test_inline_markup_round_trips_offsets_on_generated_notes():
    """Property: markup written from any text (brackets, parentheses and capital words in it) and
    any non-overlapping spans reads back to the same text and the same offsets."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from conftest import hypothesis_examples
    from deid_factory.labels import CANONICAL_LABELS
    from deid_factory.readers.inline import parse_inline

    # text pieces that are not markup on their own: balanced bracket pairs, "(...)" after them that
    # holds no label alone ("[sic](id x)", "[sic](Date"), words in capitals outside brackets
    piece = st.sampled_from(["a", "é", " ", "\n", "(n=3)", "[sic]", "[1](2)", "PERSON", "(id x)", "(Date", "x)", "Ñ", "[a](b c)", "·"])

    @settings(max_examples=hypothesis_examples(200), deadline=None)
    @given(st.lists(piece, min_size=1, max_size=30), st.data())
    def check(pieces, data):
        text = "".join(pieces)
        # span boundaries on piece boundaries, so a span never cuts a "[sic]" pair in half
        bounds = sorted(set(data.draw(st.lists(st.integers(0, len(pieces)), max_size=8))))
        cuts = [sum(len(p) for p in pieces[:b]) for b in bounds]
        spans = [(a, b, data.draw(st.sampled_from(sorted(CANONICAL_LABELS)))) for a, b in zip(cuts[::2], cuts[1::2]) if b > a]
        plain, got = parse_inline(_marked(text, spans))
        assert plain == text and got == spans

    check()


def test_inline_nested_markup_gives_both_spans_and_the_checks_reject_the_overlap(tmp_path):
    from deid_factory.readers.inline import parse_inline

    assert parse_inline("Dr. [[Ana](PERSON) Gil](PERSON) vino") == ("Dr. Ana Gil vino", [(4, 7, "PERSON"), (4, 11, "PERSON")])
    path = _inline(tmp_path, "nota uno sin nada\n=====\nDr. [[Ana](PERSON) Gil](PERSON) vino\n")
    with pytest.raises(RecordError, match=r"notes\.txt: document 2 \(line 3\): record 'notes-02': spans \[4,7\) and \[4,11\) PERSON overlap"):
        list(read_corpus(path, "inline", lang="es"))


@pytest.mark.parametrize("doc, problem, line", [
    ("Paciente [Rosa Pons](NAME) ingresa.", r"unknown label 'NAME'", 3),
    ("Paciente [Rosa Pons](Person) ingresa.", r"label 'Person' must be written in capitals \(PERSON\)", 3),
    ("Paciente\n[Rosa Pons(PERSON) ingresa.", r"'\[' is never closed in this document", 4),
    ("Paciente Rosa Pons](PERSON) ingresa.", r"'\]\(PERSON\)' closes a span that no '\[' opened", 3),
    ("Paciente [Rosa Pons](PERSON ingresa.", r"label PERSON has no closing '\)'", 3),
    ("Paciente [](PERSON) ingresa.", r"empty PERSON span", 3),
])
def test_inline_malformed_markup_names_file_document_and_line_never_text(tmp_path, doc, problem, line):
    """Each malformed document is one error naming file, document number and line, without the
    note's words; with on_error="skip" the documents after it are still read."""
    path = _inline(tmp_path, f"Primera nota, [12/01/2020](DATE).\n=====\n{doc}\n=====\nTercera, [Lugo](LOCATION).\n")
    with pytest.raises(RecordError) as err:
        list(read_corpus(path, "inline", lang="es"))
    message = str(err.value)
    assert f"{path}: document 2, line {line}: " in message
    assert __import__("re").search(problem, message), message
    assert "Rosa" not in message and "Pons" not in message and "ingresa" not in message
    report = ReadReport()
    records = list(read_corpus(path, "inline", lang="es", on_error="skip", report=report))
    assert [r.id for r in records] == ["notes-01", "notes-03"]
    assert [s["id"] for s in report.skipped] == ["notes-02"] and "Rosa" not in report.skipped[0]["reason"]


def test_inline_documents_separators_and_newlines(tmp_path):
    """A separator is a line holding only '====='; a file may start or end with one; an empty
    document between two is an error; CRLF files count one character per line break; a BOM is dropped."""
    path = _inline(tmp_path, "\ufeff=====\r\nUno: [Ana](PERSON)\r\nsigue\r\n===== \r\nDos [Vigo](LOCATION)\r\n=====\r\n")
    records = list(read_corpus(path, "inline", lang="es"))
    assert [(r.text, [(s.start, s.end) for s in r.spans]) for r in records] == [
        ("Uno: Ana\nsigue", [(5, 8)]), ("Dos Vigo", [(4, 8)])]
    path = _inline(tmp_path, "Uno [Ana](PERSON)\n=====\n\n=====\nTres\n", "empty.txt")
    with pytest.raises(RecordError, match=r"empty\.txt: document 2 \(line 3\): empty document"):
        list(read_corpus(path, "inline", lang="es"))
    # "=====" inside a line, or "======", is text
    (rec,) = read_corpus(_inline(tmp_path, "a ===== b\n======\n[Ana](PERSON)\n", "one.txt"), "inline", lang="es")
    assert rec.text == "a ===== b\n======\nAna"


def test_inline_labels_are_canonical_a_label_map_does_not_apply_and_the_format_is_guessed(tmp_path):
    from deid_factory.readers import guess_format

    (rec,) = read_corpus(_inline(tmp_path, "Edad: [40 años](AGE)\n"), "inline", label_map="meddocan", lang="es")
    assert [(s.label, s.attrs) for s in rec.spans] == [("AGE", {})]  # no source_label: nothing was mapped
    assert guess_format(INLINE) == "inline" and guess_format(INLINE.parent) == "inline"
    assert guess_format(FIXTURES / "brat" / "nota-001.txt") == "brat"  # a .ann beside it
    plain = _inline(tmp_path, "una nota [sin] marcas\n", "plain.txt")
    assert guess_format(plain) == "brat"  # no markup: brat, which then says the .ann is missing
