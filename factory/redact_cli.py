"""`factory redact`: the language router and redaction over files, folders and JSONL.

Inputs: text files, folders (every *.txt and *.jsonl below them, sorted) and JSONL files of
records ({"id", "text", ...}). Documents stream through the router (nlp.pipe in batches, bounded
chunks) with a progress bar. A file that is not UTF-8, an empty file and a broken JSONL line
get a message naming the file (and line) and are skipped; the batch goes on. The report
(--report) counts documents per pipeline, unrouted languages and skipped inputs. No document
text is ever logged.

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

from .records import write_text_atomic
from .runtime.redact import MODES, redact_text
from .runtime.router import Router

log = logging.getLogger(__name__)
OUTPUT_FORMATS = ("text", "jsonl", "brat")
_SAFE_ID = re.compile(r"[^\w.\-]+")


@dataclass
class Source:
    id: str  # also the relative output name
    text: str
    origin: str  # file (and line) it came from, for messages


def iter_sources(inputs: list[Path], problems: list[dict]) -> Iterator[Source]:
    """Documents from files, folders and JSONL; problems (skipped inputs) are appended to `problems`."""
    for inp in inputs:
        if inp.is_dir():
            files = sorted(p for p in inp.rglob("*") if p.is_file() and p.suffix in (".txt", ".jsonl"))
            base = inp
        elif inp.exists():
            files, base = [inp], inp.parent
        else:
            problems.append({"input": str(inp), "problem": "not found"})
            log.error("%s: not found, skipped", inp)
            continue
        for path in files:
            rel = path.relative_to(base)
            try:
                raw = path.read_bytes()
                text = raw.decode("utf-8")
            except UnicodeDecodeError as err:
                problems.append({"input": str(path), "problem": f"not UTF-8 (byte offset {err.start})"})
                log.error("%s: not UTF-8 (byte offset %d), skipped", path, err.start)
                continue
            except OSError as err:
                problems.append({"input": str(path), "problem": f"unreadable ({err.strerror})"})
                log.error("%s: unreadable (%s), skipped", path, err.strerror)
                continue
            if path.suffix == ".jsonl":
                yield from _jsonl_sources(path, text, problems)
                continue
            if not text.strip():
                problems.append({"input": str(path), "problem": "empty"})
                log.warning("%s: empty, skipped", path)
                continue
            yield Source(str(rel.with_suffix("")), text, str(path))


def _jsonl_sources(path: Path, text: str, problems: list[dict]) -> Iterator[Source]:
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        try:
            data = json.loads(line)
        except ValueError:
            problems.append({"input": where, "problem": "not valid JSON"})
            log.error("%s: not valid JSON, skipped", where)
            continue
        if not isinstance(data, dict) or not isinstance(data.get("text"), str):
            problems.append({"input": where, "problem": "no `text` string"})
            log.error("%s: record has no `text` string, skipped", where)
            continue
        rid = str(data.get("id", f"{path.stem}-{lineno}"))
        if not data["text"].strip():
            problems.append({"input": where, "problem": f"record {rid!r} is empty"})
            log.warning("%s: record %r is empty, skipped", where, rid)
            continue
        yield Source(rid, data["text"], where)


def _out_name(doc_id: str) -> str:
    # ids become file names: keep folders from relative paths, neutralise anything else
    parts = [_SAFE_ID.sub("_", p) for p in Path(doc_id).parts if p not in ("..", "/", "")]
    return str(Path(*parts)) if parts else "doc"


def redact_files(inputs: list[Path], out: Path, output_format: str = "text", mode: str = "tag",
                 pipelines: list[str] | None = None, fallback: str | None = "union", seed: int = 0,
                 batch_size: int = 32, detect_chars: int = 1000, router: Router | None = None,
                 progress: bool = True) -> dict:
    """Route, redact and write every document; returns the report."""
    if output_format not in OUTPUT_FORMATS:
        raise ValueError(f"unknown output format {output_format!r} (expected one of {', '.join(OUTPUT_FORMATS)})")
    if mode not in MODES:
        raise ValueError(f"unknown redaction mode {mode!r} (expected one of {', '.join(MODES)})")
    if router is None:
        router = Router.from_names(pipelines, fallback=fallback, detect_chars=detect_chars, seed=seed)
    problems: list[dict] = []
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
            spans = [(e.start_char, e.end_char, e.label_) for e in routed.doc.ents]
            sources_ = [e._.deid_source for e in routed.doc.ents]
            lang = routed.lang if routed.pipeline not in ("fallback", "none") else None
            redacted, _ = redact_text(src.text, spans, mode=mode, lang=lang, seed=seed, doc_id=src.id)
            name = _out_name(src.id)
            if output_format == "text":
                write_text_atomic(out / f"{name}.txt", redacted)
            elif output_format == "brat":
                write_text_atomic(out / f"{name}.txt", src.text)
                ann = "".join(f"T{i}\t{lab} {s} {e}\t{src.text[s:e].replace(chr(10), ' ')}\n"
                              for i, (s, e, lab) in enumerate(spans, start=1))
                write_text_atomic(out / f"{name}.ann", ann)
            else:
                row = {"id": src.id, "lang": routed.lang, "pipeline": routed.pipeline,
                       "spans": [{"start": s, "end": e, "label": lab, "source": so}
                                 for (s, e, lab), so in zip(spans, sources_)],
                       "redacted": redacted}
                jsonl_handle.write(srsly.json_dumps(row) + "\n")
                jsonl_handle.flush()
            written += 1
        if jsonl_handle is not None:
            jsonl_handle.close()
            os.replace(jsonl_tmp, out)
    finally:
        if jsonl_handle is not None and not jsonl_handle.closed:
            # keep what was done: the partial output stays next to OUT for inspection
            jsonl_handle.close()
            log.error("interrupted: partial output kept in %s", jsonl_tmp)
    return {"written": written, "skipped": problems, "router": router.stats.to_dict(),
            "pipelines": sorted(router.pipelines), "fallback": router.fallback_name,
            "mode": mode, "format": output_format}


def redact_command(
    inputs: list[Path] = typer.Argument(..., help="Text files, folders (*.txt, *.jsonl) or JSONL record files"),
    out: Path = typer.Option(..., "--out", "-o", help="Output folder (text, brat) or file (jsonl)"),
    output_format: str = typer.Option("text", "--format", "-f", help="text | jsonl | brat"),
    mode: str = typer.Option("tag", "--mode", "-m", help="tag ([PERSON]) | mask (****) | surrogate"),
    pipelines: str = typer.Option(None, "--pipelines", "-p", help="Comma-separated deid_<lang> packages or folders (default: all installed)"),
    fallback: str = typer.Option("union", "--fallback", help="'union' (structured regex packs), a language code of a loaded pipeline, or 'none'"),
    seed: int = typer.Option(0, "--seed", help="Seed of language detection and surrogates"),
    batch_size: int = typer.Option(32, "--batch-size"),
    detect_chars: int = typer.Option(1000, "--detect-chars", help="Characters read for language detection"),
    report: Path = typer.Option(None, "--report", help="Write the run report (JSON) here"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar"),
) -> None:
    """Detect each document's language, run its deid_<lang> pipeline and write the redaction."""
    logging.basicConfig(level=logging.INFO, format="%(levelname)s: %(message)s")
    names = [p.strip() for p in pipelines.split(",") if p.strip()] if pipelines else None
    try:
        result = redact_files(inputs, out, output_format=output_format, mode=mode, pipelines=names,
                              fallback=None if fallback == "none" else fallback, seed=seed,
                              batch_size=batch_size, detect_chars=detect_chars, progress=not quiet)
    except (ValueError, OSError) as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(1)
    if report:
        write_text_atomic(report, srsly.json_dumps(result, indent=2))
    r = result["router"]
    typer.echo(f"{result['written']} documents written to {out}; per pipeline {r['by_pipeline']}; "
               f"unrouted languages {r['unrouted_languages']}; {len(result['skipped'])} inputs skipped")
