"""Distillation (factory/distill.py): a small student tagger learns the teacher's tag distributions.

The teacher is the tiny tagger pipeline of conftest (trained on 48 gold notes); the student sees
unlabeled notes only, so whatever it finds of the PHI in held-out notes it learned from the
teacher's probabilities."""

import json

import numpy
import pytest
import srsly

from conftest import train_make_records
from deid_factory import PROJECT_ROOT
from deid_factory.distill import (DistillError, DistillSettings, distill_student, load_teacher, soften, targets,
                                  teacher_distributions)

STUDENT_CONFIG = PROJECT_ROOT / "languages" / "es" / "configs" / "student.cfg"


def _tiny_config(tmp_path):
    """The shipped student config, with batches of tiny notes: 60 notes of ~40 words would otherwise
    be two updates an epoch."""
    text = STUDENT_CONFIG.read_text(encoding="utf-8").replace("batch_words = 1000", "batch_words = 120")
    assert text != STUDENT_CONFIG.read_text(encoding="utf-8")
    path = tmp_path / "student.cfg"
    path.write_text(text, encoding="utf-8")
    return path


def _phi_agreement(student_nlp, teacher_nlp, texts):
    """Share of the tokens that either tagger calls PHI on which both decode the same tag, and the
    number of tokens the teacher calls PHI."""
    s_tagger, t_tagger = student_nlp.get_pipe("deid_tagger"), teacher_nlp.get_pipe("deid_tagger")
    docs = [student_nlp.make_doc(t) for t in texts]
    teacher_probs = teacher_distributions(teacher_nlp, docs)
    same = either = teacher_phi = 0
    outside = s_tagger.labels.index("O")
    for doc, theirs_p, mine_p in zip(docs, teacher_probs, s_tagger.predict(docs)):
        theirs = numpy.asarray(t_tagger.decode(theirs_p))
        mine = numpy.asarray(s_tagger.decode(numpy.asarray(mine_p)))
        phi = (theirs != outside) | (mine != outside)
        either += int(phi.sum())
        same += int((theirs[phi] == mine[phi]).sum())
        teacher_phi += int((theirs != outside).sum())
    return same / max(either, 1), teacher_phi


@pytest.fixture(scope="module")
def distilled(tmp_path_factory, train_tagger_pipeline):
    import shutil

    from deid_factory.package import set_recall_bias

    root = tmp_path_factory.mktemp("distill")
    teacher = root / "teacher"  # the tiny pipeline at a recall setting of its own, which the student must keep
    shutil.copytree(train_tagger_pipeline, teacher)
    set_recall_bias(teacher, 2.5)
    unlabeled = root / "notes.jsonl"
    # notes the teacher never saw, with annotations that must be ignored (everything a PERSON)
    srsly.write_jsonl(unlabeled, [{"id": r["id"], "text": r["text"], "spans": [{"start": 0, "end": 4, "label": "PERSON"}]}
                                   for r in train_make_records(80, seed=11)])
    summary = distill_student(teacher, _tiny_config(root), root / "out", unlabeled=[unlabeled], max_epochs=8)
    return {"root": root, "summary": summary, "teacher": teacher}


def test_the_student_tags_the_phi_the_teacher_tags_on_held_out_notes(distilled):
    import spacy

    from deid_factory.distill import load_student_config, make_student

    teacher = load_teacher(distilled["teacher"])
    student = spacy.load(distilled["root"] / "out" / "model-best")
    held_out = [r["text"] for r in train_make_records(20, seed=12)]
    agreement, teacher_phi = _phi_agreement(student, teacher, held_out)
    assert teacher_phi > 100  # the teacher does find PHI in these notes
    # chance: the same student before any update (its tags drawn from an untrained softmax)
    cfg, _ = load_student_config(STUDENT_CONFIG)
    untrained = make_student(cfg, teacher.get_pipe("deid_tagger").labels, [])
    chance, _ = _phi_agreement(untrained, teacher, held_out)
    assert chance < 0.2
    assert agreement > 0.8, (agreement, chance)
    # the summary's held-out agreement (a tenth of the unlabeled notes) says the same
    best = distilled["summary"]["best"]
    assert best["phi_tag_agreement"] > 0.8 and distilled["summary"]["labeled_notes"] == 0


def test_the_student_pipeline_differs_from_the_teacher_by_its_tagger_only(distilled):
    import spacy

    teacher = spacy.load(distilled["teacher"])
    pipeline = spacy.load(distilled["root"] / "out" / "pipeline")
    assert pipeline.pipe_names == [n for n in teacher.pipe_names if n != "tok2vec"]
    assert pipeline.get_pipe("deid_tagger").o_bias == teacher.get_pipe("deid_tagger").o_bias == 2.5
    assert pipeline.config["components"]["deid_merger"] == teacher.config["components"]["deid_merger"]
    # the student is smaller, and the summary holds counts and scores, no text
    summary = distilled["summary"]
    assert summary["student_parameters"] < summary["teacher_parameters"]
    written = (distilled["root"] / "out" / "distill_summary.json").read_text(encoding="utf-8")
    assert json.loads(written)["best_epoch"] == summary["best_epoch"]
    notes = [json.loads(line)["text"] for line in (distilled["root"] / "notes.jsonl").read_text().splitlines()]
    assert not any(note[:30] in written for note in notes)
    # the PHI it finds on held-out notes: most of the gold tokens
    doc = pipeline(train_make_records(1, seed=12)[0]["text"])
    assert len(doc.ents) >= 3


def test_targets_mix_gold_into_the_teacher_distribution_and_soften_keeps_the_argmax():
    teacher = numpy.asarray([[0.7, 0.2, 0.1], [0.1, 0.1, 0.8]], dtype="float32")
    mixed = targets(teacher.copy(), numpy.asarray([1, -1], dtype="int32"), 0.5)
    assert numpy.allclose(mixed[0], [0.35, 0.6, 0.05]) and numpy.allclose(mixed[1], teacher[1])
    assert numpy.allclose(mixed.sum(axis=1), 1.0)
    assert targets(teacher, None, 0.5) is teacher  # an unlabeled note: the teacher alone
    soft = soften(teacher, 2.0)
    assert numpy.allclose(soft.sum(axis=1), 1.0) and (soft.argmax(axis=1) == teacher.argmax(axis=1)).all()
    assert soft[0, 0] < teacher[0, 0]  # flatter


def test_settings_refuse_unknown_keys_and_bad_values():
    with pytest.raises(DistillError, match="unknown"):
        DistillSettings.from_config({"epochs": 3})
    with pytest.raises(DistillError, match="gold_weight"):
        DistillSettings.from_config({"gold_weight": 1.5})
    assert DistillSettings.from_config({"max_epochs": 3}, max_epochs=5).max_epochs == 5
