"""Sharded work for `factory translate` and `factory redact`, on one process or a Dask cluster.

The input is cut into shards (consecutive records, in input order, numbered from 0). A shard is
the unit of work and of commit: a worker runs `ShardTask.run(state, payload)` on it, where `state`
is what `ShardTask.setup(config)` built once per worker process (the Argos route, the loaded
pipelines), and the client commits the results *in shard order* through the caller's `commit`.
So the outputs are the same bytes whatever the number of workers, and a run killed at any point
has committed a prefix of the shards, which the caller's resume skips. Each committed shard says
where it ran (`Shard.ran_on`: the worker's address and process id; "local" in this process), which
the redact journal records.

Where the work runs (`ClusterOptions`):
  * workers=1, no scheduler: in this process, through the same shard loop and commit (no Dask);
  * --workers N: a Dask LocalCluster of N processes with one thread each, on 127.0.0.1 only,
    started once per run and always closed;
  * --scheduler ADDRESS: an existing Dask cluster (`dask scheduler` + `dask worker ADDRESS`).

A worker that dies (killed, out of memory) loses only its shards in flight: the scheduler runs them
again on another worker (Dask's own retry), and the client commits each shard once, when its result
arrives. Task keys hold the command, a random run id and the shard number, never record text.

Nothing a worker logs holds record text, whatever the task does, on two independent guards:
  * the task Dask runs (`_run_on_worker`) never raises: whatever the shard's code raises (any
    BaseException) comes back as a `_Failure` holding the shard number and the exception type (Dask
    would log a failed task's arguments and exception message, which hold PHI), and the client
    raises it here as `ShardFailed` - or as the error itself when that error declares its message
    PHI-free (`phi_free = True`: ids and exception types only);
  * every worker of the run gets the `WorkerLogScrubber` plugin, which rewrites each log record
    the worker process makes (Dask's "Compute Failed" line, a result that fails to serialize, a
    warning of a library) so that it keeps its format string and drops its arguments, exception and
    traceback - an exception that escapes some other way still leaves no text in the worker's log.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import pickle
import re
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

log = logging.getLogger(__name__)

LOCAL_HOST = "127.0.0.1"  # the local cluster listens on the loopback interface only
IN_FLIGHT_PER_THREAD = 2  # shards submitted ahead per worker thread (a bounded queue: memory stays flat)


@dataclass(frozen=True)
class ClusterOptions:
    """Where shards run: `workers` local processes, or the Dask cluster at `scheduler`."""

    workers: int = 1
    scheduler: str | None = None

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise ValueError(f"--workers must be at least 1, not {self.workers}")

    @property
    def uses_dask(self) -> bool:
        return self.scheduler is not None or self.workers > 1

    def network_hosts(self) -> frozenset[str]:
        """The hosts this run talks to (for the translate stage's socket guard): the loopback
        address of the local cluster, or the scheduler's host (the client reaches workers through
        it) and the addresses it resolves to. Resolved here, before any guard is on."""
        if not self.uses_dask:
            return frozenset()
        if self.scheduler is None:
            return frozenset({LOCAL_HOST})
        import socket

        host = urlsplit(self.scheduler if "://" in self.scheduler else f"tcp://{self.scheduler}").hostname or ""
        try:
            addresses = {info[4][0] for info in socket.getaddrinfo(host, None)}
        except OSError:
            addresses = set()
        return frozenset({host, *addresses})


@dataclass(frozen=True)
class ShardTask:
    """What a worker runs. `setup(config)` builds the worker's state once per process (config is
    picklable and PHI-free); `run(state, payload)` processes one shard and returns its result.
    Both must be module-level functions (a remote worker imports them by name)."""

    name: str  # the command ("translate", "redact"): the first part of every task key
    setup: Callable[[Any], Any]
    run: Callable[[Any, Any], Any]
    config: Any = None
    token: str = field(init=False, default="")

    def __post_init__(self) -> None:
        # identifies the state a worker keeps for this task's config (one cache entry per run setting)
        digest = hashlib.sha256(pickle.dumps((self.setup.__module__, self.setup.__qualname__, self.config))).hexdigest()
        object.__setattr__(self, "token", digest[:16])


@dataclass(frozen=True)
class WorkerId:
    """Where a shard ran: the Dask worker's address ("local": this process, no Dask) and the
    process id of the worker process."""

    address: str
    pid: int

    def to_dict(self) -> dict[str, Any]:
        return {"address": self.address, "pid": self.pid}


LOCAL = "local"  # WorkerId.address of a shard run in the client's own process


@dataclass
class Shard:
    index: int
    payload: Any
    size: int  # records in it (progress)
    digest: str = ""  # of its input, when the caller's resume needs one (ShardJournal)
    ran_on: WorkerId | None = None  # set when its result arrives, before it is committed


class ShardFailed(RuntimeError):
    """A shard's task failed with an error whose message may hold PHI: only its type is told."""

    phi_free = True

    def __init__(self, index: int, error: str):
        super().__init__(f"shard {index}: {error}")
        self.index = index
        self.error = error

    def __reduce__(self):
        return (ShardFailed, (self.index, self.error))


def shards_of(items: Iterable[Any], max_items: int, weight: Callable[[Any], int] | None = None,
              max_weight: int | None = None) -> Iterator[Shard]:
    """Consecutive shards of at most `max_items` items (and, with `weight`, at most `max_weight` in
    total unless one item alone is heavier), numbered from 0, in input order."""
    if max_items < 1:
        raise ValueError("a shard holds at least one item")
    batch: list[Any] = []
    load = 0
    index = 0
    for item in items:
        w = weight(item) if weight is not None else 0
        if batch and (len(batch) >= max_items or (max_weight is not None and load + w > max_weight)):
            yield Shard(index, batch, len(batch))
            index += 1
            batch, load = [], 0
        batch.append(item)
        load += w
    if batch:
        yield Shard(index, batch, len(batch))


# ----------------------------------------------------------------------------- worker side
_STATES: dict[str, Any] = {}  # per worker process: token -> the state ShardTask.setup built


@dataclass
class _Failure:
    """A task's error, as it travels back to the client: the shard number, the exception type, and
    the exception itself only when PHI-free."""

    index: int
    type_name: str
    error: BaseException | None


@dataclass
class _Done:
    """A task's result, with the worker that computed it."""

    ran_on: WorkerId
    result: Any


def _this_worker() -> WorkerId:
    from distributed import get_worker

    try:
        address = get_worker().address
    except ValueError:  # not in a Dask worker (called directly)
        address = LOCAL
    return WorkerId(address, os.getpid())


def _state_of(task: ShardTask) -> Any:
    if task.token not in _STATES:
        _STATES[task.token] = task.setup(task.config)
    return _STATES[task.token]


def _safe_error(index: int, err: BaseException, in_setup: bool) -> _Failure:
    # set-up errors come from the PHI-free config (a missing pipeline, no route): told whole
    keep = in_setup or getattr(err, "phi_free", False) is True
    if keep:
        try:
            pickle.dumps(err)
        except Exception:  # an exception that does not pickle: its type is enough
            keep = False
    return _Failure(index, type(err).__name__, err if keep else None)


def _run_on_worker(task: ShardTask, index: int, payload: Any) -> Any:
    """What Dask runs on a worker. It never raises, whatever the shard's code does (BaseException
    included: SystemExit from a library is no reason to hand Dask a task whose arguments hold PHI)."""
    try:
        try:
            state = _state_of(task)
        except BaseException as err:
            return _safe_error(index, err, in_setup=True)
        try:
            return _Done(_this_worker(), task.run(state, payload))
        except BaseException as err:
            return _safe_error(index, err, in_setup=False)
    except BaseException as err:  # _safe_error itself failed (an exception whose attributes raise)
        return _Failure(index, type(err).__name__, None)


# A log record of a worker keeps its format string (code) and these arguments only: numbers, this
# module's task keys ("redact-1a2b3c4d-shard-000012") and Dask addresses ("tcp://127.0.0.1:40211").
_SAFE_LOG_ARGUMENT = re.compile(r"[a-z]+-[0-9a-f]{8}-shard-\d{6}|(?:tcp|tls|inproc|ucx|ws|wss)://[0-9A-Za-z.:\[\]/_-]+")
# The project's own loggers log ids, counts and exception types only (tests/factory/test_errors_not_data.py,
# tests/factory/test_translate.py): their records pass unchanged.
_OWN_LOGGERS = ("deid_factory", "deid_runtime")
# Dask's own messages without arguments interpolate nothing of a task (audited: addresses, states,
# asyncio task names); a message without arguments from any other library may be text it formatted
# in itself (argostranslate's utils.info(text)), so it is withheld.
_AUDITED_LOGGERS = ("distributed", "tornado", "asyncio")


def _of_logger(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _scrubbed_argument(value: Any) -> Any:
    if isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, str) and _SAFE_LOG_ARGUMENT.fullmatch(value):
        return value
    return f"<{type(value).__name__} withheld>"


def scrub_log_record(name: str, msg: Any, args: Any) -> tuple[Any, Any]:
    """The message and arguments a worker's log record of logger `name` keeps (see the module doc)."""
    if _of_logger(name, _OWN_LOGGERS):
        return msg, args
    if not isinstance(msg, str):  # logger.error(exception): its str() is the exception's message
        return f"<{type(msg).__name__} withheld>", ()
    if isinstance(args, dict):
        return msg, {k: _scrubbed_argument(v) for k, v in args.items()}
    if args:
        return msg, tuple(_scrubbed_argument(a) for a in args)
    if _of_logger(name, _AUDITED_LOGGERS):
        return msg, args
    return f"<message of {len(msg)} characters withheld>", ()


class _ScrubbingRecordFactory:
    """A logging record factory: every record the process makes goes through scrub_log_record and
    loses its exception and stack (a traceback's last line is the exception's message). A record
    factory, not a logging.Filter: a filter on a logger does not see the records of its child
    loggers, and handlers can be added after the plugin ran; every record is made here."""

    def __init__(self, previous: Callable[..., logging.LogRecord]):
        self.previous = previous

    def __call__(self, name, level, fn, lno, msg, args, exc_info, func=None, sinfo=None, **kwargs):
        if not _of_logger(name, _OWN_LOGGERS):
            msg, args = scrub_log_record(name, msg, args)
            exc_info, sinfo = None, None
        return self.previous(name, level, fn, lno, msg, args, exc_info, func, sinfo, **kwargs)


def install_log_scrubber() -> None:
    """Scrub every log record of this process from now on (idempotent); Python warnings become log
    records too (a warning's text may quote the document: spaCy's W030 does), and are scrubbed."""
    current = logging.getLogRecordFactory()
    if not isinstance(current, _ScrubbingRecordFactory):
        logging.setLogRecordFactory(_ScrubbingRecordFactory(current))
    logging.captureWarnings(True)


@functools.cache
def _worker_plugin_class() -> type:
    """WorkerLogScrubber, defined on first use: importing distributed costs a second, and most
    runs never start a cluster."""
    from distributed.diagnostics.plugin import WorkerPlugin

    class WorkerLogScrubber(WorkerPlugin):
        """Installed on every worker of a run (and on the workers that join later: the scheduler
        keeps it): the worker process scrubs its log records (install_log_scrubber)."""

        name = "deid-factory-scrub-worker-logs"
        idempotent = True

        def setup(self, worker) -> None:
            install_log_scrubber()

    return WorkerLogScrubber


def worker_log_scrubber():
    """A WorkerLogScrubber plugin, for `Client.register_plugin`."""
    return _worker_plugin_class()()


def _raise_failure(failure: _Failure) -> None:
    if failure.error is not None:
        raise failure.error
    raise ShardFailed(failure.index, failure.type_name)


# ----------------------------------------------------------------------------- client side
def run_shards(task: ShardTask, shards: Iterable[Shard], commit: Callable[[Shard, Any], None],
               cluster: ClusterOptions = ClusterOptions(), state: Any = None) -> None:
    """Run `task` on every shard and `commit(shard, result)` each in shard order.

    `state`: a state already built in this process (the in-process path uses it instead of
    calling setup; a caller that had to build it anyway, to validate options, saves the time).
    Ctrl-C or an error: what was committed stays committed, queued shards are cancelled, the
    cluster is closed, and the exception propagates."""
    if not cluster.uses_dask:
        here = WorkerId(LOCAL, os.getpid())
        for shard in shards:
            if state is None:
                state = task.setup(task.config)
            result = task.run(state, shard.payload)
            shard.ran_on = here
            commit(shard, result)
        return
    with _dask_client(cluster) as client:
        _run_on_cluster(client, task, shards, commit)


class _dask_client:
    """A Dask client on the local cluster it starts (and always closes) or on `--scheduler`."""

    def __init__(self, cluster: ClusterOptions):
        self.options = cluster
        self.cluster = None
        self.client = None

    def __enter__(self):
        from distributed import Client, LocalCluster

        # Dask's own INFO lines (workers starting and stopping, addresses) would drown the stage's
        # output; warnings and errors still show. No task argument is ever logged (see above):
        # the workers scrub their log records (WorkerLogScrubber), this client makes none of them.
        logging.getLogger("distributed").setLevel(logging.WARNING)
        try:
            if self.options.scheduler is None:
                self.cluster = LocalCluster(n_workers=self.options.workers, threads_per_worker=1, processes=True,
                                            host=LOCAL_HOST, dashboard_address=None, silence_logs=logging.WARNING)
                # direct_to_workers=False: results come through the scheduler, the one host the
                # client talks to (what the translate stage's socket guard lets through)
                self.client = Client(self.cluster, direct_to_workers=False, set_as_default=False)
            else:
                self.client = Client(self.options.scheduler, direct_to_workers=False, set_as_default=False, timeout="30s")
            # before any task: the workers there now and those that join later scrub their logs
            plugin = worker_log_scrubber()
            self.client.register_plugin(plugin, name=plugin.name)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self.client

    def __exit__(self, *exc) -> None:
        for closable in (self.client, self.cluster):
            if closable is not None:
                try:
                    closable.close()
                except Exception as err:  # closing must not hide the run's own error
                    log.warning("closing the Dask %s: %s", type(closable).__name__, type(err).__name__)


def _run_on_cluster(client, task: ShardTask, shards: Iterable[Shard], commit: Callable[[Shard, Any], None]) -> None:
    from distributed import as_completed

    threads = sum(w.get("nthreads", 1) for w in client.scheduler_info().get("workers", {}).values()) or 1
    bound = max(2, threads * IN_FLIGHT_PER_THREAD)
    run_id = uuid.uuid4().hex[:8]
    pending: dict[int, tuple[Shard, Any]] = {}  # index -> (shard, future), submitted, not committed
    order: deque[int] = deque()  # indices in the order they were submitted: the commit order
    done: dict[int, Any] = {}  # index -> result, finished, waiting for the shards before it
    index_of: dict[str, int] = {}  # task key -> shard index
    source = iter(shards)
    exhausted = False
    running = as_completed(loop=client.loop)

    def submit_more() -> None:
        nonlocal exhausted
        while not exhausted and len(pending) < bound:
            shard = next(source, None)
            if shard is None:
                exhausted = True
                return
            future = client.submit(_run_on_worker, task, shard.index, shard.payload, pure=False,
                                   key=f"{task.name}-{run_id}-shard-{shard.index:06d}")
            pending[shard.index] = (shard, future)
            index_of[future.key] = shard.index
            order.append(shard.index)
            running.add(future)

    try:
        submit_more()
        while pending:
            future = next(running)
            index = index_of.get(future.key)
            if index not in pending or index in done:  # told twice (a task that was lost and ran again)
                continue
            try:
                result = future.result()
            except Exception as err:  # the cluster gave up on it (a worker died too often) or broke
                raise ShardFailed(index, type(err).__name__) from None
            if isinstance(result, _Failure):
                _raise_failure(result)
            pending[index][0].ran_on = result.ran_on
            done[index] = result.result
            while order and order[0] in done:
                shard, _ = pending.pop(order[0])
                commit(shard, done.pop(order.popleft()))
            submit_more()
    except BaseException:
        client.cancel([f for _, f in pending.values()], force=True)
        raise


# ----------------------------------------------------------------------------- resume
class ShardJournal:
    """The shards a run committed, for a later run to resume after them: one JSON line per shard
    ({"shard", "digest", "summary", "ran_on"}), appended and fsynced after the shard's outputs are written.

    `fingerprint` identifies the run's settings; a journal of other settings is discarded. A
    shard's `digest` identifies its input: `resumable` gives the committed prefix of shards whose
    digests still match, in order, so that a resumed run writes what an uninterrupted one would.
    A torn last line (a run killed while writing it) is ignored."""

    def __init__(self, path: Path, fingerprint: str):
        self.path = Path(path)
        self.fingerprint = fingerprint
        self.entries = self._load()
        self.handle = None

    def _load(self) -> list[dict[str, Any]]:
        from .readers.jsonl import whole_json_lines

        if not self.path.exists():
            return []
        rows, _ = whole_json_lines(self.path)
        if not rows or not isinstance(rows[0], dict) or rows[0].get("fingerprint") != self.fingerprint:
            return []  # no header, or other settings (mode, key, pipelines...): nothing to resume
        return rows[1:]

    def start(self, keep: int) -> None:
        """Keep the first `keep` committed shards, forget the rest, and open for appending."""
        import srsly

        from .outputs import append_line, write_text_atomic

        lines = [srsly.json_dumps({"fingerprint": self.fingerprint})] + [srsly.json_dumps(e) for e in self.entries[:keep]]
        write_text_atomic(self.path, "".join(line + "\n" for line in lines))
        self.entries = self.entries[:keep]
        self.handle = self.path.open("a", encoding="utf-8")
        self._append_line = append_line

    def record(self, index: int, digest: str, summary: dict[str, Any], ran_on: WorkerId | None = None) -> None:
        import srsly

        entry = {"shard": index, "digest": digest, "summary": summary}
        if ran_on is not None:
            entry["ran_on"] = ran_on.to_dict()  # where it ran (an address and a process id: no PHI)
        self._append_line(self.handle, srsly.json_dumps(entry))
        self.entries.append(entry)

    def close(self) -> None:
        if self.handle is not None:
            self.handle.close()
            self.handle = None

    def remove(self) -> None:
        """The run is complete: nothing is left to resume."""
        self.close()
        self.path.unlink(missing_ok=True)


def digest_of(*parts: str) -> str:
    """A shard's input digest (hex), from the strings that make it up."""
    h = hashlib.sha256()
    for part in parts:
        data = part.encode("utf-8", "surrogatepass")
        h.update(len(data).to_bytes(8, "big"))
        h.update(data)
    return h.hexdigest()[:32]
