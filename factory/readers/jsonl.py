"""JSONL reader for the project's own record format (`{"id", "lang", "text", "spans", "meta"}`).

Labels may be corpus labels when a label map is given; span attributes (annotator, kind...) are kept.
A `text` attribute on a span is the annotated string and is checked against the slice.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import srsly

from ..records import RecordError
from . import RawRecord, RawSpan, iter_files


def _lines(file: Path) -> Iterator[tuple[int, str]]:
    """Stream (line number, line); a line that is not UTF-8 is an error naming file and line.
    Lines are decoded one by one (a text-mode file decodes in blocks and would blame the wrong line)."""
    with file.open("rb") as handle:
        for lineno, raw in enumerate(handle, start=1):
            try:
                yield lineno, raw.decode("utf-8")
            except UnicodeDecodeError:
                raise RecordError(f"{file}:{lineno}: not UTF-8") from None


def read_jsonl(path: Path, lang: str = "es") -> Iterator[RawRecord]:
    for file in iter_files(path, ".jsonl"):
        for lineno, line in _lines(file):
            if not line.strip():
                continue
            where = f"{file}:{lineno}"
            try:
                data = srsly.json_loads(line)
            except ValueError:
                raise RecordError(f"{where}: not valid JSON") from None
            if not isinstance(data, dict) or "text" not in data or "id" not in data:
                rid = data.get("id", "?") if isinstance(data, dict) else "?"
                raise RecordError(f"{where}: record {rid!r}: a record needs at least `id` and `text`")
            if not isinstance(data["text"], str):
                raise RecordError(f"{where}: record {data['id']!r}: `text` must be a string")
            spans = []
            for i, s in enumerate(data.get("spans") or []):
                try:
                    attrs = {k: v for k, v in s.items() if k not in ("start", "end", "label", "text")}
                    spans.append(RawSpan(int(s["start"]), int(s["end"]), str(s["label"]), s.get("text"), attrs))
                except (KeyError, TypeError, ValueError, AttributeError):
                    raise RecordError(f"{where}: record {data['id']!r}: span #{i} needs integer start/end and a label") from None
            meta = dict(data.get("meta") or {})
            if data.get("lang") and data.get("lang") != lang:
                meta.setdefault("declared_lang", data["lang"])
            yield RawRecord(id=str(data["id"]), text=data["text"], spans=spans, source=where, meta=meta)
