"""The identifier registry (deid_runtime.ids): every identifier draws values that pass its
own check and python-stdnum's (where stdnum has the format), has exactly one right check digit,
tells the known valid and invalid values of tests/data/ids/<country>.yml apart, and can be written
in a layout given as data; surrogates keep the kind and the layout of what they replace."""

from __future__ import annotations

import random
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from stdnum import iban as std_iban
from stdnum import luhn
from stdnum.br import cpf
from stdnum.de import idnr
from stdnum.es import ccc, dni, nie
from stdnum.es import iban as es_iban
from stdnum.fr import nir, siren, siret
from stdnum.gb import nhs
from stdnum.it import codicefiscale, iva
from stdnum.nl import bsn
from stdnum.pt import cc, nif
from stdnum.us import ssn

from conftest import FACTORY_ONLY, modules_loaded_by  # tests/ is on sys.path (pyproject's pythonpath)
from deid_runtime import ids
from deid_runtime.validators import VALIDATORS, validator_name

CASES_DIR = Path(__file__).resolve().parents[1] / "data" / "ids"
SYNTH_DIR = Path(__file__).resolve().parents[2] / "corpora" / "synth"
N_DRAWS = 500
NEW_FAMILIES = ("it", "pt", "nl")  # at least 40 cases each, a third of them negatives
DNI_LETTERS = "TRWAGMYFPDXBNJZSQVHLCKE"

# python-stdnum's own validator where it has the format: an independent check of generate().
STDNUM = {
    "es.dni": dni.is_valid, "es.nie": nie.is_valid, "es.ccc": ccc.is_valid, "es.iban": es_iban.is_valid,
    "fr.nir": nir.is_valid, "fr.siren": siren.is_valid, "fr.siret": siret.is_valid,
    "de.idnr": idnr.is_valid, "gb.nhs": nhs.is_valid, "us.ssn": ssn.is_valid,
    "it.codicefiscale": codicefiscale.is_valid, "it.iva": iva.is_valid,
    "pt.nif": nif.is_valid, "pt.cc": cc.is_valid, "nl.bsn": bsn.is_valid, "br.cpf": cpf.is_valid,
    # formats stdnum has no module for, but whose key is a Luhn digit stdnum computes
    "fr.rpps": luhn.is_valid, "fr.adeli": luhn.is_valid, "us.npi": lambda v: luhn.is_valid("80840" + v),
    "fr.finess": lambda v: luhn.is_valid(re.sub("^2[AB]", "20", v)),
}
STDNUM.update({key: std_iban.is_valid for key in ids.keys() if key.endswith(".iban")})

# Where the check digits are and what they are drawn from: every other value there must fail.
DIGIT, TWO_DIGITS = list("0123456789"), [f"{n:02d}" for n in range(100)]
CHECKS = {
    "es.dni": (slice(8, 9), list(DNI_LETTERS)), "es.nie": (slice(8, 9), list(DNI_LETTERS)),
    "es.nass": (slice(10, 12), TWO_DIGITS), "es.ccc": (slice(8, 10), TWO_DIGITS),
    "fr.nir": (slice(13, 15), TWO_DIGITS), "br.cpf": (slice(9, 11), TWO_DIGITS),
    "de.lanr": (slice(6, 7), DIGIT), "it.codicefiscale": (slice(15, 16), [chr(c) for c in range(65, 91)]),
}
for _key in ("fr.rpps", "fr.adeli", "fr.finess", "fr.siren", "fr.siret", "de.idnr", "de.kvnr", "gb.nhs",
             "us.npi", "it.iva", "pt.nif", "pt.cc", "pt.niss", "nl.bsn", "br.cns"):
    CHECKS[_key] = (slice(-1, None), DIGIT)
# No check digit: us.ssn; es.cip_catsalut (its last digit's rule is not published: the structure is
# checked, tests/data/ids/es.yml). IBANs: mod 97 lets 02 and 99 agree, so their national checks are
# tested by the cases instead.
UNCHECKED = {"us.ssn", "es.cip_catsalut"} | {key for key in ids.keys() if key.endswith(".iban")}


def _draws(key: str, n: int = N_DRAWS, seed: int = 2024) -> list[str]:
    rng = random.Random(seed)
    identifier = ids.get(key)
    return [identifier.generate(rng) for _ in range(n)]


def _cases() -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for path in sorted(CASES_DIR.glob("*.yml")):
        for key, cases in yaml.safe_load(path.read_text(encoding="utf-8")).items():
            assert key.startswith(path.stem + "."), f"{path.name}: {key} belongs in another file"
            out[key] = cases
    return out


CASES = _cases()


# ----------------------------------------------------------------------------- generate
@pytest.mark.parametrize("key", ids.keys())
def test_generated_values_pass_their_own_check_and_stdnums(key):
    identifier = ids.get(key)
    values = _draws(key)
    for value in values:
        assert identifier.is_valid(value), (key, value)
        assert identifier.compact(value) == value, (key, value)  # generate() hands out compact values
        if key in STDNUM:
            assert STDNUM[key](value), (key, value)
    assert len(set(values)) > 0.95 * N_DRAWS, key  # drawn, not a constant


def test_every_identifier_without_stdnum_cross_check_is_pinned_by_cases():
    """Formats stdnum lacks entirely (NASS, KVNR, LANR, NISS, CNS) rest on hand-worked cases."""
    for key in set(ids.keys()) - set(STDNUM):
        assert sum(c["valid"] for c in CASES[key]) >= 3 and sum(not c["valid"] for c in CASES[key]) >= 3, key


@pytest.mark.parametrize("key", ids.keys())
def test_generation_is_reproducible_from_the_seed(key):
    assert _draws(key, 20, seed=5) == _draws(key, 20, seed=5)
    assert _draws(key, 20, seed=5) != _draws(key, 20, seed=6)


@pytest.mark.parametrize("key", sorted(set(ids.keys()) - UNCHECKED))
def test_exactly_one_check_value_per_payload(key):
    """Any other check digit than the computed one fails: is_valid really checks."""
    where, alphabet = CHECKS[key]
    identifier = ids.get(key)
    for value in _draws(key, 40):
        right = value[where]
        for other in alphabet:
            if other != right:
                changed = value[: where.start] + other + (value[where.stop :] if where.stop else "")
                assert not identifier.is_valid(changed), (key, value, other)


def test_nie_prefixes_are_x_y_z_only():
    values = _draws("es.nie")
    assert {v[0] for v in values} == set("XYZ")
    assert all(re.fullmatch(r"[XYZ]\d{7}[A-Z]", v) for v in values)
    for prefix in "ABCUVW":  # issue 13: a surrogate NIE began with U
        assert not ids.get("es.nie").is_valid(prefix + "1234567L")


def test_dni_letters_are_the_23_of_the_rule():
    values = _draws("es.dni")
    letters = {v[-1] for v in values}
    assert letters <= set(DNI_LETTERS) and len(letters) == 23
    assert all(DNI_LETTERS[int(v[:8]) % 23] == v[8] for v in values)


def test_nass_draws_exercise_both_control_rules():
    numbers = [int(v[2:10]) for v in _draws("es.nass")]
    assert any(n < 10_000_000 for n in numbers) and any(n >= 10_000_000 for n in numbers)
    nass = ids.get("es.nass")
    assert nass.calc_check_digit("28", "12345678") == "40"  # 2812345678 mod 97
    assert nass.calc_check_digit("28", "01234567") == "42"  # (28 * 10^7 + 1234567) mod 97


# ----------------------------------------------------------------------------- known values
@pytest.mark.parametrize("key", sorted(CASES))
def test_known_values(key):
    identifier = ids.get(key)
    for case in CASES[key]:
        assert isinstance(case["value"], str), f"{key}: quote {case['value']!r} in the YAML"
        assert identifier.is_valid(case["value"]) is case["valid"], f"{key}: {case['value']} ({case['why']})"


def test_every_identifier_has_valid_and_invalid_cases():
    for key in ids.keys():
        cases = CASES.get(key, [])
        assert any(c["valid"] for c in cases) and any(not c["valid"] for c in cases), key


@pytest.mark.parametrize("country", NEW_FAMILIES)
def test_new_families_have_40_cases_a_third_negative(country):
    cases = [c for key, cs in CASES.items() if key.startswith(country + ".") for c in cs]
    negatives = [c for c in cases if not c["valid"]]
    assert len(cases) >= 40 and 3 * len(negatives) >= len(cases), (country, len(cases), len(negatives))


def test_is_valid_never_raises_on_garbage():
    for key in ids.keys():
        for junk in ("", "-", "ABC", "12", "é" * 20, "1" * 40, "2A", "ES", "X", "/ /"):
            assert ids.get(key).is_valid(junk) in (True, False), key


def test_any_country_iban_applies_national_checks_where_registered():
    assert ids.iban_is_valid("FR76 3000 6000 0112 3456 7890 189")
    assert not ids.iban_is_valid("FR4930006000011234567890190")  # mod 97 right, RIB key wrong
    assert std_iban.is_valid("FR4930006000011234567890190")
    assert ids.iban_is_valid("CH93 0076 2011 6238 5295 7")  # none registered here: python-stdnum decides
    assert not ids.iban_is_valid("CH94 0076 2011 6238 5295 7")
    assert VALIDATORS["iban"] is ids.iban_is_valid


# ----------------------------------------------------------------------------- layouts
def test_layout_lays_a_compact_value_out():
    assert ids.layout("281234567840", "## ######## ##") == "28 12345678 40"
    assert ids.layout("X1234567L", "#-#######-#") == "X-1234567-L"
    assert ids.layout_of("28/12345678-40") == "##/########-##"
    assert ids.layout_of("X 1234567 L") == "# ####### #"


def test_layout_mismatch_names_lengths_not_the_value():
    with pytest.raises(ValueError) as err:
        ids.layout("281234567840", "## ######## #")
    assert "11 places" in str(err.value) and "12 characters" in str(err.value)
    assert "2812345678" not in str(err.value)


@pytest.mark.parametrize("key", ids.keys())
def test_written_values_stay_valid_and_compact_back(key):
    identifier = ids.get(key)
    for value in _draws(key, 20):
        written = identifier.written(value)
        assert identifier.is_valid(written) and identifier.compact(written) == value, (key, written)


# ----------------------------------------------------------------------------- surrogates for redaction
@pytest.mark.parametrize("key", ids.keys())
def test_surrogate_like_keeps_kind_and_layout(key):
    identifier, rng = ids.get(key), random.Random(3)
    for value in _draws(key, 20):
        original = identifier.written(value)
        new = ids.surrogate_like(original, rng, [key])
        assert identifier.is_valid(new) and identifier.compact(new) != value, (key, original, new)
        assert ids.layout_of(new) == ids.layout_of(original), (key, original, new)


def test_surrogate_like_for_a_spanish_nie():
    rng = random.Random(0)
    for _ in range(50):
        new = ids.surrogate_like("Y-0000000-Z", rng, ids.keys(["es"]))
        assert re.fullmatch(r"[XYZ]-\d{7}-[A-Z]", new) and ids.get("es.nie").is_valid(new), new
    assert ids.identify("Y-0000000-Z", ids.keys(["es"])) is ids.get("es.nie")
    assert ids.surrogate_like("Y-0000000-A", rng, ids.keys(["es"])) is None  # not a valid identifier


# ----------------------------------------------------------------------------- registry
def test_registry_keys_and_modules():
    for key in ids.keys():
        country, name = key.split(".")
        assert getattr(getattr(ids, country), name) is ids.get(key)
    assert ids.keys(["es"]) == ["es.ccc", "es.cip_catsalut", "es.dni", "es.iban", "es.nass", "es.nie"]
    with pytest.raises(KeyError, match="unknown identifier 'es.nope'; known: br.cns"):
        ids.get("es.nope")


def test_countries_are_found_by_discovery_not_by_a_list(tmp_path):
    """A country is one module of deid_runtime.ids: a module added to the package is found, its
    identifiers registered with their roles and its own validator names given to the packs, with
    no list to edit (a hand-written import list in ids/__init__.py would not see it)."""
    package = Path(ids.__file__).parent
    assert set(ids.country_modules()) == {p.stem for p in package.glob("*.py")} - {"__init__", *ids.SHARED_MODULES}
    (tmp_path / "zz.py").write_text(
        "from deid_runtime.ids.core import LuhnIdentifier, register\n"
        "class Card(LuhnIdentifier):\n"
        "    key, length, role = 'zz.card', 8, 'insurance'\n"
        "card = register(Card())\n"
        "VALIDATORS = {'zz_card_or_blank': lambda v: v == '' or card.is_valid(v)}\n", encoding="utf-8")
    code = ("import sys, random; from deid_runtime import ids; ids.__path__.append(sys.argv[1]); ids.discover(); "
            "from deid_runtime.validators import VALIDATORS; card = ids.get('zz.card'); "
            "print(card.role, ids.keys(['zz']), VALIDATORS['zz_card'](card.generate(random.Random(0))), "
            "VALIDATORS['zz_card_or_blank'](''), 'zz' in ids.country_modules())")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["insurance", "['zz.card']", "True", "True", "True"]


def test_every_identifier_has_a_role():
    assert {ids.get(key).role for key in ids.keys()} <= set(ids.ROLES)
    assert ids.get("fr.nir").role == "national" and ids.get("es.nass").role == "insurance"
    assert {ids.get(key).role for key in ids.keys() if key.endswith(".iban")} == {"bank"}
    from deid_runtime.ids.core import LuhnIdentifier, register

    class NoRole(LuhnIdentifier):
        key, length = "zz.norole", 8
    with pytest.raises(ValueError, match="role '' is not one of national"):
        register(NoRole())


def test_a_country_module_gives_its_own_validator_names():
    """fr_ins (the INS is the NIR) and es_dni_or_nie are their countries' (ids/fr.py, ids/es.py)."""
    assert VALIDATORS["fr_ins"] is ids.fr.VALIDATORS["fr_ins"]
    assert VALIDATORS["es_dni_or_nie"] is ids.es.VALIDATORS["es_dni_or_nie"]
    assert VALIDATORS["es_dni_or_nie"]("Y-0000000-Z") and VALIDATORS["es_dni_or_nie"]("12345678Z")


def test_every_identifier_is_a_validator():
    for key in ids.keys():
        assert VALIDATORS[validator_name(key)] == ids.get(key).is_valid
    assert VALIDATORS["fr_ins"] == ids.get("fr.nir").is_valid


def test_registry_covers_every_identifier_of_the_synthetic_corpus():
    """The identifier kinds of the synthetic corpus (corpora/synth/<lc>/formats.yml) each have an
    identifier here, and every layout given for it fits its values."""
    kinds = {}
    for path in SYNTH_DIR.glob("*/formats.yml"):
        for spec in (yaml.safe_load(path.read_text(encoding="utf-8")).get("ids") or {}).values():
            if spec["kind"] != "shape":  # codes without check digits: a layout filled at random
                kinds.setdefault(spec["kind"], set()).update(spec["layouts"])
    assert kinds, "no check-digit identifiers found in the synthetic corpus"
    rng = random.Random(0)
    for kind, layouts in kinds.items():
        for layout in layouts:
            assert ids.get(kind).is_valid(ids.layout(ids.get(kind).generate(rng), layout))


def test_runtime_ids_import_nothing_factory_only():
    """The package travels in the deid-runtime wheel (required by every deid_<lang> wheel): python-stdnum
    yes; deid_factory, Faker, Argos, torch no, nor spaCy (the identifiers need no pipeline)."""
    assert modules_loaded_by("import deid_runtime.ids, deid_runtime.validators", FACTORY_ONLY + ("spacy",)) == []


# ----------------------------------------------------------------------------- surrogate generators
def test_surrogate_specs_choose_the_written_form():
    from deid_runtime.surrogates.identifiers import generate_id

    rng = random.Random(1)
    value, kind, validated = generate_id(rng, {"kind": "es_nass", "layouts": ["## ######## ##"]})
    assert re.fullmatch(r"\d{2} \d{8} \d{2}", value) and kind == "es_nass" and validated
    value, _, validated = generate_id(rng, {"kind": "fr_nir", "format": "compact"})
    assert re.fullmatch(r"[12]\d{4}(?:\d{2}|2[AB])\d{8}", value) and validated
    value, _, validated = generate_id(rng, {"kind": "es_nass"})  # the identifier's usual layout
    assert re.fullmatch(r"\d{2}/\d{8}/\d{2}", value) and validated
    value, _, validated = generate_id(rng, {"kind": "iban", "country": "IT"})
    assert value.startswith("IT") and ids.get("it.iban").is_valid(value) and validated
    with pytest.raises(ValueError, match="no IBAN generator for country 'XX'; known: DE, ES, FR, GB, IT, NL, PT"):
        generate_id(rng, {"kind": "iban", "country": "XX"})
