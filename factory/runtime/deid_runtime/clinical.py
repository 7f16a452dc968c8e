"""Clinical facts of a locale: what redaction must never change, as data next to the regex pack.

A locale's pack folder (regex_packs/<lc>/) may hold
  clinical.yml  `vocab` (units, dose forms, time units, number words, lab tests and vital signs:
                named word lists spliced into patterns as `{name}`), `defs` (named regex pieces
                spliced as `{name}`, e.g. a number), `patterns` (name, kind, regex, `cases`), the
                drug list's file name (`drugs`) and `drug_abbreviations` (matched with their case),
                `drug_cases`
  drugs.txt     generic (INN) drug names as the locale spells them, one a line ('#' comments), matched
                as whole words, case and accents ignored; several words make a phrase
  checks.yml    the words the surrogate checks need (surrogate_checks.py): street words, age units,
                number words

The kinds of fact: quantity (a number with a unit: "10 mg", "13,2 g/dl", "135/85 mmHg", "96 %"),
schedule ("1-0-1", "c/8h", "cada 8 horas"), duration ("en 3 meses", "durante 2 semanas"),
lab_value (a lab test or vital sign with its value: "plaquetas 245.000"), drug ("enalapril", "AAS").

`ClinicalLexicon.find(text)` gives the facts of a text (character offsets, kind). The regex pack's
spaCy component writes them to doc.spans["deid_clinical"], the merger keeps every PHI candidate out
of them (docs/router.md), and surrogate mode refuses to replace a span that holds one.

Loaded with the pack (RegexPack.from_dir), the lexicon is also registered under its locale
(`register`, `lexicon_for`), so that redaction, which sees only a text, its spans and its language,
checks surrogates with the lexicon of the pipeline that found them.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from .text import fold
from .yamlio import read_yaml_mapping

CLINICAL_FILE = "clinical.yml"
CHECKS_FILE = "checks.yml"
# ward_place: a room, bed or box of a ward ("hab. 214", "chambre 12"): where a patient lies, not who;
# clinical_term: a department named by its specialty ("Servicio de Nefrología"), a clinical acronym
# ("LOE", "EPOC") or a clinical scale ("Hoehn y Yahr"): words of the care, not of the person
FACT_KINDS = ("quantity", "schedule", "duration", "lab_value", "drug", "ward_place", "clinical_term")
_REF = re.compile(r"\{([a-z_][a-z0-9_]*)\}")
_FLAGS = {"IGNORECASE": re.IGNORECASE, "I": re.IGNORECASE}
# A word of a drug name: letters, with inner hyphens or apostrophes ("co-trimoxazol") or the Catalan
# middle dot of "l·l" ("amoxicil·lina", which is no letter)
_WORD = re.compile(r"[^\W\d_]+(?:[-'’·][^\W\d_]+)*")


class ClinicalDataError(ValueError):
    """A clinical.yml, drug list or checks.yml that cannot be used (the message names the file)."""


@dataclass(frozen=True)
class Fact:
    start: int
    end: int
    kind: str
    pattern: str  # the pattern that found it ("drug" for the drug lexicon)


@dataclass
class FactPattern:
    name: str
    kind: str
    regex: re.Pattern
    cases: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class ClinicalLexicon:
    """The clinical facts one locale writes, and the words its surrogate checks need."""

    locale: str
    patterns: list[FactPattern]
    drugs: frozenset[str]  # folded one-word names
    drug_phrases: dict[str, list[tuple[str, ...]]]  # first folded word -> the rest of each longer name
    drug_regex: re.Pattern | None  # every name and phrase, one pass (drug_names)
    drug_abbreviations: re.Pattern | None
    drug_cases: list[dict[str, Any]]
    check_words: dict[str, frozenset[str]]  # checks.yml: list name -> folded words
    check_cases: dict[str, dict[str, list[str]]]  # checks.yml `cases`: label -> {"sure": [...], "unsure": [...]}
    lexicon_words: frozenset[str]  # folded words (4 letters or more) a name never is: units, dose forms, lab tests, drugs
    short_words: frozenset[str]  # the same of 2 or 3 letters, as written ("TA", "Hb", "mg": "Ta" may be a name)
    files: tuple[str, ...] = ()  # the data files it was read from (copied with the pack)
    source_dir: Path | None = None

    # ------------------------------------------------------------------ loading
    @classmethod
    def from_dir(cls, path: str | Path) -> "ClinicalLexicon | None":
        """The lexicon of a pack folder, or None when it has no clinical.yml."""
        path = Path(path)
        main = path / CLINICAL_FILE
        if not main.exists():
            return None
        raw = read_yaml_mapping(main, ClinicalDataError)
        vocab = {k: [str(w) for w in v] for k, v in (raw.get("vocab") or {}).items()}
        defs = {k: str(v) for k, v in (raw.get("defs") or {}).items()}
        patterns = [_parse_pattern(main, i, p, vocab, defs) for i, p in enumerate(raw.get("patterns") or [])]
        files = [CLINICAL_FILE]
        drugs: set[str] = set()
        phrases: dict[str, list[tuple[str, ...]]] = {}
        if raw.get("drugs"):
            drug_file = path / str(raw["drugs"])
            if not drug_file.exists():
                raise ClinicalDataError(f"{main}: drug list {drug_file.name} not found")
            files.append(drug_file.name)
            for name in _read_list(drug_file):
                words = tuple(fold(w) for w in _WORD.findall(name))
                if len(words) == 1:
                    drugs.add(words[0])
                elif words:
                    phrases.setdefault(words[0], []).append(words[1:])
        names = sorted(drugs) + sorted(" ".join((first, *rest)) for first, rests in phrases.items() for rest in rests)
        # whole words: no letter (nor a hyphen or apostrophe of a compound) before, no letter after
        # (a digit may touch: "atropina1%")
        drug_regex = (re.compile(r"(?<![^\W\d_])(?<!['’-])(?:" + alternation(names, _folded_char) + r")(?![^\W\d_])",
                                 re.IGNORECASE)
                      if names else None)
        abbreviations = [str(a) for a in raw.get("drug_abbreviations") or []]
        abbr_regex = re.compile(r"(?<![\w-])(?:" + alternation(abbreviations) + r")(?![\w-])") if abbreviations else None
        check_words: dict[str, frozenset[str]] = {}
        check_cases: dict[str, dict[str, list[str]]] = {}
        checks_file = path / CHECKS_FILE
        if checks_file.exists():
            files.append(CHECKS_FILE)
            checks = read_yaml_mapping(checks_file, ClinicalDataError)
            check_words = {k: frozenset(fold(str(w)) for w in v) for k, v in checks.items() if isinstance(v, list)}
            check_cases = checks.get("cases") or {}
            for label, sides in check_cases.items():
                if not isinstance(sides, dict) or not all(isinstance(x, str) for side in sides.values() for x in side or []):
                    raise ClinicalDataError(f"{checks_file}: cases of {label}: `sure` and `unsure` lists of strings (quote numbers)")
        never_names = list(drugs) + abbreviations
        for name in raw.get("lexicon_vocab") or []:  # the vocab lists whose words are never a name
            if name not in vocab:
                raise ClinicalDataError(f"{main}: lexicon_vocab names {name!r}, which is not in vocab")
            never_names += [w for w in vocab[name] if _WORD.fullmatch(w)]
        # one letter is an initial ("T. Renaud"), never a lexicon word; two or three are compared as
        # written ("TA" is blood pressure, "Ta" may be a name)
        lexicon_words = {fold(w) for w in never_names if len(w) >= 4}
        short_words = {w for w in never_names if 2 <= len(w) <= 3}
        drug_cases = list(raw.get("drug_cases") or [])
        for i, case in enumerate(drug_cases):
            _check_case(main, f"drug_cases[{i}]", case)
        return cls(str(raw.get("locale", path.name)), patterns, frozenset(drugs), phrases, drug_regex, abbr_regex, drug_cases,
                   check_words, check_cases, frozenset(lexicon_words), frozenset(short_words), tuple(files), path)

    def to_dir(self, path: str | Path) -> None:
        """Copy its data files (the pack's to_dir: a saved pipeline carries them)."""
        if self.source_dir is None:
            return
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        for name in self.files:
            src = self.source_dir / name
            if src.resolve() != (path / name).resolve():
                shutil.copyfile(src, path / name)

    # ------------------------------------------------------------------ finding
    def drug_names(self, text: str) -> Iterable[Fact]:
        """Drug names of the lexicon as whole words, case and accents ignored (a phrase: its words
        with spaces between), and the abbreviations as written."""
        if self.drug_abbreviations is not None:
            for hit in self.drug_abbreviations.finditer(text):
                yield Fact(hit.start(), hit.end(), "drug", "drug")
        if self.drug_regex is not None:
            for hit in self.drug_regex.finditer(text):
                yield Fact(hit.start(), hit.end(), "drug", "drug")

    def candidates(self, text: str) -> Iterable[Fact]:
        """Every fact any pattern or the drug lexicon finds, overlapping ones included."""
        for pattern in self.patterns:
            for hit in pattern.regex.finditer(text):
                start, end = hit.span("fact") if "fact" in pattern.regex.groupindex else hit.span()
                if start < end:
                    yield Fact(start, end, pattern.kind, pattern.name)
        yield from self.drug_names(text)

    def find(self, text: str) -> list[Fact]:
        """The facts of `text`, sorted; overlapping ones joined into one (the longest's kind)."""
        facts = sorted(self.candidates(text), key=lambda f: (f.start, -(f.end - f.start)))
        joined: list[Fact] = []
        for f in facts:
            if joined and f.start < joined[-1].end:
                last = joined[-1]
                if f.end > last.end:
                    kind = f.kind if f.end - f.start > last.end - last.start else last.kind
                    joined[-1] = Fact(last.start, f.end, kind, last.pattern)
                continue
            joined.append(f)
        return joined

    def is_lexicon_word(self, word: str) -> bool:
        """A unit, dose form, lab test or drug of the locale (case and accents ignored from four
        letters on; two or three letters as written; one letter never: an initial)."""
        if len(word) >= 4:
            return fold(word) in self.lexicon_words
        return word in self.short_words

    def words(self, name: str) -> frozenset[str]:
        """A list of checks.yml, folded (empty when the locale has none)."""
        return self.check_words.get(name, frozenset())


# The letters fold() takes accents off, with their accented forms: a folded drug name written as a
# regex matches the word however it is accented ("furosémide", "FUROSEMIDA"; IGNORECASE does the case).
_ACCENTED = {"a": "aàáâãäå", "e": "eèéêë", "i": "iìíîï", "o": "oòóôõö", "u": "uùúûü", "c": "cç", "n": "nñ", "y": "yýÿ"}


def _folded_char(ch: str) -> str:
    """A character of a folded name as a regex: its accented forms, or spaces for a space; the middle
    dot of "l·l" also as the period notes type for it ("amoxicil.lina")."""
    if ch == " ":
        return "[ \t]+"
    if ch == "·":
        return "[·.]"
    return f"[{_ACCENTED[ch]}]" if ch in _ACCENTED else re.escape(ch)


# ---------------------------------------------------------------------- registry
_REGISTERED: dict[str, ClinicalLexicon] = {}


def register(lexicon: ClinicalLexicon) -> None:
    """Make `lexicon` the one of its locale (the latest loaded pack of a locale wins)."""
    _REGISTERED[lexicon.locale] = lexicon


def lexicon_for(lang: str | None) -> ClinicalLexicon | None:
    """The lexicon registered for `lang` (by a pack loaded in this process), or None."""
    return _REGISTERED.get(lang) if lang else None


# ---------------------------------------------------------------------- parsing helpers
def _read_list(path: Path) -> list[str]:
    return [line.strip() for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def _check_case(where: Path, name: str, case: Any) -> None:
    expect = case.get("expect") if isinstance(case, dict) else None
    if not isinstance(case, dict) or not isinstance(case.get("text"), str) or not isinstance(expect, list) \
            or not all(isinstance(e, str) for e in expect):
        raise ClinicalDataError(f"{where}: {name}: a case needs a string `text` and a list of strings `expect`")


def alternation(words: Iterable[str], piece=re.escape) -> str:
    """A regex matching any of `words`, longest first, written as a trie ("mg|mcg|mmHg" ->
    "m(?:cg|g|mHg)"): the same matches as the words joined by "|" longest first, about four times
    faster on a note, since a position is rejected on its first character instead of once per word.
    `piece` writes one character as a regex (default: escaped)."""
    trie: dict = {}
    for word in words:
        node = trie
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}  # a word ends here

    def build(node: dict) -> str:
        branches = [piece(ch) + build(child) for ch, child in sorted(node.items()) if ch]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        # greedy: a longer word is tried before the one that ends here, as longest-first alternation does
        return f"(?:{body})?" if "" in node else body

    return build(trie)


def expand(regex: str, vocab: dict[str, list[str]], defs: dict[str, str], where: str, depth: int = 0) -> str:
    """`{name}`: a vocab list (escaped words, longest first) or a def (a regex piece, expanded in turn)."""
    if depth > 5:
        raise ClinicalDataError(f"{where}: defs nest too deep (a def refers to itself?)")

    def replace(m: re.Match) -> str:
        name = m.group(1)
        if name in vocab:
            return "(?:" + alternation(vocab[name]) + ")"
        if name in defs:
            return "(?:" + expand(defs[name], vocab, defs, where, depth + 1) + ")"
        raise ClinicalDataError(f"{where}: {{{name}}} is neither in vocab nor in defs")

    return _REF.sub(replace, regex)


def _parse_pattern(path: Path, index: int, raw: dict, vocab: dict[str, list[str]], defs: dict[str, str]) -> FactPattern:
    name = raw.get("name") or f"#{index}"
    where = f"{path}: pattern {name!r}"
    for key in ("name", "kind", "regex"):
        if key not in raw:
            raise ClinicalDataError(f"{where}: missing field {key!r}")
    if raw["kind"] not in FACT_KINDS:
        raise ClinicalDataError(f"{where}: kind {raw['kind']!r} is not one of {', '.join(FACT_KINDS)}")
    flags = 0
    for flag in raw.get("flags", []):
        if flag not in _FLAGS:
            raise ClinicalDataError(f"{where}: unknown flag {flag!r}")
        flags |= _FLAGS[flag]
    source = expand(str(raw["regex"]), vocab, defs, where)
    try:
        compiled = re.compile(source, flags)
    except re.error as err:
        raise ClinicalDataError(f"{where}: regex does not compile ({err})") from None
    cases = list(raw.get("cases") or [])
    for i, case in enumerate(cases):
        _check_case(path, f"pattern {name!r} case {i}", case)
    return FactPattern(name, raw["kind"], compiled, cases)


def case_result(lexicon: ClinicalLexicon, case: dict) -> tuple[list[str], list[str]]:
    """(expected, found) of one case, sorted: the texts of every fact the whole lexicon finds in
    the case's text (any kind: a negative says that nothing in it is a clinical fact)."""
    text = case["text"]
    return sorted(case["expect"]), sorted(text[f.start:f.end] for f in lexicon.find(text))
