"""The synthetic corpus: `read_synth`, the reader of the corpus format "synth" (n notes of a data
folder, the same for the same seed), `generate_records` (that reader through `read_corpus`) and the
corpus summary (templates used, document types, PHI per label)."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import Any, Iterable, Iterator

from ..readers import RawRecord, ReadReport, read_corpus, register_generated
from ..records import Record
from .data import SynthData
from .note import Note


# ----------------------------------------------------------------------------- the corpus
def read_synth(path: Path, lang: str, n: int = 1000, seed: int = 13, report: ReadReport | None = None) -> Iterator[RawRecord]:
    """The reader of the format "synth": `n` notes generated from the data folder `path` ("-": corpora/synth/<lang>).

    The same (data, n, seed, lang) always gives the same records. The corpus' own summary (templates,
    document types) goes to `report.corpus`."""
    from faker import Faker

    data = SynthData.load(lang, None if str(path) == "-" else path)
    rng = random.Random(seed)
    fake = Faker(data.faker_locale)
    fake.seed_instance(seed)
    summary = CorpusSummary(lang, data.template_count())
    if report is not None:
        report.corpus = summary
    for i in range(n):
        raw = Note(data, rng, fake, f"synth-{lang}-{seed}-{i:06d}").build()
        summary.add(raw)
        yield raw


def generate_records(n: int = 1000, seed: int = 13, lang: str = "es", data: SynthData | None = None) -> Iterator[Record]:
    """Yield `n` synthetic records, read like any corpus (`read_corpus(folder, "synth")`): the same (n, seed,
    lang, data folder) always gives the same records. `data`: the loaded data whose folder to use."""
    yield from read_corpus(data.folder if data is not None else "-", "synth", lang=lang, n=n, seed=seed)


class CorpusSummary:
    """Records, tokens, PHI per label and kind, distinct templates used (of those available), document
    types and header layouts of a synthetic corpus, gathered record by record (tokens counted at the end)."""

    def __init__(self, lang: str, templates_available: int | None = None):
        self.lang, self.templates_available = lang, templates_available
        self.texts: list[str] = []
        self.labels: Counter = Counter()
        self.kinds: Counter = Counter()
        self.templates: set[str] = set()
        self.doc_types: Counter = Counter()
        self.layouts: Counter = Counter()

    def add(self, record: Record | RawRecord) -> None:
        self.texts.append(record.text)
        for s in record.spans:
            self.labels[s.label] += 1
            if "kind" in s.attrs:
                self.kinds[f"{s.label}/{s.attrs['kind']}"] += 1
        self.templates.update(record.meta.get("templates", []))
        self.doc_types[record.meta.get("doc_type") or "-"] += 1
        self.layouts[record.meta.get("header_layout") or "-"] += 1

    def to_dict(self) -> dict[str, Any]:
        import spacy

        tokenizer = spacy.blank(self.lang).tokenizer
        report = {
            "records": len(self.texts),
            "distinct_texts": len(set(self.texts)),
            "tokens": sum(len(tokenizer(t)) for t in self.texts),
            "characters": sum(len(t) for t in self.texts),
            "phi_spans": sum(self.labels.values()),
            "phi_per_label": dict(sorted(self.labels.items())),
            "phi_per_kind": dict(sorted(self.kinds.items())),
            "distinct_templates_used": len(self.templates),
            "doc_types": dict(sorted(self.doc_types.items())),
            "header_layouts": dict(sorted(self.layouts.items())),
        }
        if self.templates_available is not None:
            report["templates_available"] = self.templates_available
        return report


def corpus_report(records: Iterable[Record], data: SynthData | None = None, lang: str = "es") -> dict[str, Any]:
    """The CorpusSummary of `records` (with the templates available in `data`, if given)."""
    summary = CorpusSummary(lang, data.template_count() if data is not None else None)
    for record in records:
        summary.add(record)
    return summary.to_dict()


register_generated("synth", read_synth)  # `read_corpus(folder, "synth")` reads this corpus
