"""Locale regex packs on the factory side: load a locale's pack, run its own test cases, scan text.

The matcher itself lives in deid_runtime/regex_pack.py (deid-runtime, which the deid_<lang> wheels require).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import typer

from .locale import Locale
from deid_runtime.regex_pack import Pattern, RegexPack

# What a finished pack needs (`factory pack-test` and tests/runtime/test_regex_packs.py ask the same): enough
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


def run_clinical_cases(pack: RegexPack) -> list[CaseResult]:
    """The cases of the pack folder's clinical lexicon (clinical.yml patterns, drug cases, the
    surrogate checks' cases of checks.yml), as CaseResults: a fact found or not, a surface sure of its
    label or not. [] when the pack has no clinical lexicon."""
    from deid_runtime.clinical import case_result
    from deid_runtime.surrogate_checks import CheckWords, surely_of_kind
    from deid_runtime.surrogates.locale import load_locale

    lexicon = pack.clinical
    if lexicon is None:
        return []
    results = []
    for pattern in lexicon.patterns:
        for i, case in enumerate(pattern.cases):
            expected, found = case_result(lexicon, case)
            results.append(CaseResult(pack.locale, f"clinical:{pattern.name}", i, case["text"],
                                      [(e, "FACT") for e in expected], [(f, "FACT") for f in found]))
    for i, case in enumerate(lexicon.drug_cases):
        expected, found = case_result(lexicon, case)
        results.append(CaseResult(pack.locale, "clinical:drugs", i, case["text"],
                                  [(e, "FACT") for e in expected], [(f, "FACT") for f in found]))
    words = CheckWords(lexicon, load_locale(pack.locale)) if lexicon.check_cases else None
    for label, sides in lexicon.check_cases.items():
        for side in ("sure", "unsure"):
            for i, surface in enumerate(sides.get(side) or []):
                sure = surely_of_kind(label, surface, words)
                # a "sure" case expects the surface back as its label; an "unsure" one expects nothing
                results.append(CaseResult(pack.locale, f"check:{label}:{side}", i, surface,
                                          [(surface, label)] if side == "sure" else [], [(surface, label)] if sure else []))
    return results


def run_rule_cases(pack: RegexPack) -> list[CaseResult]:
    """The cases of the pack folder's context rules (rules.yml: each rule's, and the scanned view's),
    as CaseResults: the rule matches of the labels a case is about. [] when the pack has no rules."""
    from deid_runtime.context_rules import case_result

    rules = pack.rules
    if rules is None:
        return []
    results = []
    for rule in rules.rules:
        for i, case in enumerate(rule.cases):
            expected, found = case_result(pack, case, rule.label)
            results.append(CaseResult(pack.locale, f"rule:{rule.name}", i, case["text"], expected, found))
    for i, case in enumerate(rules.scanned_cases):
        expected, found = case_result(pack, case, None)
        results.append(CaseResult(pack.locale, "rule:scanned", i, case["text"], expected, found))
    return results


def rule_problems(pack: RegexPack) -> list[str]:
    """Why the rules are not finished: a rule (or the scanned view) without a positive and a negative case."""
    if pack.rules is None:
        return []
    groups = [(f"rule {r.name!r}", r.cases) for r in pack.rules.rules]
    if pack.rules.scanned is not None:
        groups.append(("the scanned view", pack.rules.scanned_cases))
    return [f"{name} needs a positive and a negative case" for name, cases in groups
            if not any(c.get("expect") for c in cases) or all(c.get("expect") for c in cases)]


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
    return problems + rule_problems(pack)


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
    results = run_pack_cases(pack) + run_clinical_cases(pack) + run_rule_cases(pack)  # pytest runs the same cases
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
