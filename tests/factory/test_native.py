"""The native path: annotated notes already in the target language are trained on as annotated.

Every record the reader accepts is kept (language detection and corpus thresholds only report),
the training DocBin holds the notes' own text and spans (surrogate copies only as an optional
augmentation, of training notes only), and a dev set the user gives is the dev split."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from deid_factory.detect import detect
from deid_factory.extract import resolve_native
from deid_factory.placeholders import placeholder_file
from deid_factory.records import Record, read_records, write_records
from deid_factory.silver import filter_records
from deid_factory.splits import read_docbin_spans, write_splits
from deid_factory.surrogates.stage import surrogate_file
from deid_factory.synth import generate_records


def _notes(n: int, seed: int, prefix: str) -> list[Record]:
    """Annotated Spanish notes (the embedded generator stands in for a user's own annotated notes)."""
    notes = list(generate_records(n, seed, "es"))
    for i, note in enumerate(notes):
        note.id = f"{prefix}-{i:03d}"
    return notes


def _write_brat(records: list[Record], folder: Path) -> Path:
    folder.mkdir(parents=True)
    for record in records:
        (folder / f"{record.id}.txt").write_text(record.text, encoding="utf-8")
        lines = [f"T{i}\t{s.label} {s.start} {s.end}\t{record.text[s.start:s.end]}" for i, s in enumerate(record.spans, 1)]
        (folder / f"{record.id}.ann").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def test_resolve_native():
    assert resolve_native("auto", "brat", "es", "es") is True
    assert resolve_native("auto", "synth", "es", "es") is False  # the embedded corpus keeps its surrogates
    assert resolve_native("auto", "brat", "es", "fr") is False  # a foreign source is translated
    assert resolve_native("yes", "synth", "es", "fr") is True
    assert resolve_native("no", "brat", "es", "es") is False
    with pytest.raises(ValueError, match="auto, yes or no"):
        resolve_native("maybe", "brat", "es", "es")


def test_detect_and_filter_keep_every_native_note_and_report(tmp_path):
    notes = _notes(12, 3, "n")
    notes[0].text = "Paciente estable.\n" + "The patient was discharged home today and will be seen again in clinic next week. " * 3
    notes[0].spans = []
    notes[1].text = notes[1].text * 12  # far longer than the others: over the length threshold
    src = tmp_path / "src.jsonl"
    write_records(src, notes)

    dropped = detect(src, tmp_path / "d.jsonl", "es")
    kept = detect(src, tmp_path / "k.jsonl", "es", keep_all=True)
    assert dropped["records_dropped"] >= 1 and dropped["records_kept"] == 11
    assert kept["records_kept"] == 12 and kept["records_dropped"] == 0
    assert kept["records_detected_other"] == dropped["records_dropped"]  # still reported
    assert len(list(read_records(tmp_path / "k.jsonl"))) == 12

    thinned = filter_records(tmp_path / "k.jsonl", tmp_path / "f1.jsonl", "es", k_std=1.0)
    every = filter_records(tmp_path / "k.jsonl", tmp_path / "f2.jsonl", "es", k_std=1.0, keep_all=True)
    assert thinned["records_kept"] < 12
    assert every["records_kept"] == 12 and every["thresholds"]["report_only"] is True
    assert every["thresholds"]["removed_length"] == thinned["thresholds"]["removed_length"] >= 1


def test_native_surrogate_stage_trains_on_the_notes_as_annotated(tmp_path):
    notes = _notes(30, 5, "n")
    dev = _notes(6, 77, "dev")
    originals, dev_path = tmp_path / "originals.jsonl", tmp_path / "dev.jsonl"
    write_records(originals, notes)
    write_records(dev_path, dev)
    placeholder_file(originals, tmp_path / "ph.jsonl", "es")

    report = surrogate_file(tmp_path / "ph.jsonl", tmp_path / "final", "es", seed=1, originals=originals,
                            augment_share=0.5, dev_path=dev_path)
    assert report["native"] and report["test_is_dev"]
    counts = report["splits"]["counts"]
    assert counts == {"train": 30 + 15, "dev": 6, "test": 6}  # every note trains, plus 15 copies
    train = read_docbin_spans(tmp_path / "final" / "train.spacy", "es")
    by_text = {text: spans for text, spans in train}
    for note in notes:  # each real note is in training exactly as annotated
        assert by_text[note.text] == sorted((s.start, s.end, s.label) for s in note.spans)
    copies = [text for text, _ in train if text not in {n.text for n in notes}]
    assert len(copies) == 15
    # full names only: the notes and the surrogates draw surnames from the same Faker list, so a lone
    # surname ("IGLESIA") of a note is, now and then, drawn again for a copy by chance
    real_values = {n.text[s.start:s.end] for n in notes for s in n.spans if s.label == "PERSON"}
    assert all(not any(v in c for v in real_values if len(v) > 6 and " " in v) for c in copies)  # copies carry surrogates
    assert {t for t, _ in read_docbin_spans(tmp_path / "final" / "dev.spacy", "es")} == {d.text for d in dev}


def test_native_augmentation_copies_only_training_notes(tmp_path):
    notes = _notes(40, 9, "n")
    originals = tmp_path / "originals.jsonl"
    write_records(originals, notes)
    placeholder_file(originals, tmp_path / "ph.jsonl", "es")
    surrogate_file(tmp_path / "ph.jsonl", tmp_path / "final", "es", seed=2, originals=originals, augment_share=1.0)
    final = list(read_records(tmp_path / "final" / "records.jsonl"))
    split_of = {r.id: r.meta["split"] for r in final}
    augmented = [r for r in final if r.id.endswith("#aug")]
    assert augmented and all(r.meta["split"] == "train" for r in augmented)
    assert all(split_of[r.meta["augmentation_of"]] == "train" for r in augmented)
    assert {split_of[n.id] for n in notes} == {"train", "dev", "test"}  # the notes themselves are split 80/10/10


def test_write_splits_fixed_and_extra(tmp_path):
    notes = _notes(10, 4, "n")
    fixed = {notes[0].id: "test", notes[1].id: "dev"}
    extra = [Record("x#aug", "es", notes[2].text, list(notes[2].spans), {})]
    report, final = write_splits(notes, tmp_path, "es", {"train": 1.0, "dev": 0.0, "test": 0.0}, fixed=fixed, train_extra=extra)
    split = {r.id: r.meta["split"] for r in final}
    assert split[notes[0].id] == "test" and split[notes[1].id] == "dev" and split["x#aug"] == "train"
    assert report["counts"] == {"train": 9, "dev": 1, "test": 1}
    with pytest.raises(ValueError, match="unknown split"):
        write_splits(notes, tmp_path, "es", {"train": 1.0, "dev": 0.0, "test": 0.0}, fixed={"a": "valid"})


@pytest.mark.slow
def test_native_build_through_the_project(tmp_path):
    """`spacy project run build languages/es --vars.source_format brat` with a dev set and an eval
    corpus: all notes kept, trained as annotated, dev used for early stopping, eval corpus reported."""
    from test_build_e2e import _copy_project, _weasel

    project = _copy_project("es", tmp_path)
    notes = _notes(36, 21, "note")
    notes[0].text = notes[0].text * 10  # the translation path's length threshold would drop it
    src = _write_brat(notes, tmp_path / "notes")
    dev = _write_brat(_notes(6, 22, "dev"), tmp_path / "dev")
    held = _write_brat(_notes(5, 23, "eval"), tmp_path / "eval")
    from test_privacy import network_isolation

    # offline like the other builds: a network namespace where the kernel allows it, and the guard
    prefix, env, attempts = network_isolation(tmp_path, {**os.environ, "PIP_TARGET": str(tmp_path / "site")})
    _weasel(["build", str(project), "--vars.source_format", "brat", "--vars.source_path", str(src), "--vars.label_map", "",
             "--vars.dev_path", str(dev), "--vars.eval_path", str(held), "--vars.max_epochs", "2", "--vars.patience", "2"],
            cwd=tmp_path, env=env, prefix=prefix)
    assert not attempts.exists(), attempts.read_text()  # no process of the build tried the network
    corpus = project / "corpus"
    assert json.loads((corpus / "filter_report.json").read_text())["records_kept"] == 36
    surrogate = json.loads((corpus / "final" / "report.json").read_text())
    assert surrogate["native"] and surrogate["splits"]["counts"] == {"train": 36, "dev": 6, "test": 6}
    train_texts = {t for t, _ in read_docbin_spans(corpus / "final" / "train.spacy", "es")}
    assert train_texts == {n.text for n in notes}
    metrics = json.loads((project / "metrics" / "metrics.json").read_text())
    assert [(a["kind"], a["docs"]) for a in metrics["also"]] == [("eval", 5), ("dev", 6)]  # dev_path scored too, last
    assert "Real annotated corpus" in (project / "metrics" / "report.md").read_text()
    # the NER learned from the notes: on the held-out eval notes (measured: strict F1 0.48, PERSON
    # 0.74), and on names in prose no regex pattern finds (a model that learned nothing finds none)
    from test_build_e2e import MIN_NER_F, NER_ONLY, _assert_the_ner_finds_names, _load_installed

    assert metrics["also"][0]["systems"]["ner"]["strict"]["micro"]["f"] >= MIN_NER_F, metrics["also"][0]["systems"]["ner"]
    prose = NER_ONLY["es"][0]
    _assert_the_ner_finds_names(_load_installed(tmp_path / "site", "deid_es", prose, tmp_path, env, prefix, attempts), prose, "es")
