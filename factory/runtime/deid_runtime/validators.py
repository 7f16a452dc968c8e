"""Check-digit validators by name: the `validator:` of regex_packs/*/pack.yml and the identifier
kinds of languages/<lc>/surrogates.yml.

Every identifier is implemented once, in deid_runtime.ids; its validator is named after
its registry key with an underscore ("es.nass" -> "es_nass", the names the packs used before the
registry). A country module adds the names of its own that are not one identifier (its `VALIDATORS`:
fr's "fr_ins", es's "es_dni_or_nie"), and the few names here check what belongs to no country.
Every validator takes the matched string (separators allowed) and returns True only if the check
digits are right.
"""

from __future__ import annotations

import ipaddress
from typing import Callable

from stdnum import luhn

from . import ids


def validator_name(key: str) -> str:
    """The validator name of a registry key: "es.nass" -> "es_nass"."""
    return key.replace(".", "_")


def luhn_valid(value: str) -> bool:
    """Any run of digits with a Luhn (mod 10) key: ADELI, FINESS and SIREN share this shape, and
    a number written without its label cannot tell which it is."""
    digits = ids.strip_separators(value)
    return digits.isdigit() and luhn.is_valid(digits)


def ip_address(value: str) -> bool:
    """An IPv4 or IPv6 address the standard library accepts (catches 999.1.1.1 and 12:30)."""
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


# What belongs to no country
GENERIC: dict[str, Callable[[str], bool]] = {
    "luhn": luhn_valid,
    "ip": ip_address,
    "iban": ids.iban_is_valid,  # any country, with the national check digits of those registered
}


def _collect() -> dict[str, Callable[[str], bool]]:
    """Every identifier's validator, the names the country modules add, and the generic ones; a
    name given twice is an error (a country module must not shadow another's or a generic one)."""
    found: dict[str, Callable[[str], bool]] = {validator_name(key): ids.get(key).is_valid for key in ids.keys()}
    for country, module in ids.country_modules().items():
        for name, check in (getattr(module, "VALIDATORS", None) or {}).items():
            if not name.startswith(f"{country}_") or name in found:
                raise ValueError(f"deid_runtime.ids.{country}: validator name {name!r} must start with "
                                 f"'{country}_' and be new")
            found[name] = check
    for name, check in GENERIC.items():
        if name in found:
            raise ValueError(f"validator name {name!r} is generic; a country module gives it too")
        found[name] = check
    return found


VALIDATORS: dict[str, Callable[[str], bool]] = _collect()


def get_validator(name: str) -> Callable[[str], bool]:
    try:
        return VALIDATORS[name]
    except KeyError:
        raise KeyError(f"unknown validator {name!r}; known: {', '.join(sorted(VALIDATORS))}") from None
