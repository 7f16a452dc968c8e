"""Check-digit validators by name: the `validator:` of regex_packs/*/pack.yml and the identifier
kinds of languages/<lc>/surrogates.yml.

Every identifier is implemented once, in deid_runtime.ids; its validator is named after
its registry key with an underscore ("es.nass" -> "es_nass", the names the packs used before the
registry). The few other names check what is not one national identifier. Every validator takes
the matched string (separators allowed) and returns True only if the check digits are right.
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


def es_dni_or_nie(value: str) -> bool:
    return ids.es.dni.is_valid(value) or ids.es.nie.is_valid(value)


VALIDATORS: dict[str, Callable[[str], bool]] = {validator_name(key): ids.get(key).is_valid for key in ids.keys()}
VALIDATORS.update({
    "luhn": luhn_valid,
    "ip": ip_address,
    "iban": ids.iban_is_valid,  # any country, with the national check digits of those registered
    "es_dni_or_nie": es_dni_or_nie,
    "fr_ins": ids.fr.nir.is_valid,  # the INS (identifiant national de santé) is the person's NIR
})


def get_validator(name: str) -> Callable[[str], bool]:
    try:
        return VALIDATORS[name]
    except KeyError:
        raise KeyError(f"unknown validator {name!r}; known: {', '.join(sorted(VALIDATORS))}") from None
