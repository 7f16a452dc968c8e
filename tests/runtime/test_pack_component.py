"""The deid_regex_pack spaCy component: alone, next to existing entities, and saved/loaded with a pipeline."""

from __future__ import annotations

import spacy
from spacy.tokens import Span

from conftest import CHECKOUT  # tests/ is on sys.path (pyproject's pythonpath)

ES_PACK = str(CHECKOUT / "regex_packs" / "es")
TEXT = ("Paciente con NHC: 1234567 y DNI 12345678Z, ingresa el 12 de marzo de 2019. "
        "Tfno: 912 345 678, correo ana.ruiz@salud.es. Leucocitos 12000 Neutrófilos 70 %.")


def _nlp():
    nlp = spacy.blank("es")
    nlp.add_pipe("deid_regex_pack", config={"pack_dir": ES_PACK})
    return nlp


def test_component_writes_canonical_entities():
    doc = _nlp()(TEXT)
    found = [(e.text, e.label_) for e in doc.ents]
    assert ("1234567", "ID") in found
    assert ("12345678Z", "ID") in found
    assert ("12 de marzo de 2019", "DATE") in found
    assert ("912 345 678", "PHONE") in found
    assert ("ana.ruiz@salud.es", "EMAIL") in found
    assert not any(text == "12000" for text, _ in found), "a leukocyte count is not a postal code"
    kinds = {e.text: e._.deid_kind for e in doc.spans["deid_regex"]}
    assert kinds["12345678Z"] == "dni" and kinds["1234567"] == "nhc"
    assert all(s._.deid_source == "regex" for s in doc.spans["deid_regex"])


def test_component_keeps_entities_already_there():
    nlp = spacy.blank("es")

    @spacy.Language.component("fake_ner_person_over_date")
    def fake_ner(doc):
        # an upstream NER claims the tokens of the date as PERSON: the pack must not overwrite it
        start = doc.text.index("12 de marzo")
        doc.ents = [doc.char_span(start, start + len("12 de marzo"), label="PERSON")]
        return doc

    nlp.add_pipe("fake_ner_person_over_date")
    nlp.add_pipe("deid_regex_pack", config={"pack_dir": ES_PACK})
    doc = nlp(TEXT)
    labels = {e.text: e.label_ for e in doc.ents}
    assert labels["12 de marzo"] == "PERSON"
    assert "12 de marzo de 2019" not in labels
    assert labels["12345678Z"] == "ID"
    # the pack's own view is still complete in its span group
    assert "12 de marzo de 2019" in {s.text for s in doc.spans["deid_regex"]}


def test_write_ents_false_leaves_doc_ents_alone():
    nlp = spacy.blank("es")
    nlp.add_pipe("deid_regex_pack", config={"pack_dir": ES_PACK, "write_ents": False})
    doc = nlp(TEXT)
    assert list(doc.ents) == []
    assert len(doc.spans["deid_regex"]) >= 5


def test_pack_travels_with_the_saved_pipeline(tmp_path):
    _nlp().to_disk(tmp_path / "pipe")
    assert (tmp_path / "pipe" / "deid_regex_pack" / "pack.yml").exists()
    assert (tmp_path / "pipe" / "deid_regex_pack" / "context.yml").exists()
    reloaded = spacy.load(tmp_path / "pipe")
    doc = reloaded(TEXT)
    assert ("12345678Z", "ID") in [(e.text, e.label_) for e in doc.ents]
    assert isinstance(doc.ents[0], Span)


def test_unaligned_match_expands_to_whole_tokens():
    # "NHC:1234567" without a space may be one token: the span covers the token rather than leak digits
    doc = _nlp()("Ingreso NHC:1234567 ayer")
    assert any("1234567" in e.text and e.label_ == "ID" for e in doc.ents)
