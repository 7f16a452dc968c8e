"""Record and Span: the JSONL format between stages, with span validation, and record files read
line by line and written whole (the atomic writing itself is outputs.py's).

A record is `{"id", "lang", "text", "spans": [{"start", "end", "label", ...}], "meta": {...}}`.
Errors name the file and the record id and offsets, never the text (it is PHI).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

import srsly
# trim_span is the runtime's (one boundary set): a model learns the boundaries it is scored on
from deid_runtime.text import BOUNDARY_CHARS, trim_span  # noqa: F401  (re-exported: records.trim_span)
# the one YAML mapping loader is the runtime's (regex packs read it too): records.read_yaml_mapping
from deid_runtime.yamlio import read_yaml_mapping  # noqa: F401  (re-exported)

from .labels import CANONICAL_LABELS
from .outputs import append_line, write_chunks_atomic


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


BOM = "\ufeff"  # byte order mark, as decoded from UTF-8 (Windows editors write one)
_BOM_BYTES = BOM.encode("utf-8")

NOT_UTF8 = "not UTF-8"
NOT_JSON = "not valid JSON"


@dataclass(frozen=True)
class JsonLine:
    """One line of a JSONL file, as `json_lines` reads it."""

    path: Path
    lineno: int  # from 1
    size: int  # bytes the line takes in the file: its "\n" and, on line 1, a BOM included
    complete: bool  # ends with "\n" (False: the last line of a file without a final newline, or cut short by a crash)
    blank: bool = False  # nothing but white space: no value, no problem
    value: Any = None  # the parsed JSON value (any JSON type: the caller checks it)
    problem: str | None = None  # NOT_UTF8 or NOT_JSON: why the line has no value (never its content: PHI)

    @property
    def where(self) -> str:
        """file:line, for messages (never the line's content: it may hold PHI)."""
        return f"{self.path}:{self.lineno}"


def json_lines(path: str | Path) -> Iterator[JsonLine]:
    """Every line of a JSONL file, parsed: the one JSONL splitter of the factory (records between
    stages, corpus JSONL, redact's inputs, the notes of self-training, resumable outputs and journals,
    spaCy's training log). The rules, for every caller:

    * lines are split on "\n" only, read and decoded one by one (a file of any size; a line that is
      not UTF-8 costs that line only, and is named by its own number): str.splitlines() would also
      split inside a record at a U+2028 or U+0085, which JSON allows raw in strings, and a CRLF's
      "\r" is white space around the JSON;
    * a UTF-8 byte order mark (BOM) at the start of the file is dropped (its bytes count in `size`);
    * a blank line (white space only) is yielded with `blank` set, for callers that count bytes, and
      is otherwise skipped by every caller;
    * a line that is not UTF-8 or not valid JSON (srsly's parser: strict JSON) is yielded with
      `problem` set; what to do is the caller's: raise naming `where`, skip it, or stop there;
    * the last line may lack its "\n" (`complete` False): a file whose last line only lacks the
      newline is read like any other, and a last line cut short by a crash does not parse (NOT_JSON).
      Resumable outputs (`readers.jsonl.whole_json_lines`) stop at an incomplete line even when it
      parses, since their writer would glue the next line onto it.

    Opening the file may raise OSError (FileNotFoundError...), left to the caller."""
    path = Path(path)
    with path.open("rb") as handle:
        for lineno, raw in enumerate(handle, start=1):
            size, complete = len(raw), raw.endswith(b"\n")
            if lineno == 1 and raw.startswith(_BOM_BYTES):
                raw = raw[len(_BOM_BYTES):]
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                yield JsonLine(path, lineno, size, complete, problem=NOT_UTF8)
                continue
            if not line.strip():
                yield JsonLine(path, lineno, size, complete, blank=True)
                continue
            try:
                value = srsly.json_loads(line)
            except ValueError:
                yield JsonLine(path, lineno, size, complete, problem=NOT_JSON)
                continue
            yield JsonLine(path, lineno, size, complete, value=value)


def json_objects(path: str | Path, what: str = "a record") -> Iterator[JsonLine]:
    """The lines of a JSONL file that holds one JSON object a line, read strictly: blank lines are
    skipped, and a line that is not UTF-8, not JSON or not an object (`what` must be one) raises
    RecordError naming file:line. Each line's `value` is its object."""
    for line in json_lines(path):
        if line.blank:
            continue
        if line.problem:
            raise RecordError(f"{line.where}: {line.problem}")
        if not isinstance(line.value, dict):
            raise RecordError(f"{line.where}: {what} must be a JSON object")
        yield line


def read_records(path: str | Path) -> Iterator[Record]:
    """Read a JSONL file of records (`json_objects`); a broken line raises an error naming file and line."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"records file not found: {path}")
    for line in json_objects(path):
        yield Record.from_dict(line.value, where=line.where)


# What spaCy's DocBin().from_disk raises for a file that is not a DocBin (measured on random bytes,
# text, JSON, a zip, a cut-short file, and msgpack of another shape): ValueError (zlib and msgpack
# decoding errors, a truncated file), KeyError (a msgpack map without DocBin's keys), TypeError (msgpack
# that is not a map, or fields of the wrong type), plus OSError for a file that cannot be read. Only
# these make a file "not a DocBin"; any other exception is a bug and propagates.
DOCBIN_ERRORS: tuple[type[BaseException], ...] = (ValueError, KeyError, TypeError, OSError)


def write_records(path: str | Path, records: Iterable[Record]) -> int:
    """Write records atomically (temp file + rename): a crash never leaves a half-written file."""
    count = 0

    def lines() -> Iterator[bytes]:
        nonlocal count
        for record in records:
            yield (srsly.json_dumps(record.to_dict()) + "\n").encode("utf-8")
            count += 1

    write_chunks_atomic(path, lines())
    return count


def append_record(handle, record: Record) -> None:
    """Append one record to an open file and flush it to disk, so a crash loses no finished record."""
    append_line(handle, srsly.json_dumps(record.to_dict()))
