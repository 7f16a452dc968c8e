"""The synthetic corpus engine: clinical notes with exact gold PHI spans, rendered from one locale's data.

The engine knows no language. Every word, template, slot, agreement rule and value format of a locale
lives in `corpora/synth/<lc>/` (docs/corpus.md, "The synthetic corpus", describes each file):

  sections.yml  document types, their sections and the sentence templates of each section
  header.yml    header layouts (blocks of field lines, optional, shuffled)
  slots.yml     what each `{slot}` of a template means: one of the engine's makers (`MAKERS`) and its settings
  lexicon.yml   how people are named, agreement words, typing slips, and word lists (their titles are
                the locale's: languages/<lc>/surrogate_data/titles.yml, through Locale.titles)
  clinical.yml  clinical word lists (symptoms, diagnoses, drugs, labs...), never PHI
  formats.yml   the note's timeline; how dates, ages, phones, e-mails and identifiers are written

so a new locale is a new folder of data files. A note is assembled from pieces (literal text, or a value
with a label); spans are the offsets of the labelled pieces, so gold spans are exact by construction.
Within a note an entity is consistent (one patient, one address, one NHC; the age follows from the
birth and admission dates) while each mention is written its own way. Person names come from Faker,
or, with a probability, from name pools of the locale's lexicon (`given_names`, `surname_forms`).

Template syntax: `{slot}` / `{slot.arg}` (slots.yml), `{list}` / `{list.field}` (an entry of a word
list), `{n:lo-hi}` (a number), `[a|b|c]` a choice, `<m|f>` agreement with the patient's sex. A slot
written with a capital ("{Drug}") capitalises a context value.

The corpus enters the pipeline as the reader format "synth" (`readers.read_corpus(folder, "synth")`,
`factory extract --format synth`); `generate_records` and `factory synth` go through that reader too.
"""

from __future__ import annotations

import datetime as dt
import functools
import random
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence


from .locale import Locale
from deid_runtime.titles import Titles
from .labels import CANONICAL_LABELS
from .readers import RawRecord, RawSpan, ReadReport, read_corpus, register_generated
from .records import Record, read_yaml_mapping, trim_span

DATA_FILES = ("sections.yml", "header.yml", "slots.yml", "lexicon.yml", "clinical.yml", "formats.yml")
REQUIRED_FILES = ("sections.yml", "lexicon.yml")  # the others may be left out by a locale that does not need them
LIST_FILES = ("lexicon.yml", "clinical.yml")  # files whose `lists:` are the word lists of the templates
BUILT_IN_EVENTS = ("birth", "admission")  # the rest of a note's timeline is formats.yml `timeline`

_SLOT = re.compile(r"\{([A-Za-z_][\w.:\-]*)\}")
_GENDER = re.compile(r"<([^<>|]*)\|([^<>|]*)>")
_NUMBER = re.compile(r"n:(\d+)-(\d+)")
_SLOT_NAME = re.compile(r"[a-z_]\w*")


class SynthError(ValueError):
    """Bad synthetic-corpus data: the message names the file and the entry."""


# ----------------------------------------------------------------------------- data
@dataclass
class SynthData:
    """One locale's data folder, loaded and checked (`check` names the file and entry of a problem)."""

    lang: str
    folder: Path
    sections: dict[str, Any]
    header: dict[str, Any]
    slots: dict[str, dict[str, Any]]
    lexicon: dict[str, Any]
    clinical: dict[str, Any]
    formats: dict[str, Any]
    titles: Titles = field(default_factory=lambda: Titles({}))  # the locale's (Locale.titles)
    lists: dict[str, list[Any]] = field(default_factory=dict)  # the word lists of LIST_FILES, by name
    list_file: dict[str, str] = field(default_factory=dict)  # the file of each list, for messages

    @classmethod
    def load(cls, lang: str = "es", folder: str | Path | None = None) -> "SynthData":
        folder = Path(folder) if folder else Locale.of(lang).synth_dir
        if not folder.is_dir():
            raise SynthError(f"{folder}: no synthetic-corpus data for language {lang!r}")
        parts: dict[str, dict[str, Any]] = {}
        for name in DATA_FILES:
            path = folder / name
            parts[name.removesuffix(".yml")] = {}
            if not path.exists():
                if name in REQUIRED_FILES:
                    raise SynthError(f"{path}: missing synthetic-corpus data file")
                continue
            parts[name.removesuffix(".yml")] = read_yaml_mapping(path, SynthError, "settings (`key: value`) at the top level")
        slots = parts.pop("slots").get("slots") or {}
        if "titles" in parts["lexicon"]:
            raise SynthError(f"{folder / 'lexicon.yml'}: `titles` are the locale's, in {Locale.of(lang).titles_file}")
        data = cls(lang=lang, folder=folder, slots=slots, titles=Locale.of(lang).titles(), **parts)
        data._gather_lists()
        data.check()
        return data

    def _gather_lists(self) -> None:
        for file in LIST_FILES:
            for name, entries in (getattr(self, file.removesuffix(".yml")).get("lists") or {}).items():
                where = f"{self.folder / file}: list {name!r}"
                if name in self.lists:
                    raise SynthError(f"{where}: {self.list_file[name]} has a list of the same name")
                if not isinstance(entries, list) or not entries:
                    raise SynthError(f"{where}: must be a non-empty list")
                self.lists[name], self.list_file[name] = entries, file

    @property
    def faker_locale(self) -> str | None:
        return self.lexicon.get("faker_locale")

    @property
    def heading_formats(self) -> list[str]:
        return self.sections.get("heading_formats") or ["{h}:\n"]

    def layout(self, name: str) -> dict[str, Any]:
        return next(l for l in self.header.get("layouts", []) if l["name"] == name)

    # -- checks ----------------------------------------------------------------
    def check(self) -> None:
        """Fail early, naming file and entry, on anything a note would trip over."""
        self._check_documents()
        self._check_timeline()
        self._check_ids()
        self._check_slots()
        self._check_templates()
        self._check_names()

    def _check_names(self) -> None:
        """lexicon.yml `given_names: {extra_p, m: [...], f: [...]}` and `surname_forms: {extra_p, extra_surnames:
        [...]}`; a section's `name_casing` (sections.yml)."""
        for key, lists in (("given_names", ("m", "f")), ("surname_forms", ("extra_surnames",))):
            pool = self.lexicon.get(key)
            if pool is None:
                continue
            if not isinstance(pool, dict):
                raise self._fail("lexicon.yml", key, "expected settings (`extra_p: 0.3`, lists of names)")
            for name in lists:
                names = pool.get(name)
                if names is not None and (not isinstance(names, list) or not all(isinstance(n, str) and n.strip() for n in names)):
                    raise self._fail("lexicon.yml", f"{key} {name!r}", "must be a list of names")
            for share in ("extra_p", "and_p"):
                p = pool.get(share, 0)
                if (share == "and_p" or any(pool.get(name) for name in lists)) and not (isinstance(p, (int, float)) and 0 <= p <= 1):
                    raise self._fail("lexicon.yml", f"{key} {share}", "must be a probability between 0 and 1")
        for name, spec in (self.sections.get("sections") or {}).items():
            casing = spec.get("name_casing")
            if casing is not None and not (isinstance(casing, dict) and casing and set(casing) <= {"title", "upper", "lower"}
                                           and all(isinstance(w, (int, float)) and w >= 0 for w in casing.values())):
                raise self._fail("sections.yml", f"section {name!r}", "name_casing: shares of title, upper and lower")

    def _fail(self, file: str, where: str, problem: str) -> SynthError:
        return SynthError(f"{self.folder / file}: {where}: {problem}")

    def _check_documents(self) -> None:
        layouts = {l.get("name") for l in self.header.get("layouts", [])}
        sections = self.sections.get("sections") or {}
        if not self.sections.get("documents"):
            raise self._fail("sections.yml", "documents", "no document types")
        for doc in self.sections["documents"]:
            if not doc.get("name") or not doc.get("sections"):
                raise self._fail("sections.yml", f"document {doc.get('name')!r}", "needs a `name` and `sections`")
            for name in doc.get("headers") or {}:
                if name not in layouts:
                    raise self._fail("sections.yml", f"document {doc.get('name')!r}", f"uses unknown header layout {name!r}")
            for name in doc.get("sections") or []:
                if name not in sections:
                    raise self._fail("sections.yml", f"document {doc.get('name')!r}", f"uses unknown section {name!r}")

    def _check_timeline(self) -> None:
        known = set(BUILT_IN_EVENTS)
        styles = self.formats.get("date_formats") or {}
        for event, spec in (self.formats.get("timeline") or {}).items():
            def fail(problem: str) -> SynthError:
                return self._fail("formats.yml", f"timeline event {event!r}", problem)
            if not isinstance(spec, dict):
                raise fail("expected {from: <event>, days: [min, max]}")
            if event in known:
                raise fail("is defined twice (birth and admission are built in)")
            if spec.get("from") not in known:
                raise fail(f"`from` must be one of {', '.join(sorted(known))} (an event drawn once, defined above)")
            days = spec.get("days")
            if not (isinstance(days, list) and len(days) == 2 and all(isinstance(d, int) for d in days) and days[0] <= days[1]):
                raise fail("`days` must be [min, max], whole days")
            if any(ref not in known for ref in spec.get("not_before") or {}):
                raise fail(f"`not_before` names an event that is not one of {', '.join(sorted(known))}")
            if spec.get("style") and spec["style"] not in styles:
                raise fail(f"style {spec['style']!r} is not in date_formats")
            if not spec.get("each_mention"):
                known.add(event)

    def _check_ids(self) -> None:
        from deid_runtime import ids

        probe = random.Random(0)
        for name, spec in (self.formats.get("ids") or {}).items():
            if not isinstance(spec, dict) or not spec.get("kind") or not spec.get("layouts"):
                raise self._fail("formats.yml", f"id {name!r}", "needs a `kind` and `layouts`")
            if spec["kind"] == SHAPE and spec.get("role") not in ids.ROLES:
                raise self._fail("formats.yml", f"id {name!r}", f"a shape needs a `role`: one of {', '.join(ids.ROLES)}")
            for layout in spec["layouts"]:
                try:
                    _id_value(spec["kind"], [layout], probe)
                except KeyError:
                    raise self._fail("formats.yml", f"id {name!r}", f"unknown identifier kind {spec['kind']!r}") from None
                except ValueError as err:
                    raise self._fail("formats.yml", f"id {name!r}", str(err)) from None

    def _check_slots(self) -> None:
        for name, spec in self.slots.items():  # each slot on its own first: the makers' checks read other slots
            def fail(problem: str) -> SynthError:
                return self._fail("slots.yml", f"slot {name!r}", problem)
            if not _SLOT_NAME.fullmatch(name):
                raise fail("a slot name is lower-case letters, digits and _")
            if name in self.lists:
                raise fail(f"{self.list_file[name]} has a list of the same name")
            if not isinstance(spec, dict) or spec.get("make") not in MAKERS:
                raise fail(f"`make` must be one of {', '.join(sorted(MAKERS))}")
            maker = MAKERS[spec["make"]]
            missing = [s for s in maker.settings if s not in spec]
            if missing:
                raise fail(f"maker {spec['make']!r} needs {', '.join(missing)}")
            for setting in maker.lists:
                if spec[setting] not in self.lists:
                    raise fail(f"{setting}: no list {spec[setting]!r} in {' or '.join(LIST_FILES)}")
            if spec.get("label") is not None and spec["label"] not in CANONICAL_LABELS:
                raise fail(f"label {spec['label']!r} is not one of {', '.join(sorted(CANONICAL_LABELS))}")
            if spec.get("keep") not in (None, "note"):
                raise fail("`keep` is `note` or absent")
        for name, spec in self.slots.items():
            maker = MAKERS[spec["make"]]
            problem = maker.check(self, spec) if maker.check else None
            if problem:
                raise self._fail("slots.yml", f"slot {name!r}", problem)

    def _check_templates(self) -> None:
        for file, where, template in self._templates():
            if not isinstance(template, str):
                raise self._fail(file, where, f"expected text, got {template!r}")
            if template.count("[") != template.count("]"):
                raise self._fail(file, where, f"unbalanced [ ] in {template!r}")
            for m in _SLOT.finditer(template):
                problem = self.slot_problem(m.group(1))
                if problem:
                    raise self._fail(file, where, f"{{{m.group(1)}}}: {problem}")

    def slot_problem(self, slot: str) -> str | None:
        """What is wrong with `{slot}` in a template of this data (None: nothing)."""
        head, *args = (slot[0].lower() + slot[1:]).split(".")
        if head.startswith("n:"):
            m = _NUMBER.fullmatch(head)
            return None if m and not args and int(m.group(1)) <= int(m.group(2)) else "a number is written {n:min-max}"
        if head in self.slots:
            maker = MAKERS[self.slots[head]["make"]]
            return maker.args(self, self.slots[head], args) if maker.args else ("takes no argument" if args else None)
        if head in self.lists:
            return _field_problem(self, head, args)
        return f"unknown slot (not in slots.yml, not a list of {' or '.join(LIST_FILES)})"

    def _header_lines(self) -> Iterator[tuple[dict[str, Any], list[Any]]]:
        """(layout, the line's alternative templates) for every line of every header layout."""
        for layout in self.header.get("layouts", []):
            for block in layout.get("blocks", []):
                for line in block.get("lines", []):
                    line = line.get("t") if isinstance(line, dict) else line
                    yield layout, line if isinstance(line, list) else [line]

    def _templates(self) -> Iterator[tuple[str, str, Any]]:
        """(file, entry, template) for every template of the data."""
        for layout, alternatives in self._header_lines():
            for template in alternatives:
                yield "header.yml", f"layout {layout.get('name')!r}", template
        for name, spec in (self.sections.get("sections") or {}).items():
            for template in [*spec.get("headings", []), *spec.get("templates", [])]:
                yield "sections.yml", f"section {name!r}", template
        for name, entries in self.lists.items():
            for entry in entries:
                values = [v for v in entry.values() if isinstance(v, str)] if isinstance(entry, dict) else [str(entry)]
                for template in values:
                    yield self.list_file[name], f"list {name!r}", template
        for name, spec in self.slots.items():
            text = spec.get("text") if spec.get("make") == "text" else []
            for template in text if isinstance(text, list) else [text]:
                yield "slots.yml", f"slot {name!r}", template

    def template_count(self) -> int:
        """Sentence templates of the sections plus alternatives of the header lines."""
        sentences = sum(len(s.get("templates", [])) for s in (self.sections.get("sections") or {}).values())
        return sentences + sum(len(alternatives) for _, alternatives in self._header_lines())


def _field_problem(data: SynthData, list_name: str, args: list[str]) -> str | None:
    """`{list}` suits a list of words, `{list.field}` a list of records that all have that field."""
    entries = data.lists[list_name]
    records = [e for e in entries if isinstance(e, dict)]
    if not records:
        return f"list {list_name!r} holds words, not records: write it without a field" if args else None
    if len(records) != len(entries):
        return f"list {list_name!r} mixes words and records"
    if len(args) != 1:
        return f"list {list_name!r} holds records: name one field, e.g. {{{list_name}.{next(iter(records[0]))}}}"
    missing = sum(args[0] not in r for r in records)
    return f"list {list_name!r}: {missing} of its {len(records)} records have no field {args[0]!r}" if missing else None


def _missing_fields(data: SynthData, list_name: str, fields: Sequence[str]) -> str | None:
    """A maker's list of records must give every record the fields the maker reads."""
    for i, entry in enumerate(data.lists[list_name]):
        lacking = [f for f in fields if not isinstance(entry, dict) or f not in entry]
        if lacking:
            return f"list {list_name!r}: entry {i + 1} lacks {', '.join(lacking)}"
    return None


# ----------------------------------------------------------------------------- identifiers
SHAPE = "shape"  # the identifier kind of codes without check digits


def _id_role(spec: dict) -> str:
    """What an identifier of formats.yml `ids` identifies (deid_runtime.ids.ROLES), written on its
    span (`role`): the surrogate stage draws the target's identifier for that role. A shape says it
    (`role:`); a registry identifier has its own (its module's `role`)."""
    from deid_runtime import ids

    return spec.get("role") or ids.get(spec["kind"]).role


def _id_value(kind: str, layouts: Sequence[str], rng: random.Random) -> str:
    """One identifier as a note writes it: the engine's one door to identifier code (formats.yml `ids`
    gives every `{id.<name>}` its kind and layouts).

    kind "shape" (NHC, episode, plate...): a layout is drawn and filled by runtime.surrogates.forms.fill_pattern
    (`#` digit, `@` digit 1-9, `L` capital consonant). Any other kind names an identifier of the
    registry `deid_runtime.ids` ("es.nass"): a valid value is drawn in compact form, then laid
    out in a drawn layout, each `#` taking its next character. Raises KeyError for an unknown kind,
    ValueError for a layout that does not fit the value."""
    from deid_runtime import ids
    from deid_runtime.surrogates.forms import fill_pattern

    if kind == SHAPE:
        return fill_pattern(rng, rng.choice(layouts))
    return ids.layout(ids.get(kind).generate(rng), rng.choice(layouts))


# ----------------------------------------------------------------------------- makers
@dataclass(frozen=True)
class Maker:
    """How a slot of slots.yml becomes a piece: `make(note, slot name, settings, args)`."""

    make: Callable[..., "Piece"]
    settings: tuple[str, ...] = ()  # settings the slot must give
    lists: tuple[str, ...] = ()  # settings that name a word list
    check: Callable[[SynthData, dict], str | None] | None = None  # a problem of the slot's settings
    args: Callable[[SynthData, dict, list[str]], str | None] | None = None  # a problem of `{slot.args}`; None: takes none


MAKERS: dict[str, Maker] = {}


def maker(name: str, **how: Any) -> Callable:
    """Register a Note method as the maker `name` (slots.yml `make: name`)."""
    def register(method: Callable) -> Callable:
        MAKERS[name] = Maker(method, **how)
        return method
    return register


def _needs(file_attr: str, *keys: str) -> Callable[[SynthData, dict], str | None]:
    """A check: these settings of lexicon.yml / formats.yml must be there."""
    def check(data: SynthData, spec: dict) -> str | None:
        missing = [k for k in keys if not getattr(data, file_attr).get(k)]
        return f"needs {', '.join(missing)} in {file_attr}.yml" if missing else None
    return check


def _check_person(data: SynthData, spec: dict) -> str | None:
    if not data.faker_locale:
        return "needs faker_locale in lexicon.yml (person names come from Faker)"
    if spec.get("sex") not in (None, "patient"):
        return "`sex` is `patient` or absent"
    if spec.get("title") and not all(data.titles.draws(spec["title"], s) for s in "mf"):
        return f"the titles of locale {data.lang!r} ({Locale.of(data.lang).titles_file}) have no group {spec['title']!r} with m and f"
    if spec.get("relation"):
        if spec["relation"] not in data.lists:
            return f"relation: no list {spec['relation']!r}"
        if any(not isinstance(r, dict) or r.get("sex") not in ("m", "f") for r in data.lists[spec["relation"]]):
            return f"every record of list {spec['relation']!r} needs `sex: m` or `sex: f`"
    for part, slot in (spec.get("attributes") or {}).items():
        problem = data.slot_problem(str(slot))
        if problem:
            return f"attribute {part!r}: {{{slot}}}: {problem}"
    return None


NAME_PARTS = {"full": None, "given": "given", "surnames": "surnames", "surname1": "surname"}  # part -> span attribute


def _person_args(data: SynthData, spec: dict, args: list[str]) -> str | None:
    relation_fields = set.intersection(*(set(r) for r in data.lists[spec["relation"]])) if spec.get("relation") else set()
    parts = {*NAME_PARTS, *relation_fields, *(data.lexicon.get("agreement") or {}), *(spec.get("attributes") or {})}
    if spec.get("title"):
        parts.add("title")
    if len(args) > 1 or (args and args[0] not in parts):
        return f"a person's part is one of {', '.join(sorted(parts))}"
    return None


def _check_date(data: SynthData, spec: dict) -> str | None:
    styles = data.formats.get("date_formats") or {}
    missing = [s for s in ("numeric", "text") if not styles.get(s)]
    return f"formats.yml date_formats needs {', '.join(missing)} (the styles of dates written without one)" if missing else None


def _date_args(data: SynthData, spec: dict, args: list[str]) -> str | None:
    events = [*BUILT_IN_EVENTS, *(data.formats.get("timeline") or {})]
    if not 1 <= len(args) <= 2 or args[0] not in events:
        return f"write {{date.<event>}} or {{date.<event>.<style>}}; events: {', '.join(events)}"
    if len(args) == 2 and args[1] not in data.formats["date_formats"]:
        return f"no date style {args[1]!r} in formats.yml date_formats"
    return None


def _age_args(data: SynthData, spec: dict, args: list[str]) -> str | None:
    if args == ["other"] and not data.formats.get("other_ages"):
        return "needs other_ages in formats.yml"
    return None if args in ([], ["other"]) else "write {age} (the patient's) or {age.other}"


def _id_args(data: SynthData, spec: dict, args: list[str]) -> str | None:
    ids = data.formats.get("ids") or {}
    return None if len(args) == 1 and args[0] in ids else f"write {{id.<name>}}; names in formats.yml ids: {', '.join(ids)}"


def _sex_args(data: SynthData, spec: dict, args: list[str]) -> str | None:
    attributes = set.intersection(*(set(data.lexicon["sex"][s]) for s in "mf"))
    return None if len(args) == 1 and args[0] in attributes else f"write {{sex.<attribute>}}; attributes: {', '.join(sorted(attributes))}"


def _check_sex(data: SynthData, spec: dict) -> str | None:
    table = data.lexicon.get("sex") or {}
    return None if all(isinstance(table.get(s), dict) for s in "mf") else "needs sex: {m: {...}, f: {...}} in lexicon.yml"


def _check_email(data: SynthData, spec: dict) -> str | None:
    if (data.slots.get(spec["person"]) or {}).get("make") != "person":
        return f"person: {spec['person']!r} is not a person slot"
    return _needs("formats", "email_formats")(data, spec)


def _check_shape(data: SynthData, spec: dict) -> str | None:
    return None if data.formats.get(spec["shapes"]) else f"shapes: no {spec['shapes']!r} in formats.yml"


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
    @maker("text", settings=("text",))
    def make_text(self, name: str, spec: dict, args: list[str]) -> Piece:
        """A template, or one of a list of templates, rendered: `text: "{street_types} {street_names}"`."""
        text = spec["text"]
        return self._once(name, spec, lambda: self._value(spec, self.text_of(text if isinstance(text, str) else self.rng.choice(text))))

    @maker("record", settings=("list",), lists=("list",), args=lambda data, spec, args: _field_problem(data, spec["list"], args))
    def make_record(self, name: str, spec: dict, args: list[str]) -> Piece:
        """A record of a list (`{place.city}`: a field of it); with `keep: note`, one record per note."""
        record = self._once(name, spec, lambda: self.rng.choice(self.d.lists[spec["list"]]))
        return self._value(spec, self.text_of(str(record[args[0]])))

    @maker("shape", settings=("shapes",), check=_check_shape)
    def make_shape(self, name: str, spec: dict, args: list[str]) -> Piece:
        """A shape of formats.yml filled with digits and letters (`shapes: phone_formats`)."""
        return self._once(name, spec, lambda: self._value(spec, _id_value(SHAPE, self.fmt[spec["shapes"]], self.rng)))

    @maker("id", check=_needs("formats", "ids"), args=_id_args)
    def make_id(self, name: str, spec: dict, args: list[str]) -> Piece:
        """`{id.<name>}`: an identifier of formats.yml `ids`; its name is the span's `kind`."""
        ident = self.fmt["ids"][args[0]]
        return self._once(f"{name}.{args[0]}", spec, lambda: Piece(
            _id_value(ident["kind"], ident["layouts"], self.rng), spec.get("label"), {"kind": args[0], "role": _id_role(ident)}))

    @maker("email", settings=("person", "domains"), lists=("domains",), check=_check_email)
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

    @maker("person", check=_check_person, args=_person_args)
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

    @maker("sex", check=_check_sex, args=_sex_args)
    def make_sex(self, name: str, spec: dict, args: list[str]) -> Piece:
        """`{sex.<attribute>}`: the patient's sex as lexicon.yml `sex` writes it."""
        value = self.lex["sex"][self.sex][args[0]]
        return self._value(spec, self.rng.choice(value) if isinstance(value, list) else str(value))

    @maker("date", check=_check_date, args=_date_args)
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

    @maker("age", check=_needs("formats", "age_formats"), args=_age_args)
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

    @maker("measurement", settings=("list", "format"), lists=("list",),
           check=lambda data, spec: _missing_fields(data, spec["list"], ("name", "min", "max", "dec")))
    def make_measurement(self, name: str, spec: dict, args: list[str]) -> Piece:
        """A record {name, unit, min, max, dec} of a list with a value drawn in its range: "creatinina 1,23 mg/dl"."""
        def draw() -> tuple[str, str]:
            item = self.rng.choice(self.d.lists[spec["list"]])
            value = f"{self.rng.uniform(float(item['min']), float(item['max'])):.{int(item['dec'])}f}"
            value = value.replace(".", self.fmt.get("decimal_sep", "."))
            text = self._format(spec["format"], "slots.yml", name=item["name"], value=value, unit=item.get("unit", "")).strip()
            return text, item["name"]  # one value per lab in a section
        return self._value(spec, self._distinct(draw))

    @maker("dose", settings=("list", "format"), lists=("list",),
           check=lambda data, spec: _missing_fields(data, spec["list"], ("min", "max", "step", "unit")))
    def make_dose(self, name: str, spec: dict, args: list[str]) -> Piece:
        """An amount drawn from a record {min, max, step, unit} of a list: "250 mg"."""
        def draw() -> tuple[str, str]:
            item = self.rng.choice(self.d.lists[spec["list"]])
            amount = self.rng.randrange(int(item["min"]), int(item["max"]) + 1, int(item["step"]))
            text = self._format(spec["format"], "slots.yml", amount=amount, unit=item["unit"]).strip()
            return text, text
        return self._value(spec, self._distinct(draw))

    @maker("medication", settings=("list", "posology", "format"), lists=("list", "posology"),
           check=lambda data, spec: _missing_fields(data, spec["list"], ("drug", "doses")))
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
            lo, hi = _NUMBER.fullmatch(head).groups()
            width = len(lo) if lo.startswith("0") else 0  # {n:000-999} is zero-padded
            piece = Piece(str(self.rng.randint(int(lo), int(hi))).zfill(width))
        elif head in self.d.slots:
            spec = self.d.slots[head]
            piece = MAKERS[spec["make"]].make(self, head, {**spec, "keep": None} if fresh else spec, args)
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
        return _GENDER.sub(lambda m: m.group(1) if self.sex == "m" else m.group(2), text)

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


# ----------------------------------------------------------------------------- the corpus
def read_synth(path: Path, lang: str, n: int = 1000, seed: int = 13, report: ReadReport | None = None) -> Iterator[RawRecord]:
    """The reader of the format "synth": `n` notes generated from the data folder `path` ("-": corpora/synth/<lang>).

    The same (data, n, seed, lang) always gives the same records. The corpus' own summary (templates,
    document types) goes to `report.corpus`."""
    from faker import Faker

    data = SynthData.load(lang, None if str(path) == "-" else path)
    rng = random.Random(seed)
    fake = Faker(data.faker_locale)
    fake.seed_instance(seed)
    summary = CorpusSummary(lang, data.template_count())
    if report is not None:
        report.corpus = summary
    for i in range(n):
        raw = Note(data, rng, fake, f"synth-{lang}-{seed}-{i:06d}").build()
        summary.add(raw)
        yield raw


def generate_records(n: int = 1000, seed: int = 13, lang: str = "es", data: SynthData | None = None) -> Iterator[Record]:
    """Yield `n` synthetic records, read like any corpus (`read_corpus(folder, "synth")`): the same (n, seed,
    lang, data folder) always gives the same records. `data`: the loaded data whose folder to use."""
    yield from read_corpus(data.folder if data is not None else "-", "synth", lang=lang, n=n, seed=seed)


class CorpusSummary:
    """Records, tokens, PHI per label and kind, distinct templates used (of those available), document
    types and header layouts of a synthetic corpus, gathered record by record (tokens counted at the end)."""

    def __init__(self, lang: str, templates_available: int | None = None):
        self.lang, self.templates_available = lang, templates_available
        self.texts: list[str] = []
        self.labels: Counter = Counter()
        self.kinds: Counter = Counter()
        self.templates: set[str] = set()
        self.doc_types: Counter = Counter()
        self.layouts: Counter = Counter()

    def add(self, record: Record | RawRecord) -> None:
        self.texts.append(record.text)
        for s in record.spans:
            self.labels[s.label] += 1
            if "kind" in s.attrs:
                self.kinds[f"{s.label}/{s.attrs['kind']}"] += 1
        self.templates.update(record.meta.get("templates", []))
        self.doc_types[record.meta.get("doc_type") or "-"] += 1
        self.layouts[record.meta.get("header_layout") or "-"] += 1

    def to_dict(self) -> dict[str, Any]:
        import spacy

        tokenizer = spacy.blank(self.lang).tokenizer
        report = {
            "records": len(self.texts),
            "distinct_texts": len(set(self.texts)),
            "tokens": sum(len(tokenizer(t)) for t in self.texts),
            "characters": sum(len(t) for t in self.texts),
            "phi_spans": sum(self.labels.values()),
            "phi_per_label": dict(sorted(self.labels.items())),
            "phi_per_kind": dict(sorted(self.kinds.items())),
            "distinct_templates_used": len(self.templates),
            "doc_types": dict(sorted(self.doc_types.items())),
            "header_layouts": dict(sorted(self.layouts.items())),
        }
        if self.templates_available is not None:
            report["templates_available"] = self.templates_available
        return report


def corpus_report(records: Iterable[Record], data: SynthData | None = None, lang: str = "es") -> dict[str, Any]:
    """The CorpusSummary of `records` (with the templates available in `data`, if given)."""
    summary = CorpusSummary(lang, data.template_count() if data is not None else None)
    for record in records:
        summary.add(record)
    return summary.to_dict()


register_generated("synth", read_synth)  # `read_corpus(folder, "synth")` reads this corpus
