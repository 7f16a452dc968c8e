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
    if day.day == 1 and cfg.get("first_day") and "{d}" in template:
        d = cfg["first_day"]  # French writes "1er mars"
        template = template.replace("{d}", "{d_text}")
    return template.format(d=day.day, d_text=d, m=day.month, Y=day.year, y=day.year % 100, month=months[day.month - 1] if months else day.month)


def date_surrogate(rng: random.Random, cfg: dict[str, Any], shape: dict[str, Any] | None) -> str:
    shape = shape or {}
    form = shape.get("form", "numeric")
    key = "numeric" if form == "numeric" else "written"
    templates = cfg.get(key) or cfg.get("numeric")
    day = random_date(rng, tuple(cfg.get("years", (1995, 2024))))
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
