"""Tokenizer rules that put token boundaries where PHI starts or ends in clinical notes.

Notes glue labels to values ("NHC:0450932", "Tel:612345678") and end sentences right after an
identifier ("DNI 12345678Z."). spaCy's default rules keep such strings as one token, so an entity
cannot start or end inside them: the training data would need cut tokens that the runtime
tokenizer never produces. The same rules are applied when the training DocBins are made and when
deid_<lang> is assembled; they are saved with the pipeline's tokenizer, so the wheel keeps them.
"""

from __future__ import annotations

from spacy.language import Language
from spacy.util import compile_infix_regex, compile_suffix_regex

# a letter-ended label glued to its value by a colon: "NHC:0450932" -> "NHC", ":", "0450932"
PHI_INFIXES = (r"(?<=[^\W\d_]):(?=\w)",)
# a period right after a number or a number+letter code: "2019." / "12345678Z." lose the period
PHI_SUFFIXES = (r"(?<=\d)\.", r"(?<=\d[A-Za-z])\.")


def customize_tokenizer(nlp: Language) -> Language:
    """Add the PHI boundary rules to `nlp`'s tokenizer (idempotent)."""
    tokenizer = nlp.tokenizer
    infixes = list(nlp.Defaults.infixes or [])
    suffixes = list(nlp.Defaults.suffixes or [])
    tokenizer.infix_finditer = compile_infix_regex(infixes + [p for p in PHI_INFIXES if p not in infixes]).finditer
    tokenizer.suffix_search = compile_suffix_regex(suffixes + [p for p in PHI_SUFFIXES if p not in suffixes]).search
    return nlp
