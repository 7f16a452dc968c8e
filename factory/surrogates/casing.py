"""Casing of surrogate names, sampled per mention from a configurable distribution.

Real clinical records write names in Title case, in UPPER case (signatures, headers) and sometimes in
lower case, so the surrogate stage samples the casing of every PERSON mention (or once per record)
from shares of the three (the default's source and what Title case alone did: docs/translation.md).
"""

from __future__ import annotations

import random
from typing import Mapping

from deid_runtime.surrogates.forms import CASINGS as STYLES


def parse_casing(spec: str | Mapping[str, float] | None, default: Mapping[str, float] | None = None) -> dict[str, float]:
    """'title=0.65,upper=0.33,lower=0.02' (or a mapping) -> normalised {style: share}; clear errors."""
    if spec is None or spec == "":
        spec = default or {"title": 0.65, "upper": 0.33, "lower": 0.02}
    if isinstance(spec, str):
        parsed: dict[str, float] = {}
        for item in spec.split(","):
            if not item.strip():
                continue
            if "=" not in item:
                raise ValueError(f"bad casing item {item!r}: expected style=share, e.g. title=0.65")
            key, value = item.split("=", 1)
            try:
                parsed[key.strip().lower()] = float(value)
            except ValueError:
                raise ValueError(f"bad casing share {value!r} for {key.strip()!r}") from None
        spec = parsed
    dist = {str(k).lower(): float(v) for k, v in spec.items()}
    unknown = set(dist) - set(STYLES)
    if unknown:
        raise ValueError(f"unknown casing style(s) {sorted(unknown)}; use {', '.join(STYLES)}")
    if any(v < 0 for v in dist.values()) or sum(dist.values()) <= 0:
        raise ValueError("casing shares must be >= 0 and not all zero")
    total = sum(dist.values())
    return {k: dist.get(k, 0.0) / total for k in STYLES}


class CasingSampler:
    """Draws a style per mention, or one per record when `one_per_record` is set."""

    def __init__(self, distribution: Mapping[str, float], rng: random.Random, one_per_record: bool = False):
        self.styles = list(distribution)
        self.weights = [distribution[s] for s in self.styles]
        self.rng = rng
        self.one_per_record = one_per_record
        self._record_style: str | None = None

    def new_record(self) -> None:
        self._record_style = None

    def draw(self) -> str:
        if self.one_per_record:
            if self._record_style is None:
                self._record_style = self.rng.choices(self.styles, self.weights)[0]
            return self._record_style
        return self.rng.choices(self.styles, self.weights)[0]
