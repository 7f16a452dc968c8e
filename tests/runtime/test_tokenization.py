"""PHI token boundaries: the runtime tokenizer splits where the training DocBins have entity edges."""

from __future__ import annotations

import pytest
import spacy

from deid_runtime.tokenization import customize_tokenizer


@pytest.mark.parametrize("lang", ["es", "fr", "en", "de"])
def test_labels_glued_to_values_and_final_periods_are_split(lang, tmp_path):
    nlp = customize_tokenizer(spacy.blank(lang))
    tokens = [t.text for t in nlp("NHC:0450932 y DNI 12345678Z. Tel:612345678, a las 12:30 con el Dr. Ruiz.")]
    assert tokens[:3] == ["NHC", ":", "0450932"]
    assert "12345678Z" in tokens and "612345678" in tokens
    assert "12:30" in tokens, "times stay one token"
    assert "Dr." in tokens, "abbreviations stay whole"
    nlp.to_disk(tmp_path / "p")
    reloaded = spacy.load(tmp_path / "p")  # the rules travel with the saved tokenizer
    assert [t.text for t in reloaded("NHC:0450932.")] == ["NHC", ":", "0450932", "."]


def test_customize_is_idempotent():
    nlp = customize_tokenizer(customize_tokenizer(spacy.blank("es")))
    assert [t.text for t in nlp("NHC:12")] == ["NHC", ":", "12"]


@pytest.mark.parametrize("lang", ["es", "fr", "en", "de"])
def test_door_letters_initials_and_hyphenated_codes_are_split(lang):
    nlp = customize_tokenizer(spacy.blank(lang))
    assert [t.text for t in nlp("Calle Rivera 23, 1 C.")][-2:] == ["C", "."]
    assert [t.text for t in nlp("CIPA: nhc-272226.")][2:5] == ["nhc", "-", "272226"]
    assert [t.text for t in nlp("A. Ruiz")] == ["A", ".", "Ruiz"]
    assert "Dr." in [t.text for t in nlp("el Dr. Ruiz")]


def test_training_config_tokenizes_like_the_runtime():
    """The rendered training config names deid.Tokenizer.v1: the documents a model predicts on while
    it trains are cut like the gold DocBins (splits.py) and like the assembled pipeline."""
    from spacy.util import load_model_from_config
    from thinc.api import Config

    from deid_factory.render import render_config

    for ner_model in ("parser", "tagger"):
        config = Config().from_str(render_config("es", ner_model=ner_model))
        assert config["nlp"]["tokenizer"] == {"@tokenizers": "deid.Tokenizer.v1"}
        nlp = load_model_from_config(config, auto_fill=True)
        text = "Edad:62 años. NASS:16 911364589 54. Domicilio: C/ Ontiveros 19, 4 D."
        assert [t.text for t in nlp.make_doc(text)] == [t.text for t in customize_tokenizer(spacy.blank("es"))(text)]


@pytest.mark.parametrize("lang", ["es", "fr", "it", "pt", "nl", "en", "de"])
def test_address_ends_ordinals_glued_labels_and_commas_are_split(lang):
    """Boundaries that cut gold spans of the synthetic corpus mid-token (169 of 23,714 spans before
    these rules, 16 after): "s/n." ends an address, "8º." a floor, "Fdo.:NAME" and "C.P.:09101"
    glue an abbreviated label, "Somoza,9" glues two values. A decimal stays whole."""
    nlp = customize_tokenizer(spacy.blank(lang))
    text = "Avda. del Puerto s/n. Piso 8º. Fdo.:LOURDES Gil. C.P.:09101 Somoza,9 y 2003,en. Tel.:+34 600 V/6 km 9,1."
    doc = nlp(text)
    for anchor, phi in (("Avda", "Avda. del Puerto s/n"), ("Piso", "Piso 8º"), ("LOURDES", "LOURDES Gil"), ("09101", "09101"),
                        ("Somoza,9", "Somoza"), ("Somoza,9", "9"), ("2003,", "2003"), ("+34", "+34 600"), ("V/6", "6")):
        start = text.index(anchor) + (anchor.index(phi) if phi in anchor else 0)
        assert doc.char_span(start, start + len(phi), alignment_mode="strict") is not None, (lang, phi)
    assert "9,1" in [t.text for t in doc]


def test_a_model_of_an_older_config_is_given_the_registered_tokenizer(tmp_path):
    """Assembly takes the tokenizer from the model's config (deid.Tokenizer.v1); a model saved with
    spaCy's plain tokenizer (a config older than it) is given it, config included, once."""
    from deid_runtime.tokenization import TOKENIZER_NAME, blank, upgrade_tokenizer

    spacy.blank("es").to_disk(tmp_path / "old")
    upgrade_tokenizer(spacy.load(tmp_path / "old")).to_disk(tmp_path / "upgraded")
    reloaded = spacy.load(tmp_path / "upgraded")
    assert reloaded.config["nlp"]["tokenizer"] == {"@tokenizers": TOKENIZER_NAME}
    assert [t.text for t in reloaded("NHC:0450932.")] == ["NHC", ":", "0450932", "."]
    current = blank("es")
    assert upgrade_tokenizer(current).tokenizer is current.tokenizer  # already named: left as it is
