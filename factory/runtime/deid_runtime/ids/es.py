"""Spain: DNI, NIE, NASS (Seguridad Social), CCC (bank account) and IBAN."""

from __future__ import annotations

import random
import re

from stdnum.es import ccc as std_ccc
from stdnum.es import dni as std_dni
from stdnum.es import nie as std_nie

from .core import Identifier, StdnumIdentifier, random_digits, register, strip_separators
from .iban import Iban


class Dni(StdnumIdentifier):
    """DNI: 8 digits and a letter, "TRWAGMYFPDXBNJZSQVHLCKE"[number mod 23] (python-stdnum es.dni)."""

    key, module, payload_length = "es.dni", std_dni, 8
    role = "national"

    def calc_check_digit(self, number: str) -> str:
        return std_dni.calc_check_digit(number)


class Nie(StdnumIdentifier):
    """NIE (foreigners): X, Y or Z, 7 digits and the DNI letter of the number with X/Y/Z read as
    0/1/2 (python-stdnum es.nie). No other first letter exists."""

    key, module = "es.nie", std_nie
    role = "national"
    PREFIXES = "XYZ"

    def calc_check_digit(self, number: str) -> str:
        """`number`: the prefix letter and the 7 digits."""
        return std_nie.calc_check_digit(number)

    def draw_payload(self, rng: random.Random) -> str:
        return rng.choice(self.PREFIXES) + random_digits(rng, 7)


class Nass(Identifier):
    """NASS (número de afiliación a la Seguridad Social): province (2 digits, 01-53), number (8)
    and control (2). The control is (province * 10^7 + number) mod 97 when the number is below
    10^7, else the 10 digits of province and number read as one number, mod 97 (rule of the
    Tesorería General de la Seguridad Social). A number below 10^7 may be written with 7 digits.
    python-stdnum has no module for it."""

    key = "es.nass"
    role = "insurance"
    layout = "##/########/##"

    def compact(self, value: str) -> str:
        code = strip_separators(value)
        if len(code) == 11 and code.isdigit():  # the 7-digit writing: its leading zero restored
            code = code[:2] + "0" + code[2:]
        return code

    def calc_check_digit(self, province: str, number: str) -> str:
        if int(number) < 10_000_000:
            base = int(province) * 10_000_000 + int(number)
        else:
            base = int(province + number)
        return f"{base % 97:02d}"

    def is_valid_compact(self, code: str) -> bool:
        if not re.fullmatch(r"\d{12}", code):
            return False
        province, number, control = code[:2], code[2:10], code[10:]
        return 1 <= int(province) <= 53 and self.calc_check_digit(province, number) == control

    def draw(self, rng: random.Random) -> str:
        province = f"{rng.randint(1, 52):02d}"  # the 52 provinces; 53 is accepted (as it always was), never drawn
        number = random_digits(rng, 8)  # a tenth start with 0: the rule's second branch
        return province + number + self.calc_check_digit(province, number)


class Ccc(StdnumIdentifier):
    """CCC (código cuenta cliente): bank (4), branch (4), two check digits, account (10)
    (python-stdnum es.ccc)."""

    key, module = "es.ccc", std_ccc
    role = "bank"
    layout = "#### #### ## ##########"

    def calc_check_digits(self, number: str) -> str:
        """`number`: the 20 digits, its check digits ignored."""
        return std_ccc.calc_check_digits(number)

    def draw(self, rng: random.Random) -> str:
        bank, branch, account = random_digits(rng, 4, first_nonzero=True), random_digits(rng, 4), random_digits(rng, 10)
        return bank + branch + self.calc_check_digits(bank + branch + "00" + account) + account


class EsIban(Iban):
    """Spanish IBAN: the BBAN is a CCC with its own check digits, which python-stdnum's iban
    module checks itself (through es.iban)."""

    def draw_bban(self, rng: random.Random) -> str:
        return ccc.generate(rng)


dni = register(Dni())
nie = register(Nie())
nass = register(Nass())
ccc = register(Ccc())
iban = register(EsIban("ES"))


# ---------------------------------------------------------------------------------------------------
# Catalonia (issue 29): the CIP of CatSalut, the personal code printed on the Catalan health card
# (targeta sanitària individual, TSI). Self-contained: nothing above uses it, and it uses only what
# core.py offers, so this block can move with the Catalan locale as it is.


class CatSalutCip(Identifier):
    """CIP of CatSalut (Servei Català de la Salut): 14 characters, printed "AAAA S YYMMDD NN C": the
    first two letters of the first and of the second surname, the sex (0 man, 1 woman), the birth
    date (YYMMDD), two digits that tell apart people sharing the rest, and a last digit. CatSalut
    publishes the composition (letters of the surnames, birth date, digits it assigns) but not a
    rule for the last digit, and python-stdnum has no module for it: is_valid checks what is
    published (four letters, the sex digit, a real calendar date, five digits), so it tells a CIP
    from a lab code or a 14-digit number, not a mistyped last digit from the right one."""

    key = "es.cip_catsalut"
    role = "insurance"  # the health card number, as the Spanish corpora's CIP
    layout = "#### # ###### ## #"
    _SHAPE = re.compile(r"[A-Z]{4}[01]\d{9}")  # letters, sex, YYMMDD, two digits, the last digit
    _LETTERS = "ABCDEFGHIJLMNOPRSTUVZ"  # letters that begin Catalan and Spanish surnames (no K, Q, W, X, Y)

    def is_valid_compact(self, code: str) -> bool:
        if len(code) != 14 or not self._SHAPE.fullmatch(code):
            return False
        yy, mm, dd = int(code[5:7]), int(code[7:9]), int(code[9:11])
        return any(_is_date(century + yy, mm, dd) for century in (1900, 2000))

    def draw(self, rng: random.Random) -> str:
        letters = "".join(rng.choice(self._LETTERS) for _ in range(4))
        yy, mm = rng.randint(0, 99), rng.randint(1, 12)
        dd = rng.randint(1, 28)  # a day every month has
        return f"{letters}{rng.randint(0, 1)}{yy:02d}{mm:02d}{dd:02d}{rng.randint(0, 9):02d}{rng.randint(0, 9)}"


def _is_date(year: int, month: int, day: int) -> bool:
    import datetime

    try:
        datetime.date(year, month, day)
    except ValueError:
        return False
    return True


cip_catsalut = register(CatSalutCip())


def dni_or_nie(value: str) -> bool:
    """A DNI or a NIE: one pattern of the pack reads both (a NIE is a DNI with X/Y/Z in front)."""
    return dni.is_valid(value) or nie.is_valid(value)


# Validator names of the regex packs that are not one identifier's own (`es_dni`...).
VALIDATORS = {"es_dni_or_nie": dni_or_nie}
