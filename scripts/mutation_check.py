"""Mutation check: does the test suite catch the breaks it claims to catch?

Each break of scripts/mutation_breaks.yml (learn rate 0, a DNI letter off by one, unroutable notes
written, Dask bypassed, the translate stage's socket guard off...) is applied to a throwaway copy of
this working tree, and only the tests named for it run there. A break is *caught* when at least one
of its tests fails (or errors) with the break and passed on the unbroken copy (the control run).
Prints a Markdown table and exits 1 if any break was not caught. Not part of CI (it takes about half
an hour on 2 cores, the end-to-end builds most of it): run it by hand before a release
or after changing a test that a break names (docs/reliability.md).

    python scripts/mutation_check.py                      # every break, with the control run
    python scripts/mutation_check.py --only dask-bypassed --only raising-task
    python scripts/mutation_check.py --write-docs         # also update the table in docs/reliability.md

The copy's own code is what the tests import: the package is installed in editable mode from this
tree, so each copy gets an import folder whose `deid_factory` and `deid_runtime` point into the copy,
first on PYTHONPATH (the editable install's finder comes after the path on sys.meta_path); the
script checks, before running the tests, that every module it edited is imported from the copy.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
BREAKS_FILE = Path(__file__).with_name("mutation_breaks.yml")
DOCS_FILE = ROOT / "docs" / "reliability.md"
TABLE_START, TABLE_END = "<!-- mutation-table:start -->", "<!-- mutation-table:end -->"
# import name -> folder of the copy it must come from (pyproject.toml's package-dir; factory/runtime)
PACKAGES = {"deid_factory": "factory", "deid_runtime": "factory/runtime/deid_runtime"}


@dataclass(frozen=True)
class Edit:
    path: str
    anchor: str
    replacement: str


@dataclass(frozen=True)
class Break:
    name: str
    what: str
    edits: tuple[Edit, ...]
    tests: tuple[str, ...]


@dataclass
class Outcome:
    """Per test id: passed, failed, error or skipped."""

    results: dict[str, str] = field(default_factory=dict)
    messages: dict[str, str] = field(default_factory=dict)  # failed or errored test -> the first line of why
    seconds: float = 0.0
    problem: str = ""  # why the tests could not run (a patch that does not apply, the wrong code imported)


def load_breaks(path: Path = BREAKS_FILE) -> list[Break]:
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    return [Break(b["name"], b["what"], tuple(Edit(e["path"], e["anchor"], e["replacement"]) for e in b["edits"]),
                  tuple(b["tests"])) for b in raw["breaks"]]


def apply_edits(tree: Path, edits: tuple[Edit, ...]) -> None:
    """Apply each edit to the file under `tree`; its anchor must occur exactly once (else ValueError)
    and a Python file must still compile (a break is a working program that behaves wrongly)."""
    for edit in edits:
        path = tree / edit.path
        text = path.read_text(encoding="utf-8")
        count = text.count(edit.anchor)
        if count != 1:
            raise ValueError(f"{edit.path}: the anchor occurs {count} times, not once: {edit.anchor[:60]!r}")
        text = text.replace(edit.anchor, edit.replacement)
        if path.suffix == ".py":
            compile(text, str(path), "exec")
        path.write_text(text, encoding="utf-8")


def module_of(path: str) -> str | None:
    """The import name of a module file of the working tree (None: not a module of the packages)."""
    for package, folder in sorted(PACKAGES.items(), key=lambda kv: -len(kv[1])):
        if path.startswith(folder + "/") and path.endswith(".py"):
            parts = [package, *Path(path[len(folder) + 1:-3]).parts]
            if parts[-1] == "__init__":
                parts.pop()
            return ".".join(parts)
    return None


def tracked_files(root: Path = ROOT) -> list[str]:
    """The working tree as it is: committed and uncommitted files, without ignored ones (.venv)."""
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=root,
                         capture_output=True, check=True).stdout
    return [name for name in out.decode("utf-8").split("\0") if name and (root / name).is_file()]


def make_copy(base: Path, files: list[str]) -> tuple[Path, dict[str, str]]:
    """A copy of the working tree under base/repo, ../shared beside it as it is beside this tree, and
    the environment whose Python imports the copy's packages. Returns (repo, env)."""
    repo = base / "repo"
    for name in files:
        target = repo / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target)
    shared = ROOT.parent / "shared"
    if shared.exists():
        (base / "shared").symlink_to(shared)
    imports = base / "imports"
    imports.mkdir()
    for package, folder in PACKAGES.items():
        (imports / package).symlink_to(repo / folder, target_is_directory=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in [str(imports), os.environ.get("PYTHONPATH", "")] if p),
           "PYTHONDONTWRITEBYTECODE": "1", "HYPOTHESIS_PROFILE": "ci"}
    env.pop("DEID_FACTORY_ROOT", None)  # the copy is the project its tests run in
    return repo, env


def check_imports(repo: Path, env: dict[str, str], paths: list[str]) -> str:
    """'' when the packages and every module of `paths` import from the copy, else what does not."""
    modules = sorted({*PACKAGES, *(m for m in map(module_of, paths) if m)})
    code = ("import importlib, json, sys; print(json.dumps({m: importlib.import_module(m).__file__ "
            "for m in sys.argv[1:]}))")
    ret = subprocess.run([sys.executable, "-c", code, *modules], cwd=repo, env=env, capture_output=True, text=True,
                         timeout=300)
    if ret.returncode != 0:
        return f"importing {modules} failed: {ret.stderr.strip().splitlines()[-1:]}"
    files = json.loads(ret.stdout)
    wrong = {m: f for m, f in files.items() if not Path(f).resolve().is_relative_to(repo.resolve())}
    return f"imported from outside the copy: {wrong}" if wrong else ""


def run_tests(repo: Path, env: dict[str, str], tests: list[str], first_failure: bool) -> Outcome:
    report = repo.parent / f"junit-{time.monotonic_ns()}.xml"
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={report}", *tests]
    if first_failure:
        args.insert(4, "-x")
    started = time.monotonic()
    ret = subprocess.run(args, cwd=repo, env=env, capture_output=True, text=True)
    outcome = Outcome(seconds=time.monotonic() - started)
    if not report.exists():
        outcome.problem = f"pytest ended with {ret.returncode} and no report: {ret.stdout[-500:]}"
        return outcome
    for case in ET.parse(report).getroot().iter("testcase"):
        test_id = f"{case.get('classname', '').replace('.', '/')}.py::{case.get('name')}"
        kinds = {child.tag: child for child in case}
        outcome.results[test_id] = ("failed" if "failure" in kinds else "error" if "error" in kinds
                                    else "skipped" if "skipped" in kinds else "passed")
        why = kinds.get("failure", kinds.get("error"))
        if why is not None:
            outcome.messages[test_id] = (why.get("message") or "").strip().split("\n")[0][:200]
    if ret.returncode not in (0, 1) or not outcome.results:  # 2-5: interrupted, usage error, nothing collected
        outcome.problem = f"pytest ended with {ret.returncode}: {ret.stdout[-500:]}"
    return outcome


def selected(test_id: str, selections: tuple[str, ...]) -> bool:
    """Whether a test id of the report is one a break names (a file, a test, or a test's parameters)."""
    return any(test_id == s or test_id.startswith(s + "[") or test_id.startswith(s + "::") for s in selections)


def verdict(brk: Break, broken: Outcome, control: Outcome | None) -> tuple[str, list[str]]:
    """('caught' | 'NOT CAUGHT' | 'could not run', the tests that caught it)."""
    if broken.problem:
        return "could not run", []
    failing = [t for t, r in broken.results.items() if r in ("failed", "error") and selected(t, brk.tests)]
    if control is not None:
        failing = [t for t in failing if control.results.get(t) == "passed"]
    return ("caught" if failing else "NOT CAUGHT"), failing


def table(rows: list[tuple[Break, str, list[str], Outcome]]) -> str:
    lines = ["| break | what it does | tests run | result | failing tests |", "|---|---|---|---|---|"]
    for brk, result, failing, outcome in rows:
        ran = [t for t in outcome.results if selected(t, brk.tests)]
        names = ", ".join(f"`{t.split('::')[-1]}`" for t in failing[:3]) + (f" and {len(failing) - 3} more" if len(failing) > 3 else "")
        lines.append(f"| `{brk.name}` | {brk.what} | {len(ran)} ({outcome.seconds:.0f} s) | {result} | "
                     f"{len(failing)} of {len(ran)}: {names} |" if failing else
                     f"| `{brk.name}` | {brk.what} | {len(ran)} ({outcome.seconds:.0f} s) | {result} | {outcome.problem} |")
    return "\n".join(lines)


def write_docs(markdown: str) -> None:
    text = DOCS_FILE.read_text(encoding="utf-8")
    start, end = text.index(TABLE_START) + len(TABLE_START), text.index(TABLE_END)
    DOCS_FILE.write_text(text[:start] + "\n" + markdown + "\n" + text[end:], encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", action="append", default=[], metavar="NAME", help="run this break only (repeatable)")
    parser.add_argument("--no-control", action="store_true", help="skip the run of the tests on the unbroken copy")
    parser.add_argument("--first-failure", action="store_true", help="stop each break's tests at the first failure")
    parser.add_argument("--write-docs", action="store_true", help=f"update the table in {DOCS_FILE.relative_to(ROOT)}")
    parser.add_argument("--keep", action="store_true", help="keep the copies (their paths are printed)")
    args = parser.parse_args(argv)

    breaks = load_breaks()
    unknown = sorted(set(args.only) - {b.name for b in breaks})
    if unknown:
        parser.error(f"unknown break(s) {unknown}; known: {[b.name for b in breaks]}")
    if args.only:
        breaks = [b for b in breaks if b.name in args.only]
    files = tracked_files()
    workdir = Path(tempfile.mkdtemp(prefix="deid-mutation-"))
    try:
        control = None
        if not args.no_control:
            repo, env = make_copy(workdir / "control", files)
            problem = check_imports(repo, env, [])
            tests = sorted({t for b in breaks for t in b.tests})
            print(f"control: {len(tests)} selections on the unbroken copy ...", file=sys.stderr, flush=True)
            control = run_tests(repo, env, tests, False) if not problem else Outcome(problem=problem)
            bad = {t: r for t, r in control.results.items() if r != "passed"}
            print(f"control: {len(control.results)} tests in {control.seconds:.0f} s; not passing: {bad or 'none'} "
                  f"{control.problem}", file=sys.stderr, flush=True)
        rows = []
        for brk in breaks:
            repo, env = make_copy(workdir / brk.name, files)
            try:
                apply_edits(repo, brk.edits)
                problem = check_imports(repo, env, [e.path for e in brk.edits])
            except (ValueError, SyntaxError) as err:
                problem = str(err)
            outcome = Outcome(problem=problem) if problem else run_tests(repo, env, list(brk.tests), args.first_failure)
            result, failing = verdict(brk, outcome, control)
            print(f"{brk.name}: {result} ({len(failing)} failing of {len(outcome.results)}, {outcome.seconds:.0f} s) "
                  f"{outcome.problem}", file=sys.stderr, flush=True)
            for test_id in failing:  # why each failed: the break's effect, not an accident of the copy
                print(f"    {test_id}: {outcome.messages.get(test_id, '')}", file=sys.stderr, flush=True)
            rows.append((brk, result, failing, outcome))
            if not args.keep:
                shutil.rmtree(workdir / brk.name, ignore_errors=True)
    finally:
        if args.keep:
            print(f"copies kept in {workdir}", file=sys.stderr)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    markdown = table(rows)
    print(markdown)
    if args.write_docs:
        write_docs(markdown)
    return 0 if all(result == "caught" for _, result, _, _ in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
