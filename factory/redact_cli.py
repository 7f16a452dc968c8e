"""`factory redact`: the language router and redaction over files, folders and JSONL.

Inputs: text files, folders (every *.txt and *.jsonl below them, sorted) and JSONL files of
records ({"id", "text", ...}). Documents stream through the router (nlp.pipe in batches, bounded
chunks) with a progress bar. A file that is not UTF-8, an empty file or record, a broken JSONL
line and a second document with the same output name get a message naming the file (and line)
and are skipped; the batch goes on. Documents whose language has no pipeline go to the fallback
and are listed in the report by input; with no fallback (--fallback none) they would come out
unredacted, so they are not written and are reported as skipped. The report (--report) counts
documents per pipeline, unrouted languages and skipped inputs. No document text is ever logged.

Line endings and a leading byte order mark (BOM) are kept: a CRLF file comes out CRLF, and a BOM
file comes out with its BOM. The BOM is hidden from the pipeline (it is not text, and glued to the
first word it could hide a name) and counted in output offsets, as brat counts it.
Documents longer than a pipeline's max_length are processed in pieces by the router.

Surrogate mode draws every surrogate from a secret key (--key-file, or $DEID_SURROGATE_KEY) and
refuses to start without one; --demo-key uses a key derived from --seed, which is not secret. A
JSONL record's `patient_id` makes that patient's documents share surrogates and date shift.

Outputs (--format):
  text   OUT/ folder: one redacted .txt per document (input folder layout kept; JSONL records
         become OUT/<record id>.txt)
  jsonl  OUT file: {"id", "lang", "pipeline", "spans": [{start, end, label, source}] (offsets in
         the original text), "redacted": redacted text}
  brat   OUT/ folder: <id>.txt (original text) + <id>.ann (T lines with canonical labels)
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import srsly
import typer

from .readers import BOM
from .records import write_text_atomic
from .runtime.redact import KEY_ENV, MODES, SurrogateKeyError, load_key, redact_text
from .runtime.router import Router

log = logging.getLogger(__name__)
OUTPUT_FORMATS = ("text", "jsonl", "brat")
_SAFE_ID = re.compile(r"[^\w.\-]+")
BOM_BYTES = BOM.encode("utf-8")


@dataclass
class Source:
    id: str  # also the relative output name
    text: str  # without the file's BOM, if it had one
    origin: str  # file (and line) it came from, for messages
    bom: str = ""  # the BOM the file started with ("" when none), written back in front of the output
    patient_id: str | None = None  # a JSONL record's `patient_id`: its surrogates are the patient's


def _skip(problems: list[dict], where: str, problem: str, level: int = logging.ERROR) -> None:
    """Record a skipped input; `where` is a file (and line), `problem` never holds document text."""
    problems.append({"input": where, "problem": problem})
    log.log(level, "%s: %s, skipped", where, problem)


def iter_sources(inputs: list[Path], problems: list[dict]) -> Iterator[Source]:
    """Documents from files, folders and JSONL; problems (skipped inputs) are appended to `problems`."""
    for inp in inputs:
        if inp.is_dir():
            files = sorted(p for p in inp.rglob("*") if p.is_file() and p.suffix in (".txt", ".jsonl"))
            base = inp
        elif inp.exists():
            files, base = [inp], inp.parent
        else:
            _skip(problems, str(inp), "not found")
            continue
        for path in files:
            rel = path.relative_to(base)
            try:
                raw = path.read_bytes()
            except OSError as err:
                _skip(problems, str(path), f"unreadable ({err.strerror})")
                continue
            if path.suffix == ".jsonl":
                yield from _jsonl_sources(path, raw, problems)
                continue
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as err:
                _skip(problems, str(path), f"not UTF-8 (byte offset {err.start})")
                continue
            bom = BOM if text.startswith(BOM) else ""
            text = text[len(bom):]
            if not text.strip():
                _skip(problems, str(path), "empty", logging.WARNING)
                continue
            yield Source(str(rel.with_suffix("")), text, str(path), bom)


def _jsonl_sources(path: Path, raw: bytes, problems: list[dict]) -> Iterator[Source]:
    """One Source per record line. Lines are decoded one by one, so that one line that is not UTF-8
    costs that record only. Split on "\\n" only: str.splitlines() would also split inside a record
    at a U+2028, U+0085..., which JSON allows raw in strings; a CRLF's "\\r" is whitespace around
    the JSON, and a BOM before the first record is dropped."""
    found = False
    for lineno, line_bytes in enumerate(raw.split(b"\n"), start=1):
        if lineno == 1 and line_bytes.startswith(BOM_BYTES):
            line_bytes = line_bytes[len(BOM_BYTES):]
        if not line_bytes.strip():
            continue
        found = True
        where = f"{path}:{lineno}"
        try:
            data = json.loads(line_bytes.decode("utf-8"))
        except UnicodeDecodeError:
            _skip(problems, where, "not UTF-8")
            continue
        except ValueError:
            _skip(problems, where, "not valid JSON")
            continue
        if not isinstance(data, dict) or not isinstance(data.get("text"), str):
            _skip(problems, where, "no `text` string")
            continue
        rid = str(data.get("id", f"{path.stem}-{lineno}"))
        if not data["text"].strip():
            _skip(problems, where, f"record {rid!r} is empty", logging.WARNING)
            continue
        patient = data.get("patient_id")
        yield Source(rid, data["text"], where, patient_id=None if patient is None else str(patient))
    if not found:
        _skip(problems, str(path), "empty", logging.WARNING)


def _ann_value(value: str) -> str:
    # a brat .ann line holds the annotated string on one line: line breaks (CR too) become spaces
    return value.replace("\r", " ").replace("\n", " ")


def _out_name(doc_id: str) -> str:
    # ids become file names: keep folders from relative paths, neutralise anything else
    parts = [_SAFE_ID.sub("_", p) for p in Path(doc_id).parts if p not in ("..", "/", "")]
    return str(Path(*parts)) if parts else "doc"


def redact_files(inputs: list[Path], out: Path, output_format: str = "text", mode: str = "tag",
                 pipelines: list[str] | None = None, fallback: str | None = "union", seed: int = 0,
                 batch_size: int = 16, detect_chars: int = 1000, router: Router | None = None,
                 progress: bool = True, key: bytes | None = None, demo_key: bool = False) -> dict:
    """Route, redact and write every document; returns the report. Surrogate mode draws from the
    secret `key` (or the demo key of `seed` when `demo_key`) and refuses to start without one."""
    if output_format not in OUTPUT_FORMATS:
        raise ValueError(f"unknown output format {output_format!r} (expected one of {', '.join(OUTPUT_FORMATS)})")
    if mode not in MODES:
        raise ValueError(f"unknown redaction mode {mode!r} (expected one of {', '.join(MODES)})")
    if mode == "surrogate" and key is None and not demo_key:
        raise SurrogateKeyError(f"surrogate mode needs a secret key: --key-file FILE or ${KEY_ENV} "
                                "(--demo-key for a demonstration with a key that is not secret)")
    if router is None:
        router = Router.from_names(pipelines, fallback=fallback, detect_chars=detect_chars, seed=seed)
    problems: list[dict] = []
    unrouted: list[dict] = []
    written_from: dict[str, str] = {}  # output name -> the input that took it
    sources = iter_sources(inputs, problems)
    stream = ((s.text, s) for s in sources)
    jsonl_handle = jsonl_tmp = None
    if output_format == "jsonl":
        out.parent.mkdir(parents=True, exist_ok=True)
        fd, jsonl_tmp = tempfile.mkstemp(prefix=out.name + ".", suffix=".tmp", dir=out.parent)
        jsonl_handle = os.fdopen(fd, "w", encoding="utf-8")
    written = 0
    try:
        from tqdm import tqdm

        for routed in tqdm(router.pipe(stream, batch_size=batch_size, as_tuples=True), desc="redact",
                           unit="doc", disable=not progress, file=sys.stderr):
            src: Source = routed.meta
            if routed.pipeline in ("fallback", "none"):
                unrouted.append({"input": src.origin, "id": src.id, "lang": routed.lang, "pipeline": routed.pipeline})
                log.info("%s: language %r has no pipeline (%s)", src.origin, routed.lang, routed.pipeline)
            if routed.pipeline == "none":
                # no pipeline and no fallback: the document would come out unredacted
                _skip(problems, src.origin, f"language {routed.lang!r} has no pipeline and no fallback (--fallback none): not written",
                      logging.WARNING)
                continue
            name = _out_name(src.id)
            if output_format != "jsonl":
                if name in written_from:
                    _skip(problems, src.origin, f"output name {name!r} already written for {written_from[name]}")
                    continue
                written_from[name] = src.origin
            spans = [(e.start_char, e.end_char, e.label_) for e in routed.doc.ents]
            sources_ = [e._.deid_source for e in routed.doc.ents]
            lang = routed.lang if routed.pipeline != "fallback" else None
            redacted, _ = redact_text(src.text, spans, mode=mode, lang=lang, seed=seed, doc_id=src.id, key=key,
                                      patient_id=src.patient_id, demo=demo_key)
            shift = len(src.bom)  # output offsets count the BOM, as in the file
            if output_format == "text":
                write_text_atomic(out / f"{name}.txt", src.bom + redacted)
            elif output_format == "brat":
                write_text_atomic(out / f"{name}.txt", src.bom + src.text)
                ann = "".join(f"T{i}\t{lab} {s + shift} {e + shift}\t{_ann_value(src.text[s:e])}\n"
                              for i, (s, e, lab) in enumerate(spans, start=1))
                write_text_atomic(out / f"{name}.ann", ann)
            else:
                row = {"id": src.id, "lang": routed.lang, "pipeline": routed.pipeline,
                       "spans": [{"start": s + shift, "end": e + shift, "label": lab, "source": so}
                                 for (s, e, lab), so in zip(spans, sources_)],
                       "redacted": src.bom + redacted}
                jsonl_handle.write(srsly.json_dumps(row) + "\n")
                jsonl_handle.flush()
            written += 1
        if jsonl_handle is not None:
            jsonl_handle.close()
            os.replace(jsonl_tmp, out)
    finally:
        if jsonl_handle is not None and not jsonl_handle.closed:
            # a half-written output is worse than none: drop it; an earlier OUT stays as it was
            jsonl_handle.close()
            os.unlink(jsonl_tmp)
            log.error("interrupted: nothing written to %s", out)
    return {"written": written, "skipped": problems, "unrouted": unrouted, "router": router.stats.to_dict(),
            "pipelines": sorted(router.pipelines), "fallback": router.fallback_name,
            "mode": mode, "format": output_format}


def redact_command(
    inputs: list[Path] = typer.Argument(..., help="Text files, folders (*.txt, *.jsonl) or JSONL record files"),
    out: Path = typer.Option(..., "--out", "-o", help="Output folder (text, brat) or file (jsonl)"),
    output_format: str = typer.Option("text", "--format", "-f", help="text | jsonl | brat"),
    mode: str = typer.Option("tag", "--mode", "-m", help="tag ([PERSON]) | mask (****) | surrogate"),
    pipelines: str = typer.Option(None, "--pipelines", "-p", help="Comma-separated deid_<lang> packages or folders (default: all installed)"),
    fallback: str = typer.Option("union", "--fallback", help="'union' (structured regex packs), a language code of a loaded pipeline, or 'none'"),
    seed: int = typer.Option(0, "--seed", help="Seed of language detection (and of the --demo-key)"),
    key_file: Path = typer.Option(None, "--key-file", help=f"Secret key of surrogate mode (a file of at least 16 bytes; else ${KEY_ENV})"),
    demo_key: bool = typer.Option(False, "--demo-key", help="Surrogate mode with a key derived from --seed: NOT secret, for demonstrations only"),
    batch_size: int = typer.Option(16, "--batch-size", help="documents per nlp.pipe batch (memory grows with it)"),
    detect_chars: int = typer.Option(1000, "--detect-chars", help="Characters read for language detection"),
    report: Path = typer.Option(None, "--report", help="Write the run report (JSON) here"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar"),
) -> None:
    """Detect each document's language, run its deid_<lang> pipeline and write the redaction."""
    logging.basicConfig(level=logging.INFO, format="%(levelname)s: %(message)s")
    names = [p.strip() for p in pipelines.split(",") if p.strip()] if pipelines else None
    try:
        key = load_key(key_file) if mode == "surrogate" and not demo_key else None
        result = redact_files(inputs, out, output_format=output_format, mode=mode, pipelines=names,
                              fallback=None if fallback == "none" else fallback, seed=seed,
                              batch_size=batch_size, detect_chars=detect_chars, progress=not quiet,
                              key=key, demo_key=demo_key)
    except (ValueError, OSError) as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(1)
    if report:
        write_text_atomic(report, srsly.json_dumps(result, indent=2))
    r = result["router"]
    typer.echo(f"{result['written']} documents written to {out}; per pipeline {r['by_pipeline']}; "
               f"unrouted languages {r['unrouted_languages']}; {len(result['skipped'])} inputs skipped")
