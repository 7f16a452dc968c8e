"""Benchmark: deid_<lang> against Presidio Analyzer on the same documents, one CPU core, one run.

Systems (each measured in its own subprocess, pinned to one core, so peak memory is its own):
  deid_<lc>      the packaged pipeline: CNN NER + locale regex pack + merger
  regex_<lc>     a blank spaCy pipeline with the locale regex pack only (the rule half of deid_<lc>)
  presidio_<lc>  presidio-analyzer's predefined recognizers on the language's spaCy model
                 (<lc>_core_news_sm, whose NER gives Presidio its PERSON/LOCATION/ORGANIZATION);
                 without that model installed, a blank pipeline of the language (rules only)

Corpora:
  <lc> held-out  languages/<lc>/corpus/final/test.spacy, the test split the build never trained on
  MEDDOCAN dev   ../shared/corpora/meddocan/dev (real Spanish records, brat); skipped when absent

Metrics: the project's (factory/evaluate.py): strict and overlap micro F1, token PHI recall and
documents fully redacted (labels ignored), over all labels and over the structured labels both rule
systems target; words/s and docs/s of the timed run (after a warm-up), in CPU seconds of the pinned process; RSS after loading and peak RSS.

Writes bench/results/deid.json, deid.md and deid.png; the README quotes the table.
Run: .venv/bin/python bench/bench_deid.py [--langs es,fr] [--project fr=bench/work/languages/fr] [--limit N]
(bench/run.sh installs the peer and its models and builds what is missing first).
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import json
import logging
import os
import platform
import re
import subprocess
import sys
import tempfile
import textwrap
import time
import warnings
from pathlib import Path

if "--worker" in sys.argv:
    # A deployed deid_<lang> needs no torch (only the factory's Argos translation does), but thinc
    # imports torch whenever it is installed, which costs every spaCy process ~230 MB of RSS. The
    # measuring processes hide it, for every system alike, so memory is what a deployment pays.
    sys.modules["torch"] = None  # type: ignore[assignment]

from deid_factory import PROJECT_ROOT
from deid_factory.evaluate import load_corpus, score_system
from deid_factory.outputs import write_text_atomic

RESULTS = PROJECT_ROOT / "bench" / "results"
BENCH_MODELS = PROJECT_ROOT / "bench" / ".models"  # peer models that cannot go into the venv (bench/run.sh)
MEDDOCAN_DEV = PROJECT_ROOT.parent / "shared" / "corpora" / "meddocan" / "dev"
STRUCTURED = {"EMAIL", "PHONE", "URL", "IP", "ID", "DATE", "AGE"}
PRESIDIO_TO_CANONICAL = {
    "EMAIL_ADDRESS": "EMAIL", "PHONE_NUMBER": "PHONE", "IP_ADDRESS": "IP", "URL": "URL", "DATE_TIME": "DATE",
    "ES_NIF": "ID", "ES_NIE": "ID", "IBAN_CODE": "ID", "MEDICAL_LICENSE": "ID", "CREDIT_CARD": "ID",
    "US_SSN": "ID", "UK_NHS": "ID", "FR_NIR": "ID", "PERSON": "PERSON", "LOCATION": "LOCATION",
    "ORGANIZATION": "ORGANIZATION",
}
# The goals of the default builds (issue: benchmarks against Presidio).
GOAL_SPEED_RATIO = 10.0
GOAL_HELDOUT_TOKEN_RECALL = 0.99
GOAL_PEAK_RSS_MB = 500.0
_WORD = re.compile(r"\w+")


# --------------------------------------------------------------------------- the machine
def pin_to_one_core() -> str:
    try:
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
        return "pinned to one core"
    except (AttributeError, OSError):
        return "not pinned (no sched_setaffinity)"


def machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import spacy

    return f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, spaCy {spacy.__version__}"


def rss_mb(field: str = "VmRSS") -> float:
    """Resident set size of this process in MB: VmRSS now, or VmHWM, the peak (Linux /proc; 0 elsewhere).
    Not ru_maxrss: Linux carries that across exec, so a worker would inherit its parent's peak."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


# --------------------------------------------------------------------------- corpora
def corpora(langs: list[str], projects: dict[str, Path], meddocan_dev: Path = MEDDOCAN_DEV) -> list[dict]:
    """The corpora to run: each language's held-out split, and MEDDOCAN dev for es when present."""
    out = []
    for lang in langs:
        project = projects.get(lang, PROJECT_ROOT / "languages" / lang)
        test = project / "corpus" / "final" / "test.spacy"
        # a project other than languages/<lc> (bench/run.sh's copy-model fr build) is named in the tables
        where = "" if lang not in projects else f" ({_relative(project)})"
        if test.exists():
            out.append({"name": f"{lang} held-out{where}", "lang": lang, "path": str(test), "label_map": None,
                        "heldout": True})
        else:
            print(f"{test} not found: build the language first (spacy project run build languages/{lang}); skipped",
                  file=sys.stderr)
        if lang == "es":
            if meddocan_dev.exists():
                out.append({"name": "MEDDOCAN dev", "lang": "es", "path": str(meddocan_dev), "label_map": "meddocan",
                            "heldout": False})
            else:
                print(f"{meddocan_dev} not found: MEDDOCAN part skipped", file=sys.stderr)
    return out


def _relative(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(PROJECT_ROOT))
    except ValueError:
        return str(path)


def load_texts(corpus: dict, limit: int) -> list[tuple[str, str, list]]:
    docs = load_corpus(corpus["path"], lang=corpus["lang"], label_map=corpus["label_map"])
    return docs[:limit] if limit else docs


# --------------------------------------------------------------------------- systems (run in the worker)
def _spacy_runner(nlp):
    return lambda texts: [[(e.start_char, e.end_char, e.label_) for e in d.ents] for d in nlp.pipe(texts)]


def make_regex(lang: str, pipeline: str | None):
    import spacy

    nlp = spacy.blank(lang)
    nlp.add_pipe("deid_regex_pack", config={"pack_dir": str(PROJECT_ROOT / "regex_packs" / lang)})
    return _spacy_runner(nlp), f"blank {lang} + regex_packs/{lang}"


def make_deid(lang: str, pipeline: str | None):
    import spacy

    nlp = spacy.load(pipeline or f"deid_{lang}")
    return _spacy_runner(nlp), f"{pipeline or 'deid_' + lang} ({', '.join(nlp.pipe_names)})"


def presidio_model(lang: str) -> str | None:
    """Data folder of the language's spaCy model for Presidio, or None when none is installed."""
    import spacy

    name = f"{lang}_core_news_sm" if lang != "en" else "en_core_web_sm"
    if BENCH_MODELS.exists() and str(BENCH_MODELS) not in sys.path:
        sys.path.append(str(BENCH_MODELS))
    try:
        package = spacy.util.get_package_path(name)
    except Exception:
        return None
    # a model package keeps its data in <package>/<name>-<version>/ (config.cfg and the weights)
    data = [p for p in [package, *sorted(package.iterdir())] if (p / "config.cfg").exists()]
    return str(data[0]) if data else None


def make_presidio(lang: str, pipeline: str | None):
    import spacy
    import tldextract

    # Presidio's e-mail/URL recognizers call tldextract, which fetches the public suffix list at
    # first use; its bundled snapshot keeps the benchmark offline.
    tldextract.extract = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)
    from presidio_analyzer import AnalyzerEngine
    from presidio_analyzer.nlp_engine import NlpEngineProvider

    model = presidio_model(lang)
    described = f"presidio-analyzer on {Path(model).name}" if model else f"presidio-analyzer on a blank {lang} pipeline (no {lang} model installed)"
    if model is None:
        model = tempfile.mkdtemp(prefix="presidio_blank_")
        spacy.blank(lang).to_disk(model)
    engine = NlpEngineProvider(nlp_configuration={
        "nlp_engine_name": "spacy", "models": [{"lang_code": lang, "model_name": model}]}).create_engine()
    analyzer = AnalyzerEngine(nlp_engine=engine, supported_languages=[lang])

    def run(texts):
        out = []
        for text in texts:
            out.append([(r.start, r.end, PRESIDIO_TO_CANONICAL[r.entity_type])
                        for r in analyzer.analyze(text, language=lang) if r.entity_type in PRESIDIO_TO_CANONICAL])
        return out

    return run, described


SYSTEMS = {"deid": make_deid, "regex": make_regex, "presidio": make_presidio}


def worker(args) -> None:
    """Load one system, time it on the texts in --texts-json, write predictions, timing and memory as JSON.
    The parent reads the corpus, so the peak memory measured here is the system's, not the reader's."""
    logging.disable(logging.WARNING)
    warnings.filterwarnings("ignore")
    pinned = pin_to_one_core()
    texts = json.loads(Path(args.texts_json).read_text(encoding="utf-8"))
    before = rss_mb()
    run, described = SYSTEMS[args.worker](args.lang, args.pipeline[0] if args.pipeline else None)
    loaded = rss_mb()
    run(texts[:2])  # warm-up: lazy loading is not throughput
    # CPU seconds of this process (pinned to one core): on a shared machine the wall time also
    # counts the time other processes held the core, and the ratio to the peer would move with them
    started, wall_started = time.process_time(), time.perf_counter()
    preds = run(texts)
    seconds = time.process_time() - started
    wall = time.perf_counter() - wall_started
    peak = rss_mb("VmHWM")
    Path(args.worker_out).write_text(json.dumps({
        "system": described, "cpu": pinned, "seconds": seconds, "wall_seconds": round(wall, 3), "rss_before_load_mb": round(before, 1),
        "rss_loaded_mb": round(loaded, 1), "peak_rss_mb": round(peak, 1), "preds": preds}), encoding="utf-8")


# --------------------------------------------------------------------------- the run
def run_system(kind: str, lang: str, texts: list[str], pipeline: str | None) -> dict | None:
    with tempfile.TemporaryDirectory(prefix="bench_") as tmp:
        out, texts_json = Path(tmp) / "out.json", Path(tmp) / "texts.json"
        texts_json.write_text(json.dumps(texts), encoding="utf-8")
        cmd = [sys.executable, __file__, "--worker", kind, "--lang", lang, "--texts-json", str(texts_json),
               "--worker-out", str(out)]
        if pipeline:
            cmd += ["--pipeline", pipeline]
        # one core: keep BLAS and friends from starting threads that would fight over it
        env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        ret = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if ret.returncode != 0:
            print(f"{kind}_{lang} failed:\n{ret.stderr[-2000:]}", file=sys.stderr)
            return None
        return json.loads(out.read_text(encoding="utf-8"))


def systems_for(lang: str, projects: dict[str, Path]) -> dict[str, str | None]:
    """kind -> pipeline argument; deid_<lc> is the installed package, or the assembled pipeline of a
    project given with --project; without either, only the regex pack and Presidio run."""
    import spacy

    out: dict[str, str | None] = {}
    if lang in projects:
        out["deid"] = str(projects[lang] / "training" / "pipeline")
    else:
        try:
            spacy.util.get_package_path(f"deid_{lang}")
        except Exception:
            print(f"deid_{lang} is not installed and no --project {lang}=DIR given: regex pack and Presidio only",
                  file=sys.stderr)
        else:
            out["deid"] = None
    out["regex"] = None
    if importlib.util.find_spec("presidio_analyzer") is None:
        print("presidio-analyzer is not installed (pip install -e '.[bench]', or bench/run.sh): no peer to compare with",
              file=sys.stderr)
    else:
        out["presidio"] = None
    return out


def benchmark(langs: list[str], projects: dict[str, Path], limit: int, meddocan_dev: Path = MEDDOCAN_DEV) -> dict:
    results = {"date": dt.date.today().isoformat(), "machine": machine(), "corpora": []}
    for corpus in corpora(langs, projects, meddocan_dev):
        docs = load_texts(corpus, limit)
        texts = [t for _, t, _ in docs]
        gold = [g for _, _, g in docs]
        gold_structured = [[s for s in g if s[2] in STRUCTURED] for g in gold]
        words = sum(len(_WORD.findall(t)) for t in texts)
        entry = {**corpus, "docs": len(texts), "words": words, "systems": {}}
        for kind, pipeline in systems_for(corpus["lang"], projects).items():
            name = f"{kind}_{corpus['lang']}"
            measured = run_system(kind, corpus["lang"], texts, pipeline)
            if measured is None:
                continue
            preds = [[tuple(s) for s in p] for p in measured.pop("preds")]
            preds_structured = [[s for s in p if s[2] in STRUCTURED] for p in preds]
            seconds = measured["seconds"]
            entry["systems"][name] = {
                **measured,
                "seconds": round(seconds, 3),
                "docs_per_s": round(len(texts) / seconds, 2),
                "words_per_s": round(words / seconds, 1),
                "all_labels": score_system(texts, gold, preds),
                "structured": score_system(texts, gold_structured, preds_structured),
            }
            print(f"{corpus['name']}: {name} {entry['systems'][name]['words_per_s']:.0f} words/s", file=sys.stderr)
        peer = entry["systems"].get(f"presidio_{corpus['lang']}")
        for stats in entry["systems"].values():
            stats["speed_vs_presidio"] = round(stats["words_per_s"] / peer["words_per_s"], 2) if peer else None
        results["corpora"].append(entry)
    results["goals"] = goals(results)
    return results


def goals(results: dict) -> list[dict]:
    """Each goal of the default builds, with the measured value and met/missed, per corpus."""
    out = []
    for corpus in results["corpora"]:
        lang = corpus["lang"]
        deid = corpus["systems"].get(f"deid_{lang}")
        if deid is None:
            continue
        ratio = deid["speed_vs_presidio"]
        if ratio is not None:
            out.append({"goal": f"words/s >= {GOAL_SPEED_RATIO:.0f}x Presidio", "corpus": corpus["name"],
                        "value": f"{ratio:.2f}x", "met": ratio >= GOAL_SPEED_RATIO})
        if corpus["heldout"]:
            recall = deid["all_labels"]["token_recall"]
            out.append({"goal": f"token PHI recall >= {GOAL_HELDOUT_TOKEN_RECALL}", "corpus": corpus["name"],
                        "value": f"{recall:.4f}", "met": recall >= GOAL_HELDOUT_TOKEN_RECALL})
        out.append({"goal": f"peak RSS of loaded deid_{lang} < {GOAL_PEAK_RSS_MB:.0f} MB", "corpus": corpus["name"],
                    "value": f"{deid['peak_rss_mb']:.0f} MB", "met": deid["peak_rss_mb"] < GOAL_PEAK_RSS_MB})
    return out


# --------------------------------------------------------------------------- reports
def render(results: dict) -> str:
    lines = [f"Machine: {results['machine']}; each system in its own process, pinned to one core. "
             f"Date: {results['date']}.", ""]
    for c in results["corpora"]:
        lines += [
            f"### {c['name']} ({c['docs']} documents, {c['words']} words)", "",
            "| system | words/s | docs/s | speed vs Presidio | strict F1 | overlap F1 | token recall | docs fully redacted "
            "| structured strict F1 | structured token recall | RSS loaded / peak (MB) |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for name, s in c["systems"].items():
            ratio = f"{s['speed_vs_presidio']:.2f}x" if s["speed_vs_presidio"] is not None else "-"
            a, st = s["all_labels"], s["structured"]
            lines.append(
                f"| {name} | {s['words_per_s']:.0f} | {s['docs_per_s']:.1f} | {ratio} | {a['strict']['micro']['f']:.3f} | "
                f"{a['overlap']['micro']['f']:.3f} | {a['token_recall']:.3f} | {a['docs_fully_redacted']:.3f} | "
                f"{st['strict']['micro']['f']:.3f} | {st['token_recall']:.3f} | {s['rss_loaded_mb']:.0f} / {s['peak_rss_mb']:.0f} |")
        lines += ["", "Systems: " + "; ".join(f"{n} = {s['system']}" for n, s in c["systems"].items()) + ".", ""]
    lines += ["### Goals", "", "| goal | corpus | measured | met |", "|---|---|---|---|"]
    lines += [f"| {g['goal']} | {g['corpus']} | {g['value']} | {'yes' if g['met'] else 'no'} |" for g in results["goals"]]
    return "\n".join(lines) + "\n"


def plot(results: dict, path: Path) -> None:
    """Throughput (log scale), strict F1 and token PHI recall of every system on every corpus."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    corpora_ = [c for c in results["corpora"] if c["systems"]]
    kinds = ["deid", "regex", "presidio"]
    colors = {"deid": "#1f77b4", "regex": "#9ecae1", "presidio": "#d62728"}
    panels = [("words/s, one core (log scale)", lambda s: s["words_per_s"], "{:.0f}"),
              ("strict micro F1, all labels", lambda s: s["all_labels"]["strict"]["micro"]["f"], "{:.2f}"),
              ("token PHI recall", lambda s: s["all_labels"]["token_recall"], "{:.2f}")]
    fig, axes = plt.subplots(1, len(panels), figsize=(15, 4.6))
    width = 0.8 / len(kinds)
    for ax, (title, value, fmt) in zip(axes, panels):
        for k, kind in enumerate(kinds):
            xs, ys = [], []
            for i, c in enumerate(corpora_):
                s = c["systems"].get(f"{kind}_{c['lang']}")
                if s:
                    xs.append(i + (k - 1) * width)
                    ys.append(value(s))
            bars = ax.bar(xs, ys, width, label=kind, color=colors[kind])
            ax.bar_label(bars, [fmt.format(y) for y in ys], fontsize=7, padding=1)
        # long corpus names (a project path in brackets) wrap over lines
        ax.set_xticks(range(len(corpora_)), [textwrap.fill(c["name"], 18, break_long_words=False) for c in corpora_], fontsize=8)
        ax.set_title(title)
    axes[0].set_yscale("log")
    for ax in axes[1:]:
        ax.set_ylim(0, 1.08)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(kinds), frameon=False)
    fig.suptitle(f"deid_<lang> vs Presidio ({results['machine']})", fontsize=9)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=path.parent, suffix=".png", delete=False) as tmp:
        fig.savefig(tmp.name, dpi=110, bbox_inches="tight")
    os.replace(tmp.name, path)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--langs", default="es,fr", help="comma-separated languages (default es,fr)")
    parser.add_argument("--project", action="append", default=[], metavar="LANG=DIR",
                        help="a built language project to take LANG's held-out split and pipeline from "
                             "(default: languages/<lang> and the installed deid_<lang>)")
    parser.add_argument("--pipeline", action="append", default=[], help=argparse.SUPPRESS)
    parser.add_argument("--limit", type=int, default=0, help="only the first N documents of each corpus (0: all)")
    parser.add_argument("--meddocan", type=Path, default=MEDDOCAN_DEV, help="MEDDOCAN dev brat folder (skipped when absent)")
    parser.add_argument("--out", type=Path, default=RESULTS, help="results folder (default bench/results)")
    parser.add_argument("--worker", choices=sorted(SYSTEMS), help=argparse.SUPPRESS)
    parser.add_argument("--lang", help=argparse.SUPPRESS)
    parser.add_argument("--texts-json", help=argparse.SUPPRESS)
    parser.add_argument("--worker-out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    projects = {lang: Path(d) for lang, d in (p.split("=", 1) for p in args.project)}
    results = benchmark([lc.strip() for lc in args.langs.split(",") if lc.strip()], projects, args.limit, args.meddocan)
    write_text_atomic(args.out / "deid.json", json.dumps(results, indent=2))
    write_text_atomic(args.out / "deid.md", render(results))
    plot(results, args.out / "deid.png")
    print(render(results))


if __name__ == "__main__":
    main()
