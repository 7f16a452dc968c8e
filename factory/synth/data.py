"""A locale's synthetic-corpus data folder (corpora/synth/<lc>/), loaded and checked: every file,
slot, template and word list a note reads, with the file and entry of any problem; the makers of
slots.yml (`MAKERS`: what each needs and how its settings are checked; `Note.make_<name>` in
note.py makes its pieces); identifiers as a note writes them."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from deid_runtime.titles import Titles

from ..labels import CANONICAL_LABELS
from ..locale import Locale
from ..records import read_yaml_mapping
from .syntax import BUILT_IN_EVENTS, NUMBER, SLOT, SLOT_NAME, SynthError

DATA_FILES = ("sections.yml", "header.yml", "slots.yml", "lexicon.yml", "clinical.yml", "formats.yml")
REQUIRED_FILES = ("sections.yml", "lexicon.yml")  # the others may be left out by a locale that does not need them
LIST_FILES = ("lexicon.yml", "clinical.yml")  # files whose `lists:` are the word lists of the templates


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
                    id_value(spec["kind"], [layout], probe)
                except KeyError:
                    raise self._fail("formats.yml", f"id {name!r}", f"unknown identifier kind {spec['kind']!r}") from None
                except ValueError as err:
                    raise self._fail("formats.yml", f"id {name!r}", str(err)) from None

    def _check_slots(self) -> None:
        for name, spec in self.slots.items():  # each slot on its own first: the makers' checks read other slots
            def fail(problem: str) -> SynthError:
                return self._fail("slots.yml", f"slot {name!r}", problem)
            if not SLOT_NAME.fullmatch(name):
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
            for m in SLOT.finditer(template):
                problem = self.slot_problem(m.group(1))
                if problem:
                    raise self._fail(file, where, f"{{{m.group(1)}}}: {problem}")

    def slot_problem(self, slot: str) -> str | None:
        """What is wrong with `{slot}` in a template of this data (None: nothing)."""
        head, *args = (slot[0].lower() + slot[1:]).split(".")
        if head.startswith("n:"):
            m = NUMBER.fullmatch(head)
            return None if m and not args and int(m.group(1)) <= int(m.group(2)) else "a number is written {n:min-max}"
        if head in self.slots:
            maker = MAKERS[self.slots[head]["make"]]
            return maker.args(self, self.slots[head], args) if maker.args else ("takes no argument" if args else None)
        if head in self.lists:
            return field_problem(self, head, args)
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




def field_problem(data: SynthData, list_name: str, args: list[str]) -> str | None:
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


def missing_fields(data: SynthData, list_name: str, fields: Sequence[str]) -> str | None:
    """A maker's list of records must give every record the fields the maker reads."""
    for i, entry in enumerate(data.lists[list_name]):
        lacking = [f for f in fields if not isinstance(entry, dict) or f not in entry]
        if lacking:
            return f"list {list_name!r}: entry {i + 1} lacks {', '.join(lacking)}"
    return None



# ----------------------------------------------------------------------------- identifiers
SHAPE = "shape"  # the identifier kind of codes without check digits


def id_role(spec: dict) -> str:
    """What an identifier of formats.yml `ids` identifies (deid_runtime.ids.ROLES), written on its
    span (`role`): the surrogate stage draws the target's identifier for that role. A shape says it
    (`role:`); a registry identifier has its own (its module's `role`)."""
    from deid_runtime import ids

    return spec.get("role") or ids.get(spec["kind"]).role


def id_value(kind: str, layouts: Sequence[str], rng: random.Random) -> str:
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
    """What a slot of slots.yml with `make: <name>` needs; `Note.make_<name>(slot name, settings, args)`
    makes its piece."""

    settings: tuple[str, ...] = ()  # settings the slot must give
    lists: tuple[str, ...] = ()  # settings that name a word list
    check: Callable[[SynthData, dict], str | None] | None = None  # a problem of the slot's settings
    args: Callable[[SynthData, dict, list[str]], str | None] | None = None  # a problem of `{slot.args}`; None: takes none


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


MAKERS: dict[str, Maker] = {
    "text": Maker(settings=("text",)),
    "record": Maker(settings=("list",), lists=("list",),
                    args=lambda data, spec, args: field_problem(data, spec["list"], args)),
    "shape": Maker(settings=("shapes",), check=_check_shape),
    "id": Maker(check=_needs("formats", "ids"), args=_id_args),
    "email": Maker(settings=("person", "domains"), lists=("domains",), check=_check_email),
    "person": Maker(check=_check_person, args=_person_args),
    "sex": Maker(check=_check_sex, args=_sex_args),
    "date": Maker(check=_check_date, args=_date_args),
    "age": Maker(check=_needs("formats", "age_formats"), args=_age_args),
    "measurement": Maker(settings=("list", "format"), lists=("list",),
                         check=lambda data, spec: missing_fields(data, spec["list"], ("name", "min", "max", "dec"))),
    "dose": Maker(settings=("list", "format"), lists=("list",),
                  check=lambda data, spec: missing_fields(data, spec["list"], ("min", "max", "step", "unit"))),
    "medication": Maker(settings=("list", "posology", "format"), lists=("list", "posology"),
                        check=lambda data, spec: missing_fields(data, spec["list"], ("drug", "doses"))),
}
