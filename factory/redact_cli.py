"""`factory redact`: the language router and redaction over files, folders and JSONL, failing closed.

Inputs: text files, folders (every *.txt and *.jsonl below them, sorted) and JSONL files of
records ({"id", "text", "lang"?, ...}), read one document at a time. Each document goes to the
pipeline of its language: `--lang` for all, else the record's own "lang", else detection among
the loaded languages (runtime/router.py). Safe defaults:
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
Exit status: 0 complete, 1 the run could not start (bad option, missing input or pipeline), 3
finished but incomplete (documents not written, inputs skipped), 130 interrupted.

Line endings and a leading byte order mark (BOM) are kept: a CRLF file comes out CRLF, and a BOM
file comes out with its BOM. The BOM is hidden from the pipeline (it is not text, and glued to the
first word it could hide a name) and counted in output offsets, as brat counts it.
Memory and time stay linear in the input: long documents are processed in pieces by the router and
only spans are kept (no Docs). Outputs are committed document by document: a killed run keeps
every document it finished.

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
"""

from __future__ import annotations

import logging
import os
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import srsly
import typer

from .readers import BOM
from .records import OutputError, Record, Span, append_line, write_text_atomic
from deid_runtime.redact import KEY_ENV, MODES, SurrogateKeyError, load_key, redact_text
from deid_runtime.router import (DEFAULT_MIN_CONFIDENCE, DEFAULT_MIN_LETTERS, FALLBACK, UNROUTED, Routed, Router,
                             RouterError)

log = logging.getLogger(__name__)
OUTPUT_FORMATS = ("text", "jsonl", "brat")
ANNOTATE = "annotate"
CLI_MODES = (*MODES, ANNOTATE)
EXIT_INCOMPLETE = 3
_SAFE_ID = re.compile(r"[^\w.\-]+")
BOM_BYTES = BOM.encode("utf-8")
INPUT_SUFFIXES = (".txt", ".jsonl")


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

        self.bar = tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024, desc="redact",
                        disable=not enabled, file=sys.stderr, dynamic_ncols=True)
        self.docs = 0

    def done(self, source: Source) -> None:
        self.docs += 1
        self.bar.set_postfix_str(f"{self.docs} docs", refresh=False)
        self.bar.update(source.size)

    def close(self) -> None:
        self.bar.update(max(0, self.bar.total - self.bar.n))  # the skipped inputs after the last document
        self.bar.close()


def _skip(problems: list[dict], where: str, problem: str, level: int = logging.ERROR) -> None:
    """Record a skipped input; `where` is a file (and line), `problem` never holds document text."""
    problems.append({"input": where, "problem": problem})
    log.log(level, "%s: %s, skipped", where, problem)


def list_input_files(inputs: list[Path], problems: list[dict]) -> list[tuple[Path, Path]]:
    """(file, the folder its output name is relative to) of every input, folders expanded and sorted."""
    files: list[tuple[Path, Path]] = []
    for inp in inputs:
        if inp.is_dir():
            found = sorted(p for p in inp.rglob("*") if p.is_file() and p.suffix in INPUT_SUFFIXES)
            if not found:
                _skip(problems, str(inp), "no .txt or .jsonl files")
            files += [(p, inp) for p in found]
        elif inp.exists():
            files.append((inp, inp.parent))
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
        yield Source(str(path.relative_to(base).with_suffix("")), text, str(path), bom, size=len(raw) + pending)
        pending = 0


def _jsonl_sources(path: Path, problems: list[dict]) -> Iterator[Source | int]:
    """One Source per record line, read line by line (a file of any size); the byte count of each
    line skipped. Lines are decoded one by one, so that one line that is not UTF-8 costs that
    record only. Split on "\\n" only: str.splitlines() would also split inside a record at a
    U+2028, U+0085..., which JSON allows raw in strings; a CRLF's "\\r" is whitespace around the
    JSON, and a BOM before the first record is dropped."""
    found = False
    try:
        handle = path.open("rb")
    except OSError as err:
        _skip(problems, str(path), f"unreadable ({err.strerror})")
        return
    with handle:
        for lineno, line_bytes in enumerate(handle, start=1):
            size = len(line_bytes)
            if lineno == 1 and line_bytes.startswith(BOM_BYTES):
                line_bytes = line_bytes[len(BOM_BYTES):]
            if not line_bytes.strip():
                yield size
                continue
            found = True
            where = f"{path}:{lineno}"
            try:
                data = srsly.json_loads(line_bytes.decode("utf-8"))
            except UnicodeDecodeError:
                _skip(problems, where, "not UTF-8")
                yield size
                continue
            except ValueError:
                _skip(problems, where, "not valid JSON")
                yield size
                continue
            if not isinstance(data, dict) or not isinstance(data.get("text"), str):
                _skip(problems, where, "no `text` string")
                yield size
                continue
            rid = str(data.get("id", f"{path.stem}-{lineno}"))
            if not data["text"].strip():
                _skip(problems, where, f"record {rid!r} is empty", logging.WARNING)
                yield size
                continue
            lang = data.get("lang")
            patient = data.get("patient_id")
            yield Source(rid, data["text"], where, lang=lang if isinstance(lang, str) and lang.strip() else None, size=size,
                         patient_id=None if patient is None else str(patient))
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
    """Rows go to OUT.partial as documents finish, each in one write (a killed process keeps every
    finished row; the disk is synced at most once a second, which costs ~3 ms here), and
    OUT.partial becomes OUT when the run ends. A failed run leaves an earlier OUT as it was, and
    its finished rows, complete lines only, in OUT.partial (replaced by the next run)."""

    SYNC_SECONDS = 1.0

    def __init__(self, out: Path):
        self.out = out
        self.partial = out.with_name(out.name + ".partial")
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            self.handle = self.partial.open("w", encoding="utf-8")
        except OSError as err:
            raise OutputError(self.partial, err) from None
        self.rows = 0
        self.last_sync = time.monotonic()

    def write(self, row: dict) -> None:
        sync = time.monotonic() - self.last_sync >= self.SYNC_SECONDS
        append_line(self.handle, srsly.json_dumps(row), sync=sync)  # the whole line or nothing
        self.rows += 1
        if sync:
            self.last_sync = time.monotonic()

    def commit(self) -> None:
        try:
            os.fsync(self.handle.fileno())
            self.handle.close()
            os.replace(self.partial, self.out)
        except OSError as err:
            raise OutputError(self.out, err) from None

    def abort(self) -> None:
        self.handle.close()
        log.error("run stopped: %s unchanged; the %d documents finished are in %s", self.out, self.rows, self.partial)


def project_packs(exclude: set[str]):
    """Every regex pack of the project (factory --root) but those of `exclude` locales."""
    from .packs import PACKS_DIR
    from deid_runtime.regex_pack import RegexPack

    if not PACKS_DIR.is_dir():
        return []
    return [RegexPack.from_dir(p) for p in sorted(PACKS_DIR.iterdir())
            if (p / "pack.yml").exists() and p.name not in exclude]


def build_router(pipelines: list[str] | None = None, fallback: str | None = None, lang: str | None = None,
                 seed: int = 0, detect_chars: int = 1000, min_confidence: float = DEFAULT_MIN_CONFIDENCE,
                 min_letters: int = DEFAULT_MIN_LETTERS, recall_bias: float | str | None = None) -> Router:
    """The router of `factory redact`: the named (default: every installed) deid_* pipelines; with
    the union fallback, the project's packs of the other languages run too. `recall_bias` sets the
    o_bias of every pipeline's deid_tagger (the recall knob)."""
    router = Router.from_names(pipelines, fallback=None, seed=seed, detect_chars=detect_chars,
                               min_confidence=min_confidence, min_letters=min_letters, force_lang=lang)
    if recall_bias is not None:
        set_recall_bias(router.pipelines, recall_bias)
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


def redact_files(inputs: list[Path], out: Path, output_format: str = "text", mode: str = "tag",
                 pipelines: list[str] | None = None, fallback: str | None = None, lang: str | None = None,
                 seed: int = 0, batch_size: int = 16, detect_chars: int = 1000,
                 min_confidence: float = DEFAULT_MIN_CONFIDENCE, min_letters: int = DEFAULT_MIN_LETTERS,
                 router: Router | None = None, progress: bool = True, allow_partial: bool = False,
                 key: bytes | None = None, demo_key: bool = False, recall_bias: float | str | None = None) -> dict:
    """Route, redact (or annotate) and write every document; returns the report.

    report["complete"] is False when a document was not written or an input was skipped. A missing
    input raises FileNotFoundError before anything runs, unless allow_partial. Surrogate mode draws
    from the secret `key` (or the demo key of `seed` when `demo_key`) and refuses to start without one."""
    if output_format not in OUTPUT_FORMATS:
        raise ValueError(f"unknown output format {output_format!r} (expected one of {', '.join(OUTPUT_FORMATS)})")
    if mode not in CLI_MODES:
        raise ValueError(f"unknown mode {mode!r} (expected one of {', '.join(CLI_MODES)})")
    if mode == ANNOTATE and output_format == "text":
        raise ValueError("--mode annotate writes the PHI spans, which needs --format jsonl or brat")
    if mode == "surrogate" and key is None and not demo_key:
        raise SurrogateKeyError(f"surrogate mode needs a secret key: --key-file FILE or ${KEY_ENV} "
                                "(--demo-key for a demonstration with a key that is not secret)")
    missing = [str(p) for p in inputs if not p.exists()]
    if missing and not allow_partial:
        raise FileNotFoundError(f"input not found: {', '.join(missing)} (nothing was processed; --allow-partial skips missing inputs)")
    if router is None:
        router = build_router(pipelines, fallback, lang, seed, detect_chars, min_confidence, min_letters, recall_bias)
    problems: list[dict] = []
    unrouted: list[dict] = []
    written_from: dict[str, str] = {}  # output name -> the input that took it
    files = list_input_files(inputs, problems)
    bar = _Progress(sum(p.stat().st_size for p, _ in files), progress)
    sources = iter_sources(files, problems)
    jsonl = _JsonlOutput(out) if output_format == "jsonl" else None
    written = 0
    try:
        for routed in router.pipe(((s.text, s) for s in sources), batch_size=batch_size, as_tuples=True,
                                  declared_lang=lambda s: s.lang, with_docs=False):
            src: Source = routed.meta
            bar.done(src)
            if routed.pipeline in (FALLBACK, UNROUTED):
                unrouted.append({"input": src.origin, "id": src.id, "lang": routed.lang, "how": routed.how,
                                 "pipeline": routed.pipeline, "reason": routed.reason})
            if routed.pipeline == UNROUTED:
                log.error("%s: document %r not redacted (%s): not written", src.origin, src.id, routed.reason)
                continue
            if routed.pipeline == FALLBACK:
                log.warning("%s: document %r went to the fallback %r (%s)", src.origin, src.id, router.fallback_name, routed.reason)
            name = _out_name(src.id)
            if output_format != "jsonl":
                if name in written_from:
                    _skip(problems, src.origin, f"output name {name!r} already written for {written_from[name]}")
                    continue
                written_from[name] = src.origin
            _write_document(out, output_format, mode, src, routed, name, seed, jsonl, key, demo_key)
            written += 1
        if jsonl is not None:
            jsonl.commit()
    except BaseException:
        if jsonl is not None and not jsonl.handle.closed:
            jsonl.abort()
        raise
    finally:
        bar.close()
    not_written = sum(1 for u in unrouted if u["pipeline"] == UNROUTED)
    return {"written": written, "not_written": not_written, "skipped": problems, "unrouted": unrouted,
            "complete": not problems and not not_written, "router": router.stats.to_dict(),
            "pipelines": sorted(router.pipelines), "fallback": router.fallback_name, "lang": router.force_lang,
            "mode": mode, "format": output_format}


def _write_document(out: Path, output_format: str, mode: str, src: Source, routed: Routed, name: str,
                    seed: int, jsonl: _JsonlOutput | None, key: bytes | None = None, demo_key: bool = False) -> None:
    spans = [(s.start, s.end, s.label) for s in routed.spans]
    shift = len(src.bom)  # output offsets count the BOM, as in the file
    if mode == ANNOTATE:
        if output_format == "brat":
            write_text_atomic(out / f"{name}.txt", src.bom + src.text)
            write_text_atomic(out / f"{name}.ann", _brat_ann(src.text, spans, shift))
        else:
            record = Record(src.id, routed.lang, src.text,
                            [Span(s.start, s.end, s.label, {"source": s.source}) for s in routed.spans],
                            {"pipeline": routed.pipeline, "how": routed.how})
            jsonl.write(record.to_dict())
        return
    surrogate_lang = routed.lang if routed.pipeline != FALLBACK else None
    redacted, new_spans = redact_text(src.text, spans, mode=mode, lang=surrogate_lang, seed=seed, doc_id=src.id,
                                      key=key, patient_id=src.patient_id, demo=demo_key)
    if output_format == "text":
        write_text_atomic(out / f"{name}.txt", src.bom + redacted)
    elif output_format == "brat":
        write_text_atomic(out / f"{name}.txt", src.bom + redacted)
        write_text_atomic(out / f"{name}.ann", _brat_ann(redacted, new_spans, shift))
    else:
        jsonl.write({"id": src.id, "lang": routed.lang, "pipeline": routed.pipeline,
                     "spans": [{"start": s.start + shift, "end": s.end + shift, "label": s.label, "source": s.source}
                               for s in routed.spans],
                     "redacted": src.bom + redacted})


def _summary(result: dict, out: Path) -> str:
    r = result["router"]
    line = f"{result['written']} documents written to {out}; per pipeline {r['by_pipeline']}"
    if result["not_written"]:
        line += f"; {result['not_written']} documents not routed, not written"
    if r["unrouted_languages"]:
        line += f"; unrouted languages {r['unrouted_languages']}"
    return line + f"; {len(result['skipped'])} inputs skipped"


def redact_command(
    inputs: list[Path] = typer.Argument(..., help="Text files, folders (*.txt, *.jsonl) or JSONL record files"),
    out: Path = typer.Option(..., "--out", "-o", help="Output folder (text, brat) or file (jsonl)"),
    output_format: str = typer.Option("text", "--format", "-f", help="text | jsonl | brat"),
    mode: str = typer.Option("tag", "--mode", "-m", help="tag ([PERSON]) | mask (****) | surrogate | annotate "
                             "(no redaction: the original text and its PHI spans; jsonl or brat)"),
    pipelines: str = typer.Option(None, "--pipelines", "-p", help="Comma-separated deid_<lang> packages or folders (default: all installed)"),
    lang: str = typer.Option(None, "--lang", "-l", help="Send every document to this language's pipeline (no detection)"),
    fallback: str = typer.Option("none", "--fallback", help="What runs on a document no pipeline takes: 'none' (it is not "
                                 "written, exit status 3), 'union' (every pipeline + every pack of the project) or "
                                 "a loaded pipeline's language"),
    min_confidence: float = typer.Option(DEFAULT_MIN_CONFIDENCE, help="Detection probability a language needs"),
    min_letters: int = typer.Option(DEFAULT_MIN_LETTERS, help="Letters a document needs for its language to be detected"),
    detect_chars: int = typer.Option(1000, "--detect-chars", help="Characters read for language detection"),
    seed: int = typer.Option(0, "--seed", help="Seed of language detection (and of the --demo-key)"),
    key_file: Path = typer.Option(None, "--key-file", help=f"Secret key of surrogate mode (a file of at least 16 bytes; else ${KEY_ENV})"),
    demo_key: bool = typer.Option(False, "--demo-key", help="Surrogate mode with a key derived from --seed: NOT secret, for demonstrations only"),
    recall_bias: str = typer.Option(None, "--recall-bias", help="Recall knob: the deid_tagger's o_bias, a number (0 = as "
                                    "trained; higher masks more unsure tokens; see the evaluation report's curve) or "
                                    "'high' (token recall >= 0.99 on real Spanish notes, docs/training.md)"),
    batch_size: int = typer.Option(16, "--batch-size", help="Documents per nlp.pipe batch (memory grows with it)"),
    allow_partial: bool = typer.Option(False, "--allow-partial", help="Exit 0 even when documents were not written or "
                                       "inputs were skipped (missing inputs are skipped too)"),
    report: Path = typer.Option(None, "--report", help="Write the run report (JSON) here"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar"),
) -> None:
    """Redact documents with the deid_<lang> pipeline of their language; fail closed (exit 3) on any
    document no pipeline takes or input that cannot be read."""
    logging.basicConfig(level=logging.INFO, format="%(levelname)s: %(message)s")
    names = [p.strip() for p in pipelines.split(",") if p.strip()] if pipelines else None
    try:
        key = load_key(key_file) if mode == "surrogate" and not demo_key else None
        result = redact_files(inputs, out, output_format=output_format, mode=mode, pipelines=names,
                              fallback=None if fallback == "none" else fallback, lang=lang, seed=seed,
                              batch_size=batch_size, detect_chars=detect_chars, min_confidence=min_confidence,
                              min_letters=min_letters, progress=not quiet, allow_partial=allow_partial,
                              key=key, demo_key=demo_key, recall_bias=recall_bias)
    except KeyboardInterrupt:
        typer.echo(f"interrupted: the documents finished are in {out}"
                   + (" (.partial)" if output_format == "jsonl" else ""), err=True)
        raise typer.Exit(130) from None
    except (RouterError, ValueError, OSError) as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(1) from None
    if report:
        write_text_atomic(report, srsly.json_dumps(result, indent=2))
    typer.echo(_summary(result, out))
    if not result["complete"]:
        if allow_partial:
            typer.echo("incomplete run accepted (--allow-partial)", err=True)
        else:
            typer.echo(f"error: incomplete run: {result['not_written']} documents not written, "
                       f"{len(result['skipped'])} inputs skipped (see above; --allow-partial accepts this)", err=True)
            raise typer.Exit(EXIT_INCOMPLETE)
