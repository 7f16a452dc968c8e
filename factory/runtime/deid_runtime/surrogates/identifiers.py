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
from typing import Any, Callable

from .. import ids
from ..validators import VALIDATORS, validator_name
from .forms import fill_pattern, reshape
from .locale import Locale

Generator = Callable[[random.Random, dict[str, Any]], str]
MAX_DRAWS = 200  # a value two kinds accept: draws until one passes both (1 in 11 for an NPI and an NHS number)


def like(value: str, rng: random.Random, locale: Locale) -> str:
    """A surrogate of an identifier found in a text of `locale`: same kind, same layout, valid
    check digits; an IBAN of any country stays an IBAN of that country. A value that two kinds
    accept (a 9-digit Luhn number is an ADELI and a FINESS) gets a surrogate that both accept."""
    candidates = ids.keys(locale.formats.get("identifiers") or [])
    iban = ids.strip_separators(value)[:2].lower() + ".iban"
    if iban in ids.keys() and iban not in candidates:
        candidates.append(iban)
    accepting = [key for key in candidates if ids.get(key).is_valid(value)]
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
