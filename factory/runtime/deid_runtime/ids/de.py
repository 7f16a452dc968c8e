"""Germany: Steuer-IdNr, KVNR (Krankenversichertennummer), LANR (Lebenslange Arztnummer) and IBAN."""

from __future__ import annotations

import random
import re
import string

from stdnum.de import idnr as std_idnr
from stdnum.iso7064 import mod_11_10

from .core import Identifier, StdnumIdentifier, random_digits, register
from .iban import Iban


class Idnr(StdnumIdentifier):
    """Steuerliche Identifikationsnummer: 11 digits, no leading 0, one digit of the first ten
    repeated two or three times, ISO 7064 mod 11,10 check digit (python-stdnum de.idnr)."""

    key, module = "de.idnr", std_idnr
    role = "national"
    layout = "## ### ### ###"

    def calc_check_digit(self, payload: str) -> str:
        return mod_11_10.calc_check_digit(payload)

    def draw_payload(self, rng: random.Random) -> str | None:
        # nine distinct digits and one of them again: the repetition rule holds by construction
        digits = rng.sample(string.digits, 9)
        digits.append(rng.choice(digits))
        rng.shuffle(digits)
        return None if digits[0] == "0" else "".join(digits)


class Kvnr(Identifier):
    """Krankenversichertennummer (eGK): a letter, 8 digits and a check digit over the letter as
    two digits (A = 01) and the 8 digits, weights 1, 2, 1, 2..., digit sums of the products, mod 10.
    python-stdnum has no module for it."""

    key = "de.kvnr"
    role = "insurance"

    def calc_check_digit(self, payload: str) -> str:
        """`payload`: the letter and the 8 digits."""
        numeric = f"{ord(payload[0]) - 64:02d}" + payload[1:]
        total = 0
        for i, ch in enumerate(numeric):
            product = int(ch) * (1 if i % 2 == 0 else 2)
            total += product // 10 + product % 10
        return str(total % 10)

    def is_valid_compact(self, code: str) -> bool:
        return bool(re.fullmatch(r"[A-Z]\d{9}", code)) and self.calc_check_digit(code[:9]) == code[9]

    def draw_payload(self, rng: random.Random) -> str:
        return rng.choice(string.ascii_uppercase) + random_digits(rng, 8)


class Lanr(Identifier):
    """Lebenslange Arztnummer: 6 digits, a check digit over them (weights 4, 9, 4, 9, 4, 9;
    (10 - sum mod 10) mod 10), and a 2-digit specialty code outside the check (KBV rule).
    python-stdnum has no module for it."""

    key = "de.lanr"
    role = "professional"
    SPECIALTIES = ("01", "03", "23", "34", "50", "60")  # a few of the KBV's Fachgruppen codes

    def calc_check_digit(self, payload: str) -> str:
        """`payload`: the first 6 digits."""
        total = sum(int(d) * w for d, w in zip(payload, (4, 9, 4, 9, 4, 9)))
        return str((10 - total % 10) % 10)

    def is_valid_compact(self, code: str) -> bool:
        return bool(re.fullmatch(r"\d{9}", code)) and self.calc_check_digit(code[:6]) == code[6]

    def draw(self, rng: random.Random) -> str:
        payload = random_digits(rng, 6, first_nonzero=True)
        return payload + self.calc_check_digit(payload) + rng.choice(self.SPECIALTIES)


idnr = register(Idnr())
kvnr = register(Kvnr())
lanr = register(Lanr())
iban = register(Iban("DE"))
