"""Scale-out on Dask (factory/scaleout.py) for `factory redact`: a local cluster of 2 worker processes
gives the bytes of the in-process run; a worker killed mid-run loses nothing (its shards run again);
a client killed mid-run resumes from its journal to the same bytes, no document written twice or lost.
(`factory translate --workers 2` on the same module: tests/factory/test_translate.py.)"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from deid_factory import redact_engine, scaleout
from deid_factory.redact_engine import journal_path, redact_files
from deid_factory.scaleout import ClusterOptions, ShardFailed, ShardJournal, ShardTask, run_shards, shards_of

KEY = b"a test key of 32 bytes, not used"
NOTE = ("Paciente de {age} años que acude a consulta de control. Teléfono de contacto 6{phone:08d}, "
        "correo paciente{i}@correo.es. Refiere dolor abdominal desde hace {age} días, sin fiebre.\n")


@pytest.fixture(scope="module")
def es_pipeline(tmp_path_factory) -> Path:
    """A small deid pipeline folder (es regex pack + merger) that worker processes load by path."""
    import spacy

    from deid_factory.package import default_pack_dir
    from deid_runtime import merger, pack_component  # noqa: F401
    from deid_runtime.regex_pack import RegexPack

    nlp = spacy.blank("es")
    nlp.add_pipe("deid_regex_pack", config={"write_ents": False}).pack = RegexPack.from_dir(default_pack_dir("es"))
    nlp.add_pipe("deid_merger")
    path = tmp_path_factory.mktemp("pipe") / "deid_es_small"
    nlp.to_disk(path)
    return path


def _notes(tmp_path: Path, n: int) -> Path:
    records = tmp_path / "notes.jsonl"
    with records.open("w", encoding="utf-8") as handle:
        for i in range(n):
            text = NOTE.format(age=20 + i % 60, phone=12345678 + i, i=i) * (1 + i % 3)
            handle.write(json.dumps({"id": f"n{i:04d}", "text": text, "patient_id": f"p{i % 7}"}, ensure_ascii=False) + "\n")
    return records


def _redact(notes: Path, out: Path, pipeline: Path, cluster: ClusterOptions | None = None, fmt: str = "jsonl") -> dict:
    return redact_files([notes], out, fmt, "surrogate", pipelines=[str(pipeline)], lang="es", key=KEY, progress=False,
                        cluster=cluster)


@pytest.fixture(scope="module")
def dask_cluster():
    """One local cluster of 2 worker processes for the tests that do not test starting one."""
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None) as cluster:
        yield cluster


@pytest.fixture()
def small_shards(monkeypatch):
    """Shards of 2 documents: many shards, so that a run is still going when a process is killed."""
    monkeypatch.setattr(redact_engine, "DOCS_PER_SHARD", 2)


def _wait_for_journal(path: Path, shards: int, timeout: float = 60) -> int:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if path.exists():
            committed = path.read_bytes().count(b"\n") - 1  # the first line is the run's fingerprint
            if committed >= shards:
                return committed
        time.sleep(0.005)
    raise AssertionError(f"{path}: fewer than {shards} shards committed in {timeout} s")


@pytest.fixture()
def journal_entries(monkeypatch) -> list[dict]:
    """Every shard entry the redact journal writes (the journal of a complete run is removed at its
    end: the test keeps a copy of each entry as written)."""
    entries: list[dict] = []
    real_record = ShardJournal.record

    def record(self, index, digest, summary, ran_on=None):
        real_record(self, index, digest, summary, ran_on)
        entries.append(json.loads(json.dumps(self.entries[-1])))

    monkeypatch.setattr(ShardJournal, "record", record)
    return entries


def _ran_on_workers(entries: list[dict], workers: dict[str, int] | None = None) -> set[int]:
    """Assert that every shard ran in a Dask worker process, not in this one: on one of `workers`
    (address -> pid) when given, else on some worker of a local cluster (127.0.0.1). Returns the pids."""
    assert entries, "no shard was committed"
    ran_on = [entry["ran_on"] for entry in entries]
    assert all(r["pid"] != os.getpid() and r["address"].startswith("tcp://127.0.0.1:") for r in ran_on), ran_on
    if workers is not None:
        assert all(workers.get(r["address"]) == r["pid"] for r in ran_on), (ran_on, workers)
    return {r["pid"] for r in ran_on}


def test_two_local_workers_write_the_bytes_of_one_process(es_pipeline, tmp_path, small_shards, journal_entries):
    notes = _notes(tmp_path, 120)
    one = _redact(notes, tmp_path / "one.jsonl", es_pipeline)
    assert [e["ran_on"] for e in journal_entries] == [{"address": "local", "pid": os.getpid()}] * 60
    journal_entries.clear()
    two = _redact(notes, tmp_path / "two.jsonl", es_pipeline, ClusterOptions(workers=2))
    assert (tmp_path / "two.jsonl").read_bytes() == (tmp_path / "one.jsonl").read_bytes()
    assert one == two and two["written"] == 120 and two["router"]["docs"] == 120
    assert not journal_path(tmp_path / "two.jsonl").exists()  # a complete run leaves nothing to resume
    assert sorted(e["shard"] for e in journal_entries) == list(range(60))
    assert len(_ran_on_workers(journal_entries)) == 2  # both worker processes took shards


def test_text_output_on_a_running_cluster(es_pipeline, tmp_path, dask_cluster, journal_entries):
    from distributed import Client

    notes = _notes(tmp_path, 60)
    _redact(notes, tmp_path / "t1", es_pipeline, fmt="text")
    journal_entries.clear()
    _redact(notes, tmp_path / "t2", es_pipeline, ClusterOptions(scheduler=dask_cluster.scheduler_address), fmt="text")
    assert {p.name: p.read_bytes() for p in (tmp_path / "t1").iterdir()} == {p.name: p.read_bytes() for p in (tmp_path / "t2").iterdir()}
    with Client(dask_cluster) as client:
        _ran_on_workers(journal_entries, client.run(os.getpid))


def _shard_number(key: str) -> int:
    return int(key.rsplit("-shard-", 1)[1])  # task keys: <command>-<run id>-shard-<number>


def _freeze_a_worker_with_shards(client, pids: dict[str, int]) -> tuple[str, set[int]]:
    """Stop (SIGSTOP) a worker process that the scheduler says is running shards of the redact run:
    stopped, it can finish none of them. Returns its address and those shards."""
    deadline = time.time() + 60
    while time.time() < deadline:
        for address in sorted(pids):
            os.kill(pids[address], signal.SIGSTOP)
            held = {_shard_number(k) for k in client.processing([address]).get(address, ()) if str(k).startswith("redact-")}
            if held:
                return address, held
            os.kill(pids[address], signal.SIGCONT)
        time.sleep(0.01)
    raise AssertionError("no worker was running a shard")


def test_a_worker_killed_mid_run_loses_no_document(es_pipeline, tmp_path, small_shards, dask_cluster, journal_entries):
    """The killed worker held shards in flight; they ran again on another worker process, and the
    output is the bytes of the in-process run."""
    from distributed import Client

    notes = _notes(tmp_path, 400)
    _redact(notes, tmp_path / "one.jsonl", es_pipeline)
    journal_entries.clear()
    out = tmp_path / "two.jsonl"
    cluster = dask_cluster
    with Client(cluster) as client:
        pids = client.run(os.getpid)
        errors: list[BaseException] = []

        def run() -> None:
            try:
                _redact(notes, out, es_pipeline, ClusterOptions(scheduler=cluster.scheduler_address))
            except BaseException as err:  # noqa: BLE001 - reported by the assertion below
                errors.append(err)

        thread = threading.Thread(target=run)
        thread.start()
        committed = _wait_for_journal(journal_path(out), 3)
        victim, in_flight = _freeze_a_worker_with_shards(client, pids)
        os.kill(pids[victim], signal.SIGKILL)  # the nanny starts a new worker; its shards run again
        thread.join(timeout=120)
        workers = {**pids, **client.run(os.getpid)}  # with the worker the nanny started
    assert not errors, errors
    assert committed < 200, "the run was over before the worker was killed"
    assert out.read_bytes() == (tmp_path / "one.jsonl").read_bytes()
    ids = [json.loads(line)["id"] for line in out.read_text(encoding="utf-8").splitlines()]
    assert ids == [f"n{i:04d}" for i in range(400)]
    assert sorted(e["shard"] for e in journal_entries) == list(range(200))
    _ran_on_workers(journal_entries, workers)
    ran_on = {e["shard"]: e["ran_on"] for e in journal_entries}
    assert any(r["pid"] == pids[victim] for r in ran_on.values())  # it ran shards before it was stopped
    again = {i: ran_on[i] for i in in_flight}
    assert all(r["pid"] != pids[victim] for r in again.values()), (victim, again)  # its shards in flight ran elsewhere


def test_a_killed_client_resumes_to_the_same_bytes(es_pipeline, tmp_path):
    notes = _notes(tmp_path, 300)
    _redact(notes, tmp_path / "one.jsonl", es_pipeline)
    out = tmp_path / "two.jsonl"
    # the CLI with shards of 2 documents (a setting of the run: the resumed run uses the same)
    code = ("import sys; from deid_factory import redact_engine; redact_engine.DOCS_PER_SHARD = 2; "
            "from deid_factory.cli import main; sys.argv = ['factory'] + sys.argv[1:]; main()")
    key_file = tmp_path / "key"
    key_file.write_bytes(KEY)
    args = [sys.executable, "-c", code, "redact", str(notes), "--out", str(out), "--format", "jsonl", "--mode", "surrogate",
            "--key-file", str(key_file), "--pipelines", str(es_pipeline), "--lang", "es", "--quiet", "--workers", "2"]
    # its own session: the kill takes the client and its local cluster's processes, as a crash would
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        committed = _wait_for_journal(journal_path(out), 5, timeout=120)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    partial = out.with_name(out.name + ".partial")
    assert not out.exists() and partial.exists() and 5 <= committed < 150
    # the shards it committed ran in its local cluster's worker processes, not in the client (proc)
    entries = [json.loads(line) for line in journal_path(out).read_text(encoding="utf-8").splitlines()[1:committed + 1]]
    assert len(entries) == committed
    assert all(e["ran_on"]["pid"] != proc.pid and e["ran_on"]["address"].startswith("tcp://127.0.0.1:") for e in entries)
    with partial.open("a", encoding="utf-8") as handle:  # a torn row, as a kill in the middle of a write leaves
        handle.write('{"id": "torn", "reda')
    resumed = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert out.read_bytes() == (tmp_path / "one.jsonl").read_bytes()
    ids = [json.loads(line)["id"] for line in out.read_text(encoding="utf-8").splitlines()]
    assert ids == [f"n{i:04d}" for i in range(300)]  # none twice, none lost
    assert not partial.exists() and not journal_path(out).exists()
    assert "paciente1@correo.es" not in resumed.stderr + resumed.stdout


def test_a_changed_input_is_redone_not_resumed(es_pipeline, tmp_path, small_shards, monkeypatch, dask_cluster):
    """On a running cluster: a run interrupted after 5 shards, then resumed on a changed input, redoes
    the shards from the first that changed on the cluster's workers and writes the fresh run's bytes."""
    from distributed import Client

    notes = _notes(tmp_path, 40)
    out = tmp_path / "out.jsonl"
    on_cluster = ClusterOptions(scheduler=dask_cluster.scheduler_address)

    entries: list[dict] = []
    real_record = ShardJournal.record

    def record(self, index, digest, summary, ran_on=None):
        real_record(self, index, digest, summary, ran_on)
        entries.append(json.loads(json.dumps(self.entries[-1])))
        if len(entries) == 5:
            raise KeyboardInterrupt

    monkeypatch.setattr(ShardJournal, "record", record)
    with pytest.raises(KeyboardInterrupt):
        _redact(notes, out, es_pipeline, on_cluster)
    # the 3rd note changes: shard 0 is kept, shard 1 (notes 2-3) and all after it are redone
    lines = notes.read_text(encoding="utf-8").splitlines()
    changed = json.loads(lines[2])
    changed["text"] = changed["text"].replace("dolor abdominal", "cefalea")
    lines[2] = json.dumps(changed, ensure_ascii=False)
    notes.write_text("\n".join(lines) + "\n", encoding="utf-8")
    report = _redact(notes, out, es_pipeline, on_cluster)
    resumed = entries[5:]
    _redact(notes, tmp_path / "fresh.jsonl", es_pipeline)
    assert out.read_bytes() == (tmp_path / "fresh.jsonl").read_bytes()
    assert report["written"] == 40 and report["router"]["docs"] == 40
    assert [e["shard"] for e in entries[:5]] == [0, 1, 2, 3, 4] and [e["shard"] for e in resumed] == list(range(1, 20))
    with Client(dask_cluster) as client:
        _ran_on_workers(entries[:5] + resumed, client.run(os.getpid))


# A note's text, as a shard's payload and in the message of the error a task raises with it: none of
# it may reach a log, the client's or a worker's.
SECRET = "Rosendo Albarracín Quesada, DNI 48291735X"
SECRET_PIECES = ("Rosendo", "Albarracín", "48291735X")


def _setup(config):
    return config


def _fail_on_shard(state, payload):
    if payload == [[SECRET]]:
        raise ValueError(f"cannot read {payload!r}")  # an error message holding PHI
    return payload


def _exit_on_shard(state, payload):
    raise SystemExit(f"stopped on {payload!r}")


def _raise_with_text(text):
    raise ValueError(f"cannot read {text!r}")


def _log_text_three_ways(text):
    import logging
    import warnings

    logging.getLogger("some.library").warning("reading %s", text)  # an argument
    logging.getLogger("some.library").warning(f"reading {text}")  # a message formatted before logging
    warnings.warn(f"reading {text}")  # a Python warning (logged once captured)
    return 0


def _log_to_file(path):
    """Run on a worker: every record of the worker process (root and Dask's own logger, which does
    not propagate) also goes to `path`, whatever its level."""
    import logging

    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setLevel(logging.DEBUG)
    handler.setFormatter(logging.Formatter("%(name)s - %(levelname)s - %(message)s"))
    handler.set_name("test-scaleout-file")
    for name in ("", "distributed"):
        logging.getLogger(name).addHandler(handler)


def _stop_logging_to_file():
    import logging

    for name in ("", "distributed"):
        logger = logging.getLogger(name)
        for handler in [h for h in logger.handlers if h.get_name() == "test-scaleout-file"]:
            logger.removeHandler(handler)
            handler.close()


def _worker_logs(client) -> str:
    """What the workers logged, as the scheduler gives it (each worker keeps Dask's own log lines)."""
    return "\n".join(message for lines in client.get_worker_logs().values() for _, message in lines)


@pytest.fixture()
def by_value():
    """The workers cannot import this test module: its functions travel by value."""
    import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    yield
    cloudpickle.unregister_pickle_by_value(sys.modules[__name__])


def test_a_failing_task_tells_its_shard_and_type_never_its_message(capfd, dask_cluster, by_value):
    from distributed import Client

    task = ShardTask("test", _setup, _fail_on_shard, {"x": 1})
    with pytest.raises(ShardFailed) as caught:
        run_shards(task, shards_of([["fine"], [SECRET]], 1), lambda s, r: None,
                   ClusterOptions(scheduler=dask_cluster.scheduler_address))
    assert str(caught.value) == "shard 1: ValueError"
    out, err = capfd.readouterr()
    with Client(dask_cluster) as client:
        logged = out + err + _worker_logs(client)
    # neither the task's arguments nor its message reached a log: the client's or the workers'
    assert not [piece for piece in SECRET_PIECES if piece in logged]
    # in this process, the same loop raises the error itself (nothing is logged either)
    with pytest.raises(ValueError):
        run_shards(task, shards_of([["fine"], [SECRET]], 1), lambda s, r: None)


def test_the_task_dask_runs_never_raises():
    """Whatever the shard's code raises, Dask gets a return value (Dask logs a failed task's
    arguments and message): the shard number and the exception type, the exception itself only
    when it says its message is PHI-free."""
    failed = scaleout._run_on_worker(ShardTask("test", _setup, _fail_on_shard, {"x": 1}), 7, [[SECRET]])
    assert (failed.index, failed.type_name, failed.error) == (7, "ValueError", None)
    exited = scaleout._run_on_worker(ShardTask("test", _setup, _exit_on_shard, {"x": 2}), 3, [[SECRET]])
    assert (exited.index, exited.type_name, exited.error) == (3, "SystemExit", None)
    told = scaleout._run_on_worker(ShardTask("test", _setup, _fail_with_a_phi_free_error, {"x": 3}), 4, [[SECRET]])
    assert isinstance(told.error, ShardFailed) and str(told.error) == "shard 9: KeyError"
    assert not [piece for piece in SECRET_PIECES for f in (failed, exited, told) if piece in repr(f)]
    done = scaleout._run_on_worker(ShardTask("test", _setup, _fail_on_shard, {"x": 1}), 0, [["fine"]])
    assert done.result == [["fine"]] and done.ran_on == scaleout.WorkerId("local", os.getpid())


def _fail_with_a_phi_free_error(state, payload):
    raise ShardFailed(9, "KeyError")


def test_a_task_that_raises_on_a_worker_leaves_no_text_in_the_workers_logs(dask_cluster, tmp_path, by_value):
    """The second guard: an exception that escapes to Dask anyway (here a function submitted
    without run_shards' wrapper) is logged by the worker ("Compute Failed") without its arguments
    or message, and so are other libraries' log lines and warnings on the worker. Read from the
    worker processes' own logs: a file handler installed on each, and the scheduler's copy."""
    import uuid

    from distributed import Client

    # run_shards installs the scrubber on the cluster's workers (nothing else in this module does)
    run_shards(ShardTask("test", _setup, _fail_on_shard, {"x": 4}), shards_of([["fine"]], 1), lambda s, r: None,
               ClusterOptions(scheduler=dask_cluster.scheduler_address))
    key = f"test-{uuid.uuid4().hex[:8]}-shard-000001"
    with Client(dask_cluster) as client:
        files = {address: tmp_path / f"worker{i}.log" for i, address in enumerate(client.scheduler_info()["workers"])}
        for address, path in files.items():
            client.run(_log_to_file, str(path), workers=[address])
        try:
            failing = client.submit(_raise_with_text, SECRET, key=key, pure=False)
            assert isinstance(failing.exception(timeout=60), ValueError)
            client.run(_log_text_three_ways, SECRET)
        finally:
            client.run(_stop_logging_to_file)
        logged = _worker_logs(client) + "\n".join(p.read_text(encoding="utf-8") for p in files.values() if p.exists())
    assert not [piece for piece in SECRET_PIECES if piece in logged], logged[-3000:]
    assert "Compute Failed" in logged and key in logged  # the failure was logged, by shard key
    assert logged.count("some.library") >= 2 * len(files) and "py.warnings" in logged  # and so were the others


def test_shards_are_consecutive_and_bounded():
    shards = list(shards_of(range(7), 3))
    assert [(s.index, s.payload) for s in shards] == [(0, [0, 1, 2]), (1, [3, 4, 5]), (2, [6])]
    heavy = list(shards_of(["a" * 5, "b", "c" * 9, "d"], 10, len, 6))
    assert [s.payload for s in heavy] == [["aaaaa", "b"], ["ccccccccc"], ["d"]]
