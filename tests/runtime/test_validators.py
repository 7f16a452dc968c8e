"""Check-digit validators used by the regex packs: a valid identifier passes, and the same
identifier with one wrong check digit (or an excluded range) fails.

The valid identifiers are computed, not real people's: they were generated from the published
algorithms (python-stdnum where it has the format), and a few are checked by hand below.
"""

from __future__ import annotations

import pytest

from stdnum.luhn import calc_check_digit as luhn_check_digit

from deid_runtime import ids
from deid_runtime.ids import strip_separators as compact
from deid_runtime.validators import VALIDATORS, get_validator

de_lanr = ids.get("de.lanr").is_valid


def _ok(name: str, value: str) -> bool:
    return get_validator(name)(value)


@pytest.mark.parametrize(
    "name,valid,invalid",
    [
        # NIR: 13 digits + key = 97 - (n mod 97)
        ("fr_nir", "1 85 05 78 006 048 30", "1 85 05 78 006 048 31"),
        ("fr_nir", "269029934173285", "269029934173286"),
        ("fr_ins", "2 69 02 99 341 732 85", "2 69 02 99 341 732 84"),
        # RPPS: 11 digits, Luhn
        ("fr_rpps", "10003034567", "10003034568"),
        ("fr_rpps", "80001234568", "80001234567"),
        # ADELI: 9 digits, Luhn
        ("fr_adeli", "751234568", "751234569"),
        # FINESS: 9 characters, Luhn
        ("fr_finess", "750001232", "750001233"),
        ("fr_finess", "130780018", "130780019"),
        # SIREN (9) / SIRET (14): Luhn
        ("fr_siren", "732 829 320", "732 829 321"),
        ("fr_siret", "732 829 320 00017", "732 829 320 00018"),
        ("fr_siret", "55210055400013", "55210055400014"),
        # IBAN: mod 97
        ("iban", "FR76 3000 6000 0112 3456 7890 189", "FR77 3000 6000 0112 3456 7890 189"),
        ("iban", "DE89 3704 0044 0532 0130 00", "DE88 3704 0044 0532 0130 00"),
        ("iban", "GB29NWBK60161331926819", "GB28NWBK60161331926819"),
        # Spain
        ("es_nass", "28 12345678 40", "28 12345678 41"),
        ("es_dni", "12345678Z", "12345678A"),
        ("es_nie", "X1234567L", "X1234567A"),
        ("es_dni_or_nie", "Y-0000000-Z", "Y-0000000-A"),
        # US SSN has no check digit: the "invalid" twins are excluded ranges
        ("us_ssn", "536-22-1234", "666-22-1234"),
        ("us_ssn", "123 45 6789", "123 00 6789"),
        # NPI: Luhn over 80840 + 10 digits (1234567893 is the example in the CMS check-digit note)
        ("us_npi", "1234567893", "1234567894"),
        # NHS: mod 11
        ("gb_nhs", "943 476 5919", "943 476 5918"),
        ("gb_nhs", "4010232137", "4010232136"),
        # Germany
        ("de_kvnr", "A123456780", "A123456781"),
        ("de_kvnr", "T876543216", "T876543217"),
        ("de_idnr", "86 095 742 719", "86 095 742 718"),
        ("de_lanr", "123456601", "123456701"),
        ("ip", "192.168.1.34", "192.168.1.340"),
    ],
)
def test_valid_passes_and_wrong_check_fails(name: str, valid: str, invalid: str):
    assert _ok(name, valid), f"{name}: {valid} should be valid"
    assert not _ok(name, invalid), f"{name}: {invalid} should be invalid"


@pytest.mark.parametrize("dept,key,wrong_key", [("2A", "31", "04"), ("2B", "27", "70")])
def test_nir_corsica_departments(dept: str, key: str, wrong_key: str):
    """Corsica (2A/2B) counts as 19/18 in the key; the key computed as if it were 20 is wrong."""
    base = {"2A": "1 85 02 2A 012 345 ", "2B": "2 87 03 2B 045 612 "}[dept]
    assert _ok("fr_nir", base + key)
    assert _ok("fr_nir", (base + key).lower())  # "2a" as typed in lower case
    assert not _ok("fr_nir", base + wrong_key)
    assert not _ok("fr_nir", base.replace(dept, "2C") + key)


def test_nir_key_by_hand():
    # 1850578006048 mod 97 = 67, key = 97 - 67 = 30
    assert 1850578006048 % 97 == 67
    assert _ok("fr_nir", "185057800604830")


@pytest.mark.parametrize("value", ["000-12-3456", "666-12-3456", "900-12-3456", "999-99-9999",
                                   "123-00-4567", "123-45-0000", "078-05-1120", "219-09-9999"])
def test_ssn_excluded_ranges(value: str):
    assert not _ok("us_ssn", value)


def test_ssn_shape_is_enforced():
    assert not _ok("us_ssn", "53622123")  # 8 digits
    assert not _ok("us_ssn", "536-22-123A")


def test_npi_shape():
    assert not _ok("us_npi", "3234567891")  # NPIs start with 1 or 2
    assert not _ok("us_npi", "123456789")  # 9 digits


def test_lanr_by_hand():
    # digits 1-6 = 1 2 3 4 5 6, weights 4 9 4 9 4 9: 4+18+12+36+20+54 = 144, 144 mod 10 = 4, check = 6
    assert de_lanr("123456601")
    assert de_lanr("1234566 01")  # spaces are separators
    # 9 9 9 9 9 9: 3 * (36 + 81) = 351, r = 1, check = 9 (the well-known placeholder 999999900)
    assert de_lanr("999999900")
    # sum a multiple of 10 gives check 0, not 10: 000000 -> 0
    assert de_lanr("000000000")
    assert not de_lanr("12345660")  # 8 digits
    assert not de_lanr("1234566010")  # 10 digits
    assert not de_lanr("12345a601")


def test_lanr_exactly_one_check_digit_per_number():
    for payload in ("123456", "987654", "500001", "314159"):
        passing = [d for d in "0123456789" if de_lanr(payload + d + "42")]
        assert len(passing) == 1, (payload, passing)
        # the specialty code (digits 8-9) does not enter the check
        assert de_lanr(payload + passing[0] + "01")


def test_kvnr_by_hand():
    # A -> 01; payload 0 1 1 2 3 4 5 6 7 8 with weights 1 2 1 2 ...: products 0 2 1 4 3 8 5 12 7 16,
    # digit sums 0+2+1+4+3+8+5+3+7+7 = 40 -> check digit 0
    assert _ok("de_kvnr", "A123456780")
    assert not _ok("de_kvnr", "1123456780")  # must start with a letter
    assert not _ok("de_kvnr", "A12345678")  # too short


def test_luhn_family_agrees_with_check_digit_helper():
    for payload in ("1000303456", "7512345", "4012345"):
        digits = payload + luhn_check_digit(payload)
        assert _ok("luhn", digits)
        wrong = digits[:-1] + str((int(digits[-1]) + 1) % 10)
        assert not _ok("luhn", wrong)


def test_finess_corsica():
    # 2A/2B departments count as 20 for the Luhn key
    payload = "20" + "000123"
    key = luhn_check_digit(payload)
    assert _ok("fr_finess", "2A000123" + key)
    assert _ok("fr_finess", "2B000123" + key)
    assert not _ok("fr_finess", "2A000123" + str((int(key) + 1) % 10))


def test_validators_never_raise_on_garbage():
    for name, check in VALIDATORS.items():
        for junk in ("", "-", "ABC", "12", "é" * 20, "1" * 40):
            assert check(junk) in (True, False), name


def test_compact_and_unknown_name():
    assert compact("1 85-05.78/006") == "1850578006"
    with pytest.raises(KeyError, match="unknown validator"):
        get_validator("no_such_validator")
