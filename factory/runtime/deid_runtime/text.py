"""The text conventions every stage shares, the factory's and the pipelines': one accent- and
case-insensitive folding, one set of characters a PHI span never starts or ends with."""

from __future__ import annotations

import unicodedata

# Spaces and punctuation: a span never starts or ends with one. The regex pack trims its matches by
# them (regex_pack.trim), redaction the values it replaces (redact.py), and the training records
# their spans (deid_factory.records.trim_span), so a model learns the boundaries it is scored on.
BOUNDARY_CHARS = " \t\r\n.,;:!?()[]{}<>\"'«»“”‘’¿¡/\\-–—*_|="


def fold(text: str) -> str:
    """Case- and accent-insensitive form: 'GARCÍA' and 'garcia' fold alike."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch)).casefold()
