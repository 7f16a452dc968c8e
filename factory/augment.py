"""Training noise that does not come from the generator: augmenters of the training corpus.

Every template of the synthetic corpus was written by the same hands as its tuning sets, so a form
the generator never writes (a phone number scanned as "6 1 2  3 O 4  5 6 7", a name in a nurse's
lower case, a header field run into a sentence) is a form the model never saw. spaCy re-reads the
training corpus every epoch and passes each example through the corpus' augmenter
(`[corpora.train.augmenter]` in the training config), so a share of the notes is seen in another
form each epoch, with its gold spans moved along. spaCy's own augmenters are used where they fit:

  spacy.lower_case.v1          the whole note in lower case (tokens kept, entities kept)
  spacy.combined_augmenter.v1  lower case + whitespace tokens inserted (extra spaces, line breaks)
  spacy.orth_variants.v1       does not fit: it replaces words by TAG, and the factory's gold has no
                               tags, so on these notes it only lower-cases (docs/training.md)

and the factory's own where they do not (each a plain function `(text, spans, rng) -> (text, spans)`
at its heart, registered with `@spacy.registry.augmenters` around it):

  deid.scan_spacing.v1   scanned text: spaced-out digits (identifiers, phones, dates and every other
                         number), a letter O for a zero, spaces around "@" and "." in e-mail
                         addresses, doubled spaces between words and a space before punctuation
  deid.broken_lines.v1   a note hard-wrapped at a random width, in the middle of sentences and
                         between a header field's label and its value; some words hyphenated
  deid.header_prose.v1   header fields run into prose: "NOMBRE: Ana Gil\\nFECHA: 3/4/21" becomes
                         "nombre Ana Gil, fecha 3/4/21"
  deid.name_lists.v1     names as initials and surnames ("C. Dupont", "J.R. MARTIN"), and a staff
                         list of them on one line, with no commas ("C. Dupont D. MARTIN P.E. Leroy")
  deid.lower_names.v1    names in lower case, with the title before them and sometimes their line
                         ("se avisa a la dra. beltrán")
  deid.chain.v1          several augmenters one after the other (the config's `*` sections)

Gold spans stay exact: every edit is made through `Rewrite`, which maps each span to the characters
it covered (an insertion inside a span grows it, one at its edge stays outside), and the augmented
reference doc is cut by the training tokenizer (`nlp.make_doc`, the runtime's deid.Tokenizer.v1)
with every entity on token boundaries; an augmentation whose spans would not be (an empty span, a
span that starts or ends on whitespace, one that does not fall on tokens) is not used and the
example passes unchanged. Randomness is Python's `random`, which spaCy seeds from the config's
`[system] seed` at the start of training, so a training run is reproducible.

This module is for training only: `factory train` imports it before it hands the config to spaCy.
A trained model's config names the augmenters in `[corpora]`, which `spacy.load` does not resolve,
so `deid_<lang>` and `deid_runtime` load without it (tests/factory/test_augment.py).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from functools import partial
from typing import Callable, Iterable, Iterator, Protocol, Sequence

SpanT = tuple[int, int, str]


class Rng(Protocol):  # random.Random, or the `random` module itself (spaCy seeds its hidden instance)
    def random(self) -> float: ...
    def randint(self, a: int, b: int) -> int: ...
    def choice(self, seq): ...


# --------------------------------------------------------------------------- edits that keep spans
@dataclass
class Rewrite:
    """Character edits of a text that keep every span on the characters it covered.

    `replace(i, s)` replaces the character at i by s ("" deletes it); `insert(i, s)` puts s before the
    character at i (i == len(text): at the end). A span (start, end) becomes (where its first
    character's replacement starts, where its last character's replacement ends): text inserted at
    its start or end stays outside it, text inserted or replaced inside it is part of it."""

    text: str
    sub: dict[int, str] = field(default_factory=dict)
    ins: dict[int, str] = field(default_factory=dict)

    def replace(self, i: int, s: str) -> None:
        self.sub[i] = s

    def insert(self, i: int, s: str) -> None:
        self.ins[i] = self.ins.get(i, "") + s

    def apply(self, spans: Iterable[SpanT]) -> tuple[str, list[SpanT]]:
        text, n = self.text, len(self.text)
        pieces: list[str] = []
        start_at = [0] * (n + 1)  # new offset of the character at i
        end_at = [0] * (n + 1)    # new offset just after the character at i - 1 (before insertions at i)
        pos = 0
        for i in range(n + 1):
            end_at[i] = pos
            inserted = self.ins.get(i, "")
            pieces.append(inserted)
            pos += len(inserted)
            start_at[i] = pos
            if i < n:
                piece = self.sub.get(i, text[i])
                pieces.append(piece)
                pos += len(piece)
        return "".join(pieces), [(start_at[s], end_at[e], label) for s, e, label in spans]


def spans_ok(text: str, spans: Sequence[SpanT]) -> bool:
    """Spans a reference doc can take: inside the text, non-empty, not starting or ending on
    whitespace, in order and not overlapping."""
    last = 0
    for start, end, _ in sorted(spans):
        if not (last <= start < end <= len(text)):
            return False
        if text[start].isspace() or text[end - 1].isspace():
            return False
        last = end
    return True


def _inside(spans: Sequence[SpanT]) -> list[bool]:
    """Per character offset (up to the last span's end): is it inside a span."""
    end = max((e for _, e, _ in spans), default=0)
    mask = [False] * end
    for s, e, _ in spans:
        for i in range(s, e):
            mask[i] = True
    return mask


def _in(mask: list[bool], i: int) -> bool:
    return 0 <= i < len(mask) and mask[i]


def _lower_char(c: str) -> str:
    """c in lower case, where that is one character (offsets must not move: "İ" stays)."""
    low = c.lower()
    return low if len(low) == 1 else c


def _upper_char(c: str) -> str:
    up = c.upper()
    return up if len(up) == 1 else c


# --------------------------------------------------------------------------- scanned-text spacing
_PUNCT_BEFORE_SPACE = ",.:;)"
_NUMBER_CHUNK = re.compile(r"\S*\d\S*")  # a run of non-spaces holding a digit: "600", "02/08/1974", "NHC:4050201"


def scan_spacing(text: str, spans: Sequence[SpanT], rng: Rng, *, digits: float = 0.8, letter_o: float = 0.5,
                 email: float = 0.8, wide_gaps: float = 0.5, punct_space: float = 0.5) -> tuple[str, list[SpanT]]:
    """A note as a scanner or an OCR pass writes it.

    digits: share of the note's numbers whose characters are spaced out around each digit
    ("12368331N" -> "1 2 3 6 8 3 3 1 N", "02/08/1974" -> "0 2 / 0 8 / 1 9 7 4"; a space between two
    spaced numbers doubles, "9 1 3  9 0"); letter_o: chance that the note's zeros become "O";
    email: share of e-mail addresses with spaces around "@" and "."; wide_gaps: chance that the
    note's gaps between words are doubled (each gap with even odds); punct_space: chance that a space
    comes before the note's punctuation (",", ".", ":" ... each with even odds) where it ends a word.
    Numbers outside PHI (doses, lab values) are spaced and read the same way: spacing must not become
    a sign of PHI, only the context is (an earlier version that spaced PHI alone taught the model
    to tag spaced numbers: docs/training.md, "Training noise", has the measurement)."""
    rw = Rewrite(text)
    mask = _inside(spans)
    spaced: set[int] = set()  # offsets of the characters of the numbers spaced out
    for m in _NUMBER_CHUNK.finditer(text):
        if rng.random() >= digits:
            continue
        spaced.update(range(m.start(), m.end()))
        for i in range(m.start(), m.end() - 1):
            if text[i].isdigit() or text[i + 1].isdigit():
                rw.insert(i + 1, " ")
    for i in range(1, len(text) - 1):  # "913 90" -> "9 1 3  9 0": the gap a scan shows
        if text[i] == " " and i - 1 in spaced and i + 1 in spaced:
            rw.insert(i, " ")
    if rng.random() < letter_o:
        for i, c in enumerate(text):
            if c == "0":
                rw.replace(i, "O")
    for start, end, label in spans:
        if label == "EMAIL" and rng.random() < email:
            for i in range(start + 1, end - 1):
                if text[i] == "@" or (text[i] == "." and rng.random() < 0.5):
                    rw.insert(i, " ")
                    rw.insert(i + 1, " ")
    if rng.random() < wide_gaps:
        for i, c in enumerate(text):
            if c == " " and 0 < i < len(text) - 1 and not text[i - 1].isspace() and not text[i + 1].isspace() \
                    and rng.random() < 0.5:
                rw.insert(i, " ")
    if rng.random() < punct_space:
        for i, c in enumerate(text):
            if c in _PUNCT_BEFORE_SPACE and 0 < i and text[i - 1].isalnum() and not _in(mask, i) \
                    and (i + 1 == len(text) or text[i + 1].isspace()) and rng.random() < 0.5:
                rw.insert(i, " ")
    return rw.apply(spans)


# --------------------------------------------------------------------------- broken lines
# "Label: value": a header field's label (a few words, no digits) and its colon
_FIELD = re.compile(r"(?m)(?:^|(?<=\| ))[ \t]*([^\W\d_][^:\n\d|]{0,30}?)[ \t]*:([ \t]+)(?=\S)")


def broken_lines(text: str, spans: Sequence[SpanT], rng: Rng, *, min_width: int = 30, max_width: int = 80,
                 field_break: float = 0.5, hyphenate: float = 0.3) -> tuple[str, list[SpanT]]:
    """A note hard-wrapped at a width drawn from [min_width, max_width]: a space outside PHI where a
    line passes the width becomes a line break, so sentences break in the middle; with chance
    `field_break` each header field breaks between its label and its value ("Nombre:\\nAna Gil"); with
    chance `hyphenate` a long word (8+ letters, outside PHI) at the break is cut with "-\\n" instead.
    PHI itself is never broken: the runtime's merger cuts entities at line breaks."""
    rw = Rewrite(text)
    mask = _inside(spans)
    breaks: set[int] = set()
    for m in _FIELD.finditer(text):
        gap = m.start(2)
        if not _in(mask, m.start(1)) and not _in(mask, gap) and rng.random() < field_break:
            breaks.add(gap)
    width = rng.randint(min_width, max_width)
    split_words = rng.random() < hyphenate
    column = 0
    last_space = -1
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\n" or i in breaks:
            column, last_space = 0, -1
            i += 1
            continue
        if c == " " and not _in(mask, i):
            last_space = i
        column += 1
        if column > width:
            if split_words and i >= 4 and text[i - 4:i + 4].isalpha() and len(text) >= i + 4 \
                    and not any(_in(mask, j) for j in range(i - 4, i + 4)):
                rw.insert(i, "-\n")  # "ingre-\nsa": hyphenated at the width, inside a plain word
                column = 1
                last_space = -1
            elif last_space >= 0:
                breaks.add(last_space)
                column = i - last_space
                last_space = -1
        i += 1
    for b in breaks:
        rw.replace(b, "\n")
    return rw.apply(spans)


# --------------------------------------------------------------------------- header fields into prose
_HEADER_LINE = re.compile(r"^([ \t]*)([^\W\d_][^:\n]{0,40}?)[ \t]*:[ \t]*(?=\S)", re.MULTILINE)


def header_prose(text: str, spans: Sequence[SpanT], rng: Rng, *, join: float = 0.8) -> tuple[str, list[SpanT]]:
    """Header fields run into prose. A header line is "Label: value" with PHI in its value (the label
    holds no PHI and no digit); its colon goes, its label is lower-cased ("NOMBRE: Ana Gil" -> "nombre
    Ana Gil"), and with chance `join` a run of such lines becomes one line, each field after a comma
    ("nombre Ana Gil, fecha 3/4/21"), so the values lose the line and the colon that announce them."""
    rw = Rewrite(text)
    mask = _inside(spans)
    starts = sorted(s for s, _, _ in spans)
    header_lines: list[tuple[int, int]] = []  # (line start, line end) of each header line changed
    for m in _HEADER_LINE.finditer(text):
        label_start, label_end = m.start(2), m.end(2)
        line_end = text.find("\n", m.end())
        line_end = len(text) if line_end < 0 else line_end
        value_start = m.end()
        if any(_in(mask, j) for j in range(label_start, label_end)) or any(ch.isdigit() for ch in m.group(2)):
            continue
        if not any(value_start <= s < line_end for s in starts):
            continue
        colon = text.index(":", label_end)
        rw.replace(colon, "")
        for j in range(label_start, label_end):
            rw.replace(j, _lower_char(text[j]))
        # the label ends where the colon was: keep one space between it and the value
        if colon + 1 < len(text) and text[colon + 1] not in " \t":
            rw.insert(colon + 1, " ")
        header_lines.append((m.start(), line_end))
    if header_lines and rng.random() < join:
        for (_, end), (next_start, _) in zip(header_lines, header_lines[1:]):
            if end < len(text) and text[end] == "\n" and next_start == end + 1:
                rw.replace(end, ", ")
    return rw.apply(spans)


# --------------------------------------------------------------------------- names as initials, in lists
_NAME_WORD = re.compile(r"[^\W\d_]+(?:[-'][^\W\d_]+)*")


def _initials(word: str) -> str:
    """'Carlos' -> 'C.', 'Jean-Pierre' -> 'J.-P.'"""
    return "-".join(part[0].upper() + "." for part in word.split("-") if part)


def _name_parts(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """(start, end) of each word of the name text[start:end]."""
    return [(start + m.start(), start + m.end()) for m in _NAME_WORD.finditer(text[start:end])]


def name_lists(text: str, spans: Sequence[SpanT], rng: Rng, *, initials: float = 0.5, upper_surname: float = 0.3,
               staff_list: float = 0.5, max_list: int = 5) -> tuple[str, list[SpanT]]:
    """Names written as initials and surnames. Each name of two or more words (PERSON) has, with
    chance `initials`, its first word cut to an initial ("Carlos Dupont Ruiz" -> "C. Dupont Ruiz",
    "Jean-Pierre Martin" -> "J.-P. Martin"; two given names with 4+ words: "J.R. Nadal Cortina") and,
    with chance `upper_surname`, the rest in capitals; with chance `staff_list` a line listing up to
    `max_list` of the note's names in that form, separated by spaces only, ends the note (a team list:
    "C. Dupont D. MARTIN P.E. Leroy")."""
    rw = Rewrite(text)
    short_forms: list[str] = []
    for start, end, label in spans:
        if label != "PERSON":
            continue
        words = _name_parts(text, start, end)
        if len(words) < 2 or not text[words[0][0]].isupper():
            continue
        n_given = 2 if len(words) >= 4 and text[words[1][0]].isupper() and rng.random() < 0.5 else 1
        given = words[:n_given]
        rest = words[n_given:]
        form_given = "".join(_initials(text[s:e]) for s, e in given)
        form_rest = " ".join(text[s:e] for s, e in rest)
        upper = rng.random() < upper_surname
        if upper:
            form_rest = "".join(_upper_char(c) for c in form_rest)
        short_forms.append(f"{form_given} {form_rest}")
        if rng.random() < initials:
            # "Jose Ramón Nadal" -> "J.R. Nadal": the given names' characters give way to the initials
            for k, (s, e) in enumerate(given):
                rw.replace(s, _initials(text[s:e]))
                for j in range(s + 1, e):
                    rw.replace(j, "")
                if k + 1 < len(given):  # the gap between two given names goes: "J.R."
                    for j in range(e, given[k + 1][0]):
                        rw.replace(j, "")
            if upper:
                for s, e in rest:
                    for j in range(s, e):
                        rw.replace(j, _upper_char(text[j]))
    new_text, new_spans = rw.apply(spans)
    distinct = list(dict.fromkeys(short_forms))
    if len(distinct) >= 2 and rng.random() < staff_list:
        listed = distinct[:max_list]
        line_start = len(new_text) + 1
        new_text += "\n" + " ".join(listed)
        pos = line_start
        for form in listed:
            new_spans.append((pos, pos + len(form), "PERSON"))
            pos += len(form) + 1
    return new_text, new_spans


# --------------------------------------------------------------------------- names in lower case
_TITLE_BEFORE = re.compile(r"([^\W\d_]{1,5}\.?)[ \t]+$")


def lower_names(text: str, spans: Sequence[SpanT], rng: Rng, *, share: float = 0.7, whole_line: float = 0.3
                ) -> tuple[str, list[SpanT]]:
    """Names in lower case, as in quick nurse notes: each PERSON with chance `share` is lower-cased,
    with the short word before it when that looks like a title ("Dra. Beltrán" -> "dra. beltrán"); with
    chance `whole_line` its whole line is lower-cased too. Characters whose lower case is not one
    character stay as they are (offsets do not move)."""
    rw = Rewrite(text)
    for start, end, label in spans:
        if label != "PERSON" or rng.random() >= share:
            continue
        lo, hi = start, end
        if rng.random() < whole_line:
            lo = text.rfind("\n", 0, start) + 1
            nl = text.find("\n", end)
            hi = len(text) if nl < 0 else nl
        else:
            title = _TITLE_BEFORE.search(text, max(0, start - 8), start)
            if title and title.group(1)[0].isupper():
                lo = title.start(1)
        for j in range(lo, hi):
            rw.replace(j, _lower_char(text[j]))
    return rw.apply(spans)


# --------------------------------------------------------------------------- spaCy glue
Transform = Callable[..., "tuple[str, list[SpanT]]"]
# The factory's transforms by the name of their registered augmenter
TRANSFORMS: dict[str, Transform] = {
    "deid.scan_spacing.v1": scan_spacing,
    "deid.broken_lines.v1": broken_lines,
    "deid.header_prose.v1": header_prose,
    "deid.name_lists.v1": name_lists,
    "deid.lower_names.v1": lower_names,
}


def augment_example(nlp, example, transform: Transform, rng: Rng = random):
    """The example with its text changed by `transform` and its entities moved along, or the
    example itself when nothing changed or the new spans would not be exact (see the module doc)."""
    from spacy.training import Example

    reference = example.reference
    spans = [(e.start_char, e.end_char, e.label_) for e in reference.ents]
    new_text, new_spans = transform(reference.text, spans, rng)
    if new_text == reference.text or not spans_ok(new_text, new_spans):
        return example
    gold = nlp.make_doc(new_text)
    ents = [gold.char_span(s, e, label=label) for s, e, label in new_spans]
    if any(ent is None for ent in ents):  # a span off the tokenizer's boundaries: not exact, not used
        return example
    gold.ents = ents  # every other token is outside an entity, as in the corpus' DocBins
    return Example(nlp.make_doc(new_text), gold)


def _augmenter(nlp, example, *, transform: Transform, level: float) -> Iterator:
    if random.random() >= level:
        yield example
    else:
        yield augment_example(nlp, example, transform, random)


def _chain(nlp, example, *, augmenters: tuple) -> Iterator:
    examples = [example]
    for augmenter in augmenters:
        examples = [out for ex in examples for out in augmenter(nlp, ex)]
    yield from examples


def _register() -> None:
    from spacy.util import registry

    def make(transform: Transform):
        def create(level: float) -> Callable:
            return partial(_augmenter, transform=transform, level=float(level))
        create.__doc__ = f"spaCy augmenter around {transform.__name__}: `level` is the share of training examples it changes per epoch."
        return create

    for name, transform in TRANSFORMS.items():
        if name not in registry.augmenters:
            registry.augmenters.register(name, func=make(transform))

    if "deid.chain.v1" not in registry.augmenters:
        @registry.augmenters("deid.chain.v1")
        def create_chain(*augmenters: Callable) -> Callable:
            """The augmenters one after the other: each sees what the ones before it yielded."""
            return partial(_chain, augmenters=augmenters)


_register()
