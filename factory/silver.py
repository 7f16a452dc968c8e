"""Silver standard: pre-annotate narratives with an existing annotator, then filter its mistakes.

Annotators: `regex:<lc>` (the locale regex pack alone, regex_packs/<lc>/) or the name/path of a
pipeline loadable with spacy.load (`deid_es`). Every span added carries `annotator` (the name given).
Existing spans of a record are kept (they win over overlapping new ones, which are counted).

Filters, configured per locale in languages/<lc>/silver.yml (data, not code):
  street_filter   drop a PERSON span with a street word ("calle", "avda.", "rue", "straße") within
                  `window` characters before or after it
  eponym_filter   drop a PERSON span that is an eponymous disease name ("Parkinson", "Crohn")
  thresholds      corpus statistics: length within mean ± k·std, at most `max_names` names
                  (see stats.apply_thresholds)
By default (`apply_to: silver`) the span filters judge only spans with an annotator other than
"gold", so gold spans of an annotated corpus are never removed. Each filter reports what it removed
(counts and record ids with offsets, never text).

In a build, `factory filter --build corpus/build.json` takes from the build decision (build_decision.py)
the source language (whose silver.yml it reads), whether the build is native (the thresholds only
report) and whether the records in the build's language were written by the synthetic corpus (the
thresholds pass them: they exist to make the translation of a foreign corpus safer).
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any, Iterable, Iterator

import srsly
import typer
from deid_runtime.text import fold

from .build_decision import read_build
from .locale import Locale
from .records import Record, Span, read_records, read_yaml_mapping, trim_span, write_records
from .outputs import write_text_atomic
from .stats import apply_thresholds, corpus_stats


class SilverError(ValueError):
    """A bad silver.yml or annotator; the message names the file or annotator."""


# ----------------------------------------------------------------------------- config
def load_silver_config(locale: str | Path) -> dict[str, Any]:
    """languages/<locale>/silver.yml (or a path to such a file), checked."""
    path = Path(locale)
    if path.suffix not in (".yml", ".yaml"):
        path = Locale.of(str(locale)).silver_file
    if not path.exists():
        raise SilverError(f"{path}: no silver filter configuration for locale {locale!r}")
    cfg = read_yaml_mapping(path, SilverError)
    for key in ("street_filter", "eponym_filter", "thresholds"):
        if not isinstance(cfg.get(key), dict):
            raise SilverError(f"{path}: missing section {key!r}")
    if not cfg["street_filter"].get("suffixes"):
        raise SilverError(f"{path}: street_filter.suffixes is empty")
    if not cfg["eponym_filter"].get("eponyms"):
        raise SilverError(f"{path}: eponym_filter.eponyms is empty")
    if cfg.get("apply_to", "silver") not in ("silver", "all"):
        raise SilverError(f"{path}: apply_to must be 'silver' or 'all'")
    cfg["_path"] = str(path)
    return cfg


def _fold(text: str) -> str:
    """Case- and accent-insensitive form: "Sjögren's" -> "sjogren"; hyphens count as spaces."""
    text = fold(text)
    text = re.sub(r"['’]s$", "", text.strip())
    return " ".join(text.replace("-", " ").split())


# ----------------------------------------------------------------------------- filters
class StreetFilter:
    name = "street_filter"

    def __init__(self, cfg: dict[str, Any]):
        self.labels = set(cfg.get("labels", ["PERSON"]))
        self.window = int(cfg.get("window", 20))
        words = sorted({w.lower() for w in cfg["suffixes"]}, key=len, reverse=True)
        # Whole words: no letter/digit just before or after ("c/" and "avda." end in punctuation).
        # lower(), not casefold(): casefold turns "straße" into "strasse" and the ß would never match.
        patterns = [rf"(?<!\w)(?:{'|'.join(re.escape(w) for w in words)})(?!\w)"]
        endings = sorted({w.lower() for w in cfg.get("word_endings") or []}, key=len, reverse=True)
        if endings:  # German compounds: "Goethestraße" ends with a street word
            patterns.append(rf"\w(?:{'|'.join(re.escape(w) for w in endings)})(?!\w)")
        self.regex = re.compile("|".join(patterns), re.IGNORECASE)

    def drops(self, text: str, span: Span) -> bool:
        if span.label not in self.labels:
            return False
        before = text[max(0, span.start - self.window) : span.start]
        after = text[span.end : span.end + self.window]
        return bool(self.regex.search(before) or self.regex.search(after))


class EponymFilter:
    name = "eponym_filter"

    def __init__(self, cfg: dict[str, Any]):
        self.labels = set(cfg.get("labels", ["PERSON"]))
        self.eponyms = {_fold(e) for e in cfg["eponyms"]}

    def drops(self, text: str, span: Span) -> bool:
        return span.label in self.labels and _fold(text[span.start : span.end]) in self.eponyms


def is_silver(span: Span) -> bool:
    return span.attrs.get("annotator") not in (None, "gold")


def apply_span_filters(records: Iterable[Record], cfg: dict[str, Any], apply_to: str | None = None,
                       report: dict[str, Any] | None = None) -> Iterator[Record]:
    """Remove the spans the street and eponym filters reject; count per filter in `report`."""
    apply_to = apply_to or cfg.get("apply_to", "silver")
    filters = [StreetFilter(cfg["street_filter"]), EponymFilter(cfg["eponym_filter"])]
    report = report if report is not None else {}
    for f in filters:
        report.setdefault(f.name, {"spans_removed": 0, "records_affected": 0, "removed": []})
    report["apply_to"] = apply_to
    for record in records:
        kept: list[Span] = []
        hit: Counter = Counter()
        for span in record.spans:
            judged = apply_to == "all" or is_silver(span)
            culprit = next((f for f in filters if judged and f.drops(record.text, span)), None)
            if culprit is None:
                kept.append(span)
                continue
            hit[culprit.name] += 1
            report[culprit.name]["removed"].append({"id": record.id, "start": span.start, "end": span.end, "label": span.label})
        for name, n in hit.items():
            report[name]["spans_removed"] += n
            report[name]["records_affected"] += 1
        record.spans = kept
        yield record


def filter_records(inp: str | Path, out: str | Path, source_lang: str, k_std: float | None = None, max_names: int | None = None,
                   min_spans: int | None = None, apply_to: str | None = None,
                   report_path: str | Path | None = None, keep_all: bool = False, lang: str | None = None,
                   as_written: bool = False) -> dict[str, Any]:
    """Silver span filters (languages/<source_lang>/silver.yml), then the statistic thresholds
    (defaults from silver.yml); write atomically.

    keep_all (the native path): the thresholds only report which records they would remove. They
    exist to make machine translation of a foreign corpus safer (the thesis' mean +- 1 std, at most
    10 names), and must not thin out the user's own annotated notes.
    as_written: the records in `lang` (the build's language) were written by the synthetic corpus:
    nothing is translated or surrogate-replaced there, so the thresholds pass them."""
    cfg = load_silver_config(source_lang)
    th = cfg["thresholds"]
    k_std = float(th.get("k_std", 2.0)) if k_std is None else k_std
    max_names = th.get("max_names", 10) if max_names is None else max_names
    min_spans = int(th.get("min_spans", 0)) if min_spans is None else min_spans
    names_label = th.get("names_label", "PERSON")
    report: dict[str, Any] = {"source_lang": source_lang, "config": cfg["_path"]}
    filtered = list(apply_span_filters(read_records(inp), cfg, apply_to, report))
    before = corpus_stats(filtered, names_label)["summary"]
    def passes(record: Record) -> bool:
        return as_written and lang is not None and record.lang == lang

    judged = [r for r in filtered if not passes(r)]
    kept, th_report = apply_thresholds(judged, k_std if k_std >= 0 else None, max_names if max_names >= 0 else None,
                                       names_label, min_spans)
    th_report["report_only"] = keep_all
    th_report["as_written_kept"] = len(filtered) - len(judged)
    if keep_all:
        kept = judged
    kept_ids = {id(r) for r in kept}
    kept = [r for r in filtered if id(r) in kept_ids or passes(r)]  # input order
    write_records(out, kept)
    report["thresholds"] = th_report
    report["records_read"] = len(filtered)
    report["records_kept"] = len(kept)
    report["stats_before_thresholds"] = before
    report["stats_after"] = corpus_stats(kept, names_label)["summary"]
    if report_path:
        write_text_atomic(report_path, srsly.json_dumps(report, indent=2))
    return report


# ----------------------------------------------------------------------------- annotators
def load_annotator(name: str):
    """A callable text -> [(start, end, label)] for `regex:<lc>` or a spaCy pipeline name/path."""
    if name.startswith("regex:"):
        from deid_runtime.regex_pack import RegexPack

        locale = name.split(":", 1)[1]
        pack = RegexPack.from_dir(Locale.of(locale).pack_dir)
        return lambda text: [(m.start, m.end, m.label) for m in pack.find(text)]
    import spacy

    try:
        nlp = spacy.load(name)
    except OSError as err:
        raise SilverError(f"annotator {name!r}: not an installed pipeline or a pipeline folder ({err.__class__.__name__})") from None
    return lambda text: [(e.start_char, e.end_char, e.label_) for e in nlp(text).ents]


def annotate(records: Iterable[Record], annotator: str, report: dict[str, Any] | None = None, find=None) -> Iterator[Record]:
    """Add the annotator's spans to each record (span attr `annotator`); existing spans win overlaps."""
    from .labels import CANONICAL_LABELS

    find = find or load_annotator(annotator)
    report = report if report is not None else {}
    report.update({"annotator": annotator, "records": 0, "spans_added": 0, "spans_overlapping_existing": 0,
                   "spans_not_canonical": 0, "labels": Counter()})
    for record in records:
        report["records"] += 1
        taken = [(s.start, s.end) for s in record.spans]
        for start, end, label in sorted(find(record.text)):
            start, end = trim_span(record.text, start, end)
            if start >= end:
                continue
            if label not in CANONICAL_LABELS:
                report["spans_not_canonical"] += 1
                continue
            if any(start < e and s < end for s, e in taken):
                report["spans_overlapping_existing"] += 1
                continue
            record.spans.append(Span(start, end, label, {"annotator": annotator}))
            taken.append((start, end))
            report["spans_added"] += 1
            report["labels"][label] += 1
        record.spans.sort(key=lambda s: (s.start, s.end))
        yield record


def silver(inp: str | Path, out: str | Path, annotator: str, lang: str | None = None,
           report_path: str | Path | None = None) -> dict[str, Any]:
    """Annotate with `annotator`, then (when `lang` is given) run the silver span filters of languages/<lang>/silver.yml."""
    report: dict[str, Any] = {"annotation": {}}
    records: Iterable[Record] = annotate(read_records(inp), annotator, report["annotation"])
    if lang:
        report["filters"] = {}
        records = apply_span_filters(records, load_silver_config(lang), "silver", report["filters"])
    write_records(out, records)
    report["annotation"]["labels"] = dict(sorted(report["annotation"]["labels"].items()))
    if report_path:
        write_text_atomic(report_path, srsly.json_dumps(report, indent=2))
    return report


# ----------------------------------------------------------------------------- commands
def silver_command(
    inp: Path = typer.Argument(..., help="Input JSONL of records (annotated or not)"),
    out: Path = typer.Argument(..., help="Output JSONL with silver spans"),
    annotator: str = typer.Option(..., "--annotator", help="regex:<lc> (regex pack alone) or a spaCy pipeline (deid_es)"),
    lang: str | None = typer.Option(None, "--lang", help="Language of the records: also run the silver span filters of languages/<lang>/silver.yml"),
    report: Path | None = typer.Option(None, "--report", help="Write the report (JSON) here"),
) -> None:
    """Pre-annotate records with an existing annotator to make a silver standard."""
    rep = silver(inp, out, annotator, lang, report)
    a = rep["annotation"]
    typer.echo(f"{annotator}: {a['spans_added']} spans added to {a['records']} records {a['labels']}")


def filter_command(
    inp: Path = typer.Argument(..., help="Input JSONL of records"),
    out: Path = typer.Argument(..., help="Output JSONL of the records kept"),
    build: Path | None = typer.Option(None, "--build", help="The build decision written by `factory extract --build` "
                                      "(gives --source-lang, --lang, --native and --as-written)"),
    source_lang: str | None = typer.Option(None, "--source-lang", help="Language of the source records: its languages/<lc>/silver.yml "
                                           "configures the filters (default: --lang)"),
    lang: str | None = typer.Option(None, "--lang", help="Language of the build (default: --source-lang)"),
    native: bool = typer.Option(False, "--native", help="The thresholds only report (the native path: your annotated notes are all kept)"),
    as_written: bool = typer.Option(False, "--as-written", help="The records in --lang were written by the synthetic corpus: "
                                    "the thresholds pass them"),
    k_std: float | None = typer.Option(None, "--k-std", help="Keep lengths within mean +- k std (default from silver.yml; <0: no limit)"),
    max_names: int | None = typer.Option(None, "--max-names", help="Keep records with at most this many names (default from silver.yml; <0: no limit)"),
    min_spans: int | None = typer.Option(None, "--min-spans", help="Keep records with at least this many spans (default from silver.yml)"),
    apply_to: str | None = typer.Option(None, "--apply-to", help="Spans the silver filters judge: silver (default) or all"),
    report: Path | None = typer.Option(None, "--report", help="Write the report (JSON) here"),
) -> None:
    """Silver filters (street suffixes, eponymous diseases) and corpus-statistic thresholds."""
    decision = read_build(build)
    if decision is not None:
        if source_lang or lang or native or as_written:
            raise typer.BadParameter("give --build or --source-lang/--lang/--native/--as-written, not both", param_hint="--build")
        source_lang, lang, native, as_written = decision.source_lang, decision.lang, decision.keeps_all, decision.as_written
    source_lang = source_lang or lang
    if not source_lang:
        raise typer.BadParameter("give --build, or the language of the records (--source-lang or --lang)", param_hint="--source-lang")
    rep = filter_records(inp, out, source_lang, k_std, max_names, min_spans, apply_to, report, native, lang or source_lang, as_written)
    th = rep["thresholds"]
    verb = "would remove (report only: native notes)" if native else "removed"
    typer.echo(f"street filter removed {rep['street_filter']['spans_removed']} spans, eponym filter "
               f"{rep['eponym_filter']['spans_removed']}; thresholds {verb} {th['removed_length']} (length), "
               f"{th['removed_max_names']} (names), {th['removed_min_spans']} (spans); kept {rep['records_kept']} of {rep['records_read']}"
               + (f" ({th['as_written_kept']} synthetic {lang} records passed as written)" if th["as_written_kept"] else ""))
