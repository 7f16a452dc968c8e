"""Identifiers of the target locale that pass their check digits.

Every identifier comes from the registry of deid_factory.runtime.ids, the same code the regex packs
validate with (runtime/validators.py), so a surrogate NIR, RPPS, DNI... is exactly what deid_<lang>
must recognise; each value is checked again by that validator before it is used. Which kinds are
drawn for which role (national id, insurance, professional licence, record number...) is data:
`ids.roles` in languages/<lc>/surrogates.yml, roles of source kinds in corpora/surrogates/id_roles.yml.

An entry of `ids.roles`:
  kind      a validator name ("fr_nir", "es_nass"...), "iban" (with `country`), or "pattern"
  format    "compact": the value without separators; otherwise the identifier's usual layout
  layouts   a list of written layouts to draw from ('#' is one character of the compact value)
  patterns  for "pattern" (numbers without check digits): '#' digit, '@' digit 1-9, 'L' letter
"""

from __future__ import annotations

import random
import string
from typing import Any, Callable

from ..runtime import ids
from ..runtime.validators import VALIDATORS, validator_name

Generator = Callable[[random.Random, dict[str, Any]], str]


def fill_pattern(rng: random.Random, pattern: str) -> str:
    """'#' -> digit, '@' -> digit 1-9, 'L' -> capital letter; anything else is kept."""
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
    country = str(spec.get("country", "FR")).lower()
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
