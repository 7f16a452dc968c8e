"""Benchmark (issue 25): does redaction leave clinical facts alone, and at what cost in recall?

  notes     the issue's note and one fictitious note per language (bench/data/clinical_notes.yml)
            through `factory redact` in tag, mask and surrogate modes, at the pipeline's own recall
            setting and at `--recall-bias high`: how many of the note's clinical facts (doses,
            units, lab values, schedules, durations, drug names) come out unchanged, how many
            names are left, and what the run's summary counts. The notes of other languages run
            through the given deid_es with that language's regex pack in its place (the only
            trained NER at hand: a real model that does not know the language, a hard case).
  meddocan  token recall of the pipeline on MEDDOCAN dev's final half at both settings (the
            project's split: bench/bench_meddocan.py), and in surrogate mode the spans written as
            "[LABEL?]" instead of a surrogate; on the tune half, the gold PHI tokens that a
            clinical fact covers (what the merger's rule could cost).

The pipeline's regex pack is replaced by the one of `--packs` (a project's regex_packs/ folder), as
`factory assemble` would save it: run once with this checkout's packs and once with those of the
code before (and that code on PYTHONPATH) to compare.

Run: .venv/bin/python bench/bench_clinical_facts.py notes --pipeline languages/es/training/pipeline --out /tmp/cf
     .venv/bin/python bench/bench_clinical_facts.py meddocan --pipeline languages/es/training/pipeline
Results go to stdout as JSON (and a table).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
NOTES = HERE / "data" / "clinical_notes.yml"
MODES = ("tag", "mask", "surrogate")
SETTINGS = ("default", "high")
KEY = b"bench key for issue 25, 32 bytes"
PACK_FILES = ("pack.yml", "context.yml", "clinical.yml", "drugs.txt", "checks.yml")


def pipeline_with_pack(pipeline: Path, pack_dir: Path, out: Path) -> Path:
    """A copy of `pipeline` whose saved regex pack is the folder `pack_dir`'s files."""
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(pipeline, out)
    saved = out / "deid_regex_pack"
    for name in PACK_FILES:
        (saved / name).unlink(missing_ok=True)
        if (pack_dir / name).exists():
            shutil.copy(pack_dir / name, saved / name)
    return out


def _count(text: str, value: str) -> int:
    return len(re.findall(rf"(?<!\w){re.escape(value)}(?!\w)", text))


def run_notes(pipeline: Path, packs: Path, out: Path) -> list[dict]:
    import yaml

    notes = yaml.safe_load(NOTES.read_text(encoding="utf-8"))
    (out / "key").parent.mkdir(parents=True, exist_ok=True)
    (out / "key").write_bytes(KEY)
    rows = []
    for lc, items in notes.items():
        pipe = pipeline_with_pack(pipeline, packs / lc, out / f"pipeline_{lc}")
        folder = out / f"notes_{lc}"
        folder.mkdir(parents=True, exist_ok=True)
        for note in items:
            (folder / f"{note['id']}.txt").write_text(note["text"], encoding="utf-8")
        for setting in SETTINGS:
            for mode in MODES:
                dest = out / f"out_{lc}_{setting}_{mode}"
                report = out / f"report_{lc}_{setting}_{mode}.json"
                shutil.rmtree(dest, ignore_errors=True)
                cmd = [sys.executable, "-m", "deid_factory", "redact", str(folder), "--out", str(dest), "--mode", mode,
                       "--lang", "es", "--pipelines", str(pipe), "--quiet", "--report", str(report)]
                if setting == "high":
                    cmd += ["--recall-bias", "high"]
                if mode == "surrogate":
                    cmd += ["--key-file", str(out / "key")]
                done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=os.environ.copy())
                if done.returncode != 0:
                    raise SystemExit(f"factory redact failed ({done.returncode}): {done.stderr[-2000:]}")
                summary = done.stdout.strip().splitlines()[-1]
                redaction = json.loads(report.read_text(encoding="utf-8")).get("redaction")
                for note in items:
                    text = (dest / f"{note['id']}.txt").read_text(encoding="utf-8")
                    changed = [f for f in note["facts"] if _count(text, f) < _count(note["text"], f)]
                    left = [n for n in note["names"] if _count(text, n)]
                    rows.append({"lang": lc, "note": note["id"], "setting": setting, "mode": mode,
                                 "facts": len(note["facts"]), "facts_changed": len(changed), "changed": changed,
                                 "names": len(note["names"]), "names_left": len(left), "left": left,
                                 "output": text if note["id"] == "issue25" else None,
                                 "summary": summary, "redaction": redaction})
    return rows


def run_meddocan(pipeline: Path, packs: Path) -> dict:
    import spacy

    sys.path.insert(0, str(HERE))
    from bench_meddocan import SHARED, split_dev
    from deid_factory import locale as _locale  # noqa: F401  (registers the project's surrogate data)
    from deid_factory.evaluate import gold_tokens, leak_scores
    from deid_runtime import merger, pack_component  # noqa: F401
    from deid_runtime.biluo_tagger import RECALL_PRESETS
    from deid_runtime.regex_pack import RegexPack

    halves = split_dev(SHARED / "dev")
    nlp = spacy.load(pipeline)
    nlp.get_pipe("deid_regex_pack").pack = RegexPack.from_dir(packs / "es")
    try:
        from deid_runtime.redact import UNSURE, redact
    except ImportError:  # the code before issue 25: no checks to count
        redact = UNSURE = None
    out = {}
    for setting, bias in (("default", nlp.get_pipe("deid_tagger").o_bias), ("high", RECALL_PRESETS["high"])):
        nlp.get_pipe("deid_tagger").o_bias = float(bias)
        for half in ("tune", "final"):
            records = halves[half]
            texts = [r.text for r in records]
            gold = [[(s.start, s.end, s.label) for s in r.spans] for r in records]
            docs = list(nlp.pipe(texts, batch_size=16))
            pred = [[(e.start_char, e.end_char, e.label_) for e in d.ents] for d in docs]
            entry = {"o_bias": float(bias), **leak_scores(texts, gold, pred)}
            if "deid_clinical" in (docs[0].spans if docs else {}):
                facts = [[(s.start_char, s.end_char) for s in d.spans["deid_clinical"]] for d in docs]
                entry["clinical_facts"] = sum(len(f) for f in facts)
                entry["gold_phi_tokens_in_facts"] = sum(
                    1 for text, g, f in zip(texts, gold, facts) for t in gold_tokens(text, g)
                    if any(s < t[1] and t[0] < e for s, e in f))
            if redact is not None:
                unsure, by_label, replaced = 0, {}, 0
                for r, spans in zip(records, pred):
                    done = redact(r.text, spans, "surrogate", lang="es", doc_id=r.id, key=KEY)
                    counts = done.counts()
                    replaced += sum(counts.get("surrogate", {}).values())
                    for label, n in counts.get(UNSURE, {}).items():
                        unsure += n
                        by_label[label] = by_label.get(label, 0) + n
                entry["surrogate_replaced"] = replaced
                entry["surrogate_unsure"] = unsure
                entry["surrogate_unsure_by_label"] = dict(sorted(by_label.items()))
            out[f"{half}/{setting}"] = entry
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("what", choices=("notes", "meddocan"))
    parser.add_argument("--pipeline", type=Path, required=True)
    parser.add_argument("--packs", type=Path, default=ROOT / "regex_packs", help="regex_packs/ folder whose packs replace the pipeline's")
    parser.add_argument("--out", type=Path, default=Path("/tmp/bench_clinical_facts"))
    args = parser.parse_args()
    if args.what == "notes":
        rows = run_notes(args.pipeline.resolve(), args.packs.resolve(), args.out.resolve())
        print(json.dumps(rows, ensure_ascii=False, indent=1))
        print("| lang | setting | mode | facts changed | names left |", file=sys.stderr)
        for r in rows:
            print(f"| {r['lang']} {r['note']} | {r['setting']} | {r['mode']} | {r['facts_changed']}/{r['facts']} "
                  f"{r['changed']} | {r['names_left']}/{r['names']} {r['left']} |", file=sys.stderr)
    else:
        print(json.dumps(run_meddocan(args.pipeline.resolve(), args.packs.resolve()), indent=1))


if __name__ == "__main__":
    main()
