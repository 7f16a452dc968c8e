"""Redaction of PHI spans: tags, masks or document-consistent surrogates.

  tag        "Ana Pérez" -> "[PERSON]"
  mask       every non-space character -> "*" (same length: offsets of the rest do not move)
  surrogate  realistic replacements, consistent within a document (the same entity, compared
             case- and space-insensitively, gets the same surrogate), with every date shifted by one
             per-document offset (in days) and written back in its original format ("03/04/2020",
             "3 de abril de 2020", "April 3, 2020", "2020-04-03" ...). Names keep their casing
             (UPPER, Title, lower) and their number of words. Per-document randomness is seeded by
             (seed, document id), so a re-run gives the same output.
Word lists and month names live in redact_data.yml next to this file.

Runtime module (travels in the deid_<lang> wheels): Faker is used when installed, otherwise
surrogates keep the shape of the original (letters -> random letters, digits -> random digits).
"""

from __future__ import annotations

import datetime as dt
import random
import re
import zlib
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Sequence

import yaml

from .regex_pack import NonOverlapping

MODES = ("tag", "mask", "surrogate")
DATA_FILE = Path(__file__).resolve().parent / "redact_data.yml"
SpanT = tuple[int, int, str]


@lru_cache(maxsize=1)
def _data() -> dict:
    return yaml.safe_load(DATA_FILE.read_text(encoding="utf-8"))


def lang_data(lang: str | None) -> dict:
    data = _data()
    return data["languages"].get(lang or "", data["languages"][data["default"]])


def non_overlapping(spans: Iterable[SpanT]) -> list[SpanT]:
    """Longest first, then leftmost; overlapping leftovers are dropped (doc.ents never overlap).
    Near-linear: a long note with thousands of spans must not take quadratic time."""
    chosen = NonOverlapping()
    for s in sorted(spans, key=lambda s: (-(s[1] - s[0]), s[0])):
        chosen.add(s[0], s[1], s)
    return chosen.items()


def _shape(value: str, rng: random.Random) -> str:
    out = []
    for ch in value:
        if ch.isdigit():
            out.append(str(rng.randint(0, 9)))
        elif ch.isalpha():
            c = rng.choice("abcdefghijklmnopqrstuvwxyz")
            out.append(c.upper() if ch.isupper() else c)
        else:
            out.append(ch)
    return "".join(out)


def _match_case(template: str, value: str) -> str:
    letters = [c for c in template if c.isalpha()]
    if letters and all(c.isupper() for c in letters) and len(letters) > 1:
        return value.upper()
    if letters and all(c.islower() for c in letters):
        return value.lower()
    return value


# ------------------------------------------------------------------------------ dates
_NUMERIC = re.compile(r"^(\d{1,4})([/.\-])(\d{1,2})\2(\d{1,4})$")


def _year(text: str) -> int:
    y = int(text)
    return y if len(text) == 4 else (2000 + y if y < 50 else 1900 + y)


def _fmt_year(year: int, like: str) -> str:
    return f"{year:04d}" if len(like) == 4 else f"{year % 100:02d}"


def _fmt_num(n: int, like: str, pad: bool = False) -> str:
    # zero-padded if the original was ("03"), or if the date padded all its fields ("12/11/2020")
    return f"{n:02d}" if like.startswith("0") or (pad and len(like) == 2) else str(n)


def shift_date(value: str, days: int, lang: str | None) -> str | None:
    """The date shifted by `days`, in the same format; None if the format is not recognised."""
    info = lang_data(lang)
    s = value.strip()
    m = _NUMERIC.match(s)
    if m:
        a, sep, b, c = m.group(1), m.group(2), m.group(3), m.group(4)
        try:
            if len(a) == 4:  # ISO-like yyyy-mm-dd
                d = dt.date(int(a), int(b), int(c)) + dt.timedelta(days=days)
                pad = len(b) == 2 and len(c) == 2
                return f"{d.year:04d}{sep}{_fmt_num(d.month, b, pad)}{sep}{_fmt_num(d.day, c, pad)}"
            day, month = (a, b) if info.get("date_order", "dmy") == "dmy" else (b, a)
            d = dt.date(_year(c), int(month), int(day)) + dt.timedelta(days=days)
        except ValueError:
            return None
        pad = len(day) == 2 and len(month) == 2
        nd, nm = _fmt_num(d.day, day, pad), _fmt_num(d.month, month, pad)
        first, second = (nd, nm) if info.get("date_order", "dmy") == "dmy" else (nm, nd)
        return f"{first}{sep}{second}{sep}{_fmt_year(d.year, c)}"
    # textual months: find a month name, a day number and a year number around it
    months, abbr = info["months"], info["months_abbr"]
    words = re.finditer(r"\w+", s)
    month_tok = None
    for w in words:
        low = w.group(0).lower()
        if low in months:
            month_tok, month, table = w, months.index(low) + 1, months
            break
        if low in abbr:
            month_tok, month, table = w, abbr.index(low) + 1, abbr
            break
    if month_tok is None:
        if re.fullmatch(r"\d{4}", s):  # a bare year moves with the offset's sign (never stays)
            return str(int(s) + (1 if days > 0 else -1))
        return None
    nums = [(n.start(), n.end(), n.group(0)) for n in re.finditer(r"\d+", s)]
    years = [n for n in nums if len(n[2]) == 4]
    days_ = [n for n in nums if len(n[2]) <= 2 and 1 <= int(n[2]) <= 31]
    if not years:
        return None
    year = years[0]
    day = days_[0] if days_ else None
    try:
        # "marzo de 2020" has no day: the 15th stands for it, only month and year are written back
        d = dt.date(int(year[2]), month, int(day[2]) if day else 15) + dt.timedelta(days=days)
    except ValueError:
        return None
    new_month = _match_case(month_tok.group(0), table[d.month - 1])
    if month_tok.group(0)[:1].isupper() and not month_tok.group(0).isupper():
        new_month = new_month[:1].upper() + new_month[1:]
    parts = [(month_tok.start(), month_tok.end(), new_month), (year[0], year[1], f"{d.year:04d}")]
    if day is not None:
        parts.append((day[0], day[1], _fmt_num(d.day, day[2])))
    out = s
    for start, end, rep in sorted(parts, reverse=True):
        out = out[:start] + rep + out[end:]
    return out


# ------------------------------------------------------------------------------ surrogates
_CASED = {"PERSON", "LOCATION", "ADDRESS", "ORGANIZATION", "PROFESSION"}

class Surrogates:
    """Surrogate values for one document: consistent per entity, seeded per document."""

    def __init__(self, lang: str | None, seed: int, doc_id: str, max_shift_days: int = 365):
        self.lang = lang
        self.info = lang_data(lang)
        self.rng = random.Random(zlib.crc32(f"{seed}:{doc_id}".encode("utf-8")))
        shift = 0
        while shift == 0:
            shift = self.rng.randint(-max_shift_days, max_shift_days)
        self.date_shift = shift
        self.memory: dict[tuple[str, str], str] = {}
        self._faker = None
        try:
            from faker import Faker

            self._faker = Faker(self.info["faker_locale"])
            self._faker.seed_instance(self.rng.randint(0, 2**31))
        except ImportError:  # runtime-only environments: shape-preserving surrogates
            self._faker = None

    def get(self, label: str, value: str) -> str:
        key = (label, " ".join(value.casefold().split()))
        if key not in self.memory:
            self.memory[key] = self._make(label, value)
        surrogate = self.memory[key]
        # the entity is the same, its casing may differ per mention ("ANA PÉREZ" / "Ana Pérez")
        return _match_case(value, surrogate) if label in _CASED else surrogate

    def _make(self, label: str, value: str) -> str:
        f, rng = self._faker, self.rng
        if label == "DATE":
            return shift_date(value, self.date_shift, self.lang) or _shape(value, rng)
        if label == "AGE":
            return re.sub(r"\d+", lambda m: str(max(0, int(m.group(0)) + rng.choice([-2, -1, 1, 2]))), value)
        if label == "EMAIL":
            user = f.user_name() if f else _shape("user", rng)
            return f"{user}@{rng.choice(_data()['email_domains'])}"
        if label == "URL":
            return _data()["url_prefix"] + _shape("aaaaaa", rng)
        if label == "IP":
            return _data()["ip_prefix"] + str(rng.randint(1, 254))
        if label == "PROFESSION":
            return rng.choice(self.info["professions"])
        if f is None or label in ("ID", "PHONE"):
            return _shape(value, rng)
        if label == "PERSON":
            n_words = max(1, len(value.split()))
            words = [f.first_name()] + [f.last_name() for _ in range(n_words - 1)] if n_words > 1 else [f.last_name()]
            return " ".join(words)
        if label == "LOCATION":
            return f.city()
        if label == "ADDRESS":
            return f.street_address()
        if label == "ORGANIZATION":
            template = rng.choice(self.info["organization_templates"])
            return template.format(city=f.city(), last_name=f.last_name())
        return _shape(value, rng)


def redact_text(text: str, spans: Sequence[SpanT], mode: str = "tag", lang: str | None = None,
                seed: int = 0, doc_id: str = "", mask_char: str = "*") -> tuple[str, list[SpanT]]:
    """Redacted text and the spans' offsets in it."""
    if mode not in MODES:
        raise ValueError(f"unknown redaction mode {mode!r} (expected one of {', '.join(MODES)})")
    surrogates = Surrogates(lang, seed, doc_id) if mode == "surrogate" else None
    out, new_spans, pos, offset = [], [], 0, 0  # offset: length of the redacted text so far
    for start, end, label in non_overlapping(spans):
        out.append(text[pos:start])
        offset += start - pos
        value = text[start:end]
        if mode == "tag":
            rep = f"[{label}]"
        elif mode == "mask":
            rep = "".join(c if c.isspace() else mask_char for c in value)
        else:
            rep = surrogates.get(label, value)
        new_spans.append((offset, offset + len(rep), label))
        out.append(rep)
        offset += len(rep)
        pos = end
    out.append(text[pos:])
    return "".join(out), new_spans


def redact_doc(doc, mode: str = "tag", seed: int = 0, doc_id: str = "", mask_char: str = "*") -> str:
    """Redact a processed spaCy Doc using its final entities (doc.ents)."""
    spans = [(e.start_char, e.end_char, e.label_) for e in doc.ents]
    return redact_text(doc.text, spans, mode=mode, lang=doc.lang_, seed=seed, doc_id=doc_id, mask_char=mask_char)[0]
