"""The language projects are renderings of one template: none may drift."""

import yaml

from deid_factory.render import project_languages, render_all, render_config, render_project, rendered_files


def test_every_language_project_matches_its_rendering():
    langs = project_languages()
    assert {"es", "fr", "en", "de"} <= set(langs)
    for lang in langs:
        for path, text in rendered_files(lang).items():
            assert path.exists(), f"{path} missing: run `factory render-projects`"
            assert path.read_text(encoding="utf-8") == text, f"{path} differs from its rendering: run `factory render-projects`"
    assert render_all(check=True) == []


def test_rendered_project_has_build_workflow_with_deps_and_outputs():
    project = yaml.safe_load(render_project("fr"))
    build = project["workflows"]["build"]
    assert build[0] == "extract" and build[-1] == "install"
    assert {"translate", "surrogate", "train", "evaluate", "package"} <= set(build)
    commands = {c["name"]: c for c in project["commands"]}
    assert set(build) <= set(commands)
    for name in build[1:]:
        assert commands[name].get("deps"), f"{name} has no deps"
    assert "--target ${vars.lang}" in commands["translate"]["script"][0]
    assert project["vars"]["lang"] == "fr" and project["vars"]["source_lang"] == "es"
    assert project["vars"]["n_records"] == 1000 and project["vars"]["seed"] == 13
    assert project["vars"]["gpu_id"] == -1 and project["vars"]["init"] == "blank"


def test_rendered_config_is_a_valid_cnn_ner_config():
    from spacy.util import load_config_from_str

    for lang in ("es", "de"):
        cfg = load_config_from_str(render_config(lang), interpolate=False)
        assert cfg["nlp"]["lang"] == lang
        assert cfg["nlp"]["pipeline"] == ["tok2vec", "deid_tagger"]  # the default NER: the BILUO tagger
        assert cfg["components"]["deid_tagger"]["model"]["tok2vec"]["@architectures"] == "spacy.Tok2VecListener.v1"
        parser = load_config_from_str(render_config(lang, ner_model="parser"), interpolate=False)
        assert parser["nlp"]["pipeline"] == ["tok2vec", "ner"]
        assert cfg["components"]["tok2vec"]["model"]["embed"]["attrs"] == ["NORM", "PREFIX", "SUFFIX", "SHAPE"]
        assert cfg["components"]["tok2vec"]["model"]["encode"]["@architectures"] == "spacy.MaxoutWindowEncoder.v2"
        assert cfg["training"]["dropout"] == 0.2
