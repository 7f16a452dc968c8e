"""bench/bench_multi_tune.py on a tiny pipeline and hand-written inline notes: its scores are the
project's own evaluation (factory/evaluate.py) of the same pipeline on the same notes, a locale with
no pipeline is scored with its pack alone, and the tables carry every set."""

import json
import shutil
import subprocess
import sys

from deid_factory import PROJECT_ROOT
from deid_factory.evaluate import load_corpus, score_corpus

BENCH = PROJECT_ROOT / "bench" / "bench_multi_tune.py"
INLINE_FIXTURE = PROJECT_ROOT / "corpora" / "fixtures" / "inline" / "notas.txt"


def test_bench_multi_tune_reports_the_projects_own_scores(tmp_path, train_pipeline):
    import spacy

    notes = tmp_path / "notes"
    notes.mkdir()
    shutil.copy(INLINE_FIXTURE, notes / "es.txt")
    (notes / "it.txt").write_text("Paziente [Carla Neri](PERSON), nata il [3/4/1950](DATE).\n=====\n"
                                  "Tel. [06 1234 5678](PHONE), email [c.neri@posta.test](EMAIL).\n", encoding="utf-8")
    out = tmp_path / "results"
    ret = subprocess.run([sys.executable, str(BENCH), "--langs", "es,it,de", "--notes", str(notes), "--pipeline",
                          f"es={train_pipeline}", "--pipeline", "it=-", "--no-presidio", "--out", str(out)],
                         capture_output=True, text=True, timeout=600)
    assert ret.returncode == 0, ret.stderr[-3000:]
    assert "de.txt not found" in ret.stderr
    results = json.loads((out / "multi_tune.json").read_text())
    es, it = results["sets"]
    assert (es["name"], es["docs"], es["gold_spans"]) == ("es independent notes", 3, 15)
    assert set(es["systems"]) == {"deid", "ner", "pack"} and set(it["systems"]) == {"pack"}

    data = load_corpus(notes / "es.txt", lang="es")
    expected = score_corpus(spacy.load(train_pipeline), data)["systems"]
    for ours, theirs in (("deid", "combined"), ("ner", "ner"), ("pack", "regex")):
        assert es["systems"][ours] == json.loads(json.dumps(expected[theirs]))
    # the Italian pack alone finds the e-mail address exactly
    assert it["systems"]["pack"]["strict"]["per_label"]["EMAIL"]["r"] == 1.0
    table = (out / "multi_tune.md").read_text()
    assert "| es independent notes | 3 | 15 |" in table and "| it independent notes | 2 | 4 | - |" in table
    assert "| PERSON | " in table
