"""Benchmark: deid-factory against Presidio on the same documents, on one CPU core.

Systems:
  regex_<lc>     blank spaCy + the locale regex pack (the rule half of deid_<lc>)
  deid_<lc>      the packaged pipeline, when `spacy.load("deid_<lc>")` works (NER + pack + merger)
  presidio       presidio-analyzer with its predefined recognizers for the language, on a blank
                 spaCy pipeline of the same language (no statistical model: none can be downloaded here)
Corpus: MEDDOCAN dev from ../shared when present (brat, mapped to canonical labels), else the
embedded synthetic corpus. Metrics are the project's (factory/evaluate.py), on the structured labels
(those both rule systems are meant for) and on all labels; throughput is words/s and docs/s.

Writes bench/results/<lc>.json and bench/results/<lc>.md; the README quotes the table.
Run: .venv/bin/python bench/bench_deid.py [--lang es] [--limit 0]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import re
import sys
import tempfile
import time
from pathlib import Path

import spacy

from deid_factory import PROJECT_ROOT
from deid_factory.evaluate import score_system
from deid_factory.readers import read_corpus
from deid_factory.records import write_text_atomic

RESULTS = PROJECT_ROOT / "bench" / "results"
MEDDOCAN_DEV = PROJECT_ROOT.parent / "shared" / "corpora" / "meddocan" / "dev"
STRUCTURED = {"EMAIL", "PHONE", "URL", "IP", "ID", "DATE", "AGE"}
PRESIDIO_TO_CANONICAL = {
    "EMAIL_ADDRESS": "EMAIL", "PHONE_NUMBER": "PHONE", "IP_ADDRESS": "IP", "URL": "URL", "DATE_TIME": "DATE",
    "ES_NIF": "ID", "ES_NIE": "ID", "IBAN_CODE": "ID", "MEDICAL_LICENSE": "ID", "CREDIT_CARD": "ID",
    "US_SSN": "ID", "UK_NHS": "ID", "FR_NIR": "ID", "PERSON": "PERSON", "LOCATION": "LOCATION",
}
_WORD = re.compile(r"\w+")


def pin_to_one_core() -> str:
    try:
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
        return "pinned to one core"
    except (AttributeError, OSError):
        return "not pinned (no sched_setaffinity)"


def machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, spaCy {spacy.__version__}"


def load_docs(lang: str, limit: int) -> tuple[str, list[tuple[str, str, list]]]:
    if lang == "es" and MEDDOCAN_DEV.exists():
        records = read_corpus(MEDDOCAN_DEV, "brat", label_map="meddocan", lang="es")
        name, docs = "MEDDOCAN dev", [(r.id, r.text, [(s.start, s.end, s.label) for s in r.spans]) for r in records]
    else:
        from deid_factory.synth import generate_records  # the embedded corpus

        name = "embedded synthetic corpus (200 records, seed 99)"
        docs = [(r.id, r.text, [(s.start, s.end, s.label) for s in r.spans]) for r in generate_records(200, seed=99, lang="es")]
    return name, docs[:limit] if limit else docs


def regex_system(lang: str):
    nlp = spacy.blank(lang)
    nlp.add_pipe("deid_regex_pack", config={"pack_dir": str(PROJECT_ROOT / "regex_packs" / lang)})
    return lambda texts: [[(e.start_char, e.end_char, e.label_) for e in d.ents] for d in nlp.pipe(texts)]


def deid_system(lang: str):
    nlp = spacy.load(f"deid_{lang}")
    return lambda texts: [[(e.start_char, e.end_char, e.label_) for e in d.ents] for d in nlp.pipe(texts)]


def presidio_system(lang: str):
    import tldextract

    # Presidio's e-mail/URL recognizers call tldextract, which fetches the public suffix list at
    # first use; use its bundled snapshot instead so the benchmark stays offline.
    tldextract.extract = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)
    from presidio_analyzer import AnalyzerEngine
    from presidio_analyzer.nlp_engine import NlpEngineProvider

    blank_dir = Path(tempfile.mkdtemp(prefix="presidio_blank_"))
    spacy.blank(lang).to_disk(blank_dir)
    engine = NlpEngineProvider(nlp_configuration={
        "nlp_engine_name": "spacy", "models": [{"lang_code": lang, "model_name": str(blank_dir)}]}).create_engine()
    analyzer = AnalyzerEngine(nlp_engine=engine, supported_languages=[lang])

    def run(texts):
        out = []
        for text in texts:
            spans = []
            for r in analyzer.analyze(text, language=lang):
                label = PRESIDIO_TO_CANONICAL.get(r.entity_type)
                if label:
                    spans.append((r.start, r.end, label))
            out.append(spans)
        return out

    return run


def measure(run, texts) -> tuple[list, float]:
    run(texts[:2])  # warm-up: lazy loading is not throughput
    started = time.perf_counter()
    preds = run(texts)
    return preds, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lang", default="es")
    parser.add_argument("--limit", type=int, default=0, help="use only the first N documents (0: all)")
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    pinned = pin_to_one_core()
    corpus_name, docs = load_docs(args.lang, args.limit)
    texts = [t for _, t, _ in docs]
    gold = [g for _, _, g in docs]
    gold_structured = [[s for s in g if s[2] in STRUCTURED] for g in gold]
    words = sum(len(_WORD.findall(t)) for t in texts)

    systems = {f"regex_{args.lang}": regex_system, "presidio": presidio_system}
    try:
        spacy.util.get_package_path(f"deid_{args.lang}")
        systems = {f"deid_{args.lang}": deid_system, **systems}
    except Exception:
        print(f"deid_{args.lang} is not installed: benchmarking the regex pack and Presidio only", file=sys.stderr)

    results = {"machine": machine(), "cpu": pinned, "corpus": corpus_name, "docs": len(texts), "words": words, "systems": {}}
    for name, make in systems.items():
        preds, seconds = measure(make(args.lang), texts)
        preds_structured = [[s for s in p if s[2] in STRUCTURED] for p in preds]
        results["systems"][name] = {
            "seconds": round(seconds, 3),
            "docs_per_s": round(len(texts) / seconds, 2),
            "words_per_s": round(words / seconds, 1),
            "structured": score_system(texts, gold_structured, preds_structured),
            "all_labels": score_system(texts, gold, preds),
        }
        print(f"{name}: {results['systems'][name]['words_per_s']} words/s", file=sys.stderr)
    peer = results["systems"]["presidio"]["words_per_s"]
    for stats in results["systems"].values():
        stats["speed_vs_presidio"] = round(stats["words_per_s"] / peer, 2)

    write_text_atomic(RESULTS / f"{args.lang}.json", json.dumps(results, indent=2))
    write_text_atomic(RESULTS / f"{args.lang}.md", render(results))
    print(render(results))


def render(results: dict) -> str:
    lines = [
        f"Corpus: {results['corpus']} ({results['docs']} documents, {results['words']} words). "
        f"Machine: {results['machine']}; {results['cpu']}.",
        "",
        "| system | words/s | docs/s | speed vs Presidio | structured strict F1 | structured token recall | all-label token recall | docs fully redacted |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, s in results["systems"].items():
        lines.append(
            f"| {name} | {s['words_per_s']:.0f} | {s['docs_per_s']:.1f} | {s['speed_vs_presidio']:.2f}x | "
            f"{s['structured']['strict']['micro']['f']:.3f} | {s['structured']['token_recall']:.3f} | "
            f"{s['all_labels']['token_recall']:.3f} | {s['all_labels']['docs_fully_redacted']:.3f} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
