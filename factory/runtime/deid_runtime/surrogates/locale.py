"""The surrogate data of one locale, read once from its folder (locales/<lc>/, see its README).

Everything language-specific the engine knows is here, as data: formats (dates, phones, addresses),
the words that tell a kind (triggers, titles, organisation keywords) and the word lists surrogates
are drawn from (countries, regions, cities with postal codes, streets, organisations per kind,
professions, given names per sex and surnames). Nothing here imports Faker, Argos or torch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from ..text import fold  # the engine's modules import it from here

HERE = Path(__file__).resolve().parent
LOCALES_DIR = HERE / "locales"
COMMON_FILE = HERE / "common.yml"
DEFAULT_LOCALE = "en"  # the locale of a document whose language has no folder (the router's fallback)

_WORD = re.compile(r"\w+")


class LocaleDataError(ValueError):
    """A surrogate data file that is missing or malformed (the message names the file and line)."""


def folded_words(text: str) -> tuple[str, ...]:
    """The words of `text`, folded, punctuation dropped: 'Sra. Pérez' -> ('sra', 'perez')."""
    return tuple(_WORD.findall(fold(text)))


def ends_with(words: tuple[str, ...], phrases) -> bool:
    """Whether the folded `words` end with one of the `phrases` (tuples of folded words)."""
    return any(len(p) <= len(words) and tuple(words[len(words) - len(p):]) == p for p in phrases)


def starts_with(words: tuple[str, ...], phrases) -> bool:
    return any(len(p) <= len(words) and tuple(words[: len(p)]) == p for p in phrases)


def contains(words: tuple[str, ...], phrases) -> bool:
    return any(tuple(words[i:i + len(p)]) == p for p in phrases for i in range(len(words) - len(p) + 1))


def _read_yaml(path: Path) -> Any:
    if not path.exists():
        raise LocaleDataError(f"surrogate data file not found: {path}")
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as err:
        raise LocaleDataError(f"{path}: not valid YAML ({err})") from None


def read_list(path: Path) -> list[str]:
    """One entry a line; blank lines and lines starting with '#' are skipped."""
    if not path.exists():
        raise LocaleDataError(f"surrogate data file not found: {path}")
    return [line.strip() for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip() and not line.startswith("#")]


def read_cities(path: Path) -> list[tuple[str, str]]:
    rows = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split("\t")
        if len(parts) != 2:
            raise LocaleDataError(f"{path}:{lineno}: expected 'city<TAB>postal code'")
        rows.append((parts[0].strip(), parts[1].strip()))
    return rows


@lru_cache(maxsize=1)
def common() -> dict[str, Any]:
    return _read_yaml(COMMON_FILE)


def _phrases(values: list[str] | None) -> frozenset[tuple[str, ...]]:
    """Trigger phrases as tuples of folded words (compared with the words before a span)."""
    return frozenset(folded_words(v) for v in values or [] if folded_words(v))


@dataclass(eq=False)  # one object per locale (load_locale caches it): hashed by identity
class Locale:
    """One locale's surrogate data (see locales/<lc>/formats.yml for what each part means)."""

    lang: str
    folder: Path
    formats: dict[str, Any]
    countries: list[str]
    regions: list[str]
    cities: list[tuple[str, str]]
    streets: list[str]
    organizations: dict[str, list[str]]
    professions: list[str]
    given_female: list[str]
    given_male: list[str]
    surnames: list[str]
    # folded look-up tables, built once
    gazetteer: dict[tuple[str, ...], str] = field(default_factory=dict)
    triggers: dict[str, dict[str, frozenset]] = field(default_factory=dict)
    _folded: dict[str, list[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # A name in two lists is a city first (Sevilla, a city and a province), then a region;
        # a country is always a country. Triggers before the span decide otherwise.
        for kind, names in (("region", self.regions), ("city", [c for c, _ in self.cities]), ("country", self.countries)):
            for name in names:
                self.gazetteer[folded_words(name)] = kind
        kinds = self.formats.get("kinds") or {}
        for label in ("location", "organization", "person"):
            self.triggers[label] = {kind: _phrases(words) for kind, words in (kinds.get(label) or {}).items()}
        self.postal_code = re.compile(self.formats.get("postal_code") or r"^\d{4,5}$")
        # A region surrogate is drawn among the names that read as regions only (Sevilla, a
        # province too, would read as a city).
        self.region_names = [r for r in self.regions if self.gazetteer[folded_words(r)] == "region"]

    def __getitem__(self, key: str) -> Any:
        try:
            return self.formats[key]
        except KeyError:
            raise LocaleDataError(f"{self.folder / 'formats.yml'}: no `{key}` section") from None

    def folded_names(self, key: str) -> list[str]:
        """A list of `date` (months, weekdays...) folded, computed once."""
        if key not in self._folded:
            self._folded[key] = [fold(n) for n in (self["date"].get(key) or [])]
        return self._folded[key]

    @property
    def calling_code(self) -> str:
        return str(self.formats.get("calling_code", ""))

    def organization_patterns(self, kind: str) -> list[str]:
        patterns = self.organizations.get(kind) or self.organizations.get("hospital")
        if not patterns:
            raise LocaleDataError(f"{self.folder / 'organizations.yml'}: no `{kind}` (nor `hospital`) list")
        return patterns

    @classmethod
    def load(cls, folder: Path) -> "Locale":
        formats = _read_yaml(folder / "formats.yml")
        organizations = _read_yaml(folder / "organizations.yml")
        if not isinstance(organizations, dict):
            raise LocaleDataError(f"{folder / 'organizations.yml'}: expected lists per kind (hospital: [...])")
        return cls(
            lang=str(formats.get("lang") or folder.name),
            folder=folder,
            formats=formats,
            countries=read_list(folder / "countries.txt"),
            regions=read_list(folder / "regions.txt"),
            cities=read_cities(folder / "cities.tsv"),
            streets=read_list(folder / "streets.txt"),
            organizations={str(k): [str(p) for p in v or []] for k, v in organizations.items()},
            professions=read_list(folder / "professions.txt"),
            given_female=read_list(folder / "given_female.txt"),
            given_male=read_list(folder / "given_male.txt"),
            surnames=read_list(folder / "surnames.txt"),
        )


def available() -> list[str]:
    """The locales that have surrogate data."""
    return sorted(p.name for p in LOCALES_DIR.iterdir() if (p / "formats.yml").exists())


@lru_cache(maxsize=None)
def load_locale(lang: str | None, strict: bool = False) -> Locale:
    """The surrogate data of `lang`; the default locale's for a language without data, unless
    `strict` (the training corpus must be written in its own locale: a clear error instead)."""
    folder = LOCALES_DIR / (lang or "")
    if not lang or not (folder / "formats.yml").exists():
        if strict:
            raise LocaleDataError(f"no surrogate data for locale {lang!r}: {folder} (have: {', '.join(available())}); "
                                  f"copy {LOCALES_DIR / DEFAULT_LOCALE} there and translate it")
        folder = LOCALES_DIR / DEFAULT_LOCALE
    return Locale.load(folder)
