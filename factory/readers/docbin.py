"""spaCy DocBin reader (`.spacy` files): text + `doc.ents` (or a `doc.spans` group) as spans.

Record ids come from `doc.user_data["id"]` when the writer stored one, else `<file stem>-<index>`.
A file that is empty, cut short or not a DocBin becomes one unreadable record (id: the file stem),
so the other files of a folder are still read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

from ..records import DOCBIN_ERRORS
from . import RawRecord, RawSpan, iter_files, unreadable


def read_docbin(path: Path, lang: str = "es", spans_key: str | None = None) -> Iterator[RawRecord]:
    import spacy
    from spacy.tokens import DocBin

    vocab = spacy.blank(lang).vocab
    for file in iter_files(path, ".spacy"):
        if file.stat().st_size == 0:
            yield unreadable(file.stem, str(file), f"{file}: empty file (not a spaCy DocBin)")
            continue
        try:
            docbin = DocBin().from_disk(file)
        except DOCBIN_ERRORS as err:
            yield unreadable(file.stem, str(file), f"{file}: not a spaCy DocBin, or cut short ({type(err).__name__})")
            continue
        for i, doc in enumerate(docbin.get_docs(vocab)):
            rid = str(doc.user_data.get("id", f"{file.stem}-{i:06d}")) if doc.user_data else f"{file.stem}-{i:06d}"
            group = doc.spans[spans_key] if spans_key else doc.ents
            spans = [RawSpan(s.start_char, s.end_char, s.label_, None, {}) for s in group]
            meta = {"source_format": "docbin", "source_file": file.name, "doc_index": i}
            yield RawRecord(id=rid, text=doc.text, spans=spans, source=f"{file}#{i}", meta=meta)
