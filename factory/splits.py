"""Train/dev/test splits by record, written as spaCy DocBins whose entities equal the JSONL spans.

A record goes to one split only (seeded shuffle of the record ids, default 80/10/10). Every span
must fall on token boundaries, otherwise the DocBin would silently hold different entities than the
JSONL: tokens are cut at span boundaries where needed (the report counts such records), and a record
that still cannot be represented (overlapping spans) is left out of *both* outputs and counted.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any, Iterable, Mapping

from .records import Record
from .outputs import write_bytes_atomic

SPLITS = ("train", "dev", "test")


def parse_ratios(spec: str | Mapping[str, float] | None, default: Mapping[str, float] | None = None) -> dict[str, float]:
    """'0.8,0.1,0.1' or 'train=0.8,dev=0.1,test=0.1' or a mapping -> normalised ratios."""
    if not spec:
        spec = default or {"train": 0.8, "dev": 0.1, "test": 0.1}
    if isinstance(spec, str):
        items = [x.strip() for x in spec.split(",") if x.strip()]
        if all("=" in x for x in items):
            spec = {k.strip(): float(v) for k, v in (x.split("=", 1) for x in items)}
        elif len(items) == 3:
            spec = dict(zip(SPLITS, (float(x) for x in items)))
        else:
            raise ValueError(f"bad split ratios {spec!r}: expected 'train=0.8,dev=0.1,test=0.1' or '0.8,0.1,0.1'")
    ratios = {k: float(spec.get(k, 0.0)) for k in SPLITS}
    if set(spec) - set(SPLITS) or any(v < 0 for v in ratios.values()) or sum(ratios.values()) <= 0:
        raise ValueError(f"bad split ratios {dict(spec)}: use train/dev/test shares >= 0")
    total = sum(ratios.values())
    return {k: v / total for k, v in ratios.items()}


def assign_splits(ids: Iterable[str], ratios: Mapping[str, float], seed: int = 0) -> dict[str, str]:
    """Seeded shuffle of the sorted ids, cut by the ratios (largest-remainder rounding)."""
    ordered = sorted(set(ids))
    random.Random(seed).shuffle(ordered)
    n = len(ordered)
    exact = {k: ratios[k] * n for k in SPLITS}
    counts = {k: int(exact[k]) for k in SPLITS}
    for k in sorted(SPLITS, key=lambda k: exact[k] - counts[k], reverse=True)[: n - sum(counts.values())]:
        counts[k] += 1
    result: dict[str, str] = {}
    start = 0
    for k in SPLITS:
        for rid in ordered[start : start + counts[k]]:
            result[rid] = k
        start += counts[k]
    return result


def _split_at(nlp, doc, cuts: set[int]):
    """The same text with tokens also cut at `cuts` (e.g. 'NHC:0450932' -> 'NHC:' + '0450932')."""
    from bisect import bisect_right

    from spacy.tokens import Doc

    # doc.text is rebuilt from every token on each access, and a scan of all cuts per token is
    # tokens x cuts: both once, or a long record costs seconds (quadratic)
    text, ordered = doc.text, sorted(cuts)
    words: list[str] = []
    spaces: list[bool] = []
    for token in doc:
        start, end = token.idx, token.idx + len(token.text)
        inner = ordered[bisect_right(ordered, start):bisect_right(ordered, end - 1)]
        bounds = [start, *inner, end]
        for i, (a, b) in enumerate(zip(bounds, bounds[1:])):
            words.append(text[a:b])
            spaces.append(bool(token.whitespace_) and i == len(bounds) - 2)
    return Doc(nlp.vocab, words=words, spaces=spaces)


def record_to_doc(nlp, record: Record):
    """A Doc with the record's spans as entities, or None when that is impossible (overlaps).

    Where a span boundary falls inside a token of the language's tokenizer ("NHC:0450932" written
    without a space), the token is cut there, so the DocBin entities equal the JSONL spans exactly;
    spaCy's alignment then decides at training time what the pipeline's own tokens can learn."""
    doc = nlp.make_doc(record.text)
    spans = sorted(record.spans, key=lambda s: (s.start, s.end))
    if any(doc.char_span(s.start, s.end, alignment_mode="strict") is None for s in spans):
        doc = _split_at(nlp, doc, {c for s in spans for c in (s.start, s.end)})
        if doc.text != record.text:  # pragma: no cover - _split_at keeps the text by construction
            return None
    ents = []
    for span in spans:
        ent = doc.char_span(span.start, span.end, label=span.label, alignment_mode="strict")
        if ent is None:
            return None
        ents.append(ent)
    try:
        doc.ents = ents
    except ValueError:  # overlapping entities cannot be NER gold
        return None
    return doc


def write_splits(records: list[Record], out_dir: str | Path, spacy_lang: str, ratios: Mapping[str, float], seed: int = 0,
                 fixed: Mapping[str, str] | None = None, train_extra: list[Record] = ()) -> tuple[dict[str, Any], list[Record]]:
    """Write out_dir/{train,dev,test}.spacy; return (report, records kept with meta['split'] set).

    fixed: record id -> split for records whose split is given (a user's dev set; on the native
    path every source note trains); the others are split by `ratios`. train_extra: records that
    only ever train (surrogate copies of training notes)."""
    fixed = dict(fixed or {})
    if set(fixed.values()) - set(SPLITS):
        raise ValueError(f"unknown split in {sorted(set(fixed.values()))}")
    from spacy.tokens import DocBin

    from deid_runtime.tokenization import blank as phi_blank

    out_dir = Path(out_dir)  # created by the first write (write_bytes_atomic), which names it if that fails
    # the same tokenizer rules as the assembled deid_<lang>: training sees the runtime's tokens
    nlp = phi_blank(spacy_lang)
    docs: dict[str, Any] = {}
    misaligned: list[str] = []
    retokenized = 0
    extra_ids = {r.id for r in train_extra}
    fixed.update({rid: "train" for rid in extra_ids})
    for record in [*records, *train_extra]:
        doc = record_to_doc(nlp, record)
        if doc is not None and len(doc) != len(nlp.make_doc(record.text)):
            retokenized += 1
        if doc is None:
            misaligned.append(record.id)
        else:
            docs[record.id] = doc
    assignment = assign_splits([rid for rid in docs if rid not in fixed], ratios, seed)
    assignment.update({rid: split for rid, split in fixed.items() if rid in docs})
    bins = {k: DocBin(store_user_data=False) for k in SPLITS}
    final: list[Record] = []
    for record in [*records, *train_extra]:
        if record.id not in docs:
            continue
        split = assignment[record.id]
        bins[split].add(docs[record.id])
        record.meta["split"] = split
        final.append(record)
    for k in SPLITS:
        # atomic (unique temp file + rename): a reader never sees half a DocBin, and a full disk
        # leaves the previous DocBin in place
        write_bytes_atomic(out_dir / f"{k}.spacy", bins[k].to_bytes())
    counts = {k: len(bins[k]) for k in SPLITS}
    return {"ratios": dict(ratios), "seed": seed, "counts": counts, "fixed": len(fixed), "train_extra": len(extra_ids & set(docs)),
            "retokenized_records": retokenized, "misaligned_dropped": len(misaligned), "misaligned_ids": misaligned}, final


def read_docbin_spans(path: str | Path, spacy_lang: str) -> list[tuple[str, list[tuple[int, int, str]]]]:
    """(text, [(start, end, label)]) for every doc of a DocBin: what training will see."""
    import spacy
    from spacy.tokens import DocBin

    nlp = spacy.blank(spacy_lang)
    return [(d.text, [(e.start_char, e.end_char, e.label_) for e in d.ents]) for d in DocBin().from_disk(path).get_docs(nlp.vocab)]
