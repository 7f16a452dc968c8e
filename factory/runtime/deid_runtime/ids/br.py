"""Brazil: CPF and CNS (Cartão Nacional de Saúde, the SUS health card)."""

from __future__ import annotations

import random
import re

from stdnum.br import cpf as std_cpf

from .core import Identifier, StdnumIdentifier, random_digits, register, solve_check_digits


class Cpf(StdnumIdentifier):
    """CPF (cadastro de pessoas físicas): 9 digits and two mod-11 check digits (python-stdnum
    br.cpf, which computes them in a private function: they are solved against its validator)."""

    key, module = "br.cpf", std_cpf
    role = "national"
    layout = "###.###.###-##"

    def calc_check_digits(self, payload: str) -> str | None:
        return solve_check_digits(payload, std_cpf.is_valid, width=2)

    def draw(self, rng: random.Random) -> str | None:
        payload = random_digits(rng, 9, first_nonzero=True)
        check = self.calc_check_digits(payload)
        return payload + check if check is not None else None


class Cns(Identifier):
    """CNS (Cartão Nacional de Saúde): 15 digits whose sum times 15, 14 ... 1 is a multiple of 11.
    Definitive numbers begin with 1 or 2 (an 11-digit PIS, then 000 and a check digit, or 001 and
    the digit that fits when the check would be 10), provisional ones with 7, 8 or 9 (Ministério
    da Saúde rule). python-stdnum has no module for it."""

    key = "br.cns"
    role = "insurance"
    layout = "### #### #### ####"

    @staticmethod
    def weighted_sum(digits: str) -> int:
        return sum(int(d) * w for d, w in zip(digits, range(15, 0, -1)))

    def calc_check_digits(self, pis: str) -> str:
        """The last 4 digits of a definitive number after its 11-digit PIS."""
        check = -self.weighted_sum(pis) % 11
        if check < 10:
            return "000" + str(check)
        return "001" + str(-self.weighted_sum(pis + "001") % 11)

    def is_valid_compact(self, code: str) -> bool:
        return bool(re.fullmatch(r"[12789]\d{14}", code)) and self.weighted_sum(code) % 11 == 0

    def draw(self, rng: random.Random) -> str:
        pis = rng.choice("12") + random_digits(rng, 10)
        return pis + self.calc_check_digits(pis)


cpf = register(Cpf())
cns = register(Cns())
