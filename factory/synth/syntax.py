"""The template syntax of the synthetic corpus (the package's docstring describes it): what data.py
checks and note.py renders."""

from __future__ import annotations

import re

BUILT_IN_EVENTS = ("birth", "admission")  # the rest of a note's timeline is formats.yml `timeline`

SLOT = re.compile(r"\{([A-Za-z_][\w.:\-]*)\}")  # {slot}, {slot.arg}, {list}, {list.field}, {n:lo-hi}
GENDER = re.compile(r"<([^<>|]*)\|([^<>|]*)>")  # <m|f>: agreement with the patient's sex
NUMBER = re.compile(r"n:(\d+)-(\d+)")
SLOT_NAME = re.compile(r"[a-z_]\w*")


class SynthError(ValueError):
    """Bad synthetic-corpus data: the message names the file and the entry."""
