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
    assert build[:2] == ["clock-start", "extract"] and build[-2:] == ["install", "clock-stop"]  # timed (test_build_clock.py)
    build = build[1:-1]
    assert {"translate", "surrogate", "train", "evaluate", "package"} <= set(build)
    commands = {c["name"]: c for c in project["commands"]}
    assert set(build) <= set(commands)
    for name in build[1:]:
        assert commands[name].get("deps"), f"{name} has no deps"
    assert "--build corpus/build.json" in commands["translate"]["script"][0]
    assert project["vars"]["lang"] == "fr" and project["vars"]["source_lang"] == "es"
    assert project["vars"]["n_records"] == 1000 and project["vars"]["seed"] == 13
    assert project["vars"]["gpu_id"] == -1 and project["vars"]["init"] == "blank"
    # the recall setting: a knob value, or a recall target calibrated on the dev split (off by default)
    assert project["vars"]["recall_target"] == 0
    assemble = commands["assemble"]
    assert "--recall-target ${vars.recall_target} --calibrate-on corpus/final/dev.spacy" in assemble["script"][0]
    assert "corpus/final/dev.spacy" in assemble["deps"]


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
    # a locale without a synthetic corpus: nothing weasel would miss (the Argos packages folder is
    # one of the project's `directories`, which weasel creates)
    assert deps("extract") == ["${vars.argos_dir}"]
    for lang in ("es", "fr", "de"):  # every declared dep of a shipped project is there, relative to it
        project = yaml.safe_load((PROJECT_ROOT / "languages" / lang / "project.yml").read_text(encoding="utf-8"))
        for command in project["commands"]:
            for dep in command.get("deps") or []:
                dep = dep.replace("${vars.argos_dir}", project["vars"]["argos_dir"])
                if dep in project["directories"]:
                    continue  # weasel makes it before any step runs
                if not dep.startswith(("corpus/", "training/", "packages/")):  # built by earlier steps
                    assert (PROJECT_ROOT / "languages" / lang / dep).exists(), (lang, command["name"], dep)


CORPUS_STEPS = ("extract", "detect", "filter", "placeholder", "translate", "surrogate")
# the vars the build is decided from: extract alone reads them, the later steps read corpus/build.json
DECISION_VARS = ("source_lang", "source_format", "native", "native_share", "if_no_route")


def test_the_build_is_decided_once_in_every_rendered_project():
    """extract takes the vars that decide the build and writes corpus/build.json; every later corpus
    step reads that file (declared as a dep, so a new decision reruns it) and repeats none of the
    flags (no --native, --source-format, --source-lang or language option of its own)."""
    import re

    from deid_factory import PROJECT_ROOT

    for path in sorted((PROJECT_ROOT / "languages").glob("*/project.yml")):
        project = yaml.safe_load(path.read_text(encoding="utf-8"))
        commands = {c["name"]: c for c in project["commands"]}
        extract = " ".join(commands["extract"]["script"])
        for var in DECISION_VARS:
            assert "${vars.%s}" % var in extract, (path, var)
        assert "--build corpus/build.json" in commands["extract"]["script"][0]
        assert "corpus/build.json" in commands["extract"]["outputs"]
        assert "${vars.argos_dir}" in commands["extract"]["deps"]  # new packages: extract decides again
        for name in CORPUS_STEPS[1:]:
            script = " ".join(commands[name]["script"])
            assert "--build corpus/build.json" in script and "corpus/build.json" in commands[name]["deps"], (path, name)
            repeated = [var for var in (*DECISION_VARS, "lang") if "${vars.%s}" % var in script]
            assert repeated == [], (path, name, repeated)
            options = set(re.findall(r"(?<=\s)--[a-z-]+", script))
            assert not options & {"--lang", "--source-lang", "--native", "--source-format", "--target", "--source",
                                  "--locale", "--if-no-route", "--as-written"}, (path, name, options)


def test_root_project_lists_every_locale_and_check_covers_it(tmp_path):
    """The root project.yml is rendered too: a build-<lc> command per locale and its line in
    build-all (the locales built from their own language first), so a new locale edits no project
    file by hand; `render-projects --check` reports a root project.yml that misses one."""
    import shutil
    import subprocess
    import sys

    from deid_factory import PROJECT_ROOT
    from deid_factory.new_locale import scaffold_locale
    from deid_factory.render import rendered_root

    langs = project_languages()
    ((path, text),) = rendered_root().items()
    assert path == PROJECT_ROOT / "project.yml" and path.read_text(encoding="utf-8") == text
    root = yaml.safe_load(text)
    build_all = root["workflows"]["build-all"]
    assert build_all[:2] == ["render-check", "build-es"] and sorted(build_all[1:]) == sorted(f"build-{lc}" for lc in langs)
    commands = {c["name"]: c for c in root["commands"]}
    for lc in langs:
        assert commands[f"build-{lc}"]["script"] == [f"python -m spacy project run build languages/{lc}"]
    assert {"render", "render-check", "test", "test-fast", "bench", "evaluate-meddocan"} <= set(commands)
    assert "offline" in commands["build-es"]["help"] and "es->en and en->fr" in commands["build-fr"]["help"]

    # a project with two locales, rendered; then a third one's locale.yml, written by hand
    languages = tmp_path / "languages"
    for lc in ("es", "fr"):
        (languages / lc).mkdir(parents=True)
        shutil.copy(PROJECT_ROOT / "languages" / lc / "locale.yml", languages / lc / "locale.yml")
    for name in ("regex_packs", "corpora"):
        (tmp_path / name).mkdir()
    render_all(languages_dir=languages)
    assert render_all(check=True, languages_dir=languages) == []
    (languages / "xq").mkdir()
    (languages / "xq" / "locale.yml").write_text(
        (languages / "fr" / "locale.yml").read_text(encoding="utf-8").replace("lang: fr", "lang: xq", 1), encoding="utf-8")
    assert tmp_path / "project.yml" in render_all(check=True, languages_dir=languages)
    check = subprocess.run([sys.executable, "-m", "deid_factory", "--root", str(tmp_path), "render-projects", "--check"],
                           capture_output=True, text=True, cwd=tmp_path)
    assert check.returncode == 1 and "differs: project.yml" in check.stdout, check.stdout + check.stderr
    render_all(languages_dir=languages)
    assert render_all(check=True, languages_dir=languages) == []
    root = yaml.safe_load((tmp_path / "project.yml").read_text(encoding="utf-8"))
    assert root["workflows"]["build-all"] == ["render-check", "build-es", "build-fr", "build-xq"]
    # `factory new-locale` renders the root project with the new locale in it
    written = scaffold_locale("xr", "Xr", "en_US", root=tmp_path)
    assert tmp_path / "project.yml" in written
    root = yaml.safe_load((tmp_path / "project.yml").read_text(encoding="utf-8"))
    assert root["workflows"]["build-all"][-1] == "build-xr" and "build-xr" in {c["name"] for c in root["commands"]}
