"""`factory translate` (stage 5): translate a file of placeholder records offline, resumably.

* The route is Argos' (argos_env.py), each record is translated by translate.translate_record.
  A socket guard (netguard.py) refuses any connection while the stage runs.
* Records are translated in shards (scaleout.py: in this process, or on a local or remote Dask
  cluster with --workers N / --scheduler ADDRESS), committed in input order and appended one by
  one (flush + fsync): a crash, a killed worker or Ctrl-C loses nothing, a re-run resumes after the
  last whole record, and a record whose input changed since is redone (input digest).
* source == target: records pass through unchanged and Argos is not even imported.
"""

from __future__ import annotations

import logging
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import srsly
import typer
import yaml

from . import project_root
from .argos_env import ArgosRoute, RouteMissing
from .netguard import no_network
from .placeholders import without_placeholder_text
from .readers.jsonl import whole_json_lines
from .records import Record, RecordError, append_record, read_records
from .outputs import OutputError, append_line, write_json_atomic, write_text_atomic
from .scaleout import ClusterOptions, Shard, ShardTask, run_shards, shards_of
from .translate import RecordFailed, input_digest, translate_record

log = logging.getLogger(__name__)

DEFAULT_MAX_DROP_RATE = 0.05  # `factory translate --max-drop-rate`: share of translated records that may be dropped


class DropRateExceeded(RuntimeError):
    """More than --max-drop-rate of the translated records were dropped (raised after the report is written)."""



@dataclass(frozen=True)
class TranslateOptions:
    """How `translate_file` runs (the options of `factory translate`).

    download: only then, when no route is installed, fetch the packages from the Argos index.
    if_no_route: "fail" (RouteMissing) or "skip": without an installed route the records to
    translate are left out (counted, with the one-line reason in the report) and the records
    already in the target language are still written.
    max_drop_rate: when given, DropRateExceeded is raised (after the output and the report are
    written) if more than this share of the translated records were dropped (`drop_rate` in the
    report; records passed through unchanged do not count).
    limit: translate at most this many more records, then stop (a later run resumes).
    skipped_at_extract: why the build decided at extract not to translate (no route): the
    source records were not extracted, so only records already in the target come here."""

    source: str
    target: str
    packages_dir: str | Path | None = None
    workers: int = 1
    device: str = "cpu"
    report_path: str | Path | None = None
    argos_dir: str | Path | None = None
    beam_size: int | None = None
    pivot: str | None = None
    progress: bool = True
    allow_network: bool = False
    limit: int | None = None
    download: bool = False
    if_no_route: str = "fail"
    max_drop_rate: float | None = None
    scheduler: str | None = None  # a Dask scheduler address: run the workers there (then `workers` is unused)
    skipped_at_extract: str | None = None

    def __post_init__(self) -> None:
        if self.if_no_route not in ("fail", "skip"):
            raise ValueError(f"if_no_route must be fail or skip, not {self.if_no_route!r}")


# ----------------------------------------------------------------------------- shards (scaleout.py)
RECORDS_PER_SHARD = 4  # a record takes ~0.1-1 s to translate: small shards keep every worker busy


def _worker_setup(config: dict[str, Any]) -> ArgosRoute:
    """A translation worker's state: the installed route, opened once per process, under the socket
    guard for the life of the process (the cluster's own hosts excepted)."""
    guard = no_network(config["allow_network"], config["cluster_hosts"])
    guard.__enter__()  # for the life of the worker process
    return ArgosRoute.open(
        config["source"], config["target"], None, config["argos_dir"], config["device"], config["beam_size"],
        config["pivot"], install=False, intra_threads=config["intra_threads"],
    )


def _translate_shard(route: ArgosRoute, records: list[dict[str, Any]]) -> dict[str, Any]:
    """The results of a shard's records, up to the first that raised anything but an engine error
    (translate_record drops those): the records before it are written, then the stage stops."""
    results = []
    for data in records:
        record = Record.from_dict(data)
        try:
            results.append(translate_record(record, route.translate_hops, route.route, route.route[-1]))
        except Exception as err:
            log.debug("record %s: %s", record.id, type(err).__name__)
            return {"results": results, "failed": (record.id, type(err).__name__)}
    return {"results": results, "failed": None}


# ----------------------------------------------------------------------------- the stage
def _calibrated_route(records: list[Record]) -> list[str] | None:
    """The route the records' placeholder inventory was calibrated on (None: not calibrated)."""
    for rec in records[:1]:
        name = ((rec.meta.get("placeholders") or {}).get("inventory")) or ""
        path = Path(name) if Path(name).is_absolute() else project_root() / name
        if name and path.is_file():
            raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
            route = (raw.get("calibration") or {}).get("route")
            return [str(x) for x in route] if route else None
    return None


def _dropped_path(out_path: Path) -> Path:
    return out_path.with_name(out_path.name + ".dropped.jsonl")


def _load_done(out_path: Path) -> tuple[set[str], list[dict[str, Any]], list[dict[str, Any]]]:
    """Ids already written (kept or dropped) by an earlier run; a torn last line is cut off."""
    done: set[str] = set()
    kept: list[dict[str, Any]] = []
    dropped: list[dict[str, Any]] = []
    for path, bucket in ((out_path, kept), (_dropped_path(out_path), dropped)):
        if not path.exists():
            continue
        rows, good_bytes = whole_json_lines(path)  # a line cut by a crash: everything after it is rewritten
        for data in rows:
            done.add(str(data["id"]))
            bucket.append(data)
        if good_bytes < path.stat().st_size:
            try:
                os.truncate(path, good_bytes)
            except OSError as err:
                raise OutputError(path, err) from None
            log.warning("%s: cut a partial last line left by an interrupted run", path)
    return done, kept, dropped


def _drop_stale(out_path: Path, digests: dict[str, str]) -> set[str]:
    """Ids finished by an earlier run on the *same* input; outputs of records that changed or left
    the input since are removed (atomic rewrite), so a resumed run equals a fresh one."""
    done, kept, dropped = _load_done(out_path)

    def fresh(data: dict[str, Any], digest: str | None) -> bool:
        return digests.get(str(data["id"])) is not None and digest == digests.get(str(data["id"]))

    keep_kept = [d for d in kept if fresh(d, ((d.get("meta") or {}).get("translation") or {}).get("input_digest"))]
    keep_dropped = [d for d in dropped if fresh(d, d.get("input_digest"))]
    if len(keep_kept) != len(kept) or len(keep_dropped) != len(dropped):
        log.warning("%s: %d finished records came from a different input and are redone", out_path,
                    len(kept) + len(dropped) - len(keep_kept) - len(keep_dropped))
        for path, rows in ((out_path, keep_kept), (_dropped_path(out_path), keep_dropped)):
            if path.exists():
                _write_json_lines(path, rows)
    return {str(d["id"]) for d in keep_kept + keep_dropped}


def _drop_earlier_translations(out_path: Path) -> int:
    """With no route installed, a fresh run translates nothing: the records an earlier run
    translated (or dropped) with a route that is no longer installed are removed, so a resumed run
    still equals a fresh one and the build is what its one line says (the native records alone).
    Returns how many were removed."""
    _, kept, dropped = _load_done(out_path)
    native = [d for d in kept if ((d.get("meta") or {}).get("translation") or {}).get("skipped")]
    removed = len(kept) - len(native) + len(dropped)
    if removed:
        log.warning("%s: %d records translated by an earlier run with a route that is no longer installed are removed",
                    out_path, removed)
        _write_json_lines(out_path, native)
        if _dropped_path(out_path).exists():
            _write_json_lines(_dropped_path(out_path), [])
    return removed


def _write_json_lines(path: Path, rows: list[dict[str, Any]]) -> None:
    write_text_atomic(path, "".join(srsly.json_dumps(row) + "\n" for row in rows))



def translate_file(in_path: str | Path, out_path: str | Path, options: TranslateOptions) -> dict[str, Any]:
    """Translate (or pass through) every record of in_path into out_path, resuming if out_path exists.

    Records already in the target language (native synthetic notes of a mixed build) pass through.
    A record that raises anything but an engine error (ENGINE_ERRORS) stops the stage with
    RecordFailed (record id and exception type, never text); the records before it stay written."""
    opts = options
    source, target = opts.source, opts.target
    in_path, out_path = Path(in_path), Path(out_path)
    records = list(read_records(in_path))  # raises FileNotFoundError naming in_path
    for lineno, rec in enumerate(records, start=1):
        if "placeholders" not in rec.meta and source != target:
            raise RecordError(f"{in_path}:{lineno}: record {rec.id!r} has no placeholders; run `factory placeholder` first")
        if rec.lang and rec.lang not in (source, target):
            raise RecordError(f"{in_path}:{lineno}: record {rec.id!r} is in {rec.lang!r}, not the source language {source!r}")
    try:
        out_path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise OutputError(out_path, err) from None
    done = _drop_stale(out_path, {r.id: input_digest(r) for r in records})
    todo = [r for r in records if r.id not in done]
    done_count = len(done)
    if opts.limit is not None:
        todo = todo[:opts.limit]
    report: dict[str, Any] = {"stage": "translate", "input": str(in_path), "output": str(out_path), "source": source, "target": target}

    if source == target:
        native, todo = todo, []
        report["translation"] = "skipped (source == target)"
    else:
        if opts.skipped_at_extract:
            report["translation"] = f"skipped at extract: {opts.skipped_at_extract}"
        native = [r for r in todo if r.lang == target]
        todo = [r for r in todo if r.lang != target]
        report["native_passed_through"] = len(native)
    cluster = ClusterOptions(opts.workers, opts.scheduler)
    with no_network(opts.allow_network, cluster.network_hosts()):
        if native:
            with _open_append(out_path) as handle:
                for rec in native:
                    meta = without_placeholder_text(rec.meta)
                    meta["translation"] = {"input_digest": input_digest(rec), "route": [target], "skipped": True,
                                           "reason": "already in the target language"}
                    append_record(handle, Record(rec.id, target, rec.text, rec.spans, meta))
        if todo:
            # workers share the cores; one thread each avoids oversubscription
            intra = 1 if cluster.uses_dask else None
            try:
                argos = ArgosRoute.open(source, target, opts.packages_dir, opts.argos_dir, opts.device, opts.beam_size, opts.pivot,
                                        install=True, intra_threads=intra, download=opts.download)
            except RouteMissing as err:
                if opts.if_no_route == "fail":
                    raise
                report["translation"] = "skipped (no route installed)"
                earlier = _drop_earlier_translations(out_path)
                done_count -= earlier
                report["skipped_no_route"] = len(todo) + earlier
                if earlier:
                    report["removed_earlier_translations"] = earlier
                report["no_route"] = str(err)
                todo = []
        if todo:
            route = argos.route
            report["route"] = route
            calibrated = _calibrated_route(records)
            if calibrated is not None:
                report["inventory_calibrated_route"] = calibrated
                if calibrated != route:
                    log.warning("placeholder inventory was calibrated for %s, this run uses %s: run `factory calibrate`",
                                " -> ".join(calibrated), " -> ".join(route))
            _run_shards(todo, out_path, argos, opts, cluster, {
                "source": source, "target": target, "argos_dir": str(opts.argos_dir) if opts.argos_dir else None,
                "device": opts.device, "beam_size": opts.beam_size, "pivot": opts.pivot, "intra_threads": intra,
                "allow_network": opts.allow_network, "cluster_hosts": sorted(cluster.network_hosts()),
            })
    report.update(_summarise(out_path, len(records), done_count))
    max_drop_rate = opts.max_drop_rate
    if max_drop_rate is not None:
        report["max_drop_rate"] = max_drop_rate
    if opts.report_path:
        write_json_atomic(opts.report_path, report)
    if max_drop_rate is not None and report["drop_rate"] > max_drop_rate:
        raise DropRateExceeded(
            f"{report['dropped']} records dropped, drop rate {report['drop_rate']:.4f} above --max-drop-rate "
            f"{max_drop_rate} (reasons {report['dropped_by_reason']}; ids in {_dropped_path(out_path)})")
    return report


def _open_append(path: Path):
    """Open an output for appending whole lines (records.append_line); failures name the file."""
    try:
        return path.open("a", encoding="utf-8")
    except OSError as err:
        raise OutputError(path, err) from None


def _run_shards(todo: list[Record], out_path: Path, argos: ArgosRoute, opts: TranslateOptions, cluster: ClusterOptions,
                config: dict[str, Any]) -> None:
    """Translate `todo` shard by shard (in this process, or on the Dask cluster) and append every
    result in input order as its shard commits."""
    from tqdm import tqdm

    bar = tqdm(total=len(todo), unit="rec", desc=f"translate {' -> '.join(argos.route)}", disable=not opts.progress, leave=True)
    with _open_append(out_path) as out_handle, _open_append(_dropped_path(out_path)) as drop_handle:

        def commit(shard: Shard, outcome: dict[str, Any]) -> None:
            for result in outcome["results"]:
                if result["status"] == "dropped":
                    entry = {k: result[k] for k in ("id", "input_digest", "reason", "attempts", "terms", "first_problems")}
                    append_line(drop_handle, srsly.json_dumps(entry))
                    log.info("record %s dropped: %s", result["id"], result["reason"])
                else:
                    append_record(out_handle, Record.from_dict(result["record"]))
            bar.update(len(outcome["results"]))
            if outcome["failed"]:
                raise RecordFailed(*outcome["failed"])

        task = ShardTask("translate", _worker_setup, _translate_shard, config)
        try:
            run_shards(task, shards_of((r.to_dict() for r in todo), RECORDS_PER_SHARD), commit, cluster, state=argos)
        finally:
            bar.close()


def _summarise(out_path: Path, total: int, resumed: int) -> dict[str, Any]:
    _, kept, dropped = _load_done(out_path)
    methods = Counter(((r.get("meta") or {}).get("translation") or {}).get("method", "skipped") for r in kept)
    reasons = Counter(d["reason"] for d in dropped)
    translated = sum(n for m, n in methods.items() if m != "skipped") + len(dropped)  # not the passed-through ones
    terms = sum(len(((r.get("meta") or {}).get("placeholders") or {}).get("terms") or {}) for r in kept) + sum(d.get("terms", 0) for d in dropped)
    first_bad = sum(((r.get("meta") or {}).get("translation") or {}).get("first_attempt_problem_terms") or 0 for r in kept)
    first_bad += sum(d.get("first_problems", 0) for d in dropped)
    return {
        "records_in": total,
        "resumed_from": resumed,
        # translated: sent to Argos and written (whole or repaired); passed_through: already in the target
        "translated": sum(n for m, n in methods.items() if m != "skipped"),
        "passed_through": methods.get("skipped", 0),
        "kept": methods.get("record", 0) + methods.get("skipped", 0),
        "repaired": sum(n for m, n in methods.items() if m not in ("record", "skipped")),
        "repaired_by": {m: n for m, n in methods.items() if m not in ("record", "skipped")},
        "dropped": sum(reasons.values()),
        "dropped_by_reason": dict(reasons),
        "drop_rate": round(len(dropped) / translated, 4) if translated else 0.0,
        "placeholders": terms,
        "placeholder_survival_first_attempt": round(1 - first_bad / terms, 4) if terms else 1.0,
    }


def translate_command(
    in_path: Path = typer.Argument(..., help="Placeholder records (JSONL) from `factory placeholder`"),
    out_path: Path = typer.Argument(..., help="Translated records (JSONL); an existing file is resumed"),
    build: Path | None = typer.Option(None, "--build", help="The build decision written by `factory extract --build` "
                                      "(gives --source-lang, --lang and --if-no-route)"),
    source_lang: str | None = typer.Option(None, "--source-lang", help="Language of the source records (default: --lang: pass-through, no Argos)"),
    lang: str | None = typer.Option(None, "--lang", help="Language of the build: the translation's target"),
    packages_dir: Path | None = typer.Option(None, help="Folder of .argosmodel files to install first"),
    workers: int = typer.Option(1, help="Translation worker processes: more than 1 starts a local Dask cluster"),
    scheduler: str | None = typer.Option(None, help="Address of a running Dask scheduler (tcp://host:8786): translate on its workers"),
    device: str = typer.Option("cpu", help="cpu or cuda (ARGOS_DEVICE_TYPE)"),
    report: Path | None = typer.Option(None, help="Write the stage report (JSON) here"),
    argos_dir: Path | None = typer.Option(None, help="Where Argos installs packages (ARGOS_PACKAGES_DIR)"),
    beam_size: int | None = typer.Option(None, help="Beam size (ARGOS_BEAM_SIZE; Argos default 4)"),
    pivot: str | None = typer.Option(None, help="Pivot language (default: pivot_lang of languages/<lang>/locale.yml)"),
    progress: bool = typer.Option(True, help="Show a progress bar (records/s)"),
    allow_network: bool = typer.Option(False, help="Lift the socket guard (not needed, not recommended)"),
    limit: int | None = typer.Option(None, help="Translate at most N more records, then stop (resume later)"),
    download: bool = typer.Option(False, help="If no route is installed, download it from the Argos index"),
    if_no_route: str | None = typer.Option(None, "--if-no-route", help="fail (default), or skip: build on the records already in --lang"),
    max_drop_rate: float = typer.Option(DEFAULT_MAX_DROP_RATE, "--max-drop-rate", min=0.0, max=1.0,
                                        help="Fail (exit 1, after writing the output and the report) when more than "
                                             "this share of the translated records is dropped; 1 never fails"),
) -> None:
    """Translate placeholder records offline with Argos (direct route or pivot), resumable.

    Only translation-engine errors drop a record; any other error stops the stage with one line
    naming the record id (exit 1), keeping what was written: fix it and run again to resume."""
    from .build_decision import read_build

    try:
        decision = read_build(build)
        skipped_at_extract = None
        if decision is not None:
            if source_lang or lang or if_no_route:
                raise typer.BadParameter("give --build or --source-lang/--lang/--if-no-route, not both", param_hint="--build")
            source_lang, lang, if_no_route = decision.source_lang, decision.lang, decision.if_no_route
            if decision.translation_skipped:
                skipped_at_extract = f"no Argos route {decision.source_lang} -> {decision.lang}"
        if not lang:
            raise typer.BadParameter("give --build, or the language to translate into (--lang)", param_hint="--lang")
        source_lang = source_lang or lang
        options = TranslateOptions(
            source_lang, lang, packages_dir=packages_dir, workers=workers, device=device, report_path=report, argos_dir=argos_dir,
            beam_size=beam_size, pivot=pivot, progress=progress, allow_network=allow_network, limit=limit, download=download,
            if_no_route=if_no_route or "fail", max_drop_rate=max_drop_rate, scheduler=scheduler,
            skipped_at_extract=skipped_at_extract)
        result = translate_file(in_path, out_path, options)
    except KeyboardInterrupt:
        typer.echo(f"interrupted: finished records are in {out_path}; run the same command again to resume", err=True)
        raise typer.Exit(130) from None
    except (RouteMissing, FileNotFoundError, RecordError, ValueError, RuntimeError) as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(1) from None
    if result.get("skipped_no_route"):
        # one line: what was skipped and how to add translation (the route message names the packages)
        written = result["kept"] + result["repaired"]
        typer.echo(f"translation skipped: {result['skipped_no_route']} {source_lang} records not used, the build goes on with "
                   f"the {written} native {lang} records. To add them: {result['no_route']} "
                   f"Then run it again.", err=True)
        if not written:
            typer.echo(f"error: no records left to build {lang} from (no Argos route and no corpora/synth/{lang}/)", err=True)
            raise typer.Exit(1)
    if source_lang == lang:
        typer.echo(f"translate {source_lang} -> {lang}: nothing to translate, {result['passed_through']} records passed through "
                   f"({result['resumed_from']} already done)")
        return
    why = f"; translation skipped at extract ({skipped_at_extract})" if skipped_at_extract else ""
    typer.echo(
        f"translate {source_lang} -> {lang}: {result['translated']} translated"
        + (f" ({result['repaired']} of them repaired {result['repaired_by']})" if result["repaired"] else "")
        + f", {result['dropped']} dropped {result['dropped_by_reason']}, "
        f"{result['passed_through']} passed through (already in {lang}) of {result['records_in']} records "
        f"({result['resumed_from']} already done){why}"
    )
