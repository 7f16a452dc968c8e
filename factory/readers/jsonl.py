"""JSONL reader for the project's own record format (`{"id", "lang", "text", "spans", "meta"}`).

Labels may be corpus labels when a label map is given; span attributes (annotator, kind...) are kept.
A `text` attribute on a span is the annotated string and is checked against the slice.

Lines are split on "\n" only (a CRLF line ending is whitespace around the JSON; U+2028 and other
Unicode line separators may appear raw inside JSON strings and must not split a record). A leading
byte order mark on the first line is dropped. A bad line (not UTF-8, not JSON, cut short, missing
fields) becomes one unreadable record naming file:line, so the lines after it are still read; an
empty file is reported too (a corpus file with no record is almost always a mistake).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import srsly

from ..records import RecordError
from . import RawRecord, RawSpan, iter_files, strip_bom, unreadable


def jsonl_lines(file: Path) -> Iterator[tuple[int, str | None]]:
    """Stream (line number, line), line None when it is not UTF-8 (the caller names file and line).
    Lines are decoded one by one (a text-mode file decodes in blocks and would blame the wrong line)."""
    with file.open("rb") as handle:
        for lineno, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                yield lineno, None
                continue
            yield lineno, strip_bom(line) if lineno == 1 else line


def whole_json_lines(path: Path) -> tuple[list[Any], int]:
    """The JSON values of path's lines up to the first one cut short (no final newline) or not
    parsing -- what a process killed while appending leaves -- and the byte length of that whole
    prefix. Resumable outputs (translate's records, redact's shard journal) keep the prefix and
    write on from there."""
    values: list[Any] = []
    whole = 0
    with path.open("rb") as handle:
        for raw in handle:
            if not raw.endswith(b"\n"):
                break
            try:
                values.append(json.loads(raw.decode("utf-8")))
            except ValueError:  # not JSON, or not UTF-8 (UnicodeDecodeError is a ValueError)
                break
            whole += len(raw)
    return values, whole


def _record(line: str, where: str, lang: str) -> RawRecord:
    """One line as a RawRecord; RecordError naming file:line (and the id when there is one)."""
    try:
        data = srsly.json_loads(line)
    except ValueError:
        raise RecordError(f"{where}: not valid JSON (a broken or cut-off line)") from None
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


def _id_of(line: str) -> str:
    """The record id of a bad line when the line parses that far, else "?"."""
    try:
        data = srsly.json_loads(line)
    except ValueError:
        return "?"
    return str(data.get("id", "?")) if isinstance(data, dict) else "?"


def read_jsonl(path: Path, lang: str = "es") -> Iterator[RawRecord]:
    for file in iter_files(path, ".jsonl"):
        seen_content = False
        for lineno, line in jsonl_lines(file):
            where = f"{file}:{lineno}"
            if line is None:
                seen_content = True
                yield unreadable("?", where, f"{where}: not UTF-8")
                continue
            if not line.strip():
                continue
            seen_content = True
            try:
                yield _record(line, where, lang)
            except RecordError as err:
                yield unreadable(_id_of(line), where, err)
        if not seen_content:
            yield unreadable("?", str(file), f"{file}: empty file (no records)")
