"""`factory errors`: kinds of error (missed, partial, wrong_label, false_positive) counted exactly,
context categories (position and shape) of specific errors, per-language category words, and the
PHI rule: no span text in stdout, stderr, logs, errors.json or errors.md unless --with-text (then in
errors.json only). A tiny entity_ruler pipeline on fictitious Spanish notes written here: no training."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest
import spacy
import srsly
from spacy.language import Language

from conftest import spans_of  # tests/ is on sys.path (pyproject's pythonpath)
from deid_factory.error_analysis import (KINDS, _Lines, analyse_errors, classify_errors, load_context_rules,
                                 position_category, shape_categories, write_error_report)

NOTE_A = (
    "INFORME CLÍNICO\n"
    "Nombre: Lucía Fernández Olmo\n"
    "NHC: 4471920\n"
    "Fecha de ingreso: 12/01/2021\n"
    "\n"
    "Paciente de 54 años remitida por el Dr. Tomás Aranda desde Villaverde del Río.\n"
    "Refiere que su vecina Remedios la acompaña; valorada por J. R. Gil en urgencias.\n"
    "Antecedentes:\n"
    "- Ingreso previo en Hospital San Telmo\n"
    "Control   15/02/2021   Glucosa   98 mg/dl\n"
    "Se descarta enfermedad de Parkinson.\n"
    "Plan: control en tres meses.\n"
    "Fdo.: Dra. Elvira Soto\n"
    "Servicio de Medicina Interna\n"
)
GOLD_A = [("Lucía Fernández Olmo", "PERSON"), ("4471920", "ID"), ("12/01/2021", "DATE"), ("Tomás Aranda", "PERSON"),
          ("Villaverde del Río", "LOCATION"), ("Remedios", "PERSON"), ("J. R. Gil", "PERSON"),
          ("Hospital San Telmo", "ORGANIZATION"), ("15/02/2021", "DATE"), ("Elvira Soto", "PERSON")]
NOTE_B = "Revisión en consulta sin incidencias. Acude con su esposo Bernardo.\nFirmado:\nRosa Quintanilla\n"
GOLD_B = [("Bernardo", "PERSON"), ("Rosa Quintanilla", "PERSON")]
# what the ruler predicts: 2 false positives, 1 partial (a shorter name), 1 wrong label, 3 correct
PATTERNS = [("ORGANIZATION", "INFORME CLÍNICO"), ("PERSON", "Lucía Fernández"), ("PHONE", "4471920"),
            ("DATE", "12/01/2021"), ("LOCATION", "Villaverde del Río"), ("PERSON", "Parkinson"),
            ("PERSON", "Bernardo")]
PHI = sorted({s for s, _ in GOLD_A + GOLD_B} | {p for _, p in PATTERNS}
             | {"Aranda", "Quintanilla", "Fernández", "Olmo", "Elvira"})


CORPUS = [("nota-a", NOTE_A, spans_of(NOTE_A, GOLD_A)), ("nota-b", NOTE_B, spans_of(NOTE_B, GOLD_B))]


@Language.component("test_errors_person_ner")
def _person_ner(doc):
    """doc.spans["deid_ner"]: the PERSON entities only (a stand-in for the NER's own view)."""
    doc.spans["deid_ner"] = [e for e in doc.ents if e.label_ == "PERSON"]
    return doc


def _ruler_nlp(with_ner_spans: bool = True):
    nlp = spacy.blank("es")
    nlp.add_pipe("entity_ruler").add_patterns([{"label": label, "pattern": p} for label, p in PATTERNS])
    if with_ner_spans:
        nlp.add_pipe("test_errors_person_ner")
    return nlp


@pytest.fixture(scope="module")
def errors_nlp():
    return _ruler_nlp()


@pytest.fixture()
def errors_corpus_file(tmp_path) -> Path:
    path = tmp_path / "notas.jsonl"
    srsly.write_jsonl(path, [{"id": rid, "lang": "es", "text": text, "meta": {},
                              "spans": [{"start": s, "end": e, "label": lab} for s, e, lab in gold]}
                             for rid, text, gold in CORPUS])
    return path


def _entry(report: dict, rid: str, text: str, needle: str, kind: str) -> dict:
    start = text.index(needle)
    (hit,) = [e for e in report["errors"] if e["id"] == rid and e["start"] == start and e["kind"] == kind]
    assert hit["end"] == start + len(needle)
    return hit


def _assert_no_phi(blob: str, where: str) -> None:
    for s in PHI:
        assert s not in blob, f"PHI {s!r} in {where}"
        assert json.dumps(s)[1:-1] not in blob, f"PHI {s!r} (\\u-escaped) in {where}"


# --------------------------------------------------------------------------- kinds and counts
def test_classify_errors_kinds_on_offsets():
    gold = [(0, 5, "PERSON"), (10, 15, "DATE"), (20, 25, "ID"), (30, 35, "PERSON")]
    pred = [(0, 5, "PERSON"), (10, 13, "DATE"), (20, 25, "PHONE"), (40, 44, "LOCATION"), (12, 16, "AGE")]
    kinds = [(k, span) for k, span, _ in classify_errors(gold, pred)]
    assert kinds == [("partial", (10, 15, "DATE")), ("wrong_label", (20, 25, "ID")), ("missed", (30, 35, "PERSON")),
                     ("false_positive", (40, 44, "LOCATION"))]
    # a prediction with the gold boundaries and label makes the gold span correct, whatever else overlaps it
    assert classify_errors([(0, 5, "PERSON")], [(0, 5, "PERSON"), (0, 5, "ID"), (2, 8, "DATE")]) == []


def test_counts_of_each_kind_for_each_system(errors_nlp):
    combined = analyse_errors(errors_nlp, CORPUS)
    assert combined["counts"]["by_kind"] == {"missed": 7, "partial": 1, "wrong_label": 1, "false_positive": 2}
    assert (combined["docs"], combined["gold"], combined["predicted"], combined["correct"]) == (2, 12, 7, 3)
    by_label = combined["counts"]["by_label"]
    assert by_label["PERSON"] == {"missed": 5, "partial": 1, "wrong_label": 0, "false_positive": 1}
    assert by_label["ORGANIZATION"] == {"missed": 1, "partial": 0, "wrong_label": 0, "false_positive": 1}
    assert by_label["ID"]["wrong_label"] == 1 and "PHONE" not in by_label  # wrong_label counts under the gold label
    assert combined["counts"]["confusions"] == [{"gold": "ID", "predicted": "PHONE", "n": 1}]
    assert len(combined["errors"]) == 11

    ner = analyse_errors(errors_nlp, CORPUS, system="ner")  # doc.spans["deid_ner"]: PERSON only
    assert ner["counts"]["by_kind"] == {"missed": 10, "partial": 1, "wrong_label": 0, "false_positive": 1}
    regex = analyse_errors(errors_nlp, CORPUS, system="regex")  # no deid_regex group: everything missed
    assert regex["counts"]["by_kind"] == {"missed": 12, "partial": 0, "wrong_label": 0, "false_positive": 0}
    with pytest.raises(ValueError, match="unknown system"):
        analyse_errors(errors_nlp, CORPUS, system="ents")


# --------------------------------------------------------------------------- categories
def test_categories_of_specific_errors(errors_nlp):
    report = analyse_errors(errors_nlp, CORPUS)
    partial = _entry(report, "nota-a", NOTE_A, "Lucía Fernández Olmo", "partial")
    assert partial["position"] == "header_field" and "capitalised_term" in partial["shape"]
    assert partial["predicted"] == [{"start": NOTE_A.index("Lucía"), "end": NOTE_A.index(" Olmo"), "label": "PERSON"}]
    wrong = _entry(report, "nota-a", NOTE_A, "4471920", "wrong_label")
    assert wrong["position"] == "header_field" and wrong["shape"] == ["digits"] and wrong["label"] == "ID"
    titled = _entry(report, "nota-a", NOTE_A, "Tomás Aranda", "missed")
    assert titled["position"] == "narrative" and "title_name" in titled["shape"]
    prose = _entry(report, "nota-a", NOTE_A, "Remedios", "missed")
    assert prose["position"] == "narrative" and prose["shape"] == ["capitalised_term"]
    assert prose["categories"] == ["narrative", "capitalised_term"]
    assert "initials" in _entry(report, "nota-a", NOTE_A, "J. R. Gil", "missed")["shape"]
    assert _entry(report, "nota-a", NOTE_A, "Hospital San Telmo", "missed")["position"] == "list"
    table = _entry(report, "nota-a", NOTE_A, "15/02/2021", "missed")
    assert table["position"] == "table" and table["shape"] == ["digits"]
    signed = _entry(report, "nota-a", NOTE_A, "Elvira Soto", "missed")  # in the last lines, after "Fdo.: Dra."
    assert signed["position"] == "signature" and "title_name" in signed["shape"]
    # a short note: not by its last lines, but because the previous line is the marker alone
    assert _entry(report, "nota-b", NOTE_B, "Rosa Quintanilla", "missed")["position"] == "signature"
    eponym = _entry(report, "nota-a", NOTE_A, "Parkinson", "false_positive")
    assert eponym["position"] == "narrative" and "eponym" in eponym["shape"] and eponym["label"] == "PERSON"
    caps = _entry(report, "nota-a", NOTE_A, "INFORME CLÍNICO", "false_positive")
    assert caps["shape"] == ["all_caps"] and caps["position"] == "narrative"
    by_position = report["counts"]["by_position"]
    assert by_position["signature"]["missed"] == 2 and by_position["header_field"] == {
        "missed": 0, "partial": 1, "wrong_label": 1, "false_positive": 0}
    assert {"kind": "missed", "label": "PERSON", "category": "signature", "n": 2} in report["counts"]["by_kind_label_category"]


@pytest.mark.parametrize("lang,text,needle,position,shape,present", [
    ("es", "Nombre: Ana Ruiz\nResto", "Ana Ruiz", "header_field", "capitalised_term", True),
    ("es", "Acude tras caída en casa: la trae su hija Marta.", "Marta", "narrative", "capitalised_term", True),
    ("es", "1. Visitado por la Sra. Ortega", "Ortega", "list", "title_name", True),
    ("es", "Nombre\tAna\tRuiz", "Ruiz", "table", "capitalised_term", True),
    ("es", "Dr. Pablo Mena\nEl resto", "Pablo Mena", "signature", "title_name", True),
    ("fr", "Vue par Mme Dupont ce matin.", "Dupont", "narrative", "title_name", True),
    ("es", "Vue par Mme Dupont ce matin.", "Dupont", "narrative", "title_name", False),  # Mme: a French title only
    ("en", "Seen by Dr. Brown today.", "Brown", "narrative", "title_name", True),
    ("fr", "Vu par M Pennec ce matin.", "Pennec", "narrative", "title_name", True),  # fr titles.yml: "M" too
    ("fr", "Revue par l'infirmière Durand.", "Durand", "narrative", "title_name", True),  # a nurse's title
    # titles are a locale's: a language the project has no folder of has none (no word list is "generic")
    ("xx", "Seen by Dr. Brown today.", "Brown", "narrative", "title_name", False),
    ("xx", "Vista por la Sra. Ortega hoy.", "Ortega", "narrative", "title_name", False),
    ("fr", "Pr Martin\nLe reste", "Martin", "signature", "title_name", True),  # fr signature_titles: professor
    ("en", "History of Parkinson's disease.", "Parkinson", "narrative", "eponym", True),
    ("fr", "Suspicion de maladie d'Alzheimer.", "Alzheimer", "narrative", "eponym", True),
    ("es", "MARTÍNEZ acude solo.", "MARTÍNEZ", "narrative", "all_caps", True),
    ("es", "acude con pareja", "pareja", "narrative", "other", True),
    ("es", "Saturación basal del 93% en reposo.", "93%", "narrative", "unit", True),
    ("es", "Recibe 7200 UI de heparina.", "7200", "narrative", "unit", True),
    ("es", "NHC 4471902 del paciente.", "4471902", "narrative", "unit", False),
    ("es", "Sigue con omeprazol desde enero.", "omeprazol", "narrative", "drug", True),
    ("es", "Se inicia Sintrom 4 mg al día.", "Sintrom", "narrative", "drug", True),    # a dose follows
    ("es", "Lo acompaña Sinforoso al alta.", "Sinforoso", "narrative", "drug", False),
    ("fr", "Sous atorvastatine depuis 2019.", "atorvastatine", "narrative", "drug", True),
])
def test_position_and_shape_rules(lang, text, needle, position, shape, present):
    rules = load_context_rules(lang)
    lines = _Lines(text)
    start = text.index(needle)
    assert position_category(lines, start, rules) == position
    assert (shape in shape_categories(lines, start, start + len(needle), rules)) is present


def test_category_words_are_data(tmp_path):
    path = tmp_path / "cats.yml"
    path.write_text("generic:\n  titles: [Capt.]\nrules:\n  digits_min_share: 0.9\n", encoding="utf-8")
    rules = load_context_rules("es", path)
    text = "Visto por el Capt. Nemo y el Dr. Lidenbrock; cama 12-B"
    lines = _Lines(text)
    assert "title_name" in shape_categories(lines, text.index("Nemo"), text.index(" y el"), rules)
    assert "title_name" in shape_categories(lines, text.index("Lidenbrock"), text.index(";"), rules)  # es titles.yml
    assert "digits" not in shape_categories(lines, text.index("12-B"), len(text), rules)  # 2/4 < 0.9
    path.write_text("generic:\n  titlez: [Dr.]\n", encoding="utf-8")
    with pytest.raises(Exception, match="cats.yml"):
        load_context_rules("es", path)
    path.write_text("languages:\n  es:\n    titles: [Capt.]\n", encoding="utf-8")  # a language's words: its folder
    with pytest.raises(Exception, match="languages/<lc>/errors.yml"):
        load_context_rules("es", path)


def test_a_language_s_words_are_in_its_locale_folder(tmp_path, monkeypatch):
    """A locale's error-analysis words are its errors.yml and its titles.yml (Locale), not a list in
    the factory: a new locale's words are picked up with no factory file edited."""
    import deid_factory
    from deid_factory.locale import Locale

    root = tmp_path / "proj"
    (root / "languages" / "xx" / "surrogate_data").mkdir(parents=True)
    (root / "languages" / "xx" / "surrogate_data" / "titles.yml").write_text(
        "courtesy: {m: [Sgr.], f: [Sgra.]}\nstaff: {m: [Dok.], f: [Dok.]}\n", encoding="utf-8")
    (root / "languages" / "xx" / "errors.yml").write_text(
        "signature_titles: [staff]\nsignature_markers: [Signat]\ndisease_words: [morbo]\n", encoding="utf-8")
    monkeypatch.setattr(deid_factory, "_root", root)
    rules = load_context_rules("xx")
    assert set(rules.titles) == {"Sgr.", "Sgra.", "Dok."} and set(rules.signature_markers) == {"Signat", "Dok."}
    text = "Vista da Sgra. Tobin\nDok. Arrow\nmorbo Kessel"
    lines = _Lines(text)
    assert "title_name" in shape_categories(lines, text.index("Tobin"), text.index("\nDok"), rules)
    assert position_category(lines, text.index("Arrow"), rules) == "signature"
    assert "eponym" in shape_categories(lines, text.index("Kessel"), len(text), rules)
    (root / "languages" / "xx" / "errors.yml").write_text("signature_titles: [nurse]\n", encoding="utf-8")
    with pytest.raises(Exception, match="signature_titles must list groups of .*titles.yml"):
        load_context_rules("xx")
    assert Locale.of("xx").titles_file.exists()


# --------------------------------------------------------------------------- PHI rule
def test_no_span_text_in_logs_output_or_report_files(errors_nlp, tmp_path, capsys, caplog):
    caplog.set_level(logging.DEBUG)
    report = analyse_errors(errors_nlp, CORPUS)
    paths = write_error_report({"pipeline": "ruler_es", "corpus": "notas.jsonl", **report}, tmp_path / "out")
    captured = capsys.readouterr()
    assert any("errors of combined" in r.getMessage() for r in caplog.records)  # it does log, counts only
    for where, blob in (("stdout", captured.out), ("stderr", captured.err), ("log", caplog.text),
                        ("errors.json", paths["json"].read_text(encoding="utf-8")),
                        ("errors.md", paths["md"].read_text(encoding="utf-8"))):
        _assert_no_phi(blob, where)
    assert all("text" not in e for e in json.loads(paths["json"].read_text(encoding="utf-8"))["errors"])
    md = paths["md"].read_text(encoding="utf-8")
    assert "| PERSON | 5 | 1 | 0 | 1 | 7 |" in md and "| signature | 2 | 0 | 0 | 0 | 2 |" in md

    with_text = analyse_errors(errors_nlp, CORPUS, with_text=True)
    paths = write_error_report({"pipeline": "ruler_es", "corpus": "notas.jsonl", **with_text}, tmp_path / "out2")
    saved = paths["json"].read_text(encoding="utf-8")
    assert '"text": "Remedios"' in saved and '"text": "Lucía Fernández"' in saved  # the partial's prediction too
    _assert_no_phi(paths["md"].read_text(encoding="utf-8"), "errors.md with text")


# --------------------------------------------------------------------------- command line
def _factory(*args, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "deid_factory", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=300)


@pytest.fixture()
def errors_pipeline_dir(tmp_path) -> Path:
    path = tmp_path / "ruler_es"
    _ruler_nlp(with_ner_spans=False).to_disk(path)  # only built-in components: loadable by a fresh process
    return path


def test_cli_writes_the_report_without_text_and_with_text_on_request(errors_pipeline_dir, errors_corpus_file, tmp_path):
    ret = _factory("errors", errors_pipeline_dir, errors_corpus_file, "--out", tmp_path / "out", cwd=tmp_path)
    assert ret.returncode == 0, ret.stderr[-2000:]
    assert "7 missed, 1 partial, 1 wrong_label, 2 false_positive" in ret.stdout
    _assert_no_phi(ret.stdout + ret.stderr, "CLI output")
    for name in ("errors.json", "errors.md"):
        _assert_no_phi((tmp_path / "out" / name).read_text(encoding="utf-8"), name)
    saved = json.loads((tmp_path / "out" / "errors.json").read_text(encoding="utf-8"))
    assert saved["counts"]["by_kind"] == dict(zip(KINDS, (7, 1, 1, 2))) and saved["with_text"] is False

    ret = _factory("errors", errors_pipeline_dir, errors_corpus_file, "--out", tmp_path / "text", "--with-text",
                   cwd=tmp_path)
    assert ret.returncode == 0, ret.stderr[-2000:]
    assert "contains PHI" in ret.stdout
    _assert_no_phi(ret.stdout + ret.stderr, "CLI output with --with-text")
    _assert_no_phi((tmp_path / "text" / "errors.md").read_text(encoding="utf-8"), "errors.md with --with-text")
    texts = {e["text"] for e in json.loads((tmp_path / "text" / "errors.json").read_text(encoding="utf-8"))["errors"]}
    assert {"Remedios", "Rosa Quintanilla", "Parkinson", "INFORME CLÍNICO"} <= texts


def test_cli_names_a_missing_corpus_in_one_line(errors_pipeline_dir, errors_corpus_file, tmp_path):
    ret = _factory("errors", errors_pipeline_dir, tmp_path / "no_such_corpus.jsonl", "--out", tmp_path / "out",
                   cwd=tmp_path)
    assert ret.returncode == 1
    printed = (ret.stdout + ret.stderr).strip()
    assert len(printed.splitlines()) == 1 and printed.startswith("error: ") and "no_such_corpus.jsonl" in printed
    assert "Traceback" not in printed and not (tmp_path / "out").exists()
    # the corpus is checked before the pipeline loads; a missing pipeline is one line too
    ret = _factory("errors", tmp_path / "no_such_pipeline", errors_corpus_file, "--out", tmp_path / "out", cwd=tmp_path)
    printed = (ret.stdout + ret.stderr).strip()
    assert ret.returncode == 1 and len(printed.splitlines()) == 1 and "no_such_pipeline" in printed, printed
