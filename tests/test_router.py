"""Language router with real (regex-pack-only) es and fr pipelines."""

import pytest
import spacy

from deid_factory.package import default_pack_dir
from deid_factory.runtime.regex_pack import RegexPack
from deid_factory.runtime.router import Router

ES = "La paciente acude a urgencias por dolor abdominal. Teléfono de contacto 612 345 678, correo ana.perez@correo.es. DNI 12345678Z."
FR = "Le patient est admis aux urgences pour une douleur thoracique. Téléphone 06 12 34 56 78, courriel jean.dupont@exemple.fr."
IT = "Il paziente è stato ricoverato in ospedale per un dolore al petto. Contatto: mario.rossi@posta.it, tel. 0039 333 1234567."


def _regex_pipeline(lang):
    from deid_factory.runtime import merger, pack_component  # noqa: F401

    nlp = spacy.blank(lang)
    comp = nlp.add_pipe("deid_regex_pack", config={"write_ents": False})
    comp.pack = RegexPack.from_dir(default_pack_dir(lang))
    nlp.add_pipe("deid_merger")
    return nlp


@pytest.fixture(scope="module")
def train_router_pipelines():
    return {"es": _regex_pipeline("es"), "fr": _regex_pipeline("fr")}


def test_documents_go_to_the_pipeline_of_their_language(train_router_pipelines):
    router = Router(train_router_pipelines)
    out = list(router.pipe([FR, ES, FR]))
    assert [r.lang for r in out] == ["fr", "es", "fr"]
    assert [r.pipeline for r in out] == ["fr", "es", "fr"]
    assert [r.doc.lang_ for r in out] == ["fr", "es", "fr"]
    es_labels = {e.label_ for e in out[1].doc.ents}
    assert {"PHONE", "EMAIL", "ID"} <= es_labels
    assert "EMAIL" in {e.label_ for e in out[0].doc.ents}
    assert router.stats.by_pipeline == {"fr": 2, "es": 1}


def test_unknown_language_goes_to_the_union_fallback_and_is_reported(train_router_pipelines):
    router = Router(train_router_pipelines, fallback="union")
    r = router(IT)
    assert r.lang == "it" and r.pipeline == "fallback"
    assert "EMAIL" in {e.label_ for e in r.doc.ents}
    assert all(e.label_ in {"ID", "EMAIL", "PHONE", "URL", "IP", "DATE"} for e in r.doc.ents)
    empty = router("12345 ...")
    assert empty.pipeline == "fallback"
    assert router.stats.unrouted_languages["it"] == 1
    assert sum(router.stats.unrouted_languages.values()) == 2


def test_named_fallback_and_no_fallback(train_router_pipelines):
    router = Router(train_router_pipelines, fallback="fr")
    r = router(IT)
    assert r.pipeline == "fallback" and r.doc.lang_ == "fr"
    none = Router(train_router_pipelines, fallback=None)(IT)
    assert none.pipeline == "none" and list(none.doc.ents) == []
    with pytest.raises(ValueError, match="fallback"):
        Router(train_router_pipelines, fallback="de")


def test_detection_is_seeded_and_bounded(train_router_pipelines):
    router = Router(train_router_pipelines, detect_chars=60)
    long_text = FR + " " + ES * 20  # only the French prefix is read
    assert router.detect(long_text)[0] == "fr"
    results = {Router(train_router_pipelines, seed=3).detect("Hola, buenos días")[0] for _ in range(5)}
    assert len(results) == 1


def test_pipe_keeps_order_across_chunks(train_router_pipelines):
    router = Router(train_router_pipelines)
    texts = [ES, FR] * 7
    out = list(router.pipe(((t, i) for i, t in enumerate(texts)), chunk_size=3, as_tuples=True))
    assert [r.meta for r in out] == list(range(14))
    assert [r.doc.text for r in out] == texts


def test_router_from_pipeline_folders_and_the_redact_command(tmp_path):
    from typer.testing import CliRunner

    from deid_factory.cli import app
    from deid_factory.package import assemble_pipeline

    for lang in ("es", "fr"):
        assemble_pipeline(None, lang, tmp_path / f"deid_{lang}")
    router = Router.from_names([str(tmp_path / "deid_es"), str(tmp_path / "deid_fr")])
    assert sorted(router.pipelines) == ["es", "fr"]
    with pytest.raises(ValueError, match="two pipelines"):
        Router.from_names([str(tmp_path / "deid_es"), str(tmp_path / "deid_es")])

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "es.txt").write_text(ES, encoding="utf-8")
    (docs / "fr.txt").write_text(FR, encoding="utf-8")
    (docs / "it.txt").write_text(IT, encoding="utf-8")
    out, report = tmp_path / "out.jsonl", tmp_path / "report.json"
    result = CliRunner().invoke(app, ["redact", str(docs), "--out", str(out), "--format", "jsonl", "--mode", "tag",
                                      "--pipelines", f"{tmp_path / 'deid_es'},{tmp_path / 'deid_fr'}",
                                      "--report", str(report), "--quiet"])
    assert result.exit_code == 0, result.output
    rows = {r["id"]: r for r in map(__import__("json").loads, out.read_text(encoding="utf-8").splitlines())}
    assert rows["es"]["pipeline"] == "es" and rows["fr"]["pipeline"] == "fr" and rows["it"]["pipeline"] == "fallback"
    assert "[EMAIL]" in rows["it"]["redacted"] and "mario.rossi" not in rows["it"]["redacted"]
    rep = __import__("json").loads(report.read_text())
    assert rep["router"]["unrouted_languages"] == {"it": 1}
