"""i2b2-style XML reader.

2014 format (the de-identification track), one note per file, spans as standoff tags:

    <deIdi2b2><TEXT><![CDATA[ ... ]]></TEXT>
      <TAGS><NAME id="P0" start="16" end="20" text="..." TYPE="PATIENT" comment=""/> ...</TAGS></deIdi2b2>

The element name is the PHI category and TYPE the subtype; the label looked up in the label map is
"CATEGORY/TYPE" when the map has it, else "CATEGORY" (see corpora/label_maps/i2b2.yml). Offsets count
characters of the CDATA text; the `text` attribute is checked against the slice.

2006 format (inline tags, several notes per file) is read too:

    <ROOT><RECORD ID="12"><TEXT> ... <PHI TYPE="DOCTOR">Smith</PHI> ... </TEXT></RECORD></ROOT>

Its spans get the label "PHI/<TYPE>"; the record id is "<file>-<RECORD ID>".

Offsets count characters of the text as the XML parser gives it: a byte order mark before the XML
declaration is not part of it, and the parser turns every CRLF into LF (XML line-end
normalisation), as every i2b2 tool that reads these files with an XML library does. A file that
cannot be read (empty, not UTF-8, not well-formed, no <TEXT>) becomes one unreadable record, so
the other files of a folder are still read.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Iterator

from ..records import RecordError
from . import RawRecord, RawSpan, iter_files, record_id_from, unreadable

# The encoding named in the XML declaration, if any (XML without one is UTF-8 by definition).
_DECLARED_ENCODING = re.compile(rb"""^(?:\xef\xbb\xbf)?<\?xml[^>]*encoding\s*=\s*["']([A-Za-z0-9._-]+)["']""")


def _standoff(file: Path, rid: str, root: ET.Element, text: str) -> list[RawSpan]:
    spans = []
    tags = root.find("TAGS")
    for i, tag in enumerate(list(tags) if tags is not None else []):
        try:
            start, end = int(tag.attrib["start"]), int(tag.attrib["end"])
        except (KeyError, ValueError):
            raise RecordError(f"{file}: record {rid!r}: tag #{i} <{tag.tag}> needs integer start and end") from None
        subtype = tag.attrib.get("TYPE", "")
        label = f"{tag.tag}/{subtype}" if subtype else tag.tag
        spans.append(RawSpan(start, end, label, tag.attrib.get("text"), {"tag_id": tag.attrib.get("id", str(i))}))
    return spans


def _inline(text_el: ET.Element) -> tuple[str, list[RawSpan]]:
    """Text and spans of a <TEXT> whose PHI is marked with inline <PHI TYPE="..."> elements."""
    parts, spans, pos = [text_el.text or ""], [], len(text_el.text or "")
    for child in text_el:
        value = "".join(child.itertext())
        label = f"{child.tag}/{child.attrib['TYPE']}" if "TYPE" in child.attrib else child.tag
        spans.append(RawSpan(pos, pos + len(value), label, value, {}))
        parts.append(value)
        pos += len(value)
        parts.append(child.tail or "")
        pos += len(child.tail or "")
    return "".join(parts), spans


def _parse(file: Path, rid: str) -> ET.Element:
    data = file.read_bytes()
    if not data.strip():
        raise RecordError(f"{file}: record {rid!r}: empty file")
    declared = _DECLARED_ENCODING.match(data)
    if declared is None or declared.group(1).lower() in (b"utf-8", b"utf8"):
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as err:
            # expat would only say "not well-formed (invalid token)"
            raise RecordError(f"{file}: record {rid!r}: not UTF-8 (byte {err.start})") from None
    try:
        return ET.fromstring(data)
    except ET.ParseError as err:
        raise RecordError(f"{file}: record {rid!r}: not well-formed XML (line {err.position[0]})") from None


def _file_records(file: Path, rid: str) -> Iterator[RawRecord]:
    root = _parse(file, rid)
    meta = {"source_format": "i2b2", "source_file": file.name}
    records = root.findall("RECORD")
    if records:  # 2006: several notes, inline PHI
        for index, rec in enumerate(records):
            sub_id = f"{rid}-{rec.attrib.get('ID', index)}"
            text_el = rec.find("TEXT")
            if text_el is None:
                yield unreadable(sub_id, str(file), f"{file}: record {sub_id!r}: no <TEXT> element")
                continue
            text, spans = _inline(text_el)
            yield RawRecord(id=sub_id, text=text, spans=spans, source=str(file), meta=dict(meta))
        return
    text_el = root.find("TEXT")
    if text_el is None:
        raise RecordError(f"{file}: record {rid!r}: no <TEXT> element")
    if len(text_el) and root.find("TAGS") is None:
        text, spans = _inline(text_el)
    else:
        text = text_el.text or ""
        spans = _standoff(file, rid, root, text)
    yield RawRecord(id=rid, text=text, spans=spans, source=str(file), meta=meta)


def read_i2b2(path: Path, lang: str = "es") -> Iterator[RawRecord]:
    root_dir = path if path.is_dir() else path.parent
    for file in iter_files(path, ".xml"):
        rid = record_id_from(file, root_dir)
        try:
            # the whole file is parsed before its first record is yielded, so an error here
            # never comes after some of the file's records
            yield from list(_file_records(file, rid))
        except RecordError as err:
            yield unreadable(rid, str(file), err)
