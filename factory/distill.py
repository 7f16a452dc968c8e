"""Stage: distill a small, fast deid_tagger (the student) from a trained pipeline (the teacher).

The teacher's BILUO tagger gives, for every token, a probability for each tag (O, B-X, I-X, L-X,
U-X). The student, a tagger with a narrower and shallower tok2vec of its own (a config such as
languages/<lc>/configs/student.cfg), is trained to give the same distributions: its loss is the
cross-entropy to the teacher's distribution, whose gradient at the softmax is the student's
probabilities minus the target, the same form as the teacher's own loss on one-hot gold tags
(BiluoTagger.get_loss). On a labeled note the target mixes in the gold tags (`gold_weight`); an
unlabeled note (any text: the generator's notes, a warehouse's own) learns from the teacher alone,
which is what distillation adds over training the small model on the gold tags.

Why the distributions and not the teacher's decoded entities: a token the teacher is unsure about
carries that doubt (P(O) = 0.6), and the recall knob (`o_bias`) acts on exactly these
probabilities; a student that matches them decodes like the teacher at every o_bias.

`distill_student()` is the stage; `python -m deid_factory distill` is its command. Writes
OUT/model-best (the student tagger alone, the held-out loss's best epoch), OUT/pipeline (the
student followed by the teacher's own regex pack and merger, with the teacher's o_bias, so that the
two pipelines differ by their tagger only) and OUT/distill_summary.json (counts, losses, agreement
with the teacher, seconds; no text).

Held out: `--dev` notes (a DocBin, the synthetic dev split) choose the epoch by the loss to the
teacher there, and report the student's tag agreement with the teacher and strict F1 against gold.
"""

from __future__ import annotations

import json
import logging
import random
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterable, Sequence

import numpy
import typer

from .logs import setup_command_logging
from .outputs import write_text_atomic, writes_to

log = logging.getLogger(__name__)

TAGGER = "deid_tagger"


class DistillError(RuntimeError):
    pass


@dataclass
class DistillSettings:
    """The [distill] block of a student config (languages/es/configs/student.cfg says why each)."""

    max_epochs: int = 12
    patience: int = 3
    batch_words: int = 1000
    gold_weight: float = 0.3
    temperature: float = 1.0
    dropout: float = 0.1
    learn_rate: float = 0.002
    seed: int = 0

    @classmethod
    def from_config(cls, block: dict, **overrides) -> "DistillSettings":
        known = {k: v for k, v in {**block, **{k: v for k, v in overrides.items() if v is not None}}.items()
                 if k in cls.__dataclass_fields__}
        unknown = set(block) - set(cls.__dataclass_fields__)
        if unknown:
            raise DistillError(f"[distill] has unknown settings: {sorted(unknown)}")
        settings = cls(**known)
        if not 0.0 <= settings.gold_weight <= 1.0:
            raise DistillError("gold_weight must be within [0, 1]")
        if settings.temperature <= 0:
            raise DistillError("temperature must be > 0")
        return settings


@dataclass
class Note:
    """One training or held-out note: the student's Doc, the teacher's target per token, and the
    gold tag ids when the note is labeled (None: unlabeled)."""

    doc: object
    target: numpy.ndarray
    gold: numpy.ndarray | None


# --------------------------------------------------------------------------- the teacher
def load_teacher(path: str | Path):
    import spacy

    from deid_runtime import merger, pack_component  # noqa: F401  (register the runtime components)

    teacher = spacy.load(path)
    if TAGGER not in teacher.pipe_names:
        raise DistillError(f"{path}: the teacher has no {TAGGER} (distillation learns the BILUO tagger's probabilities)")
    return teacher


def teacher_distributions(teacher, docs: Sequence, temperature: float = 1.0, batch_size: int = 16) -> list[numpy.ndarray]:
    """The teacher tagger's tag probabilities (tokens x tags) for each doc, at `temperature`.

    The docs are the student's; the teacher reads copies made by its own tokenizer, and a doc whose
    tokens differ (a different tokenizer) is refused, since the targets are per token."""
    tagger = teacher.get_pipe(TAGGER)
    upstream = [proc for name, proc in teacher.pipeline if name != TAGGER and _feeds(teacher, name)]
    out: list[numpy.ndarray] = []
    for start in range(0, len(docs), batch_size):
        batch = [teacher.make_doc(doc.text) for doc in docs[start:start + batch_size]]
        for mine, theirs in zip(docs[start:start + batch_size], batch):
            if len(mine) != len(theirs) or any(a.idx != b.idx for a, b in zip(mine, theirs)):
                raise DistillError("the teacher's tokenizer cuts a note differently from the student's")
        for proc in upstream:  # the shared tok2vec: its output reaches the tagger's listener as doc.tensor
            batch = list(proc.pipe(batch))
        for probs in tagger.predict(batch):
            out.append(soften(numpy.asarray(probs, dtype="float32"), temperature))
    return out


def _feeds(nlp, name: str) -> bool:
    """Whether component `name` runs before the tagger and the tagger needs it (the tok2vec)."""
    return nlp.pipe_names.index(name) < nlp.pipe_names.index(TAGGER) and name in ("tok2vec",)


def soften(probs: numpy.ndarray, temperature: float) -> numpy.ndarray:
    """The distribution at another softmax temperature: softmax(log p / T)."""
    if temperature == 1.0 or probs.size == 0:
        return probs
    logits = numpy.log(numpy.clip(probs, 1e-12, 1.0)) / temperature
    logits -= logits.max(axis=1, keepdims=True)
    exp = numpy.exp(logits)
    return (exp / exp.sum(axis=1, keepdims=True)).astype("float32")


# --------------------------------------------------------------------------- the student
def load_student_config(path: str | Path):
    """(spaCy config of the student pipeline, its [distill] block)."""
    from spacy.util import load_config

    path = Path(path)
    if not path.exists():
        raise DistillError(f"{path}: student config not found")
    cfg = load_config(path, interpolate=False)
    block = dict(cfg.pop("distill", {}))
    if TAGGER not in cfg["nlp"]["pipeline"]:
        raise DistillError(f"{path}: the student config has no {TAGGER}")
    return cfg, block


def make_student(cfg, labels: Sequence[str], sample_docs: Sequence):
    """A new student pipeline from its config, its tagger given the teacher's tags in the teacher's
    order (the targets' columns)."""
    import spacy
    from spacy.training import Example

    from deid_runtime import tokenization  # noqa: F401  (registers deid.Tokenizer.v1)

    nlp = spacy.util.load_model_from_config(cfg, auto_fill=True, validate=True)
    tagger = nlp.get_pipe(TAGGER)
    entity_labels = sorted({tag.split("-", 1)[1] for tag in labels if tag != "O"})
    examples = [Example(doc, doc) for doc in sample_docs[:10]] or [Example(nlp.make_doc("."), nlp.make_doc("."))]
    tagger.initialize(lambda: examples, nlp=nlp, labels=entity_labels)
    if tuple(tagger.labels) != tuple(labels):
        raise DistillError("the student's tags differ from the teacher's (labels or order)")
    return nlp


def gold_tag_ids(doc, labels: Sequence[str]) -> numpy.ndarray:
    """The gold BILUO tag id of each token of a labeled doc (-1: no usable tag)."""
    from spacy.training import offsets_to_biluo_tags

    index = {tag: i for i, tag in enumerate(labels)}
    tags = offsets_to_biluo_tags(doc, [(e.start_char, e.end_char, e.label_) for e in doc.ents])
    return numpy.asarray([index.get(tag, -1) for tag in tags], dtype="int32")


def targets(teacher_probs: numpy.ndarray, gold: numpy.ndarray | None, gold_weight: float) -> numpy.ndarray:
    """The student's target per token: the teacher's distribution, mixed with the one-hot gold tag
    where the note is labeled and the token has one."""
    if gold is None or gold_weight == 0.0:
        return teacher_probs
    mixed = teacher_probs * (1.0 - gold_weight)
    rows = numpy.nonzero(gold >= 0)[0]
    mixed[rows, gold[rows]] += gold_weight
    mixed[gold < 0] = teacher_probs[gold < 0]
    return mixed


def batches(notes: Sequence[Note], batch_words: int, rng: random.Random) -> Iterable[list[Note]]:
    order = list(range(len(notes)))
    rng.shuffle(order)
    batch, words = [], 0
    for i in order:
        batch.append(notes[i])
        words += len(notes[i].doc)
        if words >= batch_words:
            yield batch
            batch, words = [], 0
    if batch:
        yield batch


def update(tagger, batch: Sequence[Note], optimizer) -> float:
    """One step of the student on a batch: the summed cross-entropy to the targets."""
    docs = [n.doc for n in batch]
    probs, backprop = tagger.model.begin_update(docs)
    d_scores, loss = [], 0.0
    for p, note in zip(probs, batch):
        p = tagger.model.ops.to_numpy(p)
        d_scores.append(tagger.model.ops.asarray(p - note.target, dtype="float32"))
        loss += float(-(note.target * numpy.log(numpy.clip(p, 1e-12, 1.0))).sum())
    backprop(d_scores)
    tagger.finish_update(optimizer)
    return loss


def held_out(tagger, notes: Sequence[Note], teacher_tags: Sequence[numpy.ndarray]) -> dict:
    """The student on held-out notes: cross-entropy to the teacher per token, and the share of
    tokens where its decoded tag is the teacher's decoded tag (all tokens, and the tokens either
    calls PHI: the agreement that matters, most tokens being O for both)."""
    loss, tokens, same, phi, phi_same = 0.0, 0, 0, 0, 0
    outside = tagger.labels.index("O")
    for start in range(0, len(notes), 32):
        chunk = notes[start:start + 32]
        for note, probs, theirs in zip(chunk, tagger.predict([n.doc for n in chunk]), teacher_tags[start:start + 32]):
            probs = numpy.asarray(probs)
            loss += float(-(note.target * numpy.log(numpy.clip(probs, 1e-12, 1.0))).sum())
            mine = numpy.asarray(tagger.decode(probs), dtype="int32")
            tokens += len(mine)
            same += int((mine == theirs).sum())
            either = (mine != outside) | (theirs != outside)
            phi += int(either.sum())
            phi_same += int((mine[either] == theirs[either]).sum())
    return {"loss_per_token": round(loss / max(tokens, 1), 5), "tag_agreement": round(same / max(tokens, 1), 5),
            "phi_tag_agreement": round(phi_same / max(phi, 1), 5), "tokens": tokens}


# --------------------------------------------------------------------------- the stage
def read_notes(nlp, labeled: Sequence[str | Path] = (), unlabeled: Sequence[str | Path] = ()):
    """(labeled docs with gold ents, unlabeled docs), all made by the student's tokenizer.
    labeled: DocBins (.spacy); unlabeled: records JSONL (their spans ignored), DocBins (their
    entities ignored) or .txt files (one note a file)."""
    from spacy.tokens import DocBin

    from .records import read_records

    def docbin(path):
        ref = list(DocBin().from_disk(path).get_docs(nlp.vocab))
        made = []
        for doc in ref:
            mine = nlp.make_doc(doc.text)
            ents = [mine.char_span(e.start_char, e.end_char, label=e.label_, alignment_mode="expand") for e in doc.ents]
            from spacy.util import filter_spans

            mine.ents = filter_spans([e for e in ents if e is not None])
            made.append(mine)
        return made

    gold_docs = [doc for path in labeled for doc in docbin(path)]
    plain: list = []
    for path in unlabeled:
        path = Path(path)
        if path.suffix == ".spacy":
            plain += [nlp.make_doc(d.text) for d in docbin(path)]
        elif path.suffix == ".jsonl":
            plain += [nlp.make_doc(r.text) for r in read_records(path)]
        elif path.is_dir():
            plain += [nlp.make_doc(p.read_text(encoding="utf-8")) for p in sorted(path.glob("*.txt"))]
        else:
            raise DistillError(f"{path}: unlabeled notes must be .jsonl records, a .spacy DocBin or a folder of .txt")
    return gold_docs, plain


def distill_student(teacher_path: str | Path, config_path: str | Path, out_dir: str | Path,
                    train: Sequence[str | Path] = (), unlabeled: Sequence[str | Path] = (),
                    dev: str | Path | None = None, max_epochs: int | None = None,
                    max_notes: int | None = None, o_bias: float | None = None) -> dict:
    """Train the student of `config_path` on the teacher's distributions over the labeled `train`
    DocBins and the `unlabeled` notes; save the best epoch (lowest loss to the teacher on `dev`, or
    on a tenth of the notes held out when no dev is given) and the student pipeline. Returns the
    summary also written to OUT/distill_summary.json."""
    import spacy
    from thinc.api import Adam, fix_random_seed, set_dropout_rate

    out_dir = Path(out_dir)
    started = time.perf_counter()
    cfg, block = load_student_config(config_path)
    settings = DistillSettings.from_config(block, max_epochs=max_epochs)
    fix_random_seed(settings.seed)
    rng = random.Random(settings.seed)
    teacher = load_teacher(teacher_path)
    labels = tuple(teacher.get_pipe(TAGGER).labels)

    # the notes are read with the student's own tokenizer; its model is shaped by the tags alone
    student = make_student(cfg, labels, [])
    gold_docs, plain_docs = read_notes(student, train, unlabeled)
    if max_notes:
        gold_docs, plain_docs = gold_docs[:max_notes], plain_docs[:max_notes]
    if not gold_docs and not plain_docs:
        raise DistillError("no notes to distill on (give --train and/or --unlabeled)")
    if dev:
        dev_docs, _ = read_notes(student, [dev])
    else:  # a tenth of the notes, labeled first, held out
        pool = gold_docs or plain_docs
        cut = max(1, len(pool) // 10)
        dev_docs = pool[:cut]
        if gold_docs:
            gold_docs = gold_docs[cut:]
        else:
            plain_docs = plain_docs[cut:]
    tagger = student.get_pipe(TAGGER)

    t0 = time.perf_counter()
    notes = [Note(d, targets(p, g, settings.gold_weight), g)
             for d, p, g in zip(gold_docs, teacher_distributions(teacher, gold_docs, settings.temperature),
                                (gold_tag_ids(d, labels) for d in gold_docs))]
    notes += [Note(d, p, None) for d, p in zip(plain_docs, teacher_distributions(teacher, plain_docs, settings.temperature))]
    dev_probs = teacher_distributions(teacher, dev_docs, settings.temperature)
    dev_notes = [Note(d, p, None) for d, p in zip(dev_docs, dev_probs)]
    teacher_tagger = teacher.get_pipe(TAGGER)
    dev_teacher_tags = [numpy.asarray(teacher_tagger.decode(p), dtype="int32") for p in
                        teacher_distributions(teacher, dev_docs, 1.0)]
    teacher_seconds = time.perf_counter() - t0

    optimizer = Adam(learn_rate=settings.learn_rate, L2=0.01, grad_clip=1.0, L2_is_weight_decay=True)
    set_dropout_rate(tagger.model, settings.dropout)
    staging = out_dir / ".staging"
    staging.mkdir(parents=True, exist_ok=True)
    curve, best, best_epoch, since_best = [], None, 0, 0
    for epoch in range(1, settings.max_epochs + 1):
        e0 = time.perf_counter()
        loss = sum(update(tagger, batch, optimizer) for batch in batches(notes, settings.batch_words, rng))
        scores = held_out(tagger, dev_notes, dev_teacher_tags)
        row = {"epoch": epoch, "train_loss": round(loss, 2), **scores, "seconds": round(time.perf_counter() - e0, 1)}
        curve.append(row)
        log.info("epoch %d: held-out loss %.4f, tag agreement %.4f (PHI %.4f), %.0f s", epoch,
                 scores["loss_per_token"], scores["tag_agreement"], scores["phi_tag_agreement"], row["seconds"])
        if best is None or scores["loss_per_token"] < best["loss_per_token"]:
            best, best_epoch, since_best = scores, epoch, 0
            student.to_disk(staging / "model-best")
        else:
            since_best += 1
            if since_best >= settings.patience:
                break
    student.to_disk(staging / "model-last")

    best_model = spacy.load(staging / "model-best")
    pipeline = student_pipeline(best_model, teacher, o_bias)
    save_student_pipeline(pipeline, staging / "pipeline")
    gold_scores = score_on_gold(pipeline, dev_docs) if any(len(d.ents) for d in dev_docs) else None
    for name in ("model-best", "model-last", "pipeline"):
        target = out_dir / name
        if target.exists():
            shutil.rmtree(target)
        (staging / name).rename(target)
    staging.rmdir()
    summary = {
        "teacher": str(teacher_path), "config": str(config_path), "settings": asdict(settings),
        "labeled_notes": len(gold_docs), "unlabeled_notes": len(plain_docs), "held_out_notes": len(dev_docs),
        "training_tokens": sum(len(n.doc) for n in notes), "epochs_run": len(curve), "best_epoch": best_epoch,
        "best": best, "curve": curve, "held_out_gold": gold_scores,
        "teacher_parameters": _parameters(teacher), "student_parameters": _parameters(student),
        "teacher_seconds": round(teacher_seconds, 1), "wall_seconds": round(time.perf_counter() - started, 1),
    }
    write_text_atomic(out_dir / "distill_summary.json", json.dumps(summary, indent=2) + "\n")
    return summary


def student_pipeline(student, teacher, o_bias: float | None = None):
    """The student's tagger followed by the teacher's components after its tagger (regex pack,
    merger), decoding at the teacher's o_bias (or `o_bias`): the two pipelines differ by their
    tagger only. Saved with save_student_pipeline(), which writes the o_bias into the config."""
    names = teacher.pipe_names
    for name in names[names.index(TAGGER) + 1:]:
        student.add_pipe(name, source=teacher)
    student.get_pipe(TAGGER).o_bias = teacher.get_pipe(TAGGER).o_bias if o_bias is None else float(o_bias)
    student.meta.update({k: v for k, v in teacher.meta.items() if k in ("name", "version", "license")})
    student.meta["description"] = (f"{teacher.meta.get('description', '')} Tagger distilled from the "
                                   f"default's ({TAGGER} with a small tok2vec of its own).").strip()
    return student


def save_student_pipeline(pipeline, folder: Path) -> None:
    """to_disk, then the o_bias into the saved config: nlp.config is rebuilt from the component's
    construction settings, so the attribute alone would be lost at the next spacy.load."""
    from .package import set_recall_bias

    pipeline.to_disk(folder)
    set_recall_bias(folder, pipeline.get_pipe(TAGGER).o_bias)


def score_on_gold(pipeline, docs) -> dict:
    """Strict micro P/R/F1 of the pipeline's entities against the held-out notes' gold entities."""
    tp = fp = fn = 0
    for gold, doc in zip(docs, pipeline.pipe([d.text for d in docs])):
        want = {(e.start_char, e.end_char, e.label_) for e in gold.ents}
        got = {(e.start_char, e.end_char, e.label_) for e in doc.ents}
        tp, fp, fn = tp + len(want & got), fp + len(got - want), fn + len(want - got)
    p, r = tp / max(tp + fp, 1), tp / max(tp + fn, 1)
    return {"p": round(p, 4), "r": round(r, 4), "f": round(2 * p * r / max(p + r, 1e-9), 4)}


def _parameters(nlp) -> int:
    total = 0
    for _, proc in nlp.pipeline:
        model = getattr(proc, "model", None)
        if model is None or not hasattr(model, "walk"):
            continue
        for node in model.walk():
            for name in node.param_names:
                if node.has_param(name):
                    total += int(node.get_param(name).size)
    return total


def distill_command(
    teacher: Path = typer.Argument(..., help="The teacher: a trained deid pipeline folder with a deid_tagger (e.g. training/pipeline)"),
    out: Path = typer.Option(..., "--out", "-o", help="Output folder: model-best, model-last, pipeline, distill_summary.json"),
    config: Path = typer.Option(..., "--config", "-c", help="The student's config with its [distill] block (languages/<lc>/configs/student.cfg)"),
    train: list[Path] = typer.Option([], "--train", help="Labeled notes (DocBin); repeatable"),
    unlabeled: list[Path] = typer.Option([], "--unlabeled", help="Unlabeled notes: records JSONL, DocBin or a folder of .txt; repeatable"),
    dev: Path = typer.Option(None, "--dev", help="Held-out notes (DocBin) that choose the epoch; default a tenth of the notes"),
    max_epochs: int = typer.Option(None, "--max-epochs", help="Override the config's max_epochs"),
    max_notes: int = typer.Option(None, "--max-notes", help="At most this many labeled and this many unlabeled notes"),
    o_bias: float = typer.Option(None, "--o-bias", min=0.0, help="o_bias of the student pipeline's tagger (default: the teacher's)"),
) -> None:
    """Distill a small deid_tagger from a trained pipeline's tag probabilities (teacher -> student).
    Reports counts, losses and agreement, no text."""
    setup_command_logging()
    with writes_to(out / "distill_summary.json"):
        try:
            summary = distill_student(teacher, config, out, train, unlabeled, dev, max_epochs, max_notes, o_bias)
        except DistillError as err:
            typer.echo(f"error: {err}", err=True)
            raise typer.Exit(1)
    best = summary["best"]
    typer.echo(f"student: epoch {summary['best_epoch']} of {summary['epochs_run']}, held-out tag agreement with the "
               f"teacher {best['tag_agreement']:.4f} (PHI tokens {best['phi_tag_agreement']:.4f}); "
               f"{summary['student_parameters']:,} parameters against {summary['teacher_parameters']:,}; "
               f"{summary['wall_seconds']:.0f} s -> {out / 'pipeline'}")
