"""`factory redact`: the command around the redaction engine (redact_engine.py, where what a run
does is described: inputs, safe defaults, outputs, shards and resume). This module reads the
options, turns the engine's report into the summary line and the exit status:
0 complete, 1 the run could not start (bad option, missing input or pipeline), 3 finished but
incomplete (documents not written, inputs skipped), 130 interrupted."""

from __future__ import annotations

import logging
from pathlib import Path

import srsly
import typer

from .outputs import write_text_atomic
from .redact_engine import OutputFormat, RedactMode, redact_files
from .scaleout import ClusterOptions
from deid_runtime.redact import KEY_ENV, UNSURE, load_key
from deid_runtime.router import DEFAULT_MIN_CONFIDENCE, DEFAULT_MIN_LETTERS, RouterError

EXIT_INCOMPLETE = 3


def _summary(result: dict, out: Path) -> str:
    r = result["router"]
    # what was written, per pipeline: the router's own counts include documents a later check skipped
    line = f"{result['written']} documents written to {out} (per pipeline {result.get('written_per_pipeline', {})})"
    if result["not_written"]:
        line += f"; {result['not_written']} documents not routed, not written"
    if r["unrouted_languages"]:
        line += f"; unrouted languages {r['unrouted_languages']}"
    line += f"; {len(result['skipped'])} inputs skipped"
    done = result.get("redaction") or {}
    for action, what in (("tag", "tagged"), ("mask", "masked"), ("surrogate", "replaced by surrogates")):
        if action in done:
            line += f"; {sum(done[action].values())} spans {what} {done[action]}"
    if result.get("mode") == RedactMode.SURROGATE.value:
        unsure = done.get(UNSURE, {})
        line += (f"; {sum(unsure.values())} spans masked as [LABEL?] instead of replaced (failed their label's check)"
                 + (f" {unsure}" if unsure else ""))
    return line


def redact_command(
    inputs: list[Path] = typer.Argument(..., metavar="INPUT", help="Text files, folders (*.txt, *.jsonl) or JSONL record files"),
    out: Path = typer.Option(..., "--out", "-o", help="Output folder (text, brat) or file (jsonl)"),
    output_format: OutputFormat = typer.Option(OutputFormat.TEXT, "--format", "-f", help="text | jsonl | brat"),
    mode: RedactMode = typer.Option(RedactMode.TAG, "--mode", "-m", help="tag ([PERSON]) | mask (*****) | surrogate | annotate "
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
    report: Path = typer.Option(None, "--report", help="Write the run report (JSON) here, with each document's "
                                "redacted spans: id, labels, offsets and what was done (never text)"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar (there is none when stderr is not a terminal)"),
    mask_length: str = typer.Option("fixed", "--mask-length", help="Mask mode: 'fixed' (every span becomes '*****': "
                                    "its length is no hint) or 'keep' (one '*' per character, the layout kept)"),
    workers: int = typer.Option(1, "--workers", help="Worker processes: more than 1 starts a local Dask cluster (each "
                                "loads the pipelines)"),
    scheduler: str = typer.Option(None, "--scheduler", help="Address of a running Dask scheduler (tcp://host:8786): "
                                  "redact on its workers (each must have the pipelines installed)"),
) -> None:
    """Redact documents with the deid_<lang> pipeline of their language; fail closed (exit 3) on any
    document no pipeline takes or input that cannot be read."""
    logging.basicConfig(level=logging.INFO, format="%(levelname)s: %(message)s")
    names = [p.strip() for p in pipelines.split(",") if p.strip()] if pipelines else None
    try:
        key = load_key(key_file) if mode is RedactMode.SURROGATE and not demo_key else None
        result = redact_files(inputs, out, output_format=output_format, mode=mode, pipelines=names,
                              fallback=None if fallback == "none" else fallback, lang=lang, seed=seed,
                              batch_size=batch_size, detect_chars=detect_chars, min_confidence=min_confidence,
                              min_letters=min_letters, progress=not quiet, allow_partial=allow_partial,
                              key=key, demo_key=demo_key, recall_bias=recall_bias,
                              cluster=ClusterOptions(workers, scheduler), per_document=report is not None,
                              mask_length=mask_length)
    except KeyboardInterrupt:
        typer.echo(f"interrupted: the documents finished are in {out}"
                   + (" (.partial)" if output_format is OutputFormat.JSONL else "") + "; run the same command again to resume", err=True)
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
