"""Language detection: keep only records in the source language (langdetect, fixed seed).

langdetect samples n-grams at random, so the seed is fixed before every record: the same text always
gets the same answer, whatever came before it. Detection runs on the text with the PHI spans cut out,
so that names and places (often of another language) do not sway it. Each kept or dropped record
gets `meta.lang_detected` and `meta.lang_prob`; the report counts what was dropped and why (ids only).

Each record is checked against its own language: the source's records against the source language,
and the records a translation build takes in its own language (the target's synthetic corpus)
against that one. The build decision (`--build corpus/build.json`, build_decision.py) gives both
languages and whether the build is native (every record kept, detection only reports).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, Iterable, Iterator

import srsly
import typer

from .build_decision import languages_of, read_build
from .records import Record, read_records, write_records
from .outputs import write_text_atomic

DEFAULT_SEED = 0
# langdetect has too little evidence below a handful of letters: such records are "undetermined".
MIN_LETTERS = 20


def phi_free_text(record: Record) -> str:
    """The record's text with every PHI span replaced by one space (offsets do not matter here)."""
    parts, pos = [], 0
    for s in sorted(record.spans, key=lambda s: s.start):
        if s.start >= pos:
            parts.append(record.text[pos : s.start])
            parts.append(" ")
            pos = s.end
        else:
            pos = max(pos, s.end)
    parts.append(record.text[pos:])
    return "".join(parts)


def detect_language(text: str, seed: int = DEFAULT_SEED) -> tuple[str, float]:
    """(language code, probability) of `text`; ("und", 0.0) when there is too little text to tell."""
    from langdetect import DetectorFactory, detect_langs
    from langdetect.lang_detect_exception import LangDetectException

    if sum(ch.isalpha() for ch in text) < MIN_LETTERS:
        return "und", 0.0
    DetectorFactory.seed = seed
    try:
        best = detect_langs(text)[0]
    except LangDetectException:
        return "und", 0.0
    return best.lang, round(float(best.prob), 4)


class DetectReport:
    def __init__(self, lang: str, seed: int):
        self.lang, self.seed = lang, seed
        self.read = 0
        self.kept = 0
        self.dropped: Counter = Counter()  # detected language -> records dropped
        self.dropped_ids: list[dict[str, Any]] = []
        self.keep_all = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "source_lang": self.lang,
            "seed": self.seed,
            "records_read": self.read,
            "records_kept": self.kept,
            "records_dropped": 0 if self.keep_all else sum(self.dropped.values()),
            "records_detected_other": sum(self.dropped.values()),
            "dropped_by_language": dict(sorted(self.dropped.items())),
            "dropped": self.dropped_ids,
            # keep_all: annotated notes of the target language are all kept; the counts above say
            # what detection would have dropped
            "keep_all": self.keep_all,
        }


def filter_language(records: Iterable[Record], source_lang: str, seed: int = DEFAULT_SEED, min_prob: float = 0.0,
                    report: DetectReport | None = None, keep_all: bool = False, lang: str | None = None) -> Iterator[Record]:
    """Yield the records detected as `source_lang` (with probability >= min_prob); count the others in `report`.

    lang: the build's language: a record in that language (the target's own synthetic notes mixed
    into a translation build) is checked against it instead.
    keep_all: yield every record and only count (native path: the user's own annotated notes are
    never dropped by a detector that mistakes a short note for another language)."""
    report = report if report is not None else DetectReport(source_lang, seed)
    report.keep_all = keep_all
    for record in records:
        report.read += 1
        detected, prob = detect_language(phi_free_text(record), seed)
        record.meta["lang_detected"] = detected
        record.meta["lang_prob"] = prob
        expected = lang if lang and record.lang == lang else source_lang
        if detected == expected and prob >= min_prob:
            report.kept += 1
            yield record
        else:
            key = detected if detected != expected else f"{expected} (prob<{min_prob})"
            report.dropped[key] += 1
            report.dropped_ids.append({"id": record.id, "detected": detected, "prob": prob})
            if keep_all:
                report.kept += 1
                yield record


def detect(inp: str | Path, out: str | Path, source_lang: str, seed: int = DEFAULT_SEED, min_prob: float = 0.0,
           report_path: str | Path | None = None, keep_all: bool = False, lang: str | None = None) -> dict[str, Any]:
    """Read records, keep those in their language (all with keep_all), write them atomically;
    return (and write) the report. See filter_language."""
    report = DetectReport(source_lang, seed)
    write_records(out, filter_language(read_records(inp), source_lang, seed, min_prob, report, keep_all, lang))
    rep = report.to_dict()
    if report_path:
        write_text_atomic(report_path, srsly.json_dumps(rep, indent=2))
    return rep


def detect_command(
    inp: Path = typer.Argument(..., help="Input JSONL of records"),
    out: Path = typer.Argument(..., help="Output JSONL: the records in their language"),
    build: Path | None = typer.Option(None, "--build", help="The build decision written by `factory extract --build` "
                                      "(gives --source-lang, --lang and --native)"),
    source_lang: str | None = typer.Option(None, "--source-lang", help="Language of the source records to keep (default: --lang, else es)"),
    lang: str | None = typer.Option(None, "--lang", help="Language of the build: its own records are checked against it (default: --source-lang)"),
    native: bool = typer.Option(False, "--native", help="Keep every record, only count (the native path: your annotated notes)"),
    seed: int = typer.Option(DEFAULT_SEED, "--seed", help="langdetect seed"),
    min_prob: float = typer.Option(0.0, "--min-prob", help="Also drop records detected as their language with a lower probability"),
    report: Path | None = typer.Option(None, "--report", help="Write the report (JSON) here"),
) -> None:
    """Detect the language of each record (PHI removed) and drop those not in their language, with counts."""
    decision = read_build(build)
    if decision is not None:
        if source_lang or lang or native:
            raise typer.BadParameter("give --build or --source-lang/--lang/--native, not both", param_hint="--build")
        source_lang, lang, native = decision.source_lang, decision.lang, decision.keeps_all
    source_lang, lang = languages_of(source_lang, lang)
    rep = detect(inp, out, source_lang, seed, min_prob, report, native, lang)
    verb = "would drop (kept: native notes)" if native else "dropped"
    languages = source_lang if not lang or lang == source_lang else f"{source_lang} (source), {lang} (build)"
    typer.echo(f"language {languages}: kept {rep['records_kept']} of {rep['records_read']}; {verb} {rep['dropped_by_language']}")
