"""Self-training on unlabeled target-language notes (bootstrapping, as in Medina's thesis).

Each round:
  1. label: the current pipeline (NER + regex pack + merger) labels the unlabeled notes; every
     entity of doc.ents gets a confidence (0-1), the larger of
       - the NER's: the lowest, over the span's tokens, of the tagger's probability that the token
         is in an entity of the span's label (P(B-X) + P(I-X) + P(L-X) + P(U-X), deid_tagger);
       - the regex pack's score (`._.deid_score`) for spans the pack found;
  2. select (`select_spans`, a pure function): a span is kept if its confidence reaches its
     label's threshold; then class-proportion control: of the N spans that passed, a label keeps
     at most ceil(max_share_factor * max(gold share, min_share) * N), the most confident first,
     so that one label (dates, say, that both the NER and the pack find with confidence) does not
     take over the pseudo labels;
  3. uncertain tokens: a token outside every kept span whose highest tag probability is below
     token_threshold is uncertain. "mask" (default) keeps the note with its confident spans only,
     and leaves the uncertain tokens and the tokens of dropped spans *unannotated* (missing NER
     annotation: neither PHI nor O, out of the loss) -- a PHI the model was unsure about must not
     be taught as O; "drop" leaves the whole note out;
  4. retrain from scratch on gold train + pseudo-labelled notes (`train.train_model`), assemble
     the round's pipeline and score it on dev (combined strict micro F1, as evaluate reports it);
  5. keep the round only if dev strict F1 beats the best so far by more than min_improvement and
     dev token recall does not fall by more than max_recall_drop (recall first); with
     calibrate_recall (the default) the round is scored at the smallest o_bias (>= the build's
     recall_bias) whose dev token recall reaches that bound, so rounds are compared at equal
     recall, and the kept round is packaged with that o_bias;
     otherwise stop (the round's model is discarded). The next round relabels the whole pool with
     the improved pipeline (pseudo labels are not accumulated across rounds).

Unlabeled notes are PHI. Their text goes only into the pseudo-labelled DocBins under corpus_dir
(the project's corpus folder). Logs, the report and error messages carry counts and scores only.
The round models are trained on the notes, and spaCy saves every string it saw with a model
(vocab/strings.json: words, lowercase forms, prefixes, suffixes): each round model's string table
is cut back to the strings of the labelling base pipeline (trained on gold data only) plus the
labels, so nothing of the notes' text is in the pipeline folders beyond the weights (the
features are hashes; the strings are not needed to predict).

Defaults: factory/templates/selftrain.yml. Command: `factory selftrain` (docs/self_training.md).
"""

from __future__ import annotations

import json
import logging
import math
import shutil
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

import srsly
import typer
import yaml

from .logs import setup_command_logging
from .records import RecordError, json_objects
from .outputs import OutputError, write_bytes_atomic, write_text_atomic

log = logging.getLogger(__name__)

# in templates/, which the package data carries (a plain `pip install .` ships it)
SETTINGS_FILE = Path(__file__).resolve().parent / "templates" / "selftrain.yml"
UNCERTAIN_POLICIES = ("mask", "drop")
TAGGER = "deid_tagger"
MERGER = "deid_merger"


class SelfTrainError(RuntimeError):
    pass


# --------------------------------------------------------------------------- settings
def load_settings(path: str | Path | None = None, **overrides) -> dict:
    """The defaults of factory/templates/selftrain.yml, updated with a user file and then `overrides`
    (None values ignored; a `thresholds` mapping updates the per-label thresholds)."""
    settings = yaml.safe_load(SETTINGS_FILE.read_text(encoding="utf-8")) or {}
    layers = []
    if path is not None:
        path = Path(path)
        if not path.exists():
            raise SelfTrainError(f"{path}: self-training settings not found")
        layers.append(yaml.safe_load(path.read_text(encoding="utf-8")) or {})
    layers.append({k: v for k, v in overrides.items() if v is not None})
    for layer in layers:
        unknown = set(layer) - set(settings)
        if unknown:
            raise SelfTrainError(f"unknown self-training settings {sorted(unknown)} (known: {sorted(settings)})")
        for key, value in layer.items():
            if key == "thresholds":
                settings["thresholds"] = {**settings["thresholds"], **{str(k): float(v) for k, v in value.items()}}
            else:
                settings[key] = value
    if settings["uncertain_notes"] not in UNCERTAIN_POLICIES:
        raise SelfTrainError(f"uncertain_notes must be one of {UNCERTAIN_POLICIES}, not {settings['uncertain_notes']!r}")
    if float(settings["max_share_factor"]) <= 0:
        raise SelfTrainError("max_share_factor must be > 0")
    return settings


# --------------------------------------------------------------------------- unlabeled notes
def read_unlabeled(path: str | Path, max_notes: int = 0) -> tuple[list[str], dict]:
    """Texts of the unlabeled notes: a .txt file (one note), a .jsonl file (one note per line, its
    `text`; spans and other fields ignored) or a folder of them (sorted, recursive). Returns
    (texts, counts); empty notes are skipped and counted. Errors name the file (and line), never text."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"unlabeled notes not found: {path}")
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in (".txt", ".jsonl"))
        if not files:
            raise SelfTrainError(f"{path}: no .txt or .jsonl files in this folder")
    else:
        files = [path]
    texts: list[str] = []
    counts = {"files": len(files), "notes_read": 0, "empty_skipped": 0}
    for file in files:
        for text in _notes_of(file):
            counts["notes_read"] += 1
            if not text.strip():
                counts["empty_skipped"] += 1
                continue
            texts.append(text)
            if max_notes and len(texts) >= max_notes:
                counts["notes"] = len(texts)
                return texts, counts
    counts["notes"] = len(texts)
    return texts, counts


def _notes_of(file: Path) -> Iterator[str]:
    from .readers import strip_bom

    if file.suffix == ".jsonl":
        for line in json_objects(file, "a note"):
            if not isinstance(line.value.get("text"), str):
                raise RecordError(f"{line.where}: a note needs a string `text` field")
            yield line.value["text"]
    else:
        try:
            yield strip_bom(file.read_bytes().decode("utf-8"))
        except UnicodeDecodeError:
            raise RecordError(f"{file}: not UTF-8") from None


# --------------------------------------------------------------------------- selection
@dataclass
class Candidate:
    """A pseudo span of one note: token offsets [start, end), label, confidence."""
    note: int
    start: int
    end: int
    label: str
    score: float


def threshold_of(label: str, thresholds: Mapping[str, float]) -> float:
    return float(thresholds.get(label, thresholds.get("default", 0.9)))


def label_caps(gold_counts: Mapping[str, int], labels: Iterable[str], n_passed: int,
               max_share_factor: float, min_share: float) -> dict[str, int]:
    """Most spans each label may keep: ceil(factor * max(gold share, min_share) * n_passed)."""
    total = sum(gold_counts.values())
    caps = {}
    for label in labels:
        share = gold_counts.get(label, 0) / total if total else 1.0
        caps[label] = math.ceil(max_share_factor * max(share, min_share) * n_passed - 1e-9)
    return caps


def select_spans(candidates: Sequence[Candidate], gold_counts: Mapping[str, int], thresholds: Mapping[str, float],
                 max_share_factor: float = 2.0, min_share: float = 0.02) -> tuple[list[Candidate], dict]:
    """The kept candidates and per-label counts {candidates, kept, dropped_threshold,
    dropped_proportion}. Thresholds first, then class-proportion control (see the module
    docstring); within a label the least confident spans are dropped first."""
    passed = [c for c in candidates if c.score >= threshold_of(c.label, thresholds)]
    by_label: dict[str, list[Candidate]] = {}
    for c in passed:
        by_label.setdefault(c.label, []).append(c)
    caps = label_caps(gold_counts, by_label, len(passed), max_share_factor, min_share)
    kept: list[Candidate] = []
    dropped_share: Counter = Counter()
    for label, items in by_label.items():
        items = sorted(items, key=lambda c: (-c.score, c.note, c.start))
        kept.extend(items[: caps[label]])
        dropped_share[label] = max(0, len(items) - caps[label])
    kept.sort(key=lambda c: (c.note, c.start))
    labels = sorted({c.label for c in candidates})
    all_counts = Counter(c.label for c in candidates)
    passed_counts = Counter(c.label for c in passed)
    kept_counts = Counter(c.label for c in kept)
    stats = {
        "candidates": {lb: all_counts[lb] for lb in labels},
        "kept": {lb: kept_counts[lb] for lb in labels if kept_counts[lb]},
        "dropped_threshold": {lb: all_counts[lb] - passed_counts[lb] for lb in labels if all_counts[lb] - passed_counts[lb]},
        "dropped_proportion": {lb: n for lb, n in sorted(dropped_share.items()) if n},
        "caps": dict(sorted(caps.items())),
    }
    return kept, stats


# --------------------------------------------------------------------------- labelling
@dataclass
class LabelledNote:
    words: list[str]
    spaces: list[bool]
    candidates: list[Candidate]
    token_conf: list[float] | None  # highest tag probability per token; None without the tagger


def label_notes(nlp, texts: Sequence[str], batch_size: int = 32) -> list[LabelledNote]:
    """Run the pipeline over the notes; each entity of doc.ents becomes a scored Candidate."""
    import numpy

    tagger = nlp.get_pipe(TAGGER) if TAGGER in nlp.pipe_names else None
    if tagger is None:
        log.warning("the pipeline has no %s: NER spans get confidence 1.0 and no token is uncertain "
                    "(only the regex spans' scores and the proportion control select)", TAGGER)
    notes: list[LabelledNote] = []
    for first in range(0, len(texts), batch_size):
        docs = list(nlp.pipe(texts[first:first + batch_size], batch_size=batch_size))
        # the tagger's per-token probabilities, from the tok2vec output the pipe left in doc.tensor
        probs = tagger.predict(docs) if tagger is not None else [None] * len(docs)
        for offset, (doc, p) in enumerate(zip(docs, probs)):
            index = first + offset
            mass = {}
            token_conf = None
            if p is not None and len(doc):
                p = numpy.asarray(p)
                token_conf = [float(x) for x in p.max(axis=1)]
                columns: dict[str, list[int]] = {}
                for j, tag in enumerate(tagger.labels):
                    if tag != "O":
                        columns.setdefault(tag.split("-", 1)[1], []).append(j)
                mass = {label: p[:, cols].sum(axis=1) for label, cols in columns.items()}
            candidates = []
            for ent in doc.ents:
                source = ent._.deid_source or "ner"  # set by the merger: "ner", "regex" or "ner+regex"
                if tagger is None:
                    ner = 1.0 if "ner" in source else 0.0
                else:
                    ner = float(mass[ent.label_][ent.start:ent.end].min()) if ent.label_ in mass else 0.0
                regex = float(ent._.deid_score or 0.0) if "regex" in source else 0.0
                candidates.append(Candidate(index, ent.start, ent.end, ent.label_, round(max(ner, regex), 6)))
            notes.append(LabelledNote([t.text for t in doc], [bool(t.whitespace_) for t in doc], candidates,
                                      token_conf))
    return notes


def pseudo_docs(vocab, notes: Sequence[LabelledNote], kept: Sequence[Candidate], token_threshold: float,
                uncertain_notes: str = "mask") -> tuple[list, dict]:
    """The pseudo-labelled Docs: kept spans as entities, dropped spans and uncertain tokens
    missing (unannotated), the rest O; with "drop", notes with an uncertain token are left out."""
    from spacy.tokens import Doc, Span

    kept_by_note: dict[int, list[Candidate]] = {}
    for c in kept:
        kept_by_note.setdefault(c.note, []).append(c)
    docs = []
    counts = {"notes_labelled": len(notes), "notes_kept": 0, "notes_dropped_uncertain": 0,
              "notes_with_masked_tokens": 0, "masked_tokens": 0, "uncertain_tokens": 0, "pseudo_spans": 0}
    for index, note in enumerate(notes):
        mine = kept_by_note.get(index, [])
        in_kept = [False] * len(note.words)
        for c in mine:
            for i in range(c.start, c.end):
                in_kept[i] = True
        uncertain = [not in_kept[i] and note.token_conf is not None and note.token_conf[i] < token_threshold
                     for i in range(len(note.words))]
        n_uncertain = sum(uncertain)
        if n_uncertain and uncertain_notes == "drop":
            counts["notes_dropped_uncertain"] += 1
            continue
        masked = list(uncertain)
        chosen = {(c.start, c.end) for c in mine}
        for c in note.candidates:
            if (c.start, c.end) not in chosen:
                for i in range(c.start, c.end):
                    masked[i] = True
        doc = Doc(vocab, words=note.words, spaces=note.spaces)
        missing, i = [], 0
        while i < len(masked):
            if masked[i]:
                j = i
                while j < len(masked) and masked[j]:
                    j += 1
                missing.append(Span(doc, i, j))
                i = j
            else:
                i += 1
        doc.set_ents([Span(doc, c.start, c.end, label=c.label) for c in mine], missing=missing, default="outside")
        docs.append(doc)
        counts["notes_kept"] += 1
        counts["pseudo_spans"] += len(mine)
        counts["uncertain_tokens"] += n_uncertain
        counts["masked_tokens"] += sum(masked)
        counts["notes_with_masked_tokens"] += any(masked)
    return docs, counts


# --------------------------------------------------------------------------- models
def gold_label_counts(docbin: str | Path) -> Counter:
    import spacy
    from spacy.tokens import DocBin

    return Counter(e.label_ for d in DocBin().from_disk(docbin).get_docs(spacy.blank("xx").vocab) for e in d.ents)


def read_strings(pipeline_dir: str | Path) -> list[str]:
    path = Path(pipeline_dir) / "vocab" / "strings.json"
    return list(srsly.read_json(path)) if path.exists() else []


def prune_strings(model_dir: str | Path, keep: Iterable[str]) -> int:
    """Cut the model's string table back to `keep`; returns how many strings were removed."""
    path = Path(model_dir) / "vocab" / "strings.json"
    if not path.exists():
        return 0
    allowed = set(keep)
    strings = srsly.read_json(path)
    kept = [s for s in strings if s in allowed]
    write_text_atomic(path, srsly.json_dumps(kept))
    return len(strings) - len(kept)


def _label_strings(labels: Iterable[str]) -> set[str]:
    from .labels import CANONICAL_LABELS

    out = {"O", "", "-"}
    for label in {*labels, *CANONICAL_LABELS}:
        out |= {label, *(f"{p}-{label}" for p in "BILU")}
    return out


def _is_pipeline(path: Path) -> bool:
    cfg = path / "config.cfg"
    return cfg.exists() and MERGER in cfg.read_text(encoding="utf-8")


def dev_scores(pipeline_dir: str | Path, dev_data, recall_bias: float | None = None) -> dict:
    """Strict micro F1 on dev of the combined pipeline and of its NER alone, and its token recall;
    with `recall_bias`, the tagger decodes with that o_bias (the pipeline as it would be packaged)."""
    import spacy

    from .evaluate import RECALL_KNOB, score_corpus
    from deid_runtime import merger, pack_component  # noqa: F401  (register the factories)

    nlp = spacy.load(pipeline_dir)
    if recall_bias is not None and RECALL_KNOB in nlp.pipe_names:
        nlp.get_pipe(RECALL_KNOB).o_bias = float(recall_bias)
    scored = score_corpus(nlp, dev_data)["systems"]
    return {"strict_f": scored["combined"]["strict"]["micro"]["f"], "ner_strict_f": scored["ner"]["strict"]["micro"]["f"],
            "token_recall": scored["combined"]["token_recall"]}


def _dev_docbin(dev_data, lang: str, path: Path) -> Path:
    """An annotated dev set as a DocBin with the runtime tokenizer (as splits.write_splits makes them);
    documents whose spans cannot be entities (overlaps) are left out and counted in the log."""
    from spacy.tokens import DocBin

    from deid_runtime.tokenization import blank as phi_blank

    from .records import Record, Span
    from .splits import record_to_doc

    nlp = phi_blank(lang)
    db, skipped = DocBin(store_user_data=False), 0
    for rid, text, spans in dev_data:
        doc = record_to_doc(nlp, Record(rid, lang, text, [Span(a, b, label) for a, b, label in spans]))
        if doc is None:
            skipped += 1
        else:
            db.add(doc)
    if skipped:
        log.warning("dev set: %d documents with overlapping spans left out of early stopping", skipped)
    write_bytes_atomic(path, db.to_bytes())
    return path


def _copy_pipeline(src: Path, dst: Path) -> None:
    from .package import write_dir_atomic

    def copy(tmp: Path) -> None:
        shutil.rmtree(tmp)  # copytree creates its destination
        shutil.copytree(src, tmp)

    write_dir_atomic(dst, copy)


# --------------------------------------------------------------------------- the loop
def self_train(pipeline_dir: str | Path, unlabeled_path: str | Path, train_docbin: str | Path, dev_docbin: str | Path,
               config_path: str | Path, out_dir: str | Path, *, lang: str, corpus_dir: str | Path | None = None,
               pipeline_out: str | Path | None = None, pack_dir: str | Path | None = None, version: str = "0.1.0",
               settings: Mapping[str, Any] | None = None, gpu_id: int = -1, max_epochs: int = 20, patience: int = 5,
               init: str = "blank", seed: int | None = None, vectors: str = "", batch_size: int = 32,
               label_map: str | None = None, recall_bias: float = 0.0, init_tok2vec: str = "") -> dict:
    """Self-train; returns the report also written to OUT/selftrain_report.json.

    pipeline_dir: the assembled pipeline that labels the notes, or a trained model folder
    (training/model-best), assembled first with `lang`'s regex pack (pack_dir). Round r writes
    CORPUS_DIR/round-r/{pseudo,train}.spacy (the notes' text: corpus_dir must be the project's
    corpus folder; default OUT/corpus) and OUT/round-r/{model,pipeline}. pipeline_out: where the
    best pipeline (the base one when no round improved dev) is copied at the end.
    dev_docbin: the build's dev DocBin, or a small annotated set of your own in any format that
    `evaluate` reads (records JSONL, brat folder, i2b2 XML; brat/i2b2 labels mapped with
    label_map), written as CORPUS_DIR/dev.spacy with the runtime tokenizer for early stopping."""
    import spacy
    from spacy.tokens import DocBin

    from .evaluate import O_BIASES, calibrate_recall_bias, load_corpus
    from .package import assemble_pipeline, set_recall_bias
    from deid_runtime import merger, pack_component  # noqa: F401  (register the factories)
    from .train import train_model

    settings = dict(settings or load_settings())
    out_dir = Path(out_dir)
    corpus_dir = Path(corpus_dir) if corpus_dir is not None else out_dir / "corpus"
    pipeline_dir = Path(pipeline_dir)
    for path, what in ((pipeline_dir, "pipeline or trained model"), (train_docbin, "training DocBin"),
                       (dev_docbin, "dev set"), (config_path, "training config")):
        if not Path(path).exists():
            raise SelfTrainError(f"{path}: {what} not found")
    texts, read_counts = read_unlabeled(unlabeled_path, int(settings.get("max_notes") or 0))
    log.info("self-training: %d unlabeled notes (%d empty skipped)", len(texts), read_counts["empty_skipped"])
    if not texts:
        raise SelfTrainError(f"{unlabeled_path}: no non-empty unlabeled notes")
    if not _is_pipeline(pipeline_dir):  # a trained model: assemble it with the regex pack first
        base = out_dir / "round-0" / "pipeline"
        assemble_pipeline(pipeline_dir, lang, base, pack_dir=pack_dir, version=version)
        pipeline_dir = base
    base_strings = set(read_strings(pipeline_dir))
    gold_counts = gold_label_counts(train_docbin)
    dev_data = load_corpus(dev_docbin, lang=lang, label_map=label_map or None)
    if not dev_data:
        raise SelfTrainError(f"{dev_docbin}: no dev documents")
    if Path(dev_docbin).suffix != ".spacy":
        dev_docbin = _dev_docbin(dev_data, lang, corpus_dir / "dev.spacy")
    # the base and every round are compared as they would be packaged (the build's recall setting):
    # the recall guard protects what the user gets, not the model's own decoding
    best = {**dev_scores(pipeline_dir, dev_data, recall_bias), "o_bias": float(recall_bias)}
    best_pipeline, best_round = pipeline_dir, 0

    def round_scores(pipeline: Path, target_recall: float) -> dict:
        """A round's dev scores as it would be packaged. With calibrate_recall, at the smallest
        o_bias (the build's recall_bias or more, step 0.5) whose dev token recall reaches
        `target_recall`: rounds are compared on strict F1 at equal recall, so a round that gained
        precision may spend some of it on recall (self-training on a model's own confident labels
        tends to sharpen its boundaries and lose a little recall at a fixed o_bias)."""
        if settings.get("calibrate_recall"):
            found = calibrate_recall_bias(lambda bias: dev_scores(pipeline, dev_data, bias), target_recall,
                                          low=float(recall_bias), high=max(float(recall_bias), O_BIASES[-1]))
            if found is not None:
                bias, scores = found
                return {**scores, "o_bias": bias}
        return {**dev_scores(pipeline, dev_data, recall_bias), "o_bias": float(recall_bias)}

    log.info("round 0 (base pipeline): dev strict F1 %.4f", best["strict_f"])
    report: dict[str, Any] = {
        "unlabeled": read_counts,
        "gold_train_spans": dict(sorted(gold_counts.items())),
        "settings": {k: settings[k] for k in sorted(settings)},
        "baseline": {"dev": best},
        "rounds": [],
    }
    stopped = f"ran {settings['rounds']} rounds"
    for r in range(1, int(settings["rounds"]) + 1):
        nlp = spacy.load(best_pipeline)  # never saved: it has seen the notes' strings
        notes = label_notes(nlp, texts, batch_size=batch_size)
        del nlp
        candidates = [c for note in notes for c in note.candidates]
        kept, sel = select_spans(candidates, gold_counts, settings["thresholds"],
                                 float(settings["max_share_factor"]), float(settings["min_share"]))
        vocab = spacy.blank(lang).vocab
        docs, note_counts = pseudo_docs(vocab, notes, kept, float(settings["token_threshold"]),
                                        settings["uncertain_notes"])
        row: dict[str, Any] = {"round": r, **note_counts, "spans": sel}
        log.info("round %d: %d notes labelled, %d kept (%d dropped as uncertain), %d pseudo spans kept, "
                 "%d dropped by threshold, %d by proportion control", r, note_counts["notes_labelled"],
                 note_counts["notes_kept"], note_counts["notes_dropped_uncertain"], note_counts["pseudo_spans"],
                 sum(sel["dropped_threshold"].values()), sum(sel["dropped_proportion"].values()))
        if not docs:
            row["accepted"] = False
            report["rounds"].append(row)
            stopped = f"round {r}: no pseudo-labelled note to train on"
            break
        pseudo_bin = DocBin(store_user_data=False, docs=docs)
        train_bin = DocBin(store_user_data=False)
        for doc in DocBin().from_disk(train_docbin).get_docs(vocab):
            train_bin.add(doc)
        for doc in docs:
            train_bin.add(doc)
        round_corpus = corpus_dir / f"round-{r}"
        write_bytes_atomic(round_corpus / "pseudo.spacy", pseudo_bin.to_bytes())
        write_bytes_atomic(round_corpus / "train.spacy", train_bin.to_bytes())
        del docs, pseudo_bin, train_bin, notes
        round_dir = out_dir / f"round-{r}"
        # spaCy saves every string it saw with a model: the round trains inside the corpus folder
        # (where the notes' text may be), and only its pruned model leaves it, so a failed or
        # killed run never leaves the notes' words in OUT
        trained = round_corpus / "model"
        summary = train_model(round_corpus / "train.spacy", dev_docbin, config_path, trained, gpu_id=gpu_id,
                              max_epochs=max_epochs, patience=patience, init=init, seed=seed, vectors=vectors,
                              init_tok2vec=init_tok2vec)
        shutil.rmtree(trained / "model-last", ignore_errors=True)
        removed = prune_strings(trained / "model-best", base_strings | _label_strings(gold_counts) | _label_strings(sel["candidates"]))
        shutil.rmtree(round_dir / "model", ignore_errors=True)
        round_dir.mkdir(parents=True, exist_ok=True)
        shutil.move(str(trained), str(round_dir / "model"))
        model = round_dir / "model" / "model-best"
        assemble_pipeline(model, lang, round_dir / "pipeline", pack_dir=pack_dir, version=version)
        scores = round_scores(round_dir / "pipeline", best["token_recall"] - float(settings["max_recall_drop"]))
        # recall first: a round that finds more exact spans but leaves more PHI tokens in clear
        # text is not an improvement for a de-identifier (self-training on a model's own confident
        # labels tends to trade recall for precision)
        better = scores["strict_f"] > best["strict_f"] + float(settings["min_improvement"])
        recall_kept = scores["token_recall"] >= best["token_recall"] - float(settings["max_recall_drop"])
        accepted = better and recall_kept
        row.update({"train_docs": summary["train_docs"], "train_best_ents_f": summary["best_ents_f"],
                    "strings_removed": removed, "dev": scores, "accepted": accepted})
        report["rounds"].append(row)
        log.info("round %d: dev strict F1 %.4f, token recall %.4f at o_bias %s (best so far %.4f, %.4f): %s", r,
                 scores["strict_f"], scores["token_recall"], scores["o_bias"], best["strict_f"], best["token_recall"],
                 "kept" if accepted else "not kept, stopping")
        if not accepted:
            stopped = (f"round {r}: dev strict F1 did not improve" if not better else
                       f"round {r}: dev token recall fell by more than max_recall_drop")
            break
        best, best_pipeline, best_round = scores, round_dir / "pipeline", r
    report.update({"best_round": best_round, "best_dev": best, "stopped": stopped,
                   "pipeline": str(pipeline_out) if pipeline_out is not None else str(best_pipeline)})
    if pipeline_out is not None:
        # the rounds label the notes with the models' own decoding (o_bias 0); the pipeline the
        # build packages gets the recall setting dev compared it at (the build's recall_bias, or
        # the calibrated one of the round that was kept)
        _copy_pipeline(best_pipeline, Path(pipeline_out))
        set_recall_bias(pipeline_out, best["o_bias"])
    write_text_atomic(out_dir / "selftrain_report.json", srsly.json_dumps(report, indent=2))
    return report


# --------------------------------------------------------------------------- command
def selftrain_command(
    pipeline: Path = typer.Argument(..., help="The labelling pipeline (training/pipeline) or trained model (training/model-best)"),
    unlabeled: str = typer.Argument(..., help="Unlabeled notes: a .txt file, a .jsonl file (`text` field) or a folder of them; "
                                    "'-' = none (the pipeline stays as trained)"),
    train: Path = typer.Option(..., "--train", help="Gold training DocBin (corpus/final/train.spacy)"),
    dev: Path = typer.Option(..., "--dev", help="Dev set: the build's dev DocBin, or your own small annotated set "
                             "(records JSONL, brat folder, i2b2 XML): early stopping and the round-by-round score"),
    label_map: str = typer.Option(None, "--label-map", help="Label map of a brat/i2b2 dev set (e.g. meddocan)"),
    config: Path = typer.Option(..., "--config", "-c", help="spaCy training config (configs/config.cfg)"),
    out: Path = typer.Option(..., "--out", "-o", help="Output folder (round models, selftrain_report.json)"),
    lang: str = typer.Option(..., "--lang", "-l", help="Language code"),
    corpus_dir: Path = typer.Option(None, "--corpus-dir", help="Where the pseudo-labelled DocBins go (the project's "
                                    "corpus folder, e.g. corpus/selftrain); default OUT/corpus"),
    pipeline_out: Path = typer.Option(None, "--pipeline-out", help="Copy the best pipeline here (e.g. training/pipeline)"),
    pack_dir: Path = typer.Option(None, "--pack-dir", help="Regex pack folder (default regex_packs/<lang>)"),
    version: str = typer.Option("0.1.0", "--version"),
    settings_file: Path = typer.Option(None, "--settings", help="YAML overriding factory/templates/selftrain.yml"),
    rounds: int = typer.Option(None, "--rounds", help="Maximum rounds (default: selftrain.yml)"),
    gpu_id: int = typer.Option(-1, "--gpu-id", "-g"),
    max_epochs: int = typer.Option(20, "--max-epochs"),
    patience: int = typer.Option(5, "--patience"),
    init: str = typer.Option("blank", "--init"),
    seed: int = typer.Option(None, "--seed"),
    vectors: str = typer.Option("", "--vectors"),
    init_tok2vec: str = typer.Option("", "--init-tok2vec", help="Pretrained tok2vec weights each round starts from "
                                     "(`factory pretrain`: tok2vec.bin, as the base model was trained); '' none"),
    recall_bias: float = typer.Option(0.0, "--recall-bias", min=0.0,
                                      help="o_bias of the deid_tagger in --pipeline-out (the build passes its recall_bias var); "
                                      "with calibrate_recall, the floor of a kept round's calibrated o_bias"),
) -> None:
    """Self-training: label unlabeled notes with the pipeline, keep the confident spans, retrain on
    gold + pseudo labels, repeat while dev strict F1 improves. Reports counts and scores, no text."""
    from .evaluate import EvalError
    from .package import PackageError, assemble_pipeline, set_recall_bias
    from .train import TrainError

    setup_command_logging()
    try:
        if unlabeled in ("", "-"):
            # no notes: the build's pipeline stays as trained (assembled here when given a model)
            if pipeline_out is not None:
                if _is_pipeline(pipeline):
                    if pipeline.resolve() != pipeline_out.resolve():
                        _copy_pipeline(pipeline, pipeline_out)
                    set_recall_bias(pipeline_out, recall_bias)
                else:
                    assemble_pipeline(pipeline, lang, pipeline_out, pack_dir=pack_dir, version=version,
                                      recall_bias=recall_bias)
            write_text_atomic(out / "selftrain_report.json",
                              srsly.json_dumps({"skipped": "no unlabeled notes (unlabeled_path '-')", "rounds": []}, indent=2))
            typer.echo("selftrain: no unlabeled notes given: the pipeline stays as trained")
            return
        if not Path(unlabeled).exists():
            raise SelfTrainError(f"{unlabeled}: unlabeled notes not found")
        report = self_train(pipeline, unlabeled, train, dev, config, out, lang=lang, corpus_dir=corpus_dir,
                            pipeline_out=pipeline_out, pack_dir=pack_dir, version=version,
                            settings=load_settings(settings_file, rounds=rounds), gpu_id=gpu_id, max_epochs=max_epochs,
                            patience=patience, init=init, seed=seed, vectors=vectors, label_map=label_map,
                            recall_bias=recall_bias, init_tok2vec=init_tok2vec)
    except (SelfTrainError, TrainError, PackageError, EvalError, RecordError, OutputError) as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(1)
    except yaml.YAMLError as err:  # --settings: name the file and the place, not its content
        mark = getattr(err, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        typer.echo(f"error: {settings_file}: not valid YAML{where}", err=True)
        raise typer.Exit(1)
    base = report["baseline"]["dev"]
    short = [{"round": 0, "dev_strict_f": base["strict_f"], "dev_token_recall": base["token_recall"], "o_bias": base["o_bias"]}]
    short += [{"round": row["round"], "notes_kept": row["notes_kept"], "pseudo_spans": row["pseudo_spans"],
               "dev_strict_f": row.get("dev", {}).get("strict_f"), "dev_token_recall": row.get("dev", {}).get("token_recall"),
               "o_bias": row.get("dev", {}).get("o_bias"), "accepted": row["accepted"]} for row in report["rounds"]]
    typer.echo(json.dumps({"rounds": short, "best_round": report["best_round"], "stopped": report["stopped"]}, indent=2))
