"""Self-training (factory/selftrain.py): unlabeled notes are labelled by the pipeline, the confident
spans (per-label thresholds, class-proportion control) are added to the gold training data, and the
model is retrained while dev improves. Tiny data: a gold set WITHOUT any EMAIL and a pool of
unlabeled notes that all hold an e-mail address (found by the regex pack), so the retrained model
can only know EMAIL through the pseudo labels. No text of the notes may reach logs or reports."""

from __future__ import annotations

import contextlib
import io
import json
import logging
import re
from pathlib import Path

import pytest
import srsly

from conftest import train_make_records, train_write_docbin
from deid_factory.selftrain import (Candidate, LabelledNote, load_settings, pseudo_docs, read_unlabeled,
                                    select_spans, self_train)

THRESHOLDS = {"default": 0.9, "DATE": 0.8}


# ----------------------------------------------------------------------------- selection (unit)
def test_thresholds_are_per_label():
    cands = [Candidate(0, 0, 1, "PERSON", 0.95), Candidate(0, 2, 3, "PERSON", 0.85),
             Candidate(1, 0, 1, "DATE", 0.85), Candidate(1, 2, 3, "DATE", 0.75)]
    kept, stats = select_spans(cands, {}, THRESHOLDS)  # no gold counts: no proportion control
    assert [(c.label, c.score) for c in kept] == [("PERSON", 0.95), ("DATE", 0.85)]
    assert stats["dropped_threshold"] == {"DATE": 1, "PERSON": 1}
    assert stats["kept"] == {"DATE": 1, "PERSON": 1} and stats["dropped_proportion"] == {}
    kept, _ = select_spans(cands, {}, {"default": 0.8})
    assert len(kept) == 3


def test_proportion_control_drops_the_least_confident_of_a_label_that_takes_over():
    # 10 confident spans: 8 DATE, 2 PERSON; in the gold data DATE is 10 % of the spans
    cands = [Candidate(i, 0, 1, "DATE", 0.91 + i / 100) for i in range(8)]
    cands += [Candidate(10 + i, 0, 1, "PERSON", 0.95) for i in range(2)]
    gold = {"DATE": 10, "PERSON": 90}
    kept, stats = select_spans(cands, gold, THRESHOLDS, max_share_factor=2.0, min_share=0.0)
    dates = [c for c in kept if c.label == "DATE"]
    assert stats["caps"]["DATE"] == 2  # ceil(2.0 * 0.10 * 10)
    assert sorted(c.note for c in dates) == [6, 7]  # the two most confident
    assert stats["dropped_proportion"] == {"DATE": 6}
    assert stats["kept"] == {"DATE": 2, "PERSON": 2}
    # a larger factor lets more through; without control (factor large) all are kept
    kept, stats = select_spans(cands, gold, THRESHOLDS, max_share_factor=4.0, min_share=0.0)
    assert stats["kept"]["DATE"] == 4
    kept, stats = select_spans(cands, gold, THRESHOLDS, max_share_factor=100.0, min_share=0.0)
    assert len(kept) == 10


def test_a_label_absent_from_gold_gets_at_most_its_min_share():
    cands = [Candidate(i, 0, 1, "EMAIL", 0.99) for i in range(5)] + [Candidate(9, 0, 1, "PERSON", 0.99)] * 5
    kept, stats = select_spans(cands, {"PERSON": 10}, THRESHOLDS, max_share_factor=2.0, min_share=0.0)
    assert stats["kept"] == {"PERSON": 5} and stats["dropped_proportion"] == {"EMAIL": 5}
    kept, stats = select_spans(cands, {"PERSON": 10}, THRESHOLDS, max_share_factor=2.0, min_share=0.1)
    assert stats["kept"]["EMAIL"] == 2  # ceil(2.0 * 0.1 * 10)


def test_pseudo_docs_mask_uncertain_tokens_and_dropped_spans_or_drop_the_note():
    import spacy

    vocab = spacy.blank("es").vocab
    words = ["Paciente", "Ana", "Ruiz", "vive", "en", "Soria", "."]
    note = LabelledNote(words, [True] * 6 + [False],
                        [Candidate(0, 1, 3, "PERSON", 0.97), Candidate(0, 5, 6, "LOCATION", 0.6)],
                        [0.99, 0.97, 0.98, 0.55, 0.99, 0.6, 0.99])
    kept = [note.candidates[0]]
    docs, counts = pseudo_docs(vocab, [note], kept, token_threshold=0.9, uncertain_notes="mask")
    doc = docs[0]
    assert [(e.text, e.label_) for e in doc.ents] == [("Ana Ruiz", "PERSON")]
    # "vive" (unsure) and "Soria" (a dropped span) are unannotated, not O: out of the loss
    assert [t.ent_iob_ for t in doc] == ["O", "B", "I", "", "O", "", "O"]
    assert counts["notes_kept"] == 1 and counts["masked_tokens"] == 2 and counts["uncertain_tokens"] == 2
    docs, counts = pseudo_docs(vocab, [note], kept, token_threshold=0.9, uncertain_notes="drop")
    assert docs == [] and counts["notes_dropped_uncertain"] == 1
    # a DocBin keeps the missing annotation, which is what training reads
    from spacy.tokens import DocBin

    back = list(DocBin(docs=pseudo_docs(vocab, [note], kept, 0.9)[0]).get_docs(vocab))[0]
    assert [t.ent_iob_ for t in back] == ["O", "B", "I", "", "O", "", "O"]


def test_settings_layering_and_validation(tmp_path):
    s = load_settings()
    assert s["rounds"] == 3 and s["uncertain_notes"] == "mask" and "default" in s["thresholds"]
    user = tmp_path / "st.yml"
    user.write_text("thresholds: {PERSON: 0.5}\nmax_share_factor: 3\n", encoding="utf-8")
    s = load_settings(user, rounds=1)
    assert s["thresholds"]["PERSON"] == 0.5 and s["thresholds"]["DATE"] == 0.85 and s["rounds"] == 1
    assert s["max_share_factor"] == 3
    user.write_text("nonsense: 1\n", encoding="utf-8")
    with pytest.raises(Exception, match="nonsense"):
        load_settings(user)


def test_read_unlabeled_txt_folder_and_jsonl_ignoring_spans(tmp_path):
    folder = tmp_path / "notes"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.txt").write_text("Nota uno.", encoding="utf-8")
    (folder / "sub" / "b.txt").write_text("   ", encoding="utf-8")
    (folder / "c.jsonl").write_text(json.dumps({"text": "Nota dos.", "spans": [{"start": 0, "end": 4, "label": "X"}]})
                                    + "\n\n" + json.dumps({"id": "n3", "text": "Nota tres."}) + "\n", encoding="utf-8")
    texts, counts = read_unlabeled(folder)
    assert texts == ["Nota uno.", "Nota dos.", "Nota tres."]
    assert counts["empty_skipped"] == 1 and counts["notes"] == 3 and counts["files"] == 3
    assert read_unlabeled(folder / "a.txt")[0] == ["Nota uno."]
    assert read_unlabeled(folder, max_notes=2)[0] == ["Nota uno.", "Nota dos."]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "Secreto Garcia"}\n{"text": "Secreto Lopez"\n', encoding="utf-8")
    with pytest.raises(Exception) as err:
        read_unlabeled(bad)
    assert "bad.jsonl:2" in str(err.value) and "Secreto" not in str(err.value)


# ----------------------------------------------------------------------------- end to end (tiny)
def _has_email(record: dict) -> bool:
    return any(s["label"] == "EMAIL" for s in record["spans"])


@pytest.fixture(scope="module")
def selftrain_run(tmp_path_factory):
    """A base es model trained on gold notes without EMAIL, and one self-training round on 24
    unlabeled notes that all hold an e-mail; logs and printed output are captured."""
    from deid_factory.package import assemble_pipeline
    from deid_factory.render import render_config
    from deid_factory.train import train_model

    root = tmp_path_factory.mktemp("selftrain")
    records = train_make_records(160, seed=7)
    plain = [r for r in records if not _has_email(r)]
    contact = [r for r in records if _has_email(r)]
    assert len(plain) >= 40 and len(contact) >= 30
    gold, dev = plain[:32], plain[32:40]
    unlabeled, held_out = contact[:24], contact[24:30]
    train_write_docbin(gold, root / "gold" / "train.spacy")
    train_write_docbin(dev, root / "gold" / "dev.spacy")
    # JSONL notes whose (wrong) annotations must be ignored: everything labelled PERSON
    notes = root / "notes.jsonl"
    srsly.write_jsonl(notes, [{"id": r["id"], "text": r["text"], "spans": [{"start": 0, "end": 4, "label": "PERSON"}]}
                              for r in unlabeled])
    config = root / "config.cfg"
    config.write_text(render_config("es"), encoding="utf-8")
    train_model(root / "gold" / "train.spacy", root / "gold" / "dev.spacy", config, root / "base",
                max_epochs=5, patience=5, seed=0)
    assemble_pipeline(root / "base" / "model-best", "es", root / "pipeline")

    handler_stream = io.StringIO()
    handler = logging.StreamHandler(handler_stream)
    handler.setLevel(logging.DEBUG)
    logging.getLogger().addHandler(handler)
    old_level = logging.getLogger().level
    logging.getLogger().setLevel(logging.DEBUG)
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
            report = self_train(root / "pipeline", notes, root / "gold" / "train.spacy", root / "gold" / "dev.spacy",
                                config, root / "training" / "selftrain", lang="es",
                                corpus_dir=root / "corpus" / "selftrain", pipeline_out=root / "final",
                                settings=load_settings(rounds=1, min_share=0.3, max_share_factor=3.0),
                                max_epochs=5, patience=5, seed=0)
    finally:
        logging.getLogger().removeHandler(handler)
        logging.getLogger().setLevel(old_level)
    return {"root": root, "report": report, "logs": handler_stream.getvalue(), "printed": printed.getvalue(),
            "unlabeled": unlabeled, "held_out": held_out, "gold": gold + dev, "config": config}


def test_pseudo_labelled_docbin_holds_confident_spans_inside_the_corpus_folder(selftrain_run):
    import spacy
    from spacy.tokens import DocBin

    root, report = selftrain_run["root"], selftrain_run["report"]
    pseudo = root / "corpus" / "selftrain" / "round-1" / "pseudo.spacy"
    docs = list(DocBin().from_disk(pseudo).get_docs(spacy.blank("es").vocab))
    assert docs and sum(len(d.ents) for d in docs) > 0
    row = report["rounds"][0]
    assert row["notes_labelled"] == 24 and row["pseudo_spans"] == sum(len(d.ents) for d in docs)
    assert row["spans"]["kept"]["EMAIL"] >= 10
    # the notes' own (wrong) annotations were ignored: no span over the first four characters
    assert not any(e.start_char == 0 and e.end_char == 4 for d in docs for e in d.ents)
    # the training data of the round = gold + pseudo notes
    train = list(DocBin().from_disk(root / "corpus" / "selftrain" / "round-1" / "train.spacy").get_docs(spacy.blank("es").vocab))
    assert len(train) == 32 + row["notes_kept"] and row["train_docs"] == len(train)
    # no text of the notes outside the corpus folder: the training folder has no DocBin
    assert not list((root / "training").rglob("*.spacy"))


def test_retrained_model_learns_a_label_only_the_pseudo_labels_carry(selftrain_run):
    """Fails if the pseudo labels are not used: the gold data has no EMAIL, the base NER does not
    know the label, the round's NER (trained on gold + pseudo) knows it and finds e-mails alone."""
    import spacy

    root = selftrain_run["root"]
    base = spacy.load(root / "base" / "model-best")
    assert "EMAIL" not in base.get_pipe("deid_tagger").entity_labels
    model = spacy.load(root / "training" / "selftrain" / "round-1" / "model" / "model-best")
    assert "EMAIL" in model.get_pipe("deid_tagger").entity_labels
    held_out = selftrain_run["held_out"]
    found = sum(any(e.label_ == "EMAIL" for e in model(r["text"]).ents) for r in held_out)
    assert found >= len(held_out) // 2, f"the NER alone found an EMAIL in {found}/{len(held_out)} new notes"


def test_report_has_counts_and_dev_scores_and_the_best_pipeline_is_copied(selftrain_run):
    root, report = selftrain_run["root"], selftrain_run["report"]
    saved = json.loads((root / "training" / "selftrain" / "selftrain_report.json").read_text())
    assert saved == json.loads(json.dumps(report))
    row = report["rounds"][0]
    for key in ("notes_labelled", "notes_kept", "notes_dropped_uncertain", "masked_tokens", "accepted"):
        assert key in row
    assert set(row["spans"]) >= {"candidates", "kept", "dropped_threshold", "dropped_proportion"}
    assert 0 <= row["dev"]["strict_f"] <= 1 and 0 <= report["baseline"]["dev"]["strict_f"] <= 1
    assert row["accepted"] == (row["dev"]["strict_f"] > report["baseline"]["dev"]["strict_f"]
                               and row["dev"]["token_recall"] >= report["baseline"]["dev"]["token_recall"])
    assert report["best_round"] == (1 if row["accepted"] else 0)
    assert (root / "final" / "config.cfg").exists() and "deid_merger" in (root / "final" / "config.cfg").read_text()


def _note_only_words(run) -> set[str]:
    """PHI words (and e-mails) of the unlabeled notes that neither a gold or dev note nor a file of
    the base pipeline (its string table, the regex pack's word lists and cases) contains."""
    gold_words = {w for r in run["gold"] for w in re.findall(r"[\w@.]+", r["text"])}
    for path in (run["root"] / "pipeline").rglob("*"):
        if path.is_file():
            gold_words |= set(re.findall(r"[\w@.]+", path.read_bytes().decode("utf-8", errors="ignore")))
    words = set()
    for r in run["unlabeled"]:
        for s in r["spans"]:
            value = r["text"][s["start"]:s["end"]]
            words |= {w for w in re.findall(r"[\w@.]{5,}", value) if w not in gold_words and not w.isdigit()}
    return words


def test_no_text_of_the_notes_in_logs_report_or_model_files(selftrain_run):
    run = selftrain_run
    secrets = _note_only_words(run)
    assert any("@" in s for s in secrets) and len(secrets) >= 20
    texts = [r["text"] for r in run["unlabeled"]]
    assert "round 1" in run["logs"]  # the logs were captured
    seen = run["logs"] + run["printed"] + json.dumps(run["report"])
    for text in texts:
        assert text not in seen and text[:30] not in seen
    leaked = sorted(secrets & set(re.findall(r"[\w@.]+", seen)))
    assert not leaked, f"{len(leaked)} PHI strings of the unlabeled notes in logs/report"
    # the round models and the final pipeline: their string tables were cut back
    for folder in (run["root"] / "training", run["root"] / "final"):
        for path in folder.rglob("*"):
            if path.is_file():
                data = set(re.findall(r"[\w@.]+", path.read_bytes().decode("utf-8", errors="ignore")))
                leaked = sorted(secrets & data)
                assert not leaked, f"{path}: {len(leaked)} PHI strings of the unlabeled notes"


def test_rounds_go_on_while_dev_improves_and_the_best_pipeline_is_kept(selftrain_run, tmp_path, monkeypatch):
    """Loop control, with the dev scores scripted: round 1 improves, round 2 does not -> stop,
    round 1's pipeline is the result and round 2 was labelled by it."""
    import deid_factory.selftrain as st

    run = selftrain_run
    root = run["root"]
    scripted = iter([0.5, 0.6, 0.55, 0.9])
    scored = []

    def fake_dev_scores(pipeline_dir, dev_data, recall_bias=None):
        scored.append(Path(pipeline_dir))
        return {"strict_f": next(scripted), "ner_strict_f": 0.0, "token_recall": 0.9}

    labelled_by = []
    real_load = st.label_notes

    def spy_label_notes(nlp, texts, batch_size=32):
        labelled_by.append(nlp.meta.get("name"))
        return real_load(nlp, texts, batch_size=batch_size)

    monkeypatch.setattr(st, "dev_scores", fake_dev_scores)
    monkeypatch.setattr(st, "label_notes", spy_label_notes)
    notes = tmp_path / "notes"
    notes.mkdir()
    for i, r in enumerate(run["unlabeled"][:8]):
        (notes / f"{i}.txt").write_text(r["text"], encoding="utf-8")
    dev = tmp_path / "my_dev.jsonl"  # a small annotated set of one's own, as records
    srsly.write_jsonl(dev, run["gold"][-8:])
    report = st.self_train(root / "base" / "model-best", notes, root / "gold" / "train.spacy", dev,
                           run["config"], tmp_path / "out", lang="es", corpus_dir=tmp_path / "corpus",
                           pipeline_out=tmp_path / "final", settings=load_settings(rounds=3), max_epochs=1, patience=1, seed=0)
    assert [r["accepted"] for r in report["rounds"]] == [True, False]
    assert report["best_round"] == 1 and report["best_dev"]["strict_f"] == 0.6
    assert report["stopped"].startswith("round 2")
    assert scored == [tmp_path / "out" / "round-0" / "pipeline", tmp_path / "out" / "round-1" / "pipeline",
                      tmp_path / "out" / "round-2" / "pipeline"]
    assert len(labelled_by) == 2
    assert (tmp_path / "corpus" / "dev.spacy").exists()  # the JSONL dev set, as a DocBin for early stopping
    summary = json.loads((tmp_path / "out" / "round-1" / "model" / "train_summary.json").read_text())
    assert summary["dev_docs"] == 8
    # the result is round 1's pipeline
    assert (tmp_path / "final" / "deid_tagger" / "model").read_bytes() == \
        (tmp_path / "out" / "round-1" / "pipeline" / "deid_tagger" / "model").read_bytes()


# ----------------------------------------------------------------------------- command line
def test_cli_names_a_missing_unlabeled_path_in_one_line(tmp_path, selftrain_run):
    from typer.testing import CliRunner

    from deid_factory.cli import app

    root = selftrain_run["root"]
    args = ["--train", str(root / "gold" / "train.spacy"), "--dev", str(root / "gold" / "dev.spacy"),
            "--config", str(selftrain_run["config"]), "--out", str(tmp_path / "st"), "--lang", "es"]
    res = CliRunner().invoke(app, ["selftrain", str(root / "pipeline"), str(tmp_path / "nowhere.jsonl"), *args])
    assert res.exit_code == 1
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "nowhere.jsonl" in lines[0] and lines[0].startswith("error:")
    # "-": nothing to learn from, the pipeline stays as trained (assembled from the model here)
    res = CliRunner().invoke(app, ["selftrain", str(root / "base" / "model-best"), "-", *args,
                                   "--pipeline-out", str(tmp_path / "pipeline")])
    assert res.exit_code == 0, res.output
    assert "deid_merger" in (tmp_path / "pipeline" / "config.cfg").read_text()
    assert json.loads((tmp_path / "st" / "selftrain_report.json").read_text())["rounds"] == []


def test_a_round_that_loses_token_recall_is_not_kept(selftrain_run, tmp_path, monkeypatch):
    """Recall first: round 1 raises dev strict F1 but leaves more PHI tokens in clear text -> it is
    not kept, and the base pipeline stays the result (rounds scored at the build's recall setting,
    calibrate_recall off; with it on, a round that no o_bias brings back to the recall is not kept
    either: the next test)."""
    import deid_factory.selftrain as st

    run = selftrain_run
    scripted = iter([(0.5, 0.95), (0.7, 0.90)])

    def fake_dev_scores(pipeline_dir, dev_data, recall_bias=None):
        f, recall = next(scripted)
        return {"strict_f": f, "ner_strict_f": 0.0, "token_recall": recall}

    monkeypatch.setattr(st, "dev_scores", fake_dev_scores)
    notes = tmp_path / "notes"
    notes.mkdir()
    for i, r in enumerate(run["unlabeled"][:4]):
        (notes / f"{i}.txt").write_text(r["text"], encoding="utf-8")
    report = st.self_train(run["root"] / "pipeline", notes, run["root"] / "gold" / "train.spacy",
                           run["root"] / "gold" / "dev.spacy", run["config"], tmp_path / "out", lang="es",
                           corpus_dir=tmp_path / "corpus", settings=load_settings(rounds=2, calibrate_recall=False),
                           max_epochs=1, patience=1, seed=0)
    assert [r["accepted"] for r in report["rounds"]] == [False]
    assert report["best_round"] == 0 and "token recall" in report["stopped"]
    # with the guard relaxed, the same round is kept
    scripted = iter([(0.5, 0.95), (0.7, 0.90), (0.6, 0.90)])
    report = st.self_train(run["root"] / "pipeline", notes, run["root"] / "gold" / "train.spacy",
                           run["root"] / "gold" / "dev.spacy", run["config"], tmp_path / "out2", lang="es",
                           corpus_dir=tmp_path / "corpus2", settings=load_settings(rounds=2, max_recall_drop=0.1, calibrate_recall=False),
                           max_epochs=1, patience=1, seed=0)
    assert [r["accepted"] for r in report["rounds"]] == [True, False]


def test_rounds_are_compared_at_equal_recall_and_packaged_with_their_calibrated_o_bias(selftrain_run, tmp_path,
                                                                                        monkeypatch):
    """calibrate_recall: the base scores at the build's recall_bias (2): strict F1 0.80, token recall
    0.97. Round 1 is more precise but, at o_bias 2, leaves more tokens in clear text (0.96); its
    recall grows with o_bias and reaches 0.97 at 4, where its strict F1 (0.86) still beats the
    base's: it is kept and packaged with o_bias 4. Round 2 never gets back to the recall: not kept.
    With calibration off, round 1 is judged at o_bias 2 and is not kept."""
    from thinc.api import Config

    import deid_factory.selftrain as st

    def read_recall_bias(pipeline):
        return Config().from_disk(Path(pipeline) / "config.cfg", interpolate=False)["components"]["deid_tagger"]["o_bias"]

    run = selftrain_run
    scored: list[tuple[str, float]] = []

    def fake_dev_scores(pipeline_dir, dev_data, recall_bias=None):
        where, bias = Path(pipeline_dir).parent.name, float(recall_bias)
        scored.append((where, bias))
        if where == "round-1":
            return {"strict_f": 0.90 - 0.01 * bias, "ner_strict_f": 0.0, "token_recall": 0.95 + 0.005 * bias}
        if where == "round-2":
            return {"strict_f": 0.95, "ner_strict_f": 0.0, "token_recall": 0.90}
        return {"strict_f": 0.80, "ner_strict_f": 0.0, "token_recall": 0.97}

    monkeypatch.setattr(st, "dev_scores", fake_dev_scores)
    notes = tmp_path / "notes"
    notes.mkdir()
    for i, r in enumerate(run["unlabeled"][:4]):
        (notes / f"{i}.txt").write_text(r["text"], encoding="utf-8")
    common = dict(lang="es", max_epochs=1, patience=1, seed=0, recall_bias=2.0)
    report = st.self_train(run["root"] / "pipeline", notes, run["root"] / "gold" / "train.spacy",
                           run["root"] / "gold" / "dev.spacy", run["config"], tmp_path / "out", corpus_dir=tmp_path / "c",
                           pipeline_out=tmp_path / "final", settings=load_settings(rounds=3), **common)
    assert [r["accepted"] for r in report["rounds"]] == [True, False]
    assert report["baseline"]["dev"]["o_bias"] == 2.0
    assert report["rounds"][0]["dev"]["o_bias"] == 4.0
    assert report["rounds"][0]["dev"]["strict_f"] == pytest.approx(0.86)
    assert report["best_round"] == 1 and report["best_dev"]["o_bias"] == 4.0
    assert "token recall" in report["stopped"]
    assert read_recall_bias(tmp_path / "final") == 4.0  # the packaged pipeline decodes as it was judged
    assert max(b for w, b in scored if w == "round-1") <= 12.0
    assert len([1 for w, _ in scored if w == "round-1"]) <= 8  # bisection, not the whole grid
    report = st.self_train(run["root"] / "pipeline", notes, run["root"] / "gold" / "train.spacy",
                           run["root"] / "gold" / "dev.spacy", run["config"], tmp_path / "out2", corpus_dir=tmp_path / "c2",
                           pipeline_out=tmp_path / "final2", settings=load_settings(rounds=3, calibrate_recall=False),
                           **common)
    assert [r["accepted"] for r in report["rounds"]] == [False] and report["rounds"][0]["dev"]["o_bias"] == 2.0
    assert read_recall_bias(tmp_path / "final2") == 2.0


def test_dev_is_scored_as_the_pipeline_would_be_packaged(train_tagger_pipeline, train_corpus):
    """The recall guard compares pipelines at the build's recall setting: dev_scores decodes with the
    given o_bias (a large one redacts tokens the tiny tagger is unsure of, so recall cannot fall and
    the scores differ from the model's own decoding)."""
    from deid_factory.evaluate import load_corpus
    from deid_factory.selftrain import dev_scores

    data = load_corpus(train_corpus / "test.jsonl")
    own = dev_scores(train_tagger_pipeline, data)
    packaged = dev_scores(train_tagger_pipeline, data, recall_bias=30.0)
    assert packaged["token_recall"] >= own["token_recall"]
    assert packaged != own


def test_rounds_start_from_the_pretrained_tok2vec_when_given(selftrain_run, tmp_path, monkeypatch):
    """`--init-tok2vec`: each round's model is trained from the same pretrained weights as the base
    (the training call receives them; without it, none)."""
    import deid_factory.selftrain as st
    import deid_factory.train as train_module

    run = selftrain_run
    root = run["root"]
    calls = []

    class Stop(Exception):
        pass

    def spy_train_model(*args, **kwargs):
        calls.append(kwargs.get("init_tok2vec"))
        raise Stop

    monkeypatch.setattr(train_module, "train_model", spy_train_model)
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "0.txt").write_text(run["unlabeled"][0]["text"], encoding="utf-8")
    for weights in ("", "pretrain/tok2vec.bin"):
        with pytest.raises(Stop):
            st.self_train(root / "base" / "model-best", notes, root / "gold" / "train.spacy", root / "gold" / "dev.spacy",
                          run["config"], tmp_path / f"out{len(calls)}", lang="es", settings=load_settings(rounds=1),
                          max_epochs=1, patience=1, seed=0, init_tok2vec=weights)
    assert calls == ["", "pretrain/tok2vec.bin"]
