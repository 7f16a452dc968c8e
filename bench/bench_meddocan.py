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
     .venv/bin/python bench/bench_meddocan.py --frontier default=PIPELINE,student=PIPELINE
        (any built pipelines, e.g. the default deid_es and its distilled student, beside Presidio and the
        tokenizer alone, in one run: on the final half and on the independent tuning notes of es
        (multi_tune/es.txt), CPU words/s of a process pinned to one core, the ratio to Presidio and to the
        tokenizer alone, token recall and strict F1; bench/results/frontier.json and frontier.md)
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


# --------------------------------------------------------------------------- the frontier of given pipelines
MULTI_TUNE_ES = PROJECT_ROOT.parent / "shared" / "corpora" / "multi_tune" / "es.txt"


def tokenizer_worker(pipeline: str, texts_json: str, out: str) -> None:
    """The pipeline's tokenizer alone over the texts, in this process pinned to one core: the
    physical limit of any spaCy pipeline with that tokenizer (every component runs after it)."""
    import spacy

    sys.path.insert(0, str(PROJECT_ROOT / "bench"))
    from bench_deid import pin_to_one_core, rss_mb

    pinned = pin_to_one_core()
    texts = json.loads(Path(texts_json).read_text(encoding="utf-8"))
    tokenizer = spacy.load(pipeline).tokenizer
    list(tokenizer.pipe(texts[:2]))
    started = time.process_time()
    tokens = sum(len(doc) for doc in tokenizer.pipe(texts))
    seconds = time.process_time() - started
    Path(out).write_text(json.dumps({"system": f"tokenizer of {pipeline}", "cpu": pinned, "seconds": seconds,
                                     "tokens": tokens, "peak_rss_mb": round(rss_mb("VmHWM"), 1)}), encoding="utf-8")


def _timed_tokenizer(pipeline: str, texts: list[str]) -> dict:
    import tempfile

    with tempfile.TemporaryDirectory(prefix="bench_tok_") as tmp:
        texts_json, out = Path(tmp) / "texts.json", Path(tmp) / "out.json"
        texts_json.write_text(json.dumps(texts), encoding="utf-8")
        env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        subprocess.run([sys.executable, __file__, "--tokenizer-worker", pipeline, str(texts_json), str(out)],
                       check=True, env=env, capture_output=True)
        return json.loads(out.read_text(encoding="utf-8"))


def _fastest(runs: list[dict | None]) -> dict | None:
    done = [r for r in runs if r]
    return min(done, key=lambda r: r["seconds"]) if done else None


def frontier(pipelines: dict[str, str], repeat: int = 1) -> None:
    """Each named pipeline, Presidio and the tokenizer alone (of the first pipeline) on MEDDOCAN dev's
    final half and on the es independent tuning notes: scores of one pass (the project's metrics,
    combined pipeline; MEDDOCAN's postcode convention on its half) and CPU words/s of a process pinned
    to one core (bench_deid's worker; the fastest of `repeat` interleaved runs)."""
    import platform

    sys.path.insert(0, str(PROJECT_ROOT / "bench"))
    from bench_deid import _WORD, run_system
    from bench_multi_tune import score_pipeline

    from deid_factory.evaluate import load_corpus, score_system

    if not (SHARED / "dev").is_dir():
        print(f"MEDDOCAN not found at {SHARED}: nothing to benchmark")
        return
    sets = {"MEDDOCAN dev, final half": [(r.id, r.text, [(s.start, s.end, s.label) for s in r.spans])
                                         for r in split_dev(SHARED / "dev")["final"]]}
    if MULTI_TUNE_ES.exists():
        sets["es independent tuning notes"] = load_corpus(MULTI_TUNE_ES, lang="es")
    first = next(iter(pipelines.values()))
    result = {"date": dt.date.today().isoformat(), "commit": git_commit(), "pipelines": pipelines, "repeat": repeat,
              "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, load average "
                         f"{' '.join(f'{x:.1f}' for x in os.getloadavg())} at the start", "sets": {}}
    for set_name, data in sets.items():
        texts, gold = [t for _, t, _ in data], [g for _, _, g in data]
        words = sum(len(_WORD.findall(t)) for t in texts)
        rows = {}
        for name, pipeline in pipelines.items():
            scores, _ = score_pipeline(pipeline, data, meddocan=set_name.startswith("MEDDOCAN"))
            rows[name] = {"pipeline": pipeline, "scores": scores["deid"]}
        timed = {name: [] for name in [*pipelines, "presidio", "tokenizer"]}
        for _ in range(max(1, repeat)):  # interleaved: a busy spell of the machine slows every system alike
            for name, pipeline in pipelines.items():
                timed[name].append(run_system("deid", "es", texts, pipeline))
            timed["presidio"].append(run_system("presidio", "es", texts, None))
            timed["tokenizer"].append(_timed_tokenizer(first, texts))
        presidio = _fastest(timed["presidio"])
        if presidio:
            rows["presidio"] = {"pipeline": presidio["system"],
                                "scores": score_system(texts, gold, [[tuple(s) for s in p] for p in presidio["preds"]])}
        rows["tokenizer"] = {"pipeline": f"the tokenizer of {first} alone", "scores": None}
        for name, row in rows.items():
            best = _fastest(timed[name])
            row["cpu_seconds"] = round(best["seconds"], 3) if best else None
            row["words_per_cpu_s"] = round(words / best["seconds"]) if best else None
        for row in rows.values():
            wps = row["words_per_cpu_s"]
            row["vs_presidio"] = round(wps / rows["presidio"]["words_per_cpu_s"], 2) if wps and "presidio" in rows else None
            row["vs_tokenizer"] = round(wps / rows["tokenizer"]["words_per_cpu_s"], 3) if wps else None
        result["sets"][set_name] = {"docs": len(data), "words": words, "rows": rows}
        print(f"{set_name}: done", flush=True)
    write_text_atomic(RESULTS / "frontier.json", json.dumps(result, indent=2))
    write_text_atomic(RESULTS / "frontier.md", render_frontier(result))
    print(render_frontier(result))


def render_frontier(result: dict) -> str:
    lines = ["# The frontier: given pipelines beside Presidio and the tokenizer alone", "",
             f"{result['date']}, commit {result['commit']}; {result['machine']}. Speed: words (\\w+ runs) per CPU "
             f"second of a process pinned to one core, after loading and a warm-up, fastest of {result['repeat']}. "
             "Scores: the combined pipeline (NER + regex pack + merger), the project's metrics (factory/evaluate.py).", ""]
    for set_name, entry in result["sets"].items():
        lines += [f"## {set_name} ({entry['docs']} notes, {entry['words']:,} words)", "",
                  "| system | CPU words/s (one core) | vs Presidio | vs tokenizer alone | token recall | strict P | strict R | strict F1 |",
                  "|---|---|---|---|---|---|---|---|"]
        for name, row in entry["rows"].items():
            sc = row["scores"]
            cells = (["-"] * 4 if sc is None else
                     [f"{100 * sc['token_recall']:.2f}", *(f"{100 * sc['strict']['micro'][k]:.1f}" for k in ("p", "r", "f"))])
            wps = f"{row['words_per_cpu_s']:,}" if row["words_per_cpu_s"] else "-"
            lines.append(f"| {name} | {wps} | {row['vs_presidio'] or '-'}x | {row['vs_tokenizer'] or '-'} | " + " | ".join(cells) + " |")
        lines.append("")
    lines += ["Pipelines: " + ", ".join(f"{n} = `{p}`" for n, p in result["pipelines"].items()), ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated systems to (re)run: baseline," + ",".join(VARIANTS))
    parser.add_argument("--max-epochs", type=int, default=20)
    parser.add_argument("--speed", action="store_true", help="only measure the CPU words/s of the built systems and Presidio")
    parser.add_argument("--frontier", default="", help="NAME=PIPELINE,...: score and time these pipelines beside Presidio and "
                        "the tokenizer alone on the final half and multi_tune/es (frontier.md); nothing is trained")
    parser.add_argument("--repeat", type=int, default=1, help="--frontier: timed runs of each system and set, the fastest kept")
    parser.add_argument("--tokenizer-worker", nargs=3, metavar=("PIPELINE", "TEXTS_JSON", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.tokenizer_worker:
        return tokenizer_worker(*args.tokenizer_worker)
    if args.frontier:
        return frontier(dict(item.split("=", 1) for item in args.frontier.split(",") if item), args.repeat)
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
