"""spaCy component `deid_merger`: one set of final PHI spans from the NER and the regex pack.

It runs after `ner` and `deid_regex_pack` (with `write_ents=False`) and reads
  - the NER entities (`doc.ents` as the NER left them; copied to `doc.spans["deid_ner"]`),
  - the regex pack matches (`doc.spans["deid_regex"]`),
and writes the resolved spans to `doc.ents` (canonical labels only) and `doc.spans["deid"]`,
each with `._.deid_source` ("ner", "regex" or "ner+regex") and `._.deid_score`.

Resolution (documented in docs/router.md):
  1. Overlapping candidates with the SAME label are merged into their union: over-redaction
     beats a leak, and NER and regex often disagree only on boundaries ("12 de marzo" vs "marzo").
  2. Overlapping candidates with DIFFERENT labels: the one with the higher priority wins, where
       3 = validated regex match (check digits passed) with a structured label,
       2 = NER span with an NER-first label (PERSON, ORGANIZATION, LOCATION by default),
       1 = regex match with a structured label (pattern only, no check digits),
       0 = anything else (e.g. NER guessing a structured label, regex guessing a name);
     ties go to the longer span, then the higher score.
     The loser's tokens that the winner does not cover stay PHI, as spans of the loser's label:
     what any detector flagged is never let out because another one disagreed on the label
     (a NER "ADDRESS" over "Teléfono 612" must not free the "345 678" of a regex PHONE).
NER spans are first cut at line breaks (see split_at_line_breaks), then completed to whole words
(see complete_words): a name-like span that stops at a hyphen inside a word ("Perros" of
"Perros-Guirec") takes the rest of the word, and a PERSON span takes the initials written right
before it ("T." of "Dr T. Renaud").
Clinical facts are never PHI (see outside_facts): before the resolution, every candidate, of any
label and from any source, loses the tokens of the clinical facts the pack marked
(`doc.spans["deid_clinical"]`: doses, units, lab values, schedules, durations, drug names), and is
cut in pieces around them; a piece of punctuation or stop words alone is dropped. Exempt: a DATE the
pack's date patterns found and a pack match the merger trusts as validated (check digits or a
certain score). The rest of a candidate stays PHI: a name next to a dose is still a name.
Keeping the three views (NER alone, regex alone, merged) on every Doc lets the evaluation
score each of them from one pass.
"""

from __future__ import annotations

import re
from typing import Iterable

from spacy.language import Language
from spacy.tokens import Doc, Span

from .canonical import CANONICAL_LABELS
from .pack_component import DEFAULT_CLINICAL_KEY, DEFAULT_RULES_KEY, exempt_from_facts, fact_tokens
from .regex_pack import NonOverlapping

NER_SPANS_KEY = "deid_ner"
REGEX_SPANS_KEY = "deid_regex"
OUTPUT_SPANS_KEY = "deid"
DEFAULT_STRUCTURED = ["AGE", "DATE", "PHONE", "EMAIL", "URL", "IP", "ID"]
DEFAULT_NER_FIRST = ["PERSON", "ORGANIZATION", "LOCATION"]
# Labels whose NER spans are completed to whole hyphenated words, and those that take initials.
DEFAULT_WHOLE_WORD = ["PERSON", "ORGANIZATION", "LOCATION", "ADDRESS"]
DEFAULT_INITIALS = ["PERSON"]
HYPHENS = {"-", "\u2010", "\u2011"}  # hyphen-minus, hyphen, non-breaking hyphen (not the dashes between words)
# An initial as the runtime tokenizer leaves it before its period: "T", "M.-A", "J.-B"
_INITIAL = re.compile(r"^[^\W\d_](?:\.-?[^\W\d_])*$")
# One-letter titles, which look like initials ("M." Monsieur, "D." Don), are the locale's: a pipeline's
# config gets them from its locale's titles at assembly (deid_factory's Locale.title_letters); a
# merger set up without them takes every one-letter word before a name for an initial.
DEFAULT_TITLE_LETTERS: list[str] = []

for _name in ("deid_kind", "deid_score", "deid_source", "deid_validated"):
    if not Span.has_extension(_name):
        Span.set_extension(_name, default=None)


class _Candidate:
    __slots__ = ("start", "end", "label", "source", "score", "validated", "kind")

    def __init__(self, start, end, label, source, score, validated, kind):
        self.start, self.end, self.label = start, end, label
        self.source, self.score, self.validated, self.kind = source, score, validated, kind


def priority(source: str, label: str, validated: bool, structured: set[str], ner_first: set[str]) -> int:
    """The rank of a candidate in a label conflict (see the module docstring). A context rule ("rule")
    ranks as a pattern for the structured labels and as the NER for the NER-first ones: its label
    comes from the words around it ("su hija Pilar"), which the NER reads too."""
    pattern = source in ("regex", "rule")
    if pattern and label in structured and validated:
        return 3
    if source in ("ner", "rule") and label in ner_first:
        return 2
    if pattern and label in structured:
        return 1
    return 0


def resolve(candidates: list[_Candidate], structured: set[str], ner_first: set[str]) -> list[_Candidate]:
    """Non-overlapping spans from overlapping candidates (token offsets), by the rules above."""
    # 1. same-label unions: sweep each label's candidates in order, merging overlaps
    merged: list[_Candidate] = []
    by_label: dict[str, list[_Candidate]] = {}
    for c in candidates:
        by_label.setdefault(c.label, []).append(c)
    for label, items in by_label.items():
        items.sort(key=lambda c: (c.start, c.end))
        current = None
        for c in items:
            if current is not None and c.start < current.end:
                sources = set(current.source.split("+")) | set(c.source.split("+"))
                current = _Candidate(
                    current.start, max(current.end, c.end), label,
                    "+".join(sorted(sources)), max(current.score, c.score),
                    current.validated or c.validated, current.kind or c.kind,
                )
            else:
                if current is not None:
                    merged.append(current)
                current = c
        if current is not None:
            merged.append(current)

    # 2. cross-label conflicts: greedy by priority, then length, then score
    def rank(c: _Candidate):
        best = max(priority(s, c.label, c.validated, structured, ner_first) for s in c.source.split("+"))
        return (-best, -(c.end - c.start), -c.score, c.start)

    chosen = NonOverlapping()
    losers = [c for c in sorted(merged, key=rank) if not chosen.add(c.start, c.end, c)]
    # 3. fail closed: the parts of a loser that no winner covers are kept with the loser's label
    for c in losers:
        for start, end in chosen.uncovered(c.start, c.end):
            chosen.add(start, end, _Candidate(start, end, c.label, c.source, c.score, c.validated, c.kind))
    return chosen.items()


def split_at_line_breaks(doc: Doc, start: int, end: int) -> list[tuple[int, int]]:
    """The token ranges of [start, end) between line breaks. A PHI mention never runs across a line
    break in a clinical note (header fields sit on their own lines), but the NER, trained on
    synthetic notes, sometimes joins "name" and the next line's "street" into one span."""
    parts, part_start = [], start
    for i in range(start, end):
        if doc[i].is_space and "\n" in doc[i].text:
            if part_start < i:
                parts.append((part_start, i))
            part_start = i + 1
    if part_start < end:
        parts.append((part_start, end))
    return parts


def _attached(doc: Doc, i: int) -> bool:
    """Token i is written against token i + 1 (no space between)."""
    return i + 1 < len(doc) and not doc[i].whitespace_


def _word_piece(doc: Doc, i: int) -> bool:
    return 0 <= i < len(doc) and not (doc[i].is_space or doc[i].is_punct or doc[i].is_quote or doc[i].is_bracket)


def _edge_punct(token, doc: Doc, start: int, end: int) -> bool:
    """A punctuation token at the edge of [start, end) that the span should not keep: not a bracket
    or quote whose partner is inside the span ("(+34) 912 345 678", "Le Cèdre »")."""
    if not token.is_punct or token.is_space:
        return False
    if token.is_bracket or token.is_quote:
        inside = doc[start:end].text
        return not (inside.count("(") and inside.count(")")) and not any(q in inside[1:-1] for q in "\"«»“”")
    return True


def complete_words(doc: Doc, start: int, end: int, label: str, whole_word: set[str], initials: set[str],
                   title_letters: set[str] = frozenset(DEFAULT_TITLE_LETTERS)) -> tuple[int, int]:
    """[start, end) grown to the whole word(s) it cuts, for the labels that are names.

    Hyphens: the tokenizer splits "Perros-Guirec", "Paoli-Calmettes", "Jean-Pierre" at the hyphen,
    and the NER (which saw few such words in its synthetic notes) often tags one part only; a
    place, person, organisation or street is never half a hyphenated word, so the span takes the
    pieces joined to it by a hyphen with no space on either side (an elided "l'" of
    "Tain-l'Hermitage" included). Initials: "Dr T. Renaud" is tokenized "T" "." "Renaud"; a PERSON
    span right after such an initial and its period takes them ("M.-A. LE GALL", "J.-B. Roux"),
    except a one-letter courtesy title ("M. Pennec": `title_letters`), which stays outside.
    Growing a span never frees a token; the only tokens it gives back are punctuation at its edges."""
    if label in whole_word:
        while (end + 1 < len(doc) and _attached(doc, end - 1) and doc[end].text in HYPHENS and _attached(doc, end)
               and _word_piece(doc, end + 1)):
            end += 2
            while _attached(doc, end - 1) and _word_piece(doc, end) and doc[end - 1].text.endswith(("'", "\u2019")):
                end += 1  # "Tain-l'" + "Hermitage"
        while (start - 2 >= 0 and doc[start - 1].text in HYPHENS and _attached(doc, start - 2) and _attached(doc, start - 1)
               and _word_piece(doc, start - 2)):
            start -= 2
    # no span starts or ends with punctuation ("-272226" of "nhc-272226", ", 279 4D", ". Doctor
    # Esquerdo, 46"): the annotation conventions of every corpus leave it out, and it is not PHI
    while start < end and _edge_punct(doc[start], doc, start, end):
        start += 1
    while end > start and _edge_punct(doc[end - 1], doc, start, end):
        end -= 1
    if label in initials:
        while (start - 2 >= 0 and doc[start - 1].text == "." and _attached(doc, start - 2) and doc[start - 1].whitespace_
               and _INITIAL.match(doc[start - 2].text) and doc[start - 2].text[0].isupper()
               and doc[start - 2].text not in title_letters):
            start -= 2
    return start, end


def _filler(token) -> bool:
    """A token that is never PHI on its own: space, punctuation, a stop word ("de", "y", "el"), one
    lower-case letter (the "s" of seconds left by "TTPa 30 s")."""
    text = token.text.strip()
    return token.is_space or token.is_punct or token.is_stop or not text or (len(text) == 1 and text.islower())


def outside_facts(doc: Doc, start: int, end: int, in_fact: bytearray) -> list[tuple[int, int]]:
    """The pieces of [start, end) outside the clinical facts: the span itself when it touches none;
    else the runs of tokens between the facts, their edge punctuation and spaces dropped, and a piece
    of fillers only (punctuation, stop words) dropped whole."""
    if not any(in_fact[start:end]):
        return [(start, end)]
    pieces, i = [], start
    while i < end:
        if in_fact[i]:
            i += 1
            continue
        j = i
        while j < end and not in_fact[j]:
            j += 1
        s, e = i, j
        while s < e and (doc[s].is_space or _edge_punct(doc[s], doc, s, e)):
            s += 1
        while e > s and (doc[e - 1].is_space or _edge_punct(doc[e - 1], doc, s, e)):
            e -= 1
        if s < e and not all(_filler(doc[k]) for k in range(s, e)):
            pieces.append((s, e))
        i = j
    return pieces


def _has_digit(token) -> bool:
    return any(ch.isdigit() for ch in token.text)


def _trailing_filler(token, words, person: bool) -> bool:
    """A token a name-like span never ends with: punctuation, a stop word in lower case, and for a
    PERSON a common word of the locale in lower case (its verbs: "Lucía García le acompañan")."""
    if token.is_space or token.is_punct:
        return True
    if not token.text[:1].islower():
        return False
    return token.is_stop or (person and words is not None and words.is_common(token.text))


def plausible(doc: Doc, c: "_Candidate", rules, lexicon) -> list["_Candidate"]:
    """What of candidate `c` can be its label (docs/router.md, "Spans that cannot be their label"):
    a PERSON loses the numbers and units at its edges (a number alone is an ID: never let out), a
    DATE with no date token (a digit, a month, a weekday, a number word) is dropped, a name-like span
    loses the verbs and function words it ends with."""
    start, end, label = c.start, c.end, c.label
    out: list[_Candidate] = []
    words = rules.words if rules is not None else None
    if label == "PERSON":
        def odd(t) -> bool:
            return _has_digit(t) or (lexicon is not None and t.text.isalpha() and lexicon.is_lexicon_word(t.text)
                                     and not t.text[:1].isupper())
        s, e = start, end
        while s < e and (odd(doc[s]) or doc[s].is_punct or doc[s].is_space):
            s += 1
        while e > s and (odd(doc[e - 1]) or doc[e - 1].is_punct or doc[e - 1].is_space):
            e -= 1
        if s == e or not any(doc[i].is_alpha for i in range(s, e)):
            if any(_has_digit(doc[i]) for i in range(start, end)):
                return [_Candidate(start, end, "ID", c.source, c.score, c.validated, c.kind)]  # a number: an identifier
            return []
        for a, b in ((start, s), (e, end)):  # digits cut off a name stay PHI, as an identifier
            if any(_has_digit(doc[i]) for i in range(a, b)):
                out.append(_Candidate(a, b, "ID", c.source, c.score, c.validated, c.kind))
        start, end = s, e
    if label == "DATE":
        if not any(_has_digit(t) or (rules is not None and rules.is_date_word(t.text)) for t in doc[start:end]):
            return out
    if label in ("PERSON", "ORGANIZATION", "LOCATION", "PROFESSION"):
        while end > start + 1 and _trailing_filler(doc[end - 1], words, label == "PERSON"):
            end -= 1
    out.append(_Candidate(start, end, label, c.source, c.score, c.validated, c.kind))
    return out


# ------------------------------------------------------------------ label shapes
# A span of the NER whose text cannot be its label is not its label (docs/router.md, "Label
# shapes"): the network learned the labels from the generator's notes and, on notes written
# otherwise, tags lab values as dates ("leucos 6.740", "RN 12,0-18,0") or acronyms as e-mail
# addresses ("IgA"). Only what no note writes as that label is dropped; the pack's and the rules'
# spans are never checked here (their patterns are the shape).
_DECIMAL_COMMA = re.compile(r"\d,\d")                      # "0,72", "12,0-18,0": a value, never a date or a phone
_THOUSANDS = re.compile(r"^\d{1,3}(?:\.\d{3})+$")           # "6.740", "48.000": a count (a phone has more digits)
# a degree, a percentage, a sign or a dimension next to a digit: "360º", "42oC", "36%", "20+", "3x2,5"
_MEASURE_MARK = re.compile(r"\d\s*(?:[º°%+]|o?C\b)|\+\s*\d|\d\s*[xX×]\s*\d")


_SHAPED = {"EMAIL", "PHONE", "DATE", "AGE"}


def shape_label(text: str, label: str, is_date_word=None, is_lexicon_word=None) -> str | None:
    """The label a NER span of `label` over `text` keeps: `label`; "ID" for a PHONE of fewer than six
    digits (a house or floor number the NER took for a phone stays PHI); None when no label can take
    the text (impossible_shape)."""
    if label == "PHONE" and not _DECIMAL_COMMA.search(text) and sum(ch.isdigit() for ch in text) < 6:
        return "ID"
    return None if impossible_shape(text, label, is_date_word, is_lexicon_word) else label


def impossible_shape(text: str, label: str, is_date_word=None, is_lexicon_word=None) -> bool:
    """True when `text` is no EMAIL (no "@"), PHONE, DATE or AGE (no digit and no date or number word
    of the locale, `is_date_word`) AND no other PHI either: a number written as a quantity (a decimal
    comma, a thousands group, a degree, a percentage, a dimension, a unit of measure of the locale's
    clinical lexicon, `is_lexicon_word`), or lower-case words (two or more, or one of the clinical
    lexicon). A capitalised word under the wrong label ("D" of "D. Verhoeven" tagged DATE) keeps its
    label: it may be a name, and what the NER flagged is never let out for its label."""
    if label not in _SHAPED:
        return False
    words = re.findall(r"[^\W\d_]+", text)
    if label in ("DATE", "AGE") and is_date_word is not None and any(is_date_word(w) for w in words):
        return False
    if label == "EMAIL" and "@" in text:
        return False
    if any(ch.isdigit() for ch in text):
        if label == "PHONE" and not _DECIMAL_COMMA.search(text):
            return False
        if label == "AGE" and is_lexicon_word is not None and any(is_lexicon_word(w) for w in words):
            return True  # "40 kg": a weight
        return bool(_DECIMAL_COMMA.search(text) or _THOUSANDS.match(text) or _MEASURE_MARK.search(text))
    if label in ("DATE", "AGE") and is_date_word is None:
        return False  # no date words known: cannot tell
    if not words or any(not w.islower() for w in words):
        return False
    return len(words) >= 2 or (is_lexicon_word is not None and is_lexicon_word(words[0]))


# ------------------------------------------------------------------ annotation conventions
# What a span holds, the same in every locale (docs/router.md, "Conventions"): a person's titles stay
# outside it, a postcode written on the street's line is part of the address, and a code the NER took
# for a name or a place is an identifier.
# A postcode: 3 to 10 letters, digits, spaces or hyphens, 3 digits at least ("28041", "1000-001",
# "1012 AB", "SW1A 1AA", "D02 X285").
_POSTCODE = re.compile(r"^(?=(?:\D*\d){3})[A-Z0-9](?:[A-Z0-9 -]{1,8}[A-Z0-9])?$")
_BETWEEN_STREET_AND_POSTCODE = re.compile(r"[ \t]*[,;]?[ \t]*\Z")  # on the same line (\Z: "$" passes a newline)
# A code: no space, 8 digits at least (more than any postcode), letters, digits and separators
# ("AT-2024-58821", "24-0117-05528")
_CODE = re.compile(r"^(?=(?:[^\d]*\d){8})[\w][\w/.\-]*\w$")
_CODE_NOT_NAMES = {"PERSON", "LOCATION", "ORGANIZATION", "PROFESSION"}
# Between two dates of one range, on one line: "21 au 22/06", "3 al 5 de mayo", "3-5/4", "2 to 4 May"
_DATE_RANGE = re.compile(r"[ \t]*(?:au|al|à|a|-|–|to|till|bis|tot|hasta|jusqu'au|jusqu’au)[ \t]*", re.IGNORECASE)
_BARE_DAY = re.compile(r"\d{1,2}(?:er|º|°|st|nd|rd|th)?", re.IGNORECASE)
# The number sign before an identifier is not part of it ("nº 464617385", "n° 12", "Nr. 5", "# 4471")
_NUMBER_SIGN = re.compile(r"^(?:n\.?\s?[º°o]|nº|n°|nr|no|num|#)\.?\s+(?=\w)", re.IGNORECASE)


def titles_regex(titles: Iterable[str]) -> re.Pattern | None:
    """A title at the start of a text ("Dra. ", "M. ", "el enfermero "), case-insensitive, with its
    period written or not, followed by spaces."""
    forms = sorted({t.rstrip(".") for t in titles if t.strip(".")}, key=len, reverse=True)
    if not forms:
        return None
    return re.compile(r"^(?:(?:" + "|".join(re.escape(f) for f in forms) + r")\.?(?:\s+|\Z))+", re.IGNORECASE)


def apply_conventions(doc: Doc, chosen: list[_Candidate], titles: re.Pattern | None, postcode_in_address: bool) -> list[_Candidate]:
    """The resolved spans written by the conventions above: a PERSON starting with the locale's
    titles starts after them ("M. Chassagne" -> "Chassagne"; a span that is nothing but a title is
    dropped); an ADDRESS followed on its line by a postcode span ("C/ Mayor, 58, 46980") takes it in
    (`postcode_in_address`; MEDDOCAN keeps the postcode apart, as a place); a PERSON, LOCATION,
    ORGANIZATION or PROFESSION that is one code of 8 digits or more ("AT-2024-58821") becomes an ID;
    an ID leaves out the number sign written before it ("nº 464617385"); a day alone joined by a range
    word to the DATE after it on one line ("21 au 22/06") is one DATE with it. No token that was PHI stops being PHI, but a title."""
    out: list[_Candidate] = []
    for c in chosen:
        if c.label == "PERSON" and titles is not None:
            span_text = doc[c.start:c.end].text
            m = titles.match(span_text)
            if m:
                char = doc[c.start].idx + m.end()
                start = c.start
                while start < c.end and doc[start].idx < char:
                    start += 1
                if start >= c.end:
                    continue  # a title alone is no one
                c = _Candidate(start, c.end, c.label, c.source, c.score, c.validated, c.kind)
        if c.label == "ID" and c.end - c.start > 1 and _NUMBER_SIGN.match(doc[c.start:c.end].text):
            start = c.start + 1
            while start < c.end - 1 and (doc[start].is_punct or doc[start].is_space):
                start += 1
            c = _Candidate(start, c.end, c.label, c.source, c.score, c.validated, c.kind)  # "nº 464617385"
        if c.label in _CODE_NOT_NAMES and _CODE.match(doc[c.start:c.end].text):
            c = _Candidate(c.start, c.end, "ID", c.source, c.score, c.validated, c.kind)
        out.append(c)
    joined: list[_Candidate] = []
    text = doc.text  # built anew from every token at each access: once per Doc, not per candidate
    for c in sorted(out, key=lambda c: c.start):
        prev = joined[-1] if joined else None
        if prev is None or c.start >= c.end or prev.start >= prev.end:
            joined.append(c)  # nothing to join (an empty candidate has no text, and may sit at the doc's end)
            continue
        between = text[doc[prev.end - 1].idx + len(doc[prev.end - 1].text):doc[c.start].idx]
        if (postcode_in_address and prev.label == "ADDRESS" and c.label == "LOCATION"
                and _POSTCODE.match(doc[c.start:c.end].text) and _BETWEEN_STREET_AND_POSTCODE.match(between)):
            joined[-1] = _Candidate(prev.start, c.end, "ADDRESS", prev.source, max(prev.score, c.score),
                                    prev.validated or c.validated, prev.kind)
            continue
        if (prev.label == "DATE" and c.label == "DATE" and _DATE_RANGE.fullmatch(between)
                and _BARE_DAY.fullmatch(doc[prev.start:prev.end].text)):
            # "du 21 au 22/06", "del 3 al 5 de mayo": a day alone is no date, the range is one; two
            # whole dates stay two ("du 02/05/2023 au 09/05/2023"), as the corpora annotate them
            joined[-1] = _Candidate(prev.start, c.end, "DATE", prev.source, max(prev.score, c.score),
                                    prev.validated or c.validated, prev.kind)
            continue
        joined.append(c)
    return joined


class DeidMerger:
    def __init__(self, name: str, regex_key: str, ner_key: str, output_key: str,
                 structured_labels: list[str], ner_first_labels: list[str],
                 whole_word_labels: list[str] = DEFAULT_WHOLE_WORD, initials_labels: list[str] = DEFAULT_INITIALS,
                 title_letters: list[str] = DEFAULT_TITLE_LETTERS, trusted_score: float = 0.95,
                 clinical_key: str = DEFAULT_CLINICAL_KEY, rules_key: str = DEFAULT_RULES_KEY,
                 plausibility_checks: bool = False, titles: list[str] = (), postcode_in_address: bool = True,
                 shape_checks: bool = True):
        self.name = name
        self.shape_checks = bool(shape_checks)  # NER spans that cannot be their label (impossible_shape)
        self.titles = titles_regex(titles)  # the locale's titles (assembly writes them): outside a PERSON
        self.postcode_in_address = bool(postcode_in_address)
        self.rules_key = rules_key
        self.checks = bool(plausibility_checks)  # spans that cannot be their label (plausible)
        self.regex_key, self.ner_key, self.output_key = regex_key, ner_key, output_key
        self.clinical_key = clinical_key
        self.structured = set(structured_labels)
        self.ner_first = set(ner_first_labels)
        self.whole_word, self.initials = set(whole_word_labels), set(initials_labels)
        self.title_letters = set(title_letters)
        self.trusted_score = float(trusted_score)
        unknown = (self.structured | self.ner_first | self.whole_word | self.initials) - set(CANONICAL_LABELS)
        if unknown:
            raise ValueError(f"component {name!r}: labels {sorted(unknown)} are not canonical")

    def __call__(self, doc: Doc) -> Doc:
        # NER output as the NER left it; only canonical labels leave the pipeline.
        ner_spans = [e for e in doc.ents if e.label_ in CANONICAL_LABELS]
        doc.spans[self.ner_key] = ner_spans
        candidates = []
        is_date_word = is_lexicon_word = None
        if self.shape_checks:
            from . import clinical, context_rules

            rules, lexicon = context_rules.rules_for(doc.lang_), clinical.lexicon_for(doc.lang_)
            is_date_word = rules.is_date_word if rules is not None else None
            is_lexicon_word = lexicon.is_lexicon_word if lexicon is not None else None
        pieces: list[list] = []
        for e in ner_spans:
            for start, end in split_at_line_breaks(doc, e.start, e.end):
                start, end = complete_words(doc, start, end, e.label_, self.whole_word, self.initials, self.title_letters)
                prev = pieces[-1] if pieces else None
                if (self.shape_checks and prev is not None and prev[2] == e.label_ and e.label_ in _SHAPED
                        and prev[1] < start and all(t.is_space and "\n" not in t.text for t in doc[prev[1]:start])):
                    prev[1] = end  # "49  años" of a scanned page, two NER spans: one AGE, checked whole
                else:
                    pieces.append([start, end, e.label_])
        for start, end, label in pieces:
            if self.shape_checks and start < end:
                label = shape_label(doc[start:end].text, label, is_date_word, is_lexicon_word)
                if label is None:
                    continue
            candidates.append(_Candidate(start, end, label, "ner", 0.5, False, ""))
        pattern_spans = [(s, "regex") for s in (doc.spans[self.regex_key] if self.regex_key in doc.spans else [])]
        pattern_spans += [(s, "rule") for s in (doc.spans[self.rules_key] if self.rules_key in doc.spans else [])]
        for s, source in pattern_spans:
            if s.label_ not in CANONICAL_LABELS:
                continue
            # the pack says whether check digits passed; spans from elsewhere fall back to a high score
            validated = (bool(s._.deid_validated) if s._.deid_validated is not None
                         else s._.deid_score is not None and s._.deid_score >= 0.95)
            # a match the pack scores as certain (a record number after its label, an e-mail) ranks
            # with the validated ones: the NER's "PERSON" over "CT230917" of "N° examen : CT230917-4411"
            # must not cut the identifier in three
            validated = validated or (s._.deid_score is not None and s._.deid_score >= self.trusted_score)
            candidates.append(_Candidate(s.start, s.end, s.label_, source, float(s._.deid_score or 0.8),
                                         validated, s._.deid_kind or ""))
        facts = doc.spans[self.clinical_key] if self.clinical_key in doc.spans else []
        if len(facts):
            in_fact = fact_tokens(doc, facts)
            candidates = [_Candidate(start, end, c.label, c.source, c.score, c.validated, c.kind)
                          for c in candidates
                          for start, end in ([(c.start, c.end)] if c.source != "ner" and exempt_from_facts(c.label, c.validated, c.source)
                                             else outside_facts(doc, c.start, c.end, in_fact))]
        resolved = resolve(candidates, self.structured, self.ner_first)
        if self.checks:
            from . import clinical, context_rules

            rules, lexicon = context_rules.rules_for(doc.lang_), clinical.lexicon_for(doc.lang_)
            resolved = [p for c in resolved for p in plausible(doc, c, rules, lexicon) if p.start < p.end]
        resolved = apply_conventions(doc, resolved, self.titles, self.postcode_in_address)
        final = []
        for c in resolved:
            span = Span(doc, c.start, c.end, label=c.label)
            # span extensions live in doc.user_data keyed by offsets and label, so doc.ents sees them
            span._.deid_source = c.source
            span._.deid_score = c.score
            span._.deid_kind = c.kind or None
            span._.deid_validated = c.validated
            final.append(span)
        doc.ents = final
        doc.spans[self.output_key] = final
        return doc

    def pipe(self, docs: Iterable[Doc], batch_size: int = 128):
        for doc in docs:
            yield self(doc)


def make_merger(nlp: Language, name: str, regex_key: str, ner_key: str, output_key: str,
                structured_labels: list[str], ner_first_labels: list[str], whole_word_labels: list[str],
                initials_labels: list[str], title_letters: list[str], trusted_score: float,
                clinical_key: str, rules_key: str, plausibility_checks: bool, titles: list[str],
                postcode_in_address: bool, shape_checks: bool) -> DeidMerger:
    return DeidMerger(name, regex_key, ner_key, output_key, structured_labels, ner_first_labels,
                      whole_word_labels, initials_labels, title_letters, trusted_score, clinical_key, rules_key,
                      plausibility_checks, titles, postcode_in_address, shape_checks)


Language.factory(
    "deid_merger",
    default_config={
        "regex_key": REGEX_SPANS_KEY,
        "ner_key": NER_SPANS_KEY,
        "output_key": OUTPUT_SPANS_KEY,
        "structured_labels": DEFAULT_STRUCTURED,
        "ner_first_labels": DEFAULT_NER_FIRST,
        "whole_word_labels": DEFAULT_WHOLE_WORD,
        "initials_labels": DEFAULT_INITIALS,
        "title_letters": DEFAULT_TITLE_LETTERS,
        "trusted_score": 0.95,
        "clinical_key": DEFAULT_CLINICAL_KEY,
        "rules_key": DEFAULT_RULES_KEY,
        # off: on the tuning sets it cost token recall (bench/results/context_rules.md)
        "plausibility_checks": False,
        "shape_checks": True,
        # the locale's titles, kept outside a PERSON (assembly writes them from languages/<lc>/surrogate_data/titles.yml)
        "titles": [],
        # "C/ Mayor, 58, 46980": the postcode on the street's line is part of the ADDRESS (false: MEDDOCAN's
        # convention, the postcode a LOCATION of its own)
        "postcode_in_address": True,
    },
)(make_merger)
