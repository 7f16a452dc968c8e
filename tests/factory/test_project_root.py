"""The project a stage works on is asked for when it is needed (`deid_factory.project_root()`, or a
`root` argument), never read when a module is imported: `factory --root` then means the same
whatever was imported before it was applied, and no module has to be imported after it."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import deid_factory

FACTORY = Path(deid_factory.__file__).resolve().parent


def _evaluated_at_import(tree: ast.Module):
    """The nodes of a module that run when it is imported: its top-level statements, class bodies,
    decorators and parameter defaults, not the bodies of its functions and lambdas."""
    stack: list[ast.AST] = list(tree.body)
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            stack += [*node.decorator_list, *node.args.defaults, *(d for d in node.args.kw_defaults if d)]
            if node.returns is not None:
                stack.append(node.returns)
        elif isinstance(node, ast.Lambda):
            stack += [*node.args.defaults, *(d for d in node.args.kw_defaults if d)]
        else:
            stack += list(ast.iter_child_nodes(node))


def root_reads(source: str) -> list[tuple[int, str]]:
    """(line, what) where a module reads the project root: any use of the name PROJECT_ROOT, and a
    call of project_root() that runs at import."""
    tree = ast.parse(source)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == "PROJECT_ROOT" or isinstance(node, ast.Attribute) and node.attr == "PROJECT_ROOT":
            found.append((node.lineno, "PROJECT_ROOT"))
        elif isinstance(node, ast.ImportFrom) and any(a.name == "PROJECT_ROOT" for a in node.names):
            found.append((node.lineno, "import PROJECT_ROOT"))
    for node in _evaluated_at_import(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) in ("project_root", "find_project_root"):
            found.append((node.lineno, "project_root() at import"))
    return sorted(found)


def test_no_stage_reads_the_project_root_at_import():
    offenders = []
    for path in sorted(FACTORY.rglob("*.py")):
        rel = path.relative_to(FACTORY).as_posix()
        if rel == "__init__.py" or rel.startswith("runtime/"):  # the root's home; the runtime has no project
            continue
        offenders += [f"{rel}:{line}: {what}" for line, what in root_reads(path.read_text(encoding="utf-8"))]
    assert offenders == []
    # the scan sees what it looks for, and lets a function body call project_root()
    sample = ("from . import PROJECT_ROOT, project_root\nDIR = project_root() / 'x'\n"
              "def f(root=project_root()):\n    return project_root()\nclass C:\n    where = deid_factory.PROJECT_ROOT\n")
    assert root_reads(sample) == [(1, "import PROJECT_ROOT"), (2, "project_root() at import"),
                                  (3, "project_root() at import"), (6, "PROJECT_ROOT")]


def test_the_root_applied_after_every_module_was_imported_is_the_one_used(tmp_path):
    """Every factory module imported first, then `use_project_root` (what `factory --root` does):
    the locales, label maps, rendered projects and surrogate data are those of the root applied."""
    project = tmp_path / "project"
    for folder in ("languages/xx/surrogate_data", "regex_packs", "corpora/label_maps"):
        (project / folder).mkdir(parents=True)
    (project / "languages" / "xx" / "locale.yml").write_text("lang: xx\nname: Test\n", encoding="utf-8")
    code = """
import importlib, json, pkgutil, sys
import deid_factory
for module in pkgutil.walk_packages(deid_factory.__path__, "deid_factory."):
    if not module.name.startswith(("deid_factory.runtime", "deid_factory.__main__")):
        importlib.import_module(module.name)
deid_factory.use_project_root(sys.argv[1])
from deid_factory import labels, render
from deid_factory.locale import Locale
from deid_runtime.surrogates.locale import locale_folder
print(json.dumps({"locale": str(Locale.of("xx").folder), "label_maps": str(labels.label_maps_dir()),
                  "languages": render.project_languages(), "surrogate_data": str(locale_folder("xx"))}))
"""
    (project / "languages" / "xx" / "surrogate_data" / "formats.yml").write_text("{}\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != deid_factory.ROOT_ENV}
    out = subprocess.run([sys.executable, "-c", code, str(project)], capture_output=True, text=True, env=env,
                         cwd=tmp_path, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    root = project.resolve()
    assert seen == {"locale": str(root / "languages" / "xx"), "label_maps": str(root / "corpora" / "label_maps"),
                    "languages": ["xx"], "surrogate_data": str(root / "languages" / "xx" / "surrogate_data")}
