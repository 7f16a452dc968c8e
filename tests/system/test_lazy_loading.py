"""Each deid_<lang> pipeline is loaded when the first document routed to it arrives (issue 26): a
pipeline that no document needs is never loaded, routing and detection load nothing, and the
fallbacks load what they run when they first run it.

The pipelines are real deid pipelines (regex pack + merger, `factory assemble` without a model),
saved to folders with one more component, `lazy_load_probe`, whose factory records each
construction: spaCy constructs it only when it loads the pipeline, so CONSTRUCTED lists the
pipelines really loaded in this process, whatever the router believes."""

import json

import pytest
from spacy.language import Language
from typer.testing import CliRunner

from deid_factory.cli import app
from deid_factory.package import assemble_pipeline
from deid_factory.redact_engine import build_router
from deid_runtime.router import Router, RouterError

CONSTRUCTED: list[str] = []  # the `lang_tag` of every lazy_load_probe constructed, in order

ES = "La paciente acude a urgencias por dolor abdominal. Teléfono de contacto 612 345 678, correo ana.perez@correo.es. DNI 12345678Z."
ES_2 = "Varón de 64 años que ingresa por disnea de esfuerzo. Se contacta con su hija en el teléfono 699 123 456 y por correo."
FR = "Le patient est admis aux urgences pour une douleur thoracique. Téléphone 06 12 34 56 78, courriel jean.dupont@exemple.fr."
IT = "Il paziente è stato ricoverato in ospedale per un dolore al petto. Contatto: mario.rossi@posta.it, tel. 0039 333 1234567."


@Language.factory("lazy_load_probe", default_config={"lang_tag": ""})
def make_lazy_load_probe(nlp, name, lang_tag):
    CONSTRUCTED.append(lang_tag)
    return lambda doc: doc


@pytest.fixture(scope="module")
def probe_pipelines(tmp_path_factory):
    """{lang: folder} of an es and a fr deid pipeline, each with a lazy_load_probe."""
    root = tmp_path_factory.mktemp("lazy_pipelines")
    folders = {}
    for lang in ("es", "fr"):
        folder = root / f"deid_{lang}"
        nlp = assemble_pipeline(None, lang, folder)
        nlp.add_pipe("lazy_load_probe", first=True, config={"lang_tag": lang})
        nlp.to_disk(folder)
        folders[lang] = str(folder)
    return folders


@pytest.fixture(autouse=True)
def nothing_constructed_yet():
    CONSTRUCTED.clear()
    yield


def _notes(folder, **texts):
    folder.mkdir()
    for name, text in texts.items():
        (folder / f"{name}.txt").write_text(text, encoding="utf-8")
    return folder


def _redact(tmp_path, notes, probe_pipelines, *extra):
    out = tmp_path / "out.jsonl"
    result = CliRunner().invoke(app, ["redact", str(notes), "--out", str(out), "--format", "jsonl", "--quiet",
                                      "--pipelines", f"{probe_pipelines['es']},{probe_pipelines['fr']}", *extra])
    rows = {r["id"]: r for r in map(json.loads, out.read_text(encoding="utf-8").splitlines())} if out.exists() else {}
    return result, rows


def test_a_pipeline_no_document_needs_is_never_loaded(tmp_path, probe_pipelines):
    notes = _notes(tmp_path / "notes", a=ES, b=ES_2)
    result, rows = _redact(tmp_path, notes, probe_pipelines)
    assert result.exit_code == 0, result.output
    assert {r["pipeline"] for r in rows.values()} == {"es"} and "[PHONE]" in rows["a"]["redacted"]
    assert CONSTRUCTED == ["es"]  # fr, a candidate of detection, never loaded


def test_routing_and_detection_load_nothing_and_each_pipeline_loads_once(probe_pipelines):
    router = Router.from_names([probe_pipelines["es"], probe_pipelines["fr"]])
    assert sorted(router.pipelines) == ["es", "fr"] and router.pipelines.loaded == []
    routes = router.route_many([ES, FR, IT, "corto"], ["es", None, None, None])
    assert [(r.lang, r.pipeline) for r in routes] == [("es", "es"), ("fr", "fr"), ("it", "none"), ("unknown", "none")]
    assert CONSTRUCTED == []
    assert [r.pipeline for r in router.pipe([FR, FR])] == ["fr", "fr"]
    assert CONSTRUCTED == ["fr"]
    assert [r.pipeline for r in router.pipe([ES, FR, ES])] == ["es", "fr", "es"]
    assert CONSTRUCTED == ["fr", "es"] and router.pipelines.loaded == ["fr", "es"]


def test_forced_language_loads_only_its_pipeline(probe_pipelines):
    router = Router.from_names([probe_pipelines["es"], probe_pipelines["fr"]], force_lang="fr")
    assert CONSTRUCTED == []
    assert [r.pipeline for r in router.pipe([ES, FR])] == ["fr", "fr"]
    assert CONSTRUCTED == ["fr"]


def test_the_union_fallback_loads_every_pipeline_when_a_document_first_needs_it(tmp_path, probe_pipelines):
    # routed notes only: the union never runs, only es loads
    result, _ = _redact(tmp_path, _notes(tmp_path / "es_only", a=ES), probe_pipelines, "--fallback", "union")
    assert result.exit_code == 0, result.output
    assert CONSTRUCTED == ["es"]
    # an Italian note has no pipeline: the union runs on it, with fr loaded for it
    CONSTRUCTED.clear()
    result, rows = _redact(tmp_path, _notes(tmp_path / "mixed", a=ES, b=IT), probe_pipelines, "--fallback", "union")
    assert result.exit_code == 0, result.output
    assert rows["b"]["pipeline"] == "fallback" and "mario.rossi" not in rows["b"]["redacted"]
    assert sorted(CONSTRUCTED) == ["es", "fr"]


def test_a_language_fallback_loads_its_pipeline_for_the_first_unroutable_document(probe_pipelines):
    router = build_router([probe_pipelines["es"], probe_pipelines["fr"]], fallback="fr")
    assert [r.pipeline for r in router.pipe([ES])] == ["es"]
    assert CONSTRUCTED == ["es"]
    out = list(router.pipe([IT]))
    assert out[0].pipeline == "fallback" and out[0].processed and CONSTRUCTED == ["es", "fr"]


def test_unknown_names_and_two_pipelines_of_one_language_stop_before_anything_loads(probe_pipelines, tmp_path):
    with pytest.raises(RouterError, match="neither an installed package nor a pipeline folder"):
        Router.from_names([probe_pipelines["es"], str(tmp_path / "deid_xx_not_built")])
    with pytest.raises(RouterError, match="two pipelines for language 'es'"):
        Router.from_names([probe_pipelines["es"], probe_pipelines["fr"], probe_pipelines["es"]])
    with pytest.raises(ValueError, match="--recall-bias"):  # a bad recall setting, too
        build_router([probe_pipelines["es"]], recall_bias="very high")
    assert CONSTRUCTED == []


def test_a_pipeline_whose_meta_json_lies_about_its_language_is_refused_when_it_loads(probe_pipelines, tmp_path):
    import shutil

    import srsly

    liar = tmp_path / "deid_it"
    shutil.copytree(probe_pipelines["es"], liar)
    srsly.write_json(liar / "meta.json", {**srsly.read_json(liar / "meta.json"), "lang": "it"})
    router = Router.from_names([str(liar)])
    with pytest.raises(RouterError, match="is a 'es' pipeline, but its meta.json says 'it'"):
        list(router.pipe([IT]))


def test_the_recall_setting_is_set_on_each_pipeline_as_it_loads(train_tagger_pipeline):
    router = build_router([str(train_tagger_pipeline)], recall_bias="2.5")
    assert router.pipelines.loaded == []
    list(router.pipe([ES]))
    assert router.pipelines["es"].get_pipe("deid_tagger").o_bias == 2.5
