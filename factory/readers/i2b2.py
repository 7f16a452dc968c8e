"""i2b2-style XML reader (2006/2014 de-identification format).

    <deIdi2b2><TEXT><![CDATA[ ... ]]></TEXT>
      <TAGS><NAME id="P0" start="16" end="20" text="..." TYPE="PATIENT" comment=""/> ...</TAGS></deIdi2b2>

The element name is the PHI category and TYPE the subtype; the label looked up in the label map is
"CATEGORY/TYPE" when the map has it, else "CATEGORY" (see corpora/label_maps/i2b2.yml). Offsets count
characters of the CDATA text; the `text` attribute is checked against the slice.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Iterator

from ..records import RecordError
from . import RawRecord, RawSpan, iter_files, record_id_from


def read_i2b2(path: Path, lang: str = "es") -> Iterator[RawRecord]:
    root_dir = path if path.is_dir() else path.parent
    for file in iter_files(path, ".xml"):
        rid = record_id_from(file, root_dir)
        try:
            root = ET.parse(file).getroot()
        except ET.ParseError as err:
            raise RecordError(f"{file}: record {rid!r}: not well-formed XML (line {err.position[0]})") from None
        text_el = root.find("TEXT")
        if text_el is None or text_el.text is None:
            raise RecordError(f"{file}: record {rid!r}: no <TEXT> element")
        text = text_el.text
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
        yield RawRecord(id=rid, text=text, spans=spans, source=str(file),
                        meta={"source_format": "i2b2", "source_file": file.name})
