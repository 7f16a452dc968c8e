"""Redaction of PHI spans: tags, masks or keyed, consistent, faithful surrogates.

  tag        "Ana Pérez" -> "[PERSON]"
  mask       "*****": one mask of a fixed width per span (a span's length is a re-identification hint);
             mask_length="keep": every non-space character -> "*" (the text's layout does not move)
  surrogate  realistic replacements from the surrogate engine (deid_runtime/surrogates/), drawn from a
             secret key: every choice of a document comes from HMAC-SHA256(key, document id), or of
             the patient id when one is given (so a patient's documents share their surrogates and
             date shift). Without the key the mapping cannot be recomputed; with it, a re-run gives
             the same output. Surrogate mode refuses to run without a key unless asked for the demo
             key (`demo=True`: derived from the seed, *not secret*, for trying the tool only).

What a surrogate keeps of the original:
  PERSON     the same person across mentions and partial forms ("A. Jiménez Castro", "Sr. Jiménez",
             "JIMÉNEZ" are one surrogate person), its sex (title, agreeing words, given name),
             titles and punctuation as written, the casing of every word
  DATE       shifted by the document's offset in days, in its own form: a date without a year or
             with a weekday stays one ("martes 14 de noviembre" -> "jueves 14 de diciembre")
  ID         a valid identifier of the same kind (DNI, NIE, NIR, IBAN...) in the same layout, a
             number mark as written ("nº"); a NIR the sex and shifted birth month the note states
  PHONE      its country calling code, layout and first national digit
  LOCATION   its kind (country, region, city, postal code; a postal code and its town one real
             pair), ORGANIZATION its kind (hospital, health centre, university, company,
             institution) and a head word agreeing with its articles ("la Clinique"), ADDRESS its
             street word, house number, postal code and town; all in the original's casing
  AGE        its form, moved by 1-2 years, or, where the note's dates state it, the age the shifted
             dates give; EMAIL / URL / IP only in documentation-reserved names

A surrogate only where the span is surely of its kind: before a span is replaced, its surface must
pass the check of its label (surrogate_checks.py: a PERSON has letters and no digit, unit or drug
name; a DATE is a date of the locale and not a duration or schedule; an AGE is an age...). A span
that fails is written as a visible tag, "[PERSON?]", never as a plausible value, and counted: a
dose that a detector took for a name or an age is hidden, not silently changed. Numbers with units
are never changed in any mode: the merger keeps them out of every PHI span (merger.py).
`redact()` returns what was done to each span (`Redaction.actions`, `Redaction.counts()`: ids,
labels and offsets only), for the run's summary, journal and report.
Runtime module (travels in the deid-runtime wheel, which every deid_<lang> wheel requires): Faker is used for names when installed.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import os
import random
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from . import clinical, ids
from .surrogate_checks import CheckWords, surely_of_kind
from .surrogates import dates, identifiers, values
from .surrogates.forms import match_casing
from .surrogates.kinds import (address_shape, article_before, describe, locality_parts, location_kind,
                               street_word_at)
from .surrogates.locale import LocaleData, fold, load_locale
from .surrogates.names import PersonWords, names_of, sex_of
from .text import replace_spans, trim_span

from .regex_pack import NonOverlapping

MODES = ("tag", "mask", "surrogate")
MASK_LENGTHS = ("fixed", "keep")
MASK_WIDTH = 5  # "*****" for any masked span: a span's length tells nothing of what it hid
SpanT = tuple[int, int, str]
# What redaction did to a span: its mode's action ("tag", "mask", "surrogate"), or UNSURE: surrogate
# mode wrote a visible tag because the span failed the check of its label.
UNSURE = "unsure"
KEY_ENV = "DEID_SURROGATE_KEY"
MIN_KEY_BYTES = 16  # 128 bits: a key that cannot be guessed
CONTEXT_CHARS = 60  # text before a span read for trigger words and titles ("País:", "Sra.")
_CASED = {"LOCATION", "ADDRESS", "ORGANIZATION", "PROFESSION"}

# re-exported: the date shift is part of what redaction promises (tests, users)
shift_date = dates.shift_date


class SurrogateKeyError(ValueError):
    """Surrogate mode without a usable secret key (the message says how to give one)."""


def non_overlapping(spans: Iterable[SpanT]) -> list[SpanT]:
    """Longest first, then leftmost; overlapping leftovers are dropped (doc.ents never overlap).
    Near-linear: a long note with thousands of spans must not take quadratic time. Spans that do
    not overlap (the router's final spans always) are returned sorted, without the interval set."""
    ordered = sorted(spans, key=lambda s: (s[0], s[1]))  # a list: `spans` may be a one-shot iterator
    if all(s[0] < s[1] for s in ordered) and all(a[1] <= b[0] for a, b in zip(ordered, ordered[1:])):
        return ordered
    chosen = NonOverlapping()
    for s in sorted(ordered, key=lambda s: (-(s[1] - s[0]), s[0])):
        chosen.add(s[0], s[1], s)
    return chosen.items()


# ------------------------------------------------------------------------------ keys
def demo_key(seed: int = 0) -> bytes:
    """The demo key: anyone can recompute it from the seed, so its surrogates can be undone."""
    return f"deid-factory demo key, not secret, seed {seed}".encode("utf-8")


def check_key(key: bytes, origin: str = "the key") -> bytes:
    if len(key) < MIN_KEY_BYTES:
        raise SurrogateKeyError(f"{origin} is {len(key)} bytes; a surrogate key needs at least {MIN_KEY_BYTES} "
                                f"(e.g. `head -c 32 /dev/urandom > surrogate.key`)")
    return key


def load_key(key_file: str | Path | None = None, environ: Mapping[str, str] | None = None) -> bytes | None:
    """The secret key from `key_file` (its bytes, a final newline dropped) or else from the
    DEID_SURROGATE_KEY environment variable; None when neither is given."""
    if key_file is not None:
        path = Path(key_file)
        try:
            raw = path.read_bytes()
        except OSError as err:
            raise SurrogateKeyError(f"cannot read the key file {path}: {err.strerror}") from None
        return check_key(raw.rstrip(b"\r\n"), f"key file {path}")
    value = (os.environ if environ is None else environ).get(KEY_ENV)
    if value:
        return check_key(value.encode("utf-8"), f"${KEY_ENV}")
    return None


def _hmac(key: bytes, *parts: str) -> bytes:
    return hmac.new(key, "\x00".join(parts).encode("utf-8"), hashlib.sha256).digest()


class Redactor:
    """Keyed surrogates. `Redactor(key).redact(text, spans, doc_id, lang)`; `patient_id` makes the
    surrogates and the date shift of that patient's documents the same."""

    def __init__(self, key: bytes, max_shift_days: int = 365):
        self.key = check_key(bytes(key))
        self.max_shift_days = max_shift_days

    def document(self, doc_id: str, lang: str | None = None, patient_id: str | None = None) -> "DocumentSurrogates":
        scope = _hmac(self.key, "patient", patient_id) if patient_id else _hmac(self.key, "document", doc_id)
        return DocumentSurrogates(scope, load_locale(lang), self.max_shift_days)

    def redact(self, text: str, spans: Sequence[SpanT], doc_id: str, lang: str | None = None,
               patient_id: str | None = None, lexicon: clinical.ClinicalLexicon | None = None) -> "Redaction":
        """Each span replaced by its surrogate when it passes the check of its label, else by
        "[LABEL?]". `lexicon`: the clinical lexicon the checks read (default: the one registered for
        `lang` by a loaded pack)."""
        surrogates = self.document(doc_id, lang, patient_id)
        words = CheckWords(lexicon if lexicon is not None else clinical.lexicon_for(lang), surrogates.locale)
        chosen = non_overlapping(spans)
        sure = [surely_of_kind(label, text[start:end], words) for start, end, label in chosen]
        surrogates.learn(text, [span for span, ok in zip(chosen, sure) if ok])
        values = [surrogates.get(label, text[start:end], _context(text, start)) if ok else unsure_tag(label)
                  for (start, end, label), ok in zip(chosen, sure)]
        return _rewrite(text, chosen, values, ["surrogate" if ok else UNSURE for ok in sure])


class DocumentSurrogates:
    """The surrogates of one scope (a document, or a patient's documents), all drawn from its key:
    a value's surrogate depends only on the key, the label and the value (folded), so it is the
    same at every mention, in any order.

    What the document states about how its values go together stays true (`learn` reads it first):
    a postal code and the town written with it become a real pair of the locale ("28009 Madrid" ->
    "50001 Zaragoza", the same at every mention); an organisation agrees with the article before it
    ("la Clinique ..."); an identifier that encodes a person (the NIR) agrees with the sex of the
    persons named and the shifted date it encodes; an age the document's dates state (born on one,
    seen on another) is the age the shifted dates give."""

    def __init__(self, scope_key: bytes, locale: LocaleData, max_shift_days: int = 365):
        self.scope_key = scope_key
        self.locale = locale
        shift = 0
        rng = self.rng("date shift")
        while shift == 0:
            shift = rng.randint(-max_shift_days, max_shift_days)
        self.date_shift = shift
        self.persons = PersonWords(locale, self.rng)
        self.memory: dict[tuple[str, str], str] = {}
        self.postal_towns: dict[str, str] = {}     # folded postal code -> the town written with it
        self.articles: dict[str, list[str]] = {}   # folded organisation -> article groups before its mentions
        self.sexes: set[str] = set()               # the sexes of the persons the document names
        self.dates: list[tuple[int | None, int, int | None]] = []  # the dates it states, in its order
        self.street_words: set[str] = set()        # street words alone before the street's name

    def rng(self, purpose: str) -> random.Random:
        return random.Random(int.from_bytes(_hmac(self.scope_key, purpose), "big"))

    def learn(self, text: str, spans: Sequence[SpanT]) -> None:
        """Read the spans of the scope before any is replaced: persons, places, articles, facts."""
        spans = sorted(spans)
        persons = [s for s in spans if s[2] != "PERSON" or self._street_form(text[s[0]:s[1]], "PERSON") is None]
        self.learn_persons(text, persons)
        self.learn_places(text, spans)
        for (start, end, label), (start2, _, label2) in zip(spans, spans[1:]):
            # a street word alone right before a name or place is that street's ("Place" "Amélie
            # Raba-Léon"): written as it is; alone elsewhere it may be a town ("Ronda")
            if label2 in ("PERSON", "LOCATION", "ADDRESS") and text[end:start2].isspace() \
                    and self._street_form(text[start:end], label) == "keep":
                self.street_words.add(_key(text[start:end]))
        for start, end, label in spans:
            value = text[start:end]
            if label == "ORGANIZATION":
                article = article_before(_context(text, start), self.locale)
                if article is not None:
                    self.articles.setdefault(_key(value), []).append(article)
            elif label == "PERSON" and (sex := sex_of(value, self.locale, _context(text, start))):
                self.sexes.add(sex)
            elif label == "DATE" and (parts := dates.date_value(value, self.locale)) is not None:
                self.dates.append(parts)

    def learn_persons(self, text: str, spans: Sequence[SpanT]) -> None:
        self.persons.learn([(text[s:e], _context(text, s)) for s, e, label in spans if label == "PERSON"])

    def learn_places(self, text: str, spans: Sequence[SpanT]) -> None:
        """The postal codes written with their town: inside one span ("28009 Madrid", "C/ Mayor 5,
        28009 Madrid") or in two spans side by side ("28009" "Madrid", "Madrid (28009)", an ADDRESS
        ending with its postal code before the town)."""
        placed = []
        for start, end, label in sorted(spans):
            value = text[start:end]
            parts = locality_parts(label, value, self.locale) if label in ("LOCATION", "ADDRESS") else None
            placed.append((start, end, label, value, parts))
            if parts and parts[1]:
                self._pair(value[slice(*parts[0])], value[slice(*parts[1])])
        for (start, end, label, value, parts), (start2, _, label2, value2, parts2) in zip(placed, placed[1:]):
            if len(text[end:start2]) > 3 or text[end:start2].strip(" \t,;(-–"):
                continue
            if parts and not parts[1] and not value[parts[0][1]:].strip(" ,;)") \
                    and label2 == "LOCATION" and parts2 is None and self._is_town(value2, text, start2):
                self._pair(value[slice(*parts[0])], value2)
            elif label == "LOCATION" and parts is None and self._is_town(value, text, start) \
                    and label2 == "LOCATION" and parts2 and not parts2[1]:
                self._pair(value2[slice(*parts2[0])], value)

    def _pair(self, postal: str, town: str) -> None:
        self.postal_towns.setdefault(_key(postal), town)

    def _is_town(self, value: str, text: str, start: int) -> bool:
        return location_kind(value, self.locale, _context(text, start))[0] == "city"

    def get(self, label: str, value: str, context: str = "") -> str:
        """The surrogate of `value` (a `label` span), written in the value's form."""
        street = self._street_form(value, label)
        if street == "keep" and _key(value) in self.street_words:  # "Place" before the street's name
            return value
        if street == "address":  # "Place Amélie Raba-Léon" taken for a name: an address it stays
            found = street_word_at(value, self.locale)
            lead = value[:found[0]]  # an article the span caught ("la Plaza ..."), as written
            return lead + match_casing(value[found[0]:], self._memo("ADDRESS", value[found[0]:]))
        if label == "PERSON":
            return self.persons.replace(value)
        surrogate = self._memo(label, value, context)
        # the entity is the same, its casing may differ per mention ("LUGO" / "Lugo")
        return match_casing(value, surrogate) if label in _CASED else surrogate

    def _memo(self, label: str, value: str, context: str = "") -> str:
        key = (label, _key(value))
        if key not in self.memory:
            self.memory[key] = self._make(label, value, context, key[1])
        return self.memory[key]

    def _street_form(self, value: str, label: str) -> str | None:
        """"keep" for a PERSON or LOCATION span that is a street word alone ("Place"), "address" for
        one that starts with a street word (after an article at most) and goes on ("Place Amélie
        Raba-Léon", "la Plaza Amelia Rábade"; not "Camino Pérez", whose street word is a name of the
        locale), else None."""
        if label not in ("PERSON", "LOCATION"):
            return None
        found = street_word_at(value, self.locale)
        if found is None or any(fold(w) not in self.locale.article_groups for w in value[:found[0]].split()):
            return None  # a street word first, or after an article only ("la Plaza ...")
        rest = value[found[1]:].strip(" ,.")
        if not rest:
            return "keep" if found[1] >= len(value.rstrip(" ,.")) else None
        names = names_of(self.locale)
        first = value[found[0]:found[1]]
        # a street word that is a given name ("Camino") is one; a surname ("Plaza") only where the
        # span reads as a name: no article before it, two words at most ("Plaza Gómez")
        if label == "PERSON" and (names.is_given(first) or (fold(first) in names.surname_set and not found[0]
                                                             and len(value.split()) <= 2)):
            return None
        return "address" if value[found[1]:found[1] + 1].isspace() else None

    def _make(self, label: str, value: str, context: str, folded: str) -> str:
        locale = self.locale
        if label == "ID" and not any(c.isdigit() for c in value):
            return unsure_tag(label)  # no identifier: nothing to draw one like
        if label in ("LOCATION", "ADDRESS"):
            parts = locality_parts(label, value, locale)
            if parts is not None and label == "ADDRESS" and not value[:parts[0][0]].strip(" ,;"):
                label, parts = "LOCATION", locality_parts("LOCATION", value, locale)  # no street: "28009 Madrid"
            if parts is not None:
                return self._with_locality(label, value, parts)
            if label == "LOCATION" and values.kind_of(label, describe(label, value, locale, context)) == "city":
                return self._town(value)
        if label == "AGE":
            stated = self._stated_age(value)
            if stated is not None:
                return stated
        for attempt in range(10):  # never the original again ("Madrid" -> "Madrid")
            rng = self.rng(f"{label}\x00{folded}\x00{attempt}")
            if label == "DATE":
                new = dates.shift_date(value, self.date_shift, locale)
                if new is None:  # a form we cannot shift ("ayer"): a date of the same parts
                    new = values.surrogate_for("DATE", dates.date_parts(value, locale), rng, locale)
            elif label == "AGE":
                new = dates.age_like(value, rng)
            elif label == "ID":
                new = identifiers.like(value, rng, locale, self._person_of(value))
            elif label == "PHONE":
                new = values.phone_like(value, rng)
            elif label == "ADDRESS":
                new = self._street(value, rng)
            elif label == "ORGANIZATION":
                new = values.organization(rng, locale, describe(label, value, locale, context),
                                          articles=self.articles.get(folded, ()), original=value)
            else:
                shape = describe(label, value, locale, context)
                new = values.surrogate_for(label, shape, rng, locale, reserved=True)
            if _key(new) != folded:
                return new
        return new

    # -- places: a postal code and its town are one real pair -----------------------------------
    def _street(self, value: str, rng: random.Random) -> str:
        """A street address like `value` without its locality, keeping its street word as written."""
        shape = {**address_shape(value, self.locale), "locality": False}
        word = street_word_at(value, self.locale)
        return values.address(rng, self.locale, shape, street_word=value[word[0]:word[1]] if word else None)

    def _town(self, town: str) -> str:
        """The surrogate town of a town, at every mention (a LOCATION, or the town of a postal code):
        a town of the locale's pairs, so a postal code of it can go with it."""
        key = ("TOWN", _key(town))
        if key not in self.memory:
            for attempt in range(10):
                new, _ = values.place(self.rng(f"LOCATION\x00{key[1]}\x00{attempt}"), self.locale)
                if _key(new) != key[1]:
                    break
            self.memory[key] = new
        return self.memory[key]

    def _postal(self, postal: str, town: str | None = None) -> str:
        """The surrogate of a postal code: a postal code of the surrogate of the town written with it
        in the document (learn_places), else of `town`, else one of a drawn pair."""
        key = ("LOCATION", _key(postal))
        if key not in self.memory:
            # the town written with it in the document, else its town in the locale's pairs (so a
            # patient's documents agree whether or not they write the town)
            town = self.postal_towns.get(key[1]) or town or self.locale.town_of_postcode.get(key[1])
            new_town = self._town(town) if town else None
            for attempt in range(10):
                rng = self.rng(f"LOCATION\x00{key[1]}\x00{attempt}")
                new = values.postal_code_of(new_town, rng, self.locale) if new_town else None
                if new is None:
                    _, new = values.place(rng, self.locale)
                if _key(new) != key[1]:
                    break
            self.memory[key] = new
        return self.memory[key]

    def _with_locality(self, label: str, value: str, parts) -> str:
        """A LOCATION or ADDRESS holding a postal code (and its town): the postal code and the town
        from one pair, the street drawn, everything else as written."""
        (p0, p1), town = parts
        town_text = value[town[0]:town[1]] if town else None
        pieces = [(p0, p1, self._postal(value[p0:p1], town_text))]
        if town:
            pieces.append((town[0], town[1], self._town(town_text)))
        if label == "ADDRESS":
            street_end = len(value[:p0].rstrip(" ,;"))
            folded = _key(value[:street_end])
            for attempt in range(10):
                street = self._street(value[:street_end], self.rng(f"ADDRESS\x00{folded}\x00{attempt}"))
                if _key(street) != folded:
                    break
            pieces.append((0, street_end, street))
        out = value
        for start, end, new in sorted(pieces, reverse=True):
            out = out[:start] + new + out[end:]
        return out

    # -- facts about the person -----------------------------------------------------------------
    def _full_dates(self) -> list[dt.date]:
        out = []
        for year, month, day in self.dates:
            if year is not None and day is not None:
                out.append(dt.date(year, month, day))
        return out

    def _stated_age(self, value: str) -> str | None:
        """An age in years that two full dates of the document state (born on one, `value` years
        old on a later one), written as the shifted dates give it (the same, unless a birthday
        falls inside the shift); None when no two dates state it."""
        numbers = re.findall(r"\d+", value)
        units = {fold(str(u)).rstrip(".") for u in (self.locale.formats.get("age") or {}).get("year_units") or []}
        words = [fold(w).rstrip(".") for w in re.findall(r"[^\W\d_]+\.?", value)]
        if len(numbers) != 1 or any(w not in units for w in words):
            return None
        age, full = int(numbers[0]), self._full_dates()
        for born in full:
            for seen in full:
                if seen > born and years_between(born, seen) == age:
                    shift = dt.timedelta(days=self.date_shift)
                    return re.sub(r"\d+", str(years_between(born + shift, seen + shift)), value, count=1)
        return None

    def _person_of(self, value: str) -> dict[str, object] | None:
        """What the document says of the person of an identifier that encodes one (the NIR's sex and
        month of birth): its sex where the document names a person of that sex, its birth (year,
        month) shifted where the document states a date of that month; None for other identifiers."""
        identifier = ids.identify(value, ids.keys(self.locale.formats.get("identifiers") or []))
        if identifier is None or not hasattr(identifier, "person_fields"):
            return None
        fields = identifier.person_fields(value)
        person: dict[str, object] = {"sex": fields.get("sex") if fields.get("sex") in self.sexes else None, "birth": None}
        if fields.get("birth"):
            yy, mm = fields["birth"]
            for parts in self.dates:
                if parts[0] is not None and parts[0] % 100 == yy and parts[1] == mm:
                    moved = dates.shifted_value(parts, self.date_shift)
                    person["birth"] = (moved.year, moved.month)
                    break
        return person


def years_between(born: dt.date, on: dt.date) -> int:
    """Whole years from `born` to `on` (an age): a birthday on 29 February comes on 1 March."""
    return on.year - born.year - ((on.month, on.day) < (born.month, born.day))


def _key(value: str) -> str:
    """A value as the memory of surrogates knows it: folded, spaces normalised."""
    return " ".join(fold(value).split())


def _context(text: str, start: int) -> str:
    return text[max(0, start - CONTEXT_CHARS):start]


def unsure_tag(label: str) -> str:
    """What surrogate mode writes for a span that failed its check: visibly not a real value."""
    return f"[{label}?]"


@dataclass
class Redaction:
    """A redacted text, its spans' offsets in it, and what was done to each span: `actions` holds
    (start, end, label, action) in the ORIGINAL text's offsets, action "tag", "mask", "surrogate"
    or UNSURE. Holds no text of the original beyond `text` itself (the redacted one)."""

    text: str
    spans: list[SpanT]
    actions: list[tuple[int, int, str, str]] = field(default_factory=list)

    def counts(self) -> dict[str, dict[str, int]]:
        """{action: {label: spans}}, e.g. {"surrogate": {"PERSON": 3}, "unsure": {"AGE": 1}}."""
        out: dict[str, Counter] = {}
        for _, _, label, action in self.actions:
            out.setdefault(action, Counter())[label] += 1
        return {action: dict(sorted(c.items())) for action, c in sorted(out.items())}


def _rewrite(text: str, chosen: Sequence[SpanT], values: Sequence[str], actions: Sequence[str]) -> Redaction:
    """The text with each (non-overlapping, sorted) span replaced by its value, and the spans'
    offsets in it. A surrogate's span leaves out punctuation it starts or ends with ("Transportes
    Gil S.A." is written whole, its span ends before the last dot), as spans everywhere in the
    project do; a tag's span ("[PERSON]", "[AGE?]") is the whole tag."""
    new_text, placed = replace_spans(text, [(start, end) for start, end, _ in chosen], values)
    spans = []
    for (start, end), value, action, (_, _, label) in zip(placed, values, actions, chosen):
        if action == "surrogate":
            lead, tail = trim_span(value, 0, len(value))
            start, end = start + lead, start + tail
        spans.append((start, end, label))
    return Redaction(new_text, spans, [(start, end, label, action) for (start, end, label), action in zip(chosen, actions)])


def mask_value(value: str, mask_char: str = "*", mask_length: str = "fixed") -> str:
    """The mask of one span: MASK_WIDTH mask characters whatever the span ("fixed", the default: the
    length of a masked name or hospital is a hint to who or which it was), or one per character
    with spaces kept ("keep": the text's layout and offsets do not move)."""
    if mask_length == "keep":
        return "".join(c if c.isspace() else mask_char for c in value)
    if mask_length != "fixed":
        raise ValueError(f"unknown mask length {mask_length!r} (expected one of {', '.join(MASK_LENGTHS)})")
    return mask_char * MASK_WIDTH


def redact(text: str, spans: Sequence[SpanT], mode: str = "tag", lang: str | None = None,
           seed: int = 0, doc_id: str = "", mask_char: str = "*", key: bytes | None = None,
           patient_id: str | None = None, demo: bool = False,
           lexicon: clinical.ClinicalLexicon | None = None, mask_length: str = "fixed") -> Redaction:
    """The redacted text, its spans' offsets and what was done to each span. Surrogate mode needs
    `key` (or `demo=True`: the demo key of `seed`, not secret); `lexicon`: the clinical lexicon its
    checks read (default: the one a loaded pack registered for `lang`); `mask_length`: "fixed" (one
    mask of MASK_WIDTH characters per span) or "keep" (a mask character per character)."""
    if mode not in MODES:
        raise ValueError(f"unknown redaction mode {mode!r} (expected one of {', '.join(MODES)})")
    if mode == "surrogate":
        if key is None:
            if not demo:
                raise SurrogateKeyError(f"surrogate mode needs a secret key: --key-file FILE or ${KEY_ENV} "
                                        f"(--demo-key for a demonstration with a key that is not secret)")
            key = demo_key(seed)
        return Redactor(key).redact(text, spans, doc_id, lang, patient_id, lexicon)
    chosen = non_overlapping(spans)
    if mode == "tag":
        values = [f"[{label}]" for _, _, label in chosen]
    else:
        values = [mask_value(text[s:e], mask_char, mask_length) for s, e, _ in chosen]
    return _rewrite(text, chosen, values, [mode] * len(chosen))


def redact_text(text: str, spans: Sequence[SpanT], mode: str = "tag", lang: str | None = None,
                seed: int = 0, doc_id: str = "", mask_char: str = "*", key: bytes | None = None,
                patient_id: str | None = None, demo: bool = False, mask_length: str = "fixed") -> tuple[str, list[SpanT]]:
    """Redacted text and the spans' offsets in it (redact(), without the actions)."""
    done = redact(text, spans, mode, lang, seed, doc_id, mask_char, key, patient_id, demo, mask_length=mask_length)
    return done.text, done.spans


def redact_doc(doc, mode: str = "tag", seed: int = 0, doc_id: str = "", mask_char: str = "*",
               key: bytes | None = None, patient_id: str | None = None, demo: bool = False,
               mask_length: str = "fixed") -> str:
    """Redact a processed spaCy Doc using its final entities (doc.ents)."""
    spans = [(e.start_char, e.end_char, e.label_) for e in doc.ents]
    return redact_text(doc.text, spans, mode=mode, lang=doc.lang_, seed=seed, doc_id=doc_id, mask_char=mask_char,
                       key=key, patient_id=patient_id, demo=demo, mask_length=mask_length)[0]
