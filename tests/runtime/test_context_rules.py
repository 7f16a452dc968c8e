"""The context rules of every locale (regex_packs/<lc>/rules.yml, deid_runtime/context_rules.py).

Each rule's cases say: for this input, the rules report exactly these matches of the rule's label
(negatives: none). The notes of TODAY_LEAKS are one per rule class, each leaking through a pack
without rules (and a merger with no NER to catch them): the same pipeline with the rules redacts them.
Run one locale alone with `pytest tests/runtime/test_context_rules.py -k fr`.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import spacy
from typer.testing import CliRunner

from conftest import CHECKOUT, regex_pack  # tests/ is on sys.path (pyproject's pythonpath)
from deid_factory.cli import app
from deid_factory.packs import run_rule_cases, rule_problems
from deid_factory.rule_words import rule_word_drift
from deid_runtime import merger, pack_component  # noqa: F401  (the factories)
from deid_runtime.context_rules import RULES_FILE, scanned_view

PACKS_DIR = CHECKOUT / "regex_packs"
LOCALES = sorted(p.name for p in PACKS_DIR.iterdir() if (p / RULES_FILE).exists())


def _cases():
    for locale in LOCALES:
        for result in run_rule_cases(regex_pack(locale)):
            kind = "neg" if result.negative else "pos"
            yield pytest.param(locale, result.pattern, result.index, id=f"{locale}:{result.pattern}:{result.index}:{kind}")


def test_every_locale_has_rules():
    assert {"es", "fr", "en", "de", "it", "pt", "nl"} <= set(LOCALES), LOCALES


@pytest.mark.parametrize("locale,rule,index", list(_cases()))
def test_rule_case(locale: str, rule: str, index: int):
    result = next(r for r in run_rule_cases(regex_pack(locale)) if r.pattern == rule and r.index == index)
    assert result.passed, result.describe()


@pytest.mark.parametrize("locale", LOCALES)
def test_every_rule_has_positive_and_negative_cases(locale: str):
    assert rule_problems(regex_pack(locale)) == []


@pytest.mark.parametrize("locale", LOCALES)
def test_rule_words_equal_what_the_libraries_give(locale: str):
    """number_words.yml (num2words), given_names.txt and surnames.txt (Faker + the locale's lists) are
    generated: the committed files cannot drift from the libraries (`factory rule-words <lc>`)."""
    assert rule_word_drift(locale) == []


# One note per rule class, in its language: (locale, text, the PHI that leaks without the rules).
TODAY_LEAKS = [
    ("es", "El Dr. Ibarra indica reposo relativo.", "Ibarra"),  # title + capitalised name
    ("es", "se avisa a la dra. beltrán por fiebre", "beltrán"),  # title + lower-case name
    ("fr", "appel de Mme leroux à 22h", "leroux"),
    ("es", "vive con su hija Pilar en el pueblo", "Pilar"),  # kinship
    ("en", "lives with his wife Jane", "Jane"),
    ("es", "Nombre: Lucía.\nEdad: 4 años", "Lucía"),  # header field
    ("de", "Name: Lindner\nVorname: Jürgen", "Jürgen"),
    ("fr", "Équipe : C. Dupont D. MARTIN P.E. Leroy", "P.E. Leroy"),  # staff list
    ("fr", "né le trois mars mille neuf cent quatre-vingt-deux", "trois mars mille neuf cent quatre-vingt-deux"),
    ("es", "el tres de marzo de mil novecientos ochenta y dos", "tres de marzo de mil novecientos ochenta y dos"),
    ("en", "the third of March nineteen eighty-two", "third of March nineteen eighty-two"),
    ("de", "am dritten März neunzehnhundertzweiundachtzig", "dritten März neunzehnhundertzweiundachtzig"),
    ("es", "Revisión el 15/4 en consulta", "15/4"),  # day/month after a date word
    ("es", "colecistectomía en el año 1993", "1993"),  # a year after a date word
    ("es", "Tfno: 6 1 2  3 4 5  6 7 8", "6 1 2  3 4 5  6 7 8"),  # scanned: spaced digits
    ("fr", "Tél. : O4 91 38 7O 2O", "O4 91 38 7O 2O"),  # scanned: O for 0
    ("es", "correo: ana.gil @ salud . es", "ana.gil @ salud . es"),  # scanned: spaced e-mail
]


def _pipeline(locale: str, pack_dir: Path):
    nlp = spacy.blank(locale)
    nlp.add_pipe("deid_regex_pack", config={"pack_dir": str(pack_dir), "write_ents": False})
    nlp.add_pipe("deid_merger")
    return nlp


def _redacted(doc, phi: str) -> bool:
    start = doc.text.index(phi)
    covered = set()
    for e in doc.ents:
        covered |= set(range(e.start_char, e.end_char))
    return all(i in covered for i in range(start, start + len(phi)) if not doc.text[i].isspace())


@pytest.mark.parametrize("locale,text,phi", TODAY_LEAKS, ids=[f"{lc}:{phi}" for lc, _, phi in TODAY_LEAKS])
def test_a_note_that_leaks_without_the_rules_is_redacted_with_them(locale, text, phi, tmp_path):
    without = tmp_path / "without"
    shutil.copytree(PACKS_DIR / locale, without)
    (without / RULES_FILE).unlink()
    shutil.copy(CHECKOUT / "languages" / locale / "surrogate_data" / "titles.yml", without / "titles.yml")
    assert not _redacted(_pipeline(locale, without)(text), phi), "the note no longer leaks without the rules"
    doc = _pipeline(locale, PACKS_DIR / locale)(text)
    assert _redacted(doc, phi)
    assert any(e._.deid_source and "rule" in e._.deid_source for e in doc.ents)


def test_the_kinship_word_stays_outside_and_titles_too():
    doc = _pipeline("es", PACKS_DIR / "es")("llama su hijo carlos; la Dra. Ruiz lo ve")
    assert [(e.text, e.label_) for e in doc.ents] == [("carlos", "PERSON"), ("Ruiz", "PERSON")]


def test_scanned_view_keeps_the_offsets_of_the_text():
    text = "DNI: 1 2 3 4 5 6 7 8 Z\nF. nac.: O3/O4/1950"
    view = scanned_view(text)
    assert view is not None and "12345678Z" in view.text and "03/04/1950" in view.text
    start = view.text.index("12345678Z")
    assert text[slice(*view.to_text(start, start + 9))] == "1 2 3 4 5 6 7 8 Z"
    matches = {m.text: m for m in regex_pack("es").find_rules(text)}
    assert matches["1 2 3 4 5 6 7 8 Z"].validated  # the DNI's check letter, read without the spaces
    assert "O3/O4/1950" in matches
    for m in matches.values():
        assert text[m.start:m.end] == m.text


def test_rule_ranks_as_the_ner_for_names_and_wins_a_tie_by_its_score():
    """A rule PERSON over the same word as an NER LOCATION: both rank 2, the rule's score decides."""
    nlp = _pipeline("es", PACKS_DIR / "es")
    doc = nlp.make_doc("vive con su hija Pilar en casa")
    doc.ents = [doc.char_span(17, 22, label="LOCATION")]
    for _, proc in nlp.pipeline:
        doc = proc(doc)
    assert [(e.text, e.label_, e._.deid_source) for e in doc.ents] == [("Pilar", "PERSON", "rule")]


def test_a_saved_pipeline_carries_its_rules(tmp_path):
    nlp = _pipeline("fr", PACKS_DIR / "fr")
    nlp.to_disk(tmp_path / "pipe")
    saved = tmp_path / "pipe" / "deid_regex_pack"
    for name in (RULES_FILE, "number_words.yml", "given_names.txt", "surnames.txt"):
        assert (saved / name).exists(), name
    loaded = spacy.load(tmp_path / "pipe")
    assert [e.text for e in loaded("sa fille Marie").ents] == ["Marie"]


def test_pack_test_runs_the_rule_cases(tmp_path):
    pack = tmp_path / "es"
    shutil.copytree(PACKS_DIR / "es", pack)
    shutil.copy(CHECKOUT / "languages" / "es" / "surrogate_data" / "titles.yml", pack / "titles.yml")
    runner = CliRunner()
    assert runner.invoke(app, ["pack-test", "es", "--packs-dir", str(tmp_path)]).exit_code == 0
    rules = (pack / RULES_FILE).read_text(encoding="utf-8")
    (pack / RULES_FILE).write_text(rules.replace("expect: [Ibarra]", "expect: [Ibarr]"), encoding="utf-8")
    result = runner.invoke(app, ["pack-test", "es", "--packs-dir", str(tmp_path)])
    assert result.exit_code == 1 and "rule:title_name" in result.output
