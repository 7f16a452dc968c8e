"""Record and Span: the JSONL format between stages, with span validation and atomic writes.

A record is `{"id", "lang", "text", "spans": [{"start", "end", "label", ...}], "meta": {...}}`.
Errors name the file and the record id and offsets, never the text (it is PHI).
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

import srsly

from .labels import CANONICAL_LABELS

# Characters a span must not start or end with (boundaries exclude punctuation and spaces).
TRIM_CHARS = " \t\r\n.,;:!?()[]{}\"'«»“”‘’¿¡/\\-–—*"


class RecordError(ValueError):
    """A record that cannot be used; the message names file, record id and offsets, not text."""


@dataclass
class Span:
    start: int
    end: int
    label: str
    attrs: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"start": self.start, "end": self.end, "label": self.label, **self.attrs}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Span":
        attrs = {k: v for k, v in data.items() if k not in ("start", "end", "label")}
        return cls(int(data["start"]), int(data["end"]), str(data["label"]), attrs)


@dataclass
class Record:
    id: str
    lang: str
    text: str
    spans: list[Span] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "lang": self.lang,
            "text": self.text,
            "spans": [s.to_dict() for s in sorted(self.spans, key=lambda s: (s.start, s.end))],
            "meta": self.meta,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str = "<record>") -> "Record":
        try:
            return cls(
                id=str(data["id"]),
                lang=str(data.get("lang", "")),
                text=str(data["text"]),
                spans=[Span.from_dict(s) for s in data.get("spans", [])],
                meta=dict(data.get("meta", {})),
            )
        except (KeyError, TypeError, ValueError) as err:
            rid = data.get("id", "?") if isinstance(data, dict) else "?"
            raise RecordError(f"{where}: record {rid!r} is malformed ({type(err).__name__}: missing or bad field {err})") from None

    def span_texts(self) -> list[str]:
        return [self.text[s.start : s.end] for s in self.spans]


def trim_span(text: str, start: int, end: int) -> tuple[int, int]:
    """Shrink [start, end) so it neither starts nor ends with punctuation or whitespace."""
    while start < end and text[start] in TRIM_CHARS:
        start += 1
    while end > start and text[end - 1] in TRIM_CHARS:
        end -= 1
    return start, end


def span_problems(record: Record, canonical_only: bool = True) -> list[str]:
    """Describe every problem of the record's spans (empty list: valid). No text in the messages."""
    problems: list[str] = []
    n = len(record.text)
    ordered = sorted(record.spans, key=lambda s: (s.start, s.end))
    for s in ordered:
        where = f"span [{s.start},{s.end}) {s.label}"
        if not (0 <= s.start < s.end <= n):
            problems.append(f"{where}: offsets outside the text (length {n}) or empty")
            continue
        if canonical_only and s.label not in CANONICAL_LABELS:
            problems.append(f"{where}: label is not canonical")
        if "text" in s.attrs and record.text[s.start : s.end] != s.attrs["text"]:
            problems.append(f"{where}: annotated string differs from the text slice")
        if trim_span(record.text, s.start, s.end) != (s.start, s.end):
            problems.append(f"{where}: starts or ends with space/punctuation")
    for a, b in zip(ordered, ordered[1:]):
        if b.start < a.end:
            if a.label != b.label:
                problems.append(f"spans [{a.start},{a.end}) {a.label} and [{b.start},{b.end}) {b.label} overlap with different labels")
            else:
                problems.append(f"spans [{a.start},{a.end}) and [{b.start},{b.end}) {a.label} overlap")
    return problems


def validate_record(record: Record, where: str = "<records>", canonical_only: bool = True) -> None:
    """Raise RecordError naming file and record if any span does not fit its text."""
    problems = span_problems(record, canonical_only=canonical_only)
    if problems:
        raise RecordError(f"{where}: record {record.id!r}: " + "; ".join(problems))


def read_records(path: str | Path) -> Iterator[Record]:
    """Read a JSONL file of records; a broken line raises an error naming file and line."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"records file not found: {path}")
    with path.open("r", encoding="utf-8") as handle:
        for lineno, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                data = srsly.json_loads(line)
            except ValueError:
                raise RecordError(f"{path}:{lineno}: not valid JSON") from None
            if not isinstance(data, dict):
                raise RecordError(f"{path}:{lineno}: a record must be a JSON object")
            yield Record.from_dict(data, where=f"{path}:{lineno}")


def write_records(path: str | Path, records: Iterable[Record]) -> int:
    """Write records atomically (temp file + rename): a crash never leaves a half-written file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    count = 0
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            for record in records:
                handle.write(srsly.json_dumps(record.to_dict()) + "\n")
                count += 1
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return count


def write_text_atomic(path: str | Path, text: str) -> None:
    """Write a text file atomically (temp file in the same folder + rename), creating its folder."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def append_record(handle, record: Record) -> None:
    """Append one record to an open file and flush it to disk, so a crash loses no finished record."""
    handle.write(srsly.json_dumps(record.to_dict()) + "\n")
    handle.flush()
    os.fsync(handle.fileno())
