"""The written form of a surrogate: casing, digit patterns, plain-ASCII slugs."""

from __future__ import annotations

import random
import re
import string

from .locale import fold

_WORD = re.compile(r"\w+")
CASINGS = ("title", "upper", "lower")


def casing_of(text: str) -> str:
    """'upper', 'lower', 'title' (every word capitalised), 'mixed', or 'none' (no letters)."""
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return "none"
    if all(c.isupper() for c in letters):
        return "upper" if len(letters) > 1 else "title"  # one capital letter ("A.") is an initial
    if all(c.islower() for c in letters):
        return "lower"
    words = [w for w in _WORD.findall(text) if w[0].isalpha()]
    if words and all(w[0].isupper() and (len(w) == 1 or not w[1:].isupper()) for w in words):
        return "title"
    return "mixed"


def apply_casing(text: str, style: str) -> str:
    """Write `text` (generated in its natural case) in `style`; title and mixed leave it as it is."""
    if style == "upper":
        return text.upper()
    if style == "lower":
        return text.lower()
    return text


def match_casing(original: str, surrogate: str) -> str:
    """The surrogate in the casing of the original: 'ESPAÑA' -> 'FRANCIA', 'lugo' -> 'burgos'."""
    return apply_casing(surrogate, casing_of(original))


def fill_pattern(rng: random.Random, pattern: str, **slots: str) -> str:
    """'#' -> digit, '@' -> digit 1-9, 'L' -> capital letter, {name} -> slots[name]; the rest is kept."""
    for name, value in slots.items():
        pattern = pattern.replace("{" + name + "}", value)
    out = []
    for ch in pattern:
        if ch == "#":
            out.append(rng.choice(string.digits))
        elif ch == "@":
            out.append(rng.choice("123456789"))
        elif ch == "L":
            out.append(rng.choice("BCDFGHJKLMNPRSTVWXYZ"))
        else:
            out.append(ch)
    return "".join(out)


def ascii_slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "", fold(text))


def reshape(value: str, rng: random.Random) -> str:
    """Same form, new characters: digits -> digits, letters -> letters of the same case. The last
    resort for a value of no known kind (an identifier without check digits, a free-form number)."""
    out = []
    for ch in value:
        if ch.isdigit():
            out.append(rng.choice(string.digits))
        elif ch.isalpha():
            c = rng.choice(string.ascii_lowercase)
            out.append(c.upper() if ch.isupper() else c)
        else:
            out.append(ch)
    return "".join(out)
