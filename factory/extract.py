"""Stage 1, extract: any supported corpus (or the embedded synthetic one) -> validated JSONL records.

    factory extract ../shared/corpora/meddocan/train --format brat --label-map meddocan --lang es \
        --out data/extract.jsonl --report data/extract.report.json
    factory extract - --format synth --n 1000 --seed 13 --lang es --out data/extract.jsonl

Output records carry canonical labels only and pass `records.validate_record`; the report holds the
reader's counts (spans dropped per label, trimmed, skipped records with reasons by id) and the
corpus statistics summary (stats.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Iterator

import srsly
import typer

from .readers import FORMATS, ReadReport, check_language, read_corpus
from .records import Record, RecordError, validate_record, write_records, write_text_atomic
from .stats import format_summary, record_stats, summarize

# Formats whose corpora use their own labels: the label map used when none is given.
DEFAULT_LABEL_MAPS = {"i2b2": "i2b2"}


def extract(inp: str | Path | None, fmt: str, lang: str, out: str | Path, report_path: str | Path | None = None,
            label_map: str | None = None, n: int = 1000, seed: int = 13, on_error: str = "raise") -> dict[str, Any]:
    """Read (or generate) a corpus, validate every record, write them atomically; return the report."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r} (one of {', '.join(FORMATS)})")
    check_language(lang)  # before anything is read or written
    report: dict[str, Any] = {"format": fmt, "lang": lang, "input": None if fmt == "synth" else str(inp), "out": str(out)}
    per_record: list[dict[str, Any]] = []
    if fmt == "synth":
        from .synth import SynthData, corpus_report, generate_records

        data = SynthData.load(lang)
        records: Iterable[Record] = list(generate_records(n, seed, lang, data))
        report.update({"n": n, "seed": seed, "synth": corpus_report(list(records), data, lang)})
    else:
        if inp is None or str(inp) == "-":
            raise ValueError(f"format {fmt!r} needs an INPUT path")
        reader_report = ReadReport()
        label_map = label_map or DEFAULT_LABEL_MAPS.get(fmt)
        report["label_map"] = label_map
        records = read_corpus(inp, fmt, label_map, lang, on_error=on_error, report=reader_report)
        report["reader"] = reader_report

    def checked(items: Iterable[Record]) -> Iterator[Record]:
        for record in items:
            record.lang = lang
            validate_record(record, where=f"{inp if fmt != 'synth' else 'synthetic corpus'}")
            per_record.append(record_stats(record))
            yield record

    report["records_written"] = write_records(out, checked(records))
    if "reader" in report:
        report["reader"] = report["reader"].to_dict()
    report["stats"] = summarize(per_record)
    if report_path:
        write_text_atomic(report_path, srsly.json_dumps(report, indent=2))
    return report


def resolve_native(native: str, source_format: str, source_lang: str, target: str) -> bool:
    """Is the source the user's own annotated notes in the target language (the native path)?

    Native notes are trained as annotated: no record is dropped by language detection or corpus
    thresholds, and surrogate copies are only an optional, measured augmentation. "auto": native
    when the source is annotated (not the embedded synthetic corpus) and already in the target."""
    value = str(native).strip().lower()
    if value in ("yes", "true", "1"):
        return True
    if value in ("no", "false", "0"):
        return False
    if value != "auto":
        raise ValueError(f"--native must be auto, yes or no, not {native!r}")
    return source_format != "synth" and source_lang == target


def extract_command(
    inp: str = typer.Argument("-", metavar="INPUT", help="Corpus file or folder ('-' for --format synth)"),
    fmt: str = typer.Option(..., "--format", help=f"One of: {', '.join(FORMATS)}, or auto (from the path)"),
    lang: str = typer.Option("es", "--lang", help="Language of the corpus"),
    out: Path = typer.Option(..., "--out", help="Output JSONL of validated records"),
    report: Path | None = typer.Option(None, "--report", help="Write the extraction report (JSON) here"),
    label_map: str | None = typer.Option(None, "--label-map", help="Label map name in corpora/label_maps/ or a YAML path"),
    n: int = typer.Option(1000, "--n", help="synth: number of records"),
    seed: int = typer.Option(13, "--seed", help="synth: random seed"),
    on_error: str = typer.Option("raise", "--on-error", help="raise: stop at the first bad record; skip: skip it and report its id"),
    optional: bool = typer.Option(False, "--optional", help="INPUT '-' is allowed: write an empty file (an optional corpus such as a dev set)"),
) -> None:
    """Extract a corpus (brat, jsonl, docbin, i2b2 or the embedded synthetic corpus) into validated JSONL."""
    if optional and inp == "-":
        write_records(out, [])
        if report:
            write_text_atomic(report, srsly.json_dumps({"format": None, "input": None, "records_written": 0}, indent=2))
        typer.echo(f"no corpus given: wrote an empty {out}")
        return
    try:
        if fmt == "auto":
            from .readers import guess_format

            fmt = guess_format(inp)
        rep = extract(None if inp == "-" else inp, fmt, lang, out, report, label_map, n, seed, on_error)
    except ValueError as err:
        if isinstance(err, RecordError):
            raise  # a bad record: the factory command prints it (file and record, no text)
        typer.echo(f"error: {err}", err=True)  # a bad option (format, language, on_error)
        raise typer.Exit(1)
    reader = rep.get("reader", {})
    for skipped in reader.get("skipped", []):
        # the reasons name file, record and offsets only: safe to show
        typer.echo(f"skipped: {skipped['reason']}", err=True)
    typer.echo(f"wrote {rep['records_written']} records to {out}"
               + (f" (skipped {reader['records_skipped']}, spans dropped by label {reader['spans_dropped_by_label']})" if reader else ""))
    typer.echo(format_summary(rep["stats"], title=f"{fmt}:{inp}"))
