"""France: NIR (also the INS, identifiant national de santé), RPPS, ADELI, FINESS, SIREN, SIRET
and IBAN (with its RIB key)."""

from __future__ import annotations

import random

from stdnum import luhn
from stdnum.fr import nir as std_nir
from stdnum.fr import siren as std_siren
from stdnum.fr import siret as std_siret

from .core import LuhnIdentifier, StdnumIdentifier, random_digits, register
from .iban import Iban

# Metropolitan departments: 01-95, Corsica written 2A/2B since 1976 (20 no longer issued).
DEPARTMENTS = [f"{d:02d}" for d in range(1, 96) if d != 20] + ["2A", "2B"]


class Nir(StdnumIdentifier):
    """NIR (numéro de sécurité sociale): sex, year, month, department, commune, order, and a key
    97 - (first 13 digits mod 97), Corsica's 2A/2B read as 19/18 (python-stdnum fr.nir)."""

    key, module = "fr.nir", std_nir
    role = "national"
    layout = "# ## ## ## ### ### ##"

    def calc_check_digits(self, body: str) -> str:
        """`body`: the 13 characters before the key."""
        return std_nir.calc_check_digits(body)

    def draw(self, rng: random.Random) -> str:
        return self.draw_for(rng)

    def draw_for(self, rng: random.Random, sex: str | None = None, birth: tuple[int, int] | None = None) -> str:
        """A NIR of a person of `sex` ("f": 2, "m": 1) born in `birth` (year, month); what is not
        given is drawn."""
        sex_digit = {"m": "1", "f": "2"}.get(sex or "") or rng.choice("12")
        year, month = birth if birth else (rng.randint(0, 99), rng.randint(1, 12))
        body = (sex_digit + f"{year % 100:02d}" + f"{month:02d}" + rng.choice(DEPARTMENTS)
                + f"{rng.randint(1, 990):03d}" + f"{rng.randint(1, 999):03d}")
        return body + self.calc_check_digits(body)

    def person_fields(self, value: str) -> dict[str, object]:
        """What a NIR says of its person: "sex" ("f"/"m"; None for a temporary or foreign number) and
        "birth" ((two-digit year, month); None where the month is unknown, 20-99)."""
        code = self.compact(value)
        month = int(code[3:5])
        return {"sex": {"1": "m", "2": "f"}.get(code[0]), "birth": (int(code[1:3]), month) if 1 <= month <= 12 else None}


class Rpps(LuhnIdentifier):
    """RPPS (professionals): 11 digits with a Luhn key; persons' numbers begin with 10 (older
    ADELI-era numbers were prefixed with 8)."""

    key, length = "fr.rpps", 11
    role = "professional"

    def draw_payload(self, rng: random.Random) -> str:
        return "10" + random_digits(rng, 8)


class Adeli(LuhnIdentifier):
    """ADELI (paramedical professions): department (2), profession (2), order (4), Luhn key (1)."""

    key, length = "fr.adeli", 9
    role = "professional"

    def draw_payload(self, rng: random.Random) -> str:
        return rng.choice([d for d in DEPARTMENTS if d.isdigit()]) + random_digits(rng, 6)


class Finess(LuhnIdentifier):
    """FINESS (health establishments): department (2A/2B for Corsica), 6 digits, Luhn key over the
    digits with 2A/2B read as 20."""

    key, length = "fr.finess", 9
    role = "organization"

    def luhn_digits(self, code: str) -> str:
        return "20" + code[2:] if code[:2] in ("2A", "2B") else code

    def draw_payload(self, rng: random.Random) -> str:
        return rng.choice(DEPARTMENTS) + random_digits(rng, 6)


class Siren(StdnumIdentifier):
    """SIREN (companies): 8 digits and a Luhn digit (python-stdnum fr.siren)."""

    key, module, payload_length = "fr.siren", std_siren, 8
    role = "organization"

    def calc_check_digit(self, payload: str) -> str:
        return luhn.calc_check_digit(payload)


class Siret(StdnumIdentifier):
    """SIRET (establishments): the SIREN, a 4-digit establishment number and a Luhn digit over
    all 13 (python-stdnum fr.siret)."""

    key, module = "fr.siret", std_siret
    role = "organization"

    def calc_check_digit(self, payload: str) -> str:
        return luhn.calc_check_digit(payload)

    def draw_payload(self, rng: random.Random) -> str:
        return siren.generate(rng) + random_digits(rng, 4)


# The RIB key reads letters of the account as digits: A-I 1-9, J-R 1-9, S-Z 2-9.
_RIB_LETTERS = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "123456789123456789" "23456789")


class FrIban(Iban):
    """French IBAN: the BBAN is a RIB, bank (5), branch (5), account (11), and a key with
    bank + branch + account + key = 0 mod 97 (python-stdnum has no module for the RIB key)."""

    def calc_rib_key(self, bank: str, branch: str, account: str) -> str:
        return f"{97 - int((bank + branch + account).translate(_RIB_LETTERS) + '00') % 97:02d}"

    def bban_is_valid(self, bban: str) -> bool:
        return int(bban.translate(_RIB_LETTERS)) % 97 == 0

    def draw_bban(self, rng: random.Random) -> str:
        bank, branch, account = random_digits(rng, 5, first_nonzero=True), random_digits(rng, 5), random_digits(rng, 11)
        return bank + branch + account + self.calc_rib_key(bank, branch, account)


nir = register(Nir())
rpps = register(Rpps())
adeli = register(Adeli())
finess = register(Finess())
siren = register(Siren())
siret = register(Siret())
iban = register(FrIban("FR"))

# Validator names of the regex packs that are not one identifier's own (`fr_nir`...): the INS
# (identifiant national de santé) is the person's NIR, written where a note says "INS".
VALIDATORS = {"fr_ins": nir.is_valid}
