"""Check-digit validators for identifiers, by name (the names are used in regex_packs/*/pack.yml).

python-stdnum is used wherever it implements the format; the rest share one Luhn and one
mod-97 implementation here. Every validator takes the matched string (spaces, dots and dashes
allowed) and returns True only if the check digits are right.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Callable

from stdnum import iban as std_iban
from stdnum import luhn as std_luhn
from stdnum.de import idnr as de_idnr
from stdnum.es import dni as es_dni
from stdnum.es import nie as es_nie
from stdnum.fr import nir as fr_nir
from stdnum.fr import siren as fr_siren
from stdnum.fr import siret as fr_siret
from stdnum.gb import nhs as gb_nhs
from stdnum.it import codicefiscale as it_codicefiscale
from stdnum.us import ssn as us_ssn

_SEPARATORS = re.compile(r"[\s.\-/]")


def compact(value: str) -> str:
    """Remove the separators people write inside identifiers (spaces, dots, dashes, slashes)."""
    return _SEPARATORS.sub("", value).upper()


def luhn_valid(value: str) -> bool:
    """The one shared Luhn (mod 10) check, for formats python-stdnum has no module for."""
    digits = compact(value)
    return digits.isdigit() and std_luhn.is_valid(digits)


def luhn_check_digit(payload: str) -> str:
    """The Luhn digit to append to `payload` (used by the surrogate generators)."""
    return std_luhn.calc_check_digit(payload)


def _stdnum(module) -> Callable[[str], bool]:
    def check(value: str) -> bool:
        try:
            return bool(module.is_valid(value))
        except Exception:  # stdnum raises on some malformed inputs instead of returning False
            return False

    check.__doc__ = f"python-stdnum {module.__name__}"
    return check


# Built once: the wrappers below and the registry share them instead of wrapping on every call.
fr_nir_valid = _stdnum(fr_nir)
iban_valid = _stdnum(std_iban)
es_dni_valid = _stdnum(es_dni)
es_nie_valid = _stdnum(es_nie)
us_ssn_valid = _stdnum(us_ssn)


def fr_rpps(value: str) -> bool:
    """RPPS: 11 digits (10 in older lists, prefixed with 8 by the ASIP) with a Luhn key."""
    digits = compact(value)
    return len(digits) == 11 and luhn_valid(digits)


def fr_adeli(value: str) -> bool:
    """ADELI: 9 digits (department 2, profession 2, order 4, key 1); the key is a Luhn digit."""
    digits = compact(value)
    return len(digits) == 9 and luhn_valid(digits)


def fr_finess(value: str) -> bool:
    """FINESS: 9 characters (department may be 2A/2B), last digit a Luhn key over the digits."""
    code = compact(value)
    if len(code) != 9:
        return False
    code = code.replace("2A", "20").replace("2B", "20")
    return luhn_valid(code)


def fr_ins(value: str) -> bool:
    """INS (Identifiant National de Santé): the NIR of the person, 15 characters with its key."""
    return fr_nir_valid(value)


def mod97_iban(value: str) -> bool:
    return iban_valid(value)


def es_nass(value: str) -> bool:
    """NASS / número de afiliación a la Seguridad Social: province (2) + number (8 or 7) + control (2).

    Control = (province * 10^8 + number) mod 97 when the number is below 10^7, else the
    province and number concatenated, mod 97 (Tesorería General de la Seguridad Social rule).
    """
    digits = compact(value)
    if not digits.isdigit() or len(digits) not in (11, 12):
        return False
    if len(digits) == 11:  # a 7-digit number written without its leading zero
        digits = digits[:2] + "0" + digits[2:]
    province, number, control = digits[:2], digits[2:10], digits[10:]
    if int(number) < 10_000_000:
        base = int(province) * 10_000_000 + int(number)
    else:
        base = int(province + number)
    return 1 <= int(province) <= 53 and base % 97 == int(control)


def us_ssn_check(value: str) -> bool:
    """US SSN (no check digit): python-stdnum rejects area 000/666/9xx, group 00, serial 0000 and
    the known advertising numbers. stdnum accepts only dashes, so other separators are dropped first."""
    digits = compact(value)
    return digits.isdigit() and us_ssn_valid(digits)


def us_npi(value: str) -> bool:
    """US National Provider Identifier: 10 digits starting with 1 or 2, the last a Luhn digit
    computed with the card-issuer prefix 80840 in front (CMS NPI check-digit rule)."""
    digits = compact(value)
    return bool(re.fullmatch(r"[12]\d{9}", digits)) and luhn_valid("80840" + digits)


def de_lanr(value: str) -> bool:
    """German Lebenslange Arztnummer: 9 digits, the 7th a check digit over digits 1-6
    (weights 4,9,4,9,4,9; check = (10 - sum mod 10) mod 10); digits 8-9 are the specialty code."""
    digits = compact(value)
    if not re.fullmatch(r"\d{9}", digits):
        return False
    total = sum(int(d) * w for d, w in zip(digits[:6], (4, 9, 4, 9, 4, 9)))
    return (10 - total % 10) % 10 == int(digits[6])


def es_dni_or_nie(value: str) -> bool:
    return es_dni_valid(value) or es_nie_valid(value)


def de_kvnr(value: str) -> bool:
    """German Krankenversichertennummer: a letter + 8 digits + check digit (letter as 2 digits,
    weights 1,2,1,2..., digit sums, mod 10)."""
    code = compact(value)
    if not re.fullmatch(r"[A-Z]\d{9}", code):
        return False
    letter = f"{ord(code[0]) - 64:02d}"
    payload = letter + code[1:9]
    total = 0
    for i, ch in enumerate(payload):
        product = int(ch) * (1 if i % 2 == 0 else 2)
        total += product // 10 + product % 10
    return total % 10 == int(code[9])


def ip_address(value: str) -> bool:
    """An IPv4 or IPv6 address the standard library accepts (catches 999.1.1.1 and 12:30)."""
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


VALIDATORS: dict[str, Callable[[str], bool]] = {
    "luhn": luhn_valid,
    "ip": ip_address,
    "iban": mod97_iban,
    "fr_nir": fr_nir_valid,
    "fr_ins": fr_ins,
    "fr_rpps": fr_rpps,
    "fr_adeli": fr_adeli,
    "fr_finess": fr_finess,
    "fr_siren": _stdnum(fr_siren),
    "fr_siret": _stdnum(fr_siret),
    "es_dni": es_dni_valid,
    "es_nie": es_nie_valid,
    "es_dni_or_nie": es_dni_or_nie,
    "es_nass": es_nass,
    "us_ssn": us_ssn_check,
    "us_npi": us_npi,
    "gb_nhs": _stdnum(gb_nhs),
    "de_idnr": _stdnum(de_idnr),
    "de_kvnr": de_kvnr,
    "de_lanr": de_lanr,
    "it_codicefiscale": _stdnum(it_codicefiscale),
}


def get_validator(name: str) -> Callable[[str], bool]:
    try:
        return VALIDATORS[name]
    except KeyError:
        raise KeyError(f"unknown validator {name!r}; known: {', '.join(sorted(VALIDATORS))}") from None
