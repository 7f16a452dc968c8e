"""Reading the YAML data files a mapping is expected in (regex packs, locale settings, lists, rules):
one loader for the runtime and the factory (`deid_factory.records.read_yaml_mapping` is this one)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

EXPECTED_MAPPING = "a mapping (`key: value`) at the top level"


def read_yaml_mapping(path: str | Path, error: type[Exception] = ValueError,
                      expected: str = EXPECTED_MAPPING) -> dict[str, Any]:
    """A data file that must hold a mapping; an empty file is {}. Invalid YAML or another
    top-level type raises `error` with one line naming the file (and, for invalid YAML, the
    problem and where it is, without quoting the file); `expected` says what the file should hold.
    A missing or unreadable file raises OSError (FileNotFoundError...), left to the caller."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as err:
        raise error(f"{path}: not valid YAML ({_problem(err)})") from None
    if not isinstance(data, dict):
        raise error(f"{path}: expected {expected}")
    return data


def _problem(err: yaml.YAMLError) -> str:
    """The parser's problem and its position, in one line (str(err) quotes the offending lines)."""
    problem = getattr(err, "problem", None)
    if not problem:
        return str(err)
    mark = getattr(err, "problem_mark", None)
    return f"{problem}, line {mark.line + 1}, column {mark.column + 1}" if mark is not None else problem
