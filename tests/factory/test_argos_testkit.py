"""The copy-model Argos packages are real: Argos installs them and translates with them."""

from __future__ import annotations

import json
import zipfile

import pytest
from typer.testing import CliRunner

from deid_factory.argos_testkit import build_package, language_of, parse_pairs
from deid_factory.locale import Locale
from deid_factory.cli import app


def test_package_layout(argos_packages):
    path = argos_packages["pivot"] / "translate-es_en.argosmodel"
    with zipfile.ZipFile(path) as zf:
        names = set(zf.namelist())
        meta = json.loads(zf.read("es_en/metadata.json"))
    assert {"es_en/metadata.json", "es_en/sentencepiece.model", "es_en/model/model.bin", "es_en/spacy/meta.json"} <= names
    assert not any(n.startswith("es_en/stanza") or n.startswith("es_en/minisbd") for n in names)
    assert (meta["from_code"], meta["to_code"], meta["type"]) == ("es", "en", "translate")
    # the names are the locales' (languages/<lc>/locale.yml `name`), not a list of the test kit's
    assert (meta["from_name"], meta["to_name"]) == (Locale.load("es").get("name"), Locale.load("en").get("name"))


def test_a_language_s_name_and_spacy_language_come_from_its_locale():
    fr = Locale.load("fr")
    assert language_of("fr") == (fr.get("name"), fr.get("spacy_lang"))
    assert language_of("ca") == ("Catalan", "ca")  # a locale of the project
    assert language_of("sv") == ("sv", "sv")  # no locale of the project; spaCy has a Swedish blank
    assert language_of("zz") == ("zz", "xx")  # neither: spaCy's multi-language blank


def test_copy_model_translates_for_real(argos_home, argos_packages, tmp_path):
    from deid_factory.argos_env import ArgosRoute

    route = ArgosRoute.open("es", "en", packages_dir=argos_packages["pivot"], argos_dir=tmp_path / "argos", beam_size=1)
    assert route.route == ["es", "en"]
    texts = [
        "Paciente Faustino de 54 años, vive en Zorvalia.",
        "Ñandú über café «x» 1.234,5 € — ¿qué? Sí.\nSegunda línea: 12/03/2019.",
        "Dr. Martin (urgences) : douleur thoracique depuis 2 h.",
    ]
    for text in texts:
        assert route.translate_text(text) == text


def test_lossy_package_drops_token_from_position(argos_home, argos_packages, tmp_path):
    from conftest import ARGOS_LOSSY_TERM
    from deid_factory.argos_env import ArgosRoute

    route = ArgosRoute.open("en", "fr", packages_dir=argos_packages["lossy"], argos_dir=tmp_path / "argos", beam_size=1)
    early = f"{ARGOS_LOSSY_TERM} acude hoy."
    late = f"El paciente acude a consulta por dolor abdominal intenso y persistente desde hace días con {ARGOS_LOSSY_TERM}."
    assert route.translate_text(early) == early
    out = route.translate_text(late)
    assert ARGOS_LOSSY_TERM not in out
    assert out.replace(" ", "") == late.replace(ARGOS_LOSSY_TERM, "").replace(" ", "")


# CTranslate2 compute types every CPU build supports: Argos' default "auto" is int8 on most x86 CPUs
# and float32 elsewhere, and the test kit must behave the same under both (an int8 AVX2 kernel once
# rounded the lossy package's drop away on one machine while another machine kept it).
COMPUTE_TYPES = ("float32", "int8_float32")


def _piece_index(packages_dir, text: str, piece: str) -> int:
    """Where `piece` falls in the package's own tokenization of `text` (what the model sees)."""
    import sentencepiece as spm

    path = packages_dir / "translate-en_fr.argosmodel"
    with zipfile.ZipFile(path) as zf:
        name = next(n for n in zf.namelist() if n.endswith("/sentencepiece.model"))
        sp = spm.SentencePieceProcessor(model_proto=zf.read(name))
    return sp.encode(text, out_type=str).index(piece)


@pytest.mark.parametrize("compute_type", COMPUTE_TYPES)
def test_test_kit_through_argos_at_each_compute_type(argos_home, argos_packages, tmp_path, monkeypatch, compute_type):
    """The lossless package copies and the lossy one drops exactly from its position, in float32 and
    in int8, through Argos' own sentence splitting, tokenization and decoding."""
    import argostranslate.settings as settings
    from conftest import ARGOS_LOSSY_FROM, ARGOS_LOSSY_TERM
    from deid_factory.argos_env import ArgosRoute

    monkeypatch.setattr(settings, "compute_type", settings.compute_type)  # restored after the test
    monkeypatch.delenv("ARGOS_COMPUTE_TYPE", raising=False)
    early = f"{ARGOS_LOSSY_TERM} acude hoy."
    late = f"El paciente acude a consulta por dolor abdominal intenso y persistente desde hace días con {ARGOS_LOSSY_TERM}."
    # The sentences are chosen so the term falls on each side of the drop position in the package's tokenization.
    assert _piece_index(argos_packages["lossy"], early, ARGOS_LOSSY_TERM) < ARGOS_LOSSY_FROM
    assert _piece_index(argos_packages["lossy"], late, ARGOS_LOSSY_TERM) >= ARGOS_LOSSY_FROM

    lossless = ArgosRoute.open("en", "fr", packages_dir=argos_packages["pivot"], argos_dir=tmp_path / "pivot",
                               beam_size=1, compute_type=compute_type)
    for text in (early, late, "Ñandú über café «x» 1.234,5 € — ¿qué?\nSegunda línea: 12/03/2019."):
        assert lossless.translate_text(text) == text
    assert lossless.hops[0].underlying.translator.compute_type == compute_type

    lossy = ArgosRoute.open("en", "fr", packages_dir=argos_packages["lossy"], argos_dir=tmp_path / "lossy",
                            beam_size=1, compute_type=compute_type)
    assert lossy.translate_text(early) == early
    out = lossy.translate_text(late)
    assert ARGOS_LOSSY_TERM not in out
    assert out.replace(" ", "") == late.replace(ARGOS_LOSSY_TERM, "").replace(" ", "")
    assert lossy.hops[0].underlying.translator.compute_type == compute_type


def test_parse_pairs():
    assert parse_pairs("es-en, en-fr") == [("es", "en"), ("en", "fr")]
    for bad in ("es", "es-en-fr", "e1-en", ""):
        with pytest.raises(ValueError):
            parse_pairs(bad)


def test_lossy_token_must_be_one_word(tmp_path):
    with pytest.raises(ValueError, match="one word"):
        build_package(tmp_path / "x.argosmodel", "es", "en", ["hola"], lossy_tokens=["two words"])


@pytest.mark.slow
def test_cli_builds_packages(tmp_path):
    result = CliRunner().invoke(app, ["argos-testkit", str(tmp_path), "--pairs", "es-en", "--lossy", "Faustino"])
    assert result.exit_code == 0, result.output
    files = sorted(p.name for p in tmp_path.glob("*.argosmodel"))
    assert files == ["translate-es_en.argosmodel"]
    bad = CliRunner().invoke(app, ["argos-testkit", str(tmp_path), "--pairs", "es"])
    assert bad.exit_code != 0
