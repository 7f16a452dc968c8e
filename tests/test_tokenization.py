"""PHI token boundaries: the runtime tokenizer splits where the training DocBins have entity edges."""

from __future__ import annotations

import pytest
import spacy

from deid_factory.runtime.tokenization import customize_tokenizer


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
