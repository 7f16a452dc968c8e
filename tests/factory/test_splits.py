"""DocBin splits: by record, seeded, and the DocBin entities equal the JSONL spans."""

from __future__ import annotations

import pytest

from deid_factory.records import Record, Span, read_records
from deid_factory.splits import assign_splits, parse_ratios, read_docbin_spans, write_splits


def _records(n):
    out = []
    for i in range(n):
        text = f"Paciente Jean Dupont{i} vu le 12/03/2020 à Lyon."
        s = text.index("Jean")
        e = text.index(" vu")
        d = text.index("12/03")
        out.append(Record(f"id{i:03d}", "fr", text, [Span(s, e, "PERSON"), Span(d, d + 10, "DATE"), Span(text.index("Lyon"), text.index("Lyon") + 4, "LOCATION")], {}))
    return out


def test_ratios_and_assignment():
    assert parse_ratios("0.8,0.1,0.1") == pytest.approx({"train": 0.8, "dev": 0.1, "test": 0.1})
    assert parse_ratios("train=8,dev=1,test=1") == pytest.approx({"train": 0.8, "dev": 0.1, "test": 0.1})
    for bad in ("0.5,0.5", "train=1,val=1", "train=-1,dev=1,test=1"):
        with pytest.raises(ValueError):
            parse_ratios(bad)
    ids = [f"r{i}" for i in range(101)]
    a = assign_splits(ids, parse_ratios(None), seed=0)
    assert sorted(a) == sorted(ids)
    counts = {k: list(a.values()).count(k) for k in ("train", "dev", "test")}
    assert counts == {"train": 81, "dev": 10, "test": 10}
    assert assign_splits(reversed(ids), parse_ratios(None), seed=0) == a  # order of input does not matter
    assert assign_splits(ids, parse_ratios(None), seed=1) != a


def test_docbins_equal_jsonl_spans(tmp_path):
    recs = _records(50)
    # the PHI tokenizer rules already split "NHC:045093227"; "IPP045093227" still needs a cut
    glued = Record("glued", "fr", "Patient IPP045093227 vu le 12/03/2020.", [Span(11, 20, "ID"), Span(27, 37, "DATE")], {})
    overlap = Record("overlap", "fr", "Patient Jean Dupont vu.", [Span(8, 19, "PERSON"), Span(13, 19, "PERSON")], {})
    report, final = write_splits(recs + [glued, overlap], tmp_path, "fr", parse_ratios(None), seed=0)
    assert report["misaligned_ids"] == ["overlap"]
    assert report["retokenized_records"] == 1  # 'IPP045093227' is cut after the label
    assert sum(report["counts"].values()) == 51
    by_text = {r.text: sorted((s.start, s.end, s.label) for s in r.spans) for r in final}
    loaded = 0
    for split in ("train", "dev", "test"):
        for text, ents in read_docbin_spans(tmp_path / f"{split}.spacy", "fr"):
            assert sorted(ents) == by_text[text]
            loaded += 1
    assert loaded == 51 == len(final)
    assert {r.meta["split"] for r in final} == {"train", "dev", "test"}
