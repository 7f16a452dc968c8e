"""The factory's modules import each other without a cycle, lazy imports inside functions included:
a cycle hides which module owns what, and a lazy import only postpones the knot (placeholders once
imported translate for its Argos route while translate imported placeholders)."""

from __future__ import annotations

import ast
from pathlib import Path

import deid_factory

PACKAGE = "deid_factory"
ROOT = Path(deid_factory.__file__).parent


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join((PACKAGE, *parts))


def _imported(node: ast.AST, module: str, is_package: bool, modules: set[str]) -> set[str]:
    """The factory modules an import statement names (from-imports of a module's names count for the module)."""
    found: set[str] = set()
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    elif isinstance(node, ast.ImportFrom):
        if node.level:
            base = module.split(".") if is_package else module.split(".")[:-1]
            base = base[: len(base) - (node.level - 1)]
            prefix = ".".join(base + ([node.module] if node.module else []))
        else:
            prefix = node.module or ""
        names = [prefix] + [f"{prefix}.{a.name}" for a in node.names]
    else:
        return found
    for name in names:
        while name and name not in modules:  # deid_factory.records.RecordError -> ...records
            name = name.rpartition(".")[0]
        if name and name != module:
            found.add(name)
    return found


def import_graph() -> dict[str, set[str]]:
    paths = sorted(ROOT.rglob("*.py"))
    modules = {_module_name(p) for p in paths}
    graph: dict[str, set[str]] = {}
    for path in paths:
        module = _module_name(path)
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        edges: set[str] = set()
        for node in ast.walk(tree):  # every import, at the top or inside a function
            edges |= _imported(node, module, path.name == "__init__.py", modules)
        # a package's own __init__ runs before its submodules: an edge from a submodule to its
        # package is not a cycle by itself, so keep only edges to modules, and packages imported by name
        graph[module] = {e for e in edges if not module.startswith(e + ".")}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1 on the stack, 2 done
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                cycle = visit(nxt)
                if cycle:
                    return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


def test_the_graph_sees_lazy_imports():
    graph = import_graph()
    assert "deid_factory.argos_env" in graph["deid_factory.placeholders"]  # calibrate's import inside a function
    assert "deid_factory.placeholders" in graph["deid_factory.translate"]


def test_a_cycle_is_found():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_factory_modules_import_without_a_cycle():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_writing_files_knows_nothing_of_records():
    """outputs.py (atomic writes, OutputError) is infrastructure under every stage: it imports no
    other factory module, and records.py (the record model) writes its files through it."""
    graph = import_graph()
    assert graph["deid_factory.outputs"] == set()
    assert "deid_factory.outputs" in graph["deid_factory.records"]
