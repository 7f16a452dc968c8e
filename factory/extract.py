"""Stage 1, extract: any supported corpus (the embedded synthetic one included) -> validated JSONL records.

    factory extract ../shared/corpora/meddocan/train --format brat --label-map meddocan --lang es \
        --out data/extract.jsonl --report data/extract.report.json
    factory extract - --format synth --n 1000 --seed 13 --lang es --out data/extract.jsonl

Every format goes through `readers.read_corpus`. Output records carry canonical labels only and pass
`records.validate_record`; the report holds the reader's counts (spans dropped per label, trimmed,
skipped records with reasons by id), the corpus statistics summary (stats.py) and, for a generated
corpus, its own summary under the format's name ("synth": templates used, document types).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Iterator

import srsly
import typer

from .readers import FORMATS, GENERATED_FORMATS, ReadReport, check_language, read_corpus
from .records import Record, RecordError, validate_record, write_records, write_text_atomic
from .stats import format_summary, record_stats, summarize
from .synth import read_synth  # noqa: F401  (registers the "synth" format with the readers)

# Formats whose corpora use their own labels: the label map used when none is given.
DEFAULT_LABEL_MAPS = {"i2b2": "i2b2"}


def extract(inp: str | Path | None, fmt: str, lang: str, out: str | Path, report_path: str | Path | None = None,
            label_map: str | None = None, n: int = 1000, seed: int = 13, on_error: str = "raise",
            target: str | None = None, native_share: float = 0.0) -> dict[str, Any]:
    """Read (or generate) a corpus, validate every record, write them atomically; return the report.

    `n` and `seed` apply to a generated format (synth), whose INPUT is optional (its data folder).

    target, native_share: a build for `target` (another language than the source) also takes the
    target's own synthetic corpus (corpora/synth/<target>/) when there is one, so the model sees
    prose of its language and not only translations. `native_share` is its share of all records
    (0: none; 1: the native corpus alone, `n` records, the source is not used); those records
    carry lang=target and are passed through translation untouched."""
    if not 0.0 <= native_share <= 1.0:
        raise ValueError(f"--native-share must be between 0 and 1, not {native_share}")
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r} (one of {', '.join(FORMATS)})")
    check_language(lang)  # before anything is read or written
    generated = fmt in GENERATED_FORMATS
    if not generated and (inp is None or str(inp) == "-"):
        raise ValueError(f"format {fmt!r} needs an INPUT path")
    report: dict[str, Any] = {"format": fmt, "lang": lang, "input": None if inp is None else str(inp), "out": str(out)}
    if generated:
        report.update({"n": n, "seed": seed})
    label_map = None if generated else label_map or DEFAULT_LABEL_MAPS.get(fmt)
    report["label_map"] = label_map
    reader_report = ReadReport()
    records = read_corpus(inp, fmt, label_map, lang, on_error=on_error, report=reader_report, n=n, seed=seed)
    per_record: list[dict[str, Any]] = []

    def checked(items: Iterable[Record]) -> Iterator[Record]:
        for record in items:
            record.lang = lang
            validate_record(record, where=str(inp if inp is not None else f"{fmt} corpus"))
            per_record.append(record_stats(record))
            yield record

    chosen = list(checked(records))
    if generated and target == lang:
        # Written by the target language's own synthetic corpus: nothing to translate, so the
        # corpus thresholds (which protect machine translation) pass it whole, and the surrogate
        # stage keeps the values the generator wrote (surrogates.surrogate_file).
        for record in chosen:
            record.meta["native_synth"] = True
    mix = _native_synthetic(lang, target, native_share, len(chosen), n, seed)
    if mix is not None:
        report["native_synth"] = mix["report"]
        if native_share >= 1.0:
            chosen = []
        chosen += mix["records"]
    report["records_written"] = write_records(out, chosen)
    report["reader"] = reader_report.to_dict()
    if reader_report.corpus is not None:
        report[fmt] = reader_report.corpus.to_dict()
    report["stats"] = summarize(per_record)
    if report_path:
        write_text_atomic(report_path, srsly.json_dumps(report, indent=2))
    return report


def _native_synthetic(source_lang: str, target: str | None, share: float, n_source: int, n: int, seed: int) -> dict | None:
    """The target's own synthetic records for a translation build (see extract), with their report."""
    from .locale import Locale

    if not target or target == source_lang or share <= 0:
        return None
    folder = Locale.of(target).synth_dir
    if not folder.is_dir():
        return {"records": [], "report": {"share": share, "records": 0, "reason": f"no native synthetic corpus (corpora/synth/{target}/)"}}
    count = n if share >= 1.0 else round(n_source * share / (1.0 - share))
    records = []
    for record in read_corpus(None, "synth", None, target, n=count, seed=seed + 1):
        record.lang = target
        record.meta["native_synth"] = True
        validate_record(record, where=f"corpora/synth/{target}")
        records.append(record)
    return {"records": records, "report": {"share": share, "records": len(records), "source_records": 0 if share >= 1.0 else n_source}}


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
    inp: str = typer.Argument("-", metavar="INPUT", help="Corpus file or folder (synth: its data folder, '-' for corpora/synth/<lang>)"),
    fmt: str = typer.Option(..., "--format", help=f"One of: {', '.join(FORMATS)}, or auto (from the path)"),
    lang: str = typer.Option("es", "--lang", help="Language of the corpus"),
    out: Path = typer.Option(..., "--out", help="Output JSONL of validated records"),
    report: Path | None = typer.Option(None, "--report", help="Write the extraction report (JSON) here"),
    label_map: str | None = typer.Option(None, "--label-map", help="Label map name in corpora/label_maps/ or a YAML path"),
    n: int = typer.Option(1000, "--n", help="synth: number of records"),
    seed: int = typer.Option(13, "--seed", help="synth: random seed"),
    on_error: str = typer.Option("raise", "--on-error", help="raise: stop at the first bad record; skip: skip it and report its id"),
    optional: bool = typer.Option(False, "--optional", help="INPUT '-' is allowed: write an empty file (an optional corpus such as a dev set)"),
    target: str = typer.Option("", "--target", help="Language of the build (with --native-share)"),
    native_share: float = typer.Option(0.0, "--native-share", help="Share of records drawn from the target's own synthetic corpus (corpora/synth/<target>/), 0-1"),
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
        rep = extract(None if inp == "-" else inp, fmt, lang, out, report, label_map, n, seed, on_error,
                      target or None, native_share)
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
    if "native_synth" in rep:
        mix = rep["native_synth"]
        typer.echo(f"native {target} synthetic records: {mix['records']} (share {mix['share']})" + (f"; {mix['reason']}" if "reason" in mix else ""))
    typer.echo(format_summary(rep["stats"], title=f"{fmt}:{inp}"))


def synth(out: str | Path, n: int = 1000, seed: int = 13, lang: str = "es", report: str | Path | None = None) -> dict[str, Any]:
    """`extract --format synth` with the corpus summary as its report (and the seed): the `factory synth` command."""
    summary = {**extract(None, "synth", lang, out, n=n, seed=seed)["synth"], "seed": seed, "lang": lang, "out": str(out)}
    if report:
        write_text_atomic(report, srsly.json_dumps(summary, indent=2))
    return summary


def synth_command(
    out: Path = typer.Option(..., "--out", help="Output JSONL of records"),
    n: int = typer.Option(1000, "--n", help="Number of records"),
    seed: int = typer.Option(13, "--seed", help="Random seed (same seed, same corpus)"),
    lang: str = typer.Option("es", "--lang", help="Language of corpora/synth/<lang>/"),
    report: Path | None = typer.Option(None, "--report", help="Write the corpus report (JSON) here"),
) -> None:
    """Generate the embedded synthetic corpus: N clinical notes with gold PHI spans (= extract --format synth)."""
    import json

    rep = synth(out, n=n, seed=seed, lang=lang, report=report)
    typer.echo(json.dumps({k: v for k, v in rep.items() if k != "phi_per_kind"}, ensure_ascii=False, indent=1))
