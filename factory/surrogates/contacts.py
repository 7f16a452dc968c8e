"""Phones, e-mails, URLs, IP addresses, street addresses, places, organisations and professions of
the target locale. Formats are data (languages/<lc>/surrogates.yml), word lists are project data
(corpora/surrogates/<lc>/); this module only fills slots."""

from __future__ import annotations

import random
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .ids import fill_pattern


def read_list(path: Path) -> list[str]:
    if not path.exists():
        raise FileNotFoundError(f"surrogate data file not found: {path}")
    return [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip() and not line.startswith("#")]


def read_cities(path: Path) -> list[tuple[str, str]]:
    rows = []
    for lineno, line in enumerate(read_list(path), start=1):
        parts = line.split("\t")
        if len(parts) != 2:
            raise ValueError(f"{path}: line {lineno}: expected 'city<TAB>postal code'")
        rows.append((parts[0].strip(), parts[1].strip()))
    return rows


def ascii_slug(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    plain = "".join(c for c in decomposed if not unicodedata.combining(c)).lower()
    return re.sub(r"[^a-z0-9]+", "", plain)


@dataclass
class LocaleData:
    cities: list[tuple[str, str]]
    streets: list[str]
    organizations: list[str]
    professions: list[str]
    cfg: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def load(cls, folder: Path, cfg: dict[str, Any]) -> "LocaleData":
        return cls(
            read_cities(folder / "cities.tsv"),
            read_list(folder / "streets.txt"),
            read_list(folder / "organizations.txt"),
            read_list(folder / "professions.txt"),
            cfg,
        )


def phone(rng: random.Random, cfg: dict[str, Any], shape: dict[str, Any] | None) -> str:
    key = "international" if (shape or {}).get("international") else "national"
    return fill_pattern(rng, rng.choice(cfg.get(key) or cfg["national"]))


def email(rng: random.Random, cfg: dict[str, Any], given: str, surname: str) -> str:
    g, s = ascii_slug(given), ascii_slug(surname)
    local = rng.choice([f"{g}.{s}", f"{g[:1]}{s}", f"{g}{s}{rng.randint(1, 99)}", f"{s}.{g}"])
    return f"{local}@{rng.choice(cfg['domains'])}"


def url(rng: random.Random, cfg: dict[str, Any], word: str) -> str:
    return rng.choice(cfg["templates"]).format(word=ascii_slug(word) or "exemple")


def ip(rng: random.Random, cfg: dict[str, Any]) -> str:
    if rng.random() < float(cfg.get("private_share", 0.5)):
        return rng.choice([f"10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}",
                           f"192.168.{rng.randint(0, 255)}.{rng.randint(1, 254)}",
                           f"172.{rng.randint(16, 31)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}"])
    return f"{rng.randint(11, 223)}.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}"


def address(rng: random.Random, cfg: dict[str, Any], data: LocaleData) -> str:
    template = rng.choice(cfg["templates"])
    return template.format(n=rng.randint(1, 180), n2=rng.randint(1, 40), type=rng.choice(cfg["types"]), street=rng.choice(data.streets))


def location(rng: random.Random, data: LocaleData, shape: dict[str, Any] | None) -> str:
    """A city, a postal code (the source held only digits) or 'code city' (both)."""
    shape = shape or {}
    city, code = rng.choice(data.cities)
    if shape.get("digits") and shape.get("words", 1) <= 1:
        return code
    if shape.get("digits"):
        return f"{code} {city}"
    return city


def organization(rng: random.Random, data: LocaleData, surname: str) -> str:
    city, _ = rng.choice(data.cities)
    return rng.choice(data.organizations).format(city=city, surname=surname)


def profession(rng: random.Random, data: LocaleData) -> str:
    return rng.choice(data.professions)
