"""Error analysis, `factory errors`: what a deid pipeline misses and what it over-redacts, by label
and by context category, on an annotated corpus (any corpus `factory evaluate` reads: DocBin .spacy,
records JSONL, brat folder with --lang/--label-map, i2b2 XML).

PHI rule: the corpus is protected health information. Nothing this module logs or prints contains
span text or record text: only counts, labels, categories, record ids and character offsets. The
report files (errors.json, errors.md) hold the same, no text; `--with-text` (with_text=True) adds
each error's span text to errors.json only (never to errors.md, the log or the terminal), and that
errors.json then contains PHI and must be kept like the corpus itself.

Kinds of error, on character offsets, for one system (`ner` = doc.spans["deid_ner"], `regex` =
doc.spans["deid_regex"], `combined` = doc.ents, as in `factory evaluate`):
  missed          a gold span that no predicted span overlaps
  partial         a gold span that some prediction overlaps, none with exactly its boundaries
  wrong_label     a gold span predicted with exactly its boundaries, but only with other labels
  false_positive  a predicted span that overlaps no gold span
A gold span predicted with its boundaries and label is correct (not an error). A prediction that
overlaps a gold span without matching it is reported with that gold span (kind partial or
wrong_label, the predictions' offsets and labels under "predicted"), not as a false positive.
missed/partial/wrong_label carry the gold label; false_positive the predicted label.

Context categories, heuristics on the text around the span (the gold span for missed, partial and
wrong_label; the predicted span for false_positive). Each error has one *position* (the first rule
that holds, in this order) and one or more *shapes*.

Position, from the line the span starts on:
  signature     the line is one of the last `signature_last_lines` non-empty lines of a document
                of at least `signature_min_lines` non-empty lines; or the line (after any bullet)
                starts with a signature marker ("Firmado", "Fdo.", or a title of the locale's
                `signature_titles` groups: "Dr.", ...) and has at most
                `signature_line_max_words` words; or the previous non-empty line is a marker alone
                ("Firmado:")
  table         the line has a tab between words, or two or more runs of 2+ spaces between words
  list          the line starts with a bullet (- * • · – —), a number and "." or ")" ("1. ", "2) ")
                or a letter and ")"
  header_field  "Label: value": a colon before the span on its line, the label (from the line start
                or the last ". ", ";" or tab before the colon) is at most `header_label_max_words`
                words and `header_label_max_chars` characters, and at most
                `header_value_max_chars` characters lie between the colon and the span
  narrative     anything else (prose)

Shape, from the span and the few characters before it on its line (several may hold):
  title_name        preceded by one of the locale's titles (its titles.yml: "Dr.", "Mme"...;
                    within `title_window_chars`), or starting with one
  initials          a word of the span is one or more single uppercase letters each followed by a
                    dot ("J.", "J.R.")
  all_caps          every letter is uppercase and some word has 2+ letters ("GARCÍA", "INFORME")
  capitalised_term  starts with an uppercase letter, not all caps, and not at the start of a
                    sentence (the line start, a bullet, or ". ! ?" not part of a title)
  digits            at least `digits_min_share` of its non-space characters are digits
  eponym            starts uppercase and follows a disease word and optional connective
                    ("enfermedad de", "maladie de", "Morbus"), or is followed by "'s disease"
  unit              a quantity: the span ends with a unit ("93%", "945 mg/24h") or a unit follows
                    it ("7200 UI", "68 %"), a unit being one of `units`
  drug              a word of the span ends with a drug-name stem of `drug_stems` ("-prazol",
                    "-mab", "-statina"), or a dose (a number and a unit) follows it within
                    `dose_window_chars`
  other             none of the above (e.g. lowercase words)

The words and thresholds are data, for the pipeline's language (or --lang): the generic lists and
the thresholds of factory/templates/errors.yml (what belongs to no language: units, the WHO's
drug-name stems), plus the locale's own words, read through its Locale: languages/<lc>/errors.yml
(signature markers, the title groups that open a signature line, disease words, connectives, drug
stems) and its titles (languages/<lc>/surrogate_data/titles.yml). `--categories FILE` reads another
file in place of factory/templates/errors.yml (its `generic` lists are added to every language's).

Output in OUT: errors.json (counts by kind, label, position, shape and (kind, label, category),
label confusions, and one entry per error: record id, start, end, label, kind, position, shapes)
and errors.md (count tables), written together atomically.
"""

from __future__ import annotations

import json
import logging
import re
from bisect import bisect_left
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import typer

from .evaluate import SYSTEMS, EvalError, SpanT, load_corpus, predict
from .records import read_yaml_mapping
from .outputs import all_or_nothing, write_text_atomic

log = logging.getLogger(__name__)

CATEGORIES_FILE = Path(__file__).resolve().parent / "templates" / "errors.yml"
KINDS = ("missed", "partial", "wrong_label", "false_positive")
POSITIONS = ("signature", "table", "list", "header_field", "narrative")
SHAPES = ("title_name", "initials", "all_caps", "capitalised_term", "digits", "eponym", "unit", "drug", "other")
WORD_LISTS = ("titles", "signature_markers", "disease_words", "connectives", "units", "drug_stems")
LOCALE_FILE = "errors"  # languages/<lc>/errors.yml: a locale's own words (Locale.read)
SIGNATURE_TITLES = "signature_titles"  # in it: the groups of the locale's titles that open a signature line
DEFAULT_RULES = {"signature_last_lines": 3, "signature_min_lines": 8, "signature_line_max_words": 12,
                 "header_label_max_words": 4, "header_label_max_chars": 40, "header_value_max_chars": 40,
                 "digits_min_share": 0.5, "title_window_chars": 20, "dose_window_chars": 4}

_BULLET = re.compile(r"\s*(?:[-*•·–—]|\d{1,3}[.)]|[A-Za-z]\))\s+")
_BULLET_CHARS = " \t-*•·–—"
_SPACE_RUN = re.compile(r"\S {2,}(?=\S)")
_INITIALS = re.compile(r"(?:[^\W\d_]\.)+")
_LETTER_WORD = re.compile(r"[^\W\d_]{2,}")


class ErrorAnalysisError(RuntimeError):
    """An expected failure of the error analysis; the message names files, never corpus text."""


# --------------------------------------------------------------------------- category rules (data)
@dataclass
class ContextRules:
    """The words and thresholds of the context categories for one language."""

    lang: str
    titles: list[str] = field(default_factory=list)
    signature_markers: list[str] = field(default_factory=list)
    disease_words: list[str] = field(default_factory=list)
    connectives: list[str] = field(default_factory=list)
    units: list[str] = field(default_factory=list)
    drug_stems: list[str] = field(default_factory=list)
    rules: dict = field(default_factory=lambda: dict(DEFAULT_RULES))

    def __post_init__(self) -> None:
        def alternation(words: list[str], after: str = "") -> str:
            return "|".join(re.escape(w) + (after if not after or not w.endswith((".", "'", "’")) else r"\s*")
                            for w in sorted(set(words), key=len, reverse=True))

        titles = alternation(self.titles, r"\s+")
        self._title_before = re.compile(rf"(?<!\w)(?:{titles})$") if titles else None
        self._title_start = re.compile(rf"(?:{titles})(?=\w)") if titles else None
        self._markers = sorted(set(self.signature_markers), key=len, reverse=True)
        self._eponym_before = self._eponym_after = None
        if self.disease_words:
            diseases = alternation(self.disease_words)
            connectives = alternation(self.connectives, r"\s+")
            tail = rf"(?:\s+(?:{connectives})|\s+)" if connectives else r"\s+"
            self._eponym_before = re.compile(rf"(?<!\w)(?:{diseases}){tail}$", re.IGNORECASE)
            self._eponym_after = re.compile(rf"(?:['’]s)?\s+(?:{diseases})(?!\w)", re.IGNORECASE)
        self._unit_end = self._unit_after = self._dose_after = None
        if self.units:
            # units are case-sensitive ("mg", "UI", "L"); one must not run on into a word ("mg" of "mgr")
            units = "|".join(re.escape(u) for u in sorted(set(self.units), key=len, reverse=True))
            self._unit_end = re.compile(rf"\d\s*(?:{units})$")
            self._unit_after = re.compile(rf"\s?(?:{units})(?![^\W\d_])")
            # a dose starting at most dose_window_chars after the word ("Sintrom 4 mg", "omeprazol, 20 mg")
            window = int(self.rules["dose_window_chars"])
            self._dose_after = re.compile(rf".{{0,{window}}}?\d+(?:[.,]\d+)?\s?(?:{units})(?![^\W\d_])", re.DOTALL)
        stems = sorted({s.casefold() for s in self.drug_stems}, key=len, reverse=True)
        self._drug_stems = tuple(stems)


def _add_words(words: dict[str, list[str]], group: object, where: str, lists: Sequence[str]) -> None:
    if not isinstance(group, dict) or set(group) - set(lists):
        raise ErrorAnalysisError(f"{where} must map {', '.join(lists)} to lists of words")
    for key in lists:
        values = group.get(key) or []
        if not isinstance(values, list) or not all(isinstance(v, str) and v.strip() for v in values):
            raise ErrorAnalysisError(f"{where}.{key} must be a list of non-empty strings")
        words.setdefault(key, []).extend(values)


def _locale_words(lang: str) -> dict[str, list[str]]:
    """The words of the locale `lang` (none for a language the project has no folder of): its
    errors.yml and its titles, the titles of its `signature_titles` groups as signature markers."""
    from .locale import Locale, LocaleError

    locale = Locale.of(lang)
    try:
        own = locale.read(LOCALE_FILE) if locale.concern_file(LOCALE_FILE).exists() else {}
        titles = locale.titles()
    except LocaleError as err:
        raise ErrorAnalysisError(str(err)) from None
    groups = own.pop(SIGNATURE_TITLES, None) or []
    where = str(locale.concern_file(LOCALE_FILE))
    unknown = [g for g in groups if g not in titles.groups] if isinstance(groups, list) else groups
    if unknown:
        raise ErrorAnalysisError(f"{where}: {SIGNATURE_TITLES} must list groups of {locale.titles_file} (not {unknown})")
    words: dict[str, list[str]] = {}
    _add_words(words, own, where, [k for k in WORD_LISTS if k not in ("titles", "units")])
    words["titles"] = titles.forms()
    words["signature_markers"] = words.get("signature_markers", []) + [
        form for group in groups for sex in titles.groups[group] for form in titles.groups[group][sex]]
    return words


def load_context_rules(lang: str | None = None, path: str | Path | None = None) -> ContextRules:
    """The generic lists (factory/templates/errors.yml, or `path`) plus those of the locale `lang`
    (its errors.yml and its titles, added to them) and the thresholds."""
    path = Path(path) if path is not None else CATEGORIES_FILE
    if not path.exists():
        raise ErrorAnalysisError(f"{path}: categories file not found")
    data = read_yaml_mapping(path, ErrorAnalysisError, "a mapping with generic and rules")
    unknown = set(data) - {"generic", "rules"}
    if unknown:
        raise ErrorAnalysisError(f"{path}: unknown keys {sorted(unknown)} (expected generic, rules; a language's words "
                          f"are in languages/<lc>/errors.yml)")
    words: dict[str, list[str]] = {}
    _add_words(words, data.get("generic") or {}, f"{path}: generic", WORD_LISTS)
    for key, values in (_locale_words(lang) if lang else {}).items():
        words.setdefault(key, []).extend(values)
    rules = dict(DEFAULT_RULES)
    given = data.get("rules") or {}
    if not isinstance(given, dict) or set(given) - set(DEFAULT_RULES):
        raise ErrorAnalysisError(f"{path}: rules may only set {', '.join(DEFAULT_RULES)}")
    for key, value in given.items():
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
            raise ErrorAnalysisError(f"{path}: rules.{key} must be a non-negative number")
        rules[key] = value
    return ContextRules(lang=lang or "", rules=rules, **words)


# --------------------------------------------------------------------------- categories
class _Lines:
    """The non-empty lines of one text, by start offset."""

    def __init__(self, text: str):
        self.text = text
        self.starts: list[int] = []
        pos = 0
        for line in text.split("\n"):
            if line.strip():
                self.starts.append(pos)
            pos += len(line) + 1

    def bounds(self, offset: int) -> tuple[int, int]:
        start = self.text.rfind("\n", 0, offset) + 1
        end = self.text.find("\n", offset)
        return start, len(self.text) if end < 0 else end

    def index(self, line_start: int) -> int:
        """Position of the line starting at line_start among the non-empty lines (-1 if empty)."""
        i = bisect_left(self.starts, line_start)
        return i if i < len(self.starts) and self.starts[i] == line_start else -1

    def previous(self, line_start: int) -> str | None:
        i = bisect_left(self.starts, line_start)
        if i == 0:
            return None
        s = self.starts[i - 1]
        return self.text[s:self.bounds(s)[1]]


def _norm_marker(s: str) -> str:
    return s.strip().rstrip(":.,; ").strip()


def _starts_with_marker(line: str, markers: Sequence[str]) -> bool:
    for m in markers:
        if line.startswith(m):
            rest = line[len(m):]
            if not rest or not (rest[0].isalnum() or rest[0] == "_") or not m[-1].isalnum():
                return True
    return False


def position_category(lines: _Lines, start: int, rules: ContextRules) -> str:
    """Where the span starting at `start` sits: signature, table, list, header_field or narrative."""
    text, r = lines.text, rules.rules
    line_start, line_end = lines.bounds(start)
    line = text[line_start:line_end]
    n, i = len(lines.starts), lines.index(line_start)
    body = line.lstrip(_BULLET_CHARS)
    if i >= 0 and n >= r["signature_min_lines"] and i >= n - r["signature_last_lines"]:
        return "signature"
    if _starts_with_marker(body, rules._markers) and len(body.split()) <= r["signature_line_max_words"]:
        return "signature"
    previous = lines.previous(line_start)
    if previous is not None and _norm_marker(previous) in {_norm_marker(m) for m in rules._markers}:
        return "signature"
    if "\t" in line.strip() or len(_SPACE_RUN.findall(line)) >= 2:
        return "table"
    if _BULLET.match(line):
        return "list"
    before = text[line_start:start]
    colon = before.rfind(":")
    if colon >= 0:
        head = before[:colon]
        boundary = max(head.rfind(". "), head.rfind(";"), head.rfind("\t"))
        label = head[boundary + 1:].strip(" .;\t" + _BULLET_CHARS)
        if (label and len(label.split()) <= r["header_label_max_words"] and len(label) <= r["header_label_max_chars"]
                and len(before) - colon - 1 <= r["header_value_max_chars"]):
            return "header_field"
    return "narrative"


def shape_categories(lines: _Lines, start: int, end: int, rules: ContextRules) -> list[str]:
    """What the span looks like (see the module docstring); ["other"] when nothing holds."""
    text, r = lines.text, rules.rules
    span = text[start:end]
    line_start = lines.bounds(start)[0]
    before = text[max(line_start, start - int(r["title_window_chars"])):start]
    shapes = []
    titled = bool(rules._title_before and (rules._title_before.search(before) or rules._title_start.match(span)))
    if titled:
        shapes.append("title_name")
    words = span.split()
    if any(_INITIALS.fullmatch(w) and w[0].isupper() for w in words):
        shapes.append("initials")
    letters = [c for c in span if c.isalpha()]
    all_caps = bool(letters) and all(c.isupper() for c in letters) and bool(_LETTER_WORD.search(span))
    if all_caps:
        shapes.append("all_caps")
    first_upper = bool(letters) and letters[0].isupper()
    prefix = text[line_start:start].rstrip().rstrip(_BULLET_CHARS).rstrip()
    sentence_start = not prefix or (prefix[-1] in ".!?¡¿" and not titled)
    if first_upper and not all_caps and not sentence_start:
        shapes.append("capitalised_term")
    chars = [c for c in span if not c.isspace()]
    if chars and sum(c.isdigit() for c in chars) / len(chars) >= r["digits_min_share"]:
        shapes.append("digits")
    if first_upper and rules._eponym_before is not None:
        wide = text[max(line_start, start - 40):start]
        if rules._eponym_before.search(wide) or rules._eponym_after.match(text, end):
            shapes.append("eponym")
    ends_in_digit = bool(span) and span[-1].isdigit()
    if rules._unit_end is not None and (rules._unit_end.search(span) or (ends_in_digit and rules._unit_after.match(text, end))):
        shapes.append("unit")
    stem_word = bool(rules._drug_stems) and any(w.casefold().endswith(rules._drug_stems) for w in _LETTER_WORD.findall(span))
    dosed = rules._dose_after is not None and letters and not ends_in_digit and rules._dose_after.match(text, end)
    if stem_word or dosed:
        shapes.append("drug")
    return shapes or ["other"]


# --------------------------------------------------------------------------- errors
def _overlaps(a: SpanT, b: SpanT) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def classify_errors(gold: Sequence[SpanT], pred: Sequence[SpanT]) -> list[tuple[str, SpanT, list[SpanT]]]:
    """(kind, span, related predictions) for each error of one document (see the module docstring)."""
    gold, pred = sorted(set(gold)), sorted(set(pred))
    errors = []
    for g in gold:
        over = [p for p in pred if _overlaps(g, p)]
        exact = [p for p in over if p[:2] == g[:2]]
        if any(p[2] == g[2] for p in exact):
            continue
        if exact:
            errors.append(("wrong_label", g, exact))
        elif over:
            errors.append(("partial", g, over))
        else:
            errors.append(("missed", g, []))
    for p in pred:
        if not any(_overlaps(p, g) for g in gold):
            errors.append(("false_positive", p, []))
    return sorted(errors, key=lambda e: (e[1][0], e[1][1], KINDS.index(e[0])))


def _as_corpus(corpus, lang: str | None, label_map: str | None) -> list[tuple[str, str, list[SpanT]]]:
    if isinstance(corpus, (str, Path)):
        try:
            return load_corpus(corpus, lang=lang, label_map=label_map)
        except EvalError as err:
            raise ErrorAnalysisError(str(err)) from None
    return [(str(i), t, [tuple(s) for s in g]) for i, t, g in corpus]


def analyse_errors(nlp, corpus, system: str = "combined", lang: str | None = None, rules: ContextRules | None = None,
                   batch_size: int = 16, with_text: bool = False, label_map: str | None = None) -> dict:
    """Run `nlp` on the corpus ((id, text, gold spans) documents, as load_corpus returns, or a path
    it reads) and return the errors of `system`: counts by kind, label and category, and one entry
    per error (offsets, no text unless with_text, which puts PHI into the result)."""
    if system not in SYSTEMS:
        raise ValueError(f"unknown system {system!r} (expected one of {', '.join(SYSTEMS)})")
    lang = lang or getattr(nlp, "lang", None)
    data = _as_corpus(corpus, lang, label_map)
    if rules is None:
        rules = load_context_rules(lang)
    preds = predict(nlp, [t for _, t, _ in data], batch_size=batch_size)[system]
    entries = []
    n_gold = n_pred = 0
    for (rid, text, gold), pred in zip(data, preds):
        n_gold += len(set(gold))
        n_pred += len(set(pred))
        lines = _Lines(text)
        for kind, (start, end, label), related in classify_errors(gold, pred):
            position = position_category(lines, start, rules)
            shapes = shape_categories(lines, start, end, rules)
            entry = {"id": rid, "start": start, "end": end, "label": label, "kind": kind, "position": position,
                     "shape": shapes, "categories": [position, *shapes]}
            if related:
                entry["predicted"] = [{"start": s, "end": e, "label": lab} for s, e, lab in related]
            if with_text:
                entry["text"] = text[start:end]
                for p in entry.get("predicted", []):
                    p["text"] = text[p["start"]:p["end"]]
            entries.append(entry)
    n_errors_gold = sum(e["kind"] != "false_positive" for e in entries)
    report = {"system": system, "lang": lang, "docs": len(data), "gold": n_gold, "predicted": n_pred,
              "correct": n_gold - n_errors_gold, "with_text": with_text, "counts": count_errors(entries),
              "errors": entries}
    log.info("errors of %s on %d documents: %s", system, len(data), json.dumps(report["counts"]["by_kind"]))
    return report


def count_errors(entries: Sequence[dict]) -> dict:
    """Counts of error entries by kind, label x kind, position x kind, shape x kind, category x kind,
    (kind, label, category) and wrong-label confusions (gold label -> predicted label)."""
    by_kind = Counter(e["kind"] for e in entries)
    tables = {name: defaultdict(Counter) for name in ("by_label", "by_position", "by_shape", "by_category")}
    triples, confusions = Counter(), Counter()
    for e in entries:
        k = e["kind"]
        tables["by_label"][e["label"]][k] += 1
        tables["by_position"][e["position"]][k] += 1
        for s in e["shape"]:
            tables["by_shape"][s][k] += 1
        for c in e["categories"]:
            tables["by_category"][c][k] += 1
            triples[(k, e["label"], c)] += 1
        if k == "wrong_label":
            for p in e.get("predicted", []):
                confusions[(e["label"], p["label"])] += 1
    counts = {"by_kind": {k: by_kind.get(k, 0) for k in KINDS}}
    for name, table in tables.items():
        counts[name] = {key: {k: row.get(k, 0) for k in KINDS} for key, row in sorted(table.items())}
    counts["by_kind_label_category"] = [{"kind": k, "label": lab, "category": c, "n": n}
                                        for (k, lab, c), n in sorted(triples.items(), key=lambda x: (-x[1], x[0]))]
    counts["confusions"] = [{"gold": g, "predicted": p, "n": n}
                            for (g, p), n in sorted(confusions.items(), key=lambda x: (-x[1], x[0]))]
    return counts


# --------------------------------------------------------------------------- report
def _kind_table(title: str, first: str, rows: dict, order: Sequence[str] | None = None) -> list[str]:
    keys = [k for k in (order or sorted(rows)) if k in rows]
    lines = [f"## {title}", "", f"| {first} | " + " | ".join(KINDS) + " | total |", "|---" * (len(KINDS) + 2) + "|"]
    for key in keys:
        row = rows[key]
        lines.append(f"| {key} | " + " | ".join(str(row[k]) for k in KINDS) + f" | {sum(row.values())} |")
    if not keys:
        lines.append("| (none) |" + " |" * (len(KINDS) + 1))
    return lines + [""]


def render_error_report(report: dict, top: int = 15) -> str:
    """errors.md: count tables only (never span text, whatever report["with_text"] says)."""
    c = report["counts"]
    name = Path(str(report.get("pipeline", "pipeline"))).name
    lines = [f"# Errors of `{name}` ({report['system']})", "",
             f"Corpus: `{report.get('corpus', '-')}`: {report['docs']} documents, {report['gold']} gold spans, "
             f"{report['predicted']} predicted, {report['correct']} correct (exact span and label).", "",
             "| kind | count |", "|---|---|"]
    lines += [f"| {k} | {c['by_kind'][k]} |" for k in KINDS]
    lines += ["", "Categories are heuristics on the text around each span (rules in `factory/error_analysis.py`); "
                  "this file and the log hold counts only, never span text.", ""]
    lines += _kind_table("By label", "label", c["by_label"])
    lines += _kind_table("By position", "position", c["by_position"], POSITIONS)
    lines += _kind_table("By shape (an error may have several)", "shape", c["by_shape"], SHAPES)
    lines += ["## Top (kind, label, category)", "", "| kind | label | category | count |", "|---|---|---|---|"]
    lines += [f"| {r['kind']} | {r['label']} | {r['category']} | {r['n']} |" for r in c["by_kind_label_category"][:top]]
    if c["confusions"]:
        lines += ["", "## Wrong labels (gold -> predicted)", "", "| gold | predicted | count |", "|---|---|---|"]
        lines += [f"| {r['gold']} | {r['predicted']} | {r['n']} |" for r in c["confusions"]]
    return "\n".join(lines) + "\n"


def write_error_report(report: dict, out_dir: str | Path) -> dict[str, Path]:
    """Write errors.json and errors.md into out_dir, together and atomically."""
    out_dir = Path(out_dir)
    paths = {"json": out_dir / "errors.json", "md": out_dir / "errors.md"}
    with all_or_nothing():
        write_text_atomic(paths["json"], json.dumps(report, ensure_ascii=False, indent=2) + "\n")
        write_text_atomic(paths["md"], render_error_report(report))
    return paths


def errors_pipeline(pipeline: str | Path, corpus: str | Path, out_dir: str | Path, system: str = "combined",
                    lang: str | None = None, label_map: str | None = None, batch_size: int = 16,
                    with_text: bool = False, categories: str | Path | None = None) -> dict:
    """Load the corpus (first: a wrong path fails before the pipeline loads), the rules and the
    pipeline, analyse, write the report; return it."""
    import spacy

    from deid_runtime import biluo_tagger, merger, pack_component  # noqa: F401  (register the factories)

    if system not in SYSTEMS:
        raise ErrorAnalysisError(f"unknown system {system!r} (expected one of {', '.join(SYSTEMS)})")
    data = _as_corpus(corpus, lang, label_map)
    if not data:
        raise ErrorAnalysisError(f"{corpus}: no documents to analyse")
    try:
        nlp = spacy.load(pipeline)
    except OSError as err:
        reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ErrorAnalysisError(f"{pipeline}: cannot load the pipeline ({reason})") from None
    rules = load_context_rules(lang or nlp.lang, categories)
    report = analyse_errors(nlp, data, system=system, lang=lang or nlp.lang, rules=rules, batch_size=batch_size,
                            with_text=with_text)
    report = {"pipeline": str(pipeline), "corpus": str(corpus), **report}
    write_error_report(report, out_dir)
    return report


def errors_command(
    pipeline: str = typer.Argument(..., help="Pipeline folder or installed package (deid_<lc>)"),
    corpus: Path = typer.Argument(..., help="Gold corpus: DocBin (.spacy), records JSONL, brat folder, i2b2 XML "
                                  "or inline-markup .txt ([text](LABEL) documents separated by '=====' lines)"),
    out: Path = typer.Option(..., "--out", "-o", help="Output folder (errors.json, errors.md)"),
    system: str = typer.Option("combined", "--system", help="ner (doc.spans['deid_ner']), regex "
                               "(doc.spans['deid_regex']) or combined (doc.ents)"),
    lang: str = typer.Option(None, "--lang", help="Language of a brat corpus and of the category word lists "
                             "(default: the pipeline's)"),
    label_map: str = typer.Option(None, "--label-map", help="Label map of a brat corpus (e.g. meddocan)"),
    batch_size: int = typer.Option(16, "--batch-size", help="documents per nlp.pipe batch"),
    with_text: bool = typer.Option(False, "--with-text", help="Also write each error's span text into errors.json: "
                                   "that file then CONTAINS PHI (never errors.md or the terminal)"),
    categories: Path = typer.Option(None, "--categories", help="YAML of titles, signature markers, disease "
                                    "words and thresholds (default: factory/templates/errors.yml)"),
) -> None:
    """Error analysis: misses and false positives by label and context category, as counts and offsets.

    Categories: position (header_field, list, signature, table, narrative) and shape (title_name,
    initials, all_caps, capitalised_term, digits, eponym, unit, drug). No span text is printed, logged or
    written, unless --with-text puts it into errors.json, which then CONTAINS PHI."""
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        report = errors_pipeline(pipeline, corpus, out, system=system, lang=lang, label_map=label_map or None,
                                 batch_size=batch_size, with_text=with_text, categories=categories)
    except ErrorAnalysisError as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(1)
    by_kind = report["counts"]["by_kind"]
    typer.echo(f"{report['corpus']} ({report['system']}, {report['docs']} documents, {report['gold']} gold spans): "
               + ", ".join(f"{by_kind[k]} {k}" for k in KINDS) + f" -> {Path(out) / 'errors.json'}, errors.md"
               + (" (errors.json contains PHI: --with-text)" if with_text else ""))
