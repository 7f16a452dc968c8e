"""Corpus readers: brat standoff, project JSONL, spaCy DocBin, i2b2 XML, inline markup (notes with
`[text](LABEL)` spans, inline.py), and the embedded synthetic corpus.

Every reader yields `RawRecord`s (text + spans with the corpus' own labels and, where the format has
it, the annotated string). `normalize()` turns one into a validated `Record` with canonical labels:

- labels are mapped with the corpus label map; labels mapped to null are dropped and counted; a label
  missing from the map is an error (a typo in a map must not silently lose PHI);
- offsets must lie inside the text and the annotated string must equal the text slice;
- spans are trimmed of surrounding spaces/punctuation (counted), exact duplicates are dropped (counted),
  overlapping spans of one label are an error, overlapping spans of different labels are an error;
- a record with an empty (or whitespace-only) text is an error: it carries nothing to learn from;
- a bad record raises `RecordError` naming file and record, or (on_error="skip") is skipped and its id
  and reason (offsets and labels only, never text) go to the report.

Readers never raise for one bad file or line: they yield a RawRecord with `error` set, so that with
on_error="skip" the records after it are still read (a generator that raised cannot be resumed).
A leading UTF-8 byte order mark (BOM) is an encoding marker, not text: no record text starts with
one. Where the BOM comes before anything offsets count (a JSONL or .ann file, an XML declaration)
it is simply dropped; a brat .txt's BOM is counted by brat's offsets, so brat.py moves the spans.

`read_corpus(path, fmt, label_map, lang)` dispatches on the format and returns the records; the
`ReadReport` passed in holds the counts. The synthetic corpus ("synth", synth/corpus.py) is one more reader:
its notes are generated (from the data folder `path`, "-" for corpora/synth/<lang>) rather than read,
and go through the same checks as any corpus.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from ..labels import CANONICAL_LABELS, load_label_map
from ..records import BOM, Record, RecordError, Span, span_problems, trim_span

FORMATS = ("brat", "jsonl", "docbin", "i2b2", "inline", "synth")
# Formats whose labels are canonical by definition: a label map is ignored.
CANONICAL_FORMATS = ("inline",)
# Formats whose records are generated, not read: `n` and `seed` say how many and which; INPUT is
# optional (a data folder); their labels are canonical, so a label map is ignored.
GENERATED_FORMATS = ("synth",)
# the module that generates (and registers) each generated format, relative to the factory package
GENERATOR_MODULES = {"synth": ".synth"}


@dataclass
class RawSpan:
    start: int
    end: int
    label: str
    text: str | None = None  # the annotated string as the corpus wrote it (None when the format has none)
    attrs: dict[str, Any] = field(default_factory=dict)


@dataclass
class RawRecord:
    id: str
    text: str
    spans: list[RawSpan]
    source: str  # file (and line/document) the record came from, for error messages
    meta: dict[str, Any] = field(default_factory=dict)
    error: str | None = None  # why the reader could not read it (names file and record, never text)


def unreadable(rid: str, source: str, error: RecordError | str) -> RawRecord:
    """The placeholder a reader yields for a file, line or record it could not read."""
    return RawRecord(id=rid, text="", spans=[], source=source, error=str(error))


def strip_bom(text: str) -> str:
    """Drop a leading byte order mark (only where no offset counts it, see the module docstring)."""
    return text[1:] if text.startswith(BOM) else text


def check_language(lang: str) -> None:
    """Raise ValueError for a language code spaCy does not know (a typo such as "sp" or "zz" would
    otherwise go unnoticed until a later stage). A code spaCy knows but with no languages/<lc>/
    locale is fine here: extraction needs no locale, the stages that do say so themselves."""
    from spacy.util import get_lang_class

    try:
        get_lang_class(lang)
    except (ImportError, ValueError, KeyError):
        raise ValueError(f"unknown language code {lang!r} (not a language spaCy knows)") from None


@dataclass
class ReadReport:
    """What a reader did: counts, and the ids (never text) of skipped records with their reasons."""

    records_read: int = 0
    records_ok: int = 0
    skipped: list[dict[str, str]] = field(default_factory=list)
    spans_read: int = 0
    spans_kept: int = 0
    dropped_labels: Counter = field(default_factory=Counter)  # corpus label -> spans dropped (mapped to null)
    trimmed: int = 0
    duplicates: int = 0
    labels: Counter = field(default_factory=Counter)  # canonical label -> spans kept
    ignored_annotations: Counter = field(default_factory=Counter)  # e.g. brat relations/attributes/notes
    corpus: Any = None  # a generated corpus' own summary (`to_dict()`), e.g. synth.CorpusSummary

    def to_dict(self) -> dict[str, Any]:
        return {
            "records_read": self.records_read,
            "records_ok": self.records_ok,
            "records_skipped": len(self.skipped),
            "skipped": self.skipped,
            "spans_read": self.spans_read,
            "spans_kept": self.spans_kept,
            "spans_dropped_by_label": dict(sorted(self.dropped_labels.items())),
            "spans_trimmed": self.trimmed,
            "spans_duplicate_dropped": self.duplicates,
            "labels": dict(sorted(self.labels.items())),
            "ignored_annotations": dict(sorted(self.ignored_annotations.items())),
        }


def normalize(raw: RawRecord, lang: str, label_map: dict[str, str | None] | None, report: ReadReport) -> Record:
    """Map, check and trim the spans of one raw record; raise RecordError naming file and record."""
    where = f"{raw.source}: record {raw.id!r}"
    text = raw.text
    if not text.strip():
        raise RecordError(f"{where}: empty text")
    n = len(text)
    spans: list[Span] = []
    problems: list[str] = []
    for rs in raw.spans:
        report.spans_read += 1
        loc = f"span [{rs.start},{rs.end}) {rs.label}"
        if label_map is not None and not (rs.label in CANONICAL_LABELS and rs.label not in label_map):
            # (a canonical label passes as it is: a project JSONL read with a corpus' label map)
            # hierarchical labels ("NAME/PATIENT" in i2b2) fall back to their category ("NAME")
            key = rs.label if rs.label in label_map else rs.label.split("/", 1)[0]
            if key not in label_map:
                problems.append(f"{loc}: label is not in the label map")
                continue
            label = label_map[key]
            if label is None:
                report.dropped_labels[rs.label] += 1
                continue
        else:
            label = rs.label
            if label not in CANONICAL_LABELS:
                problems.append(f"{loc}: label is not canonical and no label map was given")
                continue
        if not (0 <= rs.start < rs.end <= n):
            problems.append(f"{loc}: offsets outside the text (length {n}) or empty")
            continue
        if rs.text is not None and text[rs.start : rs.end] != rs.text:
            problems.append(f"{loc}: annotated string differs from the text slice")
            continue
        start, end = trim_span(text, rs.start, rs.end)
        if start >= end:
            problems.append(f"{loc}: nothing left after trimming spaces/punctuation")
            continue
        if (start, end) != (rs.start, rs.end):
            report.trimmed += 1
        attrs = dict(rs.attrs)
        if label_map is not None and rs.label != label:
            attrs.setdefault("source_label", rs.label)  # the finer corpus label, kept as an attribute
        spans.append(Span(start, end, label, attrs))
    # exact duplicates (same offsets and label) are harmless: drop and count them
    unique: dict[tuple[int, int, str], Span] = {}
    for s in sorted(spans, key=lambda s: (s.start, s.end, s.label)):
        key = (s.start, s.end, s.label)
        if key in unique:
            report.duplicates += 1
            continue
        unique[key] = s
    record = Record(id=raw.id, lang=lang, text=text, spans=list(unique.values()), meta=dict(raw.meta))
    problems.extend(span_problems(record))
    if problems:
        raise RecordError(f"{where}: " + "; ".join(problems))
    for s in record.spans:
        report.labels[s.label] += 1
    report.spans_kept += len(record.spans)
    return record


_GENERATED_READERS: dict[str, Callable[..., Iterator[RawRecord]]] = {}


def register_generated(fmt: str, reader: Callable[..., Iterator[RawRecord]]) -> None:
    """The reader of a generated corpus format, given by the module that generates it (synth/corpus.py
    depends on the readers' record types, so the readers do not import it back)."""
    if fmt not in GENERATED_FORMATS:
        raise ValueError(f"{fmt!r} is not a generated corpus format ({', '.join(GENERATED_FORMATS)})")
    _GENERATED_READERS[fmt] = reader


def _reader(fmt: str) -> Callable[..., Iterator[RawRecord]]:
    if fmt == "brat":
        from .brat import read_brat

        return read_brat
    if fmt == "jsonl":
        from .jsonl import read_jsonl

        return read_jsonl
    if fmt == "docbin":
        from .docbin import read_docbin

        return read_docbin
    if fmt == "i2b2":
        from .i2b2 import read_i2b2

        return read_i2b2
    if fmt == "inline":
        from .inline import read_inline

        return read_inline
    if fmt in GENERATED_FORMATS:
        if fmt not in _GENERATED_READERS:
            # the generator registers itself when imported; it is imported here by name, at call
            # time, because it imports the readers' record types at module level
            import importlib

            importlib.import_module(GENERATOR_MODULES[fmt], __package__.rpartition(".")[0])
        return _GENERATED_READERS[fmt]
    raise ValueError(f"unknown corpus format {fmt!r} (one of {', '.join(FORMATS)})")


def iter_raw(path: str | Path, fmt: str, lang: str, report: ReadReport | None = None, n: int = 1000,
             seed: int = 13) -> Iterator[RawRecord]:
    """The raw records of one corpus, before label mapping and checks (`n`, `seed`: of a generated one)."""
    kwargs: dict[str, Any] = {"lang": lang}
    if fmt == "brat" and report is not None:
        kwargs["report"] = report
    if fmt in GENERATED_FORMATS:
        kwargs.update(n=n, seed=seed, report=report)
    yield from _reader(fmt)(Path(path), **kwargs)


def read_corpus(path: str | Path | None, fmt: str, label_map: str | Path | dict | None = None, lang: str = "es",
                on_error: str = "raise", report: ReadReport | None = None, n: int = 1000, seed: int = 13) -> Iterator[Record]:
    """Yield validated records with canonical labels from a corpus in `fmt`.

    `label_map`: a map name in corpora/label_maps/ ("meddocan", "i2b2"), a YAML path, a dict, or None
    (labels must then already be canonical). `on_error`: "raise" (default) or "skip" (count + report).
    `fmt="synth"` generates `n` notes of the embedded corpus with `seed` (`path`: its data folder, None
    or "-" for corpora/synth/<lang>); they are checked like the records of any corpus.
    """
    if on_error not in ("raise", "skip"):
        raise ValueError("on_error must be 'raise' or 'skip'")
    check_language(lang)
    report = report if report is not None else ReadReport()
    if fmt in GENERATED_FORMATS:
        path, label_map = path if path is not None else "-", None
    if fmt in CANONICAL_FORMATS:
        label_map = None
    mapping = load_label_map(label_map) if isinstance(label_map, (str, Path)) else label_map
    seen: set[str] = set()
    for raw in iter_raw(path, fmt, lang, report, n=n, seed=seed):
        report.records_read += 1
        try:
            if raw.error is not None:
                raise RecordError(raw.error)
            if raw.id in seen:
                raise RecordError(f"{raw.source}: record {raw.id!r}: duplicate record id")
            record = normalize(raw, lang, mapping, report)
        except RecordError as err:
            if on_error == "raise":
                raise
            report.skipped.append({"id": raw.id, "source": raw.source, "reason": str(err)})
            continue
        seen.add(raw.id)
        report.records_ok += 1
        yield record


def guess_format(path: str | Path) -> str:
    """The reader for a corpus path: a folder of .ann files is brat, .jsonl records, .spacy a
    DocBin, .xml (or a folder of .xml files) i2b2; a .txt file (or a folder of them) with no .ann
    beside it and with `](LABEL)` markup is inline, else brat (which then says the .ann is missing)."""
    from .inline import looks_inline

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"corpus not found: {path}")
    if path.is_dir():
        if any(path.rglob("*.ann")):
            return "brat"
        if any(path.rglob("*.xml")):
            return "i2b2"
        if any(path.rglob("*.jsonl")):
            return "jsonl"
        if any(path.rglob("*.txt")) and looks_inline(path):
            return "inline"
        raise ValueError(f"{path}: cannot tell the corpus format (no .ann, .xml or .jsonl files); pass --format")
    if path.suffix == ".txt" and not path.with_suffix(".ann").exists() and looks_inline(path):
        return "inline"
    by_suffix = {".jsonl": "jsonl", ".spacy": "docbin", ".xml": "i2b2", ".ann": "brat", ".txt": "brat"}
    if path.suffix in by_suffix:
        return by_suffix[path.suffix]
    raise ValueError(f"{path}: cannot tell the corpus format from its name; pass --format")


def iter_files(path: Path, suffix: str) -> list[Path]:
    """One file, or every file with `suffix` under a folder (sorted, so ids and order are stable)."""
    if not path.exists():
        raise FileNotFoundError(f"corpus not found: {path}")
    if path.is_dir():
        files = sorted(p for p in path.rglob(f"*{suffix}") if p.is_file())
        if not files:
            raise FileNotFoundError(f"{path}: no *{suffix} files in this folder")
        return files
    return [path]


def record_id_from(path: Path, root: Path) -> str:
    """A stable record id from a file path relative to the corpus root, without suffix."""
    rel = path.relative_to(root) if root.is_dir() else Path(path.name)
    return rel.with_suffix("").as_posix()


__all__ = ["FORMATS", "GENERATED_FORMATS", "CANONICAL_FORMATS", "RawRecord", "RawSpan", "ReadReport", "normalize", "read_corpus", "register_generated", "iter_raw", "iter_files", "guess_format",
           "check_language", "strip_bom", "unreadable"]
