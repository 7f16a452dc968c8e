"""Target-locale person names: given names and surnames from Faker, the locale's name order and
number of surnames (es: given name + two surnames; fr/en/de: one), compound given names and
surnames, and corpus-wide uniqueness so a test set never holds a name seen in training."""

from __future__ import annotations

import random
import unicodedata
from dataclasses import dataclass


@dataclass
class Person:
    given: list[str]
    surnames: list[str]
    sex: str

    def full(self) -> str:
        return " ".join(self.given + self.surnames)

    def part(self, part: str, words: int = 0) -> str:
        """A partial mention: 'given' -> given name(s); 'family' -> surname(s) (first only if words == 1)."""
        if part == "given":
            return " ".join(self.given)
        if part == "family":
            return self.surnames[0] if words == 1 and len(self.surnames) > 1 else " ".join(self.surnames)
        return self.full()


def _key(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


class NameGenerator:
    """Draw persons from a Faker locale; `unique` keeps every full name distinct across the corpus."""

    def __init__(self, faker, rng: random.Random, surnames: int = 1, unique: bool = True, person_cfg: dict | None = None):
        self.faker = faker
        self.rng = rng
        self.surnames = max(1, int(surnames))
        self.unique = unique
        cfg = person_cfg or {}
        self.compound_given_rate = float(cfg.get("compound_given_rate", 0.0))
        self.given_joiner = str(cfg.get("compound_given_joiner", " "))
        self.compound_surname_rate = float(cfg.get("compound_surname_rate", 0.0))
        self.surname_joiner = str(cfg.get("compound_surname_joiner", "-"))
        self.used: set[str] = set()
        self.collisions = 0

    def _given(self, sex: str) -> str:
        pick = self.faker.first_name_female if sex == "f" else self.faker.first_name_male
        name = pick()
        if self.rng.random() < self.compound_given_rate:
            other = pick()
            if other != name:
                name = f"{name}{self.given_joiner}{other}"
        return name

    def _surname(self) -> str:
        name = self.faker.last_name()
        if self.rng.random() < self.compound_surname_rate:
            other = self.faker.last_name()
            if other != name:
                name = f"{name}{self.surname_joiner}{other}"
        return name

    def person(self, sex: str | None = None) -> Person:
        """A new person; `sex` ('f'/'m', from the source given name) keeps grammatical agreement."""
        for _ in range(200):
            sex = sex if sex in ("f", "m") else self.rng.choice("fm")
            person = Person([self._given(sex)], [self._surname() for _ in range(self.surnames)], sex)
            key = _key(person.full())
            # Faker names may carry characters that would break span boundaries (e.g. a trailing '.').
            if not person.full().replace("-", "").replace(" ", "").replace("'", "").isalpha():
                continue
            if not self.unique or key not in self.used:
                self.used.add(key)
                return person
            self.collisions += 1
        raise RuntimeError("could not draw a new unique name after 200 tries; the locale's name lists are exhausted")
