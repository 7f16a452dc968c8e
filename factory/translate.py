"""Offline translation of placeholder records with Argos Translate (stage 5).

* Packages come from local `.argosmodel` files (`--packages-dir`, one folder per language project;
  the spaCy project lists them as assets with URL and checksum for machines that are online).
  Nothing is ever downloaded here, and a socket guard refuses any connection while the stage runs.
* Route: the direct package when installed, otherwise source -> pivot -> target (pivot from
  languages/<target>/locale.yml, English by default, as the thesis did es -> en -> fr). The pivot
  text is kept in the record.
* Every placeholder must come back exactly. A record that loses one is retried sentence by sentence,
  then clause by clause, and dropped with a reason only if that fails too.
* Records are translated by worker processes with a bounded queue, written in input order and
  appended one by one (flush + fsync): a crash or Ctrl-C loses nothing and a re-run resumes.
* source == target: records pass through unchanged and Argos is not even imported.

Argos is imported lazily so the rest of the factory works without it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import socket
import zipfile
from collections import Counter, deque
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

import srsly
import typer
import yaml

from . import PROJECT_ROOT
from .locale import Locale
from .placeholders import _write_json, find_placeholders
from .records import OutputError, Record, RecordError, append_line, append_record, read_records, write_text_atomic

log = logging.getLogger(__name__)

_MARKER = ".deid_factory_sha256"  # written into each package we install, to detect a changed file


class RouteMissing(RuntimeError):
    """No installed Argos route from source to target; the message says what to install and how."""


class NetworkBlocked(OSError):
    """Raised by the socket guard: this stage never talks to the network."""


# The errors the translation engine raises for a text it cannot translate: CTranslate2 is C++ bound
# with pybind11, which turns std::runtime_error (input longer than the model's positions, CUDA out of
# memory...) into RuntimeError, std::invalid_argument / length_error / domain_error into ValueError
# and std::out_of_range into IndexError; SentencePiece raises RuntimeError, Argos and its sentence
# splitters (spaCy, Stanza, MiniSBD) ValueError or RuntimeError. Only these make a record "dropped"
# (after the sentence and clause retries); anything else (TypeError, AttributeError, KeyError,
# NetworkBlocked...) is a programming or set-up error and stops the stage naming the record id.
ENGINE_ERRORS: tuple[type[BaseException], ...] = (RuntimeError, ValueError, IndexError)
# Subclasses of RuntimeError that are never a bad translation.
_NOT_ENGINE_ERRORS: tuple[type[BaseException], ...] = (NotImplementedError, RecursionError)

DEFAULT_MAX_DROP_RATE = 0.05  # `factory translate --max-drop-rate`: share of translated records that may be dropped


def is_engine_error(err: BaseException) -> bool:
    """True for an error of the translation engine on one text (see ENGINE_ERRORS)."""
    return isinstance(err, ENGINE_ERRORS) and not isinstance(err, _NOT_ENGINE_ERRORS)


class RecordFailed(RuntimeError):
    """A record raised something that is not an engine error: the stage stops. The message names the
    record id and the exception type only, never the text (PHI); what was written stays written."""

    def __init__(self, record_id: str, error: str):
        super().__init__(f"record {record_id}: {error}")
        self.record_id = record_id
        self.error = error

    def __reduce__(self):  # picklable across worker processes
        return (RecordFailed, (self.record_id, self.error))


class DropRateExceeded(RuntimeError):
    """More than --max-drop-rate of the translated records were dropped (raised after the report is written)."""


# ----------------------------------------------------------------------------- network guard
@contextmanager
def no_network(allow: bool = False) -> Iterator[None]:
    """Refuse every outgoing connection (and name lookup) while the block runs.

    Argos and its helpers (minisbd, spaCy model download) try the network in a few places when
    something is missing; under this guard they fail at once instead of sending anything."""
    if allow:
        yield
        return
    saved = _socket_functions()
    _GUARDS.append(saved)
    _set_socket_functions((_refuse, _refuse, _refuse, _refuse))
    try:
        yield
    finally:
        _GUARDS.pop()
        _set_socket_functions(saved)


_GUARDS: list[tuple] = []  # socket functions active before each guard (innermost last)


def _refuse(*_args, **_kwargs):
    raise NetworkBlocked("network access is disabled in the translate stage (deid_factory)")


def _socket_functions() -> tuple:
    return (socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo, socket.create_connection)


def _set_socket_functions(funcs: tuple) -> None:
    socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo, socket.create_connection = funcs  # type: ignore[method-assign]


@contextmanager
def network_allowed() -> Iterator[None]:
    """Lift the innermost guard for an explicitly requested download (--download), then restore it."""
    if not _GUARDS:
        yield
        return
    current = _socket_functions()
    _set_socket_functions(_GUARDS[-1])
    try:
        yield
    finally:
        _set_socket_functions(current)


# ----------------------------------------------------------------------------- Argos set-up
def _package_members(path: Path) -> tuple[dict[str, Any], set[str]]:
    """metadata.json and top-level folder names inside an .argosmodel zip."""
    with zipfile.ZipFile(path) as zf:
        names = zf.namelist()
        meta_name = next((n for n in names if n.count("/") == 1 and n.endswith("/metadata.json")), None)
        if meta_name is None:
            raise ValueError(f"{path}: not an Argos package (no <root>/metadata.json)")
        metadata = json.loads(zf.read(meta_name).decode("utf-8"))
        metadata["_root"] = meta_name.split("/")[0]
        dirs = {n.split("/")[1] for n in names if n.count("/") >= 2}
    return metadata, dirs


def package_files(packages_dir: str | Path | None) -> list[Path]:
    if not packages_dir:
        return []
    packages_dir = Path(packages_dir)
    if not packages_dir.is_dir():
        raise FileNotFoundError(f"packages directory not found: {packages_dir}")
    return sorted(packages_dir.glob("*.argosmodel"))


def _auto_chunk_type(packages_dir, argos_dir) -> str | None:
    """SPACY when every package at hand carries its own spaCy sentence splitter and none a Stanza or
    MiniSBD one: Argos' default splitter would otherwise try to download a MiniSBD model."""
    sbd: list[set[str]] = []
    for path in package_files(packages_dir):
        sbd.append(_package_members(path)[1] & {"spacy", "stanza", "minisbd"})
    if argos_dir and Path(argos_dir).is_dir():
        for pkg in Path(argos_dir).iterdir():
            if (pkg / "metadata.json").exists():
                sbd.append({p.name for p in pkg.iterdir() if p.name in ("spacy", "stanza", "minisbd")})
    if sbd and all(s == {"spacy"} for s in sbd):
        return "SPACY"
    return None


def configure_argos(
    packages_dir: str | Path | None = None,
    argos_dir: str | Path | None = None,
    device: str = "cpu",
    beam_size: int | None = None,
    intra_threads: int | None = None,
    compute_type: str | None = None,
) -> None:
    """Point Argos at its settings before (or, for what it re-reads, after) it is imported.

    argos_dir: where packages are installed (ARGOS_PACKAGES_DIR); default: Argos' own folder.
    compute_type: CTranslate2's (float32, int8, ...); default Argos' "auto" (int8 on most CPUs)."""
    if device not in ("cpu", "cuda"):
        raise ValueError(f"device must be cpu or cuda, not {device!r}")
    env = {"ARGOS_DEVICE_TYPE": device}
    if argos_dir:
        Path(argos_dir).mkdir(parents=True, exist_ok=True)
        env["ARGOS_PACKAGES_DIR"] = str(Path(argos_dir).resolve())
    if beam_size:
        env["ARGOS_BEAM_SIZE"] = str(beam_size)
    if intra_threads is not None:
        env["ARGOS_INTRA_THREADS"] = str(intra_threads)
    if compute_type:
        env["ARGOS_COMPUTE_TYPE"] = compute_type
    if "ARGOS_CHUNK_TYPE" not in os.environ:
        chunk = _auto_chunk_type(packages_dir, argos_dir)
        if chunk:
            env["ARGOS_CHUNK_TYPE"] = chunk
    os.environ.update(env)
    import sys

    if "argostranslate.settings" in sys.modules:  # already imported: update what it reads at call time
        settings = sys.modules["argostranslate.settings"]
        settings.device = device
        if beam_size:
            settings.beam_size = int(beam_size)
        if intra_threads is not None:
            settings.intra_threads = int(intra_threads)
        if compute_type:
            settings.compute_type = compute_type
        if os.environ.get("ARGOS_CHUNK_TYPE") in settings.chunk_type_mapping:
            settings.chunk_type = settings.chunk_type_mapping[os.environ["ARGOS_CHUNK_TYPE"]]
        if argos_dir:
            settings.package_data_dir = Path(env["ARGOS_PACKAGES_DIR"])
            settings.package_dirs = [settings.package_data_dir]
        _clear_argos_caches()


def _clear_argos_caches() -> None:
    import sys

    tr = sys.modules.get("argostranslate.translate")
    if tr is not None:
        tr.get_installed_languages.cache_clear()
        tr.installed_translates.clear()


def _import_argos():
    """Import argostranslate with its one download-at-import (the spaCy xx model) turned off."""
    try:
        from argostranslate import networking, settings  # noqa: F401
    except ImportError:
        raise RouteMissing("Argos Translate is not installed: install the translate extra "
                           "(pip install 'deid-factory[translate]')") from None

    def offline_cache_spacy():  # the original downloads xx_sent_ud_sm when not cached
        cached = Path(settings.cache_dir) / "spacy"
        return cached if (cached / "senter" / "model").exists() else None

    networking.cache_spacy = offline_cache_spacy
    from argostranslate import package, translate, utils

    if not settings.debug:
        # Argos logs every paragraph it translates at INFO level; clinical text stays out of logs.
        utils.logger.setLevel(logging.WARNING)
    return package, translate


def import_argos_with(env: dict[str, str]):
    """Import argostranslate with the environment variables `env` set for the import only (Argos
    reads its data/config/cache folders once, at import: tests and benchmarks point them at a temp
    folder so nothing lands in the user's home), then give the process its own values back."""
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        return _import_argos()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def install_packages(packages_dir: str | Path | None) -> list[str]:
    """Install every .argosmodel of packages_dir that is not installed yet (or changed); return pair names."""
    files = package_files(packages_dir)
    if not files:
        return []
    package, _ = _import_argos()
    from argostranslate import settings

    installed: list[str] = []
    for path in files:
        metadata, _ = _package_members(path)
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        pair = f"{metadata.get('from_code')}-{metadata.get('to_code')}"
        target_dir = Path(settings.package_data_dir) / metadata["_root"]
        marker = target_dir / _MARKER
        if marker.exists() and marker.read_text().strip() == digest:
            continue
        # Another package of the same pair (an older or different file) would shadow this one.
        for pkg in package.get_installed_packages():
            if (pkg.from_code, pkg.to_code) == (metadata.get("from_code"), metadata.get("to_code")):
                package.uninstall(pkg)
        package.install_from_path(path)
        marker.write_text(digest + "\n")
        installed.append(pair)
        log.info("installed Argos package %s from %s", pair, path.name)
    _clear_argos_caches()
    return installed


def download_route(source: str, target: str, pivot: str) -> list[str]:
    """Only when asked (--download): fetch the Argos index and install the direct package, or the
    two pivot packages. This is the one place that opens a connection; no text is ever sent."""
    package, _ = _import_argos()
    from argostranslate import settings

    with network_allowed():
        package.update_package_index()  # logs and returns on failure
    if not Path(settings.local_package_index).exists():
        raise RouteMissing(f"--download: could not fetch the Argos package index ({settings.remote_package_index}); is this machine online?")
    available = {(p.from_code, p.to_code): p for p in package.get_available_packages()}
    wanted = [(source, target)] if (source, target) in available else [(source, pivot), (pivot, target)]
    installed = []
    for pair in wanted:
        if pair not in available:
            raise RouteMissing(f"--download: the Argos index has no package translate-{pair[0]}_{pair[1]}")
        try:
            with network_allowed():
                path = available[pair].download()
        except Exception as err:  # Argos raises a bare Exception("Download failed ..."), urllib an OSError
            if type(err) is not Exception and not isinstance(err, OSError):
                raise  # anything else is a programming error: not turned into "route missing"
            raise RouteMissing(f"--download: could not download translate-{pair[0]}_{pair[1]} ({type(err).__name__})") from None
        package.install_from_path(path)
        installed.append(f"{pair[0]}-{pair[1]}")
    _clear_argos_caches()
    return installed


def pivot_of(target: str) -> str:
    """The pivot language of the route to `target` (pivot_lang of its locale.yml; English when the
    locale has none or is not in the project)."""
    locale = Locale.find(target, root=PROJECT_ROOT)
    return str(locale.raw.get("pivot_lang") or "en") if locale is not None else "en"


def missing_route_message(source: str, target: str, pivot: str, pairs: set[tuple[str, str]], packages_dir) -> str:
    needed = [(source, target)] if source == pivot or target == pivot else [(source, pivot), (pivot, target)]
    missing = [f"translate-{a}_{b}" for a, b in needed if (a, b) not in pairs]
    where = f" (none found in {packages_dir})" if packages_dir else ""
    return (
        f"no Argos route {source} -> {target}: install translate-{source}_{target}, or the pivot pair "
        f"{' + '.join(missing) or f'translate-{source}_{pivot} + translate-{pivot}_{target}'}{where}. "
        f"Put the .argosmodel files in a folder and pass --packages-dir FOLDER "
        f"(`spacy project assets languages/{target}` fetches them on a machine that is online, "
        f"or `argospm install translate-{source}_{pivot}`, or pass --download on a machine that is online); "
        f"without --download this command never downloads anything."
    )


class ArgosRoute:
    """The installed route source -> [pivot ->] target, as a list of Argos translations (hops)."""

    def __init__(self, route: list[str], hops: list[Any]):
        self.route = route
        self.hops = hops

    @classmethod
    def open(
        cls,
        source: str,
        target: str,
        packages_dir: str | Path | None = None,
        argos_dir: str | Path | None = None,
        device: str = "cpu",
        beam_size: int | None = None,
        pivot: str | None = None,
        install: bool = True,
        intra_threads: int | None = None,
        download: bool = False,
        compute_type: str | None = None,
    ) -> "ArgosRoute":
        if device == "cuda":  # checked before any setting changes, so a failed call leaves Argos as it was
            import ctranslate2

            if ctranslate2.get_cuda_device_count() == 0:
                raise RuntimeError("--device cuda was asked but CTranslate2 sees no CUDA device")
        configure_argos(packages_dir, argos_dir, device, beam_size, intra_threads, compute_type)
        package, translate = _import_argos()
        if install:
            install_packages(packages_dir)
        pairs = {(p.from_code, p.to_code) for p in package.get_installed_packages() if getattr(p, "type", "translate") == "translate"}
        pivot = pivot or pivot_of(target)
        direct_or_pivot = (source, target) in pairs or {(source, pivot), (pivot, target)} <= pairs
        if not direct_or_pivot and download:
            download_route(source, target, pivot)
            pairs = {(p.from_code, p.to_code) for p in package.get_installed_packages() if getattr(p, "type", "translate") == "translate"}
        if (source, target) in pairs:
            route = [source, target]
        elif (source, pivot) in pairs and (pivot, target) in pairs:
            route = [source, pivot, target]
        else:
            raise RouteMissing(missing_route_message(source, target, pivot, pairs, packages_dir))
        languages = {lang.code: lang for lang in translate.get_installed_languages()}
        hops = []
        for a, b in zip(route, route[1:]):
            hop = languages[a].get_translation(languages[b])
            if hop is None:  # pragma: no cover - pairs said it was installed
                raise RouteMissing(missing_route_message(source, target, pivot, pairs, packages_dir))
            hops.append(hop)
        return cls(route, hops)

    def translate_hops(self, text: str) -> list[str]:
        """Translate through each hop; return the text after every hop (pivot..., target)."""
        outputs = []
        for hop in self.hops:
            text = hop.translate(text)
            outputs.append(text)
        return outputs

    def translate_text(self, text: str) -> str:
        return self.translate_hops(text)[-1]


# ----------------------------------------------------------------------------- chunking for repair
_SENTENCE_END = re.compile(r"(?<=[.!?…])[\"'»”)\]]*\s+|\n+")
_CLAUSE_END = re.compile(r"(?<=[.!?…,;:])[\"'»”)\]]*\s+|\n+")


def split_chunks(text: str, level: str) -> list[tuple[str, str]]:
    """Split text into (chunk, following separator) pairs whose concatenation is the text."""
    if level == "record":
        return [(text, "")]
    pattern = _SENTENCE_END if level == "sentence" else _CLAUSE_END
    result: list[tuple[str, str]] = []
    cursor = 0
    for m in pattern.finditer(text):
        if m.start() > cursor:
            result.append((text[cursor : m.start()], m.group()))
        elif result:
            result[-1] = (result[-1][0], result[-1][1] + m.group())
        cursor = m.end()
    if cursor < len(text) or not result:
        result.append((text[cursor:], ""))
    return result


LEVELS = ("record", "sentence", "clause")


def translate_record(record: Record, hops: Callable[[str], list[str]], route: list[str], target: str) -> dict[str, Any]:
    """Translate one placeholder record; return {"status": kept|repaired|dropped, "record"?, "reason"?, ...}.

    `hops(text)` returns the text after each hop of the route. Only ids and reasons are reported."""
    terms = (record.meta.get("placeholders") or {}).get("terms") or {}
    attempts: list[dict[str, Any]] = []
    first_problems = None
    for level in LEVELS:
        chunks = split_chunks(record.text, level)
        if level != "record" and len(chunks) <= 1 and attempts and attempts[-1]["chunks"] <= 1:
            continue  # same single chunk as the previous level: retrying changes nothing
        per_hop: list[list[str]] = [[] for _ in range(len(route) - 1)]
        failed = None
        for chunk, sep in chunks:
            try:
                outs = hops(chunk) if chunk.strip() else [chunk] * (len(route) - 1)
            except ENGINE_ERRORS as err:  # the engine could not translate this text: retried / dropped
                if not is_engine_error(err):
                    raise
                failed = err
                break
            for i, out in enumerate(outs):
                per_hop[i].append(out + sep)
        if failed is not None:
            attempts.append({"level": level, "chunks": len(chunks), "problem": f"error:{type(failed).__name__}"})
            continue
        texts = ["".join(parts) for parts in per_hop]
        problems: dict[str, str] = {}
        stage = "target"
        for hop_index, hop_text in enumerate(texts):
            spans, problems = find_placeholders(hop_text, terms)
            if problems:
                stage = "pivot" if hop_index < len(texts) - 1 else "target"
                break
        if first_problems is None:
            first_problems = len(problems)
        if not problems and not texts[-1].strip() and record.text.strip():
            problems = {"": "empty"}
        if not problems:
            meta = dict(record.meta)
            meta.pop("placeholder_text", None)
            meta["source_text"] = record.text
            meta["source_lang"] = record.lang
            if len(texts) > 1:
                meta["pivot_text"] = texts[0]
                meta["pivot_lang"] = route[1]
            meta["translation"] = {
                "input_digest": input_digest(record),
                "route": route,
                "method": level,
                "attempts": attempts,
                "first_attempt_problem_terms": first_problems,
            }
            out = Record(record.id, target, texts[-1], spans, meta)
            return {"status": "kept" if level == "record" else "repaired", "method": level, "record": out.to_dict(), "terms": len(terms), "first_problems": first_problems}
        reason = sorted(Counter(problems.values()).items(), key=lambda kv: (-kv[1], kv[0]))[0][0]
        attempts.append({"level": level, "chunks": len(chunks), "problem": reason, "stage": stage, "terms_affected": len(problems)})
    last = attempts[-1] if attempts else {"problem": "empty"}
    reason = last["problem"]
    if last.get("stage") == "pivot":
        reason = f"{reason}_at_pivot"
    return {"status": "dropped", "id": record.id, "input_digest": input_digest(record), "reason": reason, "attempts": attempts, "terms": len(terms), "first_problems": first_problems if first_problems is not None else len(terms)}


# ----------------------------------------------------------------------------- workers
_WORKER: dict[str, Any] = {}


def _worker_init(config: dict[str, Any]) -> None:
    guard = no_network(config.get("allow_network", False))
    guard.__enter__()  # for the life of the worker process
    _WORKER["guard"] = guard
    route = ArgosRoute.open(
        config["source"], config["target"], None, config.get("argos_dir"), config["device"], config.get("beam_size"),
        config.get("pivot"), install=False, intra_threads=config.get("intra_threads"),
    )
    _WORKER["route"] = route
    _WORKER["target"] = config["target"]


def _worker_translate(data: dict[str, Any]) -> dict[str, Any]:
    route: ArgosRoute = _WORKER["route"]
    record = Record.from_dict(data)
    return translate_record(record, route.translate_hops, route.route, _WORKER["target"])


# ----------------------------------------------------------------------------- the stage
def input_digest(record: Record) -> str:
    """Fingerprint of an input record: a resumed run redoes records whose input changed since."""
    return hashlib.sha1(srsly.json_dumps(record.to_dict(), sort_keys=True).encode("utf-8")).hexdigest()[:16]


def _calibrated_route(records: list[Record]) -> list[str] | None:
    """The route the records' placeholder inventory was calibrated on (None: not calibrated)."""
    for rec in records[:1]:
        name = ((rec.meta.get("placeholders") or {}).get("inventory")) or ""
        path = Path(name) if Path(name).is_absolute() else PROJECT_ROOT / name
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
        good_bytes = 0
        with path.open("rb") as handle:
            for raw in handle:
                try:
                    data = json.loads(raw.decode("utf-8"))
                    if not raw.endswith(b"\n"):
                        raise ValueError("torn line")
                except ValueError:
                    break  # a line cut by a crash: everything after it is rewritten
                good_bytes += len(raw)
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


def _write_json_lines(path: Path, rows: list[dict[str, Any]]) -> None:
    write_text_atomic(path, "".join(srsly.json_dumps(row) + "\n" for row in rows))


def translate_file(
    in_path: str | Path,
    out_path: str | Path,
    source: str,
    target: str,
    packages_dir: str | Path | None = None,
    workers: int = 1,
    device: str = "cpu",
    report_path: str | Path | None = None,
    argos_dir: str | Path | None = None,
    beam_size: int | None = None,
    pivot: str | None = None,
    progress: bool = True,
    allow_network: bool = False,
    limit: int | None = None,
    download: bool = False,
    if_no_route: str = "fail",
    max_drop_rate: float | None = None,
) -> dict[str, Any]:
    """Translate (or pass through) every record of in_path into out_path, resuming if out_path exists.

    Records already in the target language (native synthetic notes of a mixed build) pass through.
    download: only then, when no route is installed, fetch the packages from the Argos index.
    if_no_route: "fail" (RouteMissing) or "skip": without an installed route the records to
    translate are left out (counted, with the one-line reason in the report) and the records
    already in the target language are still written.
    max_drop_rate: when given, DropRateExceeded is raised (after the output and the report are
    written) if more than this share of the translated records were dropped (`drop_rate` in the
    report; records passed through unchanged do not count).
    A record that raises anything but an engine error (ENGINE_ERRORS) stops the stage with
    RecordFailed (record id and exception type, never text); the records before it stay written."""
    if if_no_route not in ("fail", "skip"):
        raise ValueError(f"if_no_route must be fail or skip, not {if_no_route!r}")
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
    if limit is not None:
        todo = todo[:limit]
    report: dict[str, Any] = {"stage": "translate", "input": str(in_path), "output": str(out_path), "source": source, "target": target}

    if source == target:
        native, todo = todo, []
        report["translation"] = "skipped (source == target)"
    else:
        native = [r for r in todo if r.lang == target]
        todo = [r for r in todo if r.lang != target]
        report["native_passed_through"] = len(native)
    with no_network(allow_network):
        if native:
            with _open_append(out_path) as handle:
                for rec in native:
                    meta = dict(rec.meta)
                    meta.pop("placeholder_text", None)
                    meta["translation"] = {"input_digest": input_digest(rec), "route": [target], "skipped": True,
                                           "reason": "already in the target language"}
                    append_record(handle, Record(rec.id, target, rec.text, rec.spans, meta))
        if todo:
            intra = 1 if workers > 1 else None  # workers share the cores; one thread each avoids oversubscription
            try:
                argos = ArgosRoute.open(source, target, packages_dir, argos_dir, device, beam_size, pivot, install=True,
                                        intra_threads=intra, download=download)
            except RouteMissing as err:
                if if_no_route == "fail":
                    raise
                report["translation"] = "skipped (no route installed)"
                report["skipped_no_route"] = len(todo)
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
            _run_workers(todo, out_path, argos, target, workers, progress, {
                "source": source, "target": target, "argos_dir": argos_dir, "device": device, "beam_size": beam_size,
                "pivot": pivot, "allow_network": allow_network, "intra_threads": intra,
            })
    report.update(_summarise(out_path, len(records), len(done)))
    if max_drop_rate is not None:
        report["max_drop_rate"] = max_drop_rate
    if report_path:
        _write_json(report_path, report)
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


def _run_workers(todo: list[Record], out_path: Path, argos: ArgosRoute, target: str, workers: int, progress: bool, config: dict[str, Any]) -> None:
    from tqdm import tqdm

    bar = tqdm(total=len(todo), unit="rec", desc=f"translate {' -> '.join(argos.route)}", disable=not progress, leave=True)
    with _open_append(out_path) as out_handle, _open_append(_dropped_path(out_path)) as drop_handle:

        def write(result: dict[str, Any]) -> None:
            if result["status"] == "dropped":
                entry = {k: result[k] for k in ("id", "input_digest", "reason", "attempts", "terms", "first_problems")}
                append_line(drop_handle, srsly.json_dumps(entry))
                log.info("record %s dropped: %s", result["id"], result["reason"])
            else:
                append_record(out_handle, Record.from_dict(result["record"]))
            bar.update(1)

        try:
            if workers <= 1:
                for rec in todo:
                    try:
                        result = translate_record(rec, argos.translate_hops, argos.route, target)
                    except Exception as err:  # not an engine error (translate_record drops those): stop here
                        raise RecordFailed(rec.id, type(err).__name__) from err
                    write(result)
            else:
                import multiprocessing
                from concurrent.futures import ProcessPoolExecutor

                # spawn, not fork: CTranslate2/CUDA state must not be inherited half-initialised.
                ctx = multiprocessing.get_context("spawn")
                pool = ProcessPoolExecutor(workers, mp_context=ctx, initializer=_worker_init, initargs=(config,))
                try:
                    pending: deque = deque()
                    bound = workers * 4  # the bounded queue: at most this many records in flight

                    def write_next() -> None:
                        rid, future = pending.popleft()
                        try:
                            result = future.result()
                        except Exception as err:  # raised in the worker, or the pool broke: stop here
                            raise RecordFailed(rid, type(err).__name__) from err
                        write(result)

                    for rec in todo:
                        pending.append((rec.id, pool.submit(_worker_translate, rec.to_dict())))
                        if len(pending) >= bound:
                            write_next()
                    while pending:
                        write_next()
                except BaseException:
                    # Ctrl-C or a failure: what is written stays written; queued records are cancelled
                    # instead of being waited for, and the next run resumes after the last record.
                    pool.shutdown(wait=False, cancel_futures=True)
                    raise
                pool.shutdown(wait=True)
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
    source: str = typer.Option("es", help="Source language of the records"),
    target: str = typer.Option("fr", help="Target language (equal to --source: pass-through, no Argos)"),
    packages_dir: Path | None = typer.Option(None, help="Folder of .argosmodel files to install first"),
    workers: int = typer.Option(1, help="Translation worker processes"),
    device: str = typer.Option("cpu", help="cpu or cuda (ARGOS_DEVICE_TYPE)"),
    report: Path | None = typer.Option(None, help="Write the stage report (JSON) here"),
    argos_dir: Path | None = typer.Option(None, help="Where Argos installs packages (ARGOS_PACKAGES_DIR)"),
    beam_size: int | None = typer.Option(None, help="Beam size (ARGOS_BEAM_SIZE; Argos default 4)"),
    pivot: str | None = typer.Option(None, help="Pivot language (default: pivot_lang of languages/<target>/locale.yml)"),
    progress: bool = typer.Option(True, help="Show a progress bar (records/s)"),
    allow_network: bool = typer.Option(False, help="Lift the socket guard (not needed, not recommended)"),
    limit: int | None = typer.Option(None, help="Translate at most N more records, then stop (resume later)"),
    download: bool = typer.Option(False, help="If no route is installed, download it from the Argos index"),
    if_no_route: str = typer.Option("fail", "--if-no-route", help="fail, or skip: build on the records already in the target language"),
    max_drop_rate: float = typer.Option(DEFAULT_MAX_DROP_RATE, "--max-drop-rate", min=0.0, max=1.0,
                                        help="Fail (exit 1, after writing the output and the report) when more than "
                                             "this share of the translated records is dropped; 1 never fails"),
) -> None:
    """Translate placeholder records offline with Argos (direct route or pivot), resumable.

    Only translation-engine errors drop a record; any other error stops the stage with one line
    naming the record id (exit 1), keeping what was written: fix it and run again to resume."""

    try:
        result = translate_file(
            in_path, out_path, source, target, packages_dir, workers, device, report, argos_dir, beam_size, pivot,
            progress, allow_network, limit, download, if_no_route, max_drop_rate,
        )
    except KeyboardInterrupt:
        typer.echo(f"interrupted: finished records are in {out_path}; run the same command again to resume", err=True)
        raise typer.Exit(130) from None
    except (RouteMissing, FileNotFoundError, RecordError, ValueError, RuntimeError) as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(1) from None
    if result.get("skipped_no_route"):
        # one line: what was skipped and how to add translation (the route message names the packages)
        written = result["kept"] + result["repaired"]
        typer.echo(f"translation skipped: {result['skipped_no_route']} {source} records not used, the build goes on with "
                   f"the {written} native {target} records. To add them: {result['no_route']} "
                   f"Then run the build again with --force.", err=True)
        if not written:
            typer.echo(f"error: no records left to build {target} from (no Argos route and no corpora/synth/{target}/)", err=True)
            raise typer.Exit(1)
    typer.echo(
        f"translate {source} -> {target}: {result['kept']} kept, {result['repaired']} repaired "
        f"{result['repaired_by']}, {result['dropped']} dropped {result['dropped_by_reason']} "
        f"of {result['records_in']} records ({result['resumed_from']} already done)"
    )
