"""The English and German rule classes of the multi_tune error round, end to end through the regex
pack and the merger (no NER needed): each note below leaks a piece of PHI without its rule and is
redacted whole with it; a NER span that holds a title or a clinical fact loses it in the merger.
The notes are written for this test (no text of any corpus)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import spacy
import yaml
from spacy.tokens import Span

from deid_factory import PROJECT_ROOT
from deid_factory.locale import Locale
from deid_runtime import merger, pack_component  # noqa: F401  (the factories)
from deid_runtime.context_rules import RULES_FILE

PACKS_DIR = PROJECT_ROOT / "regex_packs"

# (locale, rule, note, the PHI, its label)
LEAKS = [
    ("en", "coordinated_hospital", "She was referred to Kingsmere and Aldbury University Hospital in May.",
     "Kingsmere and Aldbury University Hospital", "ORGANIZATION"),
    ("en", "saints_pair", "Follow-up is at Harlow's and St Bede's next month.", "Harlow's and St Bede's", "ORGANIZATION"),
    ("en", "hospital_header_line", "Page 2 of 3\nWEST  KESTON  GENERAL  HOSPITAL\nTel : see below",
     "WEST  KESTON  GENERAL  HOSPITAL", "ORGANIZATION"),
    ("de", "profession_after_work", "Der Patient arbeitet als Zimmermann auf dem Bau.", "Zimmermann", "PROFESSION"),
    ("de", "profession_after_patient", "Wir sehen den 61-jährigen Patient, Schornsteinfeger aus Kernau, heute erneut.",
     "Schornsteinfeger", "PROFESSION"),
    ("de", "profession_after_birth_date", "Patientin: U. Sommer, geb. 11.09.1966, Floristin.\nAnamnese: Sturz",
     "Floristin", "PROFESSION"),
    ("de", "public_body", "Arbeitgeber: Kreisverwaltung Wendorf, Sachbearbeiter", "Kreisverwaltung Wendorf",
     "ORGANIZATION"),
    ("de", "town_with_qualifier", "Die Tochter lebt in Brandenburg (Havel) und kommt zur Visite.", "Brandenburg (Havel)",
     "LOCATION"),
    ("de", "place_before_letter_date", "Mit freundlichen Grüßen\n\nKernau, 14.03.2024\nDr. med. A. Voss", "Kernau",
     "LOCATION"),
]


def _pipeline(locale: str, pack_dir: Path):
    nlp = spacy.blank(locale)
    nlp.add_pipe("deid_regex_pack", config={"pack_dir": str(pack_dir), "write_ents": False})
    loc = Locale.load(locale)
    nlp.add_pipe("deid_merger", config={"title_letters": loc.title_letters, "titles": loc.titles().forms()})
    return nlp


def _covered(doc, phi: str, label: str) -> bool:
    start = doc.text.index(phi)
    covered = set()
    for e in doc.ents:
        if e.label_ == label:
            covered |= set(range(e.start_char, e.end_char))
    return all(i in covered for i in range(start, start + len(phi)) if not doc.text[i].isspace())


def _pack_without_rule(locale: str, rule: str, tmp_path: Path) -> Path:
    """The locale's pack with one context rule taken out (everything else as shipped)."""
    pack = tmp_path / locale
    shutil.copytree(PACKS_DIR / locale, pack)
    shutil.copytree(PROJECT_ROOT / "languages" / locale / "surrogate_data", tmp_path / "surrogate_data")
    rules_file = pack / RULES_FILE
    text = rules_file.read_text(encoding="utf-8")
    data = yaml.safe_load(text)
    data["rules"] = [r for r in data["rules"] if r["name"] != rule]
    assert len(data["rules"]) < len(yaml.safe_load(text)["rules"]), f"no rule {rule}"
    # the titles file is named relative to the pack (../../languages/<lc>/...): point it at the copy
    data["titles"] = str((tmp_path / "surrogate_data" / "titles.yml").resolve())
    rules_file.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return pack


@pytest.mark.parametrize("locale,rule,text,phi,label", LEAKS, ids=[f"{lc}:{rule}" for lc, rule, *_ in LEAKS])
def test_the_note_leaks_without_its_rule_and_is_redacted_with_it(locale, rule, text, phi, label, tmp_path):
    without = _pipeline(locale, _pack_without_rule(locale, rule, tmp_path))(text)
    assert not _covered(without, phi, label), "the note no longer needs the rule"
    doc = _pipeline(locale, PACKS_DIR / locale)(text)
    assert _covered(doc, phi, label)
    assert any(e._.deid_source and "rule" in e._.deid_source and e._.deid_kind == rule for e in doc.ents)


def _with_ner_span(nlp, text: str, piece: str, label: str):
    """Run the pack and the merger over `text` as if the NER had found `piece` as `label`."""
    doc = nlp.make_doc(text)
    start = text.index(piece)
    span = doc.char_span(start, start + len(piece), label=label)
    doc.ents = [Span(doc, span.start, span.end, label=label)]
    for _, proc in nlp.pipeline:
        doc = proc(doc)
    return doc


def test_a_colleague_title_stays_outside_the_name():
    nlp = _pipeline("de", PACKS_DIR / "de")
    doc = _with_ner_span(nlp, "Liebe Frau Kollegin Marquardt,\nanbei der Befund.", "Kollegin Marquardt", "PERSON")
    assert [(e.text, e.label_) for e in doc.ents] == [("Marquardt", "PERSON")]


@pytest.mark.parametrize("text,piece,label", [
    ("Edoxaban is reduced when age > 75 or the clearance is low.", "75", "AGE"),
    ("triple inhaler 100/62.5/25 mcg, two puffs", "100/62.5/25", "DATE"),
])
def test_an_age_limit_and_a_three_part_strength_are_clinical_facts(text, piece, label):
    """A NER span over a dosing rule's age limit or an inhaler's strengths is not PHI: redaction
    must not change a clinical fact."""
    doc = _with_ner_span(_pipeline("en", PACKS_DIR / "en"), text, piece, label)
    assert [e.text for e in doc.ents] == []
