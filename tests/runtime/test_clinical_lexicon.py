"""The clinical lexicons of the locale packs (regex_packs/<lc>/clinical.yml, drugs.txt, checks.yml;
deid_runtime/clinical.py) and the surrogate checks that read them (deid_runtime/surrogate_checks.py):
every case of every locale, the size and hygiene of the word lists, linear time on adversarial text,
and that a saved pipeline and the factory's wheel carry the files (issue 25)."""

from __future__ import annotations

import fnmatch
import re
import time
import tomllib

import pytest

from conftest import CHECKOUT, use_checkout_surrogate_data  # tests/ is on sys.path (pyproject's pythonpath)
from deid_runtime import clinical
from deid_runtime.clinical import CHECKS_FILE, CLINICAL_FILE, ClinicalLexicon, case_result
from deid_runtime.regex_pack import RegexPack
from deid_runtime.surrogate_checks import CHECKS, CheckWords, surely_of_kind
from deid_runtime.surrogates.locale import load_locale
from deid_runtime.text import fold

from test_regex_packs import ADVERSARIAL  # the packs' 100 kB inputs: digit runs, dots, @...

use_checkout_surrogate_data()  # the locales' names, which no drug or unit word may be
PACKS_DIR = CHECKOUT / "regex_packs"
LOCALES = sorted(p.name for p in PACKS_DIR.iterdir() if (p / "pack.yml").exists())
_LEXICONS: dict[str, ClinicalLexicon] = {}


def _lexicon(lc: str) -> ClinicalLexicon:
    if lc not in _LEXICONS:
        _LEXICONS[lc] = ClinicalLexicon.from_dir(PACKS_DIR / lc)
    return _LEXICONS[lc]


def _pattern_cases():
    for lc in LOCALES:
        for pattern in _lexicon(lc).patterns:
            for i, case in enumerate(pattern.cases):
                yield pytest.param(lc, pattern.name, i, id=f"{lc}:{pattern.name}:{i}:{'pos' if case['expect'] else 'neg'}")


def _drug_cases():
    for lc in LOCALES:
        for i, case in enumerate(_lexicon(lc).drug_cases):
            yield pytest.param(lc, i, id=f"{lc}:drug:{i}:{'pos' if case['expect'] else 'neg'}")


def _check_cases():
    for lc in LOCALES:
        for label, sides in _lexicon(lc).check_cases.items():
            for side in ("sure", "unsure"):
                for surface in sides.get(side) or []:
                    yield pytest.param(lc, label, side, surface, id=f"{lc}:{label}:{side}:{surface}")


def test_every_pack_has_a_clinical_lexicon_drug_list_and_check_words():
    assert {"es", "fr", "en", "de", "it", "pt", "nl"} <= set(LOCALES)
    for lc in LOCALES:
        lexicon = _lexicon(lc)
        assert lexicon is not None, f"regex_packs/{lc} has no {CLINICAL_FILE}"
        assert lexicon.locale == lc
        assert len(lexicon.drugs) >= 300, (lc, len(lexicon.drugs))
        assert {p.kind for p in lexicon.patterns} >= {"quantity", "schedule", "duration", "lab_value"}, lc
        for words in ("street_words", "age_units", "number_words", "phone_labels"):
            assert lexicon.words(words), (lc, CHECKS_FILE, words)


@pytest.mark.parametrize("lc,name,index", list(_pattern_cases()))
def test_clinical_pattern_case(lc, name, index):
    lexicon = _lexicon(lc)
    case = next(p for p in lexicon.patterns if p.name == name).cases[index]
    expected, found = case_result(lexicon, case)
    assert found == expected, f"regex_packs/{lc}/{CLINICAL_FILE} {name!r} case {index} {case['text']!r}: found {found}"


@pytest.mark.parametrize("lc,index", list(_drug_cases()))
def test_drug_case(lc, index):
    lexicon = _lexicon(lc)
    case = lexicon.drug_cases[index]
    expected, found = case_result(lexicon, case)
    assert found == expected, f"regex_packs/{lc} drug case {index} {case['text']!r}: found {found}"


@pytest.mark.parametrize("lc", LOCALES)
def test_each_pattern_has_positive_and_negative_cases(lc):
    lexicon = _lexicon(lc)
    for pattern in lexicon.patterns:
        assert any(c["expect"] for c in pattern.cases), (lc, pattern.name, "no positive case")
    cases = [c for p in lexicon.patterns for c in p.cases] + lexicon.drug_cases
    negatives = [c for c in cases if not c["expect"]]
    # the negatives are PHI next to clinical text: nothing of it may count as a clinical fact
    assert len(negatives) * 3 >= len(cases), (lc, len(negatives), len(cases))
    assert any(not c["expect"] for c in lexicon.drug_cases), (lc, "no negative drug case")


@pytest.mark.parametrize("lc,label,side,surface", list(_check_cases()))
def test_surrogate_check_case(lc, label, side, surface):
    words = CheckWords(_lexicon(lc), load_locale(lc))
    assert surely_of_kind(label, surface, words) is (side == "sure"), \
        f"regex_packs/{lc}/{CHECKS_FILE}: {label} {surface!r} should be {side}"


@pytest.mark.parametrize("lc", LOCALES)
def test_check_cases_cover_the_labels_of_names_dates_ages_and_contacts(lc):
    cases = _lexicon(lc).check_cases
    for label in ("PERSON", "DATE", "AGE", "PHONE", "ADDRESS", "LOCATION"):
        assert cases.get(label, {}).get("sure") and cases[label].get("unsure"), (lc, label)
    assert set(cases) <= set(CHECKS)


@pytest.mark.parametrize("lc", LOCALES)
def test_no_drug_or_unit_word_is_a_name_of_the_locale(lc):
    """A lexicon word is never PHI, so it must not be a given name, surname, city or street of the
    locale: else a real name next to a dose would be let out. Checked against the surrogate data
    (and Faker's name lists of the locale when Faker is installed)."""
    folder = CHECKOUT / "languages" / lc / "surrogate_data"
    names: set[str] = set()
    for name in ("given_female.txt", "given_male.txt", "surnames.txt", "cities.tsv", "streets.txt"):
        path = folder / name
        if path.exists():
            for line in path.read_text(encoding="utf-8").splitlines():
                names |= {fold(w) for w in re.findall(r"[^\W\d_]+", line.split("\t")[0])}
    faker = {"es": "es_ES", "fr": "fr_FR", "en": "en_US", "de": "de_DE", "it": "it_IT", "pt": "pt_PT", "nl": "nl_NL"}
    try:
        import importlib

        provider = importlib.import_module(f"faker.providers.person.{faker[lc]}").Provider
        for attr in ("first_names", "first_names_male", "first_names_female", "last_names"):
            names |= {fold(n) for n in getattr(provider, attr, ()) or ()}
    except (ImportError, KeyError):
        pass
    lexicon = _lexicon(lc)
    clashes = sorted(w for w in lexicon.drugs | lexicon.lexicon_words if w in names)
    assert not clashes, f"regex_packs/{lc}: lexicon words that are names of the locale: {clashes}"


@pytest.mark.parametrize("lc", LOCALES)
def test_no_catastrophic_backtracking(lc):
    lexicon = _lexicon(lc)
    for input_name, text in ADVERSARIAL.items():
        started = time.process_time()
        lexicon.find(text)
        elapsed = time.process_time() - started
        assert elapsed < 1.0, f"{lc}: the clinical lexicon took {elapsed:.2f}s on 100 kB of {input_name!r}"


def test_a_saved_pipeline_carries_the_lexicon_and_marks_facts(tmp_path):
    import spacy

    from deid_runtime import merger, pack_component  # noqa: F401

    nlp = spacy.blank("es")
    nlp.add_pipe("deid_regex_pack", config={"write_ents": False}).pack = RegexPack.from_dir(PACKS_DIR / "es")
    nlp.add_pipe("deid_merger")
    nlp.to_disk(tmp_path / "pipe")
    saved = tmp_path / "pipe" / "deid_regex_pack"
    for name in (CLINICAL_FILE, CHECKS_FILE, "drugs.txt"):
        assert (saved / name).read_bytes() == (PACKS_DIR / "es" / name).read_bytes(), name
    loaded = spacy.load(tmp_path / "pipe")
    doc = loaded("Tratamiento: enalapril 10 mg/24h, furosemida 40 mg/12h.")
    assert [(s.text, s.label_) for s in doc.spans["deid_clinical"]] == [
        ("enalapril", "drug"), ("10 mg/24h", "quantity"), ("furosemida", "drug"), ("40 mg/12h", "quantity")]
    assert clinical.lexicon_for("es") is loaded.get_pipe("deid_regex_pack").pack.clinical  # registered on load


def test_a_pack_without_clinical_files_still_loads(tmp_path):
    (tmp_path / "pack.yml").write_text("locale: xx\npatterns: []\n", encoding="utf-8")
    assert RegexPack.from_dir(tmp_path).clinical is None


def test_the_factory_wheel_ships_every_file_of_the_packs():
    """pyproject.toml's package-data for regex_packs must match each file of each pack folder (the
    drug lists are .txt): a file it misses is absent from `pip install .` and `factory pack-test`."""
    config = tomllib.loads((CHECKOUT / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = config["tool"]["setuptools"]["package-data"]["deid_factory.shipped.regex_packs"]
    for path in PACKS_DIR.glob("*/*"):
        relative = str(path.relative_to(PACKS_DIR))
        assert any(fnmatch.fnmatch(relative, p) for p in patterns), f"{relative} is not shipped by {patterns}"
