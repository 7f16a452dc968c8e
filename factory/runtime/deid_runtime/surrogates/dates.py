"""Dates and ages: what form a date has, how to shift it keeping that form, how to draw one.

The forms of a date (`parts`): dmy a full date, dm day and month ("martes 14 de noviembre",
"14/11"), my month and year, y a year, m a month alone, w a weekday alone; `weekday` says whether a
weekday is written too; `form` is numeric (digits only), written (a month or weekday name and
digits) or words (names only). Month and weekday names, numeric order and templates are data
(`date` in the locale's surrogate_data/formats.yml).
"""

from __future__ import annotations

import datetime as dt
import random
import re
from typing import Any

from .forms import casing_of
from .locale import LocaleData, fold, load_locale

# A full numeric date: yyyy-m-d, or d-m-yy / d-m-yyyy (m-d-y where the locale writes so). A year of 1
# or 3 digits is no date: "1-1-1" and "2-0-2" are dose schedules (breakfast-lunch-dinner), never shifted.
_NUMERIC3 = re.compile(r"^(?:(\d{4})([/.\-])(\d{1,2})\2(\d{1,2})|(\d{1,2})([/.\-])(\d{1,2})\6(\d{2}|\d{4}))$")
_NUMERIC2 = re.compile(r"^(\d{1,2})([/.\-])(\d{1,2}|\d{4})(\.?)$")
_YEAR = re.compile(r"^\d{4}$")
_NUMBER = re.compile(r"(\d+)([^\W\d_]{1,2}\b)?")
_WORD = re.compile(r"[^\W\d_]+")
# A date without a year is shifted within a year that is not a leap year (29 February: one that is).
_NO_YEAR, _LEAP_YEAR = 2001, 2000


def _find_name(text: str, locale: LocaleData, full: str, abbr: str, skip=None):
    """(match, index, table key) of the first month/weekday name of the text, or None; `skip`: a
    match already taken ("mar" is March and Tuesday in Spanish)."""
    tables = [(full, locale.folded_names(full)), (abbr, locale.folded_names(abbr))]
    for word in _WORD.finditer(text):
        if skip is not None and word.span() == skip[0].span():
            continue
        key = fold(word.group(0))
        for table_key, names in tables:
            if key in names:
                return word, names.index(key), table_key
        # another abbreviation of a name, written with its dot ("sep." where the locale lists
        # "sept."): three letters or more that begin one name only
        if len(key) >= 3 and text[word.end():word.end() + 1] == ".":
            begins = [i for i, name in enumerate(tables[0][1]) if name.startswith(key)]
            if len(begins) == 1 and tables[1][1]:
                return word, begins[0], abbr
    return None


def date_parts(value: str, locale: LocaleData) -> dict[str, Any]:
    """The form of a date string, without keeping it: {form, parts, weekday, digits}."""
    s = value.strip()
    digits = sum(c.isdigit() for c in s)
    if _numeric3(s):
        return {"form": "numeric", "parts": "dmy", "weekday": False, "digits": digits}
    m = _NUMERIC2.match(s)
    if m:
        return {"form": "numeric", "parts": "my" if len(m.group(3)) == 4 else "dm", "weekday": False, "digits": digits}
    if _YEAR.match(s):
        return {"form": "numeric", "parts": "y", "weekday": False, "digits": digits}
    month = _find_name(s, locale, "months", "months_abbr")
    weekday = _find_name(s, locale, "weekdays", "weekdays_abbr", skip=month) is not None
    numbers = re.findall(r"\d+", s)
    has_year = any(len(n) == 4 for n in numbers)
    has_day = any(len(n) <= 2 and 1 <= int(n) <= 31 for n in numbers)
    if month:
        parts = ("d" if has_day else "") + "m" + ("y" if has_year else "")  # dmy, dm, my or m
    elif weekday and not numbers:
        parts = "w"
    elif has_year:
        parts = "y"
    else:
        parts = ""
    form = "written" if digits else ("words" if month or weekday else "other")
    return {"form": form, "parts": parts, "weekday": weekday and parts != "w", "digits": digits}


def _numeric3(s: str) -> tuple[str, str, str, str] | None:
    """(first, separator, second, third) of a full numeric date, or None."""
    m = _NUMERIC3.match(s)
    if m is None:
        return None
    return m.group(1, 2, 3, 4) if m.group(1) else m.group(5, 6, 7, 8)


def date_value(value: str, lang: str | LocaleData | None) -> tuple[int | None, int, int | None] | None:
    """(year, month, day) a date string states, year or day None where it has none ("14/11",
    "mars 1961"); None where it states no month (a year, a weekday) or is no date. Read as
    shift_date reads it: shifting the value by `days` gives the date `shifted_value` gives."""
    locale = lang if isinstance(lang, LocaleData) else load_locale(lang)
    order = locale["date"].get("order", "dmy")
    s = value.strip()
    m3 = _numeric3(s)
    if m3:
        a, _, b, c = m3
        year, month, day = (int(a), int(b), int(c)) if len(a) == 4 else \
            ((_year(c), int(b), int(a)) if order == "dmy" else (_year(c), int(a), int(b)))
    elif m := _NUMERIC2.match(s):
        a, _, b, _ = m.groups()
        if len(b) == 4:
            year, month, day = int(b), int(a), None
        else:
            year, (day, month) = None, ((int(a), int(b)) if order == "dmy" else (int(b), int(a)))
    else:
        hit = _find_name(s, locale, "months", "months_abbr")
        if hit is None:
            return None
        numbers = [n.group(1) for n in _NUMBER.finditer(s)]
        years = [int(n) for n in numbers if len(n) == 4]
        days = [int(n) for n in numbers if len(n) <= 2 and 1 <= int(n) <= 31]
        year, month, day = (years[0] if years else None), hit[1] + 1, (days[0] if days else None)
    try:
        _shift(year, month, day, 0)
    except ValueError:  # 31/02/2020: not a date
        return None
    return year, month, day


def shifted_value(parts: tuple[int | None, int, int | None], days: int) -> dt.date:
    """The date `parts` (date_value) stands for, moved by `days` as shift_date moves it (a month
    without its day stands for its 15th)."""
    year, month, day = parts
    return _shift(year, month, day, days)


# ----------------------------------------------------------------------------- shifting
def _year(text: str) -> int:
    y = int(text)
    return y if len(text) == 4 else (2000 + y if y < 50 else 1900 + y)


def _fmt_year(year: int, like: str) -> str:
    return f"{year:04d}" if len(like) == 4 else f"{year % 100:02d}"


def _fmt_num(n: int, like: str, pad: bool = False) -> str:
    # zero-padded if the original was ("03"), or if the date padded all its fields ("12/11/2020")
    return f"{n:02d}" if like.startswith("0") or (pad and len(like) == 2) else str(n)


def _shift(year: int | None, month: int, day: int | None, days: int) -> dt.date:
    ref = year if year is not None else (_LEAP_YEAR if (month, day) == (2, 29) else _NO_YEAR)
    # a month without its day: the 15th stands for it, only month (and year) are written back
    return dt.date(ref, month, day if day is not None else 15) + dt.timedelta(days=days)


def _ordinal(n: int, suffix: str, locale: LocaleData) -> str:
    """The ordinal suffix of day n, when the original day had one ("1er", "14th")."""
    if not suffix:
        return ""
    table = {str(k): str(v) for k, v in (locale["date"].get("ordinal_suffixes") or {}).items()}
    if not table:
        return suffix
    return table.get(str(n), table.get("default", suffix))


def _name_like(original: str, new: str) -> str:
    """A month/weekday name written like the original: case, and an initial capital."""
    style = casing_of(original)
    if style == "upper" and len(original) > 1:
        return new.upper()
    if original[:1].isupper():
        return new[:1].upper() + new[1:].lower()
    return new.lower()


def shift_date(value: str, days: int, lang: str | LocaleData | None) -> str | None:
    """The date moved by `days`, written in the same form; None if the form is not recognised.
    Dates without a year ("martes 14 de noviembre", "14/11") and weekdays move too: a weekday
    moves with the days, so the shifted date stays a well-formed date."""
    locale = lang if isinstance(lang, LocaleData) else load_locale(lang)
    info = locale["date"]
    order = info.get("order", "dmy")
    s = value.strip()
    try:
        m3 = _numeric3(s)
        if m3:
            a, sep, b, c = m3
            if len(a) == 4:  # ISO-like yyyy-mm-dd
                d = _shift(int(a), int(b), int(c), days)
                pad = len(b) == 2 and len(c) == 2
                return f"{d.year:04d}{sep}{_fmt_num(d.month, b, pad)}{sep}{_fmt_num(d.day, c, pad)}"
            day, month = (a, b) if order == "dmy" else (b, a)
            d = _shift(_year(c), int(month), int(day), days)
            pad = len(day) == 2 and len(month) == 2
            nd, nm = _fmt_num(d.day, day, pad), _fmt_num(d.month, month, pad)
            first, second = (nd, nm) if order == "dmy" else (nm, nd)
            return f"{first}{sep}{second}{sep}{_fmt_year(d.year, c)}"
        m = _NUMERIC2.match(s)
        if m:
            a, sep, b, dot = m.groups()
            if len(b) == 4:  # month/year
                d = _shift(int(b), int(a), None, days)
                return f"{_fmt_num(d.month, a)}{sep}{d.year:04d}{dot}"
            day, month = (a, b) if order == "dmy" else (b, a)
            d = _shift(None, int(month), int(day), days)
            pad = len(day) == 2 and len(month) == 2
            nd, nm = _fmt_num(d.day, day, pad), _fmt_num(d.month, month, pad)
            first, second = (nd, nm) if order == "dmy" else (nm, nd)
            return f"{first}{sep}{second}{dot}"
    except ValueError:  # 31/02/2020: not a date
        return None
    if _YEAR.match(s):  # a bare year moves with the offset's sign (never stays)
        return str(int(s) + (1 if days > 0 else -1))
    return _shift_written(s, days, locale)


def _shift_written(s: str, days: int, locale: LocaleData) -> str | None:
    info = locale["date"]
    month_hit = _find_name(s, locale, "months", "months_abbr")
    weekday_hit = _find_name(s, locale, "weekdays", "weekdays_abbr", skip=month_hit)
    parts: list[tuple[int, int, str]] = []
    if weekday_hit:
        tok, index, table = weekday_hit
        parts.append(_name_part(s, tok, info[table], (index + days) % 7))
    if month_hit is None:
        if weekday_hit and not re.search(r"\d", s):
            return _apply(s, parts)
        return None
    tok, month, table = month_hit
    numbers = [(n.start(1), n.end(), n.group(1), n.group(2) or "") for n in _NUMBER.finditer(s)]
    years = [n for n in numbers if len(n[2]) == 4]
    day_numbers = [n for n in numbers if len(n[2]) <= 2 and 1 <= int(n[2]) <= 31]
    year = years[0] if years else None
    day = day_numbers[0] if day_numbers else None
    try:
        d = _shift(int(year[2]) if year else None, month + 1, int(day[2]) if day else None, days)
    except ValueError:
        return None
    parts.append(_name_part(s, tok, info[table], d.month - 1))
    if year is not None:
        parts.append((year[0], year[1], f"{d.year:04d}"))
    if day is not None:
        parts.append((day[0], day[1], _fmt_num(d.day, day[2]) + _ordinal(d.day, day[3], locale)))
    return _apply(s, parts)


def _name_part(s: str, tok: re.Match, names: list[str], index: int) -> tuple[int, int, str]:
    """(start, end, new text) for a month or weekday name of `s` that becomes names[index], written
    like the original. An abbreviation is the new name's own as the locale writes it: a dot where
    the locale's list has one ("10 nov. 2023" -> "2 mai 2024", "3 janv. 2024"; "nov" without a dot
    stays without). A list without any dot (a locale that did not say) keeps the original's dot."""
    start, end = tok.span()
    new = str(names[index])
    dotted = end < len(s) and s[end] == "."
    if not any(str(n).endswith(".") for n in names):  # full names, or abbreviations without their dots
        return start, end, _name_like(tok.group(0), new)
    if dotted:
        return start, end + 1, _name_like(tok.group(0), new)
    return start, end, _name_like(tok.group(0), new.rstrip("."))


def _apply(s: str, parts: list[tuple[int, int, str]]) -> str:
    out = s
    for start, end, rep in sorted(parts, reverse=True):
        out = out[:start] + rep + out[end:]
    return out


# ----------------------------------------------------------------------------- drawing
def random_date(rng: random.Random, years: tuple[int, int]) -> dt.date:
    start = dt.date(int(years[0]), 1, 1).toordinal()
    end = dt.date(int(years[1]), 12, 31).toordinal()
    return dt.date.fromordinal(rng.randint(start, end))


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


def format_date(day: dt.date, template: str, locale: LocaleData) -> str:
    info = locale["date"]
    months, weekdays = info.get("months") or [], info.get("weekdays") or []
    d: Any = day.day
    if day.day == 1 and info.get("first_day") and "{d}" in template and "{month}" in template:
        d = info["first_day"]  # French writes "1er mars"
        template = template.replace("{d}", "{d_text}")
    return template.format(d=day.day, d_text=d, m=day.month, Y=day.year, y=day.year % 100,
                           month=months[day.month - 1] if months else day.month,
                           weekday=weekdays[day.weekday()] if weekdays else "")


def draw_date(rng: random.Random, locale: LocaleData, shape: dict[str, Any] | None, day: dt.date) -> str:
    """`day` written in a form of the locale that has the shape's parts (a full date stays full,
    "14 de noviembre" stays day and month, a weekday stays with its date)."""
    shape = shape or {}
    info = locale["date"]
    form = "numeric" if shape.get("form", "numeric") == "numeric" else "written"
    parts = shape.get("parts") or "dmy"
    if parts == "m":
        text = format_date(day, "{month}", locale)
    elif parts == "w":
        return format_date(day, "{weekday}", locale)
    else:
        templates = (info.get(form) or {}).get(parts) or (info.get("written") or {}).get(parts) or info["numeric"]["dmy"]
        text = format_date(day, rng.choice(templates), locale)
    if shape.get("weekday") and info.get("weekday") and info.get("weekdays"):
        text = info["weekday"].format(weekday=info["weekdays"][day.weekday()], date=text)
    return text


# ----------------------------------------------------------------------------- ages
def draw_age(rng: random.Random, locale: LocaleData, shape: dict[str, Any] | None, age_range=(1, 99)) -> str:
    shape = shape or {}
    low, high = age_range
    digits = int(shape.get("digits") or 0)
    if digits == 1:
        low, high = max(low, 1), min(high, 9)
    elif digits == 2:
        low, high = max(low, 10), min(high, 99)
    n = rng.randint(int(low), int(high))
    info = locale["age"]
    templates = info.get("with_unit") if shape.get("unit") else info.get("without_unit")
    return rng.choice(templates or ["{n}"]).format(n=n)


def age_like(value: str, rng: random.Random) -> str:
    """The age moved by 1 or 2 (never below 0), written as it was ("54 años" -> "56 años")."""
    return re.sub(r"\d+", lambda m: str(max(0, int(m.group(0)) + rng.choice([-2, -1, 1, 2]))), value)
