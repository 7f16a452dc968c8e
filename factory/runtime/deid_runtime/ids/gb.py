"""United Kingdom: NHS number and IBAN."""

from __future__ import annotations

from stdnum.gb import nhs as std_nhs

from .core import StdnumIdentifier, register, solve_check_digits
from .iban import Iban


class Nhs(StdnumIdentifier):
    """NHS number: 9 digits and a mod-11 check digit (weights 10 to 2); a payload whose check
    would be 10 is never issued (python-stdnum gb.nhs)."""

    key, module, payload_length = "gb.nhs", std_nhs, 9
    role = "insurance"
    layout = "### ### ####"

    def calc_check_digit(self, payload: str) -> str | None:
        """None where no digit fits (the check would be 10)."""
        return solve_check_digits(payload, std_nhs.is_valid)


nhs = register(Nhs())
iban = register(Iban("GB"))
