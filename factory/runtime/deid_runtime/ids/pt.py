"""Portugal: NIF, CC (cartão de cidadão), NISS (segurança social) and IBAN (with its NIB check).

The CNS (Cartão Nacional de Saúde) is Brazil's health card: it is in br.py. Portugal's own
health number (número de utente do SNS) has no published check digit."""

from __future__ import annotations

import random
import re

from stdnum.iso7064 import mod_97_10
from stdnum.pt import cc as std_cc
from stdnum.pt import nif as std_nif

from .core import Identifier, StdnumIdentifier, random_digits, register
from .iban import Iban


class Nif(StdnumIdentifier):
    """NIF (número de identificação fiscal): 9 digits, the last a mod-11 check digit (weights 9
    to 2); persons' numbers begin with 1, 2 or 3 (python-stdnum pt.nif)."""

    key, module = "pt.nif", std_nif
    role = "national"

    def calc_check_digit(self, payload: str) -> str:
        return std_nif.calc_check_digit(payload)

    def draw_payload(self, rng: random.Random) -> str:
        return rng.choice("123") + random_digits(rng, 7)


class Cc(StdnumIdentifier):
    """Cartão de cidadão number: civil identification number (8 digits) and its check digit, a
    2-character version and a final check digit over all of them (python-stdnum pt.cc checks the
    final one). The civil number's own check digit, kept from the old bilhete de identidade:
    digits times 9 to 2 plus the check is a multiple of 11, a check of 10 written 0 (and 0 where
    the sum is a multiple of 11 already)."""

    key, module = "pt.cc", std_cc
    role = "national"
    layout = "######## # ###"

    def calc_civil_check_digit(self, civil: str) -> str:
        need = -sum(int(d) * w for d, w in zip(civil, range(9, 1, -1))) % 11
        return "0" if need in (0, 10) else str(need)

    def calc_check_digit(self, payload: str) -> str:
        """`payload`: the 11 characters before the final digit."""
        return std_cc.calc_check_digit(payload)

    def is_valid_compact(self, code: str) -> bool:
        return (bool(re.fullmatch(r"\d{9}[A-Z0-9]{2}\d", code)) and std_cc.is_valid(code)
                and self.calc_civil_check_digit(code[:8]) == code[8])

    def draw_payload(self, rng: random.Random) -> str:
        civil = random_digits(rng, 8)
        return civil + self.calc_civil_check_digit(civil) + "Z" + rng.choice("ZYXWV")  # versions are issued from ZZ down


class Niss(Identifier):
    """NISS (número de identificação da segurança social): 11 digits, 1 for persons and 2 for
    companies first, the last 9 - (sum of the first ten times 29, 23, 19, 17, 13, 11, 7, 5, 3, 2)
    mod 10. python-stdnum has no module for it (its pt package has nif and cc only). The rule is the
    Segurança Social's, as implemented by the public validators of the number (e.g. the npm package
    @edyspider/validate-niss, whose example 12345678910 it accepts: tests/runtime/test_ids.py)."""

    key = "pt.niss"
    role = "insurance"
    WEIGHTS = (29, 23, 19, 17, 13, 11, 7, 5, 3, 2)

    def calc_check_digit(self, payload: str) -> str:
        """`payload`: the first 10 digits."""
        return str(9 - sum(int(d) * w for d, w in zip(payload, self.WEIGHTS)) % 10)

    def is_valid_compact(self, code: str) -> bool:
        return bool(re.fullmatch(r"[12]\d{10}", code)) and self.calc_check_digit(code[:10]) == code[10]

    def draw_payload(self, rng: random.Random) -> str:
        return "1" + random_digits(rng, 9)


class PtIban(Iban):
    """Portuguese IBAN: the BBAN is a NIB, bank (4), branch (4), account (11) and two check digits,
    ISO 7064 mod 97-10 over the first 19 (python-stdnum's iso7064 computes them; it has no NIB module)."""

    def bban_is_valid(self, bban: str) -> bool:
        return mod_97_10.calc_check_digits(bban[:19]) == bban[19:]

    def draw_bban(self, rng: random.Random) -> str:
        payload = random_digits(rng, 4) + random_digits(rng, 4) + random_digits(rng, 11)
        return payload + mod_97_10.calc_check_digits(payload)


nif = register(Nif())
cc = register(Cc())
niss = register(Niss())
iban = register(PtIban("PT"))
