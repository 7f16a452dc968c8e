"""Identifiers of the target locale that pass their check digits.

Each generator builds the payload at random and computes the key with the rule of the format; every
value is then verified by the *same* validator the regex packs use (factory/runtime/validators.py),
so a surrogate NIR, RPPS, DNI... is exactly what deid_<lang> must recognise. Which kinds are drawn
for which role (national id, insurance, professional licence, record number...) is data:
`ids.roles` in languages/<lc>/surrogates.yml, roles of source kinds in corpora/surrogates/id_roles.yml.
"""

from __future__ import annotations

import random
import string
from typing import Any, Callable

from ..runtime.validators import VALIDATORS, luhn_check_digit

_DNI_LETTERS = "TRWAGMYFPDXBNJZSQVHLCKE"


def _digits(rng: random.Random, n: int, first_nonzero: bool = False) -> str:
    out = "".join(rng.choice(string.digits) for _ in range(n))
    if first_nonzero and out[0] == "0":
        out = rng.choice("123456789") + out[1:]
    return out


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


def fr_nir(rng: random.Random, spec: dict[str, Any]) -> str:
    """Sex, year, month, department, commune, order + key 97 - (n mod 97)."""
    sex = rng.choice("12")
    yy = f"{rng.randint(0, 99):02d}"
    mm = f"{rng.randint(1, 12):02d}"
    dept = f"{rng.choice([d for d in range(1, 96) if d != 20]):02d}"
    commune = f"{rng.randint(1, 999):03d}"
    order = f"{rng.randint(1, 999):03d}"
    body = sex + yy + mm + dept + commune + order
    key = f"{97 - int(body) % 97:02d}"
    if spec.get("format") == "compact":
        return body + key
    return f"{sex} {yy} {mm} {dept} {commune} {order} {key}"


def fr_rpps(rng: random.Random, spec: dict[str, Any]) -> str:
    payload = "10" + _digits(rng, 8)
    return payload + luhn_check_digit(payload)


def fr_adeli(rng: random.Random, spec: dict[str, Any]) -> str:
    payload = f"{rng.choice([d for d in range(1, 96) if d != 20]):02d}" + _digits(rng, 6)
    return payload + luhn_check_digit(payload)


def fr_finess(rng: random.Random, spec: dict[str, Any]) -> str:
    payload = f"{rng.choice([d for d in range(1, 96) if d != 20]):02d}" + _digits(rng, 6)
    return payload + luhn_check_digit(payload)


def fr_siren(rng: random.Random, spec: dict[str, Any]) -> str:
    payload = _digits(rng, 8, first_nonzero=True)
    return payload + luhn_check_digit(payload)


def fr_siret(rng: random.Random, spec: dict[str, Any]) -> str:
    siren = fr_siren(rng, spec)
    payload = siren + _digits(rng, 4)
    return payload + luhn_check_digit(payload)


def es_dni(rng: random.Random, spec: dict[str, Any]) -> str:
    n = rng.randint(1_000_000, 99_999_999)
    return f"{n:08d}{_DNI_LETTERS[n % 23]}"


def es_nie(rng: random.Random, spec: dict[str, Any]) -> str:
    prefix = rng.choice("XYZ")
    n = rng.randint(0, 9_999_999)
    number = int("XYZ".index(prefix).__str__() + f"{n:07d}")
    return f"{prefix}{n:07d}{_DNI_LETTERS[number % 23]}"


def es_nass(rng: random.Random, spec: dict[str, Any]) -> str:
    province = rng.randint(1, 52)
    number = rng.randint(10_000_000, 99_999_999)
    control = int(f"{province:02d}{number:08d}") % 97
    return f"{province:02d}/{number:08d}/{control:02d}"


def us_ssn(rng: random.Random, spec: dict[str, Any]) -> str:
    area = rng.choice([a for a in range(1, 900) if a != 666])
    return f"{area:03d}-{rng.randint(1, 99):02d}-{rng.randint(1, 9999):04d}"


def us_npi(rng: random.Random, spec: dict[str, Any]) -> str:
    """US National Provider Identifier: 10 digits, Luhn over the '80840' prefix + 9 digits."""
    payload = rng.choice("12") + _digits(rng, 8)
    return payload + luhn_check_digit("80840" + payload)


def de_lanr(rng: random.Random, spec: dict[str, Any]) -> str:
    """Lebenslange Arztnummer: 6 digits, check digit (weights 4,9,...), 2-digit specialty code."""
    six = _digits(rng, 6, first_nonzero=True)
    check = (10 - sum(int(d) * w for d, w in zip(six, (4, 9, 4, 9, 4, 9))) % 10) % 10
    return f"{six}{check}{rng.choice(['01', '03', '23', '34', '50', '60'])}"


def gb_nhs(rng: random.Random, spec: dict[str, Any]) -> str:
    while True:
        payload = _digits(rng, 9, first_nonzero=True)
        total = sum(int(d) * w for d, w in zip(payload, range(10, 1, -1)))
        check = 11 - total % 11
        if check == 11:
            check = 0
        if check != 10:
            return f"{payload[:3]} {payload[3:6]} {payload[6:]}{check}"


def de_kvnr(rng: random.Random, spec: dict[str, Any]) -> str:
    letter = rng.choice(string.ascii_uppercase)
    digits = _digits(rng, 8)
    payload = f"{ord(letter) - 64:02d}" + digits
    total = 0
    for i, ch in enumerate(payload):
        product = int(ch) * (1 if i % 2 == 0 else 2)
        total += product // 10 + product % 10
    return f"{letter}{digits}{total % 10}"


def de_idnr(rng: random.Random, spec: dict[str, Any]) -> str:
    from stdnum.iso7064 import mod_11_10

    while True:  # the digit-repetition rules of the IdNr are easiest met by drawing again
        payload = _digits(rng, 10, first_nonzero=True)
        value = payload + mod_11_10.calc_check_digit(payload)
        if VALIDATORS["de_idnr"](value):
            return f"{value[:2]} {value[2:5]} {value[5:8]} {value[8:]}"


def iban(rng: random.Random, spec: dict[str, Any]) -> str:
    country = str(spec.get("country", "FR")).upper()
    lengths = {"FR": 23, "ES": 20, "DE": 18, "GB": 18, "IT": 23}
    # Some countries add national check digits inside the account number (ES CCC, FR RIB key):
    # drawing again until the shared validator accepts the whole IBAN covers them all.
    for _ in range(20000):
        bban = _digits(rng, lengths.get(country, 18))
        numeric = "".join(str(int(c, 36)) for c in bban + country) + "00"
        check = 98 - int(numeric) % 97
        value = f"{country}{check:02d}{bban}"
        if VALIDATORS["iban"](value):
            return " ".join(value[i : i + 4] for i in range(0, len(value), 4))
    raise RuntimeError(f"could not draw a valid {country} IBAN")


def pattern(rng: random.Random, spec: dict[str, Any]) -> str:
    return fill_pattern(rng, rng.choice(spec.get("patterns") or ["########"]))


GENERATORS: dict[str, Callable[[random.Random, dict[str, Any]], str]] = {
    "fr_nir": fr_nir, "fr_rpps": fr_rpps, "fr_adeli": fr_adeli, "fr_finess": fr_finess,
    "fr_siren": fr_siren, "fr_siret": fr_siret, "es_dni": es_dni, "es_nie": es_nie, "es_nass": es_nass,
    "us_ssn": us_ssn, "us_npi": us_npi, "gb_nhs": gb_nhs, "de_kvnr": de_kvnr, "de_idnr": de_idnr, "de_lanr": de_lanr,
    "iban": iban, "pattern": pattern,
}


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
