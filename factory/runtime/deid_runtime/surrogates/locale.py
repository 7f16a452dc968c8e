"""The surrogate data of one locale, read once from its folder (docs/surrogate_data.md lists the files).

Everything language-specific the engine knows is here, as data: formats (dates, phones, addresses),
the words that tell a kind (triggers, organisation keywords, and the locale's titles: titles.yml,
deid_runtime/titles.py) and the word lists surrogates are drawn from (countries, regions, cities with postal codes, streets, organisations per kind,
professions, given names per sex and surnames). Nothing here imports Faker, Argos or torch.

Where a locale's data is: the runtime holds none of it (a locale is added as data, without editing
this package). A small registry says where each locale's folder is, looked up in this order:

  1. folders registered one by one: `register_locale_data("fr", folder)`;
  2. roots registered with `register_locale_root(root)`, the newest first: `<root>/<lc>/surrogate_data/`
     (the factory registers its project's `languages/`, deid_factory.locale);
  3. entry points of the group `deid_runtime.locales` (ENTRY_POINT_GROUP) that installed packages
     declare: name = the language code, value = a path or a function returning one. Every deid_<lc>
     wheel declares its own (`factory package` copies the locale's data into it), so an installed
     pipeline carries its language's data and needs no checkout.

A folder counts when it holds a formats.yml.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..text import fold  # the engine's modules import it from here
from ..titles import TITLES_FILE, Titles
from ..yamlio import EXPECTED_MAPPING, read_yaml_mapping

HERE = Path(__file__).resolve().parent
COMMON_FILE = HERE / "common.yml"  # shared by every locale: it stays in the runtime
DEFAULT_LOCALE = "en"  # the locale of a document whose language has no folder (the router's fallback)
DATA_FOLDER = "surrogate_data"  # <root>/<lc>/surrogate_data/ under a registered root
ENTRY_POINT_GROUP = "deid_runtime.locales"

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


def _read_yaml(path: Path, expected: str = EXPECTED_MAPPING) -> dict[str, Any]:
    """A surrogate data file that holds a mapping (the runtime's one YAML loader, deid_runtime.yamlio)."""
    if not path.exists():
        raise LocaleDataError(f"surrogate data file not found: {path}")
    return read_yaml_mapping(path, LocaleDataError, expected)


def read_list(path: Path) -> list[str]:
    """One entry a line; blank lines and lines starting with '#' are skipped."""
    if not path.exists():
        raise LocaleDataError(f"surrogate data file not found: {path}")
    return [line.strip() for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip() and not line.startswith("#")]


def read_forms(path: Path) -> list[tuple[str, str]]:
    """A list whose entries may have a masculine and a feminine form, 'enfermero|enfermera'; an entry
    with one form ('fisioterapeuta') serves both."""
    forms = []
    for entry in read_list(path):
        parts = [p.strip() for p in entry.split("|")]
        if len(parts) > 2 or not all(parts):
            raise LocaleDataError(f"{path}: {entry!r} is not 'form' or 'masculine|feminine'")
        forms.append((parts[0], parts[-1]))
    return forms


def read_cities(path: Path) -> list[tuple[str, str]]:
    """`city<TAB>postal code` pairs, as written: a town with several postal codes has one line per
    code (its first line gives the code a town is listed with)."""
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
class LocaleData:
    """One locale's surrogate data (docs/surrogate_data.md says what each part means)."""

    lang: str
    folder: Path
    formats: dict[str, Any]
    countries: list[str]
    regions: list[str]
    cities: list[tuple[str, str]]  # (town, its first postal code), one per town
    streets: list[str]
    organizations: dict[str, list[str]]
    professions: list[tuple[str, str]]  # (masculine, feminine); the same form twice when one serves both
    given_female: list[str]
    given_male: list[str]
    surnames: list[str]
    titles: Titles = field(default_factory=lambda: Titles({}))
    # every real postal code of each town (cities.tsv, all its lines): a postal code and its town are
    # drawn as a pair; empty: the first code of `cities`
    postcodes: dict[str, list[str]] = field(default_factory=dict)
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
        # A title tells a PERSON, and its sex where only one sex bears it ("Mme", not "Dr" in French):
        # person triggers `titles`, and `female`/`male` beside the agreeing words of formats.yml.
        person = self.triggers["person"]
        if "titles" in person:
            raise LocaleDataError(f"{self.folder / 'formats.yml'}: kinds.person.titles: a locale's titles are in {TITLES_FILE}")
        female, male = _phrases(self.titles.forms("f")), _phrases(self.titles.forms("m"))
        person["titles"] = _phrases(self.titles.forms())
        person["female"] = (female - male) | person.get("female", frozenset())
        person["male"] = (male - female) | person.get("male", frozenset())
        self.postal_code = re.compile(self.formats.get("postal_code") or r"^\d{4,5}$")
        for town, postal in self.cities:
            self.postcodes.setdefault(town, [postal])
        self.town_of_postcode = {" ".join(fold(code).split()): town for town, codes in self.postcodes.items() for code in codes}
        # A region surrogate is drawn among the names that read as regions only (Sevilla, a
        # province too, would read as a city).
        self.region_names = [r for r in self.regions if self.gazetteer[folded_words(r)] == "region"]
        # grammatical gender of the listed professions that have two forms ("enfermera" -> f)
        self.profession_genders = {fold(form): gender for m, f in self.professions if m != f
                                   for form, gender in ((m, "m"), (f, "f"))}
        # articles before an organisation and the head words they agree with (formats.yml `articles`)
        articles = self.formats.get("articles") or {}
        self.article_groups = {fold(str(a)).replace("’", "'"): str(group)
                               for group, forms in (articles.get("before") or {}).items() for a in forms or []}
        self.head_groups = {fold(str(h)): str(group) for group, heads in (articles.get("heads") or {}).items()
                            for h in heads or []}
        self.elision_vowels = fold(str(articles.get("vowels") or ""))
        endings = self.formats.get("profession_endings") or {}
        # (folded ending, gender or None), longest first: "-ista" (both) before "-a" (f)
        self.profession_endings = sorted(((fold(str(e)), None if g == "both" else g)
                                          for g, ends in endings.items() for e in ends or []),
                                         key=lambda pair: -len(pair[0]))

    def __getitem__(self, key: str) -> Any:
        try:
            return self.formats[key]
        except KeyError:
            raise LocaleDataError(f"{self.folder / 'formats.yml'}: no `{key}` section") from None

    def folded_names(self, key: str) -> list[str]:
        """A list of `date` (months, weekdays...) folded, computed once."""
        if key not in self._folded:
            # an abbreviation is listed as the locale writes it ("janv."): it is found without its dot
            self._folded[key] = [fold(str(n)).rstrip(".") for n in (self["date"].get(key) or [])]
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
    def load(cls, folder: Path, lang: str | None = None) -> "LocaleData":
        """The data of one folder; its language is formats.yml's `lang`, else `lang`, else the
        folder's name (<lc>/surrogate_data/: the parent's)."""
        folder = Path(folder)
        formats = _read_yaml(folder / "formats.yml")
        organizations = _read_yaml(folder / "organizations.yml", "lists per kind (hospital: [...])")
        pairs = read_cities(folder / "cities.tsv")
        postcodes: dict[str, list[str]] = {}
        for town, postal in pairs:
            postcodes.setdefault(town, []).append(postal)
        return cls(
            lang=str(formats.get("lang") or lang or (folder.parent.name if folder.name == DATA_FOLDER else folder.name)),
            folder=folder,
            formats=formats,
            countries=read_list(folder / "countries.txt"),
            regions=read_list(folder / "regions.txt"),
            cities=[(town, codes[0]) for town, codes in postcodes.items()],
            postcodes=postcodes,
            streets=read_list(folder / "streets.txt"),
            organizations={str(k): [str(p) for p in v or []] for k, v in organizations.items()},
            professions=read_forms(folder / "professions.txt"),
            given_female=read_list(folder / "given_female.txt"),
            given_male=read_list(folder / "given_male.txt"),
            surnames=read_list(folder / "surnames.txt"),
            titles=Titles.read(folder / TITLES_FILE, LocaleDataError),
        )


# ---------------------------------------------------------------------- where each locale's data is
_FOLDERS: dict[str, Path] = {}  # register_locale_data
_ROOTS: list[Path] = []         # register_locale_root, the newest first


def _has_data(folder: Path | None) -> bool:
    return folder is not None and (folder / "formats.yml").is_file()


def register_locale_data(lang: str, folder: str | Path) -> None:
    """Read the surrogate data of `lang` from `folder` (wins over roots and installed packages)."""
    _FOLDERS[str(lang)] = Path(folder)
    load_locale.cache_clear()  # a locale loaded (or fallen back) before may now read elsewhere


def register_locale_root(root: str | Path) -> None:
    """Read each locale's data from `<root>/<lc>/surrogate_data/` (a factory project's languages/).
    A root registered later is searched first; registering one again moves it to the front."""
    root = Path(root)
    if root in _ROOTS:
        _ROOTS.remove(root)
    _ROOTS.insert(0, root)
    load_locale.cache_clear()


def _entry_point_folders() -> dict[str, Path]:
    """lang -> folder, as the installed packages declare them (group ENTRY_POINT_GROUP). A broken
    declaration is skipped with a warning naming the package: it must not stop other languages."""
    import logging
    from importlib.metadata import entry_points

    found: dict[str, Path] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name in found:  # the first on sys.path wins, as for the package itself
            continue
        try:
            value = ep.load()
            folder = Path(value() if callable(value) else value)
        except Exception as err:  # noqa: BLE001 - whatever an installed package does wrong
            logging.getLogger(__name__).warning("entry point %s (%s) of group %s: %s", ep.name, ep.value,
                                                ENTRY_POINT_GROUP, type(err).__name__)
            continue
        if _has_data(folder):
            found[ep.name] = folder
    return found


def locale_folder(lang: str) -> Path | None:
    """The folder of `lang`'s surrogate data (registered folder, then roots, then installed
    packages), or None when no one has it."""
    lang = str(lang)
    if _has_data(_FOLDERS.get(lang)):
        return _FOLDERS[lang]
    for root in _ROOTS:
        if _has_data(root / lang / DATA_FOLDER):
            return root / lang / DATA_FOLDER
    # entry points last, and only when needed: loading them imports the installed deid_<lc> packages
    return _entry_point_folders().get(lang)


def locale_folders() -> dict[str, Path]:
    """Every locale with surrogate data and its folder, by the precedence of locale_folder."""
    found = dict(_entry_point_folders())
    for root in reversed(_ROOTS):  # the newest root last: it wins
        if root.is_dir():
            found.update({p.parent.name: p for p in root.glob(f"*/{DATA_FOLDER}") if _has_data(p)})
    found.update({lang: folder for lang, folder in _FOLDERS.items() if _has_data(folder)})
    return dict(sorted(found.items()))


def locales_with_data() -> list[str]:
    """The locales that have surrogate data (registered folders and roots, installed deid_<lc> wheels)."""
    return list(locale_folders())


def _where(lang: str | None) -> str:
    """Where the data of `lang` would be read from, for an error message."""
    places = [str(root / (lang or "<lc>") / DATA_FOLDER) for root in _ROOTS[:1]]
    places.append(f"an installed package's entry point {lang or '<lc>'!r} in group {ENTRY_POINT_GROUP!r} (a deid_<lc> wheel)")
    return " or ".join(places)


@lru_cache(maxsize=None)
def load_locale(lang: str | None, strict: bool = False) -> LocaleData:
    """The surrogate data of `lang`. A language without data gets the default locale's (`en`), or,
    where `en` has none registered (a runtime with only deid_fr installed), the first locale with
    data in code order, so redaction still writes surrogates; none at all is a LocaleDataError.
    `strict` (the training corpus must be written in its own locale) gives a clear error instead of
    any fallback, naming where the data should be."""
    folder = locale_folder(lang) if lang else None
    if folder is not None:
        return LocaleData.load(folder, lang=lang)
    have = locale_folders()
    fallback = have.get(DEFAULT_LOCALE) or next(iter(have.values()), None)
    if strict:
        copy = f"copy {fallback} there and translate it" if fallback else "write its data there (docs/surrogate_data.md)"
        raise LocaleDataError(f"no surrogate data for locale {lang!r}: {_where(lang)} "
                              f"(have: {', '.join(have) or 'none'}); {copy}")
    if fallback is None:
        raise LocaleDataError(f"no surrogate data for locale {lang!r} nor any other: none is registered "
                              f"(install a deid_<lc> pipeline, or call register_locale_data / register_locale_root)")
    return LocaleData.load(fallback)
