"""The redaction engine behind `factory redact` (redact_cli.py, the command): the language router
and redaction over files, folders and JSONL, failing closed.

Inputs: text files, folders (every *.txt and *.jsonl below them, sorted) and JSONL files of
records ({"id", "text", "lang"?, ...}), read one document at a time. Each document goes to the
pipeline of its language: `--lang` for all, else the record's own "lang", else detection among
the loaded languages (deid_runtime/router.py). Safe defaults:
  * a document no pipeline takes (language without a pipeline, too short or too unsure to detect)
    is NOT written: one line names it (file and id, never text) and the run ends with exit status 3.
    Opt in to processing such documents with `--fallback union` (every loaded pipeline + every
    pack of the project) or `--fallback <lang>`;
  * an input that is missing stops the run before anything is processed; a file that is not UTF-8,
    empty, a broken JSONL line or a second document with an output name already used is skipped
    with a line naming it, and the run ends with exit status 3. `--allow-partial` accepts both
    (exit 0, as long as something ran), for those who want the lenient behaviour.
  * every output is redacted: annotations that show the PHI (brat .ann with the strings, records
    with spans) are written only with the explicit `--mode annotate`.
`redact_files` returns the run's report; report["complete"] is False when a document was not written
or an input was skipped (the command then ends with exit status 3).

Line endings and a leading byte order mark (BOM) are kept: a CRLF file comes out CRLF, and a BOM
file comes out with its BOM. The BOM is hidden from the pipeline (it is not text, and glued to the
first word it could hide a name) and counted in output offsets, as brat counts it.
Memory and time stay linear in the input: long documents are processed in pieces by the router and
only spans are kept (no Docs). Documents go in shards (32 documents, 2 MB of text at most) to this
process, or with --workers N / --scheduler ADDRESS to a Dask cluster (scaleout.py); shards are
committed in input order and recorded in OUT.redact-journal.jsonl, so a killed run (or worker)
keeps every shard it committed and the same command resumes after them to the same bytes.

Surrogate mode draws every surrogate from a secret key (--key-file, or $DEID_SURROGATE_KEY) and
refuses to start without one; --demo-key uses a key derived from --seed, which is not secret. A
JSONL record's `patient_id` makes that patient's documents share surrogates and date shift.

Outputs (--format; --mode tag | mask | surrogate redact, --mode annotate annotates):
  text   OUT/ folder: one redacted .txt per document (input folder layout kept; JSONL records
         become OUT/<record id>.txt). Not with annotate.
  jsonl  OUT file: redaction {"id", "lang", "pipeline", "spans": [{start, end, label, source}]
         (offsets in the original text), "redacted": redacted text}; annotate: records in the
         project's format {"id", "lang", "text", "spans", "meta"}. Rows are appended to
         OUT.partial as documents finish and it becomes OUT when the run ends.
  brat   OUT/ folder: <id>.txt + <id>.ann. Redaction: the redacted text, and T lines on the tags,
         masks or surrogates; annotate: the original text and T lines on the PHI.

What redaction did is counted per label and action (tag, mask, surrogate, or "unsure": surrogate
mode wrote a visible "[LABEL?]" because the span failed its label's check, deid_runtime/redact.py):
in the summary line, in each journal entry and in the report's "redaction"; `--report FILE` also
lists each document's spans ("documents": id, labels, offsets and actions; never text).
"""

from __future__ import annotations

import itertools
import logging
import os
import re
import sys
import time
from collections import Counter
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Iterator, Sequence

import srsly

# registers the project's surrogate data (languages/<lc>/surrogate_data/) with the runtime, in Dask workers too
from . import locale as _locale  # noqa: F401
from .records import BOM, Record, Span, json_lines
from .outputs import OutputError, append_line, write_text_atomic
from deid_runtime.redact import KEY_ENV, MASK_LENGTHS, SurrogateKeyError, redact
from .scaleout import ClusterOptions, Shard, ShardJournal, ShardTask, run_shards, shards_of
from deid_runtime.router import DEFAULT_MIN_CONFIDENCE, DEFAULT_MIN_LETTERS, FALLBACK, UNROUTED, Routed, Router, RouterError

log = logging.getLogger(__name__)


class _Choice(str, Enum):
    """A value of a fixed set, given as its string (`--mode tag`) or as the member; one check, at
    the start of a run, with a one-line message listing the choices."""

    @classmethod
    def parse(cls, value: str | _Choice, what: str):
        try:
            return cls(value)
        except ValueError:
            raise ValueError(f"unknown {what} {value!r} (expected one of {', '.join(m.value for m in cls)})") from None


class RedactMode(_Choice):
    """What the run does to each document's PHI: the three redactions of deid_runtime.redact
    (its MODES), or annotate (no redaction: the original text and its spans, jsonl or brat only)."""

    TAG = "tag"
    MASK = "mask"
    SURROGATE = "surrogate"
    ANNOTATE = "annotate"

    @property
    def redacts(self) -> bool:
        return self is not RedactMode.ANNOTATE


class OutputFormat(_Choice):
    TEXT = "text"  # OUT/ folder, one .txt per document
    JSONL = "jsonl"  # OUT file, one row per document
    BRAT = "brat"  # OUT/ folder, .txt + .ann per document


INPUT_SUFFIXES = (".txt", ".jsonl")
_SAFE_ID = re.compile(r"[^\w.\-]+")


@dataclass
class Source:
    id: str  # also the relative output name
    text: str  # without the file's BOM, if it had one
    origin: str  # file (and line) it came from, for messages
    bom: str = ""  # the BOM the file started with ("" when none), written back in front of the output
    lang: str | None = None  # the language a JSONL record declares
    patient_id: str | None = None  # a JSONL record's `patient_id`: its surrogates are the patient's
    size: int = 0  # input bytes this document and the skipped inputs just before it took (progress)


class _Progress:
    """Bytes of input consumed, for a progress bar with a total and an ETA."""

    def __init__(self, total: int, enabled: bool):
        from tqdm import tqdm

        # a bar only on a terminal: written to a file or a pipe (CI logs, `2> log`) its carriage
        # returns glued the next log line to the bar
        self.bar = tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024, desc="redact",
                        disable=not (enabled and sys.stderr.isatty()), file=sys.stderr, dynamic_ncols=True)
        self.docs = 0
        self.started = time.monotonic()

    def add(self, size: int, docs: int) -> None:
        """`docs` documents of `size` input bytes committed (by any worker)."""
        self.docs += docs
        rate = self.docs / max(1e-9, time.monotonic() - self.started)
        self.bar.set_postfix_str(f"{rate:.1f} docs/s, {self.docs} docs", refresh=False)
        self.bar.update(size)

    def close(self) -> None:
        self.bar.update(max(0, self.bar.total - self.bar.n))  # the skipped inputs after the last document
        self.bar.close()


def _skip(problems: list[dict], where: str, problem: str, level: int = logging.ERROR) -> None:
    """Record a skipped input; `where` is a file (and line), `problem` never holds document text."""
    problems.append({"input": where, "problem": problem})
    log.log(level, "%s: %s, skipped", where, problem)


def list_input_files(inputs: list[Path], problems: list[dict], exclude: Sequence[Path] = ()) -> list[tuple[Path, Path]]:
    """(file, the folder its output name is relative to) of every input, folders expanded and sorted.

    `exclude`: what the run itself writes (the output folder or file, its journal, OUT.partial),
    never read as input: an output folder inside an input folder was redacted again at the next run
    (red/red/...). Output names: with one input they are relative to it (a folder) or its folder (a
    file); with several, relative to the folder the inputs share, so that each input's files keep
    their input's folder name ("a/x.txt", "b/x.txt": two files called x.txt are two outputs)."""
    excluded = [e.resolve() for e in exclude]

    def is_excluded(path: Path) -> bool:
        resolved = path.resolve()
        return any(resolved == e or e in resolved.parents for e in excluded)

    present = [inp for inp in inputs if inp.exists()]
    # several inputs: names relative to the folder holding them all (each folder's name kept)
    shared_base = Path(os.path.commonpath([str(inp.resolve().parent) for inp in present])) if len(present) > 1 else None
    files: list[tuple[Path, Path]] = []
    for inp in inputs:
        if inp.exists() and is_excluded(inp):
            _skip(problems, str(inp), "is this run's own output")
            continue
        if inp.is_dir():
            base = shared_base or inp
            found = sorted(p for p in inp.rglob("*") if p.is_file() and p.suffix in INPUT_SUFFIXES and not is_excluded(p))
            if not found:
                _skip(problems, str(inp), "no .txt or .jsonl files")
            files += [(p, base) for p in found]
        elif inp.exists():
            files.append((inp, shared_base or inp.parent))
        else:
            _skip(problems, str(inp), "not found")
    return files


def iter_sources(files: list[tuple[Path, Path]], problems: list[dict]) -> Iterator[Source]:
    """Documents from the files, one at a time; problems (skipped inputs) are appended to `problems`."""
    pending = 0  # bytes of skipped inputs since the last document

    def skip(where: str, problem: str, size: int, level: int = logging.ERROR) -> None:
        nonlocal pending
        pending += size
        _skip(problems, where, problem, level)

    for path, base in files:
        if path.suffix == ".jsonl":
            for item in _jsonl_sources(path, problems):
                if isinstance(item, int):  # bytes of a skipped line
                    pending += item
                    continue
                item.size += pending
                pending = 0
                yield item
            continue
        try:
            raw = path.read_bytes()
        except OSError as err:
            skip(str(path), f"unreadable ({err.strerror})", 0)
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as err:
            skip(str(path), f"not UTF-8 (byte offset {err.start})", len(raw))
            continue
        bom = BOM if text.startswith(BOM) else ""
        text = text[len(bom):]
        if not text.strip():
            skip(str(path), "empty", len(raw), logging.WARNING)
            continue
        yield Source(str(path.resolve().relative_to(base.resolve()).with_suffix("")), text, str(path), bom, size=len(raw) + pending)
        pending = 0


def _jsonl_sources(path: Path, problems: list[dict]) -> Iterator[Source | int]:
    """One Source per record line, read line by line by `records.json_lines` (a file of any size;
    a line that is not UTF-8 costs that record only; split on "\n" only, a BOM before the first
    record dropped); the byte count of each line skipped."""
    found = False
    lines = json_lines(path)
    try:
        first = next(lines, None)  # opens the file: one that cannot be opened is skipped
    except OSError as err:
        _skip(problems, str(path), f"unreadable ({err.strerror})")
        return
    for line in itertools.chain([first] if first else [], lines):
        if line.blank:
            yield line.size
            continue
        found = True
        if line.problem:
            _skip(problems, line.where, line.problem)
            yield line.size
            continue
        data = line.value
        if not isinstance(data, dict) or not isinstance(data.get("text"), str):
            _skip(problems, line.where, "no `text` string")
            yield line.size
            continue
        rid = str(data.get("id", f"{path.stem}-{line.lineno}"))
        if not data["text"].strip():
            _skip(problems, line.where, f"record {rid!r} is empty", logging.WARNING)
            yield line.size
            continue
        lang = data.get("lang")
        patient = data.get("patient_id")
        yield Source(rid, data["text"], line.where, lang=lang if isinstance(lang, str) and lang.strip() else None,
                     size=line.size, patient_id=None if patient is None else str(patient))
    if not found:
        _skip(problems, str(path), "empty", logging.WARNING)


def _ann_value(value: str) -> str:
    # a brat .ann line holds the annotated string on one line: line breaks (CR too) become spaces
    return value.replace("\r", " ").replace("\n", " ")


def _out_name(doc_id: str) -> str:
    # ids become file names: keep folders from relative paths, neutralise anything else
    parts = [_SAFE_ID.sub("_", p) for p in Path(doc_id).parts if p not in ("..", "/", "")]
    return str(Path(*parts)) if parts else "doc"


def _brat_ann(text: str, spans: list[tuple[int, int, str]], shift: int) -> str:
    return "".join(f"T{i}\t{label} {s + shift} {e + shift}\t{_ann_value(text[s:e])}\n"
                   for i, (s, e, label) in enumerate(spans, start=1))


class _JsonlOutput:
    """Rows go to OUT.partial as shards commit, each row in one write and each shard fsynced (a
    killed process keeps every committed row), and OUT.partial becomes OUT when the run ends. A
    failed run leaves an earlier OUT as it was, and its committed rows in OUT.partial, which the
    next run with the same inputs and settings resumes (cut back to its last committed shard)."""

    def __init__(self, out: Path):
        self.out = out
        self.partial = out.with_name(out.name + ".partial")
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            self.handle = self.partial.open("a", encoding="utf-8")
        except OSError as err:
            raise OutputError(self.partial, err) from None
        self.rows = 0

    def size(self) -> int:
        return os.fstat(self.handle.fileno()).st_size

    def truncate(self, size: int) -> None:
        """Keep the first `size` bytes: the rows of the shards a resumed run keeps."""
        try:
            os.ftruncate(self.handle.fileno(), size)
        except OSError as err:
            raise OutputError(self.partial, err) from None

    def write_line(self, line: str) -> None:
        append_line(self.handle, line, sync=False)  # the whole line or nothing
        self.rows += 1

    def sync(self) -> None:
        try:
            os.fsync(self.handle.fileno())
        except OSError as err:
            raise OutputError(self.partial, err) from None

    def commit(self) -> None:
        try:
            os.fsync(self.handle.fileno())
            self.handle.close()
            os.replace(self.partial, self.out)
        except OSError as err:
            raise OutputError(self.out, err) from None

    def abort(self) -> None:
        self.handle.close()
        log.error("run stopped: %s unchanged; the %d documents finished are in %s (run again to resume)",
                  self.out, self.rows, self.partial)


def project_packs(exclude: set[str]):
    """Every regex pack of the project (factory --root) but those of `exclude` locales."""
    from .locale import pack_folders
    from deid_runtime.regex_pack import RegexPack

    return [RegexPack.from_dir(p) for p in pack_folders() if p.name not in exclude]


def build_router(pipelines: list[str] | None = None, fallback: str | None = None, lang: str | None = None,
                 seed: int = 0, detect_chars: int = 1000, min_confidence: float = DEFAULT_MIN_CONFIDENCE,
                 min_letters: int = DEFAULT_MIN_LETTERS, recall_bias: float | str | None = None) -> Router:
    """The router of `factory redact`: the named (default: every installed) deid_* pipelines; with
    the union fallback, the project's packs of the other languages run too. `recall_bias` sets the
    o_bias of every pipeline's deid_tagger (the recall knob). No pipeline is loaded here: each loads
    when the first document routed to it arrives (deid_runtime.router.Pipelines), and gets the
    recall setting then."""
    on_load = None
    if recall_bias is not None:
        set_recall_bias({}, recall_bias)  # a bad value stops the run now, before anything loads
        on_load = lambda lang_, nlp: set_recall_bias({lang_: nlp}, recall_bias)  # noqa: E731
    router = Router.from_names(pipelines, fallback=None, seed=seed, detect_chars=detect_chars,
                               min_confidence=min_confidence, min_letters=min_letters, force_lang=lang,
                               on_load=on_load)
    if fallback is None:
        return router
    extra = project_packs(set(router.pipelines)) if fallback == "union" else []
    return Router(router.pipelines, fallback=fallback, seed=seed, detect_chars=detect_chars,
                  min_confidence=min_confidence, min_letters=min_letters, force_lang=lang, extra_packs=extra)


def set_recall_bias(pipelines: dict, bias: float | str) -> None:
    """The recall knob of every pipeline: the tagger's o_bias, a number or a preset name ("high",
    docs/training.md "Recall setting"). A pipeline without a deid_tagger (a transition-based NER)
    cannot honour it: refuse rather than redact with less recall than asked for."""
    from deid_runtime.biluo_tagger import recall_bias

    try:
        bias = recall_bias(bias)
    except ValueError as err:
        raise ValueError(f"--recall-bias: {err}") from None
    without = sorted(lang for lang, nlp in pipelines.items() if "deid_tagger" not in nlp.pipe_names)
    if without:
        raise RouterError(f"--recall-bias needs the deid_tagger NER; the pipelines of {', '.join(without)} have none "
                          "(rebuild with ner_model: tagger, the default)")
    for nlp in pipelines.values():
        nlp.get_pipe("deid_tagger").o_bias = float(bias)


DOCS_PER_SHARD = 32  # documents per shard (the unit of work, commit and resume)
CHARS_PER_SHARD = 2_000_000  # ... and at most this much text, unless one document alone is longer


@dataclass(frozen=True)
class RedactSettings:
    """What a worker needs to route and redact (sent to every worker: it holds the surrogate key,
    which is never logged and never part of a task key)."""

    output_format: OutputFormat
    mode: RedactMode
    pipelines: tuple[str, ...] | None
    fallback: str | None
    lang: str | None
    seed: int
    batch_size: int
    detect_chars: int
    min_confidence: float
    min_letters: int
    recall_bias: float | str | None
    key: bytes | None
    demo_key: bool
    mask_length: str = "fixed"

    def fingerprint(self) -> str:
        """Identifies the outputs these settings give (resume): the key only through an HMAC of it."""
        import hashlib
        import hmac

        # the choices by their strings: the same fingerprint as when they were plain strings
        fields = {k: v.value if isinstance(v, Enum) else v for k, v in self.__dict__.items() if k != "key"}
        key_id = hmac.new(self.key, b"deid-factory redact journal", hashlib.sha256).hexdigest()[:16] if self.key else ""
        return hashlib.sha256(repr((sorted(fields.items()), key_id, DOCS_PER_SHARD, CHARS_PER_SHARD)).encode()).hexdigest()[:32]


@dataclass
class _DocOutcome:
    """One document after routing and redaction: its outputs, ready to write (no Doc, no spans object)."""

    id: str
    origin: str
    size: int
    lang: str
    pipeline: str
    how: str
    reason: str
    name: str
    files: list[tuple[str, str]]  # (path relative to OUT, content): text and brat
    row: str | None  # the JSONL line: jsonl
    redaction: dict | None = None  # what was done to its spans: {"counts", "spans"} (offsets, labels; no text)


def _worker_router(settings: RedactSettings) -> tuple[Router, RedactSettings]:
    return build_router(list(settings.pipelines) if settings.pipelines else None, settings.fallback, settings.lang,
                        settings.seed, settings.detect_chars, settings.min_confidence, settings.min_letters,
                        settings.recall_bias), settings


def _redact_shard(state: tuple[Router, RedactSettings], sources: list[Source]) -> dict:
    """Route and redact one shard of documents (on a worker, or in this process)."""
    from deid_runtime.router import RouterStats

    router, settings = state
    router.stats = RouterStats()  # this shard's counts only: the client adds them up
    docs = []
    for routed in router.pipe(((s.text, s) for s in sources), batch_size=settings.batch_size, as_tuples=True,
                              declared_lang=lambda s: s.lang, with_docs=False):
        src: Source = routed.meta
        name = _out_name(src.id)
        files: list[tuple[str, str]] = []
        row = redaction = None
        if routed.pipeline != UNROUTED:
            files, row, redaction = _render_document(settings, src, routed, name, _clinical_lexicon(router, routed))
        docs.append(_DocOutcome(src.id, src.origin, src.size, routed.lang, routed.pipeline, routed.how,
                                routed.reason, name, files, row, redaction))
    return {"docs": docs, "stats": router.stats.to_dict(), "pipelines": sorted(router.pipelines),
            "fallback": router.fallback_name, "lang": router.force_lang}


def _clinical_lexicon(router: Router, routed: Routed):
    """The clinical lexicon of the pipeline that found the document's spans (its regex pack's), which
    surrogate mode's checks read; None for the fallback (redaction then uses the one registered for
    the language, if any)."""
    from deid_runtime.router import pack_of

    nlp = router.pipelines.get(routed.pipeline)
    pack = pack_of(nlp) if nlp is not None else None
    return getattr(pack, "clinical", None)


def add_redaction_counts(total: dict, counts: dict) -> None:
    """Add {action: {label: n}} into `total` (same shape)."""
    for action, labels in counts.items():
        into = total.setdefault(action, {})
        for label, n in labels.items():
            into[label] = into.get(label, 0) + n


def _shard_digest(fingerprint: str, sources: list[Source]) -> str:
    from .scaleout import digest_of

    return digest_of(fingerprint, *(f"{s.id}\x00{s.origin}\x00{s.bom}\x00{s.lang}\x00{s.patient_id}\x00{s.text}" for s in sources))


def journal_path(out: Path) -> Path:
    """Where a redact run records its committed shards, next to OUT (a file or a folder)."""
    return out.with_name(out.name + ".redact-journal.jsonl")


def redact_files(inputs: list[Path], out: Path, output_format: OutputFormat | str = OutputFormat.TEXT,
                 mode: RedactMode | str = RedactMode.TAG,
                 pipelines: list[str] | None = None, fallback: str | None = None, lang: str | None = None,
                 seed: int = 0, batch_size: int = 16, detect_chars: int = 1000,
                 min_confidence: float = DEFAULT_MIN_CONFIDENCE, min_letters: int = DEFAULT_MIN_LETTERS,
                 router: Router | None = None, progress: bool = True, allow_partial: bool = False,
                 key: bytes | None = None, demo_key: bool = False, recall_bias: float | str | None = None,
                 cluster: ClusterOptions | None = None, per_document: bool = False, mask_length: str = "fixed") -> dict:
    """Route, redact (or annotate) and write every document; returns the report.

    report["redaction"]: spans per action and label ({"surrogate": {"PERSON": 12}, "unsure": {"AGE": 1}});
    `per_document`: report["documents"] lists each written document's (id, lang, pipeline, counts,
    spans [start, end, label, action] in the input's offsets): no text.

    report["complete"] is False when a document was not written or an input was skipped. A missing
    input raises FileNotFoundError before anything runs, unless allow_partial. Surrogate mode draws
    from the secret `key` (or the demo key of `seed` when `demo_key`) and refuses to start without one.
    Documents go in shards to `cluster` (default: this process; scaleout.py), are committed in input
    order, and a run stopped at any point resumes after its last committed shard (same inputs and
    settings: same bytes as an uninterrupted run)."""
    cluster = cluster or ClusterOptions()
    output_format = OutputFormat.parse(output_format, "output format")
    mode = RedactMode.parse(mode, "mode")
    if mask_length not in MASK_LENGTHS:
        raise ValueError(f"unknown mask length {mask_length!r} (expected one of {', '.join(MASK_LENGTHS)})")
    if not mode.redacts and output_format is OutputFormat.TEXT:
        raise ValueError("--mode annotate writes the PHI spans, which needs --format jsonl or brat")
    if mode is RedactMode.SURROGATE and key is None and not demo_key:
        raise SurrogateKeyError(f"surrogate mode needs a secret key: --key-file FILE or ${KEY_ENV} "
                                "(--demo-key for a demonstration with a key that is not secret)")
    if router is not None and cluster.uses_dask:
        raise ValueError("a Router object runs in this process only: give pipeline names with --workers/--scheduler")
    missing = [str(p) for p in inputs if not p.exists()]
    if missing and not allow_partial:
        raise FileNotFoundError(f"input not found: {', '.join(missing)} (nothing was processed; --allow-partial skips missing inputs)")
    settings = RedactSettings(output_format, mode, tuple(pipelines) if pipelines else None, fallback, lang, seed, batch_size,
                              detect_chars, min_confidence, min_letters, recall_bias, key, demo_key, mask_length)
    state = None
    if not cluster.uses_dask:
        if router is None:
            router = build_router(pipelines, fallback, lang, seed, detect_chars, min_confidence, min_letters, recall_bias)
        state = (router, settings)
    problems: list[dict] = []
    unrouted: list[dict] = []
    written_from: dict[str, str] = {}  # output name -> the input that took it
    stats: dict = {"docs": 0, "by_pipeline": Counter(), "by_how": Counter(), "detected": Counter(), "unrouted_languages": Counter()}
    about: dict = {}  # pipelines, fallback, lang of the router (from whichever process ran it)
    jsonl_partial = out.with_name(out.name + ".partial")
    files = list_input_files(inputs, problems, exclude=[out, journal_path(out), jsonl_partial])
    bar = _Progress(sum(p.stat().st_size for p, _ in files), progress)
    journal = ShardJournal(journal_path(out), settings.fingerprint())
    jsonl = _JsonlOutput(out) if output_format is OutputFormat.JSONL else None
    if jsonl is not None and journal.entries and jsonl.size() < journal.entries[-1]["summary"]["partial_bytes"]:
        journal.entries = []  # the rows of the journal are gone (OUT.partial replaced): start again
    counts = {"written": 0}
    written_per_pipeline: Counter = Counter()  # documents written, by the pipeline that processed them
    redaction: dict = {}  # {action: {label: spans}} over the run
    documents: list[dict] = []  # per document, with per_document

    def add_summary(summary: dict) -> None:
        counts["written"] += summary["written"]
        written_per_pipeline.update(summary.get("written_per_pipeline", {}))
        add_redaction_counts(redaction, summary.get("redaction", {}))
        if per_document:
            documents.extend(summary.get("documents", []))
        unrouted.extend(summary["unrouted"])
        problems.extend(summary["problems"])
        written_from.update(summary["names"])
        for k, v in summary["stats"].items():
            if k == "docs":
                stats["docs"] += v
            else:
                stats[k].update(v)
        about.update(summary["about"])
        bar.add(summary["bytes"], summary["docs"])

    def shards() -> Iterator[Shard]:
        """The shards still to do: those an earlier run committed (same input, same settings) are
        replayed from the journal, the first that differs and all after it are done again."""
        resuming = True
        replayed = 0
        for shard in shards_of(iter_sources(files, problems), DOCS_PER_SHARD, lambda s: len(s.text), CHARS_PER_SHARD):
            shard.digest = _shard_digest(journal.fingerprint, shard.payload)
            if resuming and shard.index < len(journal.entries) and journal.entries[shard.index]["digest"] == shard.digest:
                add_summary(journal.entries[shard.index]["summary"])
                replayed += 1
                continue
            if resuming:
                resuming = False
                start_from(shard.index)
            yield shard
        if resuming:
            start_from(replayed)
        if not journal.entries and not about:  # no document at all: one empty shard says what the router is
            yield Shard(0, [], 0, _shard_digest(journal.fingerprint, []))

    def start_from(index: int) -> None:
        index = min(index, len(journal.entries))
        if jsonl is not None:
            jsonl.truncate(journal.entries[index - 1]["summary"]["partial_bytes"] if index else 0)
        journal.start(index)

    def commit(shard: Shard, result: dict) -> None:
        summary = {"written": 0, "unrouted": [], "problems": [], "names": {}, "stats": result["stats"], "docs": 0,
                   "bytes": 0, "about": {k: result[k] for k in ("pipelines", "fallback", "lang")},
                   "redaction": {}, "documents": [], "written_per_pipeline": {}}
        for doc in result["docs"]:
            summary["docs"] += 1
            summary["bytes"] += doc.size
            if doc.pipeline in (FALLBACK, UNROUTED):
                summary["unrouted"].append({"input": doc.origin, "id": doc.id, "lang": doc.lang, "how": doc.how,
                                            "pipeline": doc.pipeline, "reason": doc.reason})
            if doc.pipeline == UNROUTED:
                log.error("%s: document %r not redacted (%s): not written", doc.origin, doc.id, doc.reason)
                continue
            if doc.pipeline == FALLBACK:
                log.warning("%s: document %r went to the fallback %r (%s)", doc.origin, doc.id, result["fallback"], doc.reason)
            if jsonl is None:
                taken = written_from.get(doc.name) or summary["names"].get(doc.name)
                if taken:
                    problem = {"input": doc.origin, "problem": f"output name {doc.name!r} already written for {taken}"}
                    summary["problems"].append(problem)
                    log.error("%s: %s, skipped", problem["input"], problem["problem"])
                    continue
                summary["names"][doc.name] = doc.origin
                for relative, content in doc.files:
                    write_text_atomic(out / relative, content)
            else:
                jsonl.write_line(doc.row)
            summary["written"] += 1
            summary["written_per_pipeline"][doc.pipeline] = summary["written_per_pipeline"].get(doc.pipeline, 0) + 1
            if doc.redaction is not None:
                add_redaction_counts(summary["redaction"], doc.redaction["counts"])
                summary["documents"].append({"id": doc.id, "lang": doc.lang, "pipeline": doc.pipeline, **doc.redaction})
        if jsonl is not None:
            jsonl.sync()
            summary["partial_bytes"] = jsonl.size()
        add_summary(summary)
        journal.record(shard.index, shard.digest, summary, shard.ran_on)

    try:
        run_shards(ShardTask("redact", _worker_router, _redact_shard, settings), shards(), commit, cluster, state=state)
        if jsonl is not None:
            jsonl.commit()
        journal.remove()
    except BaseException:
        journal.close()
        if jsonl is not None and not jsonl.handle.closed:
            jsonl.abort()
        raise
    finally:
        bar.close()
    not_written = sum(1 for u in unrouted if u["pipeline"] == UNROUTED)
    router_stats = {k: (v if k == "docs" else dict(v)) for k, v in stats.items()}
    report = {"written": counts["written"], "written_per_pipeline": dict(sorted(written_per_pipeline.items())),
              "not_written": not_written, "skipped": problems, "unrouted": unrouted,
              "complete": not problems and not not_written, "router": router_stats,
              "pipelines": about.get("pipelines", []), "fallback": about.get("fallback"), "lang": about.get("lang"),
              "mode": mode.value, "format": output_format.value,
              "redaction": {action: dict(sorted(labels.items())) for action, labels in sorted(redaction.items())}}
    if per_document:
        report["documents"] = documents
    return report


def _render_document(settings: RedactSettings, src: Source, routed: Routed, name: str,
                     lexicon=None) -> tuple[list[tuple[str, str]], str | None, dict | None]:
    """The outputs of one routed document: files (path relative to OUT, content) or one JSONL line,
    and what redaction did to its spans (None when annotating). `lexicon`: the clinical lexicon
    surrogate mode's checks read."""
    output_format, mode = settings.output_format, settings.mode
    spans = [(s.start, s.end, s.label) for s in routed.spans]
    shift = len(src.bom)  # output offsets count the BOM, as in the file
    if not mode.redacts:
        if output_format is OutputFormat.BRAT:
            return [(f"{name}.txt", src.bom + src.text), (f"{name}.ann", _brat_ann(src.text, spans, shift))], None, None
        record = Record(src.id, routed.lang, src.text,
                        [Span(s.start, s.end, s.label, {"source": s.source}) for s in routed.spans],
                        {"pipeline": routed.pipeline, "how": routed.how})
        return [], srsly.json_dumps(record.to_dict()), None
    surrogate_lang = routed.lang if routed.pipeline != FALLBACK else None
    done = redact(src.text, spans, mode=mode.value, lang=surrogate_lang, seed=settings.seed, doc_id=src.id,
                  key=settings.key, patient_id=src.patient_id, demo=settings.demo_key, lexicon=lexicon,
                  mask_length=settings.mask_length)
    redacted, new_spans = done.text, done.spans
    # offsets, labels and actions only: the report and the journal never hold text
    redaction = {"counts": done.counts(), "spans": [[s + shift, e + shift, label, action] for s, e, label, action in done.actions]}
    if output_format is OutputFormat.TEXT:
        return [(f"{name}.txt", src.bom + redacted)], None, redaction
    if output_format is OutputFormat.BRAT:
        return [(f"{name}.txt", src.bom + redacted), (f"{name}.ann", _brat_ann(redacted, new_spans, shift))], None, redaction
    return [], srsly.json_dumps({"id": src.id, "lang": routed.lang, "pipeline": routed.pipeline,
                                 "spans": [{"start": s.start + shift, "end": s.end + shift, "label": s.label, "source": s.source}
                                           for s in routed.spans],
                                 "redacted": src.bom + redacted}), redaction
