"""Locale regex packs on the factory side: run a pack's own test cases, scan text, scaffold a new locale.

The matcher itself lives in deid_runtime/regex_pack.py (deid-runtime, which the deid_<lang> wheels require).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import typer

from . import PROJECT_ROOT
from .locale import SETTINGS_FILE, Locale, languages_dir, packs_dir
from deid_runtime.regex_pack import Pattern, RegexPack

PACKS_DIR = packs_dir(PROJECT_ROOT)
LANGUAGES_DIR = languages_dir(PROJECT_ROOT)
NEW_LOCALE_TEMPLATES = Path(__file__).parent / "templates" / "new_locale"
# Per-concern settings a new locale starts from, copied from a complete locale with a note on top:
# they hold word lists and formats of that language that the new locale must translate.
STARTER_CONCERNS = ("silver.yml", "placeholders.yml", "surrogates.yml")
# What a finished pack needs (`factory pack-test` and tests/test_regex_packs.py ask the same): enough
# cases, a third of them negatives (lab values, doses... that must not match), no pattern untested.
MIN_CASES = 40
MIN_NEGATIVE_SHARE = Fraction(1, 3)  # exact: 14 negatives of 42 cases is a third, not a float's near miss


def load_pack(locale: str, packs_dir: Path = PACKS_DIR) -> RegexPack:
    path = packs_dir / locale
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


def scaffold_locale(lang: str, name: str, faker_locale: str, spacy_lang: str | None = None,
                    surnames: int = 1, calling_code: str = "1", root: Path = PROJECT_ROOT,
                    start_from: str = "en") -> list[Path]:
    """Create a new locale: languages/<lang>/locale.yml, regex_packs/<lang>/{pack,context}.yml from the
    starter templates, the per-concern settings (silver filters, placeholders, surrogates) copied from
    the `start_from` locale when it exists under `root`, and the rendered spaCy project.

    Refuses to overwrite an existing locale. Returns the files written.
    """
    if not lang.isalpha() or not lang.islower() or not 2 <= len(lang) <= 3:
        raise ValueError(f"locale code must be 2-3 lowercase letters (ISO 639-1/2), got {lang!r}")
    targets = {
        SETTINGS_FILE: Locale.settings_path(lang, root),  # templates/new_locale/locale.yml
        "pack.yml": packs_dir(root) / lang / "pack.yml",
        "context.yml": packs_dir(root) / lang / "context.yml",
    }
    existing = [str(p) for p in targets.values() if p.exists()]
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
            note = (f"# Copied from languages/{start_from}/{concern} by `factory new-locale {lang}`: translate the\n"
                    f"# word lists and formats below into {name} before building deid_{lang}.\n")
            target.write_text(note + source.read_text(encoding="utf-8"), encoding="utf-8")
            written.append(target)
    from .render import render_all

    written += render_all([lang], languages_dir=languages_dir(root))
    return written


# ---------------------------------------------------------------------- CLI
def pack_test_command(
    locale: str = typer.Argument(..., help="Locale of the pack, e.g. fr"),
    packs_dir: Path = typer.Option(PACKS_DIR, help="Folder holding one pack folder per locale"),
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
) -> None:
    """Scaffold a new locale: languages/<lang>/locale.yml and a starter regex pack with its test cases."""
    for path in scaffold_locale(lang, name, faker_locale, spacy_lang, surnames, calling_code, start_from=start_from):
        typer.echo(f"wrote {path.relative_to(PROJECT_ROOT) if path.is_relative_to(PROJECT_ROOT) else path}")
    typer.echo(f"next: add national patterns with cases, then `factory pack-test {lang}` "
               f"and `pytest tests/test_regex_packs.py -k {lang}`")
