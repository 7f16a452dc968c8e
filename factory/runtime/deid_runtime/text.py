"""The text conventions every stage shares, the factory's and the pipelines': one accent- and
case-insensitive folding, one set of characters a PHI span never starts or ends with (and the one
trim by it), and one way to replace spans of a text and know where their replacements landed."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

# Spaces and punctuation: a span never starts or ends with one. The regex pack trims its matches by
# them (regex_pack.trim), redaction the values it replaces (redact.py), and the training records
# their spans (deid_factory.records.trim_span), so a model learns the boundaries it is scored on.
BOUNDARY_CHARS = " \t\r\n.,;:!?()[]{}<>\"'«»“”‘’¿¡/\\-–—*_|="


def fold(text: str) -> str:
    """Case- and accent-insensitive form: 'GARCÍA' and 'garcia' fold alike."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch)).casefold()


# A bracket at an edge of a span stays when its partner is inside the span and the pair does not
# wrap the whole span: "(+34) 913 748 402" keeps its "(", "Hospital (HUCA)" its ")", "(Madrid)" loses both.
_PARTNERS = {"(": ")", "[": "]"}
_CLOSING = {v: k for k, v in _PARTNERS.items()}


def trim_span(text: str, start: int, end: int) -> tuple[int, int]:
    """Shrink [start, end) so it neither starts nor ends with a character of BOUNDARY_CHARS, except
    a bracket whose partner is inside the span ("(+34) 913 748 402": the annotation conventions of
    every corpus and the regex packs keep it). Each pass looks each partner up once per side, not at
    every step (a match may end in thousands of brackets, tests/runtime/test_regex_properties.py); a new
    pass runs only when the other side moved (" (Madrid) ": the spaces go, then the wrapping pair)."""
    while True:
        before = (start, end)
        start = _trim_start(text, start, end)
        end = _trim_end(text, start, end)
        if (start, end) == before:
            return start, end


def _trim_start(text: str, start: int, end: int) -> int:
    partner_at: dict[str, int] = {}  # opening bracket -> the last index of its partner before the last character
    while start < end:
        ch = text[start]
        if ch in _PARTNERS:
            if ch not in partner_at:
                partner_at[ch] = text.rfind(_PARTNERS[ch], start + 1, end - 1)
            if partner_at[ch] > start:
                break
        if ch not in BOUNDARY_CHARS:
            break
        start += 1
    return start


def _trim_end(text: str, start: int, end: int) -> int:
    partner_at: dict[str, int] = {}  # closing bracket -> the first index of its partner after the first character
    while end > start:
        ch = text[end - 1]
        if ch in _CLOSING:
            if ch not in partner_at:
                partner_at[ch] = text.find(_CLOSING[ch], start + 1, end)
            if 0 <= partner_at[ch] < end - 1:
                break
        if ch not in BOUNDARY_CHARS:
            break
        end -= 1
    return end


def replace_spans(text: str, spans: Sequence[tuple[int, int]], replacements: Sequence[str],
                  trim: bool = False) -> tuple[str, list[tuple[int, int]]]:
    """The text with each span (start, end) -- sorted, not overlapping -- replaced by the string at
    the same index of `replacements`, and where each replacement lies in the new text. `trim`: that
    place leaves out the punctuation a replacement starts or ends with ("Transportes Gil S.A." is
    written whole, its span ends before the last dot), as spans everywhere in the project do.
    Placeholders, surrogates and redaction all rewrite text through this one function."""
    pieces: list[str] = []
    placed: list[tuple[int, int]] = []
    cursor = length = 0  # cursor: in the old text; length: of the new text so far
    for (start, end), value in zip(spans, replacements, strict=True):
        pieces.append(text[cursor:start])
        length += start - cursor
        lead, tail = trim_span(value, 0, len(value)) if trim else (0, len(value))
        placed.append((length + lead, length + tail))
        pieces.append(value)
        length += len(value)
        cursor = end
    pieces.append(text[cursor:])
    return "".join(pieces), placed
