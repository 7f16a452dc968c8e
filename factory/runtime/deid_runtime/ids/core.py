"""What every identifier shares: the `Identifier` base, the registry, separators and layouts.

An identifier is one object with four parts, in the style of python-stdnum:
  compact(value)       the value without the separators people write (spaces, dots, dashes, slashes)
  calc_check_digit(..) the check digit(s) for a payload, where the format has any
  is_valid(value)      True only if the format and the check digits hold; never raises
  generate(rng)        a random valid value, compact, drawn from `rng` alone (reproducible)
and a `role`, one of ROLES: what the identifier identifies, whatever the country.
Formats python-stdnum knows (`StdnumIdentifier`) take its compact/is_valid; the country modules
add only what stdnum lacks. Nothing here may import Faker, Argos or torch: this package travels in
the deid-runtime wheel, which every deid_<lang> wheel requires.
"""

from __future__ import annotations

import random
import re
import string
from types import ModuleType
from typing import Callable, Iterable

from stdnum import luhn

SEPARATORS = re.compile(r"[\s.\-/]")
KEY = re.compile(r"[a-z]{2}\.[a-z][a-z_]*")
PLACE = "#"  # in a layout, one character of the compact value
# A format that excludes some values (an NHS number whose check would be 10...) is met by drawing
# again; no format here rejects more than a few percent of draws, so this many is never reached.
MAX_DRAWS = 1000

# What an identifier identifies, in every country: a training corpus replaces a source identifier by
# one of the target locale's for the same role (languages/<lc>/surrogates.yml, `ids.roles`): a
# Spanish DNI becomes a French NIR, a colegiado number an RPPS.
ROLES = (
    "national",      # a person's national identity or tax number (DNI, NIR, SSN, BSN...)
    "insurance",     # a person's health insurance number (NASS, NHS number, KVNR...)
    "professional",  # a health professional's licence or registry number (RPPS, NPI, LANR...)
    "organization",  # an establishment or company (FINESS, SIRET, partita IVA...)
    "bank",          # a bank account (IBAN, CCC)
    "record",        # a patient's hospital record number (no check digits; the default)
    "episode",       # a stay, visit or request number
    "vehicle",       # a licence plate
    "device",        # a device or implant serial number
)
DEFAULT_ROLE = "record"  # a source identifier nothing tells the role of

_REGISTRY: dict[str, "Identifier"] = {}


def strip_separators(value: str) -> str:
    """The value without spaces, dots, dashes and slashes, upper-cased (check letters get typed
    in lower case)."""
    return SEPARATORS.sub("", value).upper()


def random_digits(rng: random.Random, n: int, first_nonzero: bool = False) -> str:
    first = rng.choice("123456789" if first_nonzero else string.digits)
    return first + "".join(rng.choice(string.digits) for _ in range(n - 1))


def solve_check_digits(payload: str, is_valid: Callable[[str], bool], width: int = 1) -> str | None:
    """The `width` digits that make `payload + digits` valid, or None where none does. For formats
    whose rule python-stdnum checks but does not compute: the rule then lives in stdnum alone."""
    for n in range(10**width):
        digits = f"{n:0{width}d}"
        if is_valid(payload + digits):
            return digits
    return None


class Identifier:
    """One identifier format. Subclasses set `key`, implement `is_valid_compact`, and either
    `calc_check_digit` with `payload_length` or `draw_payload`, or `draw` itself."""

    key: str = ""  # "<country>.<name>", its name in the registry
    role: str = ""  # one of ROLES
    # How the value is usually written, '#' for each character of the compact value (see
    # `layout`); None: written compact.
    layout: str | None = None

    def compact(self, value: str) -> str:
        return strip_separators(value)

    def is_valid(self, value: str) -> bool:
        try:
            return bool(self.is_valid_compact(self.compact(value)))
        except (ValueError, KeyError, IndexError):  # malformed input is simply not valid
            return False

    def is_valid_compact(self, code: str) -> bool:
        raise NotImplementedError

    def calc_check_digit(self, payload: str) -> str | None:
        """The check digit(s) that follow `payload`; None where the format has no value for them."""
        raise NotImplementedError

    # Most formats are a payload and its check digit(s): a subclass says how long a payload is
    # (random digits, the first not 0) or draws it itself; formats laid out otherwise override draw.
    payload_length: int = 0

    def draw_payload(self, rng: random.Random) -> str | None:
        return random_digits(rng, self.payload_length, first_nonzero=True)

    def draw(self, rng: random.Random) -> str | None:
        """One random compact value, valid by construction, or None to draw again."""
        payload = self.draw_payload(rng)
        check = None if payload is None else self.calc_check_digit(payload)
        return None if check is None else payload + check

    def generate(self, rng: random.Random) -> str:
        """A random valid value in compact form."""
        for _ in range(MAX_DRAWS):
            value = self.draw(rng)
            if value is None:
                continue
            if not self.is_valid(value):  # a bug in draw(): never hand out an invalid identifier
                raise AssertionError(f"{self.key}: a drawn value fails its own check")
            return value
        raise RuntimeError(f"{self.key}: no valid value in {MAX_DRAWS} draws")

    def written(self, value: str) -> str:
        """A compact value in the usual written layout of the format."""
        return layout(value, self.layout) if self.layout else value

    def __repr__(self) -> str:
        return f"<identifier {self.key}>"


class StdnumIdentifier(Identifier):
    """A format python-stdnum implements: its compact and is_valid, our separators first."""

    module: ModuleType

    def compact(self, value: str) -> str:
        return self.module.compact(strip_separators(value))

    def is_valid_compact(self, code: str) -> bool:
        return self.module.is_valid(code)


class LuhnIdentifier(Identifier):
    """`length` digits whose last is a Luhn (mod 10) digit, computed over `luhn_prefix` + the
    digits (the prefix is not written: the NPI's 80840)."""

    length: int
    luhn_prefix: str = ""

    def calc_check_digit(self, payload: str) -> str:
        return luhn.calc_check_digit(self.luhn_prefix + self.luhn_digits(payload))

    def luhn_digits(self, code: str) -> str:
        """The digits the Luhn key is computed over (FINESS reads Corsica's 2A/2B as 20)."""
        return code

    def is_valid_compact(self, code: str) -> bool:
        digits = self.luhn_digits(code)
        return len(code) == self.length and digits.isdigit() and luhn.is_valid(self.luhn_prefix + digits)

    def draw_payload(self, rng: random.Random) -> str:
        return random_digits(rng, self.length - 1)


def register(identifier: Identifier) -> Identifier:
    if not KEY.fullmatch(identifier.key):
        raise ValueError(f"identifier key {identifier.key!r} is not '<country>.<name>'")
    if identifier.role not in ROLES:
        raise ValueError(f"identifier {identifier.key!r}: role {identifier.role!r} is not one of {', '.join(ROLES)}")
    if identifier.key in _REGISTRY:
        raise ValueError(f"identifier {identifier.key!r} registered twice")
    _REGISTRY[identifier.key] = identifier
    return identifier


def get(key: str) -> Identifier:
    try:
        return _REGISTRY[key]
    except KeyError:
        raise KeyError(f"unknown identifier {key!r}; known: {', '.join(sorted(_REGISTRY))}") from None


def keys(countries: Iterable[str] = ()) -> list[str]:
    """The registered keys, sorted; only those of `countries` ("es", "fr"...) when given."""
    wanted = set(countries)
    return sorted(k for k in _REGISTRY if not wanted or k.split(".")[0] in wanted)


def layout(value: str, pattern: str) -> str:
    """Lay a compact value out in a written layout: each '#' takes the next character of the
    value, anything else is written as is. layout("281234567840", "## ######## ##") ->
    "28 12345678 40". The message of a mismatch names lengths only (a value may be PHI)."""
    places = pattern.count(PLACE)
    if places != len(value):
        raise ValueError(f"layout {pattern!r} has {places} places for a value of {len(value)} characters")
    chars = iter(value)
    return "".join(next(chars) if ch == PLACE else ch for ch in pattern)


def layout_of(value: str) -> str:
    """The layout a written value has: every character but the separators becomes '#'."""
    return "".join(ch if SEPARATORS.fullmatch(ch) else PLACE for ch in value)
