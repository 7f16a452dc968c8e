"""deid_factory: build per-language clinical de-identification pipelines (deid_<lang>) from
annotated narratives in one source language. Stage modules, in the order a record travels:
readers/ -> extract -> detect -> silver -> stats -> placeholders -> translate -> surrogates/
-> train -> evaluate -> package; runtime/ holds what the deid_<lang> wheels carry."""

from pathlib import Path

__version__ = "0.1.0"

# The repository root when running from a checkout (editable install); data folders live there.
PROJECT_ROOT = Path(__file__).resolve().parent.parent
