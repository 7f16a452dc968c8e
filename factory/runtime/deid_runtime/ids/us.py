"""United States: SSN and NPI."""

from __future__ import annotations

import random

from stdnum.us import ssn as std_ssn

from .core import LuhnIdentifier, StdnumIdentifier, random_digits, register


class Ssn(StdnumIdentifier):
    """Social Security number: area (3), group (2), serial (4); no check digit, but python-stdnum
    us.ssn rejects area 000, 666 and 9xx, group 00, serial 0000 and the numbers known from
    advertising."""

    key, module = "us.ssn", std_ssn
    role = "national"
    layout = "###-##-####"

    def draw(self, rng: random.Random) -> str | None:
        area = rng.choice([a for a in range(1, 900) if a != 666])
        value = f"{area:03d}{rng.randint(1, 99):02d}{rng.randint(1, 9999):04d}"
        return value if std_ssn.is_valid(value) else None  # a blacklisted number: draw again


class Npi(LuhnIdentifier):
    """National Provider Identifier: 10 digits beginning with 1 or 2, the last a Luhn digit
    computed with the card-issuer prefix 80840 in front (CMS rule). python-stdnum has no module."""

    key, length, luhn_prefix = "us.npi", 10, "80840"
    role = "professional"

    def is_valid_compact(self, code: str) -> bool:
        return code[:1] in ("1", "2") and super().is_valid_compact(code)

    def draw_payload(self, rng: random.Random) -> str:
        return rng.choice("12") + random_digits(rng, 8)


ssn = register(Ssn())
npi = register(Npi())
