"""brat standoff reader: `<name>.txt` + `<name>.ann` pairs (as in MEDDOCAN).

Only text-bound annotations (`T` lines) are PHI spans; relations, events, attributes and notes
(`R`, `E`, `A`/`M`, `#`, `N`) are counted and ignored. A discontinuous annotation
(`T1<TAB>LABEL 0 5;9 14<TAB>...`) becomes one span per fragment. Texts are read with newline=""
because brat offsets count characters of the file as written (a CRLF is two characters).
A leading byte order mark (BOM) is dropped from both files. brat itself decodes the .txt as plain
UTF-8, so the BOM is character 0 and every offset counts it (MEDDOCAN's BOM files are annotated
that way); the reader removes it from the text and moves the spans back by one. Files written by
tools that skipped the BOM before counting are recognised by their annotated strings, which then
match without the move (`_drop_bom`). Left in the .ann, a BOM would hide the first annotation
behind an unknown line type.

A bad pair (no .ann, not UTF-8, a malformed annotation line) becomes one unreadable record, so
that the other pairs of the folder are still read; so does an .ann with no .txt next to it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

from ..records import RecordError
from . import BOM, RawRecord, RawSpan, ReadReport, iter_files, record_id_from, strip_bom, unreadable


def parse_ann(ann_path: Path, record_id: str, report: ReadReport | None = None, text: str | None = None) -> list[RawSpan]:
    spans: list[RawSpan] = []
    try:
        lines = strip_bom(ann_path.read_text(encoding="utf-8")).splitlines()
    except UnicodeDecodeError as err:
        raise RecordError(f"{ann_path}: record {record_id!r}: not UTF-8 (byte {err.start})") from None
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{ann_path}:{lineno}: record {record_id!r}"
        kind = line[0]
        if kind != "T":
            if report is not None:
                report.ignored_annotations[{"R": "relation", "E": "event", "A": "attribute", "M": "attribute",
                                            "#": "note", "N": "normalization", "*": "equivalence"}.get(kind, "other")] += 1
            continue
        parts = line.split("\t")
        if len(parts) < 2:
            raise RecordError(f"{where}: text-bound annotation without a tab-separated type and offsets")
        head = parts[1].split(" ", 1)
        if len(head) != 2:
            raise RecordError(f"{where}: annotation {parts[0]} has no offsets")
        label, offsets = head
        fragments = []
        try:
            for frag in offsets.split(";"):
                a, b = frag.split()
                fragments.append((int(a), int(b)))
        except ValueError:
            raise RecordError(f"{where}: annotation {parts[0]} has malformed offsets") from None
        annotated = parts[2] if len(parts) > 2 else None
        if len(fragments) == 1:
            spans.append(RawSpan(fragments[0][0], fragments[0][1], label, annotated, {"ann_id": parts[0]}))
        else:
            # brat joins the fragments' strings with a space: check the joined string here
            if text is not None and annotated is not None and " ".join(text[a:b] for a, b in fragments) != annotated:
                raise RecordError(f"{where}: discontinuous annotation {parts[0]} at {offsets}: annotated string differs from the text")
            for i, (a, b) in enumerate(fragments):
                spans.append(RawSpan(a, b, label, None, {"ann_id": parts[0], "fragment": i}))
    return spans


def _drop_bom(text: str, spans: list[RawSpan]) -> tuple[str, list[RawSpan]]:
    """The text without its leading BOM and the spans moved to match (see the module docstring)."""
    if not text.startswith(BOM):
        return text, spans
    body = text[1:]

    def aligned(candidates: list[RawSpan]) -> bool:
        return all(s.text is None or body[s.start : s.end] == s.text for s in candidates)

    moved = [RawSpan(max(s.start - 1, 0), s.end - 1, s.label, s.text, s.attrs) for s in spans]
    if not aligned(moved) and aligned(spans):
        return body, spans  # offsets were counted after the BOM
    return body, moved  # brat's own convention (also when neither fits: the errors then name the spans)


def _read_pair(txt: Path, ann: Path, rid: str, report: ReadReport | None) -> RawRecord:
    if not ann.exists():
        raise RecordError(f"{txt}: record {rid!r}: no annotation file {ann.name} next to it")
    try:
        with txt.open("r", encoding="utf-8", newline="") as handle:
            text = handle.read()
    except UnicodeDecodeError as err:
        raise RecordError(f"{txt}: record {rid!r}: not UTF-8 (byte {err.start})") from None
    text, spans = _drop_bom(text, parse_ann(ann, rid, report, text))
    return RawRecord(id=rid, text=text, spans=spans, source=str(ann),
                     meta={"source_format": "brat", "source_file": txt.name})


def read_brat(path: Path, lang: str = "es", report: ReadReport | None = None) -> Iterator[RawRecord]:
    """Yield one RawRecord per .txt file that has a .ann next to it (a .txt without .ann is an error)."""
    root = path if path.is_dir() else path.parent
    txt_files = iter_files(path.with_suffix(".txt") if path.suffix == ".ann" else path, ".txt")
    for txt in txt_files:
        rid = record_id_from(txt, root if path.is_dir() else txt.parent)
        ann = txt.with_suffix(".ann")
        try:
            yield _read_pair(txt, ann, rid, report)
        except RecordError as err:
            yield unreadable(rid, str(ann if ann.exists() else txt), err)
    if path.is_dir():
        # annotations whose text is missing would otherwise be ignored without a word
        for ann in sorted(p for p in path.rglob("*.ann") if p.is_file() and not p.with_suffix(".txt").exists()):
            rid = record_id_from(ann, root)
            yield unreadable(rid, str(ann), f"{ann}: record {rid!r}: no text file {ann.with_suffix('.txt').name} next to it")
