"""Dates in the target language's numeric and written forms, and ages with the locale's units.

Formats, month names and units are data (languages/<lc>/surrogates.yml); the shape kept by the
placeholder stage (numeric / written date, age with or without unit) picks the form."""

from __future__ import annotations

import datetime as dt
import random
from typing import Any


def random_date(rng: random.Random, years: tuple[int, int]) -> dt.date:
    start = dt.date(int(years[0]), 1, 1).toordinal()
    end = dt.date(int(years[1]), 12, 31).toordinal()
    return dt.date.fromordinal(rng.randint(start, end))


def format_date(day: dt.date, template: str, cfg: dict[str, Any]) -> str:
    months = cfg.get("months") or []
    d: Any = day.day
    if day.day == 1 and cfg.get("first_day") and "{d}" in template and "{month}" in template:
        d = cfg["first_day"]  # French writes "1er mars"
        template = template.replace("{d}", "{d_text}")
    return template.format(d=day.day, d_text=d, m=day.month, Y=day.year, y=day.year % 100, month=months[day.month - 1] if months else day.month)


# Kinds of dates (span attribute `kind`, from the synthetic corpus) that lie before the stay.
BIRTH_KINDS = {"birth", "nacimiento", "dob"}
PAST_KINDS = {"past", "year", "history", "antecedent"}


def record_date(rng: random.Random, anchor: dt.date, kind: str | None) -> dt.date:
    """A date coherent with the record's anchor (its stay): births decades before, past events
    months to years before, everything else within a few weeks of it."""
    if kind in BIRTH_KINDS:
        return anchor - dt.timedelta(days=rng.randint(18 * 365, 95 * 365))
    if kind in PAST_KINDS:
        return anchor - dt.timedelta(days=rng.randint(30, 10 * 365))
    return anchor + dt.timedelta(days=rng.randint(-30, 30))


def date_surrogate(rng: random.Random, cfg: dict[str, Any], shape: dict[str, Any] | None,
                   anchor: dt.date | None = None, kind: str | None = None) -> str:
    shape = shape or {}
    form = shape.get("form", "numeric")
    key = "numeric" if form == "numeric" else "written"
    templates = cfg.get(key) or cfg.get("numeric")
    day = record_date(rng, anchor, kind) if anchor else random_date(rng, tuple(cfg.get("years", (1995, 2024))))
    return format_date(day, rng.choice(templates), cfg)


def age_surrogate(rng: random.Random, cfg: dict[str, Any], shape: dict[str, Any] | None) -> str:
    shape = shape or {}
    low, high = cfg.get("range", [1, 99])
    digits = int(shape.get("digits") or 0)
    if digits == 1:
        low, high = max(low, 1), min(high, 9)
    elif digits == 2:
        low, high = max(low, 10), min(high, 99)
    n = rng.randint(int(low), int(high))
    templates = cfg.get("with_unit") if shape.get("unit") else cfg.get("without_unit")
    return rng.choice(templates or ["{n}"]).format(n=n)
