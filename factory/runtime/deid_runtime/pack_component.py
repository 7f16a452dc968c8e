"""spaCy component `deid_regex_pack`: applies a locale regex pack to a Doc.

Matches go to `doc.spans[spans_key]` (default "deid_regex") with canonical labels; each span's
`._.deid_kind` (which identifier/format), `._.deid_score`, `._.deid_validated` (check digits
passed) and `._.deid_source` ("regex") are set.
With `write_ents=True` (the default when used alone) matches also become `doc.ents` where they do
not overlap entities already there. The pack's data files are saved with the pipeline (to_disk),
so a packaged deid_<lang> carries its own pack.

When the pack has context rules (rules.yml: deid_runtime/context_rules.py), their matches go to
`doc.spans[rules_key]` (default "deid_rules") with `._.deid_source` "rule", for the merger; alone
(`write_ents=True`) they join the entities as the pack's matches do.

When the pack has a clinical lexicon (clinical.yml: deid_runtime/clinical.py), the component also
writes the clinical facts of the text (doses, units, lab values, schedules, durations, drug names)
to `doc.spans[clinical_key]` (default "deid_clinical"), each labelled with its kind. The merger
keeps every PHI candidate out of them; with `write_ents=True` (no merger) the component itself
leaves out the matches that overlap one (keep_out_of_facts), so a pack alone never redacts a dose.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from spacy.language import Language
from spacy.tokens import Doc, Span
from spacy.util import filter_spans

from .regex_pack import NonOverlapping, RegexPack
from .text import BOUNDARY_CHARS

DEFAULT_SPANS_KEY = "deid_regex"
DEFAULT_CLINICAL_KEY = "deid_clinical"
DEFAULT_RULES_KEY = "deid_rules"

for _name in ("deid_kind", "deid_score", "deid_source", "deid_validated"):
    if not Span.has_extension(_name):
        Span.set_extension(_name, default=None)


class RegexPackComponent:
    def __init__(self, nlp: Language, name: str, pack_dir: str | None, spans_key: str, write_ents: bool,
                 clinical_key: str = DEFAULT_CLINICAL_KEY, rules_key: str = DEFAULT_RULES_KEY):
        self.name = name
        self.rules_key = rules_key
        self.spans_key = spans_key
        self.clinical_key = clinical_key
        self.write_ents = write_ents
        self.pack_dir = pack_dir
        # A saved pipeline keeps the pack_dir it was created with in its config, often relative to
        # the folder it was built in; loading it elsewhere creates this component with that path
        # before from_disk() reads the pack saved inside the pipeline. So a pack_dir that does not
        # exist here is not an error yet: only using the component without a pack is.
        self.pack: RegexPack | None = RegexPack.from_dir(pack_dir) if pack_dir and Path(pack_dir).is_dir() else None

    def _require_pack(self) -> RegexPack:
        if self.pack is None:
            where = f"pack_dir {self.pack_dir!r} not found from {Path.cwd()}" if self.pack_dir else "set `pack_dir` in its config"
            raise ValueError(f"component {self.name!r}: no regex pack loaded ({where})")
        return self.pack

    def __call__(self, doc: Doc) -> Doc:
        pack = self._require_pack()
        text = doc.text  # built anew at each access: once per Doc
        spans = match_spans(doc, pack.find(text), "regex")
        doc.spans[self.spans_key] = spans
        if pack.rules is not None:
            rule_spans = match_spans(doc, pack.find_rules(text), "rule")
            doc.spans[self.rules_key] = rule_spans
            spans = spans + rule_spans
        if pack.clinical is not None:
            doc.spans[self.clinical_key] = clinical_spans(doc, pack.clinical, text)
            if self.write_ents:
                spans = keep_out_of_facts(doc, spans, doc.spans[self.clinical_key])
        if self.write_ents and spans:
            # entities already there win; a match joins them where it overlaps none (kept or added)
            taken = NonOverlapping()
            for e in doc.ents:
                taken.add(e.start, e.end, e)
            for span in filter_spans(spans):
                taken.add(span.start, span.end, span)
            doc.ents = taken.items()
        return doc

    def pipe(self, docs: Iterable[Doc], batch_size: int = 128):
        for doc in docs:
            yield self(doc)

    # serialization: the pack's data files (its clinical lexicon's too) travel inside the pipeline folder
    def to_disk(self, path, exclude=tuple()):
        self._require_pack().to_dir(Path(path))

    def from_disk(self, path, exclude=tuple()):
        self.pack = RegexPack.from_dir(Path(path))
        return self


def match_spans(doc: Doc, matches, source: str) -> list[Span]:
    """Spans of the pack's (or its rules') matches, each with its kind, score, source and validation."""
    spans = []
    for match in matches:
        # "expand": a match that ends inside a token covers the whole token (over-redaction beats a leak)
        span = doc.char_span(match.start, match.end, label=match.label, alignment_mode="expand")
        if span is None:
            continue
        span._.deid_kind = match.kind
        span._.deid_score = match.score
        span._.deid_source = source
        span._.deid_validated = match.validated  # check digits passed (the merger trusts these most)
        spans.append(span)
    return spans


def clinical_spans(doc: Doc, lexicon, text: str | None = None) -> list[Span]:
    """The clinical facts of the Doc's text as spans labelled with their kind. A fact covers the
    tokens it holds whole, and a token it holds but for punctuation ("ºC." of "38,2 ºC."); a token
    with more outside the fact ("Andrés.enalapril", glued by a typo) is not a fact, so the part that
    may be a name stays redactable."""
    spans = []
    text = doc.text if text is None else text  # (doc.text is built anew at each access)
    for fact in lexicon.find(text):
        span = doc.char_span(fact.start, fact.end, label=fact.kind, alignment_mode="expand")
        if span is not None:
            outside = text[span.start_char:fact.start] + text[fact.end:span.end_char]
            if any(c not in BOUNDARY_CHARS for c in outside):
                span = doc.char_span(fact.start, fact.end, label=fact.kind, alignment_mode="contract")
        if span is not None and len(span):
            spans.append(span)
    return spans


def exempt_from_facts(label: str, validated: bool | None, source: str = "regex") -> bool:
    """A pack match that stays PHI over a clinical fact: a date the pack's date patterns found, and an
    identifier whose check digits passed (neither is ever a dose: "12/03/2021", "12345678 G"). A
    context rule's date is not exempt ("desde 2000 ml" is a dose, whatever the word before it)."""
    return bool(validated) or (label == "DATE" and source == "regex")


def fact_tokens(doc: Doc, facts: Iterable[Span]) -> bytearray:
    """1 at each token inside a clinical fact, else 0."""
    in_fact = bytearray(len(doc))
    for f in facts:
        in_fact[f.start:f.end] = b"\x01" * (f.end - f.start)
    return in_fact


def keep_out_of_facts(doc: Doc, spans: list[Span], facts: list[Span]) -> list[Span]:
    """The pack matches that overlap no clinical fact (the exempt ones kept)."""
    if not facts:
        return spans
    in_fact = fact_tokens(doc, facts)
    return [s for s in spans if exempt_from_facts(s.label_, s._.deid_validated, s._.deid_source)
            or not any(in_fact[s.start:s.end])]


@Language.factory(
    "deid_regex_pack",
    default_config={"pack_dir": None, "spans_key": DEFAULT_SPANS_KEY, "write_ents": True,
                    "clinical_key": DEFAULT_CLINICAL_KEY, "rules_key": DEFAULT_RULES_KEY},
)
def make_regex_pack(nlp: Language, name: str, pack_dir: str | None, spans_key: str, write_ents: bool,
                    clinical_key: str, rules_key: str):
    return RegexPackComponent(nlp, name, pack_dir, spans_key, write_ents, clinical_key, rules_key)
