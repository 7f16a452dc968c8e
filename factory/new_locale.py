"""`factory new-locale`: a new locale, every file of it scaffolded as data to translate or fill in
(docs/adding_a_locale.md is the checklist that goes with it).

Two choices decide what the files hold:

  --country     the ISO 3166 country whose identifiers the locale uses (deid_runtime/ids/<cc>.py;
                default: the locale code): the `identifiers` of its surrogate data, the identifier
                kinds of its surrogates.yml, the validators its regex pack is told about.
  --start-from  a locale whose files the new one starts from (default: the project's locale of that
                country, the one whose surrogate data names it, else `en`): its settings
                (silver.yml, placeholders.yml, surrogates.yml, errors.yml) and its surrogate data
                (languages/<start>/surrogate_data/: formats, word lists, titles) are copied, and
                the starter synthetic corpus takes from that data how dates, months, weekdays, ages
                and phone numbers are written, and its towns with their postal codes, streets,
                countries, hospitals, professions and e-mail domains. Its calling code and surnames
                per name are the defaults of --calling-code and --surnames.

The start locale is read from the project the locale is written into, or, when that project has
no folder of it, from the data the factory ships (a new project starts from the shipped locales).
Everything is written into the project `root` (nothing into a package), the project files rendered.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import typer

from . import SHIPPED_ROOT, project_root
from .locale import SETTINGS_FILE, SURROGATE_DATA, Locale, project_locales, languages_dir, packs_dir, synth_dir

TEMPLATES = Path(__file__).parent / "templates" / "new_locale"
# Per-concern settings a new locale starts from, copied from the start locale with a note on top:
# they hold word lists and formats of that language that the new locale must translate.
STARTER_CONCERNS = ("silver.yml", "placeholders.yml", "surrogates.yml", "errors.yml")
# the clinical lexicon of a pack folder (deid_runtime/clinical.py), copied from the start locale
LEXICON_FILES = ("clinical.yml", "drugs.txt", "checks.yml")
DEFAULT_START = "en"
STARTER_ENTRIES = 6  # entries of each word list the starter corpus takes from the start locale's data
# The start locale's date formats (surrogate data, Python format fields) in the synthetic corpus's fields
_DATE_FIELDS = {"{d:02d}": "{dd}", "{m:02d}": "{mm}", "{Y}": "{yyyy}", "{y:02d}": "{yy}", "{d}": "{d}", "{m}": "{m}",
                "{month}": "{month}"}


class NewLocaleError(ValueError):
    """A locale that cannot be scaffolded; the message says which file or option."""


def country_locale(country: str, root: str | Path | None = None) -> str | None:
    """The locale of the project `root` (default: the data the factory ships) whose surrogate data
    names `country` among its `identifiers` (the locale of that code first: es for es), or None."""
    from deid_runtime.surrogates.locale import LocaleData

    root = Path(root) if root is not None else SHIPPED_ROOT
    found = []
    for lang in project_locales(root):
        data_dir = Locale.load(lang, root).surrogate_data_dir
        if (data_dir / "formats.yml").is_file():
            identifiers = LocaleData.load(data_dir).formats.get("identifiers") or []
            if country in [str(c).lower() for c in identifiers]:
                found.append(lang)
    return country if country in found else (found[0] if found else None)


def start_locale(start_from: str, root: Path) -> Locale:
    """The start locale: `root`'s when that project has its folder, else the one the factory ships.
    It must have surrogate data: the new locale's is a copy of it."""
    start = Locale.of(start_from, root if Locale.folder_of(start_from, root).is_dir() else SHIPPED_ROOT)
    if not (start.surrogate_data_dir / "formats.yml").is_file():
        raise NewLocaleError(f"start locale {start_from!r} has no surrogate data ({start.surrogate_data_dir}): "
                             f"start from a complete locale (--start-from)")
    return start


def _flow(values: Any) -> str:
    """A value as a one-line YAML flow item (JSON is YAML), for the templates' @KEY@ slots."""
    return json.dumps(values, ensure_ascii=False)


def _unique(values) -> list:
    return list(dict.fromkeys(values))


def _synth_date(pattern: str) -> str | None:
    """A date format of the surrogate data in the synthetic corpus's fields; None when it has a field
    the corpus does not write."""
    fields = re.findall(r"\{[^}]*\}", pattern)
    if any(f not in _DATE_FIELDS for f in fields):
        return None
    return re.sub(r"\{[^}]*\}", lambda m: _DATE_FIELDS[m.group()], pattern)


def starter_corpus_values(start: Locale, calling_code: str, country: str) -> dict[str, str]:
    """The @KEY@ values of the starter synthetic corpus (templates/new_locale/synth/) that say how
    the country and its language write things, from the start locale's surrogate data."""
    from deid_runtime import ids
    from deid_runtime.surrogates.locale import LocaleData

    data = LocaleData.load(start.surrogate_data_dir)
    date = data["date"]
    numeric = _unique(d for d in map(_synth_date, (date.get("numeric") or {}).get("dmy") or []) if d)
    written = _unique(d for d in map(_synth_date, (date.get("written") or {}).get("dmy") or []) if d)
    phones = [p.replace("{cc}", calling_code) for p in [*data["phone"].get("national", []), *data["phone"].get("international", [])]]
    address = (data["address"].get("with_number") or ["{n} {street} {type}"])[0]
    hospitals = [p.replace("{city}", "{places.city}") for p in data.organization_patterns("hospital") if "{surname}" not in p]
    n = STARTER_ENTRIES
    synth_formats = start.synth_dir / "formats.yml"
    decimal_sep = "."
    if synth_formats.is_file():
        from .records import read_yaml_mapping

        decimal_sep = str(read_yaml_mapping(synth_formats, NewLocaleError, "settings").get("decimal_sep", "."))
    return {
        "START": start.lang,
        "COUNTRY": country,
        "COUNTRY_IDS": ", ".join(ids.keys([country])) or "none yet (deid_runtime/ids/<cc>.py adds a country)",
        "MONTHS": _flow(date["months"]),
        "MONTHS_ABBR": _flow(date.get("months_abbr") or date["months"]),
        "WEEKDAYS": _flow(date["weekdays"]),
        "DATES_NUMERIC": _flow(numeric or ["{dd}/{mm}/{yyyy}"]),
        "DATES_TEXT": _flow(written or ["{d} {month} {yyyy}"]),
        "AGES": _flow(data["age"]["with_unit"]),
        "PHONES": _flow(phones),
        "DECIMAL_SEP": _flow(decimal_sep),
        "PLACES": _flow([{"city": city, "postcode": postal} for city, postal in data.cities[:n]]),
        "STREET_TYPES": _flow(_unique(data["address"]["types"])[:n]),
        "STREET_NAMES": _flow(data.streets[:n]),
        "COUNTRIES": _flow(data.countries[:n]),
        "HOSPITALS": _flow(hospitals[:n] or ["{places.city}"]),
        "PROFESSIONS": _flow(_unique(m for m, _ in data.professions)[:n]),
        "EMAIL_DOMAINS": _flow(data["email"]["domains"][:3]),
        "ADDRESS": _flow(address.replace("{n}", "{n:1-180}").replace("{type}", "{street_types}")
                         .replace("{street}", "{street_names}")),
    }


def _set_top_level(text: str, key: str, value: str) -> str:
    """`text` (YAML) with its top-level `key:` line set to `value` (added at the end when missing);
    the rest of the file, comments included, is kept as written."""
    line = re.compile(rf"^{re.escape(key)}:.*$", re.M)
    if line.search(text):
        return line.sub(lambda _: f"{key}: {value}", text, count=1)
    return text.rstrip("\n") + f"\n{key}: {value}\n"


def _retarget(text: str, start_from: str, lang: str) -> str:
    """A copied settings file made the new locale's: its `lang:` (where it has one) and the paths and
    commands naming the locale it was copied from."""
    if re.search(r"^lang:", text, re.M):
        text = _set_top_level(text, "lang", lang)
    for old, new in ((f"languages/{start_from}/", f"languages/{lang}/"),
                     (f"--lang {start_from}", f"--lang {lang}"), (f"`{start_from}`", f"`{lang}`")):
        text = text.replace(old, new)
    return text


def _local_id_roles(text: str, country: str) -> str:
    """surrogates.yml with the `ids.roles` of another country replaced: a kind of the registry that is
    not the new country's becomes a plain number (`pattern`), an IBAN becomes the country's IBAN, and a
    comment lists the country's identifier kinds to put back by hand (the roles are data: which
    identifier is the national one, which the insurance one, only the locale's author knows)."""
    import yaml

    from deid_runtime import ids
    from deid_runtime.validators import validator_name

    data = yaml.safe_load(text) or {}
    own = [f"{validator_name(k)} ({ids.get(k).role})" for k in ids.keys([country]) if not k.endswith(".iban")]
    has_iban = f"{country}.iban" in ids.keys([country])
    roles = (data.get("ids") or {}).get("roles") or {}
    for role, options in roles.items():
        kept = []
        for option in options or []:
            kind = str(option.get("kind", "pattern"))
            if kind == "iban":
                option = {**option, "country": country.upper()} if has_iban else {"kind": "pattern", "patterns": ["##########"], "weight": option.get("weight", 1)}
            elif kind != "pattern" and not kind.startswith(f"{country}_"):
                option = {"kind": "pattern", "patterns": ["#########"], "weight": option.get("weight", 1)}
            if option not in kept:
                kept.append(option)
        roles[role] = kept
    header = "".join(line + "\n" for line in text.splitlines() if line.startswith("#"))
    choices = (f"# Identifier kinds of country {country!r} (factory/runtime/deid_runtime/ids/) and their roles: "
               f"{', '.join(own) or 'none yet'};\n"
               f"# put them in `ids.roles` below in place of the plain numbers (`kind: pattern`) where they fit.\n")
    return header + choices + yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


def _copy_surrogate_data(source: Path, target: Path, start_from: str, name: str, values: dict) -> list[Path]:
    """The surrogate engine's data of `start_from` (its titles included), copied for the new locale
    to translate; the settings the scaffold knows (faker locale, surnames, calling code, identifier
    country) set."""
    target.mkdir(parents=True)
    written = []
    for path in sorted(p for p in source.iterdir() if p.is_file()):
        text = path.read_text(encoding="utf-8")
        if path.name == "formats.yml":
            text = _set_top_level(text, "lang", values["lang"])
            text = _set_top_level(text, "faker_locale", values["faker_locale"])
            text = _set_top_level(text, "surnames_per_name", str(values["surnames"]))
            text = _set_top_level(text, "calling_code", f"'{values['calling_code']}'")
            text = _set_top_level(text, "identifiers", f"[{values['country']}]")
        if path.suffix in (".yml", ".txt", ".tsv"):
            text = (f"# Copied from languages/{start_from}/{SURROGATE_DATA}/{path.name} by `factory new-locale {values['lang']}`: "
                    f"write it for {name}.\n" + text)
        (target / path.name).write_text(text, encoding="utf-8")
        written.append(target / path.name)
    return written


def scaffold_locale(lang: str, name: str, faker_locale: str, spacy_lang: str | None = None,
                    surnames: int | None = None, calling_code: str | None = None, root: Path | None = None,
                    start_from: str | None = None, country: str | None = None) -> list[Path]:
    """Create a new locale in the project `root` (default: the factory's), every file of it data:

      languages/<lang>/       locale.yml (templates/new_locale/), silver.yml, placeholders.yml,
                              surrogates.yml (its identifier roles turned into the country's) and
                              errors.yml copied from the start locale, surrogate_data/ copied from its
                              (formats, word lists, titles.yml) with the locale's own faker locale,
                              surnames, calling code and identifier country, the rendered spaCy project
      regex_packs/<lang>/     a starter pack with its cases, context.yml, and the start locale's
                              clinical lexicon (clinical.yml, drugs.txt, checks.yml) to translate
      corpora/synth/<lang>/   a starter synthetic corpus (templates/new_locale/synth/: sentences and
                              words in English, formats and places from the start locale's data)

    See the module docstring for --country and --start-from. Refuses to overwrite an existing
    locale. Returns the files written."""
    from deid_runtime import ids
    from deid_runtime.surrogates.locale import LocaleData
    from deid_runtime.validators import validator_name

    if not lang.isalpha() or not lang.islower() or not 2 <= len(lang) <= 3:
        raise ValueError(f"locale code must be 2-3 lowercase letters (ISO 639-1/2), got {lang!r}")
    root = Path(root) if root is not None else project_root()
    country = (country or lang).lower()
    start = start_locale(start_from or country_locale(country, root) or country_locale(country) or DEFAULT_START, root)
    start_data = LocaleData.load(start.surrogate_data_dir)
    surnames = int(surnames if surnames is not None else start_data.formats.get("surnames_per_name") or 1)
    calling_code = str(calling_code if calling_code is not None else start_data.calling_code or "1")
    targets = {
        SETTINGS_FILE: Locale.settings_path(lang, root),  # templates/new_locale/locale.yml
        "pack.yml": packs_dir(root) / lang / "pack.yml",
        "context.yml": packs_dir(root) / lang / "context.yml",
    }
    synth_target = synth_dir(root) / lang
    surrogate_target = Locale.folder_of(lang, root) / SURROGATE_DATA
    existing = [str(p) for p in [*targets.values(), synth_target, surrogate_target] if p.exists()]
    if existing:
        raise FileExistsError(f"locale {lang!r} already exists: {', '.join(existing)}")
    values = {"lang": lang, "name": name, "faker_locale": faker_locale, "spacy_lang": spacy_lang or lang,
              "surnames": surnames, "calling_code": calling_code, "country": country,
              "country_validators": ", ".join(validator_name(k) for k in ids.keys([country])) or "none yet"}
    corpus_values = starter_corpus_values(start, calling_code, country)
    written = []
    for template, target in targets.items():
        text = (TEMPLATES / template).read_text(encoding="utf-8").format(**values)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        written.append(target)
    for concern in STARTER_CONCERNS:
        source = start.folder / concern
        if source.exists():
            target = Locale.folder_of(lang, root) / concern
            text = _retarget(source.read_text(encoding="utf-8"), start.lang, lang)
            if concern == "surrogates.yml":
                text = _local_id_roles(text, country)
            note = (f"# Copied from languages/{start.lang}/{concern} by `factory new-locale {lang}`: translate the\n"
                    f"# word lists and formats below into {name} before building deid_{lang}.\n")
            target.write_text(note + text, encoding="utf-8")
            written.append(target)
    # the clinical lexicon (units, doses, drug names, the surrogate checks' words): the start locale's,
    # to translate; a pack without one could not tell a dose from PHI (deid_runtime/clinical.py)
    for lexicon_file in LEXICON_FILES:
        source = start.pack_dir / lexicon_file
        if source.exists():
            target = packs_dir(root) / lang / lexicon_file
            note = (f"# Copied from regex_packs/{start.pack_dir.name}/{lexicon_file} by `factory new-locale {lang}`: "
                    f"translate it into {name}\n# (units, dose forms and drug names as {name} notes write them).\n")
            target.write_text(note + source.read_text(encoding="utf-8"), encoding="utf-8")
            written.append(target)
    synth_target.mkdir(parents=True)
    for template in sorted((TEMPLATES / "synth").glob("*.yml")):
        target = synth_target / template.name
        text = template.read_text(encoding="utf-8")  # its {slots} are the corpus' own: only @KEY@ is filled in
        for key, value in {**{k.upper(): str(v) for k, v in values.items()}, **corpus_values}.items():
            text = text.replace(f"@{key}@", value)
        target.write_text(text, encoding="utf-8")
        written.append(target)
    written += _copy_surrogate_data(start.surrogate_data_dir, surrogate_target, start.lang, name, values)
    from .render import render_all

    written += render_all([lang], languages_dir=languages_dir(root))
    return written


# ---------------------------------------------------------------------- CLI
def new_locale_command(
    lang: str = typer.Argument(..., help="ISO 639-1 code of the new locale, e.g. it"),
    name: str = typer.Option(..., help="Language name, e.g. Italian"),
    faker_locale: str = typer.Option(..., help="Faker locale, e.g. it_IT"),
    spacy_lang: str = typer.Option(None, help="spaCy language code (default: the locale code)"),
    surnames: int = typer.Option(None, help="Surnames per person name in this locale (default: the start locale's)"),
    calling_code: str = typer.Option(None, help="International calling code (default: the start locale's)"),
    start_from: str = typer.Option(None, help="Locale whose settings, surrogate data and formats are copied as a start "
                                   "(default: the project's locale of --country, else en)"),
    country: str = typer.Option(None, help="Country whose identifiers (factory/runtime/deid_runtime/ids/) the locale "
                                "uses (default: the locale code)"),
) -> None:
    """Scaffold a new locale as data files to fill in: settings, starter regex pack with cases, starter synthetic
    corpus, surrogate data and titles (docs/adding_a_locale.md)."""
    root = project_root()
    try:
        written = scaffold_locale(lang, name, faker_locale, spacy_lang, surnames, calling_code, root=root,
                                  start_from=start_from, country=country)
    except (NewLocaleError, FileExistsError, ValueError) as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(1)
    for path in written:
        typer.echo(f"wrote {path.relative_to(root) if path.is_relative_to(root) else path}")
    typer.echo(f"next: follow docs/adding_a_locale.md: translate those data files, then `factory pack-test {lang}`, "
               f"`factory synth --lang {lang} --n 50 --out /tmp/{lang}.jsonl` and `pytest tests/factory/test_new_locale.py`")
