"""Faults with byte-precise budgets and kills: a translation killed at random points resumes to the
same output; a disk that fills up at a chosen byte (half-way through a record, between two DocBins)
or an unwritable output folder stops a stage with one clear line and leaves earlier outputs as they were.

Byte-precise full disks are Python-level (faultkit.FULL_DISK_SITECUSTOMIZE): the kernel's tmpfs
counts whole 4 KiB pages, too coarse to fail "half-way through the fourth record". Every writing
command also runs out of space on a real, size-limited tmpfs (the kernel's ENOSPC) in
tests/system/test_faults_commands.py; /dev/full, the kernel's always-full device, checks the append path here.
"""

from __future__ import annotations

import errno
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from deid_factory.cli import app
from deid_factory.placeholders import placeholder_file
from deid_factory.records import Record, RecordError, append_record, read_records, write_records
from deid_factory.outputs import OutputError
from deid_factory.stats import stats
from deid_factory.surrogates.stage import surrogate_file
from deid_factory.translate_job import TranslateOptions, translate_file

from faultkit import FULL_DISK_SITECUSTOMIZE, python_full_disk_env, snapshot as _snapshot, unwritable  # tests/ is on sys.path

linux_only = pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="the full-disk simulation reads /proc/self/fd")


def _phi_strings(path: Path) -> list[str]:
    return [t for rec in read_records(path) for t in rec.span_texts()]


def _factory_on_full_disk(args: list[str], full_dir: Path, budget: int, tmp_path: Path) -> subprocess.CompletedProcess:
    """`python -m deid_factory ARGS` with only `budget` bytes left for the files under full_dir."""
    env = python_full_disk_env(full_dir, budget, tmp_path / "full_disk_site")
    return subprocess.run([sys.executable, "-m", "deid_factory", *map(str, args)], env=env, capture_output=True,
                          text=True, timeout=300)


def _assert_one_line_error(ret: subprocess.CompletedProcess, path: Path, reason: str, phi: list[str]) -> None:
    """Exit status 1, the last stderr line names the output and the reason, no traceback, no PHI."""
    assert ret.returncode == 1, (ret.stdout, ret.stderr)
    assert "Traceback" not in ret.stderr, ret.stderr
    assert ret.stderr.strip().splitlines()[-1] == f"error: cannot write {path}: {reason}"
    for text in phi:
        assert text not in ret.stdout + ret.stderr


@pytest.fixture()
def faults_source(translate_source, tmp_path) -> tuple[Path, list[str]]:
    """The fixture records in a folder of their own (outputs go elsewhere) and their PHI strings."""
    src_dir = tmp_path / "input"
    src_dir.mkdir()
    src = src_dir / "source_es.jsonl"
    src.write_bytes(translate_source.read_bytes())
    return src, _phi_strings(src)


# ----------------------------------------------------------------------------- full disk
@linux_only
def test_the_full_disk_simulation_fails_like_a_full_disk(tmp_path):
    """The simulation itself: a short write up to the budget, then ENOSPC; other folders unaffected."""
    full = tmp_path / "full"
    full.mkdir()
    code = ("import errno\n"
            f"f = open({str(full / 'a.txt')!r}, 'wb', buffering=0)\n"
            "assert f.write(b'0123456789') == 6\n"
            "try:\n    f.write(b'x')\nexcept OSError as err:\n    assert err.errno == errno.ENOSPC\nelse:\n    raise SystemExit('no ENOSPC')\n"
            f"open({str(tmp_path / 'free.txt')!r}, 'w').write('x' * 100)\n")
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(FULL_DISK_SITECUSTOMIZE, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(site), "DEID_FULL_DIR": str(full), "DEID_FULL_BUDGET": "6"}
    ret = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert ret.returncode == 0, ret.stderr
    assert (full / "a.txt").read_bytes() == b"012345"
    assert (tmp_path / "free.txt").read_text() == "x" * 100


@linux_only
def test_full_disk_during_placeholder_keeps_the_earlier_output(faults_source, tmp_path):
    """A records writer (stage 4) that runs out of space half-way through: its earlier output and
    report stay byte for byte, the temp file is gone, one line names the output."""
    src, phi = faults_source
    out_dir = tmp_path / "out"
    out, report = out_dir / "ph.jsonl", out_dir / "ph_report.json"
    placeholder_file(src, out, "fr", report_path=report)
    before = _snapshot(out_dir)
    ret = _factory_on_full_disk(["placeholder", src, out, "--lang", "fr", "--report", report], out_dir,
                                budget=len(before["ph.jsonl"]) // 2, tmp_path=tmp_path)
    _assert_one_line_error(ret, out, "No space left on device", phi)
    assert _snapshot(out_dir) == before


@linux_only
def test_full_disk_during_surrogate_keeps_docbins_records_and_report(faults_source, tmp_path):
    """Stage 6 writes train/dev/test DocBins, then records.jsonl and report.json. With room for the
    three DocBins (of another seed) but not for the records, nothing is replaced: the new DocBins
    never sit next to records they were not made from, and no temp file is left."""
    src, phi = faults_source
    work = tmp_path / "work"
    placeholder_file(src, work / "ph.jsonl", "es")
    translate_file(work / "ph.jsonl", work / "tr.jsonl", TranslateOptions("es", "es", progress=False))
    out_dir = tmp_path / "final"
    surrogate_file(work / "tr.jsonl", out_dir, "es", seed=0)
    before = _snapshot(out_dir)
    assert {"train.spacy", "dev.spacy", "test.spacy", "records.jsonl", "report.json"} <= set(before)
    docbins = sum(len(before[f"{k}.spacy"]) for k in ("train", "dev", "test"))
    ret = _factory_on_full_disk(["surrogate", work / "tr.jsonl", out_dir, "--lang", "es", "--seed", "1"], out_dir,
                                budget=docbins + len(before["records.jsonl"]) // 2, tmp_path=tmp_path)
    _assert_one_line_error(ret, out_dir / "records.jsonl", "No space left on device", phi)
    assert _snapshot(out_dir) == before
    # with room, the same command does replace them (seed 1 draws other surrogates)
    surrogate_file(work / "tr.jsonl", out_dir, "es", seed=1)
    assert _snapshot(out_dir)["train.spacy"] != before["train.spacy"] or _snapshot(out_dir)["records.jsonl"] != before["records.jsonl"]


@linux_only
def test_full_disk_during_evaluate_keeps_metrics_plots_and_report_together(faults_source, tmp_path):
    """evaluate writes metrics.json, PNG plots and report.md: out of space at the first plot, the
    metrics of the new run are not left next to the plots and report of the earlier one."""
    from deid_factory.evaluate import evaluate_pipeline
    from deid_factory.package import assemble_pipeline

    src, phi = faults_source
    pipeline = tmp_path / "deid_es"
    assemble_pipeline(None, "es", pipeline)  # regex pack + merger, no NER: enough to score
    out_dir = tmp_path / "metrics"
    evaluate_pipeline(pipeline, src, out_dir)
    before = _snapshot(out_dir)
    assert {"metrics.json", "report.md", "per_label_f1.png"} <= set(before)
    ret = _factory_on_full_disk(["evaluate", pipeline, src, "--out", out_dir], out_dir,
                                budget=len(before["metrics.json"]) + 100, tmp_path=tmp_path)
    _assert_one_line_error(ret, out_dir / "per_label_f1.png", "No space left on device", phi)
    assert _snapshot(out_dir) == before


@linux_only
def test_full_disk_during_a_report_keeps_the_earlier_report(faults_source, tmp_path):
    src, phi = faults_source
    out = tmp_path / "stats" / "stats.json"
    stats(src, out)
    before = _snapshot(out.parent)
    ret = _factory_on_full_disk(["stats", src, "--out", out], out.parent, budget=100, tmp_path=tmp_path)
    _assert_one_line_error(ret, out, "No space left on device", phi)
    assert _snapshot(out.parent) == before


@linux_only
def test_full_disk_while_spacy_saves_the_assembled_pipeline(tmp_path):
    """assemble (stage 8) lets spaCy write the pipeline folder (nlp.to_disk): out of space in the
    middle, the earlier pipeline folder stays whole, the half-written temp folder is removed."""
    from deid_factory.package import assemble_pipeline

    out = tmp_path / "pipelines" / "deid_es"
    assemble_pipeline(None, "es", out)
    before = _snapshot(out.parent)
    ret = _factory_on_full_disk(["assemble", "--lang", "es", "--out", out], out.parent, budget=20_000, tmp_path=tmp_path)
    _assert_one_line_error(ret, out, "No space left on device", [])
    assert _snapshot(out.parent) == before


@linux_only
def test_full_disk_while_training_keeps_the_earlier_model(train_corpus, train_config, train_model, tmp_path):
    """spaCy's training loop writes model-best/, model-last/ and log.jsonl itself: out of space in
    the middle of a run, the earlier model and curve are still there, whole, and the run's
    half-written staging folder is gone."""
    import shutil

    out = tmp_path / "training"
    shutil.copytree(train_model, out)
    before = _snapshot(out)
    assert "model-best/meta.json" in before and "log.jsonl" in before
    ret = _factory_on_full_disk(["train", train_corpus / "train.spacy", train_corpus / "dev.spacy", "--config", train_config,
                                 "--out", out, "--max-epochs", "1"], out, budget=200_000, tmp_path=tmp_path)
    _assert_one_line_error(ret, out, "No space left on device", [])
    assert _snapshot(out) == before


@linux_only
def test_full_disk_while_translate_appends_keeps_whole_records_and_resumes(faults_source, tmp_path):
    """translate appends record by record: out of space in the middle of a record, the file is cut
    back to the last whole record (the earlier ones untouched), and a re-run with space finishes it
    exactly as an uninterrupted run would have."""
    src, phi = faults_source
    full = tmp_path / "uninterrupted.jsonl"
    translate_file(src, full, TranslateOptions("es", "es", progress=False))  # source == target: appended without Argos
    lines = full.read_bytes().splitlines(keepends=True)
    assert len(lines) == 5
    out_dir = tmp_path / "out"
    out = out_dir / "tr.jsonl"
    translate_file(src, out, TranslateOptions("es", "es", progress=False, limit=2))
    earlier = out.read_bytes()
    assert earlier == b"".join(lines[:2])
    # room for the third record and half of the fourth
    ret = _factory_on_full_disk(["translate", src, out, "--source-lang", "es", "--lang", "es", "--no-progress"], out_dir,
                                budget=len(lines[2]) + len(lines[3]) // 2, tmp_path=tmp_path)
    _assert_one_line_error(ret, out, "No space left on device", phi)
    assert out.read_bytes() == b"".join(lines[:3])  # no partial fourth line
    assert sorted(p.name for p in out_dir.iterdir()) == ["tr.jsonl"]
    report = translate_file(src, out, TranslateOptions("es", "es", progress=False))
    assert report["resumed_from"] == 3
    assert out.read_bytes() == full.read_bytes()


def test_append_on_a_real_full_device_raises_output_error():
    """/dev/full answers every write with ENOSPC: append_record reports the file, not the record."""
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full on this system")
    with open("/dev/full", "a", encoding="utf-8") as handle:
        with pytest.raises(OutputError) as info:
            append_record(handle, Record("r-1", "es", "Paciente Leocadia Ybarra.", [], {}))
    assert info.value.errno == errno.ENOSPC
    assert str(info.value) == "cannot write /dev/full: No space left on device"
    assert isinstance(info.value, OSError)  # callers that handle OSError still do


def test_a_bad_input_record_is_not_reported_as_a_write_error(tmp_path):
    """write_records consumes a generator: an error of the producer passes through as it is, the
    earlier output stays and no temp file is left."""
    out = tmp_path / "out.jsonl"
    write_records(out, [Record("a", "es", "uno", [], {})])
    umask = os.umask(0)
    os.umask(umask)
    assert out.stat().st_mode & 0o777 == 0o666 & ~umask  # the usual mode, not the temp file's 0600
    before = _snapshot(tmp_path)

    def records():
        yield Record("b", "es", "dos", [], {})
        raise RecordError("in.jsonl:2: record 'c' is malformed")

    with pytest.raises(RecordError, match="record 'c'"):
        write_records(out, records())
    assert _snapshot(tmp_path) == before


# ----------------------------------------------------------------------------- unwritable output folder
def _run_factory_in_process(args, capsys) -> tuple[int, str]:
    """The `factory` app as the console script runs it (with its error handling), in this process."""
    with pytest.raises(SystemExit) as info:
        app(args=[str(a) for a in args], prog_name="factory")
    return info.value.code, capsys.readouterr().err


def _stage_args(stage: str, src: Path, ready: dict[str, Path], out: Path) -> list:
    return {
        "placeholder": ["placeholder", src, out / "ph.jsonl", "--lang", "fr"],
        "translate": ["translate", src, out / "tr.jsonl", "--source-lang", "es", "--lang", "es", "--no-progress"],
        "surrogate": ["surrogate", ready["tr"], out, "--lang", "es"],
        "stats": ["stats", src, "--out", out / "stats.json"],
    }[stage]


STAGES = ["placeholder", "translate", "surrogate", "stats"]


@pytest.fixture()
def faults_translated(faults_source, tmp_path) -> dict[str, Path]:
    src, _ = faults_source
    work = tmp_path / "work"
    placeholder_file(src, work / "ph.jsonl", "es")
    translate_file(work / "ph.jsonl", work / "tr.jsonl", TranslateOptions("es", "es", progress=False))
    return {"tr": work / "tr.jsonl"}


@pytest.mark.parametrize("stage", STAGES)
def test_output_folder_under_a_regular_file(stage, faults_source, faults_translated, tmp_path, capsys):
    """A path through a regular file cannot be created, even by root: one line naming the output
    (inside the impossible folder) and the reason, exit status 1, the blocking file untouched."""
    src, phi = faults_source
    blocker = tmp_path / "not_a_folder"
    blocker.write_text("keep me\n")
    out = blocker / "out"
    code, err = _run_factory_in_process(_stage_args(stage, src, faults_translated, out), capsys)
    assert code == 1
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: cannot write {out}") and lines[0].endswith(": Not a directory")
    assert not any(text in err for text in phi)
    assert blocker.read_text() == "keep me\n"


@pytest.fixture()
def unwritable_folder(tmp_path):
    """A folder with one earlier file that this process cannot write into, and the reason the
    system gives (faultkit.unwritable: chmod, and as root CAP_DAC_OVERRIDE dropped or chattr +i)."""
    folder = tmp_path / "unwritable"
    folder.mkdir()
    (folder / "earlier.txt").write_text("earlier output\n")
    with unwritable(folder) as reason:
        yield folder, reason


@pytest.mark.parametrize("stage", STAGES)
def test_unwritable_output_folder(stage, faults_source, faults_translated, unwritable_folder, capsys):
    src, phi = faults_source
    out, reason = unwritable_folder
    code, err = _run_factory_in_process(_stage_args(stage, src, faults_translated, out), capsys)
    assert code == 1
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: cannot write {out}") and lines[0].endswith(f": {reason}")
    assert not any(text in err for text in phi)
    assert _snapshot(out) == {"earlier.txt": b"earlier output\n"}


# ----------------------------------------------------------------------------- kill at random points
def _complete_lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def _wait_for_lines(proc: subprocess.Popen, path: Path, n: int, timeout: float = 300) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline and proc.poll() is None:
        if _complete_lines(path) >= n:
            return
        time.sleep(0.01)


def _comparable_report(path: Path) -> dict:
    """The report without what differs between a resumed and a fresh run by design."""
    report = json.loads(path.read_text())
    for key in ("resumed_from", "input", "output"):
        report.pop(key)
    return report


@pytest.mark.slow
def test_translate_killed_three_times_at_random_points_resumes_to_the_same_output(argos_env, argos_packages, translate_source, tmp_path):
    """SIGKILL (the whole process group, workers included, as a crash would) at three points drawn
    with a seeded RNG while the output grows, once with --workers 2; the fourth run finishes. The
    lossy packages make records kept, repaired and dropped, so both output files are exercised.
    Kept records, dropped file and report counts equal an uninterrupted run's, byte for byte."""
    from test_translate import _lossy_records, _placeholders

    base = list(read_records(translate_source))
    copies = [Record(f"{r.id}-{i}", r.lang, r.text, r.spans, r.meta) for i in range(6) for r in base]
    src = tmp_path / "many.jsonl"
    _lossy_records(tmp_path)  # writes tmp_path/lossy_src.jsonl: records to keep, repair and drop
    write_records(src, copies + list(read_records(tmp_path / "lossy_src.jsonl")))
    ph = _placeholders(src, tmp_path)
    n = sum(1 for _ in read_records(ph))
    common = ["--source-lang", "es", "--lang", "fr", "--packages-dir", str(argos_packages["lossy"]), "--beam-size", "1",
              "--no-progress", "--argos-dir", str(tmp_path / "argos"),
              # the lossy package drops records on purpose: resuming, not the drop-rate gate, is tested here
              "--max-drop-rate", "1"]
    env = {**os.environ, **argos_env}

    def start(out: Path, report: Path, *extra: str) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-m", "deid_factory", "translate", str(ph), str(out), *common,
                                 "--report", str(report), *extra], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)

    full = tmp_path / "full" / "tr.jsonl"
    proc = start(full, tmp_path / "full" / "report.json")
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    full_dropped = full.with_name("tr.jsonl.dropped.jsonl")
    assert full_dropped.read_text().strip(), "the lossy route drops at least one record"

    out = tmp_path / "part" / "tr.jsonl"
    dropped = out.with_name("tr.jsonl.dropped.jsonl")
    rng = random.Random(20261122)
    done = 0
    for extra in ([], ["--workers", "2"], []):
        proc = start(out, tmp_path / "part" / "report.json", *extra)
        try:
            goal = rng.randint(done + 1, min(done + 4, n - 2))
            _wait_for_lines(proc, out, goal)
            time.sleep(rng.uniform(0.0, 0.2))  # sometimes between records, sometimes inside one
            assert proc.poll() is None, "the run ended before it could be killed"
            os.killpg(proc.pid, signal.SIGKILL)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
        now = _complete_lines(out) + _complete_lines(dropped)
        assert done < now < n, (done, now, n)
        done = now

    proc = start(out, tmp_path / "part" / "report.json")
    stdout, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    assert f"({done} already done)" in stdout
    for path in (out, dropped):
        data = path.read_bytes()
        assert data.endswith(b"\n") and all(json.loads(line) for line in data.splitlines())  # no partial line
    assert out.read_bytes() == full.read_bytes()
    assert dropped.read_bytes() == full_dropped.read_bytes()
    assert _comparable_report(tmp_path / "part" / "report.json") == _comparable_report(tmp_path / "full" / "report.json")
    assert sorted(p.name for p in out.parent.iterdir()) == ["report.json", "tr.jsonl", "tr.jsonl.dropped.jsonl"]
