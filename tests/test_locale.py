"""One locale in one place: factory/locale.py reads languages/<lc>/locale.yml, no other module does."""

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import deid_factory
from deid_factory import PROJECT_ROOT
from deid_factory.locale import DEFAULTS_FILE, REQUIRED, Locale, LocaleError, available

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
    assert set(SHIPPED) <= set(available())


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
    assert available(root) == ["xx"]


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
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
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
