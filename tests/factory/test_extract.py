"""`factory extract` (and the stage commands around it) end to end through the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest
import srsly
from typer.testing import CliRunner

from deid_factory import PROJECT_ROOT
from deid_factory.cli import app
from deid_factory.records import read_records, validate_record

from test_readers import write_i2b2  # tests/ is on sys.path (pytest rootdir import mode)

MEDDOCAN = PROJECT_ROOT.parent / "shared" / "corpora" / "meddocan"
runner = CliRunner()


def _run(*args: str):
    result = runner.invoke(app, [str(a) for a in args])
    return result


def _valid(path: Path) -> list:
    records = list(read_records(path))
    for r in records:
        validate_record(r)
    return records


def test_extract_synth_then_detect_filter_stats(tmp_path):
    res = _run("extract", "-", "--format", "synth", "--n", "120", "--seed", "13", "--lang", "es",
               "--out", tmp_path / "ex.jsonl", "--report", tmp_path / "ex.json")
    assert res.exit_code == 0, res.output
    records = _valid(tmp_path / "ex.jsonl")
    assert len(records) == 120 and records[42].id == "synth-es-13-000042"
    rep = srsly.read_json(tmp_path / "ex.json")
    assert rep["records_written"] == 120 and rep["stats"]["records"] == 120
    assert rep["synth"]["distinct_templates_used"] > 100
    res = _run("detect", tmp_path / "ex.jsonl", tmp_path / "det.jsonl", "--lang", "es", "--report", tmp_path / "det.json")
    assert res.exit_code == 0, res.output
    assert srsly.read_json(tmp_path / "det.json")["records_kept"] == 120
    res = _run("filter", tmp_path / "det.jsonl", tmp_path / "filt.jsonl", "--source-lang", "es", "--k-std", "2.0", "--max-names", "10",
               "--report", tmp_path / "filt.json")
    assert res.exit_code == 0, res.output
    kept = _valid(tmp_path / "filt.jsonl")
    assert 96 <= len(kept) <= 120
    assert all(r.meta["lang_detected"] == "es" for r in kept)
    res = _run("stats", tmp_path / "filt.jsonl", "--out", tmp_path / "stats.json")
    assert res.exit_code == 0 and "avg n. of annots" in res.output
    assert srsly.read_json(tmp_path / "stats.json")["summary"]["records"] == len(kept)


def test_synth_command(tmp_path):
    res = _run("synth", "--out", tmp_path / "s.jsonl", "--n", "10", "--seed", "5", "--report", tmp_path / "s.json")
    assert res.exit_code == 0, res.output
    assert [r.id for r in read_records(tmp_path / "s.jsonl")][-1] == "synth-es-5-000009"
    assert srsly.read_json(tmp_path / "s.json")["records"] == 10


def test_extract_i2b2_sample(tmp_path):
    write_i2b2(tmp_path / "i2b2", "note-1")
    write_i2b2(tmp_path / "i2b2", "note-2")
    res = _run("extract", tmp_path / "i2b2", "--format", "i2b2", "--lang", "en", "--out", tmp_path / "i.jsonl",
               "--report", tmp_path / "i.json")
    assert res.exit_code == 0, res.output
    records = _valid(tmp_path / "i.jsonl")
    assert [r.id for r in records] == ["note-1", "note-2"]
    rep = srsly.read_json(tmp_path / "i.json")
    assert rep["label_map"] == "i2b2" and rep["reader"]["labels"]["LOCATION"] == 6


def test_extract_bad_brat_names_file_and_record_and_keeps_no_output(tmp_path):
    folder = tmp_path / "brat"
    folder.mkdir()
    (folder / "n1.txt").write_text("Paciente: Irene Campos Vela.", encoding="utf-8")
    (folder / "n1.ann").write_text("T1\tNOMBRE_SUJETO_ASISTENCIA 10 27\tIrene Campos Vera\n", encoding="utf-8")
    res = _run("extract", folder, "--format", "brat", "--label-map", "meddocan", "--lang", "es", "--out", tmp_path / "o.jsonl")
    assert res.exit_code != 0
    message = str(res.exception)
    assert "n1.ann" in message and "'n1'" in message and "Irene" not in message
    assert not (tmp_path / "o.jsonl").exists()  # atomic: no half-written output
    res = _run("extract", folder, "--format", "brat", "--label-map", "meddocan", "--lang", "es", "--out", tmp_path / "o.jsonl",
               "--on-error", "skip", "--report", tmp_path / "o.json")
    assert res.exit_code == 0, res.output
    assert srsly.read_json(tmp_path / "o.json")["reader"]["skipped"][0]["id"] == "n1"


@pytest.mark.shared(MEDDOCAN / "train")
def test_extract_meddocan_train(tmp_path):
    res = _run("extract", MEDDOCAN / "train", "--format", "brat", "--label-map", "meddocan", "--lang", "es",
               "--out", tmp_path / "m.jsonl", "--report", tmp_path / "m.json")
    assert res.exit_code == 0, res.output
    records = _valid(tmp_path / "m.jsonl")
    assert len(records) == 500
    rep = srsly.read_json(tmp_path / "m.json")
    assert rep["reader"]["spans_dropped_by_label"]["SEXO_SUJETO_ASISTENCIA"] > 0
    assert rep["stats"]["records"] == 500 and rep["stats"]["spans_total"] == rep["reader"]["spans_kept"]
