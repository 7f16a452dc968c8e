"""The kind and form of a PHI string, kept without the string: `describe(label, text, locale)`.

The shape says what a surrogate must be to replace the string faithfully: a LOCATION is a country,
a region (province, state...), a city, a postal code or a postal code with its town; an
ORGANIZATION a hospital, a health centre, a university, a company or another institution; a DATE
has its parts (full, day-month, month-year, year, weekday); a PERSON its number of words, casing,
initials and sex; a PHONE its country calling code. What tells the kind is the locale's data
(gazetteers, trigger words before the span, keywords inside it). The placeholder stage stores the
shape in place of the original (training); redaction computes it on the spot. A shape holds counts,
flags and kind names only, never the text.
"""

from __future__ import annotations

import re
from typing import Any

from .. import ids
from .dates import date_parts
from .forms import casing_of
from .locale import LocaleData, common, contains, ends_with, fold, folded_words
from .names import sex_of

_WORD = re.compile(r"\w+")


def location_kind(text: str, locale: LocaleData, context: str = "") -> tuple[str, str]:
    """(kind, what told it): postal code by its form, then the words before the span ("País:"),
    then the gazetteers; a place nothing tells is a city."""
    stripped = text.strip()
    words = folded_words(stripped)
    if locale.postal_code.match(stripped) or (stripped.isdigit() and len(stripped) >= 4):
        return "postal_code", "form"
    first = stripped.split()[0] if stripped.split() else ""
    if any(c.isdigit() for c in first) and len(words) > 1 and locale.postal_code.match(first):
        return "postal_city", "form"
    before = folded_words(context)[-4:]
    for kind, phrases in (locale.triggers.get("location") or {}).items():
        if ends_with(before, phrases):
            return kind, "trigger"
    if words in locale.gazetteer:
        return locale.gazetteer[words], "gazetteer"
    return "city", "default"


def organization_kind(text: str, locale: LocaleData) -> tuple[str, str]:
    """(kind, what told it): the first kind of the locale whose keywords occur in the name."""
    words = folded_words(text)
    for kind, phrases in (locale.triggers.get("organization") or {}).items():
        if contains(words, phrases):
            return kind, "keyword"
    return common()["kinds"]["ORGANIZATION"][0], "default"


def calling_code(text: str) -> str | None:
    """The country calling code a phone number starts with ('+34 ...', '0034 ...'), else None."""
    s = text.strip()
    if s.startswith("+"):
        digits = re.sub(r"\D", "", s[1:])
    elif s.startswith("00"):
        digits = re.sub(r"\D", "", s[2:])
    else:
        return None
    codes = set(common()["calling_codes"])
    for n in (3, 2, 1):
        if digits[:n] in codes:
            return digits[:n]
    return digits[:2] or None


def describe(label: str, text: str, locale: LocaleData, context: str = "") -> dict[str, Any]:
    """The shape of a PHI string of `label` written in `locale` (`context`: the text just before
    it, read for trigger words and titles, never kept)."""
    words = _WORD.findall(text)
    digits = sum(c.isdigit() for c in text)
    letters = sum(c.isalpha() for c in text)
    if label == "PERSON":
        shape: dict[str, Any] = {"words": len(words), "casing": casing_of(text),
                                 "initials": sum(1 for w in words if len(w) == 1)}
        sex = sex_of(text, locale, context)
        if sex:
            shape["sex"] = sex
        return shape
    if label == "DATE":
        return date_parts(text, locale)
    if label == "AGE":
        return {"unit": letters > 0, "digits": digits}
    if label == "PHONE":
        code = calling_code(text)
        shape = {"international": code is not None, "digits": digits}
        if code is not None:
            # the locale's own code becomes the target's own code; a foreign one is kept
            shape["calling_code"] = "own" if code == locale.calling_code else code
        return shape
    if label == "ID":
        shape = {"digits": digits, "letters": letters}
        identifier = ids.identify(text, ids.keys(locale.formats.get("identifiers") or []))
        if identifier is not None:
            shape["id_kind"] = identifier.key
        return shape
    if label == "LOCATION":
        kind, source = location_kind(text, locale, context)
        return {"kind": kind, "kind_from": source, "words": len(words), "digits": digits, "casing": casing_of(text)}
    if label == "ORGANIZATION":
        kind, source = organization_kind(text, locale)
        return {"kind": kind, "kind_from": source, "words": len(words), "digits": digits, "casing": casing_of(text)}
    if label == "ADDRESS":
        return {**address_shape(text, locale), "casing": casing_of(text)}
    if label == "PROFESSION":
        shape = {"words": len(words), "casing": casing_of(text)}
        gender = profession_gender(text, locale)
        if gender:
            shape["gender"] = gender
        return shape
    return {}


def profession_gender(text: str, locale: LocaleData) -> str | None:
    """'f' or 'm', the grammatical gender of an occupation as written ("enfermera", "ostréicultrice"),
    so its surrogate agrees with the words around it ("ancienne ..."): the locale's list of
    professions first, then the endings of formats.yml's `profession_endings`, word by word (the
    first word that tells decides: "secrétaire médicale" -> f); None when nothing tells."""
    key = fold(text)
    if key in locale.profession_genders:
        return locale.profession_genders[key]
    for word in folded_words(text):
        if len(word) < 3:
            continue
        for ending, gender in locale.profession_endings:
            if word.endswith(ending):
                if gender:
                    return gender
                break  # an ending of both genders ("-ista"): the next word may tell
    return None


def address_shape(text: str, locale: LocaleData) -> dict[str, Any]:
    """A street address: whether it has a house number, and whether a postal code (with its town)
    follows the street."""
    words = _WORD.findall(text)
    postal = [w for w in words if locale.postal_code.match(w)]
    numbers = [w for w in words if w.isdigit() and w not in postal]
    return {"number": bool(numbers), "locality": bool(postal), "words": len(words),
            "digits": sum(c.isdigit() for c in text)}


# ----------------------------------------------------------------------------- parts of a place
_TOKEN_SPAN = re.compile(r"\S+")
_EDGE_PUNCT = ",;.:()[]"


def postal_code_at(text: str, locale: LocaleData) -> tuple[int, int] | None:
    """(start, end) of the last postal code written in `text` (the locale's form, one word or two:
    "1017 GA"; punctuation around it left out), or None."""
    tokens = []
    for m in _TOKEN_SPAN.finditer(text):
        word = m.group(0)
        lead = len(word) - len(word.lstrip(_EDGE_PUNCT))
        tail = len(word.rstrip(_EDGE_PUNCT))
        if tail > lead:
            tokens.append((m.start() + lead, m.start() + tail))
    found = None
    i = 0
    while i < len(tokens):
        if i + 1 < len(tokens) and locale.postal_code.match(text[tokens[i][0]:tokens[i + 1][1]]) \
                and not locale.postal_code.match(text[tokens[i][0]:tokens[i][1]]):
            found, i = (tokens[i][0], tokens[i + 1][1]), i + 2
            continue
        if locale.postal_code.match(text[tokens[i][0]:tokens[i][1]]):
            found = tokens[i]
        i += 1
    return found


def locality_parts(label: str, text: str, locale: LocaleData) -> tuple[tuple[int, int], tuple[int, int] | None] | None:
    """Where the postal code and the town of a LOCATION or an ADDRESS are: ((start, end) of the
    postal code, (start, end) of the town or None); None without a postal code, and for a LOCATION
    that holds more than a postal code, a town and a label before them (replaced whole). A
    LOCATION's town is the rest of it ("28009 Madrid", "Madrid (28009)"; none in "CP 28009": a label
    of short words before the code stays as written); an ADDRESS's is what follows its postal code
    ("C/ Mayor 5, 28009 Madrid"; none in "C/ Mayor 5, 28009")."""
    postal = postal_code_at(text, locale)
    if postal is None:
        return None
    if label == "ADDRESS":
        pieces = [(postal[1], len(text))]
    else:
        pieces = [(0, postal[0]), (postal[1], len(text))]
    towns = []
    for start, end in pieces:
        piece = text[start:end]
        core = piece.strip(" \t,;-–()")
        if core and any(c.isalpha() for c in core):
            offset = start + piece.index(core)
            towns.append((offset, offset + len(core)))
    if label != "ADDRESS" and towns and towns[0][1] <= postal[0] and _is_label(text[towns[0][0]:towns[0][1]]):
        towns = towns[1:]  # "CP 28009 Madrid": the label stays, the town is after the code
    if len(towns) > 1:
        return None
    return postal, (towns[0] if towns else None)


def _is_label(text: str) -> bool:
    """A label before a postal code ("CP", "C.P."): words of two letters at most."""
    return all(len(w) <= 2 for w in re.findall(r"[^\W\d_]+", text))


def street_word_at(text: str, locale: LocaleData) -> tuple[int, int] | None:
    """(start, end) of the street word of an address as written ("Place", "C/", "Avda.", the
    "straat" of "Kerkstraat"): the first word of formats.yml's `address.street_words` (or its
    `types`), else the first word ending with one of `address.street_suffixes`; None when none is."""
    formats = locale.formats.get("address") or {}
    words = {fold(str(w)).rstrip(".") for w in [*(formats.get("street_words") or []), *(formats.get("types") or [])]}
    suffixes = sorted({fold(str(s)) for s in formats.get("street_suffixes") or []}, key=len, reverse=True)
    for m in _TOKEN_SPAN.finditer(text):
        word = m.group(0).rstrip(",;:")
        if fold(word).rstrip(".") in words:
            return m.start(), m.start() + len(word)
    for m in re.finditer(r"[^\W\d_]+", text):
        key = fold(m.group(0))
        for suffix in suffixes:
            if len(key) > len(suffix) and key.endswith(suffix):
                return m.end() - len(suffix), m.end()
    return None


# ----------------------------------------------------------------------------- articles and heads
ELIDED = "elided"  # the group of formats.yml's `articles.before` that stands before a vowel
_LAST_WORD = re.compile(r"(?:^|[^\w'’])([^\W\d_]+(?:['’](?=$)|\s+$))$")


def article_before(context: str, locale: LocaleData) -> str | None:
    """The group (formats.yml `articles.before`: "m", "f", "elided"...) of the article written right
    before a span ("la " -> "f", "l'" -> "elided"), None when the word before is no article."""
    m = _LAST_WORD.search(context)
    if m is None:
        return None
    return locale.article_groups.get(fold(m.group(1).strip()).replace("’", "'"))


def head_of(name: str, locale: LocaleData) -> tuple[str | None, bool]:
    """(group, starts with a vowel) of an organisation's name: the group of its head, the first of
    its words that the locale's `articles.heads` list ("Clinique du Parc" -> "f"; the Dutch "Sint
    Antonius Ziekenhuis" -> "n"), None where none is listed; whether its first word, the one an
    article stands before, starts with a vowel."""
    words = folded_words(name)
    group = next((locale.head_groups[w] for w in words if w in locale.head_groups), None)
    return group, bool(words) and words[0][0] in locale.elision_vowels


def head_agrees(name: str, article: str | None, locale: LocaleData) -> bool:
    """Whether the organisation `name` reads right after an article of group `article` (None: any)."""
    if article is None:
        return True
    group, vowel = head_of(name, locale)
    if group is None:
        return False
    if article == ELIDED:
        return vowel
    return group == article and not (locale.elision_vowels and vowel)


def same_head(name: str, original: str, locale: LocaleData) -> bool:
    """Whether `name` reads after every article `original` reads after: its head is of the same
    group and, where the locale elides, starts with a vowel as the original's does."""
    group, vowel = head_of(original, locale)
    other, other_vowel = head_of(name, locale)
    return group is not None and other == group and (not locale.elision_vowels or other_vowel == vowel)
