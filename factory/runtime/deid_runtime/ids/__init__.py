"""National identifiers, one module per country, one registry: the only implementation of each
format, read by the regex packs' validators (deid_runtime/validators.py), the surrogate generators
(deid_runtime/surrogates/identifiers.py) and the synthetic corpus.

    from deid_runtime import ids
    nass = ids.get("es.nass")              # keys are "<country>.<name>"; ids.keys() lists them
    nass.is_valid("28/12345678/40")        # True
    value = nass.generate(random.Random(0))                 # compact: "281234567840"-like
    ids.layout(value, "## ######## ##")    # a written layout, given as data: "28 12345678 40"

Each identifier has `compact`, `is_valid`, `generate` and, where the format has check digits,
`calc_check_digit(s)`; python-stdnum does the work wherever it has the format (see core.py), and a
`role` (what it identifies: core.ROLES), which the training corpus uses to choose the target's
identifier for a source one.

A country is one module of this package, named by its ISO 3166 code (`fr.py`): everything about
its identifiers is there (the formats, their roles, and the few validator names the regex packs use
that are not one identifier, in its `VALIDATORS`). The modules are found by discovery, not listed:
adding a country is adding its module.
"""

from __future__ import annotations

import importlib
import pkgutil
import random
from types import ModuleType
from typing import Iterable

from stdnum import iban as std_iban

from .core import DEFAULT_ROLE, ROLES, Identifier, get, keys, layout, layout_of, strip_separators

__all__ = ["DEFAULT_ROLE", "ROLES", "Identifier", "get", "keys", "layout", "layout_of", "strip_separators", "identify",
           "surrogate_like", "iban_is_valid", "country_modules", "discover"]

# The modules of this package that are no country: what every identifier shares.
SHARED_MODULES = ("core", "iban")
_COUNTRIES: dict[str, ModuleType] = {}


def discover() -> dict[str, ModuleType]:
    """Import every country module of this package (each registers its identifiers on import) and
    return them by country code. Called once on import; again, it imports only modules added to
    the package's path since (a test adds one)."""
    for info in pkgutil.iter_modules(__path__):
        if info.name not in SHARED_MODULES and not info.name.startswith("_") and info.name not in _COUNTRIES:
            _COUNTRIES[info.name] = importlib.import_module(f"{__name__}.{info.name}")
    return dict(sorted(_COUNTRIES.items()))


def country_modules() -> dict[str, ModuleType]:
    """The country modules found, by ISO 3166 code: {"br": <module ...ids.br>, "de": ...}."""
    return dict(sorted(_COUNTRIES.items()))


def iban_is_valid(value: str) -> bool:
    """An IBAN of any country: with the national check digits of the countries registered here
    (a French RIB key, an Italian CIN...), python-stdnum's IBAN check for the others."""
    code = strip_separators(value)
    try:
        return get(code[:2].lower() + ".iban").is_valid(code)
    except KeyError:
        return std_iban.is_valid(code)


def identify(value: str, candidates: Iterable[str]) -> Identifier | None:
    """The first of the `candidates` (registry keys) that accepts `value`, or None."""
    for key in candidates:
        identifier = get(key)
        if identifier.is_valid(value):
            return identifier
    return None


def surrogate_like(value: str, rng: random.Random, candidates: Iterable[str]) -> str | None:
    """A different, valid identifier of the same kind as `value`, written in the same layout
    ("X-1234567-L" -> "Z-7654321-Q"), or None if no candidate accepts `value`. A format with
    several lengths (an 11-digit NASS) keeps the kind but may come out compact."""
    identifier = identify(value, candidates)
    if identifier is None:
        return None
    pattern, original = layout_of(value), identifier.compact(value)
    fallback = None
    for _ in range(100):
        new = identifier.generate(rng)
        if new == original:
            continue
        if len(new) == pattern.count("#"):
            return layout(new, pattern)
        fallback = fallback or new
    if fallback is None:
        raise RuntimeError(f"{identifier.key}: no surrogate different from the original in 100 draws")
    return fallback


discover()
