"""A locale lives in its folders: every fact of a language is in languages/<lc>/, regex_packs/<lc>/
or corpora/*/<lc>/ (read through deid_factory.locale.Locale), every fact of a country's identifiers
in its module deid_runtime/ids/<cc>.py. These tests scan the code and data for facts that stray,
and check that the one list of a locale's titles reaches everything that needs it, a packaged
pipeline included."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import docstring_ids  # tests/ is on sys.path (pyproject's pythonpath)
import deid_factory
from deid_factory.locale import Locale, project_locales
from deid_runtime import ids

FACTORY = Path(deid_factory.__file__).resolve().parent
IDS = Path(ids.__file__).resolve().parent
LOCALES = project_locales()
CODES = set(LOCALES) | set(ids.country_modules())  # language codes, and country codes of the registry
# Every title of every locale but one-letter ones ("M", "D": letters of any text), as written
TITLES = {form for lc in LOCALES for form in Locale.load(lc).titles().forms() if len(form.rstrip(".")) > 1}

# String constants that name a locale and are no fact of one, each with its reason. (A parameter's
# default value, `lang: str = "es"` or `typer.Option("fr")`, is allowed everywhere: it picks the
# locale a command works on when none is given, it says nothing of that locale.)
ALLOWED = {
    ("argos_env.py", "en"): "Argos's packages pivot through English: the default pivot is Argos's, not a locale's",
    ("evaluate.py", "es"): "the language a corpus given without --lang is read in, as the readers' default",
    ("new_locale.py", "en"): "the locale a new one starts from when its country has none in the project (a choice)",
    ("runtime/deid_runtime/surrogates/locale.py", "en"): "the surrogate engine's fallback locale for a document "
                                                         "whose language has no data (a choice)",
}


def _parameter_defaults(tree: ast.AST) -> set[int]:
    """The constants inside the default values of function parameters."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.arguments):
            for default in [*node.defaults, *(d for d in node.kw_defaults if d is not None)]:
                found.update(id(n) for n in ast.walk(default))
    return found


def locale_facts(source: str) -> list[tuple[int, str, str]]:
    """(line, what, constant) for each string constant of `source` (docstrings and parameter defaults
    left out) that is a language or country code ("fr", "FR"), an identifier's key or validator name
    of a country ("fr.nir", "fr_ins"), or holds a locale's title as a word ("Mme", "Dra.")."""
    tree = ast.parse(source)
    skip = docstring_ids(tree) | _parameter_defaults(tree)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Constant) or not isinstance(node.value, str) or id(node) in skip:
            continue
        value = node.value
        if value.lower() in CODES:
            found.append((node.lineno, "code", value))
        elif re.fullmatch(r"[a-z]{2}[._][a-z_]+", value) and value[:2] in CODES:
            found.append((node.lineno, "identifier", value))
        else:
            words = set(re.findall(r"(?<![\w.])[^\W\d_]\w*\.?", value))
            titles = sorted(words & TITLES)
            if titles:
                found.append((node.lineno, f"title {titles}", value))
    return found


def test_no_python_module_holds_a_locale_s_facts():
    """No language code, identifier key or title in the code (a country module of deid_runtime.ids
    aside: it is that country's home): a locale's facts are data in its folders."""
    assert CODES >= {"es", "fr", "en", "gb", "us"} and {"Mme", "Dra.", "dhr."} <= TITLES  # what the scan looks for
    offenders = []
    for path in sorted(FACTORY.rglob("*.py")):
        if path.parent == IDS and path.stem in ids.country_modules():
            continue
        rel = path.relative_to(FACTORY).as_posix()
        for line, what, value in locale_facts(path.read_text(encoding="utf-8")):
            if (rel, value) not in ALLOWED:
                offenders.append(f"{rel}:{line}: {what}: {value!r}")
    assert offenders == [], "a locale's facts belong in its folders (docs/adding_a_locale.md)"
    # the scan sees what it looks for, and what it lets pass
    sample = ('TITLES = ["Mme", "M."]\nif lang == "fr":\n    key = "es.dni"\nVALID = {"fr_ins": 1}\n'
              'def f(lang="es"):\n    """Seen by Dr. Brown."""\n    return "Sra. " + lang\n')
    assert [(line, what) for line, what, _ in locale_facts(sample)] == [
        (1, "title ['Mme']"), (2, "code"), (3, "identifier"), (4, "identifier"), (7, "title ['Sra.']")]
    for (rel, _), reason in ALLOWED.items():  # no stale entry
        assert (FACTORY / rel).is_file() and reason


def test_the_factory_s_own_data_holds_no_language_section():
    """factory/templates/*.yml and the runtime's shared data are every locale's: no key of them is a
    locale (the error-analysis words of each language are in languages/<lc>/errors.yml)."""
    def keys(value):
        if isinstance(value, dict):
            for key, inner in value.items():
                yield str(key)
                yield from keys(inner)
        elif isinstance(value, list):
            for inner in value:
                yield from keys(inner)

    files = [*(FACTORY / "templates").glob("*.yml"), *(FACTORY / "runtime" / "deid_runtime").rglob("*.yml")]
    assert FACTORY / "templates" / "errors.yml" in files
    for path in files:
        stray = set(keys(yaml.safe_load(path.read_text(encoding="utf-8")))) & CODES
        assert not stray, f"{path}: sections for {sorted(stray)}"


@pytest.mark.parametrize("lang", LOCALES)
def test_a_locale_s_titles_are_written_once(lang):
    """languages/<lc>/surrogate_data/titles.yml is the one list: the synthetic corpus, the surrogate
    data and the error-analysis words hold none of their own, and a pack that splices `{title}`
    reads its locale's file."""
    locale = Locale.load(lang)
    titles = locale.titles()
    assert locale.titles_file.is_file() and titles.forms()
    lexicon = locale.synth_dir / "lexicon.yml"
    if lexicon.exists():
        assert "titles" not in yaml.safe_load(lexicon.read_text(encoding="utf-8"))
    from deid_runtime.surrogates.locale import folded_words

    person = yaml.safe_load((locale.surrogate_data_dir / "formats.yml").read_text(encoding="utf-8"))["kinds"]["person"]
    written = {folded_words(form) for form in titles.forms()}
    assert "titles" not in person and not [w for w in person["female"] + person["male"] if folded_words(w) in written]
    if locale.concern_file("errors").exists():
        assert "titles" not in locale.read("errors")
    assert not (locale.pack_dir / "titles.yml").exists()  # only a pipeline's saved copy of a pack has one
    pack = yaml.safe_load((locale.pack_dir / "pack.yml").read_text(encoding="utf-8"))
    if "{title}" in (locale.pack_dir / "pack.yml").read_text(encoding="utf-8"):
        assert (locale.pack_dir / pack["titles"]).resolve() == locale.titles_file.resolve()


def test_a_packaged_pipeline_carries_its_locale_s_titles(tmp_path):
    """Assembly writes the locale's one-letter titles into the merger's config and saves the titles
    the pack splices with the pack: the pipeline loads and uses them with neither the locale's
    folders nor deid_factory (the runtime reads no factory-only code)."""
    from deid_factory.package import assemble_pipeline

    for lang in ("fr", "es"):
        assemble_pipeline(None, lang, tmp_path / lang)
    code = """
import json, sys, spacy
out = {}
for lang in ("fr", "es"):
    nlp = spacy.load(lang)
    doc = nlp("M. Pennec\\nMme Dupont, le 3 mars 2021, a été revue.")
    out[lang] = {"letters": nlp.get_pipe("deid_merger").title_letters and sorted(nlp.get_pipe("deid_merger").title_letters),
                 "locations": [e.text for e in doc.ents if e.label_ == "LOCATION"]}
out["factory"] = any(m.startswith("deid_factory") for m in sys.modules)
print(json.dumps(out))
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, check=True)
    import json

    out = json.loads(result.stdout)
    assert out["fr"]["letters"] == ["M"] and out["es"]["letters"] == ["D"]  # the locale's, not a list in the runtime
    assert out["fr"]["locations"] == []  # "Mme" is a title, not a town: the pack's {title}, saved with it
    assert (tmp_path / "fr" / "deid_regex_pack" / "titles.yml").read_text(encoding="utf-8") == \
        Locale.load("fr").titles_file.read_text(encoding="utf-8")
    assert not out["factory"]
