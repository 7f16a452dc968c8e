"""The Netherlands: BSN (burgerservicenummer) and IBAN."""

from __future__ import annotations

from stdnum.nl import bsn as std_bsn

from .core import StdnumIdentifier, register, solve_check_digits
from .iban import Iban


class Bsn(StdnumIdentifier):
    """BSN: 9 digits (leading zeros often left out) passing the "elfproef": digits times 9, 8 ... 2
    and the last times -1 sum to a multiple of 11 (python-stdnum nl.bsn)."""

    key, module, payload_length = "nl.bsn", std_bsn, 8
    role = "national"

    def calc_check_digit(self, payload: str) -> str | None:
        """None where no digit fits."""
        return solve_check_digits(payload, std_bsn.is_valid)


bsn = register(Bsn())
iban = register(Iban("NL"))
