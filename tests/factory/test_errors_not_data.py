"""Errors are not data: only the translation engine's own errors drop (or repair) a record; any
other exception stops `factory translate` with one line naming the record id (never its text), and a
drop rate above --max-drop-rate fails the stage after its output and report are written."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest
from typer.testing import CliRunner

from deid_factory.cli import app
from deid_factory.placeholders import placeholder_file
from deid_factory.records import Record, read_records
from deid_factory.argos_env import ArgosRoute
from deid_factory.translate import ENGINE_ERRORS, RecordFailed, translate_record
from deid_factory.translate_job import DropRateExceeded, TranslateOptions, translate_file


def _placeholders(src: Path, tmp_path: Path) -> Path:
    out = tmp_path / "ph.jsonl"
    placeholder_file(src, out, "fr")
    return out


def _text_pieces(text: str) -> list[str]:
    return [s.strip() for s in text.split(".") if len(s.strip()) > 12]


# ----------------------------------------------------------------------------- translate_record
def _record(text: str = "Paciente acude hoy. Sin fiebre.") -> Record:
    return Record("r1", "es", text, [], {"placeholders": {"terms": {}}})


def test_engine_errors_are_runtime_value_and_index_errors():
    assert set(ENGINE_ERRORS) == {RuntimeError, ValueError, IndexError}


@pytest.mark.parametrize("error", [RuntimeError, ValueError, IndexError])
def test_engine_error_on_every_attempt_drops_the_record(error):
    def hops(text):
        raise error("engine failed")

    result = translate_record(_record(), hops, ["es", "fr"], "fr")
    assert result["status"] == "dropped" and result["reason"] == f"error:{error.__name__}"


def test_engine_error_on_the_whole_record_is_repaired_by_sentence():
    rec = _record()

    def hops(text):
        if text == rec.text:
            raise RuntimeError("too long")
        return [text]

    result = translate_record(rec, hops, ["es", "fr"], "fr")
    assert result["status"] == "repaired" and result["method"] == "sentence"


@pytest.mark.parametrize("error", [TypeError, AttributeError, KeyError, NotImplementedError, RecursionError])
def test_programming_error_is_not_a_dropped_record(error):
    def hops(text):
        raise error("bug")

    with pytest.raises(error):
        translate_record(_record(), hops, ["es", "fr"], "fr")


def test_record_failed_names_id_and_type_and_pickles():
    err = RecordFailed("t3", "TypeError")
    assert str(err) == "record t3: TypeError"
    again = pickle.loads(pickle.dumps(err))  # raised across worker processes
    assert str(again) == str(err) and again.record_id == "t3"


# ----------------------------------------------------------------------------- the stage, real Argos
def _break_one_record(monkeypatch, ph: Path, rid: str, error: type[BaseException]) -> str:
    """Make ArgosRoute.translate_hops raise `error` for every piece of record `rid`'s text."""
    text = next(r.text for r in read_records(ph) if r.id == rid)
    real = ArgosRoute.translate_hops

    def translate_hops(self, chunk):
        if chunk.strip() and chunk.strip() in text:
            raise error("injected")
        return real(self, chunk)

    monkeypatch.setattr(ArgosRoute, "translate_hops", translate_hops)
    return text


def test_programming_error_stops_the_stage_naming_the_record(argos_home, argos_packages, translate_source, tmp_path, monkeypatch):
    ph = _placeholders(translate_source, tmp_path)
    out = tmp_path / "tr.jsonl"
    text = _break_one_record(monkeypatch, ph, "t3", TypeError)
    args = ["translate", str(ph), str(out), "--source-lang", "es", "--lang", "fr", "--packages-dir", str(argos_packages["pivot"]),
            "--argos-dir", str(tmp_path / "argos"), "--beam-size", "1", "--no-progress"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1
    assert [line for line in result.output.splitlines() if line.strip()] == ["error: record t3: TypeError"]
    for piece in _text_pieces(text):
        assert piece not in result.output
    # not data: nothing was dropped, and the records before it stay written (the stage is resumable)
    assert [r.id for r in read_records(out)] == ["t1", "t2"]
    dropped = Path(str(out) + ".dropped.jsonl")
    assert not dropped.exists() or dropped.read_text() == ""
    monkeypatch.undo()
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert [r.id for r in read_records(out)] == ["t1", "t2", "t3", "t4", "t5"]


def test_engine_error_on_one_record_still_drops_it(argos_home, argos_packages, translate_source, tmp_path, monkeypatch):
    ph = _placeholders(translate_source, tmp_path)
    out = tmp_path / "tr.jsonl"
    _break_one_record(monkeypatch, ph, "t3", RuntimeError)
    report = translate_file(ph, out, TranslateOptions("es", "fr", packages_dir=argos_packages["pivot"], argos_dir=tmp_path / "argos",
                            beam_size=1, progress=False))
    assert report["dropped_by_reason"] == {"error:RuntimeError": 1} and report["kept"] == 4
    assert report["drop_rate"] == 0.2
    assert [json.loads(line)["id"] for line in Path(str(out) + ".dropped.jsonl").read_text().splitlines()] == ["t3"]


@pytest.fixture(scope="module")
def short_package(tmp_path_factory) -> Path:
    """An es-fr copy package whose model has only 40 positions: CTranslate2 itself raises (RuntimeError)
    for longer inputs, so whole records fail and their sentences or clauses get through."""
    from deid_factory.argos_testkit import _default_sentences, build_package
    from deid_factory.placeholders import all_placeholder_terms

    folder = tmp_path_factory.mktemp("short_package")
    build_package(folder / "translate-es_fr.argosmodel", "es", "fr", _default_sentences("") + all_placeholder_terms(),
                  max_positions=40)
    return folder


def test_real_engine_error_repairs_and_drops(argos_home, short_package, translate_source, tmp_path):
    ph = _placeholders(translate_source, tmp_path)
    report = translate_file(ph, tmp_path / "tr.jsonl", TranslateOptions("es", "fr", packages_dir=short_package, argos_dir=tmp_path / "argos",
                            beam_size=1, progress=False))
    assert report["kept"] + report["repaired"] + report["dropped"] == 5
    assert report["repaired"] >= 1 and set(report["repaired_by"]) <= {"sentence", "clause"}
    assert report["dropped"] >= 1 and set(report["dropped_by_reason"]) == {"error:RuntimeError"}


def test_drop_rate_above_the_threshold_fails_after_writing_the_report(argos_home, short_package, translate_source, tmp_path):
    ph = _placeholders(translate_source, tmp_path)
    out, report_path = tmp_path / "tr.jsonl", tmp_path / "report.json"
    with pytest.raises(DropRateExceeded, match="drop rate"):
        translate_file(ph, out, TranslateOptions("es", "fr", packages_dir=short_package, argos_dir=tmp_path / "argos", beam_size=1,
                       progress=False, report_path=report_path, max_drop_rate=0.05))
    report = json.loads(report_path.read_text())
    assert report["drop_rate"] > 0.05 and report["max_drop_rate"] == 0.05
    assert len(list(read_records(out))) == report["kept"] + report["repaired"]  # the output is written too


def test_cli_max_drop_rate(argos_home, short_package, translate_source, tmp_path):
    ph = _placeholders(translate_source, tmp_path)
    base = ["translate", str(ph), "--source-lang", "es", "--lang", "fr", "--packages-dir", str(short_package), "--beam-size", "1",
            "--no-progress"]
    failed = CliRunner().invoke(app, base[:2] + [str(tmp_path / "a.jsonl")] + base[2:] + ["--argos-dir", str(tmp_path / "argos"),
                                                                                        "--report", str(tmp_path / "a.json")])
    assert failed.exit_code == 1  # the default --max-drop-rate 0.05
    errors = [line for line in failed.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "--max-drop-rate 0.05" in errors[0]
    assert json.loads((tmp_path / "a.json").read_text())["drop_rate"] > 0.05
    passed = CliRunner().invoke(app, base[:2] + [str(tmp_path / "b.jsonl")] + base[2:] + ["--argos-dir", str(tmp_path / "argos"),
                                                                                        "--max-drop-rate", "1"])
    assert passed.exit_code == 0, passed.output


# ----------------------------------------------------------------------------- the other stages
def test_docbin_reader_turns_only_docbin_errors_into_unreadable_records(tmp_path, monkeypatch):
    from spacy.tokens import DocBin

    from deid_factory.readers.docbin import read_docbin

    bad = tmp_path / "bad.spacy"
    bad.write_bytes(b"this is not a DocBin at all\n")
    [rec] = list(read_docbin(bad))
    assert "not a spaCy DocBin" in rec.error

    def broken(self, path):
        raise AttributeError("a bug, not a corrupt file")

    monkeypatch.setattr(DocBin, "from_disk", broken)
    with pytest.raises(AttributeError):
        list(read_docbin(bad))


def test_train_docbin_lengths_propagates_a_bug(tmp_path, monkeypatch):
    from spacy.tokens import DocBin

    from deid_factory.train import TrainError, docbin_lengths

    bad = tmp_path / "bad.spacy"
    bad.write_bytes(b"\x00\x01 not a DocBin")
    with pytest.raises(TrainError, match="not a spaCy DocBin"):
        docbin_lengths(bad)
    monkeypatch.setattr(DocBin, "from_disk", lambda self, path: (_ for _ in ()).throw(AttributeError("bug")))
    with pytest.raises(AttributeError):
        docbin_lengths(bad)


def test_calibrate_command_one_line_for_expected_errors_traceback_for_bugs(tmp_path, monkeypatch):
    import deid_factory.placeholders as placeholders

    def missing_route(*args, **kwargs):
        raise RuntimeError("no Argos route es -> fr")

    monkeypatch.setattr(placeholders, "calibrate", missing_route)
    result = CliRunner().invoke(app, ["calibrate", "--out", str(tmp_path / "inv.yml")])
    assert result.exit_code == 1 and "error: no Argos route es -> fr" in result.output

    def bug(*args, **kwargs):
        raise TypeError("a bug")

    monkeypatch.setattr(placeholders, "calibrate", bug)
    result = CliRunner().invoke(app, ["calibrate", "--out", str(tmp_path / "inv.yml")])
    assert isinstance(result.exception, TypeError)  # not swallowed into an "error:" line
