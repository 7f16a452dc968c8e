"""Per-record statistics, the corpus summary and the threshold filter."""

from __future__ import annotations

import srsly

from deid_factory.records import Record, Span, write_records
from deid_factory.stats import apply_thresholds, format_summary, record_stats, stats, summarize


def _rec(rid: str, length: int, starts: list[int], label: str = "PERSON") -> Record:
    return Record(rid, "es", "x" * length, [Span(s, s + 2, label) for s in starts])


def test_record_stats_quartiles_density_mean_start():
    st = record_stats(_rec("a", 100, [0, 10, 30, 60, 80, 99 - 2]))
    assert st["length"] == 100 and st["n_spans"] == 6 and st["n_names"] == 6
    assert (st["spans_q1"], st["spans_q2_q3"], st["spans_q4"]) == (2, 2, 2)
    assert st["density_per_1000_chars"] == 60.0
    assert st["mean_start"] == round((0 + 10 + 30 + 60 + 80 + 97) / 6, 1)


def test_record_without_spans():
    st = record_stats(Record("e", "es", "texto sin nada", []))
    assert st["n_spans"] == 0 and st["mean_start"] is None


def test_summary_means_stds_and_shares():
    per = [record_stats(_rec("a", 100, [0, 50])), record_stats(_rec("b", 300, [290]))]
    s = summarize(per)
    assert s["records"] == 2
    assert s["length"] == {"mean": 200.0, "std": 100.0}
    assert s["spans"] == {"mean": 1.5, "std": 0.5}
    assert s["pct_spans_q1"] == round(100 / 3, 2) and s["pct_spans_q4"] == round(100 / 3, 2)
    text = format_summary(s, "t")
    assert "avg n. of annots:  1.5 ± 0.5" in text and "q2-q3" in text


def test_thresholds_length_and_names():
    records = [_rec(f"r{i}", 100, [0]) for i in range(8)] + [_rec("long", 1000, [0]), _rec("names", 100, list(range(0, 60, 5)))]
    kept, rep = apply_thresholds(records, k_std=1.0, max_names=10)
    ids = {r.id for r in kept}
    assert "long" not in ids and "names" not in ids and len(kept) == 8
    assert rep["removed_length"] == 1 and rep["removed_max_names"] == 1
    assert {"id": "long", "reason": "length"} in rep["removed"]
    kept, rep = apply_thresholds(records, k_std=None, max_names=None)
    assert len(kept) == 10 and rep["removed_length"] == 0


def test_stats_writes_records_and_summary(tmp_path):
    write_records(tmp_path / "in.jsonl", [_rec("a", 100, [0, 50]), _rec("b", 40, [])])
    result = stats(tmp_path / "in.jsonl", tmp_path / "out.json")
    saved = srsly.read_json(tmp_path / "out.json")
    assert saved == result
    assert [r["id"] for r in saved["records"]] == ["a", "b"]
    assert saved["summary"]["records_without_spans"] == 1
