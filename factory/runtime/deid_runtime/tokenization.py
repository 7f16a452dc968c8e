"""Tokenizer rules that put token boundaries where PHI starts or ends in clinical notes.

Notes glue labels to values ("NHC:0450932", "Tel:612345678") and end sentences right after an
identifier ("DNI 12345678Z."). spaCy's default rules keep such strings as one token, so an entity
cannot start or end inside them: the training data would need cut tokens that the runtime
tokenizer never produces.

The rules are set in one place: the registered tokenizer `deid.Tokenizer.v1` (spaCy's tokenizer
plus these rules), named by `[nlp] tokenizer` in the training config. The trained model carries it
in its config and its saved tokenizer, so deid_<lang>, assembled from it, does too (and the wheel
keeps it); `blank(lang)` gives the training DocBins, self-training's notes and the router's
pack-only pipelines the same tokenizer through the same config. Nothing applies the rules by hand:
only `upgrade_tokenizer` does, for a model trained from a config older than the registered
tokenizer. Training must see them: with spaCy's plain tokenizer in the training config, every gold
entity inside "Edad:62" or "nhc-272226" was misaligned, left out of the loss, and never learned.
"""

from __future__ import annotations

import re
from typing import Callable

from spacy.language import Language
from spacy.util import compile_infix_regex, compile_suffix_regex, registry

TOKENIZER_NAME = "deid.Tokenizer.v1"
_PLAIN_TOKENIZER = "spacy.Tokenizer.v1"  # what it adds the rules to

PHI_INFIXES = (
    # a letter-ended label glued to its value by a colon: "NHC:0450932" -> "NHC", ":", "0450932";
    # also before a phone's "+" or "(": "Contacto:+34 ...", "tel:(+34) ..."
    r"(?<=[^\W\d_]):(?=[\w+(])",
    # an abbreviated label glued by a colon: "Fdo.:NAME", "C.P.:09101", "Tel.:+34 ..."
    r"(?<=[^\W\d_]\.):(?=[\w+(])",
    # a closing parenthesis glued to what follows: "(... 2006):infiltrado" -> "2006", ")", ":", ...
    r"(?<=\w)\)(?=[:;,]\w)",
    r"(?<=\)):(?=\w)",
    # a letter prefix hyphenated to a number: "nhc-272226" -> "nhc", "-", "272226"
    r"(?<=[^\W\d_])-(?=\d)",
    # a number hyphenated to a word: the postal code of "07860-Ibiza"
    r"(?<=\d)-(?=[^\W\d_])",
    # a letter code slashed to a number: "V/6" (sex / age), "C/23"
    r"(?<=\b[^\W\d_])/(?=\d)",
    # a comma with no space between a word and a number, either way: "Somoza,9", "2º,45708",
    # "junio 2003,en" (a comma between two digits is a decimal: "9,1" stays one token)
    r"(?<=[^\W\d_]),(?=\d)",
    r"(?<=\d),(?=[^\W\d_])",
)
PHI_SUFFIXES = (
    # a period right after a number or a number+letter code: "2019." / "12345678Z." lose the period
    r"(?<=\d)\.",
    # ... after a number + letters, ordinals included: "12345678Z.", "8º.", "3ª.", "2ºB."
    r"(?<=\d[^\W\d_])\.",
    r"(?<=\d[^\W\d_][^\W\d_])\.",
    # ... after a slashed letter: the "s/n." (no number) that ends an address
    r"(?<=/[^\W\d_])\.",
    # a period after a lone capital letter: the door of "Calle Rivera 23, 1 C." or an initial "A."
    # (spans never end with punctuation; a lower-case letter's period is split by the language's
    # own suffix rules once the one-letter exceptions are dropped, below)
    r"(?<=\b[^\W\d_a-z])\.",
)


# spaCy's exceptions for one letter and a period ("n.", "s.", Dutch "B.") keep that period on the
# letter even where the letter ends PHI: the "s/n." that ends an address ("sin número") was cut
# inside the gold span in 40 of the 23,714 spans of the Spanish synthetic corpus, so the model never
# learnt the "n". Without the exceptions the language's own suffix rules split the period off.
_LETTER_PERIOD = re.compile(r"[^\W\d_]\.")


def customize_tokenizer(nlp: Language) -> Language:
    """Add the PHI boundary rules to `nlp`'s tokenizer (idempotent): what `deid.Tokenizer.v1` does."""
    tokenizer = nlp.tokenizer
    rules = tokenizer.rules or {}
    if any(_LETTER_PERIOD.fullmatch(key) for key in rules):
        tokenizer.rules = {key: value for key, value in rules.items() if not _LETTER_PERIOD.fullmatch(key)}
    infixes = list(nlp.Defaults.infixes or [])
    suffixes = list(nlp.Defaults.suffixes or [])
    tokenizer.infix_finditer = compile_infix_regex(infixes + [p for p in PHI_INFIXES if p not in infixes]).finditer
    tokenizer.suffix_search = compile_suffix_regex(suffixes + [p for p in PHI_SUFFIXES if p not in suffixes]).search
    return nlp


@registry.tokenizers(TOKENIZER_NAME)
def create_tokenizer() -> Callable[[Language], object]:
    """spaCy's tokenizer for the language plus the PHI boundary rules (`[nlp] tokenizer` of the
    training configs, so training, assembly and runtime cut text alike)."""
    default = registry.tokenizers.get(_PLAIN_TOKENIZER)()

    def make(nlp: Language):
        nlp.tokenizer = default(nlp)  # customize_tokenizer edits nlp.tokenizer in place
        return customize_tokenizer(nlp).tokenizer

    return make


def blank(lang: str) -> Language:
    """A blank `lang` pipeline whose tokenizer is the registered PHI tokenizer, set through the config
    exactly as in the training configs and the assembled pipelines (`[nlp] tokenizer`): the
    training DocBins, the router's pack-only pipelines and self-training's notes are cut alike."""
    import spacy

    return spacy.blank(lang, config={"nlp": {"tokenizer": {"@tokenizers": TOKENIZER_NAME}}})


def upgrade_tokenizer(nlp: Language) -> Language:
    """A pipeline loaded from a config older than `deid.Tokenizer.v1` (`[nlp] tokenizer` is spaCy's
    plain tokenizer: a model trained before the tokenizer was registered) gets the registered PHI
    tokenizer, in its config too, so that, saved, it loads like one trained with it. (Naming it in
    the config alone is not enough: the saved tokenizer's own patterns win when it is loaded.)
    Any other pipeline (one whose config names it already, or a tokenizer of its own) is returned
    as it is."""
    if nlp.config["nlp"]["tokenizer"].get("@tokenizers") == _PLAIN_TOKENIZER:
        nlp.tokenizer = create_tokenizer()(nlp)
        nlp.config["nlp"]["tokenizer"] = {"@tokenizers": TOKENIZER_NAME}  # nlp.config is the pipeline's own
    return nlp
