"""Italy: codice fiscale, partita IVA and IBAN (with its CIN)."""

from __future__ import annotations

import datetime as dt
import random

from stdnum import luhn
from stdnum.it import codicefiscale as std_codicefiscale
from stdnum.it import iva as std_iva

from .core import StdnumIdentifier, random_digits, register
from .iban import Iban

_CONSONANTS = "BCDFGHJKLMNPQRSTVWXYZ"
_MONTHS = "ABCDEHLMPRST"  # January to December
_FIRST_BIRTH, _BIRTH_DAYS = dt.date(1925, 1, 1), 365 * 95


class Codicefiscale(StdnumIdentifier):
    """Codice fiscale of a person: 3 letters of the surname, 3 of the given name, birth year (2),
    month letter, birth day (+40 for women), municipality (Belfiore code: a letter and 3 digits),
    and a check letter from odd/even character tables, mod 26 (python-stdnum it.codicefiscale,
    which also accepts the 11-digit codice fiscale of a company, its partita IVA)."""

    key, module = "it.codicefiscale", std_codicefiscale
    role = "national"

    def calc_check_digit(self, body: str) -> str:
        """`body`: the first 15 characters."""
        return std_codicefiscale.calc_check_digit(body)

    def draw_payload(self, rng: random.Random) -> str:
        names = "".join(rng.choice(_CONSONANTS) for _ in range(6))
        birth = _FIRST_BIRTH + dt.timedelta(days=rng.randrange(_BIRTH_DAYS))
        day = birth.day + (40 if rng.random() < 0.5 else 0)
        municipality = rng.choice("ABCDEFGHILM") + random_digits(rng, 3)
        return f"{names}{birth.year % 100:02d}{_MONTHS[birth.month - 1]}{day:02d}{municipality}"


class Iva(StdnumIdentifier):
    """Partita IVA (VAT number of companies and professionals): company number (7), office of
    the province (3: 001-100, 120, 121, 888, 999), Luhn digit (python-stdnum it.iva)."""

    key, module = "it.iva", std_iva
    role = "organization"

    def calc_check_digit(self, payload: str) -> str:
        return luhn.calc_check_digit(payload)

    def draw_payload(self, rng: random.Random) -> str:
        return random_digits(rng, 7, first_nonzero=True) + f"{rng.randint(1, 100):03d}"


class ItIban(Iban):
    """Italian IBAN: the BBAN is CIN (a check letter), ABI (5), CAB (5) and account (12); the CIN
    is computed over ABI + CAB + account with the odd/even tables of the codice fiscale."""

    def bban_is_valid(self, bban: str) -> bool:
        return bban[0] == std_codicefiscale.calc_check_digit(bban[1:])

    def draw_bban(self, rng: random.Random) -> str:
        rest = random_digits(rng, 5, first_nonzero=True) + random_digits(rng, 5) + random_digits(rng, 12)
        return std_codicefiscale.calc_check_digit(rest) + rest


codicefiscale = register(Codicefiscale())
iva = register(Iva())
iban = register(ItIban("IT"))
