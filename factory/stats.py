"""Corpus statistics per record and for the corpus, and the threshold filter built on them.

Per record (as in the thesis' dataframe): text length, number of spans (and of names), span density
(spans per 1,000 characters), average start offset of the spans, and where the spans fall in the text
(first quartile, second+third, fourth, by start offset / length). The summary gives averages with
standard deviations and the share of spans per quartile:

    avg n. of annots:  5.3 ± 59.4
    avg text length:   7073.1 ± 13923.7
    ...

`apply_thresholds` keeps records whose length is within mean ± k·std and that have at most
`max_names` names (and at least `min_spans` spans), counting what each threshold removed.
"""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path
from typing import Any, Iterable

import srsly
import typer

from .records import Record, read_records
from .outputs import write_text_atomic


def record_stats(record: Record, names_label: str = "PERSON") -> dict[str, Any]:
    n = len(record.text)
    spans = record.spans
    quart = Counter()
    for s in spans:
        rel = s.start / n if n else 0.0
        quart["q1" if rel < 0.25 else "q4" if rel >= 0.75 else "q2_q3"] += 1
    labels = Counter(s.label for s in spans)
    return {
        "id": record.id,
        "length": n,
        "n_spans": len(spans),
        "n_names": labels.get(names_label, 0),
        "density_per_1000_chars": round(1000 * len(spans) / n, 3) if n else 0.0,
        "mean_start": round(sum(s.start for s in spans) / len(spans), 1) if spans else None,
        "spans_q1": quart["q1"],
        "spans_q2_q3": quart["q2_q3"],
        "spans_q4": quart["q4"],
        "labels": dict(sorted(labels.items())),
    }


def _mean_std(values: list[float]) -> tuple[float, float]:
    if not values:
        return 0.0, 0.0
    mean = sum(values) / len(values)
    var = sum((v - mean) ** 2 for v in values) / len(values)  # population standard deviation (ddof=0)
    return mean, math.sqrt(var)


def summarize(stats: list[dict[str, Any]]) -> dict[str, Any]:
    """Averages ± standard deviations (population) and the share of spans per quartile."""
    out: dict[str, Any] = {"records": len(stats)}
    for key, name in (("n_spans", "spans"), ("n_names", "names"), ("length", "length"),
                      ("density_per_1000_chars", "density_per_1000_chars")):
        mean, std = _mean_std([float(s[key]) for s in stats])
        out[name] = {"mean": round(mean, 2), "std": round(std, 2)}
    starts = [float(s["mean_start"]) for s in stats if s["mean_start"] is not None]
    mean, std = _mean_std(starts)
    out["mean_start"] = {"mean": round(mean, 1), "std": round(std, 1)}
    total = sum(s["n_spans"] for s in stats)
    out["spans_total"] = total
    for q in ("q1", "q2_q3", "q4"):
        out[f"pct_spans_{q}"] = round(100 * sum(s[f"spans_{q}"] for s in stats) / total, 2) if total else 0.0
    labels: Counter = Counter()
    for s in stats:
        labels.update(s["labels"])
    out["labels"] = dict(sorted(labels.items()))
    out["records_without_spans"] = sum(1 for s in stats if s["n_spans"] == 0)
    return out


def format_summary(summary: dict[str, Any], title: str = "corpus") -> str:
    """The thesis' text summary (figure 4.1 of the pipeline thesis)."""
    def ms(key: str) -> str:
        return f"{summary[key]['mean']} ± {summary[key]['std']}"

    return "\n".join([
        title, "-----",
        f"records:           {summary['records']}",
        f"avg n. of annots:  {ms('spans')}",
        f"avg n. of names:   {ms('names')}",
        f"avg text length:   {ms('length')}",
        f"avg pos of annots: {ms('mean_start')}",
        f"-pctg of annots in q1:    {summary['pct_spans_q1']} %",
        f"-pctg of annots in q2-q3: {summary['pct_spans_q2_q3']} %",
        f"-pctg of annots in q4:    {summary['pct_spans_q4']} %",
    ])


def corpus_stats(records: Iterable[Record], names_label: str = "PERSON") -> dict[str, Any]:
    per_record = [record_stats(r, names_label) for r in records]
    return {"summary": summarize(per_record), "records": per_record}


def apply_thresholds(records: list[Record], k_std: float | None = 2.0, max_names: int | None = 10,
                     names_label: str = "PERSON", min_spans: int = 0) -> tuple[list[Record], dict[str, Any]]:
    """Keep records with length in mean ± k_std·std (None: no length limit), at most `max_names`
    names (None: no limit) and at least `min_spans` spans. A record failing several thresholds is
    counted under the first (length, then names, then spans)."""
    lengths = [float(len(r.text)) for r in records]
    mean, std = _mean_std(lengths)
    lo, hi = (mean - k_std * std, mean + k_std * std) if k_std is not None else (-math.inf, math.inf)
    kept: list[Record] = []
    removed: Counter = Counter()
    removed_ids: list[dict[str, str]] = []
    for r in records:
        n_names = sum(1 for s in r.spans if s.label == names_label)
        reason = None
        if not lo <= len(r.text) <= hi:
            reason = "length"
        elif max_names is not None and n_names > max_names:
            reason = "max_names"
        elif len(r.spans) < min_spans:
            reason = "min_spans"
        if reason:
            removed[reason] += 1
            removed_ids.append({"id": r.id, "reason": reason})
        else:
            kept.append(r)
    report = {
        "k_std": k_std,
        "length_mean": round(mean, 1),
        "length_std": round(std, 1),
        "length_min_kept": round(lo, 1) if k_std is not None else None,
        "length_max_kept": round(hi, 1) if k_std is not None else None,
        "max_names": max_names,
        "names_label": names_label,
        "min_spans": min_spans,
        "records_in": len(records),
        "records_kept": len(kept),
        "removed_length": removed["length"],
        "removed_max_names": removed["max_names"],
        "removed_min_spans": removed["min_spans"],
        "removed": removed_ids,
    }
    return kept, report


def stats(inp: str | Path, out: str | Path | None = None, names_label: str = "PERSON") -> dict[str, Any]:
    result = corpus_stats(read_records(inp), names_label)
    if out:
        write_text_atomic(out, srsly.json_dumps(result, indent=2))
    return result


def stats_command(
    inp: Path = typer.Argument(..., help="Input JSONL of records"),
    out: Path = typer.Option(..., "--out", help="Write per-record statistics and the summary (JSON) here"),
    names_label: str = typer.Option("PERSON", "--names-label", help="Label counted as names"),
) -> None:
    """Per-record statistics (length, spans, density, quartiles) and a corpus summary."""
    result = stats(inp, out, names_label)
    typer.echo(format_summary(result["summary"], title=str(inp)))
