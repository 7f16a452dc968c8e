"""Benchmark: builds from real annotated notes (MEDDOCAN train) against the plain spaCy recipe.

Real notes first: a de-identifier is judged on real notes it never saw. MEDDOCAN dev is split ONCE,
by document id (sorted ids, `random.Random(0).shuffle`), into
  tune   the half that may be looked at: early stopping of every system here, error analysis,
         choices (every choice in docs/training.md made on MEDDOCAN was made on this half);
  final  the half only ever scored.
Systems, each trained on all 500 MEDDOCAN train notes with `tune` as its dev set:
  baseline          `spacy init config -p ner -o efficiency` (spaCy's tokenizer, its defaults), trained
                    with `spacy train`: what a team would get without the factory
  <variant>         `spacy project run build languages/es` on a copy of the project with
                    --vars.source_format brat --vars.source_path TRAIN --vars.dev_path tune
                    --vars.eval_path final (the native path) and the variant's vars / config
The factory's pipelines are scored as NER alone and combined (NER + regex pack + merger), with the
project's metrics (factory/evaluate.py): strict P/R/F1 per label, token recall, docs fully
redacted, words/s.

Each system's result is cached in bench/results/meddocan/<name>.json (with the commit it ran at);
`--only a,b` (re)runs some, and the tables are rendered from every cached result:
bench/results/meddocan.md and .json. Without ../shared the benchmark says so and exits 0.

Run: .venv/bin/python bench/bench_meddocan.py [--only baseline,tagger] [--max-epochs 20]
     .venv/bin/python bench/bench_meddocan.py --speed   (CPU words/s of the built systems vs Presidio)
A system trains for an hour or more on 2 busy cores.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

from deid_factory import PROJECT_ROOT
from deid_factory.records import write_records
from deid_factory.outputs import write_text_atomic

SHARED = PROJECT_ROOT.parent / "shared" / "corpora" / "meddocan"
RESULTS = PROJECT_ROOT / "bench" / "results"
CACHE = RESULTS / "meddocan"
WORK = PROJECT_ROOT / "bench" / "work" / "meddocan"
OUTPUTS = ("corpus", "training", "metrics", "packages", "assets", "project.lock")

# The factory systems: name -> (what it tests, extra weasel vars, config overrides for render_config)
VARIANTS: dict[str, tuple[str, list[str], dict]] = {
    "tagger": ("native path, BILUO tagger (deid_tagger)", [], {"ner_model": "tagger"}),
    "parser": ("native path, transition-based NER", [], {"ner_model": "parser"}),
    "tagger_aug50": ("native path, tagger, + surrogate copies of half the training notes",
                     ["--vars.augment_share", "0.5"], {"ner_model": "tagger"}),
    "tagger_split": ("native path, tagger, without the dev set: early stopping on 10 % of train (80/10/10)",
                     ["--vars.dev_path", "-"], {"ner_model": "tagger"}),
    "tagger_old_path": ("the translation path's stages on native notes: filters drop records, every PHI "
                        "replaced by surrogates, 80/10/10 split", ["--vars.native", "no", "--vars.dev_path", "-"],
                        {"ner_model": "tagger"}),
    "tagger_wide": ("native path, tagger, tok2vec width 128, depth 6, hash rows x2",
                    [], {"ner_model": "tagger", "width": 128, "depth": 6, "rows_factor": 2}),
    "tagger_narrow": ("native path, tagger, tok2vec width 64, depth 2",
                      [], {"ner_model": "tagger", "width": 64, "depth": 2}),
    "tagger_long": ("native path, tagger, up to 30 epochs, patience 8",
                    ["--vars.max_epochs", "30", "--vars.patience", "8"], {"ner_model": "tagger"}),
}


def split_dev(dev_dir: Path) -> dict[str, list]:
    """MEDDOCAN dev as records, split once by document id into tune and final halves."""
    from deid_factory.readers import read_corpus

    records = list(read_corpus(dev_dir, "brat", "meddocan", "es"))
    ids = sorted(r.id for r in records)
    random.Random(0).shuffle(ids)
    tune = set(ids[: len(ids) // 2])
    return {"tune": [r for r in records if r.id in tune], "final": [r for r in records if r.id not in tune]}


def git_commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=PROJECT_ROOT, capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def use_meddocan_conventions(nlp) -> None:
    """MEDDOCAN annotates a postcode as a place of its own, not as part of the street address (the
    merger joins them by default: docs/router.md, "Conventions")."""
    if "deid_merger" in nlp.pipe_names:
        nlp.get_pipe("deid_merger").postcode_in_address = False


def score(pipeline: str | Path, halves: dict[str, Path], systems=("ner", "combined")) -> dict:
    """The project's metrics of a pipeline on both halves (NER alone and combined when present)."""
    import spacy

    from deid_factory.evaluate import RECALL_KNOB, load_corpus, recall_curve, score_corpus
    from deid_runtime import merger, pack_component  # noqa: F401

    nlp = spacy.load(pipeline)
    use_meddocan_conventions(nlp)
    out = {}
    for half, path in halves.items():
        data = load_corpus(path)
        scored = score_corpus(nlp, data)
        entry = {"throughput": scored["throughput"]}
        plain = "deid_merger" not in nlp.pipe_names
        for system in systems:
            if plain:  # a plain NER pipeline: doc.ents is its only output (no doc.spans["deid_ner"])
                entry["ner"] = scored["systems"]["combined"]
            else:
                entry[system] = scored["systems"][system]
        if RECALL_KNOB in nlp.pipe_names and "deid_merger" in nlp.pipe_names:
            entry["recall_curve"] = recall_curve(nlp, data)
        out[half] = entry
    return out


def run_baseline(train_dir: Path, halves: dict[str, Path], max_epochs: int) -> dict:
    """spaCy's efficiency NER recipe, trained on MEDDOCAN train with the tune half as dev."""
    import spacy
    from spacy.tokens import DocBin
    from spacy.util import filter_spans

    from deid_factory.readers import read_corpus

    work = WORK / "baseline"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    nlp = spacy.blank("es")
    for name, records in (("train", list(read_corpus(train_dir, "brat", "meddocan", "es"))),
                          ("dev", list(_records(halves["tune"])))):
        db = DocBin()
        for r in records:  # spaCy's own tokenizer; an entity that does not fall on its tokens expands to them
            doc = nlp.make_doc(r.text)
            doc.ents = filter_spans([e for e in (doc.char_span(s.start, s.end, s.label, alignment_mode="expand")
                                                 for s in r.spans) if e is not None])
            db.add(doc)
        db.to_disk(work / f"{name}.spacy")
    config = work / "config.cfg"
    subprocess.run([sys.executable, "-m", "spacy", "init", "config", str(config), "-l", "es", "-p", "ner",
                    "-o", "efficiency", "--force"], check=True, capture_output=True)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "spacy", "train", str(config), "-o", str(work / "out"),
                    "--paths.train", str(work / "train.spacy"), "--paths.dev", str(work / "dev.spacy"),
                    "--training.max_epochs", str(max_epochs)], check=True, capture_output=True)
    return {"wall_seconds": round(time.perf_counter() - t0, 1), "scores": score(work / "out" / "model-best", halves)}


def _records(path: Path):
    from deid_factory.records import read_records

    return read_records(path)


def run_variant(name: str, train_dir: Path, halves: dict[str, Path], max_epochs: int) -> dict:
    """A copy of languages/es, built from MEDDOCAN train with the variant's settings."""
    from deid_factory.render import render_config

    what, extra_vars, overrides = VARIANTS[name]
    root = WORK / name
    shutil.rmtree(root, ignore_errors=True)
    project = root / "languages" / "es"
    shutil.copytree(PROJECT_ROOT / "languages" / "es", project, ignore=shutil.ignore_patterns(*OUTPUTS))
    # the files outside languages/es that the project's steps read (../../...: pack, synthetic
    # corpus, label maps), in the same places
    for folder in (("regex_packs", "es"), ("corpora", "synth", "es"), ("corpora", "label_maps")):
        shutil.copytree(PROJECT_ROOT.joinpath(*folder), root.joinpath(*folder))
    overrides = dict(overrides)
    factor = overrides.pop("rows_factor", 1)
    config = render_config("es", **overrides)
    if factor != 1:
        config = config.replace("rows = [5000,1000,2500,2500]", "rows = [%s]" % ",".join(str(factor * n) for n in (5000, 1000, 2500, 2500)))
    (project / "configs" / "config.cfg").write_text(config, encoding="utf-8")
    build_vars = {"source_format": "brat", "source_path": str(train_dir), "label_map": "meddocan",
                  "dev_path": str(halves["tune"]), "eval_path": str(halves["final"]), "max_epochs": str(max_epochs)}
    build_vars.update(dict(zip((v.removeprefix("--vars.") for v in extra_vars[::2]), extra_vars[1::2])))
    args = [sys.executable, "-m", "spacy", "project", "run", "build", str(project)]
    for key, value in build_vars.items():
        args += [f"--vars.{key}", value]
    t0 = time.perf_counter()
    env = {**os.environ, "PIP_TARGET": str(root / "site")}  # the wheel is not installed into the venv
    ret = subprocess.run(args, capture_output=True, text=True, env=env)
    if ret.returncode != 0:
        raise RuntimeError(f"build {name} failed:\n{ret.stdout[-3000:]}\n{ret.stderr[-3000:]}")
    wall = time.perf_counter() - t0
    summary = json.loads((project / "training" / "train_summary.json").read_text())
    report = json.loads((project / "corpus" / "final" / "report.json").read_text())
    return {"what": what, "vars": extra_vars, "config": overrides | ({"rows_factor": factor} if factor != 1 else {}),
            "wall_seconds": round(wall, 1), "training": summary, "splits": report["splits"]["counts"],
            "scores": score(project / "training" / "pipeline", halves)}


def _speed(result: dict) -> str:
    speed = (result.get("speed") or {}).get("cpu_words_per_s")
    return f"{speed:,.0f}" if speed else "-"


def measure_speed(results: dict) -> None:
    """CPU words/s of every factory system whose pipeline is still in bench/work, and of Presidio, on
    the final half, each in its own process pinned to one core (bench_deid's workers): the scores'
    wall-clock words/s move with the machine's load, CPU seconds much less."""
    sys.path.insert(0, str(PROJECT_ROOT / "bench"))
    from bench_deid import _WORD, run_system

    texts = [r.text for r in _records(WORK / "dev_final.jsonl")]
    words = sum(len(_WORD.findall(t)) for t in texts)
    peer = run_system("presidio", "es", texts, None)
    peer_wps = round(words / peer["seconds"], 1) if peer else None
    for name, result in results.items():
        pipeline = WORK / name / "languages" / "es" / "training" / "pipeline"
        if not pipeline.is_dir():
            continue
        measured = run_system("deid", "es", texts, str(pipeline))
        if measured is None:
            continue
        wps = round(words / measured["seconds"], 1)
        result["speed"] = {"cpu_words_per_s": wps, "presidio_cpu_words_per_s": peer_wps,
                           "vs_presidio": round(wps / peer_wps, 2) if peer_wps else None,
                           "peak_rss_mb": measured["peak_rss_mb"], "date": dt.date.today().isoformat()}
        write_text_atomic(CACHE / f"{name}.json", json.dumps(result, indent=2))
        print(f"  {name}: {wps:,.0f} CPU words/s ({result['speed']['vs_presidio']}x Presidio)", flush=True)


def plot_frontier(results: dict, path: Path) -> None:
    """Token recall and strict F1 (final half, combined) against CPU words/s, one point per built
    system: the accuracy/speed frontier of docs/training.md."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    points = [(name, r["speed"]["cpu_words_per_s"], r["scores"]["final"]["combined"])
              for name, r in results.items() if r.get("speed") and "combined" in r["scores"]["final"]]
    if not points:
        return
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for ax, key, title in ((axes[0], lambda m: m["token_recall"], "token PHI recall"),
                           (axes[1], lambda m: m["strict"]["micro"]["f"], "strict F1")):
        for name, wps, metrics in points:
            ax.scatter(wps, key(metrics))
            ax.annotate(name, (wps, key(metrics)), textcoords="offset points", xytext=(4, 4), fontsize=8)
        peer = next(iter(points))
        presidio = results[peer[0]]["speed"].get("presidio_cpu_words_per_s")
        if presidio:
            ax.axvline(10 * presidio, color="grey", linestyle="--", linewidth=1)
            ax.annotate("10x Presidio", (10 * presidio, ax.get_ylim()[0]), fontsize=8, rotation=90,
                        textcoords="offset points", xytext=(-10, 10))
        ax.set_xlabel("CPU words/s, one core")
        ax.set_title(f"MEDDOCAN dev, final half: {title}")
        ax.grid(alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def render(results: dict) -> str:
    lines = ["# Builds from MEDDOCAN train, scored on MEDDOCAN dev (tune half: early stopping; final half: only scored)", ""]
    lines += ["| system | what | scored | final strict P | R | F1 | final token recall | final docs fully redacted | tune F1 | tune token recall | CPU words/s (one core) | vs Presidio | epochs |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, r in results.items():
        for system in ("ner", "combined"):
            if system not in r["scores"]["final"]:
                continue
            f, t = r["scores"]["final"][system], r["scores"]["tune"][system]
            st = f["strict"]["micro"]
            lines.append(f"| {name} | {r.get('what', 'plain spaCy efficiency NER')} | {system} | {st['p']:.3f} | {st['r']:.3f} "
                         f"| **{st['f']:.3f}** | **{f['token_recall']:.4f}** | {f['docs_fully_redacted']:.3f} "
                         f"| {t['strict']['micro']['f']:.3f} | {t['token_recall']:.4f} "
                         f"| {_speed(r)} | {(r.get('speed') or {}).get('vs_presidio') or '-'} | {(r.get('training') or {}).get('epochs_run', '-')} |")
    lines += ["", "Per label, final half (strict F1 / recall):", ""]
    labels = sorted({lab for r in results.values() for s in ("ner", "combined") if s in r["scores"]["final"]
                     for lab in r["scores"]["final"][s]["strict"]["per_label"]})
    lines += ["| system | " + " | ".join(labels) + " |", "|---|" + "---|" * len(labels)]
    for name, r in results.items():
        system = "combined" if "combined" in r["scores"]["final"] else "ner"
        per = r["scores"]["final"][system]["strict"]["per_label"]
        cells = [f"{per[l]['f']:.2f} / {per[l]['r']:.2f}" if l in per else "-" for l in labels]
        lines.append(f"| {name} ({system}) | " + " | ".join(cells) + " |")
    curves = {n: r["scores"]["final"].get("recall_curve") for n, r in results.items() if r["scores"]["final"].get("recall_curve")}
    for name, curve in curves.items():
        lines += ["", f"Recall knob of `{name}` on the final half (o_bias: token recall / token precision / strict F1):", "",
                  " · ".join(f"{row['o_bias']}: {row['token_recall']:.4f} / {row['token_precision']:.3f} / {row['strict_f']:.3f}" for row in curve)]
    lines += ["", "Commits: " + ", ".join(sorted({f"{n} @ {r['commit']}" for n, r in results.items()})),
              f"Machine: {results[next(iter(results))].get('machine', '?')}", ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated systems to (re)run: baseline," + ",".join(VARIANTS))
    parser.add_argument("--max-epochs", type=int, default=20)
    parser.add_argument("--speed", action="store_true", help="only measure the CPU words/s of the built systems and Presidio")
    args = parser.parse_args()
    if not (SHARED / "train").is_dir():
        print(f"MEDDOCAN not found at {SHARED}: nothing to benchmark")
        return
    import platform

    WORK.mkdir(parents=True, exist_ok=True)
    CACHE.mkdir(parents=True, exist_ok=True)
    halves = {}
    for half, records in split_dev(SHARED / "dev").items():
        halves[half] = WORK / f"dev_{half}.jsonl"
        write_records(halves[half], records)
    wanted = [] if args.speed else ([n for n in args.only.split(",") if n] or ["baseline", *VARIANTS])
    for name in wanted:
        print(f"[{dt.datetime.now():%H:%M}] {name} ...", flush=True)
        result = run_baseline(SHARED / "train", halves, args.max_epochs) if name == "baseline" else \
            run_variant(name, SHARED / "train", halves, args.max_epochs)
        result.update({"commit": git_commit(), "date": dt.date.today().isoformat(), "max_epochs": args.max_epochs,
                       "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores"})
        write_text_atomic(CACHE / f"{name}.json", json.dumps(result, indent=2))
        final = result["scores"]["final"]
        best = final.get("combined", final["ner"])
        print(f"  final: strict F1 {best['strict']['micro']['f']:.3f}, token recall {best['token_recall']:.4f}", flush=True)
    results = {p.stem: json.loads(p.read_text()) for p in sorted(CACHE.glob("*.json"))}
    order = ["baseline", *VARIANTS]
    results = {n: results[n] for n in order if n in results}
    if args.speed:
        measure_speed(results)
    write_text_atomic(RESULTS / "meddocan.json", json.dumps(results, indent=2))
    write_text_atomic(RESULTS / "meddocan.md", render(results))
    plot_frontier(results, RESULTS / "meddocan_frontier.png")
    print(f"wrote {RESULTS / 'meddocan.md'}")


if __name__ == "__main__":
    main()
