"""Benchmark: each locale's built deid_<lc> on independent notes (written apart from this project), beside Presidio.

Notes: NOTES/<lc>.txt for each locale given (default NOTES: ../shared/corpora/multi_tune), inline markup
(documents separated by a line `=====`, PHI as `[text](LABEL)`, the twelve canonical labels), read by
the factory's own reader (factory/readers/inline.py). With --meddocan-final, es is also scored on the
final half of MEDDOCAN dev (the half only ever scored; bench_meddocan.py's split).

Systems, per locale:
  deid_<lc>      the built pipeline (NER + regex pack + merger): --pipeline LC=PATH (a pipeline folder or
                 an installed package name; "-": none), else languages/<lc>/training/pipeline when built,
                 else the installed deid_<lc>; none: the locale is scored with its pack alone
  NER alone      doc.spans["deid_ner"] of the same pass
  pack alone     doc.spans["deid_regex"] of the same pass (without a pipeline: a blank <lc> pipeline with
                 regex_packs/<lc>, bench_deid's regex system)
  Presidio       presidio-analyzer on the language's spaCy model (bench_deid's worker, its model lookup
                 and label map); where no model for the language is installed, Presidio's rules alone on a
                 blank pipeline, named so in the tables
Metrics: the project's (factory/evaluate.py score_system): strict P/R/F1 per label and micro, overlap
F1, token recall (share of gold PHI word tokens covered by any predicted span, labels ignored: the leak
view), documents fully redacted.

Writes bench/results/multi_tune.json and multi_tune.md (docs/results.md quotes the table).
Run: .venv/bin/python bench/bench_multi_tune.py --langs es,fr,it,pt,nl --meddocan-final
     (after `spacy project run build languages/<lc>` for each; `pip install -e '.[bench]'` for Presidio)
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench_deid, bench_meddocan: the peer's worker, the split

from bench_deid import machine, make_regex, presidio_model, run_system  # noqa: E402
from bench_meddocan import git_commit, split_dev, use_meddocan_conventions  # noqa: E402

from deid_factory import PROJECT_ROOT  # noqa: E402
from deid_factory.evaluate import load_corpus, score_corpus, score_system  # noqa: E402
from deid_factory.outputs import write_text_atomic

RESULTS = PROJECT_ROOT / "bench" / "results"
NOTES = PROJECT_ROOT.parent / "shared" / "corpora" / "multi_tune"
MEDDOCAN_DEV = PROJECT_ROOT.parent / "shared" / "corpora" / "meddocan" / "dev"
LABELS = ("PERSON", "AGE", "DATE", "ADDRESS", "LOCATION", "ORGANIZATION", "PROFESSION", "PHONE", "EMAIL", "URL", "IP", "ID")
SYSTEM_NAMES = ("deid", "ner", "pack", "presidio")


def find_pipeline(lang: str, given: dict[str, str]) -> str | None:
    """The pipeline of a locale: given, else the project's built one, else the installed package."""
    if lang in given:
        return None if given[lang] == "-" else given[lang]
    built = PROJECT_ROOT / "languages" / lang / "training" / "pipeline"
    if (built / "config.cfg").exists():
        return str(built)
    import spacy

    try:
        spacy.util.get_package_path(f"deid_{lang}")
    except Exception:
        return None
    return f"deid_{lang}"


def _shown(path: str) -> str:
    """A pipeline path relative to the project when it is inside it (tables are committed)."""
    try:
        return str(Path(path).resolve().relative_to(PROJECT_ROOT))
    except (ValueError, OSError):
        return path


def score_pipeline(pipeline: str, data: list, meddocan: bool = False) -> tuple[dict, dict]:
    """The systems deid / NER alone / pack alone of one pass of the pipeline, and what it is."""
    import spacy

    from deid_runtime import merger, pack_component  # noqa: F401  (register the factories)

    nlp = spacy.load(pipeline)
    if meddocan:
        use_meddocan_conventions(nlp)
    scored = score_corpus(nlp, data)
    about = {"pipeline": _shown(pipeline), "components": nlp.pipe_names, "version": nlp.meta.get("version"),
             "throughput": scored["throughput"]}
    systems = scored["systems"]
    return {"deid": systems["combined"], "ner": systems["ner"], "pack": systems["regex"]}, about


def score_pack(lang: str, data: list) -> dict:
    texts, gold = [t for _, t, _ in data], [g for _, _, g in data]
    run, _ = make_regex(lang, None)
    return score_system(texts, gold, run(texts))


def score_presidio(lang: str, data: list) -> tuple[dict | None, str]:
    texts, gold = [t for _, t, _ in data], [g for _, _, g in data]
    measured = run_system("presidio", lang, texts, None)
    if measured is None:
        return None, "presidio failed (see stderr)"
    preds = [[tuple(s) for s in p] for p in measured["preds"]]
    return score_system(texts, gold, preds), measured["system"]


def score_set(name: str, lang: str, data: list, pipeline: str | None, with_presidio: bool, meddocan: bool = False) -> dict:
    entry = {"name": name, "lang": lang, "docs": len(data), "gold_spans": sum(len(g) for _, _, g in data), "systems": {},
             "described": {}}
    if pipeline:
        systems, about = score_pipeline(pipeline, data, meddocan)
        entry["systems"].update(systems)
        entry["pipeline"] = about
        entry["described"].update({"deid": f"deid_{lang} ({_shown(pipeline)})", "ner": f"NER of deid_{lang} (doc.spans['deid_ner'])",
                                   "pack": f"regex_packs/{lang} inside deid_{lang} (doc.spans['deid_regex'])"})
    else:
        print(f"{lang}: no built pipeline (languages/{lang}/training/pipeline) nor installed deid_{lang}: pack alone",
              file=sys.stderr)
        entry["systems"]["pack"] = score_pack(lang, data)
        entry["described"]["pack"] = f"blank {lang} + regex_packs/{lang}"
    if with_presidio:
        scored, described = score_presidio(lang, data)
        if scored is not None:
            entry["systems"]["presidio"] = scored
            has_model = presidio_model(lang) is not None
            entry["described"]["presidio"] = described if has_model else f"{described}: Presidio's rules only"
            entry["presidio_model"] = has_model
    return entry


def benchmark(langs: list[str], notes: Path, pipelines: dict[str, str], meddocan_final: bool,
              with_presidio: bool) -> dict:
    results = {"date": dt.date.today().isoformat(), "commit": git_commit(), "machine": machine(),
               "notes": str(notes), "sets": []}
    for lang in langs:
        path = notes / f"{lang}.txt"
        if not path.exists():
            print(f"{path} not found: {lang} skipped", file=sys.stderr)
            continue
        data = load_corpus(path, lang=lang)
        pipeline = find_pipeline(lang, pipelines)
        results["sets"].append(score_set(f"{lang} independent notes", lang, data, pipeline, with_presidio))
        print(f"{lang}: done", file=sys.stderr)
    if meddocan_final and "es" in langs:
        if not MEDDOCAN_DEV.is_dir():
            print(f"{MEDDOCAN_DEV} not found: MEDDOCAN final half skipped", file=sys.stderr)
        else:
            final = split_dev(MEDDOCAN_DEV)["final"]
            data = [(r.id, r.text, [(s.start, s.end, s.label) for s in r.spans]) for r in final]
            results["sets"].append(score_set("es MEDDOCAN dev, final half", "es", data, find_pipeline("es", pipelines),
                                             with_presidio, meddocan=True))
    return results


# --------------------------------------------------------------------------- tables
def _pct(x) -> str:
    return "-" if x is None else f"{100 * x:.1f}"


SHORT = {"deid": "deid_{lc}", "ner": "NER alone", "pack": "pack alone", "presidio": "Presidio"}


def summary_table(results: dict) -> list[str]:
    """One line per set: deid_<lc>, its pack alone, Presidio (strict F1 / token recall / docs fully redacted)."""
    lines = ["| set | docs | gold spans | deid strict P | R | F1 | token recall | docs fully redacted "
             "| pack alone F1 / token recall | Presidio F1 / token recall / docs fully redacted |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for s in results["sets"]:
        sys_ = s["systems"]
        d = sys_.get("deid")
        st = d["strict"]["micro"] if d else {}
        pack = sys_.get("pack")
        pres = sys_.get("presidio")
        pres_cell = "-" if not pres else (f"{_pct(pres['strict']['micro']['f'])} / {_pct(pres['token_recall'])} / "
                                          f"{_pct(pres['docs_fully_redacted'])}"
                                          + ("" if s.get("presidio_model") else " (rules only: no spaCy model)"))
        lines.append(f"| {s['name']} | {s['docs']} | {s['gold_spans']} | {_pct(st.get('p'))} | {_pct(st.get('r'))} "
                     f"| {_pct(st.get('f'))} | {_pct(d['token_recall']) if d else '-'} "
                     f"| {_pct(d['docs_fully_redacted']) if d else '-'} "
                     f"| {_pct(pack['strict']['micro']['f'])} / {_pct(pack['token_recall'])} | {pres_cell} |")
    return lines


def render(results: dict) -> str:
    lines = [f"Machine: {results['machine']}. Commit {results['commit']}, {results['date']}. "
             f"Notes: `{Path(results['notes']).name}/<lc>.txt`.", "", "## Summary", ""]
    lines += summary_table(results)
    for s in results["sets"]:
        lc = s["lang"]
        lines += ["", f"## {s['name']} ({s['docs']} documents, {s['gold_spans']} gold spans)", "",
                  "| system | strict P | strict R | strict F1 | overlap F1 | token recall | docs fully redacted |",
                  "|---|---|---|---|---|---|---|"]
        for key in SYSTEM_NAMES:
            m = s["systems"].get(key)
            if m is None:
                continue
            st = m["strict"]["micro"]
            lines.append(f"| {SHORT[key].format(lc=lc)} | {_pct(st['p'])} | {_pct(st['r'])} | {_pct(st['f'])} "
                         f"| {_pct(m['overlap']['micro']['f'])} | {_pct(m['token_recall'])} | {_pct(m['docs_fully_redacted'])} |")
        present = [k for k in SYSTEM_NAMES if k in s["systems"]]
        lines += ["", "Per label, strict (deid: P / R / F1; the others: F1):", "",
                  "| label | gold | " + " | ".join(SHORT[k].format(lc=lc) for k in present) + " |",
                  "|---|---|" + "---|" * len(present)]
        for label in LABELS:
            ref = next(iter(s["systems"].values()))["strict"]["per_label"].get(label, {})
            n_gold = ref.get("n_gold", 0)
            if not n_gold and not any(label in s["systems"][k]["strict"]["per_label"] for k in present):
                continue
            cells = []
            for k in present:
                per = s["systems"][k]["strict"]["per_label"].get(label)
                if per is None:
                    cells.append("-")
                elif k == "deid":
                    cells.append(f"{_pct(per['p'])} / {_pct(per['r'])} / {_pct(per['f'])}")
                else:
                    cells.append(_pct(per["f"]))
            lines.append(f"| {label} | {n_gold} | " + " | ".join(cells) + " |")
        lines += ["", "Systems: " + "; ".join(f"{SHORT[k].format(lc=lc)} = {s['described'][k]}" for k in present) + "."]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--langs", default="es,fr,en,de,it,pt,nl", help="comma-separated locales")
    parser.add_argument("--notes", type=Path, default=NOTES, help="folder of <lc>.txt inline-markup notes")
    parser.add_argument("--pipeline", action="append", default=[], metavar="LC=PATH",
                        help="the pipeline of a locale (folder or installed package; '-': none, the pack alone); "
                             "default: the built or installed one")
    parser.add_argument("--meddocan-final", action="store_true", help="also score es on MEDDOCAN dev's final half")
    parser.add_argument("--no-presidio", action="store_true", help="do not run Presidio")
    parser.add_argument("--out", type=Path, default=RESULTS, help="results folder (default bench/results)")
    args = parser.parse_args()
    import importlib.util

    with_presidio = not args.no_presidio and importlib.util.find_spec("presidio_analyzer") is not None
    if not args.no_presidio and not with_presidio:
        print("presidio-analyzer is not installed (pip install -e '.[bench]'): no peer to compare with", file=sys.stderr)
    pipelines = dict(p.split("=", 1) for p in args.pipeline)
    langs = [lc.strip() for lc in args.langs.split(",") if lc.strip()]
    if not args.notes.is_dir():
        print(f"{args.notes} not found: nothing to benchmark")
        return
    results = benchmark(langs, args.notes, pipelines, args.meddocan_final, with_presidio)
    write_text_atomic(args.out / "multi_tune.json", json.dumps(results, indent=2))
    write_text_atomic(args.out / "multi_tune.md", render(results))
    print(render(results))


if __name__ == "__main__":
    main()
