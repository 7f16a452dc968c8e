"""Benchmark (issue 27, Wanted 1 and 3): the context rules and the merger's plausibility checks, on
and off, on notes the generator did not write.

  sets      MEDDOCAN dev's tune half (es; the project's split, bench/bench_meddocan.py) and, with
            --final, its final half (only ever scored, never chosen on); the independent notes
            ../shared/corpora/multi_tune/<lc>.txt (inline markup, read by the factory's inline reader)
  systems   for each locale, a built pipeline (--pipeline LC=PATH) whose regex pack is replaced by this
            checkout's regex_packs/<lc> (as `factory assemble` would save it), in four settings:
              before   the pack without its rules.yml, the merger's checks off
              rules    + the context rules (Wanted 1)
              checks   + the merger's plausibility checks (Wanted 3), no rules
              both     rules and checks
            and, for a locale without a pipeline, the pack alone (a blank pipeline, write_ents) with and
            without its rules
Metrics: the project's (factory/evaluate.py score_system): strict P/R/F1 micro and per label, token
recall, documents fully redacted.

Run: .venv/bin/python bench/bench_context_rules.py --pipeline es=../main/languages/es/training/pipeline \
        --pipeline fr=../measure/languages/fr/training/pipeline --langs es,fr,it,pt,en,de,nl --out /tmp/rules.json
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

NOTES = ROOT.parent / "shared" / "corpora" / "multi_tune"
MEDDOCAN_DEV = ROOT.parent / "shared" / "corpora" / "meddocan" / "dev"
RULE_FILES = ("rules.yml",)  # without it, the pack folder reads no rule (its word files are read through it)
SETTINGS = {"before": (False, False), "rules": (True, False), "checks": (False, True), "both": (True, True)}


def read_notes(path: Path):
    """(id, text, spans) of an inline-markup file: the factory's reader (factory/readers/inline.py)."""
    try:
        from deid_factory.readers.inline import parse_inline, split_documents
    except ImportError:  # a checkout without the reader yet: a copy of it given by DEID_INLINE_READER
        import importlib.util
        import os
        import types

        spec = importlib.util.spec_from_file_location("inline_copy", os.environ["DEID_INLINE_READER"])
        module = importlib.util.module_from_spec(spec)
        source = Path(os.environ["DEID_INLINE_READER"]).read_text(encoding="utf-8")
        source = source.replace("from ..labels import CANONICAL_LABELS", "from deid_factory.labels import CANONICAL_LABELS")
        source = source.replace("from ..records import RecordError", "from deid_factory.records import RecordError")
        source = source.replace("from . import RawRecord, RawSpan, iter_files, record_id_from, strip_bom, unreadable",
                                "from deid_factory.readers import RawRecord, RawSpan, iter_files, record_id_from, strip_bom, unreadable")
        module = types.ModuleType("inline_copy")
        exec(compile(source, "inline_copy", "exec"), module.__dict__)
        parse_inline, split_documents = module.parse_inline, module.split_documents
    out = []
    for n, (_, marked) in enumerate(split_documents(path.read_text(encoding="utf-8")), start=1):
        text, spans = parse_inline(marked)
        out.append((f"{path.stem}-{n:02d}", text, spans))
    return out


def meddocan_halves() -> dict[str, list]:
    from bench_meddocan import split_dev

    halves = split_dev(MEDDOCAN_DEV)
    return {h: [(r.id, r.text, [(s.start, s.end, s.label) for s in r.spans]) for r in recs] for h, recs in halves.items()}


def pack_copy(lc: str, with_rules: bool, work: Path) -> Path:
    """This checkout's pack of `lc`, with or without its rules, in a folder of its own."""
    dest = work / f"pack_{lc}_{'rules' if with_rules else 'plain'}"
    if dest.exists():
        shutil.rmtree(dest)
    src = ROOT / "regex_packs" / lc
    shutil.copytree(src, dest)
    if not with_rules:
        for name in RULE_FILES:
            (dest / name).unlink(missing_ok=True)
    # the titles a pack or its rules name by a path from regex_packs/<lc>: copied beside it, found first
    titles = ROOT / "languages" / lc / "surrogate_data" / "titles.yml"
    if titles.exists():
        shutil.copy(titles, dest / "titles.yml")
    return dest


def score(nlp, data) -> dict:
    from deid_factory.evaluate import score_system

    texts = [t for _, t, _ in data]
    gold = [g for _, _, g in data]
    pred = [[(e.start_char, e.end_char, e.label_) for e in doc.ents] for doc in nlp.pipe(texts, batch_size=16)]
    s = score_system(texts, gold, pred)
    return {"p": s["strict"]["micro"]["p"], "r": s["strict"]["micro"]["r"], "f": s["strict"]["micro"]["f"],
            "token_recall": s["token_recall"], "token_precision": s["token_precision"],
            "docs_fully_redacted": s["docs_fully_redacted"],
            "per_label": {k: {"f": v["f"], "r": v["r"], "p": v["p"], "n": v["n_gold"]} for k, v in s["strict"]["per_label"].items()}}


def run_locale(lc: str, pipeline: str | None, sets: dict[str, list], work: Path) -> dict:
    import spacy

    from deid_runtime import merger, pack_component  # noqa: F401  (the factories)
    from deid_runtime.regex_pack import RegexPack

    packs = {flag: RegexPack.from_dir(pack_copy(lc, flag, work)) for flag in (False, True)}
    out: dict[str, dict] = {}
    if pipeline:
        nlp = spacy.load(pipeline)
        component = nlp.get_pipe("deid_regex_pack")
        merge = nlp.get_pipe("deid_merger")
        for name, (rules, checks) in SETTINGS.items():
            component.pack = packs[rules]
            if not rules:
                component.pack.rules = None
            merge.checks = checks
            out[name] = {set_name: score(nlp, data) for set_name, data in sets.items()}
    else:
        for name, rules in (("pack", False), ("pack+rules", True)):
            nlp = spacy.blank(lc)
            nlp.add_pipe("deid_regex_pack", config={"pack_dir": str(pack_copy(lc, rules, work))})
            out[name] = {set_name: score(nlp, data) for set_name, data in sets.items()}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--langs", default="es,fr,en,de,it,pt,nl")
    parser.add_argument("--pipeline", action="append", default=[], help="LC=PATH of a built pipeline")
    parser.add_argument("--final", action="store_true", help="also score MEDDOCAN dev's final half (es)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    pipelines = dict(p.split("=", 1) for p in args.pipeline)
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        halves = meddocan_halves() if "es" in args.langs.split(",") else {}
        for lc in args.langs.split(","):
            sets = {"multi_tune": read_notes(NOTES / f"{lc}.txt")}
            if lc == "es":
                sets["meddocan_tune"] = halves["tune"]
                if args.final:
                    sets["meddocan_final"] = halves["final"]
            results[lc] = run_locale(lc, pipelines.get(lc), sets, work)
            print(render({lc: results[lc]}), flush=True)
    if args.out:
        args.out.write_text(json.dumps(results, indent=1), encoding="utf-8")


def render(results: dict) -> str:
    lines = ["| locale | set | system | strict P | R | F1 | token recall | docs fully redacted |", "|---|---|---|---|---|---|---|---|"]
    for lc, systems in results.items():
        for system, sets in systems.items():
            for set_name, s in sets.items():
                lines.append(f"| {lc} | {set_name} | {system} | {s['p']:.3f} | {s['r']:.3f} | {s['f']:.3f} | "
                             f"{s['token_recall']:.4f} | {s['docs_fully_redacted']:.3f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
