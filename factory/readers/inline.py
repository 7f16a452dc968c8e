"""Inline-markup reader: several notes in one text file, each PHI span written in the text.

    Paciente: [Ana Gil](PERSON), ingresa el [3 de marzo](DATE).
    =====
    The next document ...

Documents are separated by a line holding only `=====`; each PHI span is `[surface text](LABEL)`
with one of the twelve canonical labels; outside the markup the text is the note as written. The
record text is the document with the markup removed (its blank first and last lines dropped), and
each span's offsets count characters of that text. This is the form of hand-annotated tuning notes
(a note can be read and corrected in any editor), so the labels are canonical by definition: a label
map does not apply.

Brackets that are not markup stay text: a pair not followed by `(LABEL)` ("[sic]", "[1]"), a
parenthesis after a bracket pair that holds no label word ("[a](n=3)"), a `]` with no `[` before it.
Markup may nest ("[[Ana](PERSON) Gil]..." gives both spans, which the record checks then reject as
overlapping) and spans may touch. What cannot be read is an error naming the file, the document
number and the line, never the text:
  - a label that is not one of the twelve ("[Ana](NAME)", "[Ana](Person)": a word in capitals, or
    a label's name in other case, alone in the parentheses);
  - a `[` never closed in its document, a `](LABEL` with no `)`, a `](LABEL)` with no `[`;
  - an empty span ("[](DATE)"), an empty document between two separators.
A bad document becomes one unreadable record; the documents after it are still read.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterator

from ..labels import CANONICAL_LABELS
from ..records import RecordError
from . import RawRecord, RawSpan, iter_files, record_id_from, strip_bom, unreadable

SEPARATOR = "====="
# what may follow a bracket pair: "(" + a word; it is a label when the word is written like one
_AFTER_BRACKET = re.compile(r"\(([A-Za-z][A-Za-z_]*)(\))?")
# a closing marker: how a file is recognised as inline markup (readers.guess_format)
MARKUP = re.compile(r"\]\((?:" + "|".join(sorted(CANONICAL_LABELS)) + r")\)")


def _label_after(marked: str, close: int, where) -> tuple[str, int] | None:
    """(label, offset after the markup) when the `]` at `close` ends a span, None when the bracket
    pair is text; RecordError for a label word that is not a canonical label or not closed."""
    m = _AFTER_BRACKET.match(marked, close + 1)
    if not m:
        return None
    word, closed = m.group(1), m.group(2)
    if word in CANONICAL_LABELS:
        if not closed:
            raise RecordError(f"{where(close)}: label {word} has no closing ')'")
        return word, m.end()
    if closed and word.upper() in CANONICAL_LABELS:
        raise RecordError(f"{where(close)}: label {word[:20]!r} must be written in capitals ({word.upper()})")
    if closed and word.isupper():
        raise RecordError(f"{where(close)}: unknown label {word[:20]!r} (not one of the twelve canonical labels)")
    return None  # "(n=3)", "(see above)", "(date unknown)": text after an ordinary bracket pair


def parse_inline(marked: str, where=lambda offset: f"offset {offset}") -> tuple[str, list[tuple[int, int, str]]]:
    """The text without markup and its (start, end, label) spans. `where(offset)` names a place of
    `marked` in error messages (file, document, line)."""
    # 1. pair the brackets, innermost first, as written
    opened: list[int] = []
    pairs: list[tuple[int, int]] = []
    for i, ch in enumerate(marked):
        if ch == "[":
            opened.append(i)
        elif ch == "]":
            if opened:
                pairs.append((opened.pop(), i))
            else:
                m = _AFTER_BRACKET.match(marked, i + 1)
                if m and m.group(1).isupper():
                    raise RecordError(f"{where(i)}: ']({m.group(1)[:20]})' closes a span that no '[' opened")
    if opened:
        raise RecordError(f"{where(opened[0])}: '[' is never closed in this document")
    # 2. the pairs followed by (LABEL) are spans; their markup characters are dropped
    markup = [False] * len(marked)
    found: list[tuple[int, int, str]] = []  # (open, close, label) in the marked text
    for open_, close in pairs:
        after = _label_after(marked, close, where)
        if after is None:
            continue
        label, end = after
        if close == open_ + 1:
            raise RecordError(f"{where(open_)}: empty {label} span")
        markup[open_] = True
        for i in range(close, end):
            markup[i] = True
        found.append((open_, close, label))
    # 3. the plain text, and where each marked offset lands in it
    plain: list[str] = []
    position = [0] * (len(marked) + 1)
    for i, ch in enumerate(marked):
        position[i] = len(plain)
        if not markup[i]:
            plain.append(ch)
    position[len(marked)] = len(plain)
    spans = sorted((position[open_ + 1], position[close], label) for open_, close, label in found)
    return "".join(plain), spans


def split_documents(text: str) -> list[tuple[int, str]]:
    """(first line number, marked text) of each document; the blank lines around a document are not
    part of it, and nothing before the first or after the last separator is no document."""
    docs: list[tuple[int, list[str]]] = [(1, [])]
    for lineno, line in enumerate(text.split("\n"), start=1):
        if line.strip() == SEPARATOR:
            docs.append((lineno + 1, []))
        else:
            docs[-1][1].append(line)
    out = []
    for first, lines in docs:
        start = first
        while lines and not lines[0].strip():
            lines.pop(0)
            first += 1
        while lines and not lines[-1].strip():
            lines.pop()
        out.append((first if lines else start, "\n".join(lines)))
    # a file that starts or ends with a separator has no empty document there
    while out and not out[-1][1]:
        out.pop()
    while out and not out[0][1]:
        out.pop(0)
    return out


def read_inline(path: Path, lang: str = "es") -> Iterator[RawRecord]:
    """One RawRecord per document of each .txt file (a file, or every .txt under a folder).
    Record ids: the file's id and the document number, "<file>-03"."""
    root = path if path.is_dir() else path.parent
    for file in iter_files(path, ".txt"):
        fid = record_id_from(file, root)
        try:
            with file.open("r", encoding="utf-8") as handle:  # universal newlines: offsets count "\n" only
                text = strip_bom(handle.read())
        except UnicodeDecodeError as err:
            yield unreadable(f"{fid}-?", str(file), f"{file}: not UTF-8 (byte {err.start})")
            continue
        documents = split_documents(text)
        if not documents:
            yield unreadable(f"{fid}-?", str(file), f"{file}: no documents (empty file)")
            continue
        for number, (first_line, marked) in enumerate(documents, start=1):
            rid = f"{fid}-{number:02d}"
            source = f"{file}: document {number} (line {first_line})"

            def where(offset: int, first_line=first_line, number=number) -> str:
                return f"{file}: document {number}, line {first_line + marked.count(chr(10), 0, offset)}"

            try:
                if not marked:
                    raise RecordError(f"{source}: empty document between two '{SEPARATOR}' lines")
                plain, spans = parse_inline(marked, where)
            except RecordError as err:
                yield unreadable(rid, source, err)
                continue
            yield RawRecord(id=rid, text=plain, spans=[RawSpan(s, e, label) for s, e, label in spans], source=source,
                            meta={"source_format": "inline", "source_file": file.name, "document": number})


def looks_inline(path: Path, limit: int = 1 << 20) -> bool:
    """A .txt file (or a folder of them) written in inline markup: a `](LABEL)` marker in the first
    `limit` characters of a file (a brat .txt has none)."""
    files = sorted(path.rglob("*.txt")) if path.is_dir() else [path]
    for file in files[:20]:
        try:
            with file.open("r", encoding="utf-8", errors="replace") as handle:
                if MARKUP.search(handle.read(limit)):
                    return True
        except OSError:
            continue
    return False
