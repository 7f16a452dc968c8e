"""The canonical PHI labels, shared by every locale, model and pack (runtime copy: no factory imports)."""

CANONICAL_LABELS: tuple[str, ...] = (
    "PERSON",
    "AGE",
    "DATE",
    "ADDRESS",
    "LOCATION",
    "ORGANIZATION",
    "PROFESSION",
    "PHONE",
    "EMAIL",
    "URL",
    "IP",
    "ID",
)
