"""JSONL reader for the project's own record format (`{"id", "lang", "text", "spans", "meta"}`).

Labels may be corpus labels when a label map is given; span attributes (annotator, kind...) are kept.
A `text` attribute on a span is the annotated string and is checked against the slice.

Lines are split and parsed by `records.json_lines`, the factory's one JSONL splitter (its rules:
"\n" only, a leading byte order mark dropped, blank lines skipped, a cut-short last line is invalid
JSON). A bad line (not UTF-8, not JSON, cut short, missing fields) becomes one unreadable record
naming file:line, so the lines after it are still read; an empty file is reported too (a corpus
file with no record is almost always a mistake).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from ..records import NOT_JSON, JsonLine, RecordError, json_lines
from . import RawRecord, RawSpan, iter_files, unreadable


def whole_json_lines(path: Path) -> tuple[list[Any], int]:
    """The JSON values of path's lines up to the first one cut short (no final newline) or not
    parsing -- what a process killed while appending leaves -- and the byte length of that whole
    prefix. Resumable outputs (translate's records, redact's shard journal) keep the prefix and
    write on from there. Blank lines are skipped (their bytes belong to the prefix)."""
    values: list[Any] = []
    whole = 0
    for line in json_lines(path):
        if not line.complete or line.problem:
            break
        if not line.blank:
            values.append(line.value)
        whole += line.size
    return values, whole


def _record(line: JsonLine, lang: str) -> RawRecord:
    """One parsed line as a RawRecord; RecordError naming file:line (and the id when there is one)."""
    where, data = line.where, line.value
    if line.problem == NOT_JSON:
        raise RecordError(f"{where}: {NOT_JSON} (a broken or cut-off line)")
    if line.problem:
        raise RecordError(f"{where}: {line.problem}")
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
        # kept: the detect stage decides on the language; the declaration travels for it to see
        meta.setdefault("declared_lang", data["lang"])
    return RawRecord(id=str(data["id"]), text=data["text"], spans=spans, source=where, meta=meta)


def read_jsonl(path: Path, lang: str = "es") -> Iterator[RawRecord]:
    for file in iter_files(path, ".jsonl"):
        seen_content = False
        for line in json_lines(file):
            if line.blank:
                continue
            seen_content = True
            try:
                yield _record(line, lang)
            except RecordError as err:
                rid = str(line.value.get("id", "?")) if isinstance(line.value, dict) else "?"
                yield unreadable(rid, line.where, err)
        if not seen_content:
            yield unreadable("?", str(file), f"{file}: empty file (no records)")
