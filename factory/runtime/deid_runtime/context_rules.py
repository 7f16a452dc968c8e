"""Context rules of a locale: PHI told by the words around it, as data next to the regex pack.

A pack folder (regex_packs/<lc>/) may hold `rules.yml`:
  vocab         named word lists spliced into rule regexes as `{name}` (with the pack's own vocab,
                its titles as `{title}` and the number words as `{day_word}`, `{day_ordinal}`,
                `{year_word}`); kinship words, header labels, the words before a date...
  defs          named regex pieces spliced as `{name}`
  stop_words    the spaCy language whose STOP_WORDS are common words (read from spaCy at load time)
  common        words of the language that are never a name written in lower case (verbs...)
  particles     the lower-case words inside a name ("de", "van", "von", "de la")
  number_words  the file of number words (generated from num2words by `factory rule-words`)
  given_names, surnames
                the files of the names a lower-case word must be one of where a rule says so
                (generated from Faker and the locale's own surrogate lists by `factory rule-words`)
  titles        the locale's titles file (as in pack.yml), when the pack names none
  rules         each: name, label, regex (its `phi` group is the candidate), score, flags, and
                  names: how the words of `phi` are read (absent: `phi` as matched)
                    upper: any | names | never   a capitalised word (any: not a common word)
                    lower: any | names | given | never
                                                 a word in lower case: `any` = not a common word,
                                                 `names` = a given name or surname of the lists,
                                                 `given` = a given name of the lists
                    whole: true                  the value must be names to its end (header fields)
                  each: a regex; every hit of it inside `phi` is a span of its own (staff lists)
                  cases: positive and negative, as in pack.yml
  scanned       matching of scanned text without changing offsets (`ScannedView`): runs of spaced
                single characters read joined, a letter O among digits read as a zero, spaces
                around "@" and "." of an e-mail read away; the pack's patterns and these rules run
                on that view and the matches are mapped back to the text. `cases` as above.

A name is read word by word from the start of `phi` (`NameReader`): initials and particles are kept
when a name word follows them; a name is in one case (a capitalised name stops at the first word in
lower case, and the reverse); a capitalised word that is a common word, a stop word or a clinical
lexicon word (a drug, a unit) ends the name; a lower-case word is read by the rule's `lower`, and
only the first may be any uncommon word (the next ones must be names of the lists).

Each match is a `matches.Match` whose pattern is "rule:<name>" ("scanned:<pattern>" for the
scanned view); the pack component writes them to doc.spans["deid_rules"] with the source "rule",
and the merger ranks them (docs/router.md).
"""

from __future__ import annotations

import bisect
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from .clinical import alternation
from .matches import Match, NonOverlapping, trim
from .text import fold
from .yamlio import read_yaml_mapping

# "RegexPack" in the annotations below is regex_pack.RegexPack, left unimported: the pack imports
# this module, and the factory's modules import each other without a cycle (tests/factory/test_import_graph.py).

RULES_FILE = "rules.yml"
_REF = re.compile(r"\{([a-z_][a-z0-9_]*)\}")
_FLAGS = {"IGNORECASE": re.IGNORECASE, "I": re.IGNORECASE, "MULTILINE": re.MULTILINE, "M": re.MULTILINE}
_POLICIES = {"upper": ("any", "names", "never"), "lower": ("any", "names", "given", "never")}
# A word of a name: letters with inner hyphens or apostrophes ("Jean-Pierre", "D'Angelo", "O'Brien")
_WORD = re.compile(r"[^\W\d_]+(?:[-'’][^\W\d_]+)*")
# An initial: one letter and its period, or several ("P.E.", "M.-A.", "J.B.")
_INITIALS = re.compile(r"[^\W\d_]\.(?:-?[^\W\d_]\.)*")
# What may stand between two words of one name: spaces (not a line break); in a header value, also
# a comma ("Name: Smith, John")
_GAP = re.compile(r"[ \t]+")
_HEADER_GAP = re.compile(r"[ \t]+|,[ \t]*")
# A roman numeral in capitals ("XXI", "III"): a century or a stage, not a name
_ROMAN = re.compile(r"[IVXLC]+")
# Number-word lists of number_words.yml and the vocab names they take in rule regexes
NUMBER_LISTS = ("day_word", "day_ordinal", "year_word")


class RulesError(ValueError):
    """A rules.yml (or one of its word files) that cannot be used; the message names the file and rule."""


@dataclass
class Rule:
    name: str
    label: str
    regex: re.Pattern
    score: float = 0.7
    upper: str | None = None  # None: no name reading, `phi` as matched
    lower: str | None = None
    whole: bool = False
    each: re.Pattern | None = None
    unless_before: re.Pattern | None = None  # the text before the match ends with this: no match
    unless_after: re.Pattern | None = None  # the text after the candidate starts with this: no match
    single_upper: str | None = None  # `upper` of a candidate that is no item of a list (list_gap)
    list_gap: re.Pattern | None = None  # what stands between two items of a list
    cases: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class NameWords:
    """The words a name reader needs: common words (never a name), particles, the names of the lists."""

    common: frozenset[str]  # folded
    particles: frozenset[str]  # folded, as written in lower case ("de", "van der")
    given: frozenset[str]  # folded
    surnames: frozenset[str]  # folded
    lexicon: Any = None  # the pack's clinical lexicon (drugs, units: never a name)
    title_letters: frozenset[str] = frozenset()  # one-letter titles ("M." Monsieur): not an initial

    def is_common(self, word: str) -> bool:
        if fold(word) in self.common or _ROMAN.fullmatch(word):
            return True
        return self.lexicon is not None and self.lexicon.is_lexicon_word(word)

    def known(self, word: str, given_only: bool = False) -> bool:
        folded = fold(word)
        return folded in self.given or (not given_only and folded in self.surnames)


_ADDRESS_MARKS = ("@", "://", "www.")


def _inside_address(text: str, start: int, end: int) -> bool:
    """Whether [start, end) is part of an e-mail address or a URL: the run of non-space characters
    around it holds an "@", "://" or "www." (names read in lower case take "ines.vidal" for one)."""
    left = start
    while left > 0 and not text[left - 1].isspace():
        left -= 1
    right = end
    while right < len(text) and not text[right].isspace():
        right += 1
    chunk = text[left:right].lower()
    return any(mark in chunk for mark in _ADDRESS_MARKS)


def _without_particles(surnames: frozenset[str], particles: frozenset[str]) -> frozenset[str]:
    """The surnames of the lists written with their particles ("de bruijn", "van der berg") as the
    reader meets them word by word: the particles are read as particles, and the word after them
    must be a surname of the lists ("bruijn", "berg")."""
    tails = set()
    for name in surnames:
        words = name.split()
        if len(words) > 1 and all(w in particles for w in words[:-1]):
            tails.add(words[-1])
    return frozenset(tails)


class NameReader:
    """Where the name at the start of a text piece ends, by a rule's `upper` and `lower` (module docstring)."""

    def __init__(self, words: NameWords, upper: str, lower: str, whole: bool = False, max_words: int = 4):
        self.words, self.upper, self.lower, self.whole, self.max_words = words, upper, lower, whole, max_words

    def _accept(self, word: str, case: str | None, after_particle: bool) -> str | None:
        """The case of the name once `word` is read into it, or None when `word` is not a word of it."""
        if word[0].isupper():
            if case == "lower" or self.upper == "never" or self.words.is_common(word):
                return None
            if self.upper == "names" and not self.words.known(word):
                return None
            return "upper"
        if case == "upper" or self.lower == "never" or self.words.is_common(word):
            return None
        if case is None and not after_particle:  # the name's first word
            ok = {"any": True, "names": self.words.known(word), "given": self.words.known(word, given_only=True)}[self.lower]
        else:  # a further word in lower case (or one after "de"): a name of the lists
            ok = self.words.known(word)
        return "lower" if ok else None

    def extent(self, text: str, start: int, end: int) -> tuple[int, int] | None:
        """(start, end) of the name that begins at `start` (within `end`), or None."""
        pos, case, begun, name_end, count = start, None, None, None, 0
        pending_particle, initials_case = False, None
        while pos < end and count < self.max_words:
            initials = _INITIALS.match(text, pos, end)
            word = _WORD.match(text, pos, end)
            if initials and (not word or initials.end() > word.end()):
                if case is not None:
                    break  # initials after a name word begin the next person ("C. Ruiz M.J. Soto")
                initials_case = "lower" if initials.group()[0].islower() else "upper"
                letters = initials.group().replace(".", "").replace("-", "")
                if begun is None and len(letters) == 1 and letters.upper() in self.words.title_letters:
                    pass  # "M. Dupont": a one-letter title, left outside the name
                else:
                    begun = pos if begun is None else begun
                pos = initials.end()
            elif word:
                w = word.group()
                if fold(w) in self.words.particles and (w.islower() or w.istitle()):  # "de", "van", "Le" of "Le Gall"
                    begun = pos if begun is None else begun
                    pending_particle, pos = True, word.end()
                else:
                    new_case = self._accept(w, case, pending_particle and case is None)
                    if new_case is None or (initials_case is not None and new_case != initials_case):
                        break  # "h. Presenta", "i.v. de Polaramine": initials and name in one case
                    begun = pos if begun is None else begun
                    case, count, pos, pending_particle = new_case, count + 1, word.end(), False
                    name_end = pos
            else:
                break
            gap = (_HEADER_GAP if self.whole else _GAP).match(text, pos, end)
            if not gap:
                break
            pos = gap.end()
        if name_end is None:
            return None
        if self.whole and text[name_end:end].strip(" \t.,;") != "":
            return None  # a header value must be a name to its end ("Paciente: varón de 45 años" is not)
        return begun, name_end


@dataclass
class ScannedView:
    """Scanned text read as typed, with a map back to the text's offsets.

    runs: at least `min_run` single characters separated by one or two spaces ("6 1 2  3 O 4",
    "Y 1 2 3 4 5 6 7 Z") are read without the spaces; a letter O (o) in a run of digits and Os
    holding a digit is read as a zero ("O3.O4.1939"); an e-mail written with spaces around "@" and
    "." is read without them. The view's `text` holds the changes, `to_text(start, end)` maps a
    span of it back, `changed(start, end)` says whether the span touches a change."""

    text: str
    offsets: list[int]  # view index -> text index
    changes: list[tuple[int, int]]  # view spans that differ from the text, sorted

    def to_text(self, start: int, end: int) -> tuple[int, int]:
        return self.offsets[start], self.offsets[end - 1] + 1

    def changed(self, start: int, end: int) -> bool:
        i = bisect.bisect_right(self.changes, (start, float("inf")))
        return (i > 0 and self.changes[i - 1][1] > start) or (i < len(self.changes) and self.changes[i][0] < end)


_SPACED_RUN = "(?<!\\S)(?:\\S[ ]{1,2}){%d,}\\S(?!\\S)"
_O_RUN = re.compile(r"[0-9Oo]*[0-9][0-9Oo]*|[Oo]+(?=[0-9])")
# an e-mail with spaces around its "@" or its dots: a dot with a space on one side only ends a sentence
_SPACED_EMAIL = re.compile(r"[\w+-]+(?:(?:\.| \. )[\w+-]+)*[ ]?@[ ]?[\w-]+(?:(?:\.| \. )[\w-]+)+")


def scanned_view(text: str, min_run: int = 4) -> ScannedView | None:
    """The scanned reading of `text`, or None when nothing in it reads differently."""
    drop = bytearray(len(text))  # 1: a space the view leaves out
    for run in re.finditer(_SPACED_RUN % (min_run - 1), text):
        for i in range(run.start(), run.end()):
            if text[i] == " ":
                drop[i] = 1
    for email in _SPACED_EMAIL.finditer(text):
        if " " in email.group():
            for i in range(email.start(), email.end()):
                if text[i] == " ":
                    drop[i] = 1
    if not any(drop) and not re.search(r"[0-9][Oo]|[Oo][0-9]", text):
        return None
    kept = [i for i in range(len(text)) if not drop[i]]
    joined = "".join(text[i] for i in kept)
    chars = list(joined)
    changed_at = {j for j in range(1, len(kept)) if kept[j] - kept[j - 1] > 1}  # a space left out before j
    for run in _O_RUN.finditer(joined):
        for j in range(run.start(), run.end()):
            if chars[j] in "Oo":
                chars[j] = "0"
                changed_at.add(j)
    if not changed_at:
        return None
    changes, last = [], None
    for j in sorted(changed_at):  # each change as a span of the view; a joined space touches both sides
        span = (j - 1 if j and kept[j] - kept[j - 1] > 1 else j, j + 1)
        if last is not None and span[0] <= last[1]:
            last = (last[0], max(last[1], span[1]))
            changes[-1] = last
        else:
            last = span
            changes.append(span)
    return ScannedView("".join(chars), kept, changes)


@dataclass
class ContextRules:
    locale: str
    rules: list[Rule]
    words: NameWords
    scanned: dict[str, Any] | None  # None: no scanned reading
    scanned_cases: list[dict[str, Any]]
    date_words: frozenset[str]  # folded months, weekdays and number words (the merger's date tokens)
    files: tuple[str, ...] = ()  # data files read (copied with the pack)
    source_dir: Path | None = None

    # ------------------------------------------------------------------ loading
    @classmethod
    def from_dir(cls, path: str | Path, pack_vocab: dict[str, list[str]], lexicon=None,
                 title_letters: Iterable[str] = (), locale: str | None = None) -> "ContextRules | None":
        """The rules of a pack folder, or None when it has no rules.yml. `pack_vocab`: the pack's
        word lists, its titles as `title` included."""
        path = Path(path)
        main = path / RULES_FILE
        if not main.exists():
            return None
        raw = read_yaml_mapping(main, RulesError)
        files = [RULES_FILE]
        vocab = {k: list(v) for k, v in pack_vocab.items()}
        for key in ("common", "particles"):
            _check_words(main, key, raw.get(key) or [])
        for k, v in (raw.get("vocab") or {}).items():
            if k in vocab:
                raise RulesError(f"{main}: vocab {k!r} is already a word list of the pack (pack.yml or its titles)")
            vocab[k] = _check_words(main, f"vocab {k}", v)
        number_lists: dict[str, list[str]] = {}
        if raw.get("number_words"):
            nw_file = path / str(raw["number_words"])
            if not nw_file.exists():
                raise RulesError(f"{main}: number words file {nw_file.name} not found")
            files.append(nw_file.name)
            data = read_yaml_mapping(nw_file, RulesError)
            for name in NUMBER_LISTS:
                if not isinstance(data.get(name), list) or not data[name]:
                    raise RulesError(f"{nw_file}: `{name}` must be a list of words (regenerate: factory rule-words)")
                number_lists[name] = [str(w) for w in data[name]]
        defs = {k: str(v) for k, v in (raw.get("defs") or {}).items()}
        lists: dict[str, frozenset[str]] = {}
        for key in ("given_names", "surnames"):
            lists[key] = frozenset()
            if raw.get(key):
                list_file = path / str(raw[key])
                if not list_file.exists():
                    raise RulesError(f"{main}: {key} file {list_file.name} not found")
                files.append(list_file.name)
                lists[key] = frozenset(fold(w) for w in _read_list(list_file))
        common = {fold(str(w)) for w in raw.get("common") or []}
        common |= {fold(t.rstrip(".")) for t in vocab.get("title", []) if len(t.rstrip(".")) > 1}  # "Gil y la Dra"
        if raw.get("stop_words"):
            common |= {fold(w) for w in _spacy_stop_words(str(raw["stop_words"]), main)}
        particles = frozenset(fold(str(w)) for w in raw.get("particles") or [])
        common -= particles
        words = NameWords(frozenset(common), particles, lists["given_names"],
                          lists["surnames"] | _without_particles(lists["surnames"], particles), lexicon,
                          frozenset(title_letters))
        rules = [_parse_rule(main, i, r, vocab, number_lists, defs) for i, r in enumerate(raw.get("rules") or [])]
        names = [r.name for r in rules]
        duplicates = {n for n in names if names.count(n) > 1}
        if duplicates:
            raise RulesError(f"{main}: duplicate rule names {sorted(duplicates)}")
        scanned = raw.get("scanned")
        scanned_cases: list[dict[str, Any]] = []
        if scanned is not None:
            if not isinstance(scanned, dict):
                raise RulesError(f"{main}: `scanned` must be a mapping (min_run, cases)")
            scanned_cases = list(scanned.get("cases") or [])
            for i, case in enumerate(scanned_cases):
                _check_case(main, f"scanned case {i}", case)
                if not all(isinstance(e, dict) and e.get("label") for e in case["expect"]):
                    raise RulesError(f"{main}: scanned case {i}: each expected match names its label ({{text: ..., label: PHONE}})")
        date_words = {fold(w) for key in ("month", "month_abbr", "weekday") for w in vocab.get(key, [])}
        date_words |= {fold(p) for words_ in number_lists.values() for w in words_ for p in re.split(r"[\s-]+", w) if p}
        date_words |= {fold(w) for w in vocab.get("date_word", [])}
        return cls(locale or str(raw.get("locale", path.name)), rules, words, scanned, scanned_cases,
                   frozenset(date_words), tuple(files), path)

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
    def _rule_spans(self, rule: Rule, text: str) -> list[tuple[int, int, int]]:
        """(start, end, phi start) of each candidate of one rule."""

        reader = NameReader(self.words, rule.upper, rule.lower, rule.whole) if rule.upper else None
        spans = []
        for hit in rule.regex.finditer(text):
            start, end = hit.span("phi") if "phi" in rule.regex.groupindex else hit.span()
            if start < 0 or start >= end:
                continue
            if rule.unless_before is not None and rule.unless_before.search(text, max(0, hit.start() - 40), hit.start()):
                continue
            pieces = [m.span("phi") if "phi" in rule.each.groupindex else m.span()
                      for m in rule.each.finditer(text, start, end)] if rule.each else [(start, end)]
            for s, e in pieces:
                if reader is not None:
                    found = reader.extent(text, s, e)
                    if found is None:
                        continue
                    s, e = found
                s, e = trim(text, s, e)
                if s < e and not (rule.unless_after is not None and rule.unless_after.match(text, e)):
                    spans.append((s, e, start))
        return spans

    def rule_candidates(self, text: str) -> Iterable["Match"]:

        for rule in self.rules:
            spans = self._rule_spans(rule, text)
            if rule.single_upper is not None and spans:
                # an item of a list ("C. Ruiz, M.J. Soto") may be any capitalised word; one alone must
                # pass the stricter reading (`single_upper`: "H. Pylori" is no person)
                ordered = sorted(set((s, e) for s, e, _ in spans))
                in_list = set()
                for (s1, e1), (s2, e2) in zip(ordered, ordered[1:]):
                    if e1 <= s2 and rule.list_gap.fullmatch(text, e1, s2):
                        in_list |= {(s1, e1), (s2, e2)}
                strict = NameReader(self.words, rule.single_upper, rule.lower, rule.whole)
                spans = [(s, e, p) for s, e, p in spans if (s, e) in in_list or strict.extent(text, s, e) == (s, e)]
            for s, e, _ in spans:
                if _inside_address(text, s, e):
                    continue  # "su hija ines.vidal@correo.es": the pack's EMAIL, not a name
                yield Match(s, e, rule.label, text[s:e], f"rule:{rule.name}", rule.name, rule.score)

    def scanned_candidates(self, text: str, pack: "RegexPack") -> Iterable["Match"]:
        """The pack's matches and the rules' on the scanned view of `text` that read a change, mapped back."""

        if self.scanned is None:
            return
        view = scanned_view(text, int(self.scanned.get("min_run", 4)))
        if view is None:
            return
        penalty = float(self.scanned.get("score_penalty", 0.05))
        for m in [*pack.candidates(view.text), *self.rule_candidates(view.text)]:
            if not view.changed(m.start, m.end):
                continue  # the text reads the same: the pack and the rules find it there
            s, e = trim(text, *view.to_text(m.start, m.end))
            if s < e:
                name = m.pattern.split(":", 1)[-1]
                yield Match(s, e, m.label, text[s:e], f"scanned:{name}", m.kind, round(max(0.0, m.score - penalty), 3),
                            m.validated)

    def find(self, text: str, pack: "RegexPack") -> list["Match"]:
        """Non-overlapping rule matches (the scanned view's included): validated first, then higher
        score, then longer."""

        found = [*self.rule_candidates(text), *self.scanned_candidates(text, pack)]
        ranked = sorted(found, key=lambda m: (not m.validated, -m.score, -(m.end - m.start), m.start))
        chosen = NonOverlapping()
        for m in ranked:
            chosen.add(m.start, m.end, m)
        return chosen.items()

    def is_date_word(self, word: str) -> bool:
        """A month, weekday or number word of the locale (a DATE holds one, or a digit)."""
        return fold(word) in self.date_words


# ---------------------------------------------------------------------- registry
_REGISTERED: dict[str, ContextRules] = {}


def register(rules: ContextRules) -> None:
    """Make `rules` the ones of their locale (the latest loaded pack of a locale wins)."""
    _REGISTERED[rules.locale] = rules


def rules_for(lang: str | None) -> ContextRules | None:
    return _REGISTERED.get(lang) if lang else None


# ---------------------------------------------------------------------- parsing helpers
def _spacy_stop_words(lang: str, where: Path) -> frozenset[str]:
    try:
        from spacy.util import get_lang_class

        return frozenset(get_lang_class(lang).Defaults.stop_words)
    except Exception as err:  # an unknown language code: ImportError from spaCy's registry
        raise RulesError(f"{where}: stop_words: spaCy has no language {lang!r} ({type(err).__name__})") from None


def _check_words(where: Path, name: str, words: Any) -> list[str]:
    """A word list as written; YAML reads an unquoted on, no, yes as booleans and 12 as a number."""
    if not isinstance(words, list) or not all(isinstance(w, str) for w in words):
        bad = [w for w in words if not isinstance(w, str)] if isinstance(words, list) else [words]
        raise RulesError(f"{where}: {name} must be a list of words; quote {bad[:3]} (YAML reads on/no/yes as booleans)")
    return words


def _read_list(path: Path) -> list[str]:
    return [line.strip() for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def _check_case(where: Path, name: str, case: Any) -> None:
    expect = case.get("expect") if isinstance(case, dict) else None
    if not isinstance(case, dict) or not isinstance(case.get("text"), str) or not isinstance(expect, list) or not all(
            isinstance(e, str) or (isinstance(e, dict) and isinstance(e.get("text"), str)) for e in expect):
        raise RulesError(f"{where}: {name}: a case needs a string `text` and an `expect` list of strings (quote dates and numbers)")


def _number_piece(ch: str) -> str:
    """A character of a folded number word as a regex: any accent, and a space or hyphen as either or
    none ("quatre-vingt-deux", "quatre vingt deux"; "negentien honderd", "negentienhonderd")."""
    from .clinical import _ACCENTED

    if ch in " -":
        return "[ \t-]*"
    if ch == "\0":  # an "ss" of the folded word, which may be written "ß" (fold() writes "ß" as "ss")
        return "(?:ss|ß)"
    if ch == "ß":
        return "(?:ß|ss)"
    return f"[{_ACCENTED[ch]}]" if ch in _ACCENTED else re.escape(ch)


# Built-in pieces of a rule regex. {name}: where the name reader starts (a letter; the rule's `phi`,
# in a lookahead so that the next title inside it is still found); {value}: a header field's value,
# up to the line's end or the next field (two spaces or a tab).
BUILTINS = {
    "name": r"(?=(?P<phi>[^\W\d_][^\n]{0,120}))",
    "value": r"(?P<phi>[^\W\d_][^\n]*?)(?=[ \t]*(?:\r?\n|\Z)|[ \t]{2,}|\t)",
}


def _titles_regex(titles: list[str]) -> str:
    """The titles as written, in lower case ("dra.", "mme") and, those with a period, in capitals
    ("DRA."; a bare "DR" is diabetic retinopathy); a one-letter title only as written ("M." is
    Monsieur, "m." may be an initial). Each ends with its period or at a word's end."""
    forms: set[str] = set()
    for t in titles:
        forms.add(t)
        if len(t.rstrip(".")) > 1:
            forms.add(t.lower())
            if t.endswith("."):
                forms.add(t.upper())
    if not forms:
        return "(?!)"
    return "(?:(?:" + alternation(sorted(forms)) + r")(?:(?<=\.)|(?!\w)))"


def expand(regex: str, vocab: dict[str, list[str]], numbers: dict[str, list[str]], defs: dict[str, str],
           where: str, depth: int = 0) -> str:
    if depth > 5:
        raise RulesError(f"{where}: defs nest too deep (a def refers to itself?)")

    def replace(m: re.Match) -> str:
        name = m.group(1)
        if name in BUILTINS and depth == 0:
            return BUILTINS[name]
        if name == "title" and name in vocab:
            return _titles_regex(vocab[name])
        if name in numbers:  # folded, accent- and hyphen-tolerant (the rule sets IGNORECASE)
            folded = sorted({fold(w).replace("ss", "\0") for w in numbers[name]})
            return "(?:" + alternation(folded, _number_piece) + ")"
        if name in vocab:
            return "(?:" + alternation(sorted(set(vocab[name]))) + ")"
        if name in defs:
            return "(?:" + expand(defs[name], vocab, numbers, defs, where, depth + 1) + ")"
        raise RulesError(f"{where}: {{{name}}} is not a word list (vocab, the pack's, title, number words) nor a def")

    return _REF.sub(replace, regex)


def _parse_rule(path: Path, index: int, raw: dict, vocab: dict[str, list[str]], numbers: dict[str, list[str]],
                defs: dict[str, str]) -> Rule:
    from .canonical import CANONICAL_LABELS

    name = raw.get("name") or f"#{index}"
    where = f"{path}: rule {name!r}"
    for key in ("name", "label", "regex"):
        if key not in raw:
            raise RulesError(f"{where}: missing field {key!r}")
    if raw["label"] not in CANONICAL_LABELS:
        raise RulesError(f"{where}: label {raw['label']!r} is not canonical ({', '.join(CANONICAL_LABELS)})")
    flags = 0
    for flag in raw.get("flags", []):
        if flag not in _FLAGS:
            raise RulesError(f"{where}: unknown flag {flag!r}")
        flags |= _FLAGS[flag]

    def compile_(source: str) -> re.Pattern:
        try:
            return re.compile(expand(source, vocab, numbers, defs, where), flags)
        except re.error as err:
            raise RulesError(f"{where}: regex does not compile ({err})") from None

    regex = compile_(str(raw["regex"]))
    each = compile_(str(raw["each"])) if raw.get("each") else None
    unless_before = compile_("(?:" + str(raw["unless_before"]) + r")[ \t]*\Z") if raw.get("unless_before") else None
    unless_after = compile_(str(raw["unless_after"])) if raw.get("unless_after") else None
    names = raw.get("names")
    upper = lower = None
    whole = False
    if names is not None:
        if not isinstance(names, dict):
            raise RulesError(f"{where}: `names` must be a mapping (upper, lower, whole)")
        upper, lower = str(names.get("upper", "any")), str(names.get("lower", "never"))
        for key, value in (("upper", upper), ("lower", lower)):
            if value not in _POLICIES[key]:
                raise RulesError(f"{where}: names.{key} must be one of {', '.join(_POLICIES[key])}, not {value!r}")
        whole = bool(names.get("whole", False))
    single_upper = list_gap = None
    if names is not None and names.get("single_upper") is not None:
        single_upper = str(names["single_upper"])
        if single_upper not in _POLICIES["upper"]:
            raise RulesError(f"{where}: names.single_upper must be one of {', '.join(_POLICIES['upper'])}")
        list_gap = compile_(str(raw.get("list_gap") or r"[ \t]*[,;/]?[ \t]*"))
    cases = list(raw.get("cases") or [])
    for i, case in enumerate(cases):
        _check_case(path, f"rule {name!r} case {i}", case)
    return Rule(name, raw["label"], regex, float(raw.get("score", 0.7)), upper, lower, whole, each, unless_before,
                unless_after, single_upper, list_gap, cases)


def case_result(pack: "RegexPack", case: dict, label: str) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(expected, found) of one rules case, sorted: the rule matches (the scanned view's included)
    of the labels the case is about, in the case's text; a negative expects none of the rule's label."""
    expected = sorted((e, label) if isinstance(e, str) else (e["text"], e.get("label", label)) for e in case["expect"])
    labels = {lab for _, lab in expected} or set(case.get("labels") or [label])
    found = sorted((m.text, m.label) for m in pack.rules.find(case["text"], pack) if m.label in labels)
    return expected, found
