"""Stage 8, evaluate: score a deid pipeline on the held-out split or any corpus given by path.

Metrics, computed on character offsets:
  strict    entity P/R/F1, span and label exact (per label and micro)
  overlap   entity P/R/F1, same label and the spans overlap (per label and micro); a gold entity
            is recalled if some same-label prediction overlaps it, a prediction is correct if it
            overlaps some same-label gold entity
  token_recall      share of gold PHI word tokens (\\w+ runs inside gold spans) whose every
                    character is covered by some predicted span, label ignored (the leak view:
                    a half-covered name still leaks)
  docs_fully_redacted  share of documents (with or without PHI) in which every gold PHI token is
                    covered
Each is computed separately for the NER alone (doc.spans["deid_ner"]), the regex pack alone
(doc.spans["deid_regex"]) and the combined pipeline (doc.ents after the merger).

Corpora: the held-out split of a build and every annotated set given with it (--also, --sets-of):
the locale's challenge and tuning sets, independent notes (inline markup), a dev set. The report
leads with those, the notes written apart from the generator, and gives the held-out split last,
named for what it is (a synthetic split only shows that the templates were learned).

Output in OUT: metrics.json, report.md (a summary line per set, then per set its system and
per-label tables) and PNG plots (training curve, per-label F1 of the leading set, recall knob).
"""

from __future__ import annotations

import io
import json
import logging
import math
import re
import time
from collections import defaultdict
from pathlib import Path
from typing import Callable, Iterable, Sequence

import srsly
import typer

from .outputs import all_or_nothing, write_bytes_atomic, write_text_atomic

log = logging.getLogger(__name__)

SpanT = tuple[int, int, str]
SYSTEMS = ("ner", "regex", "combined")
_WORD = re.compile(r"\w+", re.UNICODE)


class EvalError(RuntimeError):
    pass


def _savefig(fig, path: Path) -> None:
    buffer = io.BytesIO()  # rendered in memory, then written atomically under a unique temp name
    fig.savefig(buffer, dpi=100, format="png")
    write_bytes_atomic(path, buffer.getvalue())


# --------------------------------------------------------------------------- metric functions
def _prf(tp_p: int, n_pred: int, tp_g: int, n_gold: int) -> dict:
    p = tp_p / n_pred if n_pred else 0.0
    r = tp_g / n_gold if n_gold else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return {"p": round(p, 4), "r": round(r, 4), "f": round(f, 4), "n_gold": n_gold, "n_pred": n_pred}


def entity_scores(gold_docs: Sequence[Iterable[SpanT]], pred_docs: Sequence[Iterable[SpanT]], mode: str = "strict") -> dict:
    """Per-label and micro P/R/F1 over documents of (start, end, label) spans.

    mode="strict": exact span and label. mode="overlap": same label and overlapping spans.
    """
    if mode not in ("strict", "overlap"):
        raise ValueError(f"unknown mode {mode!r}")
    if len(gold_docs) != len(pred_docs):
        raise ValueError("gold and predicted document counts differ")

    def found(span: SpanT, others: set[SpanT]) -> bool:
        if mode == "strict":
            return span in others
        return any(o[2] == span[2] and o[0] < span[1] and span[0] < o[1] for o in others)

    counts = defaultdict(lambda: [0, 0, 0, 0])  # label -> [tp_pred, n_pred, tp_gold, n_gold]
    for gold, pred in zip(gold_docs, pred_docs):
        gold, pred = set(gold), set(pred)
        for g in gold:
            counts[g[2]][2] += found(g, pred)
            counts[g[2]][3] += 1
        for p in pred:
            counts[p[2]][0] += found(p, gold)
            counts[p[2]][1] += 1
    per_label = {label: _prf(*c) for label, c in sorted(counts.items())}
    total = [sum(c[i] for c in counts.values()) for i in range(4)]
    return {"micro": _prf(*total), "per_label": per_label}


def gold_tokens(text: str, gold: Iterable[SpanT]) -> list[tuple[int, int]]:
    """Word tokens (\\w+ runs) inside the gold spans, as character offsets."""
    tokens = []
    for start, end, _ in gold:
        for m in _WORD.finditer(text, start, end):
            tokens.append((m.start(), m.end()))
    return sorted(set(tokens))


def _covered(token: tuple[int, int], pred: Sequence[SpanT]) -> bool:
    chars = set(range(token[0], token[1]))
    for s, e, _ in pred:
        chars -= set(range(max(s, token[0]), min(e, token[1])))
        if not chars:
            return True
    return not chars


def leak_scores(texts: Sequence[str], gold_docs: Sequence[Iterable[SpanT]], pred_docs: Sequence[Iterable[SpanT]]) -> dict:
    """token_recall, token_precision and docs_fully_redacted (labels ignored).

    token_precision: share of the word tokens a system redacts (any character covered) that are
    PHI tokens: the cost of over-redaction, the other side of the recall knob."""
    n_tok = n_cov = full = n_red = n_red_phi = 0
    for text, gold, pred in zip(texts, gold_docs, pred_docs):
        pred = list(pred)
        toks = gold_tokens(text, gold)
        covered = sum(_covered(t, pred) for t in toks)
        n_tok += len(toks)
        n_cov += covered
        full += covered == len(toks)
        redacted = gold_tokens(text, pred)  # word tokens inside the predicted spans
        phi = set(toks)
        n_red += len(redacted)
        n_red_phi += sum(1 for t in redacted if t in phi)
    return {
        "token_recall": round(n_cov / n_tok, 4) if n_tok else 1.0,
        "token_precision": round(n_red_phi / n_red, 4) if n_red else 1.0,
        "gold_tokens": n_tok,
        "redacted_tokens": n_red,
        "docs_fully_redacted": round(full / len(texts), 4) if texts else 0.0,
        "docs": len(texts),
    }


def score_system(texts, gold_docs, pred_docs) -> dict:
    return {
        "strict": entity_scores(gold_docs, pred_docs, "strict"),
        "overlap": entity_scores(gold_docs, pred_docs, "overlap"),
        **leak_scores(texts, gold_docs, pred_docs),
    }


# --------------------------------------------------------------------------- corpora
def load_corpus(path: str | Path, lang: str | None = None, label_map: str | None = None,
                fmt: str | None = None) -> list[tuple[str, str, list[SpanT]]]:
    """(id, text, gold spans) from a DocBin (.spacy), records JSONL (.jsonl), a brat folder, i2b2
    XML, or inline-markup notes (a .txt file, or folder, of `[text](LABEL)` documents separated by
    `=====` lines); `fmt` names the reader when the path does not tell it (readers.guess_format)."""
    path = Path(path)
    if not path.exists():
        raise EvalError(f"{path}: evaluation corpus not found")
    if path.suffix == ".spacy" and fmt in (None, "docbin"):
        import spacy
        from spacy.tokens import DocBin

        docs = DocBin().from_disk(path).get_docs(spacy.blank("xx").vocab)
        return [(str(i), d.text, [(e.start_char, e.end_char, e.label_) for e in d.ents]) for i, d in enumerate(docs)]
    if path.suffix == ".jsonl" and fmt in (None, "jsonl"):
        from .records import read_records

        return [(r.id, r.text, [(s.start, s.end, s.label) for s in r.spans]) for r in read_records(path)]
    from .readers import guess_format, read_corpus  # the extract stage's readers (brat, i2b2, inline)
    from .records import RecordError

    if fmt is None:
        try:
            fmt = guess_format(path)
        except ValueError:
            raise EvalError(f"{path}: unknown corpus format (expected .spacy, .jsonl, a brat folder, i2b2 XML "
                            f"or inline-markup .txt)") from None
    from .readers import ReadReport

    report = ReadReport()
    # hand-written markup is fixed, not skipped: a document left out would change what is measured
    # without a word; the other formats skip a bad record and say which (ids and reasons, no text)
    on_error = "raise" if fmt == "inline" else "skip"
    try:
        records = list(read_corpus(path, fmt, label_map=label_map, lang=lang or "es", on_error=on_error, report=report))
    except (RecordError, ValueError, FileNotFoundError) as err:
        raise EvalError(f"{path}: cannot read the {fmt} corpus ({err})") from None
    if not records and report.skipped:
        raise EvalError(f"{path}: no document of the {fmt} corpus could be read ({report.skipped[0]['reason']})")
    for skipped in report.skipped:
        log.warning("not scored: %s", skipped["reason"])
    return [(r.id, r.text, [(s.start, s.end, s.label) for s in r.spans]) for r in records]


def predict(nlp, texts: Sequence[str], batch_size: int = 16) -> dict[str, list[list[SpanT]]]:
    """Predictions of the three systems for each text, from one pass of the pipeline."""
    out = {s: [] for s in SYSTEMS}
    for doc in nlp.pipe(texts, batch_size=batch_size):
        out["combined"].append([(e.start_char, e.end_char, e.label_) for e in doc.ents])
        for system, key in (("ner", "deid_ner"), ("regex", "deid_regex")):
            spans = doc.spans[key] if key in doc.spans else []
            out[system].append([(s.start_char, s.end_char, s.label_) for s in spans])
    return out


def score_corpus(nlp, data: list[tuple[str, str, list[SpanT]]], batch_size: int = 16) -> dict:
    """Scores of the three systems on (id, text, gold) documents, with the throughput of the pass."""
    texts = [t for _, t, _ in data]
    gold = [g for _, _, g in data]
    t0 = time.perf_counter()
    preds = predict(nlp, texts, batch_size=batch_size)
    wall = time.perf_counter() - t0
    words = sum(len(_WORD.findall(t)) for t in texts)
    return {
        "docs": len(texts),
        "systems": {s: score_system(texts, gold, preds[s]) for s in SYSTEMS},
        "throughput": {"docs_per_s": round(len(texts) / wall, 1) if wall else None,
                       "words_per_s": round(words / wall, 1) if wall else None, "wall_seconds": round(wall, 2)},
    }


# The component whose `o_bias` trades precision for recall (deid_runtime/biluo_tagger.py).
RECALL_KNOB = "deid_tagger"
O_BIASES = (0.0, 0.5, 1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 10.0, 12.0)


def recall_curve(nlp, data: list[tuple[str, str, list[SpanT]]], biases: Sequence[float] = O_BIASES,
                 batch_size: int = 16) -> list[dict]:
    """Precision/recall of the combined pipeline for each `o_bias` of the tagger: the higher the
    bias, the more tokens the tagger is unsure about become PHI (inverse de-identification)."""
    tagger = nlp.get_pipe(RECALL_KNOB)
    saved = tagger.o_bias
    texts = [t for _, t, _ in data]
    gold = [g for _, _, g in data]
    rows = []
    try:
        for bias in biases:
            tagger.o_bias = float(bias)
            pred = predict(nlp, texts, batch_size=batch_size)["combined"]
            leak = leak_scores(texts, gold, pred)
            strict = entity_scores(gold, pred, "strict")["micro"]
            rows.append({"o_bias": bias, "token_recall": leak["token_recall"], "token_precision": leak["token_precision"],
                         "redacted_tokens": leak["redacted_tokens"],
                         "docs_fully_redacted": leak["docs_fully_redacted"], "strict_p": strict["p"], "strict_r": strict["r"],
                         "strict_f": strict["f"]})
    finally:
        tagger.o_bias = saved
    return rows


def calibrate_recall_bias(score_at: Callable[[float], dict], target: float, low: float = 0.0,
                          high: float = O_BIASES[-1], step: float = 0.5) -> tuple[float, dict] | None:
    """The smallest o_bias of the grid low, low + step, ..., high at which `score_at(o_bias)` (scores
    with a "token_recall") reaches `target`, and its scores; None when even `high` falls short.

    Found by bisection, so a grid of 21 settings costs about 7 scorings: token recall grows with
    o_bias (each step turns more of the tokens the tagger is unsure about into PHI). The grid is
    coarse on purpose: a setting chosen on a small annotated set should not be finer than the set
    can tell apart."""
    if high < low or step <= 0:
        raise ValueError(f"o_bias range [{low}, {high}] with step {step}")
    grid = [round(low + i * step, 6) for i in range(int(math.floor((high - low) / step + 1e-9)) + 1)]
    scored: dict[int, dict] = {}

    def at(i: int) -> dict:
        if i not in scored:
            scored[i] = score_at(grid[i])
        return scored[i]

    if at(0)["token_recall"] >= target:
        return grid[0], at(0)
    last = len(grid) - 1
    if at(last)["token_recall"] < target:
        return None
    short, reached = 0, last  # invariant: grid[short] falls short of target, grid[reached] reaches it
    while reached - short > 1:
        mid = (short + reached) // 2
        if at(mid)["token_recall"] >= target:
            reached = mid
        else:
            short = mid
    return grid[reached], at(reached)


def calibrate_pipeline(nlp, data: list[tuple[str, str, list[SpanT]]], target: float, low: float = 0.0,
                       high: float = O_BIASES[-1], batch_size: int = 16) -> tuple[float, dict] | None:
    """`calibrate_recall_bias` on a loaded pipeline and an annotated set: the smallest o_bias (>= low)
    at which the combined pipeline's token recall on `data` reaches `target`, with its token recall
    and strict P / R / F1 there; None when even `high` falls short. The pipeline's own o_bias is
    left as it was."""
    tagger = nlp.get_pipe(RECALL_KNOB)
    saved = tagger.o_bias

    def score_at(bias: float) -> dict:
        tagger.o_bias = float(bias)
        combined = score_corpus(nlp, data, batch_size)["systems"]["combined"]
        strict = combined["strict"]["micro"]
        return {"token_recall": combined["token_recall"], "strict_p": strict["p"], "strict_r": strict["r"],
                "strict_f": strict["f"]}

    try:
        return calibrate_recall_bias(score_at, target, low=low, high=high)
    finally:
        tagger.o_bias = saved


def recall_preset(curve: list[dict], target: float = 0.99) -> dict | None:
    """The smallest o_bias of a curve whose token recall reaches `target` (None if none does)."""
    for row in sorted(curve, key=lambda r: r["o_bias"]):
        if row["token_recall"] >= target:
            return row
    return None


# The annotated sets a build scores, each named for what it is, in the order the report gives them:
# notes written apart from the generator first, the held-out split of the training corpus last.
SET_KINDS = {
    "challenge": "Challenge set (written apart from the generator; only ever scored)",
    "independent": "Independent notes (written apart from this project; tune_path)",
    "tune": "Tuning set (written apart from the generator; settings are chosen on it)",
    "eval": "Real annotated corpus (eval_path)",
    "annotated": "Real annotated corpus",
    "dev": "Development set (dev_path: early stopping and the recall setting looked at it)",
}
# The project's own sets of a locale, by kind (`--sets-of LANG`), those that exist are scored.
PROJECT_SETS = {"challenge": ("corpora", "eval"), "tune": ("corpora", "tune")}


def split_title(split_source: str | None) -> str:
    """What the main corpus of a build is: the held-out split of its training corpus, synthetic
    (`synth`) or of the source corpus the build read; without a source, just a corpus."""
    if split_source is None:
        return "Corpus"
    if split_source == "synth":
        return ("Synthetic held-out split (notes of the generator that wrote the training notes: it shows "
                "the templates were learned, not how notes written elsewhere fare)")
    return f"Held-out split of the source corpus ({split_source})"


def parse_set(value: str | Path) -> tuple[str, str]:
    """(kind, path) of an --also value: `KIND=PATH` with a kind of SET_KINDS, or a plain PATH
    (kind "annotated")."""
    value = str(value)
    kind, sep, path = value.partition("=")
    if sep and kind in SET_KINDS:
        return kind, path
    return "annotated", value


def project_sets(lang: str, root: Path | None = None) -> list[tuple[str, str]]:
    """(kind, folder) of the locale's own annotated sets in the project (corpora/eval/<lang>: the
    challenge set, corpora/tune/<lang>: the tuning set), those that exist."""
    if root is None:
        from . import project_root

        root = project_root()
    return [(kind, str(Path(root).joinpath(*parts, lang))) for kind, parts in PROJECT_SETS.items()
            if Path(root).joinpath(*parts, lang).is_dir()]


def shown_path(path: str | Path) -> str:
    """A corpus path as the report names it: relative to the project when inside it
    ("corpora/eval/fr"), else as given."""
    from . import project_root

    try:
        return str(Path(path).resolve().relative_to(project_root().resolve()))
    except (ValueError, OSError):
        return str(path)


def ordered_sets(sets: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """The sets in report order (SET_KINDS), each path once, "-" and "" (no set) left out."""
    rank = {kind: i for i, kind in enumerate(SET_KINDS)}
    seen: set[str] = set()
    out = []
    for kind, path in sorted(sets, key=lambda kp: rank[kp[0]]):
        if not path or path == "-":
            continue
        key = str(Path(path).resolve())
        if key in seen:
            continue
        seen.add(key)
        out.append((kind, path))
    return out


def evaluate_pipeline(pipeline: str | Path, corpus: str | Path, out_dir: str | Path,
                      training_dir: str | Path | None = None, lang: str | None = None,
                      label_map: str | None = None, batch_size: int = 16,
                      also: Sequence[str | Path] = (), split_source: str | None = None,
                      sets_of: str | None = None) -> dict:
    """Run the pipeline on the corpus, write metrics.json, report.md and plots; return the metrics.

    also: annotated sets scored next to the corpus, each `PATH` or `KIND=PATH` (SET_KINDS);
    sets_of: a language whose project sets (corpora/eval/<lc>, corpora/tune/<lc>) are scored too;
    split_source: the source format of the build whose held-out split `corpus` is ("synth": a
    synthetic split). The report leads with the annotated sets (a synthetic held-out split only shows
    that the templates were learned; notes written elsewhere show what happens on real notes) and
    gives the corpus last, named for what it is."""
    import spacy

    from deid_runtime import merger, pack_component  # noqa: F401  (register the factories)

    out_dir = Path(out_dir)
    data = load_corpus(corpus, lang=lang, label_map=label_map)
    if not data:
        raise EvalError(f"{corpus}: no documents to evaluate")
    sets = [parse_set(a) for a in also] + (project_sets(sets_of) if sets_of else [])
    extra = []
    for kind, path in ordered_sets(sets):
        extra_data = load_corpus(path, lang=lang, label_map=label_map)
        if not extra_data:
            raise EvalError(f"{path}: no documents to evaluate")
        extra.append((kind, path, extra_data))
    nlp = spacy.load(pipeline)
    metrics = {"pipeline": str(pipeline), "package": package_of(nlp), "corpus": str(corpus), "title": split_title(split_source),
               "split_source": split_source, **score_corpus(nlp, data, batch_size)}
    if extra:
        metrics["also"] = [{"corpus": shown_path(path), "kind": kind, "title": SET_KINDS[kind], **score_corpus(nlp, d, batch_size)}
                           for kind, path, d in extra]
    if RECALL_KNOB in nlp.pipe_names:
        metrics["packaged_o_bias"] = nlp.get_pipe(RECALL_KNOB).o_bias  # the scores above decode with it
        # the curve is drawn on the real corpus when there is one (what the preset is chosen on)
        for scored, d in [(metrics, data)] + [(m, d) for m, (_, _, d) in zip(metrics.get("also", []), extra)]:
            scored["recall_curve"] = recall_curve(nlp, d, batch_size=batch_size)
    curve = []
    if training_dir is not None:
        from .train import read_training_log

        curve = read_training_log(Path(training_dir) / "log.jsonl")
        summary = Path(training_dir) / "train_summary.json"
        if summary.exists():
            metrics["training"] = srsly.read_json(summary)
    with all_or_nothing():  # metrics, plots and report replace the earlier ones together or not at all
        write_text_atomic(out_dir / "metrics.json", srsly.json_dumps(metrics, indent=2))
        plots = write_plots(metrics, curve, out_dir)
        write_text_atomic(out_dir / "report.md", render_report(metrics, plots))
    return metrics


# --------------------------------------------------------------------------- report
def _pct(x) -> str:
    return "-" if x is None else f"{100 * x:.1f}"


def scored_sets(metrics: dict) -> list[dict]:
    """Every scored corpus of the metrics in report order: the annotated sets, then the main corpus."""
    return [*metrics.get("also", []), metrics]


def package_of(nlp) -> dict:
    """The package a pipeline is (meta.json): deid_<lang> and its version, the components it runs."""
    meta = nlp.meta
    name = str(meta.get("name") or "pipeline")
    return {"name": name if name.startswith("deid_") else f"{meta.get('lang', '')}_{name}".strip("_"),
            "version": str(meta.get("version") or ""), "components": list(nlp.pipe_names)}


def _about_lines(metrics: dict) -> list[str]:
    """Under the title: what was built, how, and the data it is scored on."""
    lines = []
    pkg = metrics.get("package") or {}
    if pkg.get("components"):
        lines.append(f"Pipeline `{metrics['pipeline']}`: {' -> '.join(pkg['components'])}"
                     + (f", packaged recall setting o_bias {metrics['packaged_o_bias']}" if metrics.get("packaged_o_bias") is not None else "")
                     + ".")
    tr = metrics.get("training")
    if tr:
        built = [f"{tr.get('train_docs')} training notes ({tr.get('train_tokens')} tokens)",
                 f"{tr.get('epochs_run')} of at most {tr.get('max_epochs')} epochs (patience {tr.get('patience_epochs')})",
                 f"init {tr.get('init') or 'blank'}"]
        if tr.get("vectors"):
            built.append(f"static vectors {tr['vectors']}")
        if tr.get("init_tok2vec"):
            built.append("pretrained tok2vec")
        built.append(f"trained on {tr.get('device')} in {tr.get('wall_seconds')} s")
        lines.append("Built from " + ", ".join(built) + ".")
    sets = scored_sets(metrics)
    lines.append("Scored on: " + "; ".join(f"{(s.get('title') or 'corpus').split(' (')[0].lower()} `{s['corpus']}` "
                                           f"({s['docs']} documents)" for s in sets) + ".")
    return [*lines, ""]


def render_report(metrics: dict, plots: dict[str, str]) -> str:
    pkg = metrics.get("package") or {}
    name = f"{pkg['name']} {pkg.get('version', '')}".strip() if pkg.get("name") else Path(metrics["pipeline"]).name
    lines = [f"# Evaluation of {name}", "", *_about_lines(metrics)]
    sets = scored_sets(metrics)
    if len(sets) > 1:
        lines += ["Every annotated set, the notes written apart from the generator first (combined pipeline: "
                  "NER + regex pack + merger):", "",
                  "| set | corpus | docs | strict P | strict R | strict F1 | token recall | docs fully redacted |",
                  "|---|---|---|---|---|---|---|---|"]
        for scored in sets:
            comb = scored["systems"]["combined"]
            st = comb["strict"]["micro"]
            title = scored.get("title") or "Corpus"
            lines.append(f"| {title.split(' (')[0]} | `{scored['corpus']}` | {scored['docs']} | {_pct(st['p'])} | {_pct(st['r'])} "
                         f"| {_pct(st['f'])} | {_pct(comb['token_recall'])} | {_pct(comb['docs_fully_redacted'])} |")
        lines.append("")
    for scored in sets:
        lines += [f"## {scored.get('title') or 'Corpus'}: `{scored['corpus']}`", ""]
        lines += _corpus_section(scored, metrics.get("packaged_o_bias"))
        lines.append("")
    tr = metrics.get("training")
    if tr:
        lines += [f"Training: {tr.get('epochs_run')} epochs, {tr.get('steps_run')} steps on {tr.get('device')}, "
                  f"{tr.get('wall_seconds')} s, best dev F1 {_pct(tr.get('best_ents_f'))}.", ""]
    for title, name in plots.items():
        lines += [f"![{title}]({name})", ""]
    return "\n".join(lines)


def _corpus_section(metrics: dict, packaged_o_bias: float | None = None) -> list[str]:
    """System table, per-label table and throughput of one scored corpus."""
    sysm = metrics["systems"]
    lines = [f"{metrics['docs']} documents.", "",
             "| system | strict P | strict R | strict F1 | overlap F1 | token recall | docs fully redacted |",
             "|---|---|---|---|---|---|---|"]
    for s in SYSTEMS:
        m = sysm[s]
        st = m["strict"]["micro"]
        lines.append(f"| {s} | {_pct(st['p'])} | {_pct(st['r'])} | {_pct(st['f'])} | {_pct(m['overlap']['micro']['f'])} "
                     f"| {_pct(m['token_recall'])} | {_pct(m['docs_fully_redacted'])} |")
    lines += ["", "### Per label (combined pipeline)", "",
              "| label | gold | pred | strict P | strict R | strict F1 | overlap F1 | NER F1 | regex F1 |",
              "|---|---|---|---|---|---|---|---|---|"]
    comb = sysm["combined"]
    labels = sorted(set(comb["strict"]["per_label"]) | set(sysm["ner"]["strict"]["per_label"]))
    for label in labels:
        st = comb["strict"]["per_label"].get(label, {"p": 0, "r": 0, "f": 0, "n_gold": 0, "n_pred": 0})
        ov = comb["overlap"]["per_label"].get(label, {}).get("f")
        ner = sysm["ner"]["strict"]["per_label"].get(label, {}).get("f")
        rx = sysm["regex"]["strict"]["per_label"].get(label, {}).get("f")
        lines.append(f"| {label} | {st['n_gold']} | {st['n_pred']} | {_pct(st['p'])} | {_pct(st['r'])} | {_pct(st['f'])} "
                     f"| {_pct(ov)} | {_pct(ner)} | {_pct(rx)} |")
    tp = metrics.get("throughput", {})
    lines += ["", f"Throughput: {tp.get('docs_per_s')} docs/s, {tp.get('words_per_s')} words/s."]
    if metrics.get("recall_curve"):
        packaged = f"; the scores above use this pipeline's own o_bias {packaged_o_bias}" \
            if packaged_o_bias is not None else ""
        lines += ["", f"Recall knob (`deid_tagger` o_bias; combined pipeline{packaged}):", "",
                  "| o_bias | token recall | token precision | docs fully redacted | strict P | strict R | strict F1 |",
                  "|---|---|---|---|---|---|---|"]
        for row in metrics["recall_curve"]:
            lines.append(f"| {row['o_bias']} | {_pct(row['token_recall'])} | {_pct(row['token_precision'])} "
                         f"| {_pct(row['docs_fully_redacted'])} | {_pct(row['strict_p'])} | {_pct(row['strict_r'])} | {_pct(row['strict_f'])} |")
        preset = recall_preset(metrics["recall_curve"])
        lines += ["", f"Token recall >= 99 %: o_bias {preset['o_bias']} (token precision {_pct(preset['token_precision'])})."
                  if preset else "Token recall >= 99 %: not reached on this curve."]
    return lines


# What the plots call each system (SYSTEMS' keys are the metrics' own).
SYSTEM_NAMES = {"ner": "NER alone", "regex": "regex pack alone", "combined": "deid_<lang> (NER + pack + merger)"}
MIN_LABEL_GAP_PX = 16  # recall-knob point labels closer than this to one already drawn are left out


def training_curve_figure(curve: list[dict]):
    """Dev F1 and the NER loss over the steps, both in one legend (the loss is on its own axis)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    steps = [r["step"] for r in curve]
    lines = ax.plot(steps, [100 * (r["ents_f"] or 0) for r in curve], marker="o", label="dev entity F1 (%)")
    ax.set_xlabel("step")
    ax.set_ylabel("dev entity F1 (%)")
    if any(r["loss_ner"] for r in curve):
        ax2 = ax.twinx()
        lines += ax2.plot(steps, [r["loss_ner"] or 0 for r in curve], color="tab:red", alpha=0.6, label="NER loss (right axis)")
        ax2.set_ylabel("NER loss")
    ax.legend(lines, [line.get_label() for line in lines], loc="center right", fontsize=8)
    ax.set_title("Training curve")
    fig.tight_layout()
    return fig


def per_label_figure(scored: dict):
    """Strict F1 per label of the three systems on one scored set; the legend outside the bars."""
    import matplotlib.pyplot as plt

    per = {s: scored["systems"][s]["strict"]["per_label"] for s in SYSTEMS}
    labels = sorted(set().union(*[set(p) for p in per.values()]))
    fig, ax = plt.subplots(figsize=(max(6, len(labels) * 0.8) + 2.5, 3.8))
    width = 0.27
    for i, s in enumerate(SYSTEMS):
        ax.bar([x + (i - 1) * width for x in range(len(labels))],
               [100 * per[s].get(lab, {}).get("f", 0) for lab in labels], width, label=SYSTEM_NAMES.get(s, s))
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=45, ha="right")
    ax.set_ylabel("strict F1 (%)")
    ax.set_ylim(0, 100)
    # right of the axes: inside, it covered the bars of the last labels (PHONE ... URL)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    title = (scored.get("title") or "corpus").split(" (")[0]
    ax.set_title(f"Strict F1 per label: {title.lower()}, {scored['corpus']}", fontsize=9)
    fig.tight_layout()
    return fig


def recall_figure(scored_sets_with_curves: list[dict]):
    """Token precision against token recall at each o_bias, one line per scored set; a point's o_bias
    is written next to it unless another label is already drawn within MIN_LABEL_GAP_PX."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4.5))
    points = []
    for scored in scored_sets_with_curves:
        rows = scored["recall_curve"]
        name = f"{(scored.get('title') or 'corpus').split(' (')[0].lower()}: {Path(scored['corpus']).name}"
        xs, ys = [100 * r["token_recall"] for r in rows], [100 * r["token_precision"] for r in rows]
        ax.plot(xs, ys, marker="o", label=name)
        points += [(x, y, r["o_bias"]) for x, y, r in zip(xs, ys, rows)]
    ax.set_xlabel("token recall (%)")
    ax.set_ylabel("token precision (%)")
    ax.set_title("Recall knob: o_bias at each point")
    ax.legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    fig.canvas.draw()  # the data -> pixel transform is final once laid out
    drawn: list[tuple[float, float]] = []
    for x, y, bias in points:
        px, py = ax.transData.transform((x, y))
        if all((px - qx) ** 2 + (py - qy) ** 2 >= MIN_LABEL_GAP_PX ** 2 for qx, qy in drawn):
            ax.annotate(f"{bias:g}", (x, y), xytext=(4, 3), textcoords="offset points", fontsize=7)
            drawn.append((px, py))
    return fig


def write_plots(metrics: dict, curve: list[dict], out_dir: Path) -> dict[str, str]:
    import matplotlib

    matplotlib.use("Agg")  # no display on build machines
    import matplotlib.pyplot as plt

    figures = []
    if curve:
        figures.append(("Training curve", "training_curve.png", training_curve_figure(curve)))
    lead = scored_sets(metrics)[0]  # the set the report leads with
    if any(lead["systems"][s]["strict"]["per_label"] for s in SYSTEMS):
        figures.append(("Per-label F1", "per_label_f1.png", per_label_figure(lead)))
    with_curves = [m for m in scored_sets(metrics) if m.get("recall_curve")]
    if with_curves:
        figures.append(("Recall knob", "recall_curve.png", recall_figure(with_curves)))
    plots = {}
    for title, name, fig in figures:
        _savefig(fig, out_dir / name)
        plt.close(fig)
        plots[title] = name
    return plots


def evaluate_command(
    pipeline: str = typer.Argument(..., help="Pipeline folder or installed package (deid_<lc>)"),
    corpus: Path = typer.Argument(..., help="Gold corpus: DocBin (.spacy), records JSONL, brat folder, i2b2 XML or inline-markup .txt"),
    out: Path = typer.Option(..., "--out", "-o", help="Output folder (metrics.json, report.md, PNGs)"),
    training_dir: Path = typer.Option(None, "--training-dir", help="Training folder (log.jsonl) for the curve"),
    lang: str = typer.Option(None, "--lang", help="Language of a brat corpus"),
    label_map: str = typer.Option(None, "--label-map", help="Label map of a brat corpus (e.g. meddocan)"),
    batch_size: int = typer.Option(16, "--batch-size", help="documents per nlp.pipe batch (memory grows with it)"),
    also: list[str] = typer.Option([], "--also", help="An annotated set to score too, PATH or KIND=PATH with KIND one of "
                                   + ", ".join(SET_KINDS) + " (repeatable; '-' = none)"),
    sets_of: str = typer.Option(None, "--sets-of", help="Also score the project's annotated sets of this language "
                                "(corpora/eval/<lc>: challenge, corpora/tune/<lc>: tuning), those that exist"),
    split_source: str = typer.Option(None, "--split-source", help="Source format of the build whose held-out split CORPUS "
                                     "is (synth: the report names it a synthetic split)"),
) -> None:
    """Strict/overlap P/R/F1, token recall and fully-redacted docs for NER, regex pack and combined."""
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        metrics = evaluate_pipeline(pipeline, corpus, out, training_dir=training_dir, lang=lang,
                                    label_map=label_map or None, batch_size=batch_size,
                                    also=[a for a in also if a and parse_set(a)[1] not in ("", "-")],
                                    split_source=split_source or None, sets_of=sets_of or None)
    except EvalError as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(1)
    for scored in scored_sets(metrics):
        short = {s: {"strict_f": m["strict"]["micro"]["f"], "token_recall": m["token_recall"],
                     "docs_fully_redacted": m["docs_fully_redacted"]} for s, m in scored["systems"].items()}
        typer.echo(f"{scored['corpus']}: " + json.dumps(short, indent=2))
