"""IBAN of one country: ISO 13616 mod-97 check digits over the country's BBAN (python-stdnum's
iban module and its registry of BBAN structures), plus the national check digits some countries
keep inside the BBAN (a country module subclasses `Iban` for those: es, fr, it, pt)."""

from __future__ import annotations

import random
import re
import string

from stdnum import iban as std_iban
from stdnum import numdb

from .core import Identifier, random_digits

_PART = re.compile(r"(\d+)!([nac])")  # "5!n": five digits; a: capital letters; c: letters or digits


class Iban(Identifier):
    role = "bank"

    def __init__(self, country: str):
        self.country = country.upper()
        self.key = f"{country.lower()}.iban"
        info = numdb.get("iban").info(self.country)[0][1]
        if not info.get("bban"):
            raise ValueError(f"python-stdnum knows no IBAN structure for country {self.country!r}")
        self.parts = [(int(n), kind) for n, kind in _PART.findall(info["bban"])]
        length = 4 + sum(n for n, _ in self.parts)
        # written in groups of four, as on bank statements
        self.layout = " ".join("#" * min(4, length - i) for i in range(0, length, 4))

    def compact(self, value: str) -> str:
        return std_iban.compact(super().compact(value))

    def is_valid_compact(self, code: str) -> bool:
        return code[:2] == self.country and std_iban.is_valid(code) and self.bban_is_valid(code[4:])

    def bban_is_valid(self, bban: str) -> bool:
        """The national check digits inside the BBAN, where the country has them."""
        return True

    def draw_bban(self, rng: random.Random) -> str:
        """A BBAN of the country's structure at random ('c' parts drawn as digits, as most
        account numbers are); countries with national check digits compute them here."""
        out = []
        for n, kind in self.parts:
            if kind == "a":
                out.append("".join(rng.choice(string.ascii_uppercase) for _ in range(n)))
            else:
                out.append(random_digits(rng, n))
        return "".join(out)

    def draw(self, rng: random.Random) -> str:
        bban = self.draw_bban(rng)
        return self.country + std_iban.calc_check_digits(self.country + "00" + bban) + bban
