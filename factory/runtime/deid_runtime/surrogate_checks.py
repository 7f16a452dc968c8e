"""Is a span surely of its label's kind? Surrogate mode asks before it replaces one.

A surrogate is a plausible value: a reader cannot tell it from the original. Replacing a dose
that a detector took for a name ("10 mg/24h" -> "10 florentina/24o") or for an age ("40 mg/12h" ->
"41 mg/14h") corrupts the data without a trace. So a span is replaced only when its surface passes
the check of its label; one that fails is written as a visible tag ("[PERSON?]") and counted
(redact.py). The checks look at the surface alone, with the locale's words (the clinical lexicon
of its regex pack: units, dose forms, lab tests, drugs, and checks.yml: street words, age units,
number words) and its date formats. They are plain functions, one per label:

  PERSON        letters; no digit, no clinical fact, no unit/drug/lab word of the locale
  DATE          a date of the locale (shift_date can move it, or it names a day, month or year),
                not a duration or a schedule ("en 3 meses", "c/12h", "1-0-1")
  AGE           a number (or number words) with at most an age unit ("71 años", "8 a", "ocho años")
  PHONE         digits (6 to 15) with the separators phones are written with (a label word of the
                locale at either end let through: "Tfno.+34 945 007 000")
  ID            letters and digits of an identifier, at least one digit, no clinical fact
  EMAIL, URL, IP  their form
  ADDRESS       a street word (or a word ending with one: "Hauptstraße", or a mark: "s/n"), or a
                house number with a street name; no clinical fact
  LOCATION, ORGANIZATION, PROFESSION  letters, not only lexicon words; no clinical fact (a
                LOCATION's digits only as a postal code)

A check never makes redaction weaker: a span that fails is still hidden, only not by a value that
looks real.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import Callable

from .clinical import ClinicalLexicon
from .surrogates import dates
from .surrogates.locale import LocaleData
from .text import fold

_WORD = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*")
_TOKEN = re.compile(r"[^\W_]+")  # letters and digits
_DIGIT = re.compile(r"\d")
_PHONE = re.compile(r"^(?=[^+]*\+?[^+]*$)[\d\s().\-/+]+$")  # at most one "+"
_ID = re.compile(r"^[\w.\-/ ]+$")
_EMAIL = re.compile(r"^[\w.+-]+@[A-Za-z0-9](?:[A-Za-z0-9-]|\.(?=[A-Za-z0-9]))*\.[A-Za-z]{2,24}$")
_URL = re.compile(r"^(?:https?://|www\.)\S+$|^[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,24}(?:/\S*)?$", re.IGNORECASE)
_AGE_NUMBER = re.compile(r"^\d{1,3}(?:[.,]5)?$")


@dataclass(frozen=True)
class CheckWords:
    """What the checks of one document read: its locale's clinical lexicon (None when no pack of
    that language is loaded: the checks then use the forms alone) and its surrogate locale."""

    lexicon: ClinicalLexicon | None
    locale: LocaleData

    def has_fact(self, surface: str) -> bool:
        return self.lexicon is not None and bool(self.lexicon.find(surface))

    def lexicon_word(self, word: str) -> bool:
        return self.lexicon is not None and self.lexicon.is_lexicon_word(word)

    def words(self, name: str) -> frozenset[str]:
        return self.lexicon.words(name) if self.lexicon is not None else frozenset()


def _words(surface: str) -> list[str]:
    return _WORD.findall(surface)


def _letters_not_lexicon(surface: str, words: CheckWords) -> bool:
    """Some word of letters, not every word a unit/drug/lab word, no clinical fact."""
    found = _words(surface)
    return bool(found) and not all(words.lexicon_word(w) for w in found) and not words.has_fact(surface)


# ------------------------------------------------------------------------------ one check per label
def person(surface: str, words: CheckWords) -> bool:
    found = _words(surface)
    return (bool(found) and not _DIGIT.search(surface) and not any(words.lexicon_word(w) for w in found)
            and not words.has_fact(surface))


def date(surface: str, words: CheckWords) -> bool:
    if words.has_fact(surface):
        return False
    if dates.shift_date(surface, 1, words.locale) is not None:
        return True
    return dates.date_parts(surface, words.locale)["parts"] in ("dmy", "dm", "my", "m", "y", "w")


def age(surface: str, words: CheckWords) -> bool:
    tokens = [fold(t) for t in _TOKEN.findall(surface)]
    units, numbers = words.words("age_units"), words.words("number_words")
    if not tokens or words.has_fact(surface):
        return False
    if tokens[-1] in units and len(tokens) > 1:
        while len(tokens) > 1 and tokens[-1] in units:  # "54-year-old": two unit words
            tokens = tokens[:-1]
    elif len(tokens) > 1 and any(t.isdigit() for t in tokens[:-1]) and tokens[-1].isalpha() and not numbers:
        tokens = tokens[:-1]  # no locale words: one trailing word after a number ("54 ans")
    if len(tokens) == 1 and _AGE_NUMBER.match(tokens[0]):
        return int(tokens[0].split(".")[0].split(",")[0]) <= 130
    return bool(numbers) and all(t in numbers for t in tokens)


def phone(surface: str, words: CheckWords) -> bool:
    core = _strip_labels(surface, words.words("phone_labels"))
    digits = sum(c.isdigit() for c in core)
    return bool(_PHONE.match(core)) and 6 <= digits <= 15


def _strip_labels(surface: str, labels: frozenset[str]) -> str:
    """The surface without the label words a span caught with a phone ("Tfno.+34 945 007 000",
    "945 007 000 E-mail"): only words of the locale's `phone_labels`, at either end."""
    core = surface.strip()
    while labels:
        head = re.match(r"^([^\W\d_]+(?:-[^\W\d_]+)?)\.?:?\s*", core)
        tail = re.search(r"\s+([^\W\d_]+(?:-[^\W\d_]+)?)\.?:?$", core)
        if head and fold(head.group(1)) in labels:
            core = core[head.end():]
        elif tail and fold(tail.group(1)) in labels:
            core = core[:tail.start()]
        else:
            break
    return core.strip()


def identifier(surface: str, words: CheckWords) -> bool:
    s = surface.strip()
    return (bool(_ID.match(s)) and bool(_DIGIT.search(s)) and sum(c.isalnum() for c in s) >= 4
            and not words.has_fact(s))


def email(surface: str, words: CheckWords) -> bool:
    return bool(_EMAIL.match(surface.strip()))


def url(surface: str, words: CheckWords) -> bool:
    return bool(_URL.match(surface.strip()))


def ip(surface: str, words: CheckWords) -> bool:
    try:
        ipaddress.ip_address(surface.strip())
    except ValueError:
        return False
    return True


def address(surface: str, words: CheckWords) -> bool:
    if words.has_fact(surface):
        return False
    folded = [fold(t) for t in _TOKEN.findall(surface)]
    street, suffixes = words.words("street_words"), words.words("street_suffixes")
    marks = words.words("street_marks")  # written with punctuation: "s/n" (sin número), "c/" (calle)
    lowered = fold(surface)
    if any(t in street or any(len(t) > len(x) and t.endswith(x) for x in suffixes) for t in folded) \
            or any(re.search(rf"(?<!\w){re.escape(m)}" + (r"(?!\w)" if m[-1:].isalnum() else ""), lowered) for m in marks):
        return True
    # no street word: a house number with a street name ("Mayor 5", "12 Rue Victor Hugo")
    has_number = any(t.isdigit() for t in folded)
    return has_number and _letters_not_lexicon(surface, words)


def location(surface: str, words: CheckWords) -> bool:
    if words.has_fact(surface):
        return False
    rest = _without_postal_codes(surface.strip(), words.locale)
    if rest is None:
        return False
    return not rest.strip(" ,.-") or (not _DIGIT.search(rest) and _letters_not_lexicon(rest, words))


def _without_postal_codes(surface: str, locale: LocaleData) -> str | None:
    """The surface with its postal codes (the locale's form, one word or two: "1017 GA") taken out;
    None when no postal code is found and yet digits are there."""
    parts = surface.split()
    kept, i, found = [], 0, False
    while i < len(parts):
        one, two = parts[i].strip(",;."), " ".join(parts[i:i + 2]).strip(",;.")
        if i + 1 < len(parts) and locale.postal_code.match(two):
            i, found = i + 2, True
        elif locale.postal_code.match(one) or (one.isdigit() and 4 <= len(one) <= 6):
            i, found = i + 1, True
        else:
            kept.append(parts[i])
            i += 1
    rest = " ".join(kept)
    return rest if found or not _DIGIT.search(rest) else None


def organization(surface: str, words: CheckWords) -> bool:
    return _letters_not_lexicon(surface, words)


def profession(surface: str, words: CheckWords) -> bool:
    return not _DIGIT.search(surface) and _letters_not_lexicon(surface, words)


CHECKS: dict[str, Callable[[str, CheckWords], bool]] = {
    "PERSON": person, "DATE": date, "AGE": age, "PHONE": phone, "ID": identifier, "EMAIL": email, "URL": url,
    "IP": ip, "ADDRESS": address, "LOCATION": location, "ORGANIZATION": organization, "PROFESSION": profession,
}


def surely_of_kind(label: str, surface: str, words: CheckWords) -> bool:
    """Whether `surface` passes the check of `label` (a label without a check never does)."""
    check = CHECKS.get(label)
    return check is not None and check(surface, words)
