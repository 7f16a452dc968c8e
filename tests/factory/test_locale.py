"""One locale in one place: factory/locale.py reads languages/<lc>/locale.yml, no other module does."""

import ast
import shutil
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import docstring_ids  # tests/ is on sys.path (pyproject's pythonpath)
import deid_factory
from deid_factory import PROJECT_ROOT
from deid_factory.locale import DEFAULTS_FILE, REQUIRED, Locale, LocaleError, project_locales

SHIPPED = ("es", "fr", "en", "de")
FACTORY = Path(deid_factory.__file__).resolve().parent


@pytest.mark.parametrize("lang", SHIPPED)
def test_every_shipped_locale_loads(lang):
    locale = Locale.load(lang)
    assert locale.lang == lang == locale.settings["lang"]
    assert all(key in locale.settings for key in REQUIRED)
    assert locale.folder == PROJECT_ROOT / "languages" / lang and locale.settings_file.is_file()
    assert (locale.pack_dir / "pack.yml").is_file()
    for name in ("silver", "placeholders", "surrogates"):
        assert locale.concern_file(name).is_file()
    assert isinstance(locale.read("surrogates"), dict)
    files = locale.stage_files()
    assert locale.placeholders_file in files["placeholder"] and locale.surrogates_file in files["surrogate"]
    data = locale.surrogate_data_dir / "formats.yml"  # the surrogate engine's data, in the locale's folder
    assert data.is_file() and data in files["surrogate"] and data in files["package"]
    assert all(p.exists() for paths in files.values() for p in paths)
    assert set(SHIPPED) <= set(project_locales())


def test_the_factory_locale_and_the_runtime_locale_data_are_named_apart():
    """A locale of the project (settings, folders: deid_factory.locale.Locale, project_locales) and
    a locale's surrogate data (deid_runtime.surrogates.locale.LocaleData, locales_with_data) are
    different things: no name stands for both."""
    from deid_factory import locale as factory_locale
    from deid_runtime.surrogates import locale as runtime_locale

    factory_names = {n for n in vars(factory_locale) if not n.startswith("_")}
    runtime_names = {n for n in vars(runtime_locale) if not n.startswith("_")}
    defined_in_each = {n for n in factory_names & runtime_names
                       if getattr(getattr(factory_locale, n), "__module__", None) == factory_locale.__name__
                       and getattr(getattr(runtime_locale, n), "__module__", None) == runtime_locale.__name__}
    assert defined_in_each == set()
    assert runtime_locale.LocaleData.load(Locale.load("es").surrogate_data_dir).folder == Locale.load("es").surrogate_data_dir
    assert set(project_locales()) <= set(runtime_locale.locales_with_data())


def test_defaults_are_merged_under_the_locale_settings():
    defaults = yaml.safe_load(DEFAULTS_FILE.read_text(encoding="utf-8"))
    fr = Locale.load("fr")
    for key, value in defaults.items():
        assert fr.settings[key] == (fr.raw[key] if fr.raw.get(key) is not None else value), key
    assert fr.settings["max_epochs"] == defaults["max_epochs"]  # not in fr/locale.yml: the default
    assert fr.settings["argos_packages"] == fr.raw["argos_packages"] != defaults["argos_packages"]  # locale wins


def test_unknown_locale_is_a_one_line_error_naming_the_folder():
    with pytest.raises(LocaleError) as err:
        Locale.load("zz")
    message = str(err.value)
    assert "\n" not in message and "'zz'" in message
    assert str(PROJECT_ROOT / "languages" / "zz") in message
    assert Locale.find("zz") is None


def _tmp_project(root: Path) -> Path:
    for name in ("languages", "regex_packs", "corpora"):
        (root / name).mkdir(parents=True)
    (root / "languages" / "xx").mkdir()
    (root / "languages" / "xx" / "locale.yml").write_text(
        "lang: xx\nname: Test\nspacy_lang: xx\nsource_lang: xx\npivot_lang: en\nregex_pack: xx\nmax_epochs: 3\n",
        encoding="utf-8")
    (root / "languages" / "xx" / "silver.yml").write_text("{}\n", encoding="utf-8")
    return root


def test_a_locale_of_another_project_root_is_found_there(tmp_path):
    root = _tmp_project(tmp_path / "proj")
    xx = Locale.load("xx", root=root)
    assert xx.folder == root.resolve() / "languages" / "xx" and xx.settings["max_epochs"] == 3
    assert xx.pack_dir == root.resolve() / "regex_packs" / "xx"
    assert xx.project_deps()["filter"] == ["silver.yml"]  # only the files that exist
    assert xx.project_deps()["placeholder"] == []
    with pytest.raises(LocaleError):
        Locale.load("xx")  # not in the factory's own project
    assert project_locales(root) == ["xx"]


def test_factory_root_selects_the_project_of_the_locale(tmp_path):
    """`factory --root` (DEID_FACTORY_ROOT) is where Locale.load looks, in the processes it starts."""
    root = _tmp_project(tmp_path / "proj")
    code = ("import deid_factory; deid_factory.use_project_root(__import__('sys').argv[1]); "
            "from deid_factory.locale import Locale; from deid_factory.argos_env import pivot_of; "
            "print(Locale.load('xx').folder, Locale.find('fr'), pivot_of('xx'))")
    env = {k: v for k, v in os.environ.items() if k != deid_factory.ROOT_ENV}
    out = subprocess.run([sys.executable, "-c", code, str(root)], capture_output=True, text=True, env=env,
                         cwd=tmp_path, check=True).stdout.split()
    assert out == [str(root.resolve() / "languages" / "xx"), "None", "en"]


def _path_literals(tree: ast.AST) -> list[tuple[int, str]]:
    """String constants naming locale.yml as a file (not docstrings or help sentences)."""
    docstrings = docstring_ids(tree)
    found = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
                and " " not in node.value and node.value.rsplit("/", 1)[-1] == "locale.yml"):
            found.append((node.lineno, node.value))
    return found


def test_only_factory_locale_opens_locale_yml():
    offenders = []
    for path in sorted(FACTORY.rglob("*.py")):
        rel = path.relative_to(FACTORY).as_posix()
        for line, value in _path_literals(ast.parse(path.read_text(encoding="utf-8"))):
            if rel != "locale.py":
                offenders.append(f"{rel}:{line}: {value!r}")
    assert offenders == [], "read locale settings through deid_factory.locale.Locale"
    assert _path_literals(ast.parse((FACTORY / "locale.py").read_text(encoding="utf-8")))  # the check sees it


# Where a path into a locale's folders may be built by hand: factory/locale.py (the Locale object),
# render.py (it renders those folders' projects), and, in new_locale.py, the scaffold (which writes
# a locale that has no locale.yml yet).
LOCALE_FOLDER_FUNCTIONS = ("languages_dir", "packs_dir", "synth_dir")
LOCALE_FOLDER_NAMES = ("languages", "regex_packs", "synth")
LOCALE_FILES = ("locale.yml", "silver.yml", "placeholders.yml", "surrogates.yml")
ALLOWED_PATH_BUILDERS = {"locale.py": None, "render.py": None,
                         "new_locale.py": {"scaffold_locale", "STARTER_CONCERNS"}}


def _top_level_name(node: ast.stmt) -> str:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return ",".join(t.id for t in targets if isinstance(t, ast.Name)) or "<module>"
    return "<module>"


def _locale_path_builders(tree: ast.Module) -> list[tuple[str, int, str]]:
    """(top-level def or constant, line, what) for each place that builds a path into a locale's
    folders: a call of languages_dir/packs_dir/synth_dir, a `... / "languages"` (or "regex_packs",
    "synth"), or a string naming a locale's settings file (locale.yml, silver.yml, placeholders.yml,
    surrogates.yml; a glob such as "*/placeholders.yml" too)."""
    docstrings = docstring_ids(tree)
    found = []
    for top in tree.body:
        where = _top_level_name(top)
        for node in ast.walk(top):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
                if name in LOCALE_FOLDER_FUNCTIONS:
                    found.append((where, node.lineno, f"{name}()"))
            elif (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and isinstance(node.right, ast.Constant)
                  and node.right.value in LOCALE_FOLDER_NAMES):
                found.append((where, node.lineno, f"/ {node.right.value!r}"))
            elif (isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
                  and " " not in node.value and node.value.rsplit("/", 1)[-1] in LOCALE_FILES):
                found.append((where, node.lineno, repr(node.value)))
    return found


def test_only_factory_locale_builds_paths_into_the_locale_folders():
    """languages/<lc>/, regex_packs/<pack>/ and corpora/synth/<lc>/ are found through Locale
    (Locale.of(lc).silver_file, .placeholders_file, .pack_dir, .synth_dir...), never by hand."""
    offenders = []
    for path in sorted(FACTORY.rglob("*.py")):
        rel = path.relative_to(FACTORY).as_posix()
        allowed = ALLOWED_PATH_BUILDERS.get(rel, set())
        if allowed is None:
            continue
        for where, line, what in _locale_path_builders(ast.parse(path.read_text(encoding="utf-8"))):
            if where not in allowed:
                offenders.append(f"{rel}:{line} ({where}): {what}")
    assert offenders == [], "find a locale's folders and files through deid_factory.locale.Locale"
    # the check sees what it looks for
    seen = {what for _, _, what in _locale_path_builders(ast.parse((FACTORY / "locale.py").read_text(encoding="utf-8")))}
    assert {"languages_dir()", "packs_dir()", "/ 'languages'", "/ 'regex_packs'", "/ 'synth'"} <= seen
    scaffold = _locale_path_builders(ast.parse((FACTORY / "new_locale.py").read_text(encoding="utf-8")))
    assert {"packs_dir()", "synth_dir()", "'silver.yml'"} <= {what for _, _, what in scaffold}
    tree = ast.parse('X = ROOT / "languages" / lc / "silver.yml"\ndef f(lc):\n    return glob("*/placeholders.yml"), packs_dir(r)\n')
    assert sorted((w, what) for w, _, what in _locale_path_builders(tree)) == [
        ("X", "'silver.yml'"), ("X", "/ 'languages'"), ("f", "'*/placeholders.yml'"), ("f", "packs_dir()")]


def test_the_stages_find_a_locale_s_files_through_locale(tmp_path, monkeypatch):
    """The silver filters, the placeholder inventory, the synthetic corpus and the regex pack of a
    locale are where Locale says, in the project of the moment: the pack named by `regex_pack:` of
    its locale.yml (regex_packs/<lc>/ for a locale without one)."""
    from deid_factory.extract import _native_synthetic
    from deid_factory.package import default_pack_dir
    from deid_factory.packs import load_pack
    from deid_factory.placeholders import all_placeholder_terms, inventory_path
    from deid_factory.silver import load_annotator, load_silver_config
    from deid_factory.synth import SynthData, SynthError

    root = _tmp_project(tmp_path / "proj").resolve()
    settings = root / "languages" / "xx" / "locale.yml"
    settings.write_text(settings.read_text(encoding="utf-8").replace("regex_pack: xx", "regex_pack: shared"), encoding="utf-8")
    shutil.copytree(Locale.load("fr").pack_dir, root / "regex_packs" / "shared")
    # the French pack splices the titles of the file its pack.yml names (the French locale's)
    (root / "languages" / "fr" / "surrogate_data").mkdir(parents=True)
    shutil.copy(Locale.load("fr").titles_file, root / "languages" / "fr" / "surrogate_data")
    (root / "languages" / "yy").mkdir()  # a locale folder without a locale.yml (yet)
    (root / "languages" / "yy" / "placeholders.yml").write_text("candidates:\n  PERSON: [Zorblax]\n", encoding="utf-8")
    monkeypatch.setattr(deid_factory, "_root", root)

    xx = Locale.of("xx")
    assert xx.raw and xx.pack_dir == root / "regex_packs" / "shared"
    assert default_pack_dir("xx") == root / "regex_packs" / "shared"
    assert load_pack("xx").find("Tél. : 01 23 45 67 89")  # the French pack, through `regex_pack: shared`
    assert load_annotator("regex:xx")("Tél. : 01 23 45 67 89")
    yy = Locale.of("yy")  # bare: no settings of its own, its folders where new-locale writes them
    assert yy.raw == {} and yy.pack_dir == root / "regex_packs" / "yy" and yy.folder == root / "languages" / "yy"
    assert default_pack_dir("yy") == root / "regex_packs" / "yy"
    with pytest.raises(FileNotFoundError, match="no regex pack for locale 'yy'.*known: shared"):
        load_pack("yy")
    assert inventory_path("yy") == yy.placeholders_file == root / "languages" / "yy" / "placeholders.yml"
    assert all_placeholder_terms() == ["Zorblax"]
    with pytest.raises(Exception, match="missing section"):  # xx's silver.yml of the tmp project: {}
        load_silver_config("xx")
    with pytest.raises(SynthError, match=str(root / "corpora" / "synth" / "xx")):
        SynthData.load("xx")
    assert _native_synthetic("es", "xx", 0.5, 10, 10, 0)["report"]["records"] == 0
