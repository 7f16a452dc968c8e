"""Surrogates: valid identifiers, casing distribution, unique names, coreference, locale forms."""

from __future__ import annotations

import math
import random
import re

import pytest

from deid_factory.placeholders import load_inventory, placeholderize
from deid_factory.records import Record, Span, span_problems
from deid_runtime.validators import VALIDATORS
from deid_factory.surrogates.stage import SurrogateDrawer, surrogate_records
from deid_factory.surrogates.casing import parse_casing
from deid_runtime.surrogates.identifiers import GENERATORS, generate_id, validator_for


_INVENTORIES: dict = {}


def _placeholder_record(rid, text, items, target="fr", lang="es"):
    spans, cursor = [], 0
    for surface, label, *attrs in items:
        start = text.index(surface, cursor)
        spans.append(Span(start, start + len(surface), label, attrs[0] if attrs else {}))
        cursor = start + len(surface)
    if target not in _INVENTORIES:
        _INVENTORIES[target] = load_inventory(target)
    rec = placeholderize(Record(rid, lang, text, spans, {}), _INVENTORIES[target])
    rec.lang = target  # as if translated by a copy model
    return rec


@pytest.mark.parametrize("kind", sorted(GENERATORS))
def test_every_generated_identifier_passes_its_validator(kind):
    rng = random.Random(7)
    check = validator_for(kind)
    for _ in range(200):
        value, got_kind, validated = generate_id(rng, {"kind": kind, "country": "FR", "patterns": ["LL-###"]})
        if check is not None:
            assert validated and check(value), (kind, value)


def test_french_ids_in_records_pass_the_pack_validators():
    # the attributes the Spanish synthetic corpus writes: the identifier's name and its role
    items = [("12345678Z", "ID", {"kind": "dni", "role": "national"}), ("28/1234567/12", "ID", {"kind": "nass", "role": "insurance"}),
             ("28 12345", "ID", {"kind": "colegiado", "role": "professional"})]
    recs = [_placeholder_record(f"r{i}", "DNI 12345678Z, NASS 28/1234567/12, colegiado 28 12345.", items) for i in range(40)]
    kept, report = surrogate_records(recs, "fr", seed=3)
    assert len(kept) == 40
    seen = set()
    for rec in kept:
        for span in rec.spans:
            value = rec.text[span.start : span.end]
            kind = span.attrs["id_kind"]
            seen.add(kind)
            assert span.attrs.get("validated") is True
            assert VALIDATORS[kind](value), kind
    assert {"fr_nir", "fr_rpps"} <= seen  # national/insurance -> NIR, professional -> RPPS (or ADELI)
    assert report["id_validated"] == report["id_kinds"]


def test_casing_follows_distribution_within_sampling_error():
    items = [("Ana Ruiz", "PERSON")]
    recs = [_placeholder_record(f"c{i}", "Vino Ana Ruiz.", items) for i in range(3000)]
    dist = {"title": 0.65, "upper": 0.33, "lower": 0.02}
    kept, report = surrogate_records(recs, "fr", seed=1)
    counts = {"title": 0, "upper": 0, "lower": 0}
    for rec in kept:
        (span,) = rec.spans
        name = rec.text[span.start : span.end]
        style = "upper" if name.isupper() else "lower" if name.islower() else "title"
        assert style == span.attrs["casing"]
        counts[style] += 1
    n = sum(counts.values())
    for style, p in dist.items():
        sigma = math.sqrt(p * (1 - p) / n)
        assert abs(counts[style] / n - p) < 4 * sigma, (style, counts)
    assert report["casing_observed"] == {k: round(v / n, 4) for k, v in counts.items() if v}


def test_custom_casing_and_one_casing_per_record():
    text = "Ana Ruiz vino con Luis Gil; Ana Ruiz firmó y Luis Gil también."
    items = [("Ana Ruiz", "PERSON"), ("Luis Gil", "PERSON"), ("Ana Ruiz", "PERSON"), ("Luis Gil", "PERSON")]
    recs = [_placeholder_record(f"o{i}", text, items) for i in range(200)]
    kept, _ = surrogate_records(recs, "fr", seed=2, casing="title=0.5,upper=0.5", one_casing_per_record=True)
    mixed_records = 0
    for rec in kept:
        styles = {s.attrs["casing"] for s in rec.spans}
        assert len(styles) == 1 and styles <= {"title", "upper"}
    kept, _ = surrogate_records(recs, "fr", seed=2, casing="title=0.5,upper=0.5")
    mixed_records = sum(len({s.attrs["casing"] for s in r.spans}) > 1 for r in kept)
    assert mixed_records > 100
    with pytest.raises(ValueError):
        parse_casing("title=0.5,bold=0.5")


def test_coreference_and_partial_names():
    text = "Ana Martín Ruiz ingresa. Martín refiere dolor. Ana Martín Ruiz firma."
    items = [("Ana Martín Ruiz", "PERSON"), ("Martín", "PERSON"), ("Ana Martín Ruiz", "PERSON")]
    rec = _placeholder_record("co", text, items)
    (out,), _ = surrogate_records([rec], "fr", seed=0, casing="title=1")
    names = [out.text[s.start : s.end] for s in out.spans]
    assert names[0] == names[2]
    assert names[1] == names[0].split()[-1]  # the linked surname alone
    assert out.spans[0].attrs["entity"] == out.spans[2].attrs["entity"]


def test_locale_name_structure_and_uniqueness():
    items = [("Ana Martín Ruiz", "PERSON")]
    recs_es = [_placeholder_record(f"e{i}", "Vino Ana Martín Ruiz.", items, target="es") for i in range(300)]
    kept, report = surrogate_records(recs_es, "es", seed=0, casing="title=1")
    gen_names = [r.text[r.spans[0].start : r.spans[0].end] for r in kept]
    assert len(set(n.casefold() for n in gen_names)) == len(gen_names)  # unique across the corpus
    # es: given name(s) + two surnames -> at least 3 words; fr: given + one surname
    assert all(len(n.split()) >= 3 for n in gen_names)
    recs_fr = [_placeholder_record(f"f{i}", "Vino Ana Martín Ruiz.", items) for i in range(100)]
    kept_fr, _ = surrogate_records(recs_fr, "fr", seed=0, casing="title=1")
    two_words = sum(len(r.text[r.spans[0].start : r.spans[0].end].split()) == 2 for r in kept_fr)
    assert two_words > 80  # compound given names ("Jean Pierre") are the exception


def test_target_language_forms():
    text = "El 3 de mayo de 2020 y el 04/05/2021, con 70 años, tel. +34 600 111 222, en Calle Mayor 5, Sevilla, 28013."
    items = [("3 de mayo de 2020", "DATE"), ("04/05/2021", "DATE"), ("70 años", "AGE"), ("+34 600 111 222", "PHONE"),
             ("Calle Mayor 5", "ADDRESS"), ("Sevilla", "LOCATION"), ("28013", "LOCATION")]
    months_fr = "janvier|février|mars|avril|mai|juin|juillet|août|septembre|octobre|novembre|décembre"
    for seed in range(20):
        (out,), _ = surrogate_records([_placeholder_record("f", text, items)], "fr", seed=seed)
        values = [out.text[s.start : s.end] for s in out.spans]
        assert re.search(months_fr, values[0])
        assert re.fullmatch(r"[\d/.\-]+", values[1])
        assert re.fullmatch(r"\d{1,2} ?ans", values[2])
        assert values[3].startswith(("+33", "0033"))
        assert re.fullmatch(r"\d{5}", values[6])
        assert not span_problems(out)


def test_surrogates_are_deterministic_and_spans_exact(translate_source):
    from deid_factory.records import read_records

    recs = []
    for r in read_records(translate_source):
        rec = placeholderize(r, load_inventory("en"))
        rec.lang = "en"
        recs.append(rec)
    a, _ = surrogate_records(recs, "en", seed=5)
    b, _ = surrogate_records(recs, "en", seed=5)
    c, _ = surrogate_records(recs, "en", seed=6)
    assert [r.to_dict() for r in a] == [r.to_dict() for r in b]
    assert [r.text for r in a] != [r.text for r in c]
    for rec in a:
        assert not span_problems(rec)
        assert not re.search(r"Faustino|Zelvorin|Quorvan", rec.text)


def test_broken_placeholder_record_is_dropped_with_reason():
    rec = _placeholder_record("x", "Vino Ana Ruiz.", [("Ana Ruiz", "PERSON")])
    rec.text = rec.text.replace("Faustino", "FAUSTINO")
    kept, report = surrogate_records([rec], "fr")
    assert kept == [] and report["dropped"] == {"placeholder_altered": 1}


def test_surrogate_keeps_the_sex_of_the_source_given_name():
    from faker.providers.person.fr_FR import Provider

    female, male = set(Provider.first_names_female), set(Provider.first_names_male)
    for source_name, expected in (("Lucía López", female), ("Juan López", male)):
        recs = [_placeholder_record(f"s{i}", f"Vino {source_name}.", [(source_name, "PERSON")]) for i in range(30)]
        kept, _ = surrogate_records(recs, "fr", seed=4, casing="title=1")
        for rec in kept:
            given = rec.text[rec.spans[0].start : rec.spans[0].end].split()[0]
            assert all(part in expected for part in given.split("-")), given


def test_a_bracketed_area_code_stays_inside_the_phone_span():
    """en phones like '(555) 201-3344': written whole, and the span keeps the bracket whose partner
    is inside it, as the packs and every annotated corpus do (it used to start at "555)")."""
    recs = [_placeholder_record(f"p{i}", "Tel. 600 111 222 hoy.", [("600 111 222", "PHONE")], target="en") for i in range(60)]
    for r in recs:
        r.lang = "en"
    kept, report = surrogate_records(recs, "en", seed=0)
    assert len(kept) == 60 and report["dropped"] == {}
    parenthesised = 0
    for rec in kept:
        (span,) = rec.spans
        assert not span_problems(rec)
        value = rec.text[span.start:span.end]
        assert rec.text[span.start - 1] != "(" and value.count("(") == value.count(")")
        parenthesised += value.startswith("(")
    assert parenthesised > 0


@pytest.mark.parametrize("target", ["es", "fr", "en", "de"])
def test_every_label_in_every_locale_gives_clean_spans(target):
    text = ("Ana Ruiz Gil (Ruiz), 54 años, nacida el 3 de mayo de 1970 y vista el 04/05/2021, tel. +34 600 111 222 "
            "o 600 111 222, en Calle Mayor 5, 28013 Sevilla, Hospital San Juan, enfermera, ana@ejemplo.es, "
            "www.ejemplo.es, 10.0.0.1, DNI 12345678Z, NASS 28/1234567/12, colegiado 28 12345, NHC 445566.")
    items = [("Ana Ruiz Gil", "PERSON"), ("Ruiz", "PERSON"), ("54 años", "AGE"), ("3 de mayo de 1970", "DATE"),
             ("04/05/2021", "DATE"), ("+34 600 111 222", "PHONE"), ("600 111 222", "PHONE"), ("Calle Mayor 5", "ADDRESS"),
             ("28013", "LOCATION"), ("Sevilla", "LOCATION"), ("Hospital San Juan", "ORGANIZATION"), ("enfermera", "PROFESSION"),
             ("ana@ejemplo.es", "EMAIL"), ("www.ejemplo.es", "URL"), ("10.0.0.1", "IP"), ("12345678Z", "ID", {"kind": "dni"}),
             ("28/1234567/12", "ID", {"kind": "nass"}), ("28 12345", "ID", {"kind": "colegiado"}), ("445566", "ID", {"kind": "nhc"})]
    recs = [_placeholder_record(f"{target}{i}", text, items, target=target) for i in range(150)]
    kept, report = surrogate_records(recs, target, seed=11)
    assert report["dropped"] == {} and len(kept) == 150
    for rec in kept:
        assert not span_problems(rec)
        assert len(rec.spans) == len(items)
        for span in rec.spans:
            if span.attrs.get("validated"):
                assert VALIDATORS[span.attrs["id_kind"]](rec.text[span.start : span.end])
    assert report["id_validated"]  # every locale has check-digit identifiers


def test_dates_of_a_record_are_coherent():
    import datetime as dt

    text = "Nacido el 01/02/1950. Ingresa el 03/04/2020 y sale el 10/04/2020."
    items = [("01/02/1950", "DATE", {"kind": "birth"}), ("03/04/2020", "DATE"), ("10/04/2020", "DATE")]
    recs = [_placeholder_record(f"d{i}", text, items) for i in range(100)]
    kept, _ = surrogate_records(recs, "fr", seed=3)
    checked = 0
    for rec in kept:
        parsed = []
        for span in rec.spans:
            value = rec.text[span.start : span.end]
            m = re.fullmatch(r"(\d{1,2})[/.](\d{1,2})[/.](\d{2,4})|(\d{4})-(\d{2})-(\d{2})", value)
            assert m, value
            if m.group(4):
                parsed.append(dt.date(int(m.group(4)), int(m.group(5)), int(m.group(6))))
            elif len(m.group(3)) == 4:
                parsed.append(dt.date(int(m.group(3)), int(m.group(2)), int(m.group(1))))
            else:
                parsed.append(None)  # a two-digit year is ambiguous by nature
        if None in parsed:
            continue
        checked += 1
        birth, stay_in, stay_out = parsed
        assert (stay_in - birth).days > 17 * 365
        assert abs((stay_out - stay_in).days) <= 61
    assert checked > 40
