"""deid_factory: build per-language clinical de-identification pipelines (deid_<lang>) from
annotated narratives in one source language. Stage modules, in the order a record travels:
readers/ -> extract -> detect -> silver -> stats -> placeholders -> translate -> surrogates/
-> train -> evaluate -> package. What the deid_<lang> pipelines run is deid_runtime (factory/runtime/,
its own distribution, which every deid_<lang> wheel requires)."""

import os
from pathlib import Path

__version__ = "0.1.0"

PACKAGE_DIR = Path(__file__).resolve().parent
# The project data the factory ships (regex_packs/, languages/, corpora/). A wheel carries copies
# in deid_factory/shipped/ (pyproject.toml maps them there); a checkout is its own copy.
SHIPPED_ROOT = PACKAGE_DIR / "shipped" if (PACKAGE_DIR / "shipped").is_dir() else PACKAGE_DIR.parent
ROOT_ENV = "DEID_FACTORY_ROOT"  # set by `factory --root`; wins over the current folder
PROJECT_MARKERS = ("languages", "regex_packs", "corpora")


def is_project(folder: Path) -> bool:
    """A deid-factory project: a folder with languages/, regex_packs/ and corpora/ (the layout of
    this repository). A tree with some of them only (a test's copy of one language) is not one."""
    return all((folder / name).is_dir() for name in PROJECT_MARKERS)


def find_project_root(cwd: Path | None = None) -> Path:
    """The project the commands work on: $DEID_FACTORY_ROOT (`factory --root`), else the current
    folder or the nearest parent that is a project (commands of languages/<lc>/project.yml run
    inside the project), else the data the factory ships. Never the checkout that happens to be
    installed, unless that is where one works."""
    explicit = os.environ.get(ROOT_ENV)
    if explicit:
        return Path(explicit).expanduser().resolve()
    try:
        here = (cwd or Path.cwd()).resolve()
    except OSError:  # the current folder was removed under us
        return SHIPPED_ROOT
    for folder in (here, *here.parents):
        if is_project(folder):
            return folder
    return SHIPPED_ROOT


_root: Path | None = None  # the project of this process, once found or chosen (project_root)


def project_root() -> Path:
    """The project this process works on: the one `use_project_root` chose (`factory --root`), else
    the one `find_project_root` finds, found at the first call and kept. Stages call it when they
    need a path (or take the root as an argument), never at import, so importing them in any order
    before or after `--root` is applied gives the same paths (tests/factory/test_project_root.py)."""
    global _root
    if _root is None:
        _root = find_project_root()
    return _root


def use_project_root(path: str | Path) -> Path:
    """Make `path` the project of this process (and of the processes it starts: $DEID_FACTORY_ROOT),
    and its locales' surrogate data the runtime's first choice."""
    global _root
    root = Path(path).expanduser().resolve()
    if not root.is_dir():
        raise FileNotFoundError(f"--root {path}: no such folder")
    os.environ[ROOT_ENV] = str(root)
    _root = root
    from .locale import register_surrogate_data  # first in the runtime's search, ahead of the one found before

    register_surrogate_data(root)
    return root


def __getattr__(name: str):
    # `deid_factory.PROJECT_ROOT`, for scripts, benchmarks and tests that want today's project as a
    # value; the factory's own modules call project_root() when they need it
    if name == "PROJECT_ROOT":
        return project_root()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _root_argument(args: list[str]) -> str | None:
    """The value of a global `--root PATH` / `--root=PATH`, given before the command name."""
    for i, arg in enumerate(args):
        if arg == "--root" and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith("--root="):
            return arg.split("=", 1)[1]
        if not arg.startswith("-"):
            return None  # the command name: what follows belongs to the command
    return None


def _command_name(args: list[str]) -> str | None:
    """The command of a `factory` command line (the first argument that is not a global option)."""
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg == "--root":
            skip = True
        elif not arg.startswith("-"):
            return arg
    return None


# Commands that run deid_<lang> pipelines only: thinc imports torch whenever it is installed
# (thinc/compat.py, at `import spacy`), and the factory's environment has it for Argos translation;
# these pipelines run on thinc's numpy ops and never use it, and torch would cost the process
# ~250 MB of memory and a second of start-up. The console command keeps it out of these commands'
# processes (docs/router.md, "Memory").
WITHOUT_TORCH = {"redact"}


def main() -> None:
    """The `factory` console command: a `--root` is applied (with a one-line error for a folder
    that is not there), then the typer app runs."""
    import sys

    root = _root_argument(sys.argv[1:])
    if root is not None:
        try:
            use_project_root(root)
        except FileNotFoundError as err:
            print(f"error: {err}", file=sys.stderr)
            sys.exit(1)
    if _command_name(sys.argv[1:]) in WITHOUT_TORCH and "torch" not in sys.modules:
        sys.modules["torch"] = None  # `import torch` raises ImportError: thinc runs without it
    from .cli import app

    app(prog_name="factory")
