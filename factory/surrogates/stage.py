"""The surrogate stage: turn the placeholders of translated records into realistic target-locale PHI.

`surrogate_records(records, target, ...)` is the core: for every record it finds each placeholder
again, draws one surrogate per entity (so coreference holds: every mention of a placeholder gets the
same person, date, phone...), writes PERSON mentions in a casing sampled per mention (or per record),
recomputes every span exactly and verifies it (span text == slice, boundaries, canonical labels)
before the record is kept. `surrogate_file` adds the JSONL output and the train/dev/test DocBins.

The values come from the surrogate engine that redaction uses too (deid_runtime.surrogates):
each entity's *shape*, kept by the placeholder stage in place of the original, says the kind and
form to draw (a country for a country, a day-month date for a day-month date...), in the target
locale's data (languages/<target>/surrogate_data/). This stage adds what only a training corpus
needs, from languages/<target>/surrogates.yml: the casing distribution of names, unique names
across the corpus, dates coherent within a record, identifiers drawn per role, the splits.
"""

from __future__ import annotations

import logging
import random
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import typer

from ..labels import load_label_roles
from ..locale import Locale, LocaleError
from ..placeholders import find_placeholders, without_placeholder_text
from ..records import Record, RecordError, Span, read_records, span_problems, trim_span, write_records
from ..outputs import all_or_nothing, write_json_atomic
from deid_runtime import ids
from deid_runtime import surrogates as engine
from deid_runtime.surrogates import dates, values
from deid_runtime.surrogates.forms import apply_casing
from deid_runtime.surrogates.identifiers import generate_id
from deid_runtime.surrogates.locale import LocaleDataError, common
from deid_runtime.validators import validator_name
from deid_runtime.text import replace_spans
from .casing import CasingSampler, parse_casing

log = logging.getLogger(__name__)

CASED = ("LOCATION", "ORGANIZATION", "ADDRESS", "PROFESSION")


class SurrogateError(ValueError):
    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason


def load_settings(target: str) -> dict[str, Any]:
    """locale.yml + surrogates.yml of the target (clear error when either is missing)."""
    try:
        locale = Locale.load(target)
        cfg = locale.read("surrogates")
    except LocaleError as err:
        raise FileNotFoundError(f"target language {target!r}: {err}") from None
    cfg["_locale"] = locale.raw
    cfg["_label_roles"] = load_label_roles()
    return cfg


def source_role(attrs: dict[str, Any], id_kind: str | None, label_roles: dict[str, str]) -> str:
    """What a source identifier identifies (deid_runtime.ids.ROLES): the `role` the synthetic corpus
    wrote on its span (corpora/synth/<lc>/formats.yml `ids`), else the role of its annotated
    corpus label (corpora/label_maps/*.yml `roles`: MEDDOCAN's ID_ASEGURAMIENTO is insurance), else
    the role of the identifier the placeholder stage recognised by its check digits (its country
    module's), else a record number."""
    if attrs.get("role") in ids.ROLES:
        return attrs["role"]
    if attrs.get("source_label") in label_roles:
        return label_roles[attrs["source_label"]]
    if id_kind and id_kind in ids.keys():
        return ids.get(id_kind).role
    return ids.DEFAULT_ROLE


@dataclass
class SurrogateDrawer:
    """Draws surrogates for one corpus (one target language, one seed)."""

    target: str
    seed: int = 0
    casing: dict[str, float] | None = None
    one_casing_per_record: bool | None = None
    unique_names: bool | None = None
    cfg: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.cfg = self.cfg or load_settings(self.target)
        try:
            self.locale = engine.load_locale(self.target, strict=True)
        except LocaleDataError as err:
            raise FileNotFoundError(str(err)) from None
        self.rng = random.Random(self.seed)
        self.casing = parse_casing(self.casing, self.cfg.get("casing"))
        if self.one_casing_per_record is None:
            self.one_casing_per_record = bool(self.cfg.get("one_casing_per_record", False))
        if self.unique_names is None:
            self.unique_names = bool(self.cfg.get("unique_names", True))
        self.sampler = CasingSampler(self.casing, self.rng, self.one_casing_per_record)
        self.names = engine.NameGenerator(self.locale, self.rng, self.unique_names, self.cfg.get("person"))
        self.years = tuple((self.cfg.get("date") or {}).get("years", values.DEFAULT_YEARS))
        self.age_range = tuple((self.cfg.get("age") or {}).get("range", (1, 99)))
        self.target_ids = {validator_name(k) for k in ids.keys(self.locale.formats.get("identifiers") or [])}
        self.stats: dict[str, Counter] = {"labels": Counter(), "casing": Counter(), "id_kinds": Counter(),
                                          "id_validated": Counter(), "kinds": Counter()}

    # -- one value per entity -------------------------------------------------------------------
    def _id_spec(self, attrs: dict[str, Any], shape: dict[str, Any]) -> dict[str, Any]:
        """What identifier to draw: the same kind when the target has it (a DNI stays a DNI in a
        Spanish corpus), else one of the target's kinds for the source's role (a DNI becomes a NIR)."""
        id_kind = shape.get("id_kind")
        if id_kind and validator_name(id_kind) in self.target_ids:
            return {"kind": validator_name(id_kind)}
        role = source_role(attrs, id_kind, self.cfg["_label_roles"])
        role_table = (self.cfg.get("ids") or {}).get("roles") or {}
        options = role_table.get(role) or role_table.get(ids.DEFAULT_ROLE)
        if not options:
            raise ValueError(f"languages/{self.target}/surrogates.yml: no `ids.roles.record` entry")
        return self.rng.choices(options, [float(o.get("weight", 1)) for o in options])[0]

    @staticmethod
    def _with_source_kind(shape: dict[str, Any], attrs: dict[str, Any]) -> dict[str, Any]:
        """The kind a source corpus label gives (MEDDOCAN's PAIS, HOSPITAL...), where the text
        alone did not tell it."""
        hint = (common().get("source_labels") or {}).get(attrs.get("source_label"))
        if hint and shape.get("kind_from", "default") == "default":
            return {**shape, "kind": hint, "kind_from": "source_label"}
        return shape

    def value(self, label: str, entry: dict[str, Any], persons: dict[str, engine.Person], record_persons: list[engine.Person]) -> tuple[str, dict[str, Any]]:
        """(surface in Title/natural case, span attributes) for one entity."""
        shape = entry.get("shape") or {}
        attrs = entry.get("attrs") or {}
        rng, locale = self.rng, self.locale
        if label == "PERSON":
            raise AssertionError("persons are drawn by person_value")
        if label == "DATE":
            day = dates.record_date(rng, self._anchor, str(attrs.get("kind", "")) or None)
            return dates.draw_date(rng, locale, shape, day), {}
        if label == "ID":
            value, kind, validated = generate_id(rng, self._id_spec(attrs, shape))
            self.stats["id_kinds"][kind] += 1
            if validated:
                self.stats["id_validated"][kind] += 1
            return value, {"id_kind": kind, **({"validated": True} if validated else {})}
        if label in CASED:  # written in the casing of the original ("PAÍS: ESPAÑA" -> "PAYS : BELGIQUE")
            casing = str(shape.get("casing", "title"))
            extra: dict[str, Any] = {}
            if label in ("LOCATION", "ORGANIZATION"):
                shape = self._with_source_kind(shape, attrs)
                kind = values.kind_of(label, shape)
                self.stats["kinds"][f"{label}:{kind}"] += 1
                extra["kind"] = kind
            return apply_casing(values.surrogate_for(label, shape, rng, locale), casing), extra
        person = None
        if label == "EMAIL" and record_persons and rng.random() < 0.7:
            person = (record_persons[0].given[0], record_persons[0].surnames[0])
        try:
            return values.surrogate_for(label, shape, rng, locale, age_range=self.age_range, person=person,
                                        private_ip_share=float((self.cfg.get("ip") or {}).get("private_share", 0.5))), {}
        except ValueError:
            raise SurrogateError("unknown_label", f"no surrogate generator for label {label}") from None

    def person_value(self, term: str, entry: dict[str, Any], persons: dict[str, engine.Person]) -> str:
        shape = entry.get("shape") or {}
        link = entry.get("link")
        if link and link in persons:
            return persons[link].part(entry.get("part", "family"), int(shape.get("words", 1)))
        person = self.names.person(shape.get("sex"))
        persons[term] = person
        words = int(shape.get("words", 2))
        if words >= 2:
            return person.full()
        return person.part(self.rng.choice(["given", "family"]), 1)

    # -- one record -----------------------------------------------------------------------------
    def record(self, record: Record, where: str = "<records>") -> Record:
        terms: dict[str, dict[str, Any]] = ((record.meta.get("placeholders") or {}).get("terms")) or {}
        if not terms and record.spans:
            raise SurrogateError("no_placeholders", f"{where}: record {record.id!r} has spans but no placeholder mapping; run `factory placeholder`/`translate` first")
        spans, problems = find_placeholders(record.text, terms)
        if problems:
            raise SurrogateError("placeholder_" + sorted(problems.values())[0], f"{where}: record {record.id!r}: {len(problems)} placeholder(s) not found intact")
        self.sampler.new_record()
        # One anchor date per record (its stay), so the dates of a record stay coherent.
        self._anchor = dates.random_date(self.rng, self.years)
        persons: dict[str, engine.Person] = {}
        chosen: dict[str, tuple[str, dict[str, Any]]] = {}
        # Full names first, so a linked partial mention ("García") reuses its person's surname.
        order = sorted(terms, key=lambda t: (terms[t]["label"] != "PERSON", "link" in terms[t]))
        for term in order:
            entry = terms[term]
            if entry["label"] == "PERSON":
                chosen[term] = (self.person_value(term, entry, persons), {})
        record_persons = list(persons.values())
        for term in order:
            entry = terms[term]
            if entry["label"] != "PERSON":
                chosen[term] = self.value(entry["label"], entry, persons, record_persons)
        surfaces: list[str] = []
        span_attrs: list[dict[str, Any]] = []
        for span in spans:
            term = span.attrs["placeholder"]
            surface, attrs = chosen[term]
            attrs = dict(attrs)
            if span.label == "PERSON":
                style = self.sampler.draw()
                surface = apply_casing(surface, style)
                attrs["casing"] = style
                self.stats["casing"][style] += 1
            surfaces.append(surface)
            span_attrs.append({"entity": terms[term].get("entity"), **attrs})
            self.stats["labels"][span.label] += 1
        # Spans never start or end with punctuation (project rule): a surrogate such as
        # "(555) 201-3344" is written whole, its span starts after the parenthesis (trim).
        text, placed = replace_spans(record.text, [(span.start, span.end) for span in spans], surfaces, trim=True)
        new_spans = [Span(start, end, span.label, attrs) for (start, end), span, attrs in zip(placed, spans, span_attrs)]
        meta = without_placeholder_text(record.meta)
        meta["surrogates"] = {"seed": self.seed, "target": self.target, "one_casing_per_record": self.one_casing_per_record}
        out = Record(record.id, record.lang or self.target, text, new_spans, meta)
        # Verify before keeping: each span is exactly the surrogate written there, boundaries are clean.
        for span, source_span in zip(new_spans, spans):
            term = source_span.attrs["placeholder"]
            surface = chosen[term][0]
            lead, tail = trim_span(surface, 0, len(surface))
            got = text[span.start : span.end]
            if got.casefold() != surface[lead:tail].casefold():
                raise SurrogateError("span_mismatch", f"{where}: record {record.id!r}: span [{span.start},{span.end}) does not hold its surrogate")
        problems_list = span_problems(out)
        if problems_list:
            raise SurrogateError("invalid_span", f"{where}: record {record.id!r}: " + "; ".join(problems_list))
        return out


def surrogate_records(
    records: Iterable[Record],
    target: str,
    seed: int = 0,
    casing: str | dict[str, float] | None = None,
    one_casing_per_record: bool | None = None,
    unique_names: bool | None = None,
) -> tuple[list[Record], dict[str, Any]]:
    """Replace placeholders by target-locale surrogates; return (records kept, report)."""
    gen = SurrogateDrawer(target, seed, casing, one_casing_per_record, unique_names)  # type: ignore[arg-type]
    kept: list[Record] = []
    dropped: Counter = Counter()
    dropped_ids: dict[str, list[str]] = {}
    n = 0
    for n, record in enumerate(records, start=1):
        try:
            kept.append(gen.record(record, where=f"record #{n}"))
        except SurrogateError as err:
            dropped[err.reason] += 1
            dropped_ids.setdefault(err.reason, []).append(record.id)
            log.warning("%s", err)
    casing_total = sum(gen.stats["casing"].values())
    report = {
        "target": target,
        "seed": seed,
        "records_in": n,
        "records_out": len(kept),
        "dropped": dict(dropped),
        "dropped_ids": dropped_ids,
        "entities_by_label": dict(gen.stats["labels"]),
        "casing_config": gen.casing,
        "one_casing_per_record": gen.one_casing_per_record,
        "casing_observed": {k: round(v / casing_total, 4) for k, v in gen.stats["casing"].items()} if casing_total else {},
        "person_mentions": casing_total,
        "unique_names": gen.unique_names,
        "persons_drawn": len(gen.names.used),
        "name_collisions_redrawn": gen.names.collisions,
        "id_kinds": dict(gen.stats["id_kinds"]),
        "id_validated": dict(gen.stats["id_validated"]),
        "kinds": dict(gen.stats["kinds"]),
    }
    return kept, report


def surrogate_file(
    in_path: str | Path,
    out_dir: str | Path,
    target: str,
    seed: int = 0,
    casing: str | None = None,
    one_casing_per_record: bool | None = None,
    unique_names: bool | None = None,
    splits: str | None = None,
    originals: str | Path | None = None,
    augment_share: float = 0.0,
    dev_path: str | Path | None = None,
    generated: str | Path | None = None,
) -> dict[str, Any]:
    """in_path (translated JSONL) -> out_dir/records.jsonl, train/dev/test.spacy, report.json.

    originals: the native path. The records of this file (the user's annotated notes, already in
    the target language) are trained on as they are; `augment_share` of the training notes are
    also added as surrogate-replaced copies (drawn from their placeholder versions in in_path),
    to the training split only. dev_path: records of a development set (already in the target
    language, as annotated) used as the dev split instead of a share of the source; on the native
    path every source note then trains, and the held-out test split is that dev set too.

    generated: the records before placeholders (the same file as `originals`), off the native path,
    when the records in `target` there were written by the synthetic corpus (the build decision's
    "as_written": the whole embedded corpus of a build in the source's own language, or the native
    share of a translation build; the records of the source's language there are the ones translated).
    Those records keep the values the generator wrote: they are already fictitious and of the target
    locale, and the generator writes them in far more forms than the surrogate engine (floors and
    doors of addresses, streets named after people, hospitals in many forms); docs/corpus.md has
    what re-drawing them cost. Translated records get surrogates as before.
    """
    from ..splits import parse_ratios, write_splits

    in_path, out_dir = Path(in_path), Path(out_dir)
    records = list(read_records(in_path))
    for lineno, rec in enumerate(records, start=1):
        if rec.lang and rec.lang != target:
            raise RecordError(f"{in_path}:{lineno}: record {rec.id!r} is in {rec.lang!r}, not the target {target!r}; translate it first")
    dev_records = list(read_records(dev_path)) if dev_path else []
    cfg = load_settings(target)
    ratios = parse_ratios(splits, cfg.get("splits"))
    if originals is None:
        as_generated = _generated_in_target(records, generated, target)
        kept, report = surrogate_records([r for r in records if r.id not in as_generated], target, seed, casing,
                                         one_casing_per_record, unique_names)
        # input order: the split of a record must not depend on which of the two ways it took
        position = {r.id: i for i, r in enumerate(records)}
        kept = sorted(kept + list(as_generated.values()), key=lambda r: position[r.id])
        report["records_in"] = len(records)
        report["records_out"] = len(kept)
        report["kept_as_generated"] = len(as_generated)
        fixed: dict[str, str] = {}
        if dev_records:  # the source's dev share trains; the given dev set is the dev split
            ratios = parse_ratios({"train": ratios["train"] + ratios["dev"], "dev": 0.0, "test": ratios["test"]})
        augment: list[Record] = []
    else:
        kept = list(read_records(originals))
        # The split of every native note is decided here, once, so a surrogate copy can only be made
        # of a note that trains (a copy of a dev/test note would leak it into training).
        from ..splits import assign_splits

        fixed = {r.id: "train" for r in kept} if dev_records else assign_splits([r.id for r in kept], ratios, seed)
        augment, report = _augmentation(records, fixed, target, seed, augment_share, casing,
                                        one_casing_per_record, unique_names)
    for record in dev_records:
        if record.id in {r.id for r in kept}:
            raise RecordError(f"{dev_path}: record {record.id!r} is also in the training source; a dev set must be separate")
        record.meta["dev_set"] = True
    split_plan = {**fixed, **{r.id: "dev" for r in dev_records}}
    if originals is not None and dev_records:
        split_plan.update({f"{r.id}#test": "test" for r in dev_records})
        dev_records = dev_records + [Record(f"{r.id}#test", r.lang, r.text, list(r.spans), {**r.meta, "copy_of_dev": True}) for r in dev_records]
    # DocBins, records and report replace the earlier ones together or not at all (a full disk
    # half-way must not leave new DocBins next to the records they were not made from)
    with all_or_nothing():
        split_report, final = write_splits(kept + dev_records, out_dir, cfg["_locale"].get("spacy_lang", target), ratios,
                                           seed, fixed=split_plan, train_extra=augment)
        write_records(out_dir / "records.jsonl", final)
        report.update({"input": str(in_path), "output_dir": str(out_dir), "splits": split_report,
                       "native": originals is not None, "originals": str(originals) if originals else None,
                       "dev_path": str(dev_path) if dev_path else None,
                       "test_is_dev": bool(originals is not None and dev_path and dev_records)})
        report["records_out"] = len(final)
        write_json_atomic(out_dir / "report.json", report)
    return report


def _generated_in_target(records: list[Record], generated: str | Path | None, target: str) -> dict[str, Record]:
    """id -> the record as the synthetic corpus wrote it, for each record of `records` that
    `generated` (the records before placeholders and translation) holds in the target language
    (see surrogate_file); {} without `generated`."""
    if generated is None:
        return {}
    wanted = {r.id for r in records}
    found: dict[str, Record] = {}
    for record in read_records(generated):
        if record.id in wanted and record.lang == target:
            found[record.id] = record
    return found


def _augmentation(placeholdered: list[Record], plan: dict[str, str], target: str, seed: int, share: float,
                  casing, one_casing_per_record, unique_names) -> tuple[list[Record], dict[str, Any]]:
    """Surrogate-replaced copies of `share` of the native training notes (plan: id -> split; never
    of dev/test notes, so no surrogate copy of a held-out note leaks into training)."""
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"--augment-share must be between 0 and 1, not {share}")
    train_ids = sorted(rid for rid, split in plan.items() if split == "train")
    chosen = set(random.Random(seed).sample(train_ids, round(share * len(train_ids)))) if share else set()
    by_id = {r.id: r for r in placeholdered}
    missing = sorted(chosen - set(by_id))  # notes the placeholder stage could not process
    copies, report = surrogate_records([by_id[rid] for rid in sorted(chosen) if rid in by_id], target, seed, casing,
                                       one_casing_per_record, unique_names)
    for copy in copies:
        copy.meta["augmentation_of"] = copy.id
        copy.id = f"{copy.id}#aug"
    report["augment_share"] = share
    report["augmented_copies"] = len(copies)
    report["augment_missing_placeholder"] = len(missing)
    return copies, report


def surrogate_command(
    in_path: Path = typer.Argument(..., help="Translated records (JSONL) from `factory translate`"),
    out_dir: Path = typer.Argument(..., help="Output folder: records.jsonl, train/dev/test.spacy, report.json"),
    build: Path | None = typer.Option(None, "--build", help="The build decision written by `factory extract --build` "
                                      "(gives --lang, --native and --as-written)"),
    lang: str | None = typer.Option(None, "--lang", help="Language of the build (languages/<lang>/surrogates.yml)"),
    native: bool = typer.Option(False, "--native", help="The native path: train on --originals as annotated (surrogate copies only as --augment-share)"),
    as_written: bool = typer.Option(False, "--as-written", help="The records of --originals in --lang were written by the synthetic "
                                    "corpus: they keep their generated values"),
    originals: Path | None = typer.Option(None, "--originals", help="The records (JSONL) before placeholders: with --native, the notes "
                                          "trained as annotated; with --as-written, the synthetic records kept as written"),
    seed: int = typer.Option(0, help="Random seed (same seed, same output)"),
    casing: str = typer.Option("", help="PERSON casing shares, e.g. title=0.65,upper=0.33,lower=0.02"),
    one_casing_per_record: bool = typer.Option(False, help="One casing for all names of a record"),
    unique_names: bool = typer.Option(True, help="Never reuse a full name in the corpus (zero-shot test set)"),
    splits: str = typer.Option("", help="train/dev/test shares, e.g. 0.8,0.1,0.1 (split by record)"),
    augment_share: float = typer.Option(0.0, "--augment-share", help="Native path: share of training notes also added as surrogate copies (0-1)"),
    dev: str = typer.Option("-", "--dev", help="Records (JSONL) of a dev set in the build's language, used as the dev split; '-' or an empty file: split the source"),
) -> None:
    """Insert surrogates of the build's language and write records.jsonl + train/dev/test DocBins + report.json."""
    from ..build_decision import read_build

    try:
        decision = read_build(build)
        if decision is not None:
            if lang or native or as_written:
                raise typer.BadParameter("give --build or --lang/--native/--as-written, not both", param_hint="--build")
            lang, native, as_written = decision.lang, decision.native, decision.as_written
        if not lang:
            raise typer.BadParameter("give --build, or the language of the build (--lang)", param_hint="--lang")
        if native and as_written:
            raise ValueError("--native and --as-written exclude each other (the notes are yours, or the generator's)")
        if (native or as_written) and originals is None:
            raise ValueError(f"--{'native' if native else 'as-written'} needs --originals (the records before placeholders)")
        dev_path = None if dev == "-" or (Path(dev).exists() and Path(dev).stat().st_size == 0) else Path(dev)
        report = surrogate_file(in_path, out_dir, lang, seed, casing or None, one_casing_per_record or None, unique_names,
                                splits or None, originals if native else None, augment_share, dev_path,
                                generated=originals if as_written else None)
    except (FileNotFoundError, RecordError, ValueError) as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(1) from None
    s = report["splits"]
    typer.echo(
        f"surrogate {lang}: {report['records_out']}/{report['records_in']} records "
        f"({report.get('kept_as_generated', 0)} as the synthetic corpus wrote them) "
        f"(train {s['counts']['train']}, dev {s['counts']['dev']}, test {s['counts']['test']}); "
        f"dropped {report['dropped'] or 'none'}; casing {report['casing_observed']}; wrote {out_dir}"
    )
