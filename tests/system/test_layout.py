"""The tests mirror the code (issue 28): the tests of the runtime distribution (deid_runtime and the
deid_<lang> wheels) in tests/runtime/, of the factory's stages and tools in tests/factory/, the
end-to-end and fault tests in tests/system/; the helpers they share in tests/ (conftest.py,
faultkit.py, data/, fixtures_translate/). A module under tests/runtime/ imports nothing of the factory,
so that the runtime's tests run where only the runtime is installed; the modules listed in
STILL_IMPORT_THE_FACTORY are the ones that do not yet, and the list may only shrink."""

from __future__ import annotations

import tomllib

from conftest import CHECKOUT, FACTORY_ONLY, imported_modules  # tests/ is on sys.path (pyproject's pythonpath)

TESTS = CHECKOUT / "tests"
FOLDERS = ("runtime", "factory", "system")

# Runtime test modules that still import deid_factory, and what for. Each is a debt: a module that
# stops importing the factory must leave the list (the test below fails until it does), and no other
# runtime module may start.
STILL_IMPORT_THE_FACTORY = {
    "test_biluo_tagger.py": "synthetic records (synth, splits) and the leak score (evaluate) to train and score the tagger on",
    "test_context_rules.py": "the rule-case runner and rule-word drift check (packs, rule_words) and `factory pack-test`",
    "test_merger.py": "a locale's one-letter titles (Locale.title_letters), as assembly configures the merger",
    "test_redact.py": "`factory redact` and its engine (cli, redact_cli, scaleout), assembly (package), the readers",
    "test_regex_packs.py": "the pack-case checker that `factory pack-test` shares (packs.check_case)",
    "test_router.py": "assembly of the routed pipelines (package) and `factory redact`'s routing (cli)",
    "test_runtime_boundary.py": "the factory's stages, to show they share the runtime's text conventions",
    "test_surrogate_engine.py": "the factory's placeholder and surrogate stages next to the runtime engine, and the wheel built by package",
    "test_tokenization.py": "the training config (render), to compare its tokenizer with the runtime's",
}


def _test_modules():
    return sorted(TESTS.rglob("test_*.py"))


def test_every_test_module_lives_in_runtime_factory_or_system():
    modules = _test_modules()
    assert len(modules) > 60
    stray = [str(p.relative_to(TESTS)) for p in modules if p.parent.parent != TESTS or p.parent.name not in FOLDERS]
    assert stray == [], f"move these into tests/runtime, tests/factory or tests/system: {stray}"
    assert all(any((TESTS / folder).glob("test_*.py")) for folder in FOLDERS)


def test_test_module_names_are_unique_and_every_folder_is_on_the_path():
    """The folders are no packages: pytest imports each module by its file name, with pyproject's
    pythonpath on sys.path, so two modules of one name would shadow each other."""
    names = [p.name for p in _test_modules()]
    assert sorted({n for n in names if names.count(n) > 1}) == []
    pytest_ini = tomllib.loads((CHECKOUT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["pytest"]["ini_options"]
    assert set(pytest_ini["pythonpath"]) == {"tests", *(f"tests/{folder}" for folder in FOLDERS)}
    assert pytest_ini["testpaths"] == ["tests"]  # a module left outside the folders is collected, and fails above
    assert not list(TESTS.rglob("__init__.py"))


def _factory_imports(path, top_level_only=False):
    return sorted(m for m in imported_modules(path, top_level_only) if m.split(".")[0] in FACTORY_ONLY)


def test_the_runtime_tests_import_nothing_of_the_factory():
    importing = {p.name: _factory_imports(p) for p in sorted((TESTS / "runtime").glob("test_*.py"))}
    importing = {name: found for name, found in importing.items() if found}
    new = {name: found for name, found in importing.items() if name not in STILL_IMPORT_THE_FACTORY}
    assert new == {}, "a runtime test imports the factory: read the checkout's data through conftest.CHECKOUT"
    cleared = sorted(set(STILL_IMPORT_THE_FACTORY) - set(importing))
    assert cleared == [], f"these import the factory no more: take them off STILL_IMPORT_THE_FACTORY: {cleared}"


def test_the_shared_helpers_import_nothing_of_the_factory_when_loaded():
    """conftest.py and faultkit.py load with every runtime test: the fixtures that need the factory
    import it inside themselves, when a test asks for them."""
    for name in ("conftest.py", "faultkit.py"):
        assert _factory_imports(TESTS / name, top_level_only=True) == [], name
