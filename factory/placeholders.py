"""Placeholders: replace every PHI entity with a persistent term that machine translation keeps.

Stage 4 of the factory (README, "The pipeline, stage by stage"). A record's PHI spans are grouped
into entities (same label and same normalised surface form; a PERSON mention whose words are a
strict subset of exactly one longer PERSON mention is linked to it, e.g. a surname alone), each
entity gets one term of the target's placeholder inventory (`languages/<lc>/placeholders.yml`), and
every mention is replaced by that term. Coreference therefore survives translation, and the
surrogate stage maps each term to one surrogate.

The original surface strings are never stored: only a *shape* (word count, numeric or written date,
unit present, international phone...) that lets surrogates look like what they replace. After
translation, `find_placeholders` locates every term again and classifies what went wrong
(missing, duplicated, merged, altered) so the translate stage can retry or drop the record.
"""

from __future__ import annotations

import functools
import logging
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import srsly
import typer
import yaml
from deid_runtime.text import fold, replace_spans

from . import project_root
from .locale import Locale, concern_files
from .labels import CANONICAL_LABELS
from .records import Record, RecordError, Span, read_records, span_problems
from .outputs import write_chunks_atomic, write_json_atomic, write_text_atomic
from deid_runtime.surrogates import describe, load_locale

log = logging.getLogger(__name__)

POOL = "ANY"  # shared terms used when a category's own list runs out
SHAPE_CONTEXT_CHARS = 60  # text before a span that tells its kind ("País: ", "Sra. ")

_WORD = re.compile(r"\w+", re.UNICODE)
PLACEHOLDER_TEXT = "placeholder_text"  # meta key: the text with placeholders, until a stage rewrites it


class PlaceholderError(ValueError):
    """A record that cannot be placeholderised; `reason` is a short machine-readable key."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason


# ----------------------------------------------------------------------------- inventory
@dataclass
class Inventory:
    """Placeholder terms per canonical label (plus the shared POOL), in order of preference."""

    terms: dict[str, list[str]]
    path: Path | None = None
    survival: dict[str, float] = field(default_factory=dict)
    calibrated: bool = False

    def all_terms(self) -> list[str]:
        seen: dict[str, None] = {}
        for values in self.terms.values():
            for term in values:
                seen.setdefault(term, None)
        return list(seen)

    def check(self) -> None:
        where = self.path or "<inventory>"
        counts = Counter(self.all_terms_with_repeats())
        dup = [t for t, n in counts.items() if n > 1]
        if dup:
            raise ValueError(f"{where}: placeholder terms used in two categories: {', '.join(sorted(dup))}")
        for term in counts:
            if not re.fullmatch(r"[^\W\d_]+", term):
                raise ValueError(f"{where}: placeholder term {term!r} must be one word of letters (no digits, '_' or spaces)")
        unknown = [k for k in self.terms if k not in CANONICAL_LABELS and k != POOL]
        if unknown:
            raise ValueError(f"{where}: unknown categories {unknown}; use canonical labels or {POOL}")

    def all_terms_with_repeats(self) -> list[str]:
        return [t for values in self.terms.values() for t in values]


def inventory_path(target: str) -> Path:
    """languages/<target>/placeholders.yml of the factory's project (Locale.placeholders_file)."""
    return Locale.of(target).placeholders_file


def load_inventory(target: str | None = None, path: str | Path | None = None) -> Inventory:
    """Read the inventory: calibrated `terms` when present, otherwise the hand-written `candidates`."""
    path = Path(path) if path else inventory_path(str(target))
    if not path.exists():
        raise FileNotFoundError(f"placeholder inventory not found: {path}")
    raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    survival: dict[str, float] = {}
    if raw.get("terms"):
        terms: dict[str, list[str]] = {}
        for label, entries in raw["terms"].items():
            terms[label] = []
            for entry in entries or []:
                if isinstance(entry, dict):
                    terms[label].append(str(entry["term"]))
                    survival[str(entry["term"])] = float(entry.get("survival", 1.0))
                else:
                    terms[label].append(str(entry))
        inv = Inventory(terms, path, survival, calibrated=True)
    elif raw.get("candidates"):
        inv = Inventory({k: [str(t) for t in v or []] for k, v in raw["candidates"].items()}, path)
    else:
        raise ValueError(f"{path}: no `terms` or `candidates` section")
    inv.check()
    return inv


def all_placeholder_terms() -> list[str]:
    """Every candidate and calibrated term of every locale (the argos testkit trains its tokenizer on them)."""
    found: dict[str, None] = {}
    for path in concern_files("placeholders"):
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        for section in ("candidates", "terms"):
            for entries in (raw.get(section) or {}).values():
                for entry in entries or []:
                    found.setdefault(str(entry["term"] if isinstance(entry, dict) else entry), None)
    return list(found)


# ----------------------------------------------------------------------------- entities and shapes
def normalize_surface(text: str) -> str:
    """Case-, accent- and punctuation-insensitive key: 'García-López' and 'GARCIA LOPEZ' are one entity."""
    return " ".join(_WORD.findall(fold(text)))


def shape_of(label: str, surface: str, lang: str = "", context: str = "") -> dict[str, Any]:
    """Describe the kind and form of a PHI string without keeping it (no PHI leaves this function):
    the surrogate engine's `describe` with the source language's data, so that the surrogate stage
    draws a country for a country, a day-month date for a day-month date, a woman's name for a
    woman (see deid_runtime/surrogates/kinds.py). `context`: the text just before the span, read for
    trigger words ("País:") and titles ("Sra."), never kept."""
    return describe(label, surface, load_locale(lang or None), context)


_WORDS = re.compile(r"\w+")


@functools.lru_cache(maxsize=None)
def _words_of(term: str) -> frozenset[str]:
    return frozenset(_WORDS.findall(term))


def placeholderize(record: Record, inventory: Inventory, where: str = "<records>") -> Record:
    """Return a copy of `record` whose PHI mentions are replaced by placeholder terms.

    Raises PlaceholderError (reason `invalid_spans` or `inventory_exhausted`) naming the record only.
    """
    problems = span_problems(record)
    if problems:
        raise PlaceholderError("invalid_spans", f"{where}: record {record.id!r}: " + "; ".join(problems))
    text = record.text
    spans = sorted(record.spans, key=lambda s: (s.start, s.end))
    # A term that already occurs in the text outside the PHI spans could not be told apart from the
    # placeholder after translation: it is not used in this record.
    outside = "\x00".join(text[a.end : b.start] for a, b in zip([Span(0, 0, "")] + spans, spans + [Span(len(text), len(text), "")]))
    # (a term can only occur if all its words do: the set test skips the regex for nearly every term,
    # which was one full-text search per inventory term per record)
    outside_words = set(_WORDS.findall(outside))
    blocked = {t for t in inventory.all_terms()
               if _words_of(t) <= outside_words and re.search(rf"(?<!\w){re.escape(t)}(?!\w)", outside)}
    # 1. group mentions into entities by (label, normalised surface)
    entity_of: dict[tuple[str, str], int] = {}
    entities: list[dict[str, Any]] = []
    mention_entity: list[int] = []
    for span in spans:
        surface = text[span.start : span.end]
        key = (span.label, normalize_surface(surface))
        if key not in entity_of:
            entity_of[key] = len(entities)
            context = text[max(0, span.start - SHAPE_CONTEXT_CHARS) : span.start]
            entities.append({"label": span.label, "key": key[1], "mentions": 0,
                             "shape": shape_of(span.label, surface, record.lang, context), "attrs": {}})
        ent = entities[entity_of[key]]
        ent["mentions"] += 1
        for k, v in span.attrs.items():
            if k in ("kind", "source_label", "role") and isinstance(v, (str, int, float, bool)):
                ent["attrs"].setdefault(k, v)
        mention_entity.append(entity_of[key])
    # 2. link partial PERSON mentions ("García") to the one longer PERSON entity that contains them
    persons = [i for i, e in enumerate(entities) if e["label"] == "PERSON"]
    for i in persons:
        words = entities[i]["key"].split()
        if not words:
            continue
        holders = [j for j in persons if j != i and set(words) < set(entities[j]["key"].split())]
        if len(holders) == 1:
            full = entities[holders[0]]["key"].split()
            entities[i]["link"] = holders[0]
            entities[i]["part"] = "given" if full[0] in words else "family"
    # 3. assign terms: each label's own list first, then the shared pool
    used: set[str] = set()
    next_index: Counter = Counter()
    for ent in entities:
        own = inventory.terms.get(ent["label"], [])
        pool = inventory.terms.get(POOL, [])
        term = None
        for candidate in own[next_index[ent["label"]] :] + pool:
            if candidate not in used and candidate not in blocked:
                term = candidate
                break
        if term is None:
            raise PlaceholderError(
                "inventory_exhausted",
                f"{where}: record {record.id!r}: more {ent['label']} entities than placeholder terms ({len(own)} + {len(pool)} shared)",
            )
        used.add(term)
        if term in own:
            next_index[ent["label"]] = own.index(term) + 1
        ent["term"] = term
    # 4. rebuild the text with the terms and exact spans
    terms = [entities[ent_index]["term"] for ent_index in mention_entity]
    new_text, placed = replace_spans(text, [(span.start, span.end) for span in spans], terms)
    new_spans = [Span(start, end, span.label, {"placeholder": term})
                 for (start, end), span, term in zip(placed, spans, terms)]
    mapping: dict[str, dict[str, Any]] = {}
    for index, ent in enumerate(entities):
        entry: dict[str, Any] = {"label": ent["label"], "entity": index, "mentions": ent["mentions"], "shape": ent["shape"]}
        if ent["attrs"]:
            entry["attrs"] = ent["attrs"]
        if "link" in ent:
            entry["link"] = entities[ent["link"]]["term"]
            entry["part"] = ent["part"]
        mapping[ent["term"]] = entry
    meta = dict(record.meta)
    meta["placeholders"] = {"source_lang": record.lang, "inventory": _display_path(inventory.path), "terms": mapping}
    meta[PLACEHOLDER_TEXT] = new_text
    return Record(record.id, record.lang, new_text, new_spans, meta)


def without_placeholder_text(meta: dict[str, Any]) -> dict[str, Any]:
    """A copy of a record's meta without the placeholder text: it is the record's text while the
    record is in the source language, and stale once a stage rewrites the text (translate, surrogate)."""
    return {k: v for k, v in meta.items() if k != PLACEHOLDER_TEXT}


def _display_path(path: Path | None) -> str:
    """Project files are recorded relative to the project root (records stay portable)."""
    if path is None:
        return ""
    try:
        return str(Path(path).resolve().relative_to(project_root()))
    except ValueError:
        return str(path)


# ----------------------------------------------------------------------------- recovery
def find_placeholders(text: str, terms: dict[str, dict[str, Any]]) -> tuple[list[Span], dict[str, str]]:
    """Locate every term of `terms` ({term: {"label", "mentions"}}) in `text`.

    Returns (spans, problems) where problems maps a term to one of: missing, duplicated, merged,
    altered. A record is usable only when problems is empty: each term occurs exactly as often as it
    did in the source, spelled exactly the same, as a whole word.
    """
    spans: list[Span] = []
    problems: dict[str, str] = {}
    folded_words = [(m.start(), m.end(), fold(m.group())) for m in _WORD.finditer(text)]
    folded_terms = {fold(t): t for t in terms}
    for term, info in terms.items():
        exact = [m for m in re.finditer(rf"(?<!\w){re.escape(term)}(?!\w)", text)]
        expected = int(info.get("mentions", 1))
        if len(exact) == expected:
            spans.extend(Span(m.start(), m.end(), info["label"], {"placeholder": term}) for m in exact)
            continue
        if len(exact) > expected:
            problems[term] = "duplicated"
            continue
        folded = fold(term)
        reason = "missing"
        for _, _, word in folded_words:
            if word == folded:
                reason = "altered"  # case changed or accents transliterated
            elif folded in word:
                others = [ft for ft in folded_terms if ft != folded and ft in word]
                reason = "merged" if others else "altered"  # glued to another term / inflected
            if reason != "missing":
                break
        problems[term] = reason
    spans.sort(key=lambda s: (s.start, s.end))
    for a, b in zip(spans, spans[1:]):
        if b.start < a.end:
            problems[str(b.attrs.get("placeholder"))] = "merged"
    return spans, problems


# ----------------------------------------------------------------------------- stage command
def placeholder_file(
    in_path: str | Path,
    out_path: str | Path,
    target: str,
    inventory_file: str | Path | None = None,
    report_path: str | Path | None = None,
) -> dict[str, Any]:
    """Placeholderise every record of in_path into out_path (atomic); return the report."""
    in_path, out_path = Path(in_path), Path(out_path)
    inventory = load_inventory(target, inventory_file)
    report: dict[str, Any] = {
        "stage": "placeholder",
        "input": str(in_path),
        "output": str(out_path),
        "target": target,
        "inventory": str(inventory.path),
        "calibrated_inventory": inventory.calibrated,
        "records_in": 0,
        "records_out": 0,
        "dropped": {},
        "dropped_ids": {},
        "entities": Counter(),
        "mentions": Counter(),
        "linked_partial_names": 0,
        "max_entities_per_record": 0,
    }
    def lines() -> Iterator[bytes]:
        for lineno, record in enumerate(read_records(in_path), start=1):
            report["records_in"] += 1
            try:
                result = placeholderize(record, inventory, where=f"{in_path}:{lineno}")
            except PlaceholderError as err:
                report["dropped"][err.reason] = report["dropped"].get(err.reason, 0) + 1
                report["dropped_ids"].setdefault(err.reason, []).append(record.id)
                log.warning("%s", err)
                continue
            terms = result.meta["placeholders"]["terms"]
            for info in terms.values():
                report["entities"][info["label"]] += 1
                report["mentions"][info["label"]] += info["mentions"]
                report["linked_partial_names"] += 1 if "link" in info else 0
            report["max_entities_per_record"] = max(report["max_entities_per_record"], len(terms))
            yield (srsly.json_dumps(result.to_dict()) + "\n").encode("utf-8")
            report["records_out"] += 1

    write_chunks_atomic(out_path, lines())
    report["entities"] = dict(report["entities"])
    report["mentions"] = dict(report["mentions"])
    if report_path:
        write_json_atomic(report_path, report)
    return report


def placeholder_command(
    in_path: Path = typer.Argument(..., help="Validated source records (JSONL)"),
    out_path: Path = typer.Argument(..., help="Records with placeholders (JSONL, written atomically)"),
    build: Path | None = typer.Option(None, "--build", help="The build decision written by `factory extract --build` (gives --lang)"),
    lang: str | None = typer.Option(None, "--lang", help="Language of the build: its inventory languages/<lang>/placeholders.yml "
                                    "is used"),
    report: Path | None = typer.Option(None, help="Write the stage report (JSON) here"),
    inventory: Path | None = typer.Option(None, help="Another placeholder inventory file"),
) -> None:
    """Replace every PHI entity by a persistent placeholder term (same entity -> same term)."""
    from .build_decision import read_build

    try:
        decision = read_build(build)
        if decision is not None and lang:
            raise typer.BadParameter("give --build or --lang, not both", param_hint="--build")
        if decision is not None:
            lang = decision.lang
        elif not lang:
            raise typer.BadParameter("give --build, or the language of the build (--lang)", param_hint="--lang")
        result = placeholder_file(in_path, out_path, lang, inventory, report)
    except (FileNotFoundError, RecordError, ValueError) as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(1) from None
    dropped = ", ".join(f"{k}={v}" for k, v in result["dropped"].items()) or "none"
    typer.echo(f"placeholder: {result['records_out']}/{result['records_in']} records written to {out_path} (dropped: {dropped})")


# ----------------------------------------------------------------------------- calibration
def survival_counts(term: str, text: str, expected: int) -> dict[str, Any]:
    """How a term came back in a translated text that held it `expected` times (once per sentence)."""
    exact = len(re.findall(rf"(?<!\w){re.escape(term)}(?!\w)", text))
    folded = fold(term)
    variants = sum(1 for m in _WORD.finditer(text) if folded in fold(m.group()) and m.group() != term)
    kept = min(exact, expected) - max(0, exact - expected)  # extra copies count against the term
    outcomes = Counter({"kept": max(0, kept)})
    if exact > expected:
        outcomes["duplicated"] = exact - expected
    outcomes["altered"] = min(variants, expected - min(exact, expected))
    outcomes["missing"] = expected - min(exact, expected) - outcomes["altered"]
    return {"survival": round(max(0, kept) / expected, 4) if expected else 0.0, "outcomes": {k: v for k, v in outcomes.items() if v}}


def calibrate(
    source: str,
    target: str,
    out_path: str | Path,
    translate_fn=None,
    packages_dir: str | Path | None = None,
    min_survival: float = 1.0,
    argos_dir: str | Path | None = None,
    beam_size: int | None = None,
) -> dict[str, Any]:
    """Run every candidate term through the route source -> target inside sample sentences; keep the
    terms that survive unchanged (case, inflection, transliteration) in at least `min_survival` of them,
    and write the chosen inventory (with each term's survival rate) to out_path."""
    out_path = Path(out_path)
    target_file = out_path if out_path.exists() else inventory_path(target)
    raw = yaml.safe_load(target_file.read_text(encoding="utf-8")) or {}
    candidates: dict[str, list[str]] = raw.get("candidates") or {}
    if not candidates:
        raise ValueError(f"{target_file}: no `candidates` to calibrate")
    source_raw = yaml.safe_load(inventory_path(source).read_text(encoding="utf-8")) or {}
    sentences = source_raw.get("calibration_sentences") or []
    if not sentences:
        raise ValueError(f"{inventory_path(source)}: no `calibration_sentences` for source language {source}")
    route: list[str] = [source, target]
    if translate_fn is None:
        from .argos_env import ArgosRoute

        argos = ArgosRoute.open(source, target, packages_dir=packages_dir, argos_dir=argos_dir, beam_size=beam_size)
        route = argos.route
        translate_fn = argos.translate_text
    chosen: dict[str, list[dict[str, Any]]] = {}
    rejected: dict[str, dict[str, Any]] = {}
    for label, terms in candidates.items():
        chosen[label] = []
        for term in terms:
            # One paragraph per term: Argos splits it into its sentences and translates them as one batch.
            output = translate_fn(" ".join(s.replace("{}", term) for s in sentences))
            result = survival_counts(term, output, len(sentences))
            if result["survival"] >= min_survival:
                chosen[label].append({"term": term, "survival": result["survival"]})
            else:
                rejected[term] = result
    header = [line for line in target_file.read_text(encoding="utf-8").splitlines() if line.startswith("#")]
    from datetime import datetime, timezone

    data = {k: v for k, v in raw.items() if k not in ("terms", "calibration", "rejected")}
    data["calibration"] = {
        "route": route,
        "sentences": len(sentences),
        "min_survival": min_survival,
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    data["terms"] = chosen
    data["rejected"] = rejected
    text = "\n".join(header) + "\n" + yaml.safe_dump(data, allow_unicode=True, sort_keys=False, width=120)
    write_text_atomic(out_path, text)
    kept = sum(len(v) for v in chosen.values())
    return {"route": route, "kept": kept, "rejected": len(rejected), "terms": chosen, "rejected_terms": rejected}


def calibrate_command(
    source_lang: str = typer.Option("es", "--source-lang", help="Language of the source corpus (its calibration_sentences are used)"),
    lang: str = typer.Option("fr", "--lang", help="Language of the build: the translation's target"),
    out: Path | None = typer.Option(None, help="Inventory to write (default languages/<lang>/placeholders.yml)"),
    packages_dir: Path | None = typer.Option(None, help="Folder of .argosmodel files to install first"),
    min_survival: float = typer.Option(1.0, help="Keep terms that came back unchanged in at least this share of sentences"),
    argos_dir: Path | None = typer.Option(None, help="Where Argos installs packages (ARGOS_PACKAGES_DIR)"),
    beam_size: int | None = typer.Option(None, help="Beam size (ARGOS_BEAM_SIZE)"),
) -> None:
    """Measure which placeholder candidates survive the installed Argos route and write the inventory."""

    out = out or inventory_path(lang)
    try:
        result = calibrate(source_lang, lang, out, packages_dir=packages_dir, min_survival=min_survival, argos_dir=argos_dir, beam_size=beam_size)
    except (RuntimeError, ValueError, OSError, yaml.YAMLError) as err:
        # route missing (RouteMissing), an engine error, a bad or missing inventory (ValueError, OSError,
        # YAMLError): one clear line, no traceback. Anything else is a bug and keeps its traceback.
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(1) from None
    typer.echo(
        f"calibrate {' -> '.join(result['route'])}: kept {result['kept']} terms, rejected {result['rejected']}; wrote {out}"
    )
