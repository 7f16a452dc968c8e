"""Benchmark: `factory redact` against in-process nlp.pipe of the same pipeline, and one long note.

Runs (each in its own process pinned to one core, so time and peak memory are its own; the
throughput runs are repeated, interleaved, and the fastest of each is kept; speeds are words per
CPU second of the pinned process, which other processes on a shared machine barely change):
  nlp.pipe        the pipeline alone: nlp.pipe(texts, batch_size=16) over the notes, after loading
  redact          redact_files() over the same notes as .txt files, text output, tag mode, after
                  loading: language detection, routing, reading, redacting and writing included
  redact --lang   the same with --lang (no detection)
  CLI             `factory redact` as a user runs it, start-up and loading included
  long note       `factory redact` on ONE single-line note of --big-mb MB (and of a fifth of it, to
                  see how time grows with size): wall time and peak RSS of the whole command
  memory          peak RSS of a whole run, start-up and loading included, on the long note and on
                  the notes, as deployed: `factory redact` in this (the factory's) environment, and,
                  with --runtime-python, a script of the runtime alone (deid_runtime's Router and
                  redact, what a production install of `pip install deid_runtime deid_<lang>` runs)
                  in the environment of that interpreter; each with one pipeline named
                  (--memory-pipeline) and with every installed deid_* pipeline (the default of both)
The nlp.pipe and redact_files workers run without torch (sys.modules["torch"] = None): thinc imports
it whenever it is installed (the factory's environment has it for Argos), and a deployed pipeline
never uses it. `factory redact` keeps torch out itself (deid_factory.main); the runtime-only
environment has none.

The notes are the texts of a built project's records (languages/es/corpus/final/records.jsonl, the
factory's own synthetic corpus), repeated to --notes notes; the long note is the same texts joined
on one line. Words are \\w+ runs, as in bench_deid.py.

Writes bench/results/redact.json and redact.md; the README quotes them. --quick is a reduced run
for a small or busy machine (100 notes, a 1 MB long note, one repeat each; about 5 minutes on one
core) that writes bench/results/redact_quick.json and redact_quick.md instead, so the full run's
files stay as they are.
Run: .venv/bin/python bench/bench_redact.py [--quick] [--pipeline languages/es/training/pipeline] [--notes 2000] [--big-mb 10] [--repeat 3]
       [--memory-pipeline deid_es] [--runtime-python /path/to/runtime-venv/bin/python]
(a runtime-only environment: `python -m venv RT && RT/bin/pip install --no-index --find-links
languages/es/packages deid_es`, after a build with --vars.wheelhouse true; README "Install offline")
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

# Only the standard library at module level: a worker may run under an interpreter that has the
# runtime alone (--runtime-python), without deid_factory or this folder's other benchmarks.
HERE = Path(__file__).resolve().parent
PROJECT = HERE.parent
RESULTS = PROJECT / "bench" / "results"
DEFAULT_PIPELINE = PROJECT / "languages" / "es" / "training" / "pipeline"
DEFAULT_RECORDS = PROJECT / "languages" / "es" / "corpus" / "final" / "records.jsonl"
GOAL_REDACT_SHARE = 0.90  # factory redact at >= 90 % of in-process nlp.pipe (issue 13)
GOAL_LONG_NOTE_RSS_MB = 1024.0  # a 10 MB note under 1 GB peak RSS (issue 13)
FULL = {"notes": 2000, "big_mb": 10.0, "repeat": 3}
QUICK = {"notes": 100, "big_mb": 1.0, "repeat": 1}
FULL_STEM, QUICK_STEM = "redact", "redact_quick"
ONE_CORE_ENV = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


# --------------------------------------------------------------------------- workers (one process each)
def pin_to_one_core() -> str:
    try:
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
        return "pinned to one core"
    except (AttributeError, OSError):
        return "not pinned (no sched_setaffinity)"


def peak_rss_mb() -> float:
    """This process's peak resident set size in MB (VmHWM; Linux /proc; 0 elsewhere). Not ru_maxrss:
    Linux carries that across exec, so a worker would inherit its parent's peak."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def worker_pipe(args) -> dict:
    import spacy

    texts = [p.read_text(encoding="utf-8") for p in sorted(Path(args.notes_dir).glob("*.txt"))]
    nlp = spacy.load(args.pipeline)
    list(nlp.pipe(texts[:4]))  # warm-up: lazy loading is not throughput
    with timed() as took:
        ents = sum(len(doc.ents) for doc in nlp.pipe(texts, batch_size=16))
    return {**took, "entities": ents}


def worker_redact(args) -> dict:
    from deid_factory.redact_engine import build_router, redact_files

    router = build_router([args.pipeline], lang=args.lang)
    warm = [p.read_text(encoding="utf-8") for p in sorted(Path(args.notes_dir).glob("*.txt"))[:4]]
    list(router.pipe(warm, with_docs=False))  # warm-up: the pipeline's and langdetect's lazy loading
    with timed() as took:
        report = redact_files([Path(args.notes_dir)], Path(args.out), router=router, progress=False)
    return {**took, "written": report["written"], "complete": report["complete"]}


def worker_cli(args) -> dict:
    """`factory redact ...` in this process, so its peak RSS can be read at the end."""
    from deid_factory import main

    sys.argv = ["factory", *args.cli]
    code = 0
    with timed() as took:
        made = record_pipelines()
        try:
            main()
        except SystemExit as exit_:
            code = exit_.code or 0
    return {**took, "exit": code, "loaded": sorted({lang for p in made for lang in p.loaded}),
            "torch_imported": sys.modules.get("torch") is not None}


def record_pipelines() -> list:
    """Every router Pipelines mapping this process makes, to read at the end which languages it
    loaded (`loaded`). Which deid_<lang> modules were imported says nothing: spaCy's
    get_installed_models() imports every installed package, and importing one loads no pipeline.
    The patch is applied when the command itself imports deid_runtime.router: importing it here
    would import spaCy, and with it torch, before `factory`'s main() can keep torch out."""
    import importlib.abc
    import importlib.util

    made: list = []

    def patch(pipelines_class) -> None:
        init = pipelines_class.__init__

        def recording_init(self, *args, **kwargs):
            init(self, *args, **kwargs)
            made.append(self)

        pipelines_class.__init__ = recording_init

    class PatchOnImport(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name != "deid_runtime.router":
                return None
            sys.meta_path.remove(self)
            spec = importlib.util.find_spec(name)
            run_module = spec.loader.exec_module

            def exec_module(module):
                run_module(module)
                patch(module.Pipelines)

            spec.loader.exec_module = exec_module
            return spec

    sys.meta_path.insert(0, PatchOnImport())
    return made


@contextmanager
def timed():
    """Wall seconds and CPU seconds of the block. On a shared machine other processes stretch the
    wall time of a run pinned to one core, not the CPU time it needs: ratios use CPU time."""
    took: dict = {}
    wall, cpu = time.perf_counter(), time.process_time()
    yield took
    took.update(seconds=time.perf_counter() - wall, cpu_seconds=time.process_time() - cpu)


def worker_runtime(args) -> dict:
    """The runtime alone, as a production script uses it (no deid_factory): route every .txt note
    of a folder (`--names`: these pipelines, else every installed deid_*), redact it in tag mode
    and write it; a note no pipeline takes is not written. Imports and loading included."""
    with timed() as took:
        from deid_runtime.redact import redact
        from deid_runtime.router import UNROUTED, Router

        router = Router.from_names(args.names.split(",") if args.names else None)
        out = Path(args.out)
        out.mkdir(parents=True)
        files = sorted(Path(args.notes_dir).glob("*.txt"))
        written = 0
        texts = ((text, (p.name, text)) for p in files for text in [p.read_text(encoding="utf-8")])
        for routed in router.pipe(texts, as_tuples=True, with_docs=False):
            if routed.pipeline == UNROUTED:
                continue
            name, text = routed.meta
            redaction = redact(text, [(s.start, s.end, s.label) for s in routed.spans], "tag", lang=routed.lang)
            (out / name).write_text(redaction.text, encoding="utf-8")
            written += 1
    import spacy

    return {**took, "written": written, "complete": written == len(files), "loaded": list(router.pipelines.loaded),
            "installed": sorted(n for n in spacy.util.get_installed_models() if n.startswith("deid_")),
            "torch_imported": sys.modules.get("torch") is not None}


WORKERS = {"pipe": worker_pipe, "redact": worker_redact, "cli": worker_cli, "runtime": worker_runtime}


def run_worker(kind: str, python: str | None = None, **options) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench_redact_") as tmp:
        result_file = Path(tmp) / "result.json"
        cmd = [python or sys.executable, __file__, "--worker", kind, "--worker-out", str(result_file)]
        for key, value in options.items():
            if key == "cli":
                cmd.append(f"--cli={json.dumps(value)}")
            elif value is not None:
                cmd += [f"--{key.replace('_', '-')}", str(value)]
        ret = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **ONE_CORE_ENV})
        if ret.returncode != 0 or not result_file.exists():
            raise RuntimeError(f"worker {kind} failed:\n{ret.stderr[-3000:]}")
        return json.loads(result_file.read_text(encoding="utf-8"))


# --------------------------------------------------------------------------- inputs
def note_texts(records: Path, n: int) -> list[str]:
    from deid_factory.records import read_records

    texts = [r.text for r in read_records(records)]
    if not texts:
        raise SystemExit(f"{records}: no records")
    return [texts[i % len(texts)] for i in range(n)]


def words(texts) -> int:
    from bench_deid import _WORD

    return sum(len(_WORD.findall(t)) for t in texts)


def write_notes(folder: Path, texts: list[str]) -> None:
    folder.mkdir(parents=True)
    for i, text in enumerate(texts):
        (folder / f"note-{i:05d}.txt").write_text(text, encoding="utf-8")


def long_note(texts: list[str], size_bytes: int) -> str:
    """One line of about size_bytes UTF-8 bytes: the notes, line breaks turned into spaces, repeated."""
    parts, size, i = [], 0, 0
    while size < size_bytes:
        part = " ".join(texts[i % len(texts)].split()) + " "
        parts.append(part)
        size += len(part.encode("utf-8"))
        i += 1
    return "".join(parts)


# --------------------------------------------------------------------------- the run
def apply_size_defaults(args) -> None:
    """Sizes not given on the command line come from --quick's table or the full run's; the
    results' file name (args.stem) tells the two apart."""
    sizes = QUICK if args.quick else FULL
    for key, value in sizes.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    args.stem = QUICK_STEM if args.quick else FULL_STEM


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pipeline", default=str(DEFAULT_PIPELINE), help="deid_<lang> pipeline folder or package")
    parser.add_argument("--records", default=str(DEFAULT_RECORDS), help="records whose texts are the notes")
    parser.add_argument("--quick", action="store_true",
                        help=f"reduced run: defaults {QUICK}; results in {QUICK_STEM}.json/.md, not {FULL_STEM}.json/.md")
    parser.add_argument("--notes", type=int, default=None, help=f"notes of the throughput runs (default {FULL['notes']})")
    parser.add_argument("--big-mb", type=float, default=None,
                        help=f"size of the long single-line note (MB; default {FULL['big_mb']:g})")
    parser.add_argument("--repeat", type=int, default=None,
                        help=f"interleaved runs of each throughput measurement, the fastest kept (default {FULL['repeat']})")
    parser.add_argument("--lang", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--results", default=str(RESULTS))
    parser.add_argument("--memory-pipeline", default="deid_es",
                        help="the installed deid_<lang> package the memory runs name alone (and the notes' language)")
    parser.add_argument("--runtime-python", default=None,
                        help="interpreter of an environment with deid_runtime and deid_<lang> wheels alone: memory runs there too")
    parser.add_argument("--skip-throughput", action="store_true", help="the memory runs only (keeps the other results)")
    parser.add_argument("--worker", choices=sorted(WORKERS), help=argparse.SUPPRESS)
    parser.add_argument("--names", help=argparse.SUPPRESS)
    parser.add_argument("--worker-out", help=argparse.SUPPRESS)
    parser.add_argument("--notes-dir", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--cli", type=json.loads, help=argparse.SUPPRESS)
    args = parser.parse_args()
    apply_size_defaults(args)

    if args.worker:
        pinned = pin_to_one_core()
        if args.worker in ("pipe", "redact"):
            sys.modules["torch"] = None  # type: ignore[assignment]  (module docstring)
        result = WORKERS[args.worker](args)
        result.update({"cpu": pinned, "peak_rss_mb": round(peak_rss_mb(), 1)})
        Path(args.worker_out).write_text(json.dumps(result), encoding="utf-8")
        return

    sys.path.insert(0, str(HERE))
    if args.skip_throughput:
        return memory_only(args)
    import spacy

    from bench_deid import machine
    from deid_factory.outputs import write_text_atomic

    nlp_lang = spacy.load(args.pipeline).lang if Path(args.pipeline).exists() else args.pipeline.removeprefix("deid_")
    texts = note_texts(Path(args.records), args.notes)
    n_words = words(texts)
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="bench_redact_") as tmp:
        notes = Path(tmp) / "notes"
        write_notes(notes, texts)
        runs = {
            "nlp.pipe (in process)": lambda: run_worker("pipe", pipeline=args.pipeline, notes_dir=notes),
            "redact_files (detection)": lambda: run_worker("redact", pipeline=args.pipeline, notes_dir=notes,
                                                           out=Path(tmp) / "out-detect"),
            f"redact_files --lang {nlp_lang}": lambda: run_worker("redact", pipeline=args.pipeline, notes_dir=notes,
                                                                 out=Path(tmp) / "out-lang", lang=nlp_lang),
            "factory redact (CLI, start-up and loading included)": lambda: run_worker(
                "cli", cli=["redact", str(notes), "--out", str(Path(tmp) / "out-cli"), "--pipelines", args.pipeline, "--quiet"]),
        }
        # interleaved repeats, the fastest of each kept: other processes on the machine only ever slow a run down
        timings: dict[str, list[dict]] = {name: [] for name in runs}
        for _ in range(args.repeat):
            for name, run in runs.items():
                timings[name].append(run())
        for name, results in timings.items():
            best = min(results, key=lambda r: r["cpu_seconds"])
            rows.append({"run": name, **best, "all_seconds": [round(r["seconds"], 1) for r in results]})
        for row in rows:
            row["words_per_cpu_s"] = round(n_words / row["cpu_seconds"])
            row["vs_nlp_pipe"] = round(row["words_per_cpu_s"] / rows[0]["words_per_cpu_s"], 3)

        memory = memory_runs(args, texts, notes, Path(tmp))
        long_rows = []
        for mb in (args.big_mb / 5, args.big_mb):
            folder = Path(tmp) / f"long-{mb:g}"
            folder.mkdir()
            text = long_note(texts, int(mb * 1_000_000))
            (folder / "note.txt").write_text(text, encoding="utf-8")
            res = run_worker("cli", cli=["redact", str(folder), "--out", str(Path(tmp) / f"out-long-{mb:g}"),
                                         "--pipelines", args.pipeline, "--quiet"])
            long_rows.append({"mb": round(len(text.encode("utf-8")) / 1e6, 2), "chars": len(text),
                              "words": words([text]), **res})
            del text
    for row in long_rows:
        row["mb_per_cpu_min"] = round(row["mb"] / row["cpu_seconds"] * 60, 2)
    small, big = long_rows
    # CPU time ~ size^k: k = 1 is linear
    import math

    exponent = math.log(big["cpu_seconds"] / small["cpu_seconds"]) / math.log(big["chars"] / small["chars"])
    redact_share = next(r for r in rows if r["run"].startswith("redact_files (detection)"))["vs_nlp_pipe"]
    result = {
        "date": dt.date.today().isoformat(), "machine": machine(), "pipeline": args.pipeline,
        "quick": args.quick, "notes": args.notes, "big_mb": args.big_mb, "words": n_words, "repeat": args.repeat, "throughput": rows, "long_note": long_rows,
        "long_note_time_exponent": round(exponent, 2), "memory": memory,
        "load_average": [round(x, 1) for x in os.getloadavg()],
        "goals": {"redact_vs_nlp_pipe": {"goal": GOAL_REDACT_SHARE, "value": redact_share, "met": redact_share >= GOAL_REDACT_SHARE},
                  "long_note_peak_rss_mb": {"goal": GOAL_LONG_NOTE_RSS_MB, "value": big["peak_rss_mb"],
                                            "met": big["peak_rss_mb"] < GOAL_LONG_NOTE_RSS_MB and big["exit"] == 0}},
    }
    results = Path(args.results)
    write_text_atomic(results / f"{args.stem}.json", json.dumps(result, indent=2) + "\n")
    write_text_atomic(results / f"{args.stem}.md", markdown(result))
    print(markdown(result))


def memory_runs(args, texts: list[str], notes: Path, tmp: Path) -> dict:
    """Peak RSS of whole runs as deployed (module docstring, "memory"): each install, with the
    --memory-pipeline alone and with every installed deid_* pipeline, on the long note of --big-mb
    MB and on the notes (the notes' language is the named pipeline's: the others are not needed)."""
    import spacy

    long_folder = tmp / "memory-long"
    long_folder.mkdir()
    (long_folder / "note.txt").write_text(long_note(texts, int(args.big_mb * 1_000_000)), encoding="utf-8")
    inputs = {f"one {args.big_mb:g} MB single-line note": long_folder, f"{len(texts):,} notes": notes}
    installs = {"factory": (None, sorted(n for n in spacy.util.get_installed_models() if n.startswith("deid_")))}
    if args.runtime_python:
        listed = subprocess.run([args.runtime_python, "-c", "import json, spacy; print(json.dumps(sorted(n for n in "
                                 "spacy.util.get_installed_models() if n.startswith('deid_'))))"],
                                capture_output=True, text=True, check=True)
        installs["runtime only"] = (args.runtime_python, json.loads(listed.stdout))
    rows = []
    for install, (python, installed) in installs.items():
        for names in (args.memory_pipeline, None):
            for what, folder in inputs.items():
                out = tmp / f"memory-out-{len(rows)}"
                if python is None:
                    res = run_worker("cli", cli=["redact", str(folder), "--out", str(out), "--quiet",
                                                 *(["--pipelines", names] if names else [])])
                else:
                    res = run_worker("runtime", python=python, notes_dir=folder, out=out, names=names)
                rows.append({"install": install, "installed": installed, "pipelines": names or "every installed",
                             "input": what, **res})
    return {"python": {name: python or sys.executable for name, (python, _) in installs.items()}, "runs": rows}


def memory_only(args) -> None:
    """--skip-throughput: the memory runs alone, written into the existing results."""
    from bench_deid import machine
    from deid_factory.outputs import write_text_atomic

    results = Path(args.results)
    result = json.loads((results / f"{args.stem}.json").read_text(encoding="utf-8"))
    texts = note_texts(Path(args.records), args.notes)
    with tempfile.TemporaryDirectory(prefix="bench_redact_") as tmp:
        notes = Path(tmp) / "notes"
        write_notes(notes, texts)
        result["memory"] = memory_runs(args, texts, notes, Path(tmp))
    result["memory"].update(date=dt.date.today().isoformat(), machine=machine(),
                            load_average=[round(x, 1) for x in os.getloadavg()])
    write_text_atomic(results / f"{args.stem}.json", json.dumps(result, indent=2) + "\n")
    write_text_atomic(results / f"{args.stem}.md", markdown(result))
    print(markdown(result))


def markdown(result: dict) -> str:
    lines = [f"# factory redact: throughput and one long note ({result['date']})", "",
             f"{result['machine']}; one process per run, pinned to one core; pipeline `{result['pipeline']}`.", "",
             f"**{result['notes']:,} notes, {result['words']:,} words** (text output, tag mode"
             + (f"; the fastest of {result['repeat']} interleaved runs each" if result["repeat"] > 1 else "") + "):", "",
             "| run | wall s | CPU s | words per CPU second | vs nlp.pipe | peak RSS |", "|---|---|---|---|---|---|"]
    for r in result["throughput"]:
        lines.append(f"| {r['run']} | {r['seconds']:.1f} | {r['cpu_seconds']:.1f} | {r['words_per_cpu_s']:,} | "
                     f"{r['vs_nlp_pipe']:.0%} | {r['peak_rss_mb']:.0f} MB |")
    lines += ["", "**One single-line note** (`factory redact` end to end, start-up included):", "",
              "| size | characters | wall s | CPU s | MB per CPU minute | peak RSS | exit |", "|---|---|---|---|---|---|---|"]
    for r in result["long_note"]:
        lines.append(f"| {r['mb']:.1f} MB | {r['chars']:,} | {r['seconds']:.1f} | {r['cpu_seconds']:.1f} | "
                     f"{r['mb_per_cpu_min']:.2f} | {r['peak_rss_mb']:.0f} MB | {r['exit']} |")
    memory = result.get("memory")
    if memory:
        when = (f" ({memory['date']}; {memory['machine']}; load average {memory['load_average']})"
                if "date" in memory else "")
        lines += ["", f"**Peak memory as deployed**{when}: the whole run, start-up and loading included; "
                  "`factory` = `factory redact` in the factory's environment (scripts/setup.sh, torch installed), "
                  "`runtime only` = deid_runtime's Router and redact in an environment of the deid_runtime and "
                  "deid_<lang> wheels alone (module docstring):", "",
                  "| install | deid_* installed | pipelines | input | loaded | peak RSS | CPU s | wall s | torch imported |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for r in memory["runs"]:
            lines.append(f"| {r['install']} | {', '.join(r['installed'])} | {r['pipelines']} | {r['input']} | "
                         f"{', '.join(r.get('loaded', [])) or '-'} | "
                         f"{r['peak_rss_mb']:.0f} MB | {r['cpu_seconds']:.1f} | {r['seconds']:.1f} | "
                         f"{'yes' if r.get('torch_imported') else 'no'} |")
    lines += ["", f"CPU time grows as size^{result['long_note_time_exponent']} between the two notes (1 = linear).",
              f"Load average during the run: {result['load_average']} (the machine is shared: wall times "
              "stretch with it, CPU times much less).", ""]
    for name, goal in result["goals"].items():
        lines.append(f"- goal {name}: {goal['goal']} -> {goal['value']} ({'met' if goal['met'] else 'missed'})")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
