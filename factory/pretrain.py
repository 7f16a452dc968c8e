"""Optional: pretrain the tok2vec on unlabeled notes (`spacy pretrain`), for `factory train --init-tok2vec`.

`pretrain_tok2vec()` reads the unlabeled notes with self-training's reader (`selftrain.read_unlabeled`:
a .txt file, a .jsonl file with a `text` field, or a folder of them; annotations and other files
ignored), writes their text as the raw-text JSONL (`{"text": ...}` per line) that spaCy's
pretraining reads into CORPUS_DIR/raw.jsonl (the project's corpus folder), builds a pretraining
config from the language's training config plus spaCy's default [pretraining] block
(default_config_pretraining.cfg: objective `spacy.PretrainCharacters.v1`, which predicts the first
and last 4 characters of each word from its context), and runs spaCy's pretraining through its
Python API (`spacy.training.pretrain.pretrain`). The tok2vec it trains is the training config's own
[components.tok2vec] (MultiHashEmbed + MaxoutWindowEncoder), so its weights load into `factory train`
unchanged.

Notes are cut into pieces of at most PIECE_CHARS characters at line breaks (a longer line at a
space) before they are written: spaCy's raw-text reader drops whole documents of 500 tokens or more
by default, and a batch holds every piece's activations at once. The pieces are written in order;
the CNN sees a window of a few tokens, which a piece boundary at a line break does not cut.

Writes OUT/tok2vec.bin (the weights of the last epoch), OUT/config.cfg (the pretraining config),
OUT/log.jsonl (spaCy's per-epoch losses) and OUT/pretrain_report.json (counts, epochs, losses,
seconds). With keep_epochs, every epoch's weights stay in OUT/epochs/model<N>.bin.

Unlabeled notes are PHI. Their text is written only to CORPUS_DIR/raw.jsonl. The logs, the report,
the printed summary and error messages carry counts, losses and file names -- never note text
(nor the notes' path). tok2vec.bin holds the weights only: the hash embeddings keep no strings.
"""

from __future__ import annotations

import json
import logging
import shutil
import time
from pathlib import Path
from typing import Iterator

import typer

from .logs import setup_command_logging
from .records import RecordError, json_objects
from .outputs import (OutputError, write_bytes_atomic, write_chunks_atomic, write_json_atomic, write_text_atomic,
                      writes_to)
from .selftrain import SelfTrainError, read_unlabeled
from .train import OBJECTIVE, _gpu_available

log = logging.getLogger(__name__)

WEIGHTS = "tok2vec.bin"
REPORT = "pretrain_report.json"
RAW_TEXT = "raw.jsonl"
PIECE_CHARS = 2000


class PretrainError(RuntimeError):
    pass


# --------------------------------------------------------------------------- config
def pretrain_config(config_text: str, raw_text: str | Path, epochs: int, seed: int | None = None):
    """The pretraining config: the training config (its nlp, tokenizer and tok2vec) with spaCy's
    default [pretraining] block and [corpora.pretrain] reader merged in, as `spacy init fill-config
    --pretraining` merges them. Documents of any length are read (the notes are already cut into pieces)."""
    from spacy.language import DEFAULT_CONFIG_PRETRAIN_PATH
    from spacy.util import load_config, load_config_from_str

    cfg = load_config_from_str(config_text, interpolate=False)
    if "tok2vec" not in cfg["nlp"]["pipeline"] or "tok2vec" not in cfg["components"]:
        raise PretrainError("the training config has no tok2vec component to pretrain")
    cfg["pretraining"] = {}  # filled from the defaults below (a training config has it empty)
    cfg = load_config(DEFAULT_CONFIG_PRETRAIN_PATH, interpolate=False).merge(cfg)
    cfg["paths"]["raw_text"] = str(raw_text)
    cfg["paths"]["init_tok2vec"] = None
    cfg["pretraining"]["max_epochs"] = int(epochs)
    cfg["corpora"]["pretrain"]["max_length"] = 0
    if seed is not None:
        cfg["system"]["seed"] = int(seed)
    return cfg


# --------------------------------------------------------------------------- raw text
def note_pieces(text: str, max_chars: int = PIECE_CHARS) -> Iterator[str]:
    """The note cut at line breaks into pieces of at most max_chars characters (a line longer than
    that is cut at its last space before the limit, or at the limit); blank pieces are left out."""
    piece: list[str] = []
    size = 0
    for line in text.splitlines():
        while len(line) > max_chars:
            cut = line.rfind(" ", 0, max_chars)
            cut = cut if cut > 0 else max_chars
            head, line = line[:cut], line[cut:].lstrip(" ")
            if piece:
                yield "\n".join(piece)
                piece, size = [], 0
            if head.strip():
                yield head
        if piece and size + 1 + len(line) > max_chars:
            yield "\n".join(piece)
            piece, size = [], 0
        if piece or line.strip():
            piece.append(line)
            size += len(line) + (1 if size else 0)
    if piece and "".join(piece).strip():
        yield "\n".join(piece)


def write_raw_text(texts: list[str], path: Path, max_chars: int = PIECE_CHARS) -> dict:
    """Write the notes' pieces as spaCy raw-text JSONL ({"text": ...} per line); returns counts."""
    counts = {"pieces": 0, "characters": 0}

    def lines() -> Iterator[bytes]:
        for text in texts:
            counts["characters"] += len(text)
            for piece in note_pieces(text, max_chars):
                counts["pieces"] += 1
                yield (json.dumps({"text": piece}, ensure_ascii=False) + "\n").encode("utf-8")

    write_chunks_atomic(path, lines())
    return counts


# --------------------------------------------------------------------------- pretraining
def pretrain_tok2vec(notes: str | Path, config_path: str | Path, out_dir: str | Path, *, corpus_dir: str | Path,
                     epochs: int = 5, gpu_id: int = -1, seed: int | None = None, max_notes: int = 0,
                     keep_epochs: bool = False) -> dict:
    """Pretrain the tok2vec of `config_path` on the unlabeled notes; returns the report also written
    to OUT/pretrain_report.json. The notes' text goes to CORPUS_DIR/raw.jsonl only."""
    from spacy.training.pretrain import pretrain

    config_path, out_dir, corpus_dir = Path(config_path), Path(out_dir), Path(corpus_dir)
    if epochs < 1:
        raise PretrainError(f"epochs must be at least 1, not {epochs}")
    if not config_path.exists():
        raise PretrainError(f"{config_path}: training config not found (run `factory render-projects`)")
    try:
        texts, note_counts = read_unlabeled(notes, max_notes=max_notes)
    except SelfTrainError as err:
        raise PretrainError(str(err)) from None
    if not texts:
        raise PretrainError(f"no non-empty notes to pretrain on ({note_counts['notes_read']} read, all empty)")
    raw_text = corpus_dir / RAW_TEXT
    piece_counts = write_raw_text(texts, raw_text)
    del texts
    cfg = pretrain_config(config_path.read_text(encoding="utf-8"), raw_text.resolve(), epochs, seed)
    use_gpu = gpu_id if _gpu_available(gpu_id) else -1
    if gpu_id >= 0 and use_gpu < 0:
        log.warning("GPU %d requested but not usable (cupy/CUDA missing): pretraining on CPU", gpu_id)
    log.info("pretraining the tok2vec: %d notes, %d pieces, %d epochs, %s", note_counts["notes"],
             piece_counts["pieces"], epochs, f"GPU {use_gpu}" if use_gpu >= 0 else "CPU")
    # spaCy writes model<N>.bin and log.jsonl (appending) into a fresh staging folder; the last
    # epoch's weights and the log move into place at the end, so a failed run leaves the previous
    # weights whole
    staging = out_dir / ".staging"
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir()
    except OSError as err:
        raise OutputError(out_dir, err) from None
    t0 = time.perf_counter()
    try:
        with writes_to(out_dir):
            pretrain(cfg.interpolate(), staging, use_gpu=use_gpu, silent=True, skip_last=True)
            last = staging / f"model{epochs - 1}.bin"
            if not last.exists():
                raise PretrainError("spaCy's pretraining wrote no weights for the last epoch")
            seconds = time.perf_counter() - t0
            epoch_log = [line.value for line in json_objects(staging / "log.jsonl", "an epoch of spaCy's pretraining log")]
            write_text_atomic(out_dir / "config.cfg", cfg.to_str())
            shutil.copyfile(staging / "log.jsonl", out_dir / "log.jsonl")
            write_bytes_atomic(out_dir / WEIGHTS, last.read_bytes())
            shutil.rmtree(out_dir / "epochs", ignore_errors=True)
            if keep_epochs:
                (staging / "log.jsonl").unlink()
                staging.rename(out_dir / "epochs")
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    words = [int(row.get("nr_word", 0)) for row in epoch_log]
    report = {
        "unlabeled": note_counts,
        "pieces": piece_counts["pieces"],
        "piece_max_chars": PIECE_CHARS,
        "characters": piece_counts["characters"],
        "words_seen": words[-1] if words else 0,  # over all epochs (spaCy counts cumulatively)
        "epochs": epochs,
        "objective": OBJECTIVE,
        "epoch_losses": [round(float(row.get("epoch_loss", 0.0)), 4) for row in epoch_log],
        "device": f"gpu:{use_gpu}" if use_gpu >= 0 else "cpu",
        "seconds": round(seconds, 1),
        "weights": WEIGHTS,
        "weights_bytes": (out_dir / WEIGHTS).stat().st_size,
    }
    write_json_atomic(out_dir / REPORT, report)
    log.info("pretraining done: %d epochs in %.1f s, last epoch loss %s", epochs, seconds,
             report["epoch_losses"][-1] if report["epoch_losses"] else None)
    return report


# --------------------------------------------------------------------------- command
def pretrain_command(
    notes: str = typer.Argument(..., help="Unlabeled notes: a .txt file, a .jsonl file (`text` field) or a folder of them "
                                "(annotations and other files ignored)"),
    config: Path = typer.Option(..., "--config", "-c", help="The language's training config (configs/config.cfg)"),
    out: Path = typer.Option(..., "--out", "-o", help="Output folder (tok2vec.bin, pretrain_report.json, config.cfg, log.jsonl)"),
    corpus_dir: Path = typer.Option(..., "--corpus-dir", help="Where the notes' raw text goes (the project's corpus "
                                    "folder, e.g. corpus/pretrain): the notes are PHI"),
    epochs: int = typer.Option(5, "--epochs", min=1, help="Pretraining epochs (tok2vec.bin holds the last one's weights)"),
    gpu_id: int = typer.Option(-1, "--gpu-id", "-g", help="GPU id; -1 = CPU (falls back to CPU if no GPU)"),
    seed: int = typer.Option(None, "--seed", help="Random seed (default: the config's)"),
    max_notes: int = typer.Option(0, "--max-notes", min=0, help="Read at most this many notes (0 = all)"),
    keep_epochs: bool = typer.Option(False, "--keep-epochs", help="Keep every epoch's weights in OUT/epochs/"),
) -> None:
    """Pretrain the tok2vec on unlabeled notes (spaCy pretrain, character objective) for `train --init-tok2vec`.
    Reports counts, losses and seconds, no text."""
    setup_command_logging()
    if notes in ("", "-"):
        typer.echo("error: no unlabeled notes given (pretrain_path '-'): pass a .txt/.jsonl file or a folder "
                   "(spacy project run ... --vars.pretrain_path /path/to/notes)", err=True)
        raise typer.Exit(1)
    try:
        report = pretrain_tok2vec(notes, config, out, corpus_dir=corpus_dir, epochs=epochs, gpu_id=gpu_id,
                                  seed=seed, max_notes=max_notes, keep_epochs=keep_epochs)
    except (PretrainError, RecordError, OutputError) as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(1)
    typer.echo(json.dumps(report, indent=2))
