"""Locale regex/validator packs: one generic matcher over data files, and the spaCy component.

A pack is a folder `regex_packs/<lc>/` holding
  pack.yml     `vocab` (named word lists, spliced into patterns as `{name}`) and `patterns`
               (name, label, regex, optional `group`, `validator`, `flags`, `score`, `kind`, `cases`);
               `titles`: the path (from the pack's folder) of its locale's titles file
               (languages/<lc>/surrogate_data/titles.yml, deid_runtime/titles.py), whose titles
               are spliced as `{title}`; a pack saved with a pipeline keeps a copy (titles.yml)
  context.yml  per-label `blacklists` (terms + character window: a match near them is not PHI) and
               `triggers` (terms + window that raise the score, and that let an identifier which fails
               its check digits still be reported as a generic ID)
  clinical.yml, drugs.txt, checks.yml (optional)
               the locale's clinical facts (units, schedules, durations, lab values, drug names)
               and the words of the surrogate checks (deid_runtime/clinical.py): `pack.clinical`
  rules.yml, number_words.yml, given_names.txt, surnames.txt (optional)
               the locale's context rules (a name after a title, a header field, a relative, a date
               in words, scanned text...: deid_runtime/context_rules.py): `pack.rules`,
               `pack.find_rules(text)`

This module is part of deid-runtime, which every deid_<lang> wheel requires, so it depends only on
PyYAML and python-stdnum (through validators.py).
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from . import clinical, context_rules
from .canonical import CANONICAL_LABELS
from .matches import Match, NonOverlapping, trim  # noqa: F401  (re-exported: callers import them from here)
from .text import BOUNDARY_CHARS  # noqa: F401  (re-exported for the tests)
from .titles import TITLES_FILE, Titles
from .validators import get_validator
from .yamlio import read_yaml_mapping

PACK_FILES = ("pack.yml", "context.yml")
_FLAG_NAMES = {"IGNORECASE": re.IGNORECASE, "I": re.IGNORECASE, "VERBOSE": re.VERBOSE, "X": re.VERBOSE}
_VOCAB_REF = re.compile(r"\{([a-z_][a-z0-9_]*)\}")
# A generic ID reported because of a trigger label, after the candidate failed its check digits.
FALLBACK_KIND = "generic"
_MAPPING = "a mapping at the top level"  # what pack.yml and context.yml hold


class PackError(ValueError):
    """A pack file that cannot be used; the message names the file and the pattern."""


@dataclass
class Pattern:
    name: str
    label: str
    regex: re.Pattern
    group: str | int = 0
    validator: str | None = None
    kind: str = ""
    score: float = 0.8
    cases: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class ContextRule:
    terms: list[str]
    window: int
    regex: re.Pattern
    boost: float = 0.0
    side: str = "both"  # where the term must be: "before" the match, "after" it, or "both" sides

    @property
    def longest_term(self) -> int:
        return max(len(t) for t in self.terms)


def _compile_terms(terms: list[str]) -> re.Pattern:
    # Terms are matched as whole words, case-insensitively; longest first so "Tél. port." wins over "Tél.".
    alternatives = "|".join(re.escape(t) for t in sorted(terms, key=len, reverse=True))
    return re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)", re.IGNORECASE)


class RegexPack:
    """All patterns of one locale and their context rules; `find(text)` returns the PHI matches."""

    def __init__(self, locale: str, patterns: list[Pattern], blacklists: dict[str, list[ContextRule]],
                 triggers: dict[str, list[ContextRule]], source_dir: Path | None = None,
                 titles_file: Path | None = None, clinical_lexicon: clinical.ClinicalLexicon | None = None,
                 rules: context_rules.ContextRules | None = None):
        self.locale = locale
        self.titles_file = titles_file  # its locale's titles, `{title}` (saved with the pack)
        self.patterns = patterns
        self.blacklists = blacklists
        self.triggers = triggers
        self.source_dir = source_dir
        self.clinical = clinical_lexicon  # what redaction never changes (None: the folder has no clinical.yml)
        self.rules = rules  # the context rules (None: the folder has no rules.yml)

    # ------------------------------------------------------------------ loading
    @classmethod
    def from_dir(cls, path: str | Path) -> "RegexPack":
        path = Path(path)
        pack_file = path / "pack.yml"
        if not pack_file.exists():
            raise PackError(f"{pack_file}: regex pack file not found")
        raw = read_yaml_mapping(pack_file, PackError, _MAPPING)
        vocab = {k: list(v) for k, v in (raw.get("vocab") or {}).items()}
        rules_raw = _rules_header(path)
        titles_file = _titles_file(path, raw) or _titles_file(path, rules_raw, context_rules.RULES_FILE)
        title_letters: list[str] = []
        if titles_file is not None:
            if "title" in vocab:
                raise PackError(f"{pack_file}: `title` is the locale's titles (`titles:`), not a vocab list")
            titles = Titles.read(titles_file, PackError)
            vocab["title"] = titles.forms()
            title_letters = titles.letters()
        patterns = [_parse_pattern(pack_file, i, p, vocab) for i, p in enumerate(raw.get("patterns") or [])]
        names = [p.name for p in patterns]
        duplicates = {n for n in names if names.count(n) > 1}
        if duplicates:
            raise PackError(f"{pack_file}: duplicate pattern names {sorted(duplicates)}")
        context_file = path / "context.yml"
        context = read_yaml_mapping(context_file, PackError, _MAPPING) if context_file.exists() else {}
        blacklists = _parse_context(context_file, context.get("blacklists") or {})
        triggers = _parse_context(context_file, context.get("triggers") or {})
        try:
            lexicon = clinical.ClinicalLexicon.from_dir(path)
        except clinical.ClinicalDataError as err:
            raise PackError(str(err)) from None
        locale = raw.get("locale", path.name)
        if lexicon is not None:
            lexicon.locale = locale
            clinical.register(lexicon)  # redaction of this locale's spans checks surrogates with it
        try:
            rules = context_rules.ContextRules.from_dir(path, vocab, lexicon, title_letters, locale)
        except context_rules.RulesError as err:
            raise PackError(str(err)) from None
        if rules is not None:
            context_rules.register(rules)  # the merger's plausibility checks read its date words
        return cls(locale, patterns, blacklists, triggers, source_dir=path, titles_file=titles_file,
                   clinical_lexicon=lexicon, rules=rules)

    def to_dir(self, path: str | Path) -> None:
        """Copy the pack's data files (used by the spaCy component's to_disk)."""
        if self.source_dir is None:
            raise PackError("pack was not loaded from a folder; nothing to copy")
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        for name in PACK_FILES:
            src = self.source_dir / name
            if src.exists() and src.resolve() != (path / name).resolve():
                shutil.copyfile(src, path / name)
        if self.titles_file is not None and self.titles_file.resolve() != (path / TITLES_FILE).resolve():
            shutil.copyfile(self.titles_file, path / TITLES_FILE)  # the copy is found first (_titles_file)
        if self.clinical is not None:
            self.clinical.to_dir(path)
        if self.rules is not None:
            self.rules.to_dir(path)

    @property
    def labels(self) -> list[str]:
        return sorted({p.label for p in self.patterns})

    # ------------------------------------------------------------------ matching
    def _near(self, rules: list[ContextRule], text: str, start: int, end: int) -> ContextRule | None:
        """The first rule with a term whose nearest edge is within `window` characters of the match."""
        for rule in rules:
            reach = rule.window + rule.longest_term
            lo = max(0, start - reach) if rule.side != "after" else end
            hi = min(len(text), end + reach) if rule.side != "before" else start
            for hit in rule.regex.finditer(text, lo, hi):
                if hit.end() <= start and start - hit.end() <= rule.window:
                    return rule
                if hit.start() >= end and hit.start() - end <= rule.window:
                    return rule
        return None

    def _trigger_before(self, label: str, text: str, start: int) -> ContextRule | None:
        for rule in self.triggers.get(label, []):
            lo = max(0, start - rule.window)
            if any(hit.end() <= start for hit in rule.regex.finditer(text, lo, start)):
                return rule
        return None

    def candidates(self, text: str) -> Iterable[Match]:
        """Every pattern hit after trimming, validation and the blacklist, before overlap resolution."""
        for pattern in self.patterns:
            for hit in pattern.regex.finditer(text):
                start, end = hit.span(pattern.group)
                if start < 0:
                    continue
                start, end = trim(text, start, end)
                if start >= end:
                    continue
                if self._near(self.blacklists.get(pattern.label, []), text, start, end):
                    continue
                value = text[start:end]
                kind, score, validated = pattern.kind or pattern.name, pattern.score, False
                if pattern.validator:
                    if get_validator(pattern.validator)(value):
                        validated = True
                        score = max(score, 0.95)
                    elif pattern.label == "ID" and self._trigger_before("ID", text, start):
                        # A labelled number ("NHC:", "IPP") that fails the check is still an identifier.
                        kind, score = FALLBACK_KIND, 0.6
                    else:
                        continue
                trigger = self._near(self.triggers.get(pattern.label, []), text, start, end)
                if trigger is not None:
                    score = min(1.0, score + trigger.boost)
                yield Match(start, end, pattern.label, value, pattern.name, kind, round(score, 3), validated)

    def find(self, text: str) -> list[Match]:
        """Non-overlapping matches: validated first, then higher score, then longer."""
        ranked = sorted(self.candidates(text), key=lambda m: (not m.validated, -m.score, -(m.end - m.start), m.start))
        chosen = NonOverlapping()
        for match in ranked:
            chosen.add(match.start, match.end, match)
        return chosen.items()

    def find_rules(self, text: str) -> list[Match]:
        """The context rules' matches (rules.yml), [] when the pack has none."""
        return self.rules.find(text, self) if self.rules is not None else []


# ---------------------------------------------------------------------- parsing helpers
def _rules_header(path: Path) -> dict:
    """rules.yml's top level ({} without one): its `titles` when pack.yml names none."""
    rules_file = path / context_rules.RULES_FILE
    return read_yaml_mapping(rules_file, PackError, _MAPPING) if rules_file.exists() else {}


def _titles_file(path: Path, raw: dict, named_in: str = "pack.yml") -> Path | None:
    """The titles a pack splices as `{title}`: the copy saved beside a pipeline's pack, else the file
    its pack.yml (or rules.yml) names (`titles:`, from the pack's folder: its locale's), else none."""
    if (path / TITLES_FILE).is_file():
        return path / TITLES_FILE
    if not raw.get("titles"):
        return None
    named = path / str(raw["titles"])
    if not named.is_file():
        raise PackError(f"{path / named_in}: titles file {raw['titles']!r} not found from {path}")
    return named


def expand_vocab(regex: str, vocab: dict[str, list[str]], where: str) -> str:
    def replace(m: re.Match) -> str:
        name = m.group(1)
        if name not in vocab:  # a quantifier like {2} never matches the name syntax
            raise PackError(f"{where}: {{{name}}} names no word list of the pack (vocab, or titles: `{{title}}`)")
        words = sorted(vocab[name], key=len, reverse=True)
        return "(?:" + "|".join(re.escape(w) for w in words) + ")"

    return _VOCAB_REF.sub(replace, regex)


def _parse_pattern(pack_file: Path, index: int, raw: dict, vocab: dict[str, list[str]]) -> Pattern:
    name = raw.get("name") or f"#{index}"
    where = f"{pack_file}: pattern {name!r}"
    for key in ("name", "label", "regex"):
        if key not in raw:
            raise PackError(f"{where}: missing field {key!r}")
    if raw["label"] not in CANONICAL_LABELS:
        raise PackError(f"{where}: label {raw['label']!r} is not canonical ({', '.join(CANONICAL_LABELS)})")
    flags = 0
    for flag in raw.get("flags", []):
        if flag not in _FLAG_NAMES:
            raise PackError(f"{where}: unknown flag {flag!r}")
        flags |= _FLAG_NAMES[flag]
    source = expand_vocab(raw["regex"], vocab, where)
    try:
        compiled = re.compile(source, flags)
    except re.error as err:
        raise PackError(f"{where}: regex does not compile ({err})") from None
    group = raw.get("group", "phi" if "(?P<phi>" in source else 0)
    if isinstance(group, str) and group not in compiled.groupindex:
        raise PackError(f"{where}: group {group!r} is not in the regex")
    validator = raw.get("validator")
    if validator:
        get_validator(validator)  # fail at load time on a typo, not at match time
    cases = list(raw.get("cases") or [])
    for i, case in enumerate(cases):
        # YAML turns unquoted 2019-03-12 into a date and 12:30 into a number: insist on strings
        expect = case.get("expect") or [] if isinstance(case, dict) else None
        if expect is None or not isinstance(case.get("text"), str) or not all(
            isinstance(e, str) or (isinstance(e, dict) and isinstance(e.get("text"), str)) for e in expect
        ):
            raise PackError(f"{where}: case {i} needs a string `text` and `expect` strings (quote dates and times)")
    return Pattern(name=name, label=raw["label"], regex=compiled, group=group, validator=validator,
                   kind=raw.get("kind", ""), score=float(raw.get("score", 0.8)), cases=cases)


def _parse_context(path: Path, section: dict) -> dict[str, list[ContextRule]]:
    rules: dict[str, list[ContextRule]] = {}
    for label, entries in section.items():
        for entry in entries or []:
            terms = entry.get("terms") or []
            if not terms or "window" not in entry:
                raise PackError(f"{path}: {label}: every rule needs `terms` and `window`")
            side = entry.get("side", "both")
            if side not in ("before", "after", "both"):
                raise PackError(f"{path}: {label}: `side` must be before, after or both, not {side!r}")
            rules.setdefault(label, []).append(
                ContextRule(list(terms), int(entry["window"]), _compile_terms(list(terms)), float(entry.get("boost", 0.0)), side)
            )
    return rules
