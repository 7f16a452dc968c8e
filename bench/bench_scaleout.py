"""Benchmark: `factory redact` throughput with 1 worker (in this process) and with a local Dask
cluster of 2 worker processes (--workers 2), on the same notes, same pipeline.

The pipeline: a built deid pipeline when --pipeline is given (languages/es/training/pipeline after
`spacy project run build languages/es`), else a stand-in of the same cost per token built here in
seconds: spaCy's default CNN NER (tok2vec + transition NER, `spacy.blank("es")` + "ner"), initialised
untrained, with the es regex pack and the merger (its predictions are noise; its CPU cost per token
is that of a trained model of the same size). The notes are generated (synthetic, no corpus read).
Wall time of redact_files() over a JSONL file, jsonl output, tag mode, --lang es; the Dask run
includes starting and closing its local cluster, which a user pays too.

Writes bench/results/scaleout.json and scaleout.md; the README quotes them.
Run: .venv/bin/python bench/bench_scaleout.py [--notes 2000] [--repeat 2] [--pipeline DIR]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_deid import machine  # noqa: E402

from deid_factory.outputs import write_text_atomic

RESULTS = Path(__file__).resolve().parent / "results"
NOTE = ("Paciente de {age} años que acude a consulta de control el {day} de marzo. Teléfono de contacto "
        "6{phone:08d}, correo paciente{i}@correo.es. Refiere dolor abdominal desde hace {age} días, sin "
        "fiebre ni vómitos. Exploración física sin hallazgos relevantes. Se solicita analítica y ecografía.\n")


def stand_in_pipeline(path: Path) -> Path:
    import spacy

    from deid_factory.labels import CANONICAL_LABELS
    from deid_factory.package import default_pack_dir
    from deid_runtime import merger, pack_component  # noqa: F401
    from deid_runtime.regex_pack import RegexPack

    nlp = spacy.blank("es")
    ner = nlp.add_pipe("ner")
    for label in CANONICAL_LABELS:
        ner.add_label(label)
    nlp.initialize()
    nlp.add_pipe("deid_regex_pack", config={"write_ents": False}).pack = RegexPack.from_dir(default_pack_dir("es"))
    nlp.add_pipe("deid_merger")
    nlp.to_disk(path)
    return path


def notes_file(path: Path, n: int) -> tuple[Path, int]:
    words = 0
    with path.open("w", encoding="utf-8") as handle:
        for i in range(n):
            text = NOTE.format(age=20 + i % 60, day=1 + i % 28, phone=12345678 + i, i=i) * (1 + i % 4)
            words += len(text.split())
            handle.write(json.dumps({"id": f"n{i:05d}", "text": text}, ensure_ascii=False) + "\n")
    return path, words


def run(notes: Path, out: Path, pipeline: Path, workers: int) -> float:
    from deid_factory.redact_engine import redact_files
    from deid_factory.scaleout import ClusterOptions

    start = time.perf_counter()
    report = redact_files([notes], out, "jsonl", "tag", pipelines=[str(pipeline)], lang="es", progress=False,
                          cluster=ClusterOptions(workers=workers))
    seconds = time.perf_counter() - start
    assert report["complete"], report
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--pipeline", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        pipeline = args.pipeline or stand_in_pipeline(tmp / "stand_in")
        notes, words = notes_file(tmp / "notes.jsonl", args.notes)
        best: dict[int, float] = {}
        outputs: dict[int, bytes] = {}
        for _ in range(args.repeat):  # interleaved, the fastest of each kept (a shared machine)
            for workers in (1, 2):
                out = tmp / f"out{workers}.jsonl"
                seconds = run(notes, out, pipeline, workers)
                best[workers] = min(best.get(workers, seconds), seconds)
                outputs[workers] = out.read_bytes()
        assert outputs[1] == outputs[2], "2 workers wrote other bytes than 1"
    rows = [{"workers": w, "seconds": round(s, 2), "docs_per_s": round(args.notes / s, 1), "words_per_s": round(words / s),
             "speed_up": round(best[1] / s, 2)} for w, s in sorted(best.items())]
    result = {"date": dt.date.today().isoformat(), "machine": machine(), "load_average": os.getloadavg(),
              "notes": args.notes, "words": words, "pipeline": str(args.pipeline) if args.pipeline else
              "stand-in: untrained spaCy CNN NER (tok2vec + ner) + es regex pack + merger", "repeat": args.repeat, "rows": rows}
    RESULTS.mkdir(exist_ok=True)
    write_text_atomic(RESULTS / "scaleout.json", json.dumps(result, indent=2) + "\n")
    lines = [f"# factory redact: 1 worker vs a local Dask cluster of 2 ({result['date']})", "",
             f"Machine: {result['machine']}; load average at the end {tuple(round(x, 1) for x in result['load_average'])}.",
             f"{args.notes} notes, {words} words, pipeline: {result['pipeline']}; wall time, fastest of {args.repeat}, "
             "cluster start-up included; both outputs byte-identical.", "",
             "| workers | seconds | docs/s | words/s | speed-up |", "|---|---|---|---|---|"]
    lines += [f"| {r['workers']} | {r['seconds']} | {r['docs_per_s']} | {r['words_per_s']} | {r['speed_up']}x |" for r in rows]
    write_text_atomic(RESULTS / "scaleout.md", "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
