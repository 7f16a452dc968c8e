"""bench/bench_redact.py's own measuring parts (issue 26 §6): the peak memory a worker reports is its
own, and --quick never overwrites the full run's results, which the README quotes. The benchmark
itself is not run here (minutes); `bench/bench_redact.py --quick` is its short run."""

import argparse
import resource
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import bench_redact  # noqa: E402  (bench/ is not a package)

BIG_MB = 300


def test_a_worker_reports_its_own_peak_memory_not_its_parents():
    """Each measurement runs in a worker process started from the benchmark's process: Linux carries
    ru_maxrss across fork and exec, so a worker reading it would report at least its parent's peak.
    Here the parent holds BIG_MB MB: the worker's own peak (a bare Python) stays far below, while its
    ru_maxrss shows the parent's, which is what the benchmark must not report."""
    ballast = bytearray(BIG_MB * 1_000_000)
    ballast[::4096] = b"x" * len(ballast[::4096])  # touch every page: resident, not just reserved
    child = subprocess.run(
        [sys.executable, "-c",
         f"import sys, resource; sys.path.insert(0, {str(BENCH)!r}); import bench_redact; "
         "print(bench_redact.peak_rss_mb(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)"],
        capture_output=True, text=True, check=True)
    own, inherited = map(float, child.stdout.split())
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 > BIG_MB
    assert inherited > BIG_MB, "this kernel does not carry ru_maxrss across exec: the check below proves nothing"
    assert 0 < own < BIG_MB / 3, own
    del ballast


def _args(*argv: str) -> argparse.Namespace:
    args = argparse.Namespace(quick="--quick" in argv, notes=None, big_mb=None, repeat=None)
    if "--notes" in argv:
        args.notes = int(argv[argv.index("--notes") + 1])
    bench_redact.apply_size_defaults(args)
    return args


def test_quick_is_small_and_writes_beside_the_full_results_never_over_them():
    full, quick = _args(), _args("--quick")
    assert (full.notes, full.big_mb, full.repeat) == (2000, 10.0, 3)
    assert quick.notes < full.notes and quick.big_mb < full.big_mb and quick.repeat == 1
    assert full.stem == "redact" and quick.stem != full.stem


def test_a_size_given_on_the_command_line_wins_over_quick():
    args = _args("--quick", "--notes", "40")
    assert args.notes == 40 and args.big_mb == bench_redact.QUICK["big_mb"]
