"""Identifier surrogates that pass their own check digits, from the registry of deid_runtime.ids.

Two ways in:
  like(value, rng, locale)   redaction: a new identifier of the same kind in the same layout
                             ("Y-0000000-Z" -> another valid NIE, dashes kept); a value no
                             identifier of the locale accepts keeps its form (digits -> digits).
  generate_id(rng, spec)     the training corpus: an identifier drawn for a role (national id,
                             insurance, licence...) of the target locale, as a spec of
                             `ids.roles` in languages/<lc>/surrogates.yml says:
      kind      a validator name ("fr_nir", "es_nass"...), "iban" (with `country`), or "pattern"
      format    "compact": the value without separators; otherwise the identifier's usual layout
      layouts   a list of written layouts to draw from ('#' is one character of the compact value)
      patterns  for "pattern" (numbers without check digits): '#' digit, '@' digit 1-9, 'L' letter
Every value a check-digit kind produces is checked again by the validator the regex packs use.
"""

from __future__ import annotations

import random
import re
from typing import Any, Callable

from .. import ids
from ..validators import VALIDATORS, validator_name
from .forms import fill_pattern, reshape
from .locale import LocaleData, fold

Generator = Callable[[random.Random, dict[str, Any]], str]
_MARK = re.compile(r"^\s*([^\W\d_]+\.?[º°ª]?\.?)\s*(?=\d|[^\W\d_]*\d)")
MAX_DRAWS = 200  # a value two kinds accept: draws until one passes both (1 in 11 for an NPI and an NHS number)


def like(value: str, rng: random.Random, locale: LocaleData, person: dict[str, Any] | None = None) -> str:
    """A surrogate of an identifier found in a text of `locale`: same kind, same layout, valid
    check digits; an IBAN of any country stays an IBAN of that country. A value that two kinds
    accept (a 9-digit Luhn number is an ADELI and a FINESS) gets a surrogate that both accept.
    A number mark the span caught ("nº 282812345": formats.yml `number_marks`) stays as written.
    `person`: what the document says of the person an identifier encodes ({"sex": "f", "birth":
    (year, month)}, redact.py): an identifier that encodes them (the NIR: `draw_for`) agrees.
    A value without a digit is no identifier: ValueError (redaction writes "[ID?]" for it)."""
    if not any(c.isdigit() for c in value):
        raise ValueError("an identifier has digits; this value has none")
    mark = number_mark(value, locale)
    if mark:
        return value[:mark] + like(value[mark:], rng, locale, person)
    candidates = ids.keys(locale.formats.get("identifiers") or [])
    iban = ids.strip_separators(value)[:2].lower() + ".iban"
    if iban in ids.keys() and iban not in candidates:
        candidates.append(iban)
    accepting = [key for key in candidates if ids.get(key).is_valid(value)]
    if accepting and person and hasattr(ids.get(accepting[0]), "draw_for"):
        new = _like_person(value, rng, ids.get(accepting[0]), person)
        if new is not None:
            return new
    if accepting:
        new = None
        for _ in range(MAX_DRAWS):
            new = ids.surrogate_like(value, rng, accepting[:1])
            if all(ids.get(key).is_valid(new) for key in accepting[1:]):
                return new
        return new
    for _ in range(20):  # no check digits to keep: same form, other characters
        new = reshape(value, rng)
        if new != value:
            return new
    return new


def number_mark(value: str, locale: LocaleData) -> int:
    """How many characters of `value` are a number mark and the space after it ("nº ", "N° ",
    "nr. "): words of formats.yml's `number_marks` at its start, compared case- and accent-folded;
    0 when none is."""
    marks = {fold(str(m)).rstrip(".") for m in locale.formats.get("number_marks") or []}
    m = _MARK.match(value)
    if m and marks and fold(m.group(1)).rstrip(".") in marks:
        return m.end()
    return 0


def _like_person(value: str, rng: random.Random, identifier: ids.Identifier, person: dict[str, Any]) -> str | None:
    """A value of `identifier` for the person (`draw_for(rng, sex=..., birth=...)`), in the layout of
    `value` and different from it; None where no draw fits the layout."""
    pattern, original = ids.layout_of(value), identifier.compact(value)
    for _ in range(MAX_DRAWS):
        new = identifier.draw_for(rng, sex=person.get("sex"), birth=person.get("birth"))
        if new != original and identifier.is_valid(new) and len(new) == pattern.count("#"):
            return ids.layout(new, pattern)
    return None


def written(identifier: ids.Identifier, rng: random.Random, spec: dict[str, Any]) -> str:
    """A new value of `identifier`, written as the spec asks."""
    value = identifier.generate(rng)
    if spec.get("layouts"):
        return ids.layout(value, rng.choice(spec["layouts"]))
    if spec.get("format") == "compact":
        return value
    return identifier.written(value)


def _registry_generator(key: str) -> Generator:
    identifier = ids.get(key)
    return lambda rng, spec: written(identifier, rng, spec)


def iban(rng: random.Random, spec: dict[str, Any]) -> str:
    if not spec.get("country"):
        raise ValueError("an `iban` identifier spec needs the `country` of its IBAN (e.g. country: FR)")
    country = str(spec["country"]).lower()
    try:
        identifier = ids.get(f"{country}.iban")
    except KeyError:
        known = ", ".join(k.split(".")[0].upper() for k in ids.keys() if k.endswith(".iban"))
        raise ValueError(f"no IBAN generator for country {country.upper()!r}; known: {known}") from None
    return written(identifier, rng, spec)


def pattern(rng: random.Random, spec: dict[str, Any]) -> str:
    return fill_pattern(rng, rng.choice(spec.get("patterns") or ["########"]))


GENERATORS: dict[str, Generator] = {validator_name(key): _registry_generator(key) for key in ids.keys()}
GENERATORS.update({"iban": iban, "pattern": pattern})


def validator_for(kind: str) -> Callable[[str], bool] | None:
    """The validator of the regex packs that must accept a generated `kind` (None: plain numbers)."""
    if kind == "pattern":
        return None
    return VALIDATORS.get(kind)


def generate_id(rng: random.Random, spec: dict[str, Any]) -> tuple[str, str, bool | None]:
    """(value, kind, validated): validated is True when a check-digit validator accepted it."""
    kind = str(spec.get("kind", "pattern"))
    if kind not in GENERATORS:
        raise ValueError(f"unknown identifier kind {kind!r}; known: {', '.join(sorted(GENERATORS))}")
    value = GENERATORS[kind](rng, spec)
    check = validator_for(kind)
    if check is None:
        return value, kind, None
    if not check(value):  # a generator bug must never produce a silently invalid identifier
        raise AssertionError(f"generated {kind} identifier fails its validator")
    return value, kind, True
