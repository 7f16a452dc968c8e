"""One synthetic note: `Note` draws a document type and composes its header and sections from a
locale's data (data.py) into a record whose gold spans are the offsets of its labelled pieces. Its
`make_<name>` methods are the makers of slots.yml (data.MAKERS says what each needs)."""

from __future__ import annotations

import datetime as dt
import functools
import random
from dataclasses import dataclass, field
from typing import Any, Callable

from ..readers import RawRecord, RawSpan
from ..records import trim_span
from .data import NAME_PARTS, SHAPE, SynthData, id_role, id_value
from .syntax import GENDER, NUMBER, SLOT, SynthError


# ----------------------------------------------------------------------------- one note
def _weighted(rng: random.Random, weights: dict[str, float]) -> str:
    keys = list(weights)
    return rng.choices(keys, weights=[float(weights[k]) for k in keys])[0]


def _cap(s: str) -> str:
    return s[:1].upper() + s[1:]


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
    relation: dict[str, Any] = field(default_factory=dict)  # the record of its relation list ({rel, sex})

    @property
    def full(self) -> str:
        return " ".join([self.given, *self.surnames])


class Note:
    """Builds one record: picks the document type and renders its header and sections."""

    def __init__(self, data: SynthData, rng: random.Random, fake, record_id: str):
        self.d, self.rng, self.fake, self.id = data, rng, fake, record_id
        self.lex, self.fmt = data.lexicon, data.formats
        self.people: dict[str, Person] = {}
        self.kept: dict[str, Any] = {}  # what a `keep: note` slot drew, by slot (a piece, or a record)
        self.templates: list[str] = []
        self.where = "note"  # the file and entry being rendered, for error messages
        self.sex = rng.choice("mf")
        self.in_header = False
        self._section_values: set[str] = set()  # context values written in this section (not repeated)
        self._nesting = 0  # > 0 while rendering a value inside another value
        self._section_casing: dict | None = None  # sections.yml `name_casing` of the section being rendered
        self._timeline()

    # -- the patient's timeline ------------------------------------------------
    def _timeline(self) -> None:
        rng, fmt = self.rng, self.fmt
        first, last = fmt.get("admission_years", [2005, 2023])
        start = dt.date(int(first), 1, 1)
        admission = start + dt.timedelta(days=rng.randint(0, (dt.date(int(last), 12, 31) - start).days))
        groups = fmt.get("age_groups") or [{"share": 1.0, "min": 18, "max": 90}]
        group = rng.choices(groups, weights=[float(g["share"]) for g in groups])[0]
        years = rng.randint(int(group["min"]), int(group["max"]))
        birth = admission - dt.timedelta(days=years * 365 + rng.randint(10, 360))
        self.age_years = admission.year - birth.year - ((admission.month, admission.day) < (birth.month, birth.day))
        self.age_months = (admission - birth).days // 30
        self.events = {"birth": birth, "admission": admission}
        for event, spec in (fmt.get("timeline") or {}).items():
            if not spec.get("each_mention"):
                self.events[event] = self._event_day(spec)

    def _event_day(self, spec: dict) -> dt.date:
        lo, hi = spec["days"]
        day = self.events[spec["from"]] + dt.timedelta(days=self.rng.randint(lo, hi))
        for event, days in (spec.get("not_before") or {}).items():
            day = max(day, self.events[event] + dt.timedelta(days=int(days)))
        return day

    @functools.cached_property
    def house_date_format(self) -> str:
        """The note's own numeric date format, used for most of its numeric dates."""
        return self.rng.choice(self.fmt["date_formats"]["numeric"])

    @functools.cached_property
    def header_name_case(self) -> str:
        return self._case()

    def _case(self) -> str:
        return _weighted(self.rng, self._section_casing or self.lex.get("name_casing") or {"title": 1})

    # -- helpers of the makers ---------------------------------------------------
    def _format(self, pattern: str, file: str, **fields: Any) -> str:
        """A value format of the data filled with named fields; a field it does not offer is a data error."""
        try:
            return pattern.format(**fields)
        except KeyError as err:
            offered = ", ".join("{" + f + "}" for f in fields)
            raise SynthError(f"{self.d.folder / file}: format {pattern!r} ({self.where}): no field {{{err.args[0]}}} here "
                             f"(fields: {offered})") from None
        except (IndexError, ValueError) as err:
            raise SynthError(f"{self.d.folder / file}: format {pattern!r} ({self.where}): {err}") from None

    def _setting(self, file_attr: str, key: str) -> Any:
        value = getattr(self.d, file_attr).get(key)
        if value is None:
            raise SynthError(f"{self.d.folder / (file_attr + '.yml')}: no {key!r} (needed by {self.where})")
        return value

    def _value(self, spec: dict, text: str, kind: str | None = None) -> Piece:
        """A piece with the slot's label (none: context text) and `kind` attribute."""
        kind = kind or spec.get("kind")
        return Piece(text, spec.get("label"), {"kind": kind} if kind else {})

    def _once(self, key: str, spec: dict, draw: Callable[[], Any]) -> Any:
        """`draw()` once per note for a `keep: note` slot (the same value in every mention), else every time."""
        if spec.get("keep") != "note":
            return draw()
        if key not in self.kept:
            self.kept[key] = draw()
        return self.kept[key]

    def _distinct(self, draw: Callable[[], tuple[str, str]]) -> str:
        """A context value (`draw()` -> text, key) not yet written in this section: "GPT 218 UI/l, GPT 190 UI/l"
        reads like a bug. Values drawn inside another value are not tracked."""
        text, key = draw()
        if self._nesting:
            return text
        for _ in range(4):
            if key not in self._section_values:
                break
            text, key = draw()
        self._section_values.add(key)
        return text

    def person(self, role: str) -> Person:
        """The person of a role of slots.yml, drawn at its first mention."""
        if role not in self.people:
            spec, rng = self.d.slots[role], self.rng
            relation: dict[str, Any] = {}
            if spec.get("sex") == "patient":
                sex = self.sex
            elif spec.get("relation"):
                relation = dict(rng.choice(self.d.lists[spec["relation"]]))
                sex = relation["sex"]
            else:
                sex = rng.choice("mf")
            n_surnames = int(self.lex.get("surnames", 1))
            if "one_surname_p" in spec and rng.random() < float(spec["one_surname_p"]):
                n_surnames = 1
            surnames = [self._surname() for _ in range(n_surnames)]
            # Catalan writes a conjunction between the two surnames in some registers ("Puig i Soler"):
            # lexicon.yml `surname_forms: {and_p, and_word}`; without them no random number is drawn
            forms = self.lex.get("surname_forms") or {}
            if len(surnames) == 2 and forms.get("and_word") and rng.random() < float(forms.get("and_p", 0)):
                surnames[1] = f"{forms['and_word']} {surnames[1]}"
            given = self._extra_name(self.lex.get("given_names") or {}, sex)
            if given is None:
                given = self.fake.first_name_male() if sex == "m" else self.fake.first_name_female()
            self.people[role] = Person(role, sex, given, surnames, relation)
        return self.people[role]

    def _surname(self) -> str:
        """One surname: Faker's, or a form it never draws (lexicon.yml `surname_forms`): a surname
        with a particle from the locale's list, one of the locale's `extra_surnames`, or two joined
        ("García-Ripoll")."""
        forms, rng = self.lex.get("surname_forms") or {}, self.rng
        particles = forms.get("particle_surnames") or []
        if particles and rng.random() < float(forms.get("particle_p", 0)):
            return str(rng.choice(particles))
        surname = self._extra_name(forms, "extra_surnames") or self.fake.last_name()
        if rng.random() < float(forms.get("compound_p", 0)):
            surname += str(forms.get("compound_joiner", "-")) + (self._extra_name(forms, "extra_surnames") or self.fake.last_name())
        return surname

    def _extra_name(self, pool: dict, key: str) -> str | None:
        """A name of the locale's own list `pool[key]` with probability `pool["extra_p"]` (lexicon.yml
        `given_names`, `surname_forms`: names Faker lacks); None: take Faker's. Without the list no
        random number is drawn, so a locale without pools gets the corpus it had before."""
        names = pool.get(key) or []
        if names and self.rng.random() < float(pool.get("extra_p", 0)):
            return str(self.rng.choice(names))
        return None

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

    # -- makers (slots.yml `make`) -------------------------------------------------
    def make_text(self, name: str, spec: dict, args: list[str]) -> Piece:
        """A template, or one of a list of templates, rendered: `text: "{street_types} {street_names}"`."""
        text = spec["text"]
        return self._once(name, spec, lambda: self._value(spec, self.text_of(text if isinstance(text, str) else self.rng.choice(text))))

    def make_record(self, name: str, spec: dict, args: list[str]) -> Piece:
        """A record of a list (`{place.city}`: a field of it); with `keep: note`, one record per note."""
        record = self._once(name, spec, lambda: self.rng.choice(self.d.lists[spec["list"]]))
        return self._value(spec, self.text_of(str(record[args[0]])))

    def make_shape(self, name: str, spec: dict, args: list[str]) -> Piece:
        """A shape of formats.yml filled with digits and letters (`shapes: phone_formats`)."""
        return self._once(name, spec, lambda: self._value(spec, id_value(SHAPE, self.fmt[spec["shapes"]], self.rng)))

    def make_id(self, name: str, spec: dict, args: list[str]) -> Piece:
        """`{id.<name>}`: an identifier of formats.yml `ids`; its name is the span's `kind`."""
        ident = self.fmt["ids"][args[0]]
        return self._once(f"{name}.{args[0]}", spec, lambda: Piece(
            id_value(ident["kind"], ident["layouts"], self.rng), spec.get("label"), {"kind": args[0], "role": id_role(ident)}))

    def make_email(self, name: str, spec: dict, args: list[str]) -> Piece:
        """An e-mail address made of a person's name (formats.yml `email_formats`) and a domain of a list."""
        from deid_runtime.surrogates.forms import ascii_slug

        def draw() -> Piece:
            person = self.person(spec["person"])
            conjunction = str((self.lex.get("surname_forms") or {}).get("and_word") or "") + " "
            surnames = [ascii_slug(s.removeprefix(conjunction)) for s in person.surnames]  # "i Soler" -> soler
            number = self.rng.randint(1, 99)
            local = self._format(self.rng.choice(self.fmt["email_formats"]), "formats.yml", given=ascii_slug(person.given.split()[0]),
                                 surname=surnames[0], last_surname=surnames[-1], number=number)
            return self._value(spec, f"{local}@{self.rng.choice(self.d.lists[spec['domains']])}")
        return self._once(name, spec, draw)

    def make_person(self, name: str, spec: dict, args: list[str]) -> Piece:
        """`{role}` a person's name, `{role.part}` a part of it, its title, a relation field, an agreement word
        or an attribute (a slot drawn once for this person)."""
        person = self.person(name)
        part = args[0] if args else "full"
        if part in NAME_PARTS:
            text = {"full": person.full, "given": person.given, "surnames": " ".join(person.surnames), "surname1": person.surnames[0]}[part]
            case = self.header_name_case if self.in_header else self._case()
            text = text.upper() if case == "upper" else text.lower() if case == "lower" else text
            attrs = {k: v for k, v in (("kind", spec.get("kind")), ("part", NAME_PARTS[part])) if v}
            return Piece(text, spec.get("label"), attrs)
        if part == "title":
            return Piece(self.rng.choice(self.d.titles.draws(spec["title"], person.sex)))
        if part in person.relation:
            return Piece(self.text_of(str(person.relation[part])))
        agreement = self.lex.get("agreement") or {}
        if part in agreement:
            return Piece(agreement[part][person.sex])
        attribute = spec["attributes"][part]
        return self._once(f"{name}.{part}", {"keep": "note"}, lambda: self.resolve(attribute, fresh=True))

    def make_sex(self, name: str, spec: dict, args: list[str]) -> Piece:
        """`{sex.<attribute>}`: the patient's sex as lexicon.yml `sex` writes it."""
        value = self.lex["sex"][self.sex][args[0]]
        return self._value(spec, self.rng.choice(value) if isinstance(value, list) else str(value))

    def make_date(self, name: str, spec: dict, args: list[str]) -> Piece:
        """`{date.<event>[.<style>]}`: a day of the note's timeline in a style of formats.yml `date_formats`."""
        event, style = args[0], args[1] if len(args) > 1 else None
        event_spec = (self.fmt.get("timeline") or {}).get(event, {})
        day = self.events[event] if event in self.events else self._event_day(event_spec)
        if style is None:
            text_share = float(self.fmt.get("date_text_share", 0.3))
            style = event_spec.get("style") or ("numeric" if self.in_header or self.rng.random() >= text_share else "text")
        return self._value(spec, self._format_date(day, style), kind=event)

    def _format_date(self, day: dt.date, style: str) -> str:
        f = self.fmt
        if style == "numeric" and self.rng.random() < float(f.get("date_house_share", 0.85)):
            pattern = self.house_date_format
        else:
            pattern = self.rng.choice(f["date_formats"][style])
        names = {field: f[key][index] for field, key, index in
                 (("month", "months", day.month - 1), ("mon", "months_abbr", day.month - 1), ("weekday", "weekdays", day.weekday()))
                 if key in f}
        return self._format(pattern, "formats.yml", d=day.day, dd=f"{day.day:02d}", m=day.month, mm=f"{day.month:02d}",
                            yyyy=day.year, yy=f"{day.year % 100:02d}", **names)

    def make_age(self, name: str, spec: dict, args: list[str]) -> Piece:
        """`{age}`: the patient's age at admission (in months for infants, sometimes in words); `{age.other}`."""
        rng, f = self.rng, self.fmt
        if args:
            lo, hi = f["other_ages"]
            pattern = rng.choice(f.get("age_formats_other") or f["age_formats"])
            return self._value(spec, self._format(pattern, "formats.yml", n=rng.randint(int(lo), int(hi))), kind="other")
        if self.age_years < int(f.get("months_below_years", 0)):
            text = self._format(rng.choice(self._setting("formats", "age_formats_infant")), "formats.yml", n=max(1, self.age_months))
        elif not self.in_header and "number_words" in f and rng.random() < float(f.get("age_words_share", 0)):
            text = self._format(rng.choice(self._setting("formats", "age_words_formats")), "formats.yml", w=self.number_in_words(self.age_years))
        else:
            text = self._format(rng.choice(f["age_formats"]), "formats.yml", n=self.age_years)
        return self._value(spec, text, kind="patient")

    def make_measurement(self, name: str, spec: dict, args: list[str]) -> Piece:
        """A record {name, unit, min, max, dec} of a list with a value drawn in its range: "creatinina 1,23 mg/dl"."""
        def draw() -> tuple[str, str]:
            item = self.rng.choice(self.d.lists[spec["list"]])
            value = f"{self.rng.uniform(float(item['min']), float(item['max'])):.{int(item['dec'])}f}"
            value = value.replace(".", self.fmt.get("decimal_sep", "."))
            text = self._format(spec["format"], "slots.yml", name=item["name"], value=value, unit=item.get("unit", "")).strip()
            return text, item["name"]  # one value per lab in a section
        return self._value(spec, self._distinct(draw))

    def make_dose(self, name: str, spec: dict, args: list[str]) -> Piece:
        """An amount drawn from a record {min, max, step, unit} of a list: "250 mg"."""
        def draw() -> tuple[str, str]:
            item = self.rng.choice(self.d.lists[spec["list"]])
            amount = self.rng.randrange(int(item["min"]), int(item["max"]) + 1, int(item["step"]))
            text = self._format(spec["format"], "slots.yml", amount=amount, unit=item["unit"]).strip()
            return text, text
        return self._value(spec, self._distinct(draw))

    def make_medication(self, name: str, spec: dict, args: list[str]) -> Piece:
        """A drug of a list of records {drug, doses}, one of its doses and an entry of the `posology` list."""
        def draw() -> tuple[str, str]:
            item = self.rng.choice(self.d.lists[spec["list"]])
            dose = self.rng.choice(item["doses"])
            posology = self.text_of(str(self.rng.choice(self.d.lists[spec["posology"]])))
            return self._format(spec["format"], "slots.yml", drug=item["drug"], dose=dose, posology=posology), item["drug"]
        return self._value(spec, self._distinct(draw))

    # -- rendering ---------------------------------------------------------------
    def resolve(self, slot: str, fresh: bool = False) -> Piece:
        """The piece for one `{slot}` of a template (`fresh`: ignore the slot's `keep`)."""
        cap = slot[0].isupper()
        head, *args = (slot[0].lower() + slot[1:]).split(".")
        if head.startswith("n:"):
            lo, hi = NUMBER.fullmatch(head).groups()
            width = len(lo) if lo.startswith("0") else 0  # {n:000-999} is zero-padded
            piece = Piece(str(self.rng.randint(int(lo), int(hi))).zfill(width))
        elif head in self.d.slots:
            spec = self.d.slots[head]
            piece = getattr(self, f"make_{spec['make']}")(head, {**spec, "keep": None} if fresh else spec, args)
        elif head in self.d.lists:
            def draw() -> tuple[str, str]:
                entry = self.rng.choice(self.d.lists[head])
                text = self.text_of(str(entry[args[0]] if args else entry))
                return text, text
            piece = Piece(self._distinct(draw))
        else:  # SynthData.check finds these first
            raise SynthError(f"{self.d.folder}: {self.where}: unknown slot {{{slot}}}")
        piece = Piece(piece.text, piece.label, dict(piece.attrs))  # a kept value stays as drawn
        if cap and piece.label is None:
            piece.text = _cap(piece.text)
        return piece

    def agree(self, text: str) -> str:
        """Resolve `<m|f>` agreement with the patient's sex."""
        return GENDER.sub(lambda m: m.group(1) if self.sex == "m" else m.group(2), text)

    def expand(self, template: str) -> str:
        """Resolve `[a|b]` choices (innermost first) and `<m|f>` agreement; slots stay."""
        while True:
            start = template.rfind("[")
            if start < 0:
                break
            end = template.find("]", start)
            if end < 0:
                raise SynthError(f"{self.d.folder}: {self.where}: unbalanced [ in template {template!r}")
            template = template[:start] + self.rng.choice(_split_alternatives(template[start + 1 : end])) + template[end + 1 :]
        return self.agree(template)

    def render(self, template: str, sentence: bool = False) -> list[Piece]:
        text = self.expand(template)
        pieces: list[Piece] = []
        pos = 0
        for m in SLOT.finditer(text):
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

    def text_of(self, template: str) -> str:
        """A template rendered as plain text: the value of a slot or a list entry (labels inside it do not count)."""
        self._nesting += 1
        try:
            return "".join(p.text for p in self.render(template))
        finally:
            self._nesting -= 1

    # -- the note ------------------------------------------------------------------
    def header(self, layout: dict) -> list[Piece]:
        rng = self.rng
        self.in_header = True
        self.where = f"header.yml: layout {layout['name']!r}"
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
                self._section_values = set()
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
        self.where = f"sections.yml: section {name!r}"
        out: list[Piece] = []
        self._section_casing = spec.get("name_casing")  # a section may case its names its own way (a note in lower case)
        heading = self.text_of(rng.choice(spec.get("headings", [""])))
        if heading:
            fmt = heading_format if rng.random() < 0.85 else rng.choice(self.d.heading_formats)
            text = fmt.replace("{h}", heading).replace("{H}", heading.upper())
            out.append(Piece(text.replace("..", ".").replace(".:", ":")))  # "Tto." + ":" -> "Tto:"
        templates = spec.get("templates", [])
        self._section_values = set()  # context values are not repeated within a section
        lo, hi = spec.get("n", [1, 1])
        k = min(len(templates), rng.randint(int(lo), int(hi)))
        chosen = rng.sample(range(len(templates)), k)
        newline_p = float(self.d.sections.get("newline_p", 0.2))
        for j, t in enumerate(chosen):
            if j:
                out.append(Piece("\n" if rng.random() < newline_p else " "))
            self.templates.append(f"{name}:{t}")
            out.extend(self.render(templates[t], sentence=True))
        self._section_casing = None
        return out

    def build(self) -> RawRecord:
        rng = self.rng
        docs = self.d.sections["documents"]
        doc = rng.choices(docs, weights=[float(x.get("weight", 1)) for x in docs])[0]
        layout_name = _weighted(rng, doc["headers"]) if doc.get("headers") else None
        pieces = self.header(self.d.layout(layout_name)) if layout_name else []
        if pieces:
            pieces.append(Piece(rng.choice(["\n", "\n\n", "\n"])))
        order = list(doc["sections"])
        for i in range(1, len(order) - 2):
            if rng.random() < float(doc.get("swap_p", 0.0)):
                order[i], order[i + 1] = order[i + 1], order[i]
        heading_format = rng.choice(self.d.heading_formats)  # the note's own, for most of its headings
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

    def assemble(self, pieces: list[Piece], doc_type: str, layout: str | None) -> RawRecord:
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
                    spans.append(RawSpan(pos + start, pos + end, p.label, attrs=dict(p.attrs)))
            chunks.append(text)
            pos += len(text)
        joined = "".join(chunks)
        text = joined.strip("\n ")
        shift = len(joined) - len(joined.lstrip("\n "))
        for s in spans:
            s.start, s.end = s.start - shift, s.end - shift
        meta = {"source_format": "synth", "doc_type": doc_type, "header_layout": layout, "templates": self.templates}
        return RawRecord(id=self.id, text=text, spans=spans, source=f"synthetic corpus {self.d.folder}", meta=meta)
