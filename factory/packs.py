"""Locale regex packs on the factory side: run a pack's own test cases, scan text, scaffold a new locale.

The matcher itself lives in deid_runtime/regex_pack.py (deid-runtime, which the deid_<lang> wheels require).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import typer

from . import PROJECT_ROOT
from .locale import SETTINGS_FILE, SURROGATE_DATA, Locale, languages_dir, packs_dir, synth_dir
from deid_runtime.regex_pack import Pattern, RegexPack

NEW_LOCALE_TEMPLATES = Path(__file__).parent / "templates" / "new_locale"
# Per-concern settings a new locale starts from, copied from a complete locale with a note on top:
# they hold word lists and formats of that language that the new locale must translate.
STARTER_CONCERNS = ("silver.yml", "placeholders.yml", "surrogates.yml")
# What a finished pack needs (`factory pack-test` and tests/test_regex_packs.py ask the same): enough
# cases, a third of them negatives (lab values, doses... that must not match), no pattern untested.
MIN_CASES = 40
MIN_NEGATIVE_SHARE = Fraction(1, 3)  # exact: 14 negatives of 42 cases is a third, not a float's near miss


def load_pack(locale: str, packs_dir: Path | None = None) -> RegexPack:
    """The regex pack of `locale`: its locale's pack (Locale.pack_dir: the `regex_pack` of its
    locale.yml, regex_packs/<locale>/ without one), or `packs_dir`/<locale> when a folder of packs is given."""
    path = Path(packs_dir) / locale if packs_dir is not None else Locale.of(locale).pack_dir
    packs_dir = path.parent
    if not (path / "pack.yml").exists():
        known = sorted(p.name for p in packs_dir.iterdir() if (p / "pack.yml").exists()) if packs_dir.exists() else []
        raise FileNotFoundError(f"no regex pack for locale {locale!r} in {packs_dir} (known: {', '.join(known) or 'none'})")
    return RegexPack.from_dir(path)


@dataclass
class CaseResult:
    locale: str
    pattern: str
    index: int
    text: str
    expected: list[tuple[str, str]]
    found: list[tuple[str, str]]

    @property
    def passed(self) -> bool:
        return sorted(self.expected) == sorted(self.found)

    @property
    def negative(self) -> bool:
        return not self.expected

    def describe(self) -> str:
        return (f"pack {self.locale!r}, pattern {self.pattern!r}, case {self.index}: input {self.text!r}\n"
                f"  expected {self.expected}\n  found    {self.found}")


def check_case(pack: RegexPack, pattern: Pattern, index: int) -> CaseResult:
    """Run the whole pack on one case of `pattern` and keep the matches of the labels the case is about."""
    case = pattern.cases[index]
    expected = [(e, pattern.label) if isinstance(e, str) else (e["text"], e.get("label", pattern.label))
                for e in case.get("expect") or []]
    labels = {label for _, label in expected} or set(case.get("labels") or [pattern.label])
    found = [(m.text, m.label) for m in pack.find(case["text"]) if m.label in labels]
    return CaseResult(pack.locale, pattern.name, index, case["text"], expected, found)


def run_pack_cases(pack: RegexPack) -> list[CaseResult]:
    return [check_case(pack, p, i) for p in pack.patterns for i in range(len(p.cases))]


def minimum_problems(pack: RegexPack) -> list[str]:
    """Why the pack is not finished yet (too few cases, too few negatives, untested patterns); [] when it is."""
    cases = [c for p in pack.patterns for c in p.cases]
    negatives = sum(1 for c in cases if not c.get("expect"))
    problems = []
    if len(cases) < MIN_CASES:
        problems.append(f"{len(cases)} cases, need at least {MIN_CASES}")
    if negatives < MIN_NEGATIVE_SHARE * len(cases):
        problems.append(f"{negatives} negative cases of {len(cases)}, need at least a third")
    untested = [p.name for p in pack.patterns if not p.cases]
    if untested:
        problems.append(f"patterns without cases: {', '.join(untested)}")
    return problems


def _set_top_level(text: str, key: str, value: str) -> str:
    """`text` (YAML) with its top-level `key:` line set to `value` (added at the end when missing);
    the rest of the file, comments included, is kept as written."""
    line = re.compile(rf"^{re.escape(key)}:.*$", re.M)
    if line.search(text):
        return line.sub(lambda _: f"{key}: {value}", text, count=1)
    return text.rstrip("\n") + f"\n{key}: {value}\n"


def _retarget(text: str, start_from: str, lang: str) -> str:
    """A copied settings file made the new locale's: its `lang:` and the paths and commands naming
    the locale it was copied from."""
    text = _set_top_level(text, "lang", lang)
    for old, new in ((f"languages/{start_from}/", f"languages/{lang}/"),
                     (f"--target {start_from}", f"--target {lang}"), (f"`{start_from}`", f"`{lang}`")):
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
    own = [validator_name(k) for k in ids.keys([country]) if not k.endswith(".iban")]
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
    choices = (f"# Identifier kinds of country {country!r} (factory/runtime/deid_runtime/ids/): {', '.join(own) or 'none yet'};\n"
               f"# put them in `ids.roles` below in place of the plain numbers (`kind: pattern`) where they fit.\n")
    return header + choices + yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


def scaffold_locale(lang: str, name: str, faker_locale: str, spacy_lang: str | None = None,
                    surnames: int = 1, calling_code: str = "1", root: Path = PROJECT_ROOT,
                    start_from: str = "en", country: str | None = None) -> list[Path]:
    """Create a new locale, every file of it data to translate or fill in:

      languages/<lang>/       locale.yml (templates/new_locale/), silver.yml, placeholders.yml and
                              surrogates.yml copied from `start_from` (its identifier roles turned
                              into the new country's), the rendered spaCy project, and
                              surrogate_data/: the surrogate engine's data, copied from `start_from`'s
                              (when that locale of `root` has one), with the locale's own faker
                              locale, calling code and identifier country
      regex_packs/<lang>/     a starter pack with its cases, context.yml
      corpora/synth/<lang>/   a starter synthetic corpus (templates/new_locale/synth/, in English)

    Everything goes into the project `root`: the runtime reads the surrogate data from there
    (deid_factory.locale registers languages/ with it), so no package is written to.
    `country`: the ISO 3166 code whose identifiers (factory/runtime/deid_runtime/ids/) the locale
    uses (default `lang`). Refuses to overwrite an existing locale. Returns the files written.
    """
    if not lang.isalpha() or not lang.islower() or not 2 <= len(lang) <= 3:
        raise ValueError(f"locale code must be 2-3 lowercase letters (ISO 639-1/2), got {lang!r}")
    country = (country or lang).lower()
    targets = {
        SETTINGS_FILE: Locale.settings_path(lang, root),  # templates/new_locale/locale.yml
        "pack.yml": packs_dir(root) / lang / "pack.yml",
        "context.yml": packs_dir(root) / lang / "context.yml",
    }
    synth_target = synth_dir(root) / lang
    surrogate_source = Locale.folder_of(start_from, root) / SURROGATE_DATA
    surrogate_target = Locale.folder_of(lang, root) / SURROGATE_DATA
    existing = [str(p) for p in [*targets.values(), synth_target, surrogate_target] if p.exists()]
    if existing:
        raise FileExistsError(f"locale {lang!r} already exists: {', '.join(existing)}")
    values = {"lang": lang, "name": name, "faker_locale": faker_locale, "spacy_lang": spacy_lang or lang,
              "surnames": surnames, "calling_code": calling_code}
    written = []
    for template, target in targets.items():
        text = (NEW_LOCALE_TEMPLATES / template).read_text(encoding="utf-8").format(**values)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        written.append(target)
    for concern in STARTER_CONCERNS:
        source = Locale.folder_of(start_from, root) / concern
        if source.exists():
            target = Locale.folder_of(lang, root) / concern
            text = _retarget(source.read_text(encoding="utf-8"), start_from, lang)
            if concern == "surrogates.yml":
                text = _local_id_roles(text, country)
            note = (f"# Copied from languages/{start_from}/{concern} by `factory new-locale {lang}`: translate the\n"
                    f"# word lists and formats below into {name} before building deid_{lang}.\n")
            target.write_text(note + text, encoding="utf-8")
            written.append(target)
    synth_target.mkdir(parents=True)
    for template in sorted((NEW_LOCALE_TEMPLATES / "synth").glob("*.yml")):
        target = synth_target / template.name
        text = template.read_text(encoding="utf-8")  # its {slots} are the corpus' own: only @KEY@ is filled in
        for key, value in values.items():
            text = text.replace(f"@{key.upper()}@", str(value))
        target.write_text(text, encoding="utf-8")
        written.append(target)
    if surrogate_source.is_dir():
        written += _copy_surrogate_data(surrogate_source, surrogate_target, start_from, name,
                                        {**values, "country": country})
    from .render import render_all

    written += render_all([lang], languages_dir=languages_dir(root))
    return written


def _copy_surrogate_data(source: Path, target: Path, start_from: str, name: str, values: dict) -> list[Path]:
    """The surrogate engine's data of `start_from`, copied for the new locale to translate; the
    settings the scaffold knows (faker locale, surnames, calling code, identifier country) set."""
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
        note = "#" if path.suffix in (".yml", ".txt", ".tsv") else None
        if note:
            text = (f"# Copied from languages/{start_from}/{SURROGATE_DATA}/{path.name} by `factory new-locale {values['lang']}`: "
                    f"write it for {name}.\n" + text)
        (target / path.name).write_text(text, encoding="utf-8")
        written.append(target / path.name)
    return written


# ---------------------------------------------------------------------- CLI
def pack_test_command(
    locale: str = typer.Argument(..., help="Locale of the pack, e.g. fr"),
    packs_dir: Path = typer.Option(None, help="Folder holding one pack folder per locale (default: the pack "
                                   "named by the locale's locale.yml, in the project's regex_packs/)"),
    minimums: bool = typer.Option(True, help=f"Also require what CI requires: {MIN_CASES} cases, a third of them "
                                  "negatives, every pattern tested (--no-minimums while a pack is being written)"),
) -> None:
    """Run every test case of one locale pack and print the failures (pytest runs the same cases in CI)."""
    pack = load_pack(locale, packs_dir)
    results = run_pack_cases(pack)
    failures = [r for r in results if not r.passed]
    for failure in failures:
        typer.echo(failure.describe(), err=True)
    negatives = sum(r.negative for r in results)
    typer.echo(f"{locale}: {len(results) - len(failures)} passed, {len(failures)} failed ({negatives} negative cases)")
    unfinished = minimum_problems(pack) if minimums else []
    for problem in unfinished:
        typer.echo(f"{locale}: not finished: {problem}", err=True)
    raise typer.Exit(code=1 if failures or unfinished else 0)


def scan_command(
    locale: str = typer.Argument(..., help="Locale of the pack, e.g. fr"),
    path: Path = typer.Argument(..., help="UTF-8 text file to scan"),
) -> None:
    """Print the pack's matches in a text file as offsets, label and kind (not the text: it is PHI)."""
    pack = load_pack(locale)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise typer.BadParameter(f"{path}: not UTF-8 text") from None
    for m in pack.find(text):
        typer.echo(f"{m.start}\t{m.end}\t{m.label}\t{m.kind}\t{m.score:.2f}")


def new_locale_command(
    lang: str = typer.Argument(..., help="ISO 639-1 code of the new locale, e.g. it"),
    name: str = typer.Option(..., help="Language name, e.g. Italian"),
    faker_locale: str = typer.Option(..., help="Faker locale, e.g. it_IT"),
    spacy_lang: str = typer.Option(None, help="spaCy language code (default: the locale code)"),
    surnames: int = typer.Option(1, help="Surnames per person name in this locale"),
    calling_code: str = typer.Option("1", help="International calling code, used in the starter phone case"),
    start_from: str = typer.Option("en", help="Locale whose silver/placeholder/surrogate settings are copied as a start"),
    country: str = typer.Option(None, help="Country whose identifiers (factory/runtime/deid_runtime/ids/) the locale uses (default: the locale code)"),
) -> None:
    """Scaffold a new locale as data files to fill in: settings, starter regex pack with cases, starter synthetic
    corpus, surrogate word lists (README, "Adding a locale")."""
    for path in scaffold_locale(lang, name, faker_locale, spacy_lang, surnames, calling_code, start_from=start_from,
                                country=country):
        typer.echo(f"wrote {path.relative_to(PROJECT_ROOT) if path.is_relative_to(PROJECT_ROOT) else path}")
    surrogate_data = Locale.of(lang).surrogate_data_dir
    if not surrogate_data.is_dir():  # the project has no surrogate data of the start locale to copy
        typer.echo(f"surrogate data not written ({Locale.of(start_from).surrogate_data_dir} "
                   f"is not there): write {surrogate_data} for {name} (docs/surrogate_data.md)")
    typer.echo(f"next: fill in those data files (README, \"Adding a locale\"), then `factory pack-test {lang}`, "
               f"`factory synth --lang {lang} --n 50 --out /tmp/{lang}.jsonl` and `pytest tests/test_regex_packs.py -k {lang}`")
