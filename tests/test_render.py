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


def test_rendered_deps_follow_the_surrogate_data_and_synthetic_corpus(tmp_path):
    """The surrogate step (and package, which copies it into the wheel) depends on every file of the
    target's surrogate_data/, extract on the target's synthetic corpus: a file added there is a dep
    at the next rendering, and every dep of a shipped project is a path weasel finds."""
    import shutil

    from deid_factory import PROJECT_ROOT
    from deid_factory.locale import Locale

    fr = Locale.load("fr")
    languages = tmp_path / "languages"
    for name in ("locale.yml", "surrogates.yml", "placeholders.yml"):
        (languages / "fr").mkdir(parents=True, exist_ok=True)
        shutil.copy(fr.folder / name, languages / "fr" / name)
    shutil.copytree(fr.surrogate_data_dir, languages / "fr" / "surrogate_data")
    shutil.copytree(fr.synth_dir, tmp_path / "corpora" / "synth" / "fr")

    def deps(step):
        project = yaml.safe_load(render_project("fr", languages))
        return {c["name"]: c for c in project["commands"]}[step].get("deps") or []

    assert "surrogate_data/cities.tsv" in deps("surrogate") and "surrogate_data/formats.yml" in deps("package")
    assert "../../corpora/synth/fr/sections.yml" in deps("extract")
    (languages / "fr" / "surrogate_data" / "hospitals_extra.txt").write_text("# new list\n", encoding="utf-8")
    assert "surrogate_data/hospitals_extra.txt" in deps("surrogate") and "surrogate_data/hospitals_extra.txt" in deps("package")
    shutil.rmtree(tmp_path / "corpora")
    assert deps("extract") == []  # a locale without a synthetic corpus: nothing weasel would miss
    for lang in ("es", "fr", "de"):  # every declared dep of a shipped project is there, relative to it
        project = yaml.safe_load((PROJECT_ROOT / "languages" / lang / "project.yml").read_text(encoding="utf-8"))
        for command in project["commands"]:
            for dep in command.get("deps") or []:
                if not dep.startswith(("corpus/", "training/", "packages/")):  # built by earlier steps
                    assert (PROJECT_ROOT / "languages" / lang / dep).exists(), (lang, command["name"], dep)
