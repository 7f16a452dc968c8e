"""scripts/mutation_check.py (run by hand, docs/reliability.md): its breaks still apply to the code as it
is, so that a refactor cannot silently turn a break into a no-op, and the tests it names exist. The
check itself (each break in a copy of the tree, its tests run there) is not run here: it takes half an hour."""

from __future__ import annotations

import importlib.util
import re
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# The breaks issue 26 asks the check to make (more may be added).
REQUIRED = {"learn-rate-0", "dni-letter-off-by-one", "nir-key-off", "unroutable-notes-written", "constant-surrogate-key",
            "router-takes-the-first-pipeline", "merger-drops-pack-spans", "placeholder-without-coreference",
            "dask-bypassed", "raising-task", "translate-guard-off"}


@pytest.fixture(scope="module")
def mutation_check():
    spec = importlib.util.spec_from_file_location("mutation_check", ROOT / "scripts" / "mutation_check.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(spec.name, None)


def test_every_break_applies_to_the_current_code(mutation_check, tmp_path):
    breaks = mutation_check.load_breaks()
    assert REQUIRED <= {b.name for b in breaks}
    assert len({b.name for b in breaks}) == len(breaks)
    for brk in breaks:
        tree = tmp_path / brk.name
        paths = sorted({edit.path for edit in brk.edits})
        for path in paths:
            (tree / path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(ROOT / path, tree / path)
        # raises if an anchor is gone or no longer unique, or if the broken file does not compile
        mutation_check.apply_edits(tree, brk.edits)
        for path in paths:
            assert (tree / path).read_text(encoding="utf-8") != (ROOT / path).read_text(encoding="utf-8"), (brk.name, path)
            if path.endswith(".py"):
                assert mutation_check.module_of(path), (brk.name, path)  # the import check can find it


def test_an_anchor_must_occur_exactly_once(mutation_check, tmp_path):
    (tmp_path / "m.py").write_text("x = 1\nx = 1\ny = 2\n", encoding="utf-8")
    for anchor in ("x = 1\n", "z = 3\n"):
        with pytest.raises(ValueError, match="not once"):
            mutation_check.apply_edits(tmp_path, (mutation_check.Edit("m.py", anchor, ""),))
    with pytest.raises(SyntaxError):  # a break must stay a working program
        mutation_check.apply_edits(tmp_path, (mutation_check.Edit("m.py", "y = 2\n", "y = (\n"),))
    assert (tmp_path / "m.py").read_text(encoding="utf-8") == "x = 1\nx = 1\ny = 2\n"


def test_every_named_test_exists(mutation_check):
    for brk in mutation_check.load_breaks():
        assert brk.tests, brk.name
        for selection in brk.tests:
            path, _, name = selection.partition("::")
            assert (ROOT / path).is_file(), (brk.name, selection)
            if name:
                assert re.search(rf"^def {re.escape(name)}\(", (ROOT / path).read_text(encoding="utf-8"), re.M), (brk.name, selection)


def test_module_names_of_the_two_packages(mutation_check):
    assert mutation_check.module_of("factory/scaleout.py") == "deid_factory.scaleout"
    assert mutation_check.module_of("factory/runtime/deid_runtime/ids/es.py") == "deid_runtime.ids.es"
    assert mutation_check.module_of("factory/runtime/deid_runtime/__init__.py") == "deid_runtime"
    assert mutation_check.module_of("scripts/setup.sh") is None
