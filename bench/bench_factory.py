"""Benchmark: what each factory stage costs, and how it grows with the corpus (250 -> 4,000 records).

For each corpus size (records of the embedded synthetic Spanish corpus, default seed 13), the stages
of the default `es` build (languages/es/project.yml) run in a fresh temporary folder:

  extract      synth records (extract.extract, format synth)
  detect       langdetect on PHI-free text (detect.detect)
  filter       silver span filters + corpus-statistic thresholds (silver.filter_records)
  placeholder  persistent placeholders (placeholders.placeholder_file, target es)
  pass-through the es -> es translate stage: a copy of the file, no Argos (translate_job.translate_file)
  surrogate    es surrogates (surrogates.stage.surrogate_file, without the time spent in write_splits)
  splits       train/dev/test DocBins (splits.write_splits, timed inside surrogate_file)
  train        CPU training with languages/es/configs/config.cfg for a fixed number of epochs, early
               stopping off (train.train_model), so every size does the same work per record
  assemble     NER + es regex pack + merger (package.assemble_pipeline)
  evaluate     the assembled pipeline on the test split, metrics and plots (evaluate.evaluate_pipeline)

Every stage is the plain function behind its `factory` command, called in this process: the numbers
are the stage's cost, not Python start-up (a warm-up pass on a few records loads the imports and data
files first). "records" of a stage are the records it reads (train: training docs; evaluate: test
docs), and records/s = records / seconds. Not timed: `package` and `install` (the package step writes
the deid_<lang> wheel's pyproject.toml and runs `pip wheel` on it, and builds the deid-runtime wheel
beside it; then pip installs: a constant cost that does not depend on the corpus) and `stats` (not a
build step; extract and filter compute the same statistics).

Scaling: per stage, least squares seconds = a + b * records (b is shown in seconds per 1,000 records)
and the exponent of the log-log fit (about 1.0: linear; above 1: grows faster than the corpus).

Training: seconds per epoch per 1,000 training docs on CPU. On a machine where cupy sees a GPU the
same training also runs with gpu id 0 (in a subprocess, so the GPU never becomes this process'
default for the CPU runs); without one the results say "no GPU on this machine". A GPU is never needed.

Translation, once, on a sample of records (the cost does not depend on corpus size): es -> fr through
the en pivot, with copy-model Argos packages built by deid_factory.argos_testkit, offline, sockets
blocked, one worker, beam size 1 by default. A copy model does no real MT: the time outside the Argos
calls is what the translate stage itself adds to any model (chunking, placeholder checks, repair,
resume bookkeeping, I/O). The time inside the calls (sentence splitting, SentencePiece, CTranslate2
decoding of a tiny copy Transformer) says nothing about a real model's speed.

Writes bench/results/factory.json, factory.md and factory.png (seconds vs records, log-log);
prints the markdown.

Run:  .venv/bin/python bench/bench_factory.py            # sizes 250,500,1000,2000,4000, 1 epoch
      .venv/bin/python bench/bench_factory.py --quick    # smoke run: sizes 50,100, 1 epoch, 3 records translated
      .venv/bin/python bench/bench_factory.py --sizes 250,500 --epochs 2 --translate-records 10
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import io
import json
import logging
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy
import srsly

from deid_factory import PROJECT_ROOT
from deid_factory.records import read_records
from deid_factory.outputs import write_text_atomic

RESULTS = PROJECT_ROOT / "bench" / "results"
ES_CONFIG = PROJECT_ROOT / "languages" / "es" / "configs" / "config.cfg"
DEFAULT_SIZES = [250, 500, 1000, 2000, 4000]
QUICK_SIZES = [50, 100]
# One epoch per size keeps the full default run within ~25 minutes on 2 cores (training dominates:
# about 0.09 s per training doc per epoch); --epochs 2 doubles the training part.
DEFAULT_EPOCHS = 1
DEFAULT_TRANSLATE_RECORDS = 20
# Beam 1: under Argos' default beam (4) the copy model's decoding alone takes tens of seconds per
# record (the alternative beams of a copy model run to the maximum length), which would hide the
# stage's own cost that this measurement is for.
DEFAULT_TRANSLATE_BEAM = 1
WARMUP_RECORDS = 30
SEED = 13  # the default build's corpus seed (languages/es/project.yml)
STAGES = ["extract", "detect", "filter", "placeholder", "pass-through", "surrogate", "splits", "train", "assemble", "evaluate"]

log = logging.getLogger("bench_factory")


# ----------------------------------------------------------------------------- timing helpers
@contextlib.contextmanager
def timed_calls(owner: Any, name: str) -> Iterator[dict[str, float]]:
    """Replace owner.<name> by a wrapper that adds the seconds spent in it to the yielded dict.

    Lets a stage be split (surrogate vs its DocBins, translate vs the Argos calls) without changing
    product code; the original attribute (a classmethod descriptor included) is put back afterwards."""
    original_raw = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)
    original = getattr(owner, name)
    spent = {"seconds": 0.0, "calls": 0}

    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            spent["seconds"] += time.perf_counter() - start
            spent["calls"] += 1

    setattr(owner, name, wrapper)
    try:
        yield spent
    finally:
        setattr(owner, name, original_raw)


def run_timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def count_records(path: Path) -> int:
    return sum(1 for _ in read_records(path))


def docbin_size(path: Path) -> int:
    from spacy.tokens import DocBin

    return len(DocBin().from_disk(path))


# ----------------------------------------------------------------------------- the build, stage by stage
def run_build(n_records: int, work: Path, epochs: int) -> dict[str, dict[str, Any]]:
    """The default es build's stages on n_records synthetic records; {stage: {records, seconds, ...}}."""
    from deid_factory import splits
    from deid_factory.detect import detect
    from deid_factory.evaluate import evaluate_pipeline
    from deid_factory.extract import extract
    from deid_factory.package import assemble_pipeline
    from deid_factory.placeholders import placeholder_file
    from deid_factory.silver import filter_records
    from deid_factory.surrogates.stage import surrogate_file
    from deid_factory.train import train_model
    from deid_factory.translate_job import TranslateOptions, translate_file

    corpus, final = work / "corpus", work / "corpus" / "final"
    corpus.mkdir(parents=True)
    stages: dict[str, dict[str, Any]] = {}

    def stage(name: str, records: int, fn: Callable[[], Any]) -> Any:
        result, seconds = run_timed(fn)
        stages[name] = {"records": records, "seconds": seconds}
        log.info("  %-12s %6d records %8.2f s", name, records, seconds)
        return result

    stage("extract", n_records, lambda: extract(None, "synth", "es", corpus / "extracted.jsonl", corpus / "extract_report.json",
                                                n=n_records, seed=SEED))
    stage("detect", n_records, lambda: detect(corpus / "extracted.jsonl", corpus / "detected.jsonl", "es",
                                              report_path=corpus / "detect_report.json"))
    stage("filter", count_records(corpus / "detected.jsonl"),
          lambda: filter_records(corpus / "detected.jsonl", corpus / "filtered.jsonl", "es", report_path=corpus / "filter_report.json"))
    stage("placeholder", count_records(corpus / "filtered.jsonl"),
          lambda: placeholder_file(corpus / "filtered.jsonl", corpus / "placeholder.jsonl", "es", report_path=corpus / "placeholder_report.json"))
    stage("pass-through", count_records(corpus / "placeholder.jsonl"),
          lambda: translate_file(corpus / "placeholder.jsonl", corpus / "translated.jsonl", TranslateOptions("es", "es", progress=False,
                                 report_path=corpus / "translate_report.json")))
    translated = count_records(corpus / "translated.jsonl")
    with timed_calls(splits, "write_splits") as in_splits:
        stage("surrogate", translated, lambda: surrogate_file(corpus / "translated.jsonl", final, "es", seed=0))
    # surrogate_file = surrogates + write_splits: report the two halves apart
    stages["surrogate"]["seconds"] -= in_splits["seconds"]
    stages["splits"] = {"records": count_records(final / "records.jsonl"), "seconds": in_splits["seconds"]}
    log.info("  %-12s %6d records %8.2f s (part of the surrogate line above)", "splits", stages["splits"]["records"], in_splits["seconds"])

    train_docs = docbin_size(final / "train.spacy")
    # spaCy prints its training table on stdout: keep it out of the benchmark's own output
    with contextlib.redirect_stdout(io.StringIO()):
        summary = stage("train", train_docs, lambda: train_model(final / "train.spacy", final / "dev.spacy", ES_CONFIG, work / "training",
                                                                 gpu_id=-1, max_epochs=epochs, patience=epochs, seed=0))
    stages["train"].update(training_details(summary))
    stage("assemble", train_docs, lambda: assemble_pipeline(work / "training" / "model-best", "es", work / "training" / "pipeline"))
    stage("evaluate", docbin_size(final / "test.spacy"),
          lambda: evaluate_pipeline(work / "training" / "pipeline", final / "test.spacy", work / "metrics", training_dir=work / "training"))
    for row in stages.values():
        row["records_per_s"] = row["records"] / row["seconds"] if row["seconds"] > 0 else None
    return stages


def training_details(summary: dict[str, Any]) -> dict[str, Any]:
    """Per-epoch figures of one training run (train_summary.json), from spaCy's own training wall time
    (set-up and the dev evaluation of each epoch included), the same measure on CPU and on GPU."""
    epochs = max(1, summary["epochs_run"])
    per_epoch = summary["wall_seconds"] / epochs
    return {
        "epochs": summary["epochs_run"],
        "train_tokens": summary["train_tokens"],
        "dev_docs": summary["dev_docs"],
        "seconds_per_epoch": per_epoch,
        "seconds_per_epoch_per_1000_records": per_epoch / summary["train_docs"] * 1000,
        "device": summary["device"],
        "best_ents_f": summary["best_ents_f"],
    }


# ----------------------------------------------------------------------------- GPU (optional)
def gpu_found() -> bool:
    """Whether cupy sees a GPU; asked without making the GPU thinc's default in this process."""
    try:
        from thinc.util import gpu_is_available

        return bool(gpu_is_available())
    except Exception:  # cupy missing or broken
        return False


def gpu_training(work: Path, epochs: int) -> dict[str, Any]:
    """The same training as the CPU run of this folder, with gpu id 0, in a subprocess.

    The time is spaCy's own training wall time (train_summary.json), so Python start-up is not counted."""
    final, out = work / "corpus" / "final", work / "training_gpu"
    cmd = [sys.executable, "-m", "deid_factory", "train", str(final / "train.spacy"), str(final / "dev.spacy"),
           "--config", str(ES_CONFIG), "--out", str(out), "--gpu-id", "0", "--max-epochs", str(epochs),
           "--patience", str(epochs), "--seed", "0"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        return {"error": f"training on GPU failed (exit {done.returncode}): {done.stderr.strip().splitlines()[-1:]}"}
    summary = srsly.read_json(out / "train_summary.json")
    if summary["device"] == "cpu":
        return {"error": "gpu id 0 was asked but training fell back to CPU"}
    details = training_details(summary)
    return {"records": summary["train_docs"], "seconds": summary["wall_seconds"], **details}


# ----------------------------------------------------------------------------- translation overhead
def translation_overhead(n_records: int, beam_size: int, work: Path) -> dict[str, Any]:
    """es -> en -> fr with copy-model packages on n_records placeholder records, one worker, offline."""
    from deid_factory.argos_testkit import _default_sentences, build_packages
    from deid_factory.extract import extract
    from deid_factory.placeholders import all_placeholder_terms, placeholder_file
    from deid_factory.argos_env import ArgosRoute
    from deid_factory.netguard import no_network
    from deid_factory.translate_job import TranslateOptions, translate_file

    work.mkdir(parents=True)
    with argos_home(work / "argos_home"), no_network():
        # The tokenizer learns the placeholder terms as whole pieces, as the tests' packages do.
        _, build_seconds = run_timed(lambda: build_packages(work / "packages", "es-en,en-fr",
                                                            _default_sentences("") + all_placeholder_terms()))
        extract(None, "synth", "es", work / "extracted.jsonl", n=n_records, seed=SEED)
        placeholder_file(work / "extracted.jsonl", work / "placeholder.jsonl", "fr")
        records = count_records(work / "placeholder.jsonl")
        with timed_calls(ArgosRoute, "open") as in_open, timed_calls(ArgosRoute, "translate_hops") as in_argos:
            report, seconds = run_timed(lambda: translate_file(
                work / "placeholder.jsonl", work / "translated.jsonl", TranslateOptions("es", "fr", packages_dir=work / "packages",
                argos_dir=work / "argos_installed", workers=1, beam_size=beam_size, progress=False)))
    per_record = seconds - in_open["seconds"]
    outside = per_record - in_argos["seconds"]
    return {
        "records": records,
        "route": report.get("route"),
        "beam_size": beam_size,
        "workers": 1,
        "kept": report["kept"],
        "repaired": report["repaired"],
        "dropped": report["dropped"],
        "package_build_seconds": build_seconds,
        "install_and_open_seconds": in_open["seconds"],
        "argos_calls": in_argos["calls"],
        "seconds_per_record": per_record / records,
        "seconds_per_record_inside_argos": in_argos["seconds"] / records,
        "seconds_per_record_outside_argos": outside / records,
        "note": "copy-model packages (deid_factory.argos_testkit) do no real MT: the time outside the Argos calls "
                "is the stage's own cost (chunking, placeholder checks, repair, I/O); inside is a tiny copy "
                "Transformer, not a real model",
    }


@contextlib.contextmanager
def argos_home(root: Path) -> Iterator[None]:
    """Argos reads its data/config/cache folders once, at import: point them at `root` for the import
    (nothing lands in the user's home), then give the rest of the process its own folders back."""
    from deid_factory.argos_env import import_argos_with

    import_argos_with({k: str(root / k.lower()) for k in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME")})
    yield


# ----------------------------------------------------------------------------- scaling
def fit_scaling(records: list[int], seconds: list[float]) -> dict[str, float | None]:
    """seconds = a + b * records (least squares) and the log-log exponent; None with fewer than 2 sizes."""
    if len(set(records)) < 2:
        return {"intercept_s": None, "seconds_per_1000_records": None, "loglog_exponent": None}
    x, y = numpy.asarray(records, float), numpy.asarray(seconds, float)
    slope, intercept = numpy.polyfit(x, y, 1)
    exponent = numpy.polyfit(numpy.log(x), numpy.log(numpy.maximum(y, 1e-9)), 1)[0]
    return {"intercept_s": float(intercept), "seconds_per_1000_records": float(slope * 1000), "loglog_exponent": float(exponent)}


def scaling_table(runs: dict[int, dict[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    table = {}
    for name in STAGES:
        rows = [runs[size][name] for size in sorted(runs) if name in runs[size]]
        y_key = "seconds_per_epoch" if name == "train" else "seconds"  # training: per epoch, whatever --epochs
        table[name] = fit_scaling([r["records"] for r in rows], [r[y_key] for r in rows])
    return table


# ----------------------------------------------------------------------------- machine and output
def machine() -> dict[str, Any]:
    import spacy

    cpu = "unknown CPU"
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                   if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version(), "spacy": spacy.__version__,
            "platform": platform.platform(), "load_average_at_start": [round(x, 2) for x in os.getloadavg()]}


def render(results: dict[str, Any]) -> str:
    sizes = results["sizes"]
    runs = {int(k): v for k, v in results["runs"].items()}
    m = results["machine"]
    lines = [
        "# Factory cost benchmark (`bench/bench_factory.py`)",
        "",
        f"{results['date']}; {m['cpu']}, {m['cores']} cores, CPU only for every stage; Python {m['python']}, "
        f"spaCy {m['spacy']}; load average {m['load_average_at_start']} at start, {results['load_average_at_end']} at end "
        "(other work on the machine makes absolute numbers noisy).",
        f"Corpus: the embedded synthetic Spanish corpus, seed {SEED}, the default `es` build's stages, called in-process "
        f"(no Python start-up). Training: {results['epochs']} epoch(s) per size, early stopping off, "
        "`languages/es/configs/config.cfg`.",
        "",
        "## Records/s per stage and how the cost grows",
        "",
        "records = what the stage reads (train: training docs, evaluate: test docs; assemble reads only the trained "
        "model, its records are the training docs behind it). Fit over the sizes: seconds = a + b x records "
        "(b in seconds per 1,000 records; train: seconds per epoch); exponent of the log-log fit (1.0: linear).",
        "",
        "| stage | " + " | ".join(f"rec/s @{n}" for n in sizes) + " | b (s / 1,000 rec) | a (s) | exponent |",
        "|---|" + "---|" * (len(sizes) + 3),
    ]
    for name in STAGES:
        fit = results["scaling"][name]
        cells = []
        for n in sizes:
            row = runs[n].get(name)
            if row is None:
                cells.append("-")
            elif name == "train":
                cells.append(f"{row['records'] / row['seconds_per_epoch']:,.1f}")
            elif row["records_per_s"] is None:  # too fast for the clock
                cells.append("-")
            else:
                cells.append(f"{row['records_per_s']:,.0f}" if row["records_per_s"] >= 100 else f"{row['records_per_s']:,.1f}")
        b, a, e = fit["seconds_per_1000_records"], fit["intercept_s"], fit["loglog_exponent"]
        label = "train (per epoch)" if name == "train" else name
        lines.append(f"| {label} | " + " | ".join(cells) + (f" | {b:.2f} | {a:.2f} | {e:.2f} |" if b is not None else " | - | - | - |"))
    total = {n: sum(r["seconds"] for r in runs[n].values()) for n in sizes}
    lines += [
        "",
        "Seconds per size (all timed stages, training included): " + ", ".join(f"{n}: {total[n]:.0f} s" for n in sizes) + ".",
        "",
        "## Training time per 1,000 records",
        "",
        "| records | train docs | tokens | CPU s / epoch | CPU s / epoch / 1,000 train docs | GPU s / epoch / 1,000 train docs | best ents F (dev) |",
        "|---|---|---|---|---|---|---|",
    ]
    gpu = results["gpu"]
    for n in sizes:
        t = runs[n]["train"]
        g = gpu.get("runs", {}).get(str(n)) if gpu["available"] else None
        gpu_cell = (f"{g['seconds_per_epoch_per_1000_records']:.1f}" if g and "error" not in g
                    else (g or {}).get("error", "no GPU on this machine"))
        f1 = f"{t['best_ents_f']:.3f}" if t.get("best_ents_f") is not None else "-"
        lines.append(f"| {n} | {t['records']} | {t['train_tokens']:,} | {t['seconds_per_epoch']:.1f} | "
                     f"{t['seconds_per_epoch_per_1000_records']:.1f} | {gpu_cell} | {f1} |")
    lines += ["", f"GPU: {gpu['note']}", ""]
    tr = results["translation"]
    if tr:
        lines += [
            "## Translation overhead (copy-model Argos packages)",
            "",
            f"{tr['records']} records, route {' -> '.join(tr['route'] or [])}, beam {tr['beam_size']}, {tr['workers']} worker, "
            f"offline with sockets blocked; kept {tr['kept']}, repaired {tr['repaired']}, dropped {tr['dropped']}.",
            "",
            "| seconds per record | outside the Argos calls (the stage's own cost) | inside the Argos calls (copy model) | install + open route (once) | build the 2 test packages (once) |",
            "|---|---|---|---|---|",
            f"| {tr['seconds_per_record']:.3f} | {tr['seconds_per_record_outside_argos']:.4f} | {tr['seconds_per_record_inside_argos']:.3f} "
            f"| {tr['install_and_open_seconds']:.1f} s | {tr['package_build_seconds']:.1f} s |",
            "",
            "A copy model does no real MT: the column outside the Argos calls is the cost the translate stage adds to any "
            "model (chunking, placeholder checks, repair, I/O); the time inside says nothing about a real model's speed.",
            "",
        ]
    lines += [f"Not timed: package and install (`pip wheel` of deid_<lang> and deid-runtime, pip install: a constant cost), stats (extract and filter compute it). "
              f"Peak memory of the run: {results['peak_rss_mb']:.0f} MB. Wall time of the whole benchmark: {results['wall_seconds'] / 60:.1f} min.", ""]
    return "\n".join(lines)


def plot(results: dict[str, Any], path: Path) -> None:
    """Seconds vs records per stage, log-log (training: per epoch)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = {int(k): v for k, v in results["runs"].items()}
    fig, ax = plt.subplots(figsize=(7, 5))
    for name in STAGES:
        rows = [runs[n][name] for n in sorted(runs) if name in runs[n]]
        y_key = "seconds_per_epoch" if name == "train" else "seconds"
        ax.plot([r["records"] for r in rows], [max(r[y_key], 1e-4) for r in rows], marker="o",
                label="train (per epoch)" if name == "train" else name)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("records read by the stage")
    ax.set_ylabel("seconds")
    ax.set_title("deid-factory: stage cost vs records (log-log)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    tmp = path.with_name(path.name + ".tmp.png")
    fig.savefig(tmp, dpi=110)
    plt.close(fig)
    tmp.replace(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default=None, help=f"corpus sizes, comma-separated (default {','.join(map(str, DEFAULT_SIZES))})")
    parser.add_argument("--epochs", type=int, default=None, help=f"training epochs per size (default {DEFAULT_EPOCHS})")
    parser.add_argument("--translate-records", type=int, default=None,
                        help=f"records translated with the copy-model packages (default {DEFAULT_TRANSLATE_RECORDS}; 0: skip)")
    parser.add_argument("--translate-beam", type=int, default=DEFAULT_TRANSLATE_BEAM, help="Argos beam size for the translation run")
    parser.add_argument("--quick", action="store_true", help="smoke run: sizes 50,100, 1 epoch, 3 records translated")
    parser.add_argument("--out", type=Path, default=RESULTS, help="folder for factory.json, factory.md, factory.png")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else (QUICK_SIZES if args.quick else DEFAULT_SIZES)
    epochs = args.epochs or (1 if args.quick else DEFAULT_EPOCHS)
    n_translate = args.translate_records if args.translate_records is not None else (3 if args.quick else DEFAULT_TRANSLATE_RECORDS)

    logging.basicConfig(level=logging.INFO, format="%(message)s")
    for noisy in ("spacy", "deid_factory", "argostranslate", "stanza", "matplotlib", "PIL"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    started = time.perf_counter()
    results: dict[str, Any] = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                               "machine": machine(), "sizes": sorted(sizes), "epochs": epochs, "seed": SEED,
                               "quick": args.quick, "runs": {}}
    has_gpu = gpu_found()
    results["gpu"] = {"available": has_gpu, "runs": {},
                      "note": "GPU found: the same training with gpu id 0" if has_gpu else "no GPU on this machine (cupy sees none); CPU only"}
    with tempfile.TemporaryDirectory(prefix="bench_factory_") as tmp:
        work = Path(tmp)
        log.info("warm-up on %d records (imports, data files; not reported)", WARMUP_RECORDS)
        run_build(WARMUP_RECORDS, work / "warmup", epochs=1)
        for n in sorted(sizes):
            log.info("%d records:", n)
            results["runs"][str(n)] = run_build(n, work / f"n{n}", epochs)
            if has_gpu:
                results["gpu"]["runs"][str(n)] = gpu_training(work / f"n{n}", epochs)
        if n_translate > 0:
            log.info("translation es -> en -> fr, copy-model packages, %d records", n_translate)
            results["translation"] = translation_overhead(n_translate, args.translate_beam, work / "translate")
        else:
            results["translation"] = None
    results["scaling"] = scaling_table({int(k): v for k, v in results["runs"].items()})
    results["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    results["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    results["wall_seconds"] = time.perf_counter() - started
    args.out.mkdir(parents=True, exist_ok=True)
    write_text_atomic(args.out / "factory.json", json.dumps(results, indent=2))
    markdown = render(results)
    write_text_atomic(args.out / "factory.md", markdown)
    plot(results, args.out / "factory.png")
    print(markdown)


if __name__ == "__main__":
    main()
