"""The embedded default corpus: synthetic clinical narratives with gold PHI spans, generated from a seed.

The engine is locale-agnostic; every word of the notes lives in `corpora/synth/<lc>/`:
  lexicon.yml   titles, relatives, streets, places, hospital/centre/institution patterns, professions, noise
  formats.yml   date/age/phone formats and identifier kinds (with the check-digit algorithm to use)
  clinical.yml  clinical context (symptoms, diagnoses, drugs, labs...), never PHI
  header.yml    header layouts (blocks of field lines, optional, shuffled)
  sections.yml  document types, their sections and the sentence templates of each section

A note is assembled from pieces (literal text or a value with a label); spans are the offsets of the
labelled pieces, so gold spans are exact by construction and every record is validated anyway.
Within a note an entity is consistent (one patient, one address, one NHC; the age follows from the
birth and admission dates) while each mention is written in its own way (casing, date format).
Person names come from Faker in the locale of lexicon.yml.

Template syntax: `{slot}` (see `Note.resolve`), `[a|b|c]` a choice, `<m|f>` agreement with the
patient's sex. A slot whose name starts with a capital capitalises a context value ("{Drug}").
"""

from __future__ import annotations

import datetime as dt
import random
import re
import string
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import typer
import yaml

from . import PROJECT_ROOT
from .records import Record, Span, trim_span, validate_record, write_records, write_text_atomic

SYNTH_DIR = PROJECT_ROOT / "corpora" / "synth"
DATA_FILES = ("lexicon.yml", "formats.yml", "clinical.yml", "header.yml", "sections.yml")

_SLOT = re.compile(r"\{([A-Za-z_][\w.:\-]*)\}")
_GENDER = re.compile(r"<([^<>|]*)\|([^<>|]*)>")


class SynthError(ValueError):
    """Bad synthetic-corpus data: the message names the file and the entry."""


# ----------------------------------------------------------------------------- data
@dataclass
class SynthData:
    lang: str
    lexicon: dict[str, Any]
    formats: dict[str, Any]
    clinical: dict[str, Any]
    header: dict[str, Any]
    sections: dict[str, Any]
    folder: Path

    @classmethod
    def load(cls, lang: str = "es", folder: str | Path | None = None) -> "SynthData":
        folder = Path(folder) if folder else SYNTH_DIR / lang
        if not folder.is_dir():
            raise SynthError(f"{folder}: no synthetic-corpus data for language {lang!r}")
        parts = {}
        for name in DATA_FILES:
            path = folder / name
            if not path.exists():
                raise SynthError(f"{path}: missing synthetic-corpus data file")
            try:
                parts[name.split(".")[0]] = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
            except yaml.YAMLError as err:
                raise SynthError(f"{path}: not valid YAML ({err})") from None
        data = cls(lang=lang, folder=folder, **parts)
        data.check()
        return data

    def check(self) -> None:
        """Fail early, naming file and entry, on a section/layout reference that does not exist."""
        layouts = {l["name"] for l in self.header.get("layouts", [])}
        sections = self.sections.get("sections", {})
        for doc in self.sections.get("documents", []):
            for name in doc.get("headers", {}):
                if name not in layouts:
                    raise SynthError(f"{self.folder / 'sections.yml'}: document {doc['name']!r} uses unknown header layout {name!r}")
            for name in doc.get("sections", []):
                if name not in sections:
                    raise SynthError(f"{self.folder / 'sections.yml'}: document {doc['name']!r} uses unknown section {name!r}")
        for kind, spec in self.formats.get("ids", {}).items():
            if spec.get("generator") not in ID_GENERATORS:
                raise SynthError(f"{self.folder / 'formats.yml'}: id {kind!r} uses unknown generator {spec.get('generator')!r}")

    def template_count(self) -> int:
        n = sum(len(s.get("templates", [])) for s in self.sections.get("sections", {}).values())
        for layout in self.header.get("layouts", []):
            for block in layout.get("blocks", []):
                for line in block.get("lines", []):
                    t = line.get("t") if isinstance(line, dict) else line
                    n += len(t) if isinstance(t, list) else 1
        return n


# ----------------------------------------------------------------------------- identifiers
def _digits(rng: random.Random, n: int, first_nonzero: bool = False) -> str:
    s = "".join(rng.choice(string.digits) for _ in range(n))
    if first_nonzero and s[0] == "0":
        s = rng.choice("123456789") + s[1:]
    return s


def gen_pattern(rng: random.Random, spec: dict, letters: str) -> str:
    pattern = rng.choice(spec["patterns"])
    return "".join(rng.choice(string.digits) if c == "#" else rng.choice(letters) if c == "L" else c for c in pattern)


def gen_es_dni(rng: random.Random, spec: dict, letters: str) -> str:
    from stdnum.es import dni

    n = _digits(rng, 8, first_nonzero=True)
    return rng.choice(spec["formats"]).format(n=n, c=dni.calc_check_digit(n))


def gen_es_nie(rng: random.Random, spec: dict, letters: str) -> str:
    from stdnum.es import nie

    p, n = rng.choice("XYZ"), _digits(rng, 7)
    return rng.choice(spec["formats"]).format(p=p, n=n, c=nie.calc_check_digit(p + n))


def es_nass_control(province: str, number: str) -> str:
    """Control digits of a Spanish social security number (the rule validators.es_nass checks)."""
    base = int(province) * 10_000_000 + int(number) if int(number) < 10_000_000 else int(province + number)
    return f"{base % 97:02d}"


def gen_es_nass(rng: random.Random, spec: dict, letters: str) -> str:
    p = f"{rng.randint(1, 52):02d}"
    n = _digits(rng, 8, first_nonzero=rng.random() < 0.8)
    return rng.choice(spec["formats"]).format(p=p, n=n, c=es_nass_control(p, n))


def gen_es_iban(rng: random.Random, spec: dict, letters: str) -> str:
    from stdnum import iban
    from stdnum.es import ccc

    bank, branch, account = _digits(rng, 4, True), _digits(rng, 4), _digits(rng, 10)
    dc = ccc.calc_check_digits(bank + branch + "00" + account)
    bban = bank + branch + dc + account
    compact = "ES" + iban.calc_check_digits("ES00" + bban) + bban
    grouped = " ".join(compact[i : i + 4] for i in range(0, len(compact), 4))
    return rng.choice(spec["formats"]).format(compact=compact, grouped=grouped)


# Check-digit algorithms by name (formats.yml names them); a new locale adds its own here.
ID_GENERATORS: dict[str, Callable[[random.Random, dict, str], str]] = {
    "pattern": gen_pattern,
    "es_dni": gen_es_dni,
    "es_nie": gen_es_nie,
    "es_nass": gen_es_nass,
    "es_iban": gen_es_iban,
}


# ----------------------------------------------------------------------------- helpers
def _ascii(s: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", s) if not unicodedata.combining(c))


def _split_alternatives(body: str) -> list[str]:
    """Split `a|b|c` on the bars that are not inside `<m|f>` or `{slot}`."""
    out, depth, cur = [], 0, []
    for ch in body:
        if ch in "<{":
            depth += 1
        elif ch in ">}":
            depth -= 1
        if ch == "|" and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur))
    return out


def _weighted(rng: random.Random, weights: dict[str, float]) -> str:
    keys = list(weights)
    return rng.choices(keys, weights=[float(weights[k]) for k in keys])[0]


def _cap(s: str) -> str:
    return s[:1].upper() + s[1:]


@dataclass
class Piece:
    text: str
    label: str | None = None
    attrs: dict[str, Any] = field(default_factory=dict)


@dataclass
class Person:
    role: str
    sex: str
    given: str
    surnames: list[str]
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def full(self) -> str:
        return " ".join([self.given, *self.surnames])


STAFF_ROLES = ("doctor", "doctor2", "referrer", "nurse", "colleague")


# ----------------------------------------------------------------------------- one note
class Note:
    """Builds one record: picks the document type, the entities, and renders header and sections."""

    def __init__(self, data: SynthData, rng: random.Random, fake, record_id: str):
        self.d, self.rng, self.fake, self.id = data, rng, fake, record_id
        self.lex, self.fmt, self.clin = data.lexicon, data.formats, data.clinical
        self.people: dict[str, Person] = {}
        self.values: dict[str, tuple[str, str, dict]] = {}  # consistent values per note: slot -> (text, label, attrs)
        self.templates: list[str] = []
        self.sex = rng.choice("mf")
        self.in_header = False
        self._sentence_fillers: set[str] = set()
        self._dates()
        self.place = rng.choice(self.lex["places"])
        self.numeric_date_format = rng.choice(self.fmt["date_formats_numeric"])
        self.header_name_case = self._case()

    # -- entities ------------------------------------------------------------
    def _dates(self) -> None:
        rng = self.rng
        first, last = self.fmt.get("admission_years", [2005, 2023])
        start = dt.date(int(first), 1, 1)
        self.admission = start + dt.timedelta(days=rng.randint(0, (dt.date(int(last), 12, 31) - start).days))
        groups = self.fmt.get("age_groups") or [{"share": 1.0, "min": 18, "max": 90}]
        group = rng.choices(groups, weights=[float(g["share"]) for g in groups])[0]
        years = rng.randint(int(group["min"]), int(group["max"]))
        self.birth = self.admission - dt.timedelta(days=years * 365 + rng.randint(10, 360))
        age_days = (self.admission - self.birth).days
        self.age_years = self.admission.year - self.birth.year - ((self.admission.month, self.admission.day) < (self.birth.month, self.birth.day))
        self.age_months = age_days // 30
        self.event_dates = {
            "birth": self.birth,
            "admission": self.admission,
            "onset": self.admission - dt.timedelta(days=rng.randint(1, 60)),
            "test": self.admission + dt.timedelta(days=rng.randint(0, 6)),
            "surgery": self.admission + dt.timedelta(days=rng.randint(1, 8)),
        }
        self.event_dates["discharge"] = self.admission + dt.timedelta(days=rng.randint(2, 21))
        self.event_dates["followup"] = self.event_dates["discharge"] + dt.timedelta(days=rng.randint(15, 200))
        self.event_dates["report"] = self.event_dates["discharge"]

    def _case(self) -> str:
        return _weighted(self.rng, self.lex["name_casing"])

    def _given(self, sex: str) -> str:
        return self.fake.first_name_male() if sex == "m" else self.fake.first_name_female()

    def person(self, role: str) -> Person:
        if role not in self.people:
            rng = self.rng
            extra: dict[str, Any] = {}
            if role == "patient":
                sex = self.sex
            elif role.startswith("relative"):
                rel = rng.choice(self.lex["relatives"])
                sex, extra["rel"] = rel["sex"], rel["rel"]
            else:
                sex = rng.choice("mf")
            n_surnames = int(self.lex.get("surnames", 1))
            if role.startswith("relative") and rng.random() < 0.3:
                n_surnames = 1
            surnames = [self.fake.last_name() for _ in range(n_surnames)]
            self.people[role] = Person(role, sex, self._given(sex), surnames, extra)
        return self.people[role]

    def _name_piece(self, text: str, role: str, part: str) -> Piece:
        case = self.header_name_case if self.in_header else self._case()
        text = text.upper() if case == "upper" else text.lower() if case == "lower" else text
        kind = "patient" if role == "patient" else "relative" if role.startswith("relative") else "staff"
        return Piece(text, "PERSON", {"kind": kind, "part": part} if part != "full" else {"kind": kind})

    def _keep(self, slot: str, make: Callable[[], tuple[str, str, dict]]) -> Piece:
        if slot not in self.values:
            self.values[slot] = make()
        text, label, attrs = self.values[slot]
        return Piece(text, label, dict(attrs))

    # -- value makers ----------------------------------------------------------
    def _format_date(self, day: dt.date, style: str) -> str:
        f = self.fmt
        if style == "numeric":
            pattern = self.numeric_date_format if self.rng.random() < 0.85 else self.rng.choice(f["date_formats_numeric"])
        else:
            pattern = self.rng.choice(f[f"date_formats_{style}"])
        return pattern.format(d=day.day, dd=f"{day.day:02d}", m=day.month, mm=f"{day.month:02d}", yyyy=day.year,
                              yy=f"{day.year % 100:02d}", month=f["months"][day.month - 1], mon=f["months_abbr"][day.month - 1],
                              weekday=f["weekdays"][day.weekday()])

    def date_piece(self, parts: list[str]) -> Piece:
        event = parts[0] if parts else "past"
        style = parts[1] if len(parts) > 1 else None
        if event in ("past", "year"):
            day = self.admission - dt.timedelta(days=self.rng.randint(200, 20 * 365))
            day = max(day, self.birth + dt.timedelta(days=365))
            if event == "year":
                return Piece(str(day.year), "DATE", {"kind": "year"})
            style = style or "vague"
        elif event in self.event_dates:
            day = self.event_dates[event]
        else:
            raise SynthError(f"unknown date event {event!r} in a template of {self.d.folder}")
        if style is None:
            style = "numeric" if self.in_header or self.rng.random() >= self.fmt.get("date_text_share", 0.3) else "text"
        return Piece(self._format_date(day, style), "DATE", {"kind": event})

    def age_piece(self, other: bool) -> Piece:
        if other:
            formats = self.fmt.get("age_formats_other") or self.fmt["age_formats"]
            return Piece(self.rng.choice(formats).format(n=self.rng.randint(20, 95)), "AGE", {"kind": "other"})
        if self.age_years < 2:
            text = self.rng.choice(self.fmt["age_formats_infant"]).format(n=max(1, self.age_months))
        elif not self.in_header and "number_words" in self.fmt and self.rng.random() < float(self.fmt.get("age_words_share", 0)):
            text = self.rng.choice(self.fmt["age_words_formats"]).format(w=self.number_in_words(self.age_years))
        else:
            text = self.rng.choice(self.fmt["age_formats"]).format(n=self.age_years)
        return Piece(text, "AGE", {"kind": "patient"})

    def number_in_words(self, n: int) -> str:
        words = self.fmt["number_words"]
        units, tens = words["units"], {int(k): v for k, v in words["tens"].items()}
        if n < len(units):
            text = units[n]
        elif n % 10 == 0:
            text = tens[n // 10]
        else:
            text = tens[n // 10] + words.get("joiner", " ") + units[n % 10]
        last = text.split()[-1]
        short = words.get("before_noun", {}).get(last)
        return text[: len(text) - len(last)] + short if short else text

    def phone(self) -> str:
        return "".join(self.rng.choice(string.digits) if c == "#" else c for c in self.rng.choice(self.fmt["phone_formats"]))

    def ident(self, kind: str) -> tuple[str, str, dict]:
        spec = self.fmt["ids"].get(kind)
        if spec is None:
            raise SynthError(f"{self.d.folder / 'formats.yml'}: no identifier kind {kind!r}")
        value = ID_GENERATORS[spec["generator"]](self.rng, spec, self.fmt.get("pattern_letters", string.ascii_uppercase))
        return value, "ID", {"kind": kind}

    def email_of(self, person: Person, institutional: bool) -> str:
        rng = self.rng
        g = _ascii(person.given.split()[0]).lower()
        s = [_ascii(x).lower().replace(" ", "") for x in person.surnames]
        local = rng.choice([f"{g}.{s[0]}", f"{g[0]}{s[0]}", f"{g}{s[0]}{rng.randint(1, 99)}", f"{g[:3]}{s[0][:3]}{s[-1][:2]}",
                            f"{g}_{s[-1]}", f"{s[0]}.{g[0]}"])
        domains = self.lex["institution_email_domains" if institutional else "email_domains"]
        return f"{local}@{rng.choice(domains)}"

    def fill(self, pattern: str, city: str | None = None) -> str:
        rng = self.rng
        place = rng.choice(self.lex["places"]) if city is None else None
        return pattern.format(city=city or place["city"], province=(place or self.place)["province"],
                              saint=rng.choice(self.lex["hospital_saints"]), person=rng.choice(self.lex["hospital_people"]),
                              district=rng.choice(self.lex["districts"]))

    def hospital(self) -> str:
        return self.fill(self.rng.choice(self.lex["hospital_patterns"]), self.place["city"] if self.rng.random() < 0.5 else None)

    def address(self) -> str:
        rng = self.rng
        number = rng.choice(self.lex["street_number_formats"]).format(n=rng.randint(1, 180), x=rng.choice(self.lex["street_extras"]))
        return f"{rng.choice(self.lex['street_types'])} {rng.choice(self.lex['street_names'])}{number}"

    def filler(self, name: str) -> str:
        rng = self.rng
        if name == "lab":
            lab = rng.choice(self.clin["labs"])
            value = rng.uniform(lab["min"], lab["max"])
            text = f"{value:.{lab['dec']}f}".replace(".", self.lex.get("decimal_sep", "."))
            return f"{lab['name']} {text} {lab['unit']}".rstrip()
        if name == "dose":
            dose = rng.choice(self.clin["doses"])
            return f"{rng.randrange(dose['min'], dose['max'] + 1, dose['step'])} {dose['unit']}"
        if name == "service":
            return rng.choice(self.clin["fillers"]["service"])
        if name == "medication":
            drug = rng.choice(sorted(self.clin["medications"]))
            return f"{drug} {rng.choice(self.clin['medications'][drug])} {rng.choice(self.clin['fillers']['posology'])}"
        return self.agree(rng.choice(self.clin["fillers"][name]))

    @staticmethod
    def _filler_key(name: str, text: str) -> str:
        # labs and medications repeat by name, not by value ("troponina T 562", "troponina T 154")
        return text.rsplit(" ", 2)[0] if name == "lab" else text.split(" ")[0] if name == "medication" else text

    def agree(self, text: str) -> str:
        """Resolve `<m|f>` agreement with the patient's sex."""
        return _GENDER.sub(lambda m: m.group(1) if self.sex == "m" else m.group(2), text)

    # -- slots -----------------------------------------------------------------
    def resolve(self, slot: str) -> Piece:
        """The piece for one `{slot}` of a template."""
        rng = self.rng
        cap = slot[0].isupper()
        name = slot[0].lower() + slot[1:]
        parts = name.split(".")
        head = parts[0]
        if head.startswith("n:"):
            lo, hi = head[2:].split("-")
            return Piece(str(rng.randint(int(lo), int(hi))))
        if name in self.clin.get("fillers", {}) or name in ("lab", "dose", "service", "medication"):
            text = self.filler(name)
            for _ in range(4):  # "GPT 218 UI/l, GPT 190 UI/l" in one section reads like a bug
                if self._filler_key(name, text) not in self._sentence_fillers:
                    break
                text = self.filler(name)
            self._sentence_fillers.add(self._filler_key(name, text))
            return Piece(_cap(text) if cap else text)
        if head == "sex":
            s = self.lex["sex"][self.sex]
            value = s.get(parts[1]) if len(parts) > 1 else s["noun"]
            text = rng.choice(value) if isinstance(value, list) else value
            return Piece(_cap(text) if cap else text)
        if head in ("patient", *STAFF_ROLES) or head.startswith("relative"):
            return self.person_piece(head, parts[1] if len(parts) > 1 else "full", cap)
        if head == "date":
            return self.date_piece(parts[1:])
        if head == "age":
            return self.age_piece(other=len(parts) > 1)
        if head == "id":
            return self._keep(name, lambda: self.ident(parts[1]))
        if head in ("phone", "phone2", "phone_hospital"):
            return self._keep(head, lambda: (self.phone(), "PHONE", {"kind": head}))
        if head == "fax":
            return self._keep(head, lambda: (self.phone(), "PHONE", {"kind": "fax"}))
        if head == "email":
            return self._keep(head, lambda: (self.email_of(self.person("patient"), False), "EMAIL", {"kind": "patient"}))
        if head in ("email_doctor", "email_referrer"):
            role = "doctor" if head == "email_doctor" else "referrer"
            return self._keep(head, lambda: (self.email_of(self.person(role), True), "EMAIL", {"kind": "staff"}))
        if head == "email_hospital":
            return self._keep(head, lambda: (f"{rng.choice(self.lex['hospital_mailboxes'])}@{rng.choice(self.lex['institution_email_domains'])}",
                                             "EMAIL", {"kind": "organization"}))
        if head == "url":
            return self._keep(head, lambda: (f"{rng.choice(['https://', 'http://', 'www.', 'https://www.'])}{rng.choice(self.lex['institution_email_domains'])}/{rng.choice(self.lex['web_paths'])}",
                                             "URL", {}))
        if head == "ip":
            return self._keep(head, lambda: (rng.choice([f"10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}",
                                                         f"192.168.{rng.randint(0, 255)}.{rng.randint(1, 254)}",
                                                         f"172.{rng.randint(16, 31)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}"]), "IP", {}))
        if head == "address":
            return self._keep(head, lambda: (self.address(), "ADDRESS", {}))
        if head == "city":
            return self._keep(head, lambda: (self.place["city"], "LOCATION", {"kind": "city"}))
        if head == "city2":
            return self._keep(head, lambda: (rng.choice(self.lex["places"])["city"], "LOCATION", {"kind": "city"}))
        if head == "province":
            return self._keep(head, lambda: (self.place["province"], "LOCATION", {"kind": "province"}))
        if head == "postcode":
            return self._keep(head, lambda: (f"{self.place['cp']}{rng.randint(0, 999):03d}", "LOCATION", {"kind": "postcode"}))
        if head in ("country", "origin"):
            return self._keep(head, lambda: (rng.choice(self.lex["countries"] if head == "country" or rng.random() < 0.6 else self.lex["regions"]),
                                             "LOCATION", {"kind": "country"}))
        if head in ("hospital", "hospital2"):
            return self._keep(head, lambda: (self.hospital(), "ORGANIZATION", {"kind": "hospital"}))
        if head == "centre":
            return self._keep(head, lambda: (self.fill(rng.choice(self.lex["centre_patterns"]), self.place["city"]), "ORGANIZATION", {"kind": "centre"}))
        if head == "institution":
            return self._keep(head, lambda: (self.fill(rng.choice(self.lex["institutions"])), "ORGANIZATION", {"kind": "institution"}))
        if head == "profession":
            return self._keep(head, lambda: (rng.choice(self.lex["professions"]), "PROFESSION", {}))
        raise SynthError(f"unknown slot {{{slot}}} in a template of {self.d.folder}")

    def person_piece(self, role: str, part: str, cap: bool) -> Piece:
        p = self.person(role)
        staff = role in STAFF_ROLES
        if part == "full":
            return self._name_piece(p.full, role, "full")
        if part == "given":
            return self._name_piece(p.given, role, "given")
        if part == "surnames":
            return self._name_piece(" ".join(p.surnames), role, "surnames")
        if part == "surname1":
            return self._name_piece(p.surnames[0], role, "surname")
        if part == "title":
            group = "staff" if staff else "courtesy"
            if role == "nurse":
                group = "nurse"
            return Piece(self.rng.choice(self.lex["titles"][group][p.sex]))
        if part == "rel":
            return Piece(p.extra.get("rel", "familiar"))
        if part == "o":
            return Piece("o" if p.sex == "m" else "a")
        if part in self.lex.get("articles", {}):
            return Piece(self.lex["articles"][part][p.sex])
        if part == "licence":
            return self._keep(f"{role}.licence", lambda: self.ident("colegiado"))
        if part == "profession":
            return self._keep(f"{role}.profession", lambda: (self.rng.choice(self.lex["professions"]), "PROFESSION", {}))
        if part == "email":
            return self._keep(f"{role}.email", lambda: (self.email_of(p, staff), "EMAIL", {"kind": "staff" if staff else "personal"}))
        raise SynthError(f"unknown person attribute {role}.{part} in a template of {self.d.folder}")

    # -- rendering ---------------------------------------------------------------
    def expand(self, template: str) -> str:
        """Resolve `[a|b]` choices (innermost first) and `<m|f>` agreement; slots stay."""
        while True:
            start = template.rfind("[")
            if start < 0:
                break
            end = template.find("]", start)
            if end < 0:
                raise SynthError(f"{self.d.folder}: unbalanced [ in template {template!r}")
            template = template[:start] + self.rng.choice(_split_alternatives(template[start + 1 : end])) + template[end + 1 :]
        return self.agree(template)

    def render(self, template: str, sentence: bool = False) -> list[Piece]:
        text = self.expand(template)
        pieces: list[Piece] = []
        pos = 0
        for m in _SLOT.finditer(text):
            if m.start() > pos:
                pieces.append(Piece(text[pos : m.start()]))
            piece = self.resolve(m.group(1))
            if piece.label is None and pieces and pieces[-1].text.rstrip(" ").endswith("."):
                piece.text = _cap(piece.text)  # a context value that opens a sentence ("... sin soplos. Palidez")
            if piece.text:
                pieces.append(piece)
            pos = m.end()
        if pos < len(text):
            pieces.append(Piece(text[pos:]))
        if sentence and pieces and pieces[0].label is None:
            pieces[0].text = _cap(pieces[0].text)
        return pieces

    # -- the note ------------------------------------------------------------------
    def header(self, layout: dict) -> list[Piece]:
        rng = self.rng
        self.in_header = True
        sep = rng.choice(layout.get("sep", ["\n"]))
        upper_labels = rng.random() < float(self.d.header.get("upper_labels", 0.0))
        lines: list[list[Piece]] = []
        for b, block in enumerate(layout.get("blocks", [])):
            if rng.random() >= float(block.get("p", 1.0)):
                continue
            entries = list(enumerate(block.get("lines", [])))
            if block.get("shuffle"):
                rng.shuffle(entries)
            for i, line in entries:
                if isinstance(line, dict):
                    if rng.random() >= float(line.get("p", 1.0)):
                        continue
                    line = line["t"]
                alt = 0
                if isinstance(line, list):
                    alt = rng.randrange(len(line))
                    line = line[alt]
                self.templates.append(f"header:{layout['name']}:{b}:{i}:{alt}")
                self._sentence_fillers = set()
                pieces = self.render(line)
                if upper_labels:
                    for p in pieces:
                        if p.label is None:
                            p.text = p.text.upper()
                lines.append(pieces)
        out: list[Piece] = []
        for i, pieces in enumerate(lines):
            if i:
                out.append(Piece(sep))
            out.extend(pieces)
        if out and rng.random() < float(self.lex.get("all_caps_header_p", 0.0)):
            for p in out:
                p.text = p.text.upper()
        self.in_header = False
        return out

    def section(self, name: str, spec: dict, heading_format: str) -> list[Piece]:
        rng = self.rng
        out: list[Piece] = []
        heading = self.expand(rng.choice(spec.get("headings", [""])))
        if heading:
            fmt = heading_format if rng.random() < 0.85 else rng.choice(self.d.sections["heading_formats"])
            text = fmt.replace("{h}", heading).replace("{H}", heading.upper())
            out.append(Piece(text.replace("..", ".").replace(".:", ":")))  # "Tto." + ":" -> "Tto:"
        templates = spec.get("templates", [])
        self._sentence_fillers = set()  # context values are not repeated within a section
        lo, hi = spec.get("n", [1, 1])
        k = min(len(templates), rng.randint(int(lo), int(hi)))
        chosen = rng.sample(range(len(templates)), k)
        newline_p = float(self.d.sections.get("newline_p", 0.2))
        for j, t in enumerate(chosen):
            if j:
                out.append(Piece("\n" if rng.random() < newline_p else " "))
            self.templates.append(f"{name}:{t}")
            out.extend(self.render(templates[t], sentence=True))
        return out

    def build(self) -> Record:
        rng = self.rng
        docs = self.d.sections["documents"]
        doc = rng.choices(docs, weights=[float(x.get("weight", 1)) for x in docs])[0]
        layout_name = _weighted(rng, doc.get("headers", {"ninguna": 1}))
        layout = next(l for l in self.d.header["layouts"] if l["name"] == layout_name)
        pieces = self.header(layout)
        if pieces:
            pieces.append(Piece(rng.choice(["\n", "\n\n", "\n"])))
        order = list(doc["sections"])
        for i in range(1, len(order) - 2):
            if rng.random() < float(doc.get("swap_p", 0.0)):
                order[i], order[i + 1] = order[i + 1], order[i]
        heading_format = rng.choice(self.d.sections["heading_formats"])
        first = True
        for name in order:
            spec = self.d.sections["sections"][name]
            if rng.random() >= float(spec.get("p", 1.0)):
                continue
            body = self.section(name, spec, heading_format)
            if not body:
                continue
            if not first:
                pieces.append(Piece(rng.choice(["\n", "\n", "\n\n"])))
            first = False
            pieces.extend(body)
        return self.assemble(pieces, doc["name"], layout_name)

    def noise(self, text: str) -> str:
        for rule in self.lex.get("noise", []):
            find, repl, p = rule["find"], rule["replace"], float(rule["p"])
            if find in text:
                parts = text.split(find)
                text = parts[0] + "".join((repl if self.rng.random() < p else find) + part for part in parts[1:])
        return text

    def assemble(self, pieces: list[Piece], doc_type: str, layout: str) -> Record:
        merged: list[Piece] = []
        for p in pieces:  # merge neighbouring literals so noise rules see "Dr. " across pieces
            if p.label is None and merged and merged[-1].label is None:
                merged[-1] = Piece(merged[-1].text + p.text)
            else:
                merged.append(Piece(p.text, p.label, p.attrs))
        chunks, spans, pos = [], [], 0
        for p in merged:
            text = self.noise(p.text) if p.label is None else p.text
            if p.label is not None:
                start, end = trim_span(text, 0, len(text))
                if start < end:
                    spans.append(Span(pos + start, pos + end, p.label, dict(p.attrs)))
            chunks.append(text)
            pos += len(text)
        text = "".join(chunks).strip("\n ")
        shift = len("".join(chunks)) - len("".join(chunks).lstrip("\n "))
        spans = [Span(s.start - shift, s.end - shift, s.label, s.attrs) for s in spans]
        meta = {"source_format": "synth", "doc_type": doc_type, "header_layout": layout, "templates": self.templates}
        record = Record(id=self.id, lang=self.d.lang, text=text, spans=spans, meta=meta)
        validate_record(record, where=f"synthetic corpus {self.d.folder}")
        return record


# ----------------------------------------------------------------------------- corpus
def generate_records(n: int = 1000, seed: int = 13, lang: str = "es", data: SynthData | None = None) -> Iterator[Record]:
    """Yield `n` synthetic records; the same (n, seed, lang, data) always gives the same records."""
    from faker import Faker

    data = data or SynthData.load(lang)
    rng = random.Random(seed)
    fake = Faker(data.lexicon.get("faker_locale", "es_ES"))
    fake.seed_instance(seed)
    for i in range(n):
        yield Note(data, rng, fake, f"synth-{lang}-{seed}-{i:06d}").build()


def corpus_report(records: list[Record], data: SynthData | None = None, lang: str = "es") -> dict[str, Any]:
    """Records, tokens, PHI per label, distinct templates used (of those available), document types."""
    import spacy

    tokenizer = spacy.blank(lang).tokenizer
    labels: Counter = Counter()
    kinds: Counter = Counter()
    templates: set[str] = set()
    doc_types: Counter = Counter()
    layouts: Counter = Counter()
    tokens = chars = 0
    for r in records:
        tokens += len(tokenizer(r.text))
        chars += len(r.text)
        for s in r.spans:
            labels[s.label] += 1
            if "kind" in s.attrs:
                kinds[f"{s.label}/{s.attrs['kind']}"] += 1
        templates.update(r.meta.get("templates", []))
        doc_types[r.meta.get("doc_type", "?")] += 1
        layouts[r.meta.get("header_layout", "?")] += 1
    report = {
        "records": len(records),
        "distinct_texts": len({r.text for r in records}),
        "tokens": tokens,
        "characters": chars,
        "phi_spans": sum(labels.values()),
        "phi_per_label": dict(sorted(labels.items())),
        "phi_per_kind": dict(sorted(kinds.items())),
        "distinct_templates_used": len(templates),
        "doc_types": dict(sorted(doc_types.items())),
        "header_layouts": dict(sorted(layouts.items())),
    }
    if data is not None:
        report["templates_available"] = data.template_count()
    return report


def synth(out: str | Path, n: int = 1000, seed: int = 13, lang: str = "es", report: str | Path | None = None) -> dict[str, Any]:
    """Write `n` synthetic records to `out` (atomically) and return (and optionally write) the corpus report."""
    import srsly

    data = SynthData.load(lang)
    records = list(generate_records(n, seed, lang, data))
    write_records(out, records)
    rep = corpus_report(records, data, lang)
    rep.update({"seed": seed, "lang": lang, "out": str(out)})
    if report:
        write_text_atomic(report, srsly.json_dumps(rep, indent=2))
    return rep


def synth_command(
    out: Path = typer.Option(..., "--out", help="Output JSONL of records"),
    n: int = typer.Option(1000, "--n", help="Number of records"),
    seed: int = typer.Option(13, "--seed", help="Random seed (same seed, same corpus)"),
    lang: str = typer.Option("es", "--lang", help="Language of corpora/synth/<lang>/"),
    report: Path | None = typer.Option(None, "--report", help="Write the corpus report (JSON) here"),
) -> None:
    """Generate the embedded synthetic corpus: N clinical notes with gold PHI spans."""
    import json

    rep = synth(out, n=n, seed=seed, lang=lang, report=report)
    typer.echo(json.dumps({k: v for k, v in rep.items() if k != "phi_per_kind"}, ensure_ascii=False, indent=1))
