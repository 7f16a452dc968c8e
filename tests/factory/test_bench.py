"""bench/bench_deid.py on a tiny built project: it runs without ../shared (MEDDOCAN skipped cleanly),
measures each system in its own process, and its scores are the project's own evaluation of the same
pipeline on the same documents (the benchmark reports what the product does, not a re-implementation)."""

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import spacy

from deid_factory import PROJECT_ROOT
from deid_factory.evaluate import load_corpus, score_system

BENCH = PROJECT_ROOT / "bench" / "bench_deid.py"


def _tiny_project(root: Path, train_corpus: Path, train_pipeline: Path) -> Path:
    """The two things the benchmark reads from a built language project: the held-out split and the pipeline."""
    project = root / "es"
    (project / "corpus" / "final").mkdir(parents=True)
    shutil.copy(train_corpus / "test.spacy", project / "corpus" / "final" / "test.spacy")
    shutil.copytree(train_pipeline, project / "training" / "pipeline")
    return project


def test_bench_runs_without_shared_and_reports_the_projects_own_scores(tmp_path, train_corpus, train_pipeline):
    project = _tiny_project(tmp_path, train_corpus, train_pipeline)
    out = tmp_path / "results"
    ret = subprocess.run([sys.executable, str(BENCH), "--langs", "es", "--project", f"es={project}",
                          "--meddocan", str(tmp_path / "no_shared"), "--out", str(out)],
                         capture_output=True, text=True, timeout=600)
    assert ret.returncode == 0, ret.stderr[-3000:]
    assert "MEDDOCAN part skipped" in ret.stderr

    results = json.loads((out / "deid.json").read_text())
    assert [c["name"] for c in results["corpora"]] == [f"es held-out ({project})"]
    systems = results["corpora"][0]["systems"]
    has_presidio = importlib.util.find_spec("presidio_analyzer") is not None
    assert set(systems) == {"deid_es", "regex_es"} | ({"presidio_es"} if has_presidio else set())
    if not has_presidio:
        assert "presidio-analyzer is not installed" in ret.stderr

    docs = load_corpus(project / "corpus" / "final" / "test.spacy")
    texts, gold = [t for _, t, _ in docs], [g for _, _, g in docs]
    nlp = spacy.load(project / "training" / "pipeline")
    preds = [[(e.start_char, e.end_char, e.label_) for e in d.ents] for d in nlp.pipe(texts)]
    expected = score_system(texts, gold, preds)
    deid = systems["deid_es"]
    assert deid["all_labels"] == json.loads(json.dumps(expected))  # same pipeline, same documents, same scores
    assert deid["docs_per_s"] > 0 and deid["words_per_s"] > deid["docs_per_s"]
    # memory is the worker's own: loading a pipeline adds to what Python + spaCy took before it
    assert 0 < deid["rss_before_load_mb"] < deid["rss_loaded_mb"] <= deid["peak_rss_mb"]
    # the rule half alone finds fewer PHI tokens than NER + rules
    assert systems["regex_es"]["all_labels"]["token_recall"] <= deid["all_labels"]["token_recall"]

    goals = {g["goal"]: g for g in results["goals"]}
    recall_goal = goals["token PHI recall >= 0.99"]
    assert recall_goal["met"] == (expected["token_recall"] >= 0.99)
    assert any(g.startswith("peak RSS") for g in goals)
    report = (out / "deid.md").read_text()
    assert f"### es held-out ({project})" in report and "| deid_es |" in report and "### Goals" in report
    assert (out / "deid.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bench_meddocan_scores_a_plain_ner_pipeline_by_its_doc_ents(tmp_path):
    """The plain-spaCy baseline has no deid_* components: its doc.ents are its NER output. (A bug once
    scored it from the empty doc.spans["deid_ner"] and reported 0.000 for a model that works.)"""
    from deid_factory.records import Record, Span, write_records

    spec = importlib.util.spec_from_file_location("bench_meddocan", PROJECT_ROOT / "bench" / "bench_meddocan.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    nlp = spacy.blank("es")
    ruler = nlp.add_pipe("entity_ruler")
    ruler.add_patterns([{"label": "PERSON", "pattern": "Elvira"}])
    nlp.to_disk(tmp_path / "plain")
    text = "Paciente Elvira ingresa hoy."
    write_records(tmp_path / "half.jsonl", [Record(id="d1", lang="es", text=text, spans=[Span(9, 15, "PERSON")])])
    scores = bench.score(tmp_path / "plain", {"final": tmp_path / "half.jsonl"})
    assert scores["final"]["ner"]["strict"]["micro"]["f"] == 1.0
    assert "combined" not in scores["final"]
