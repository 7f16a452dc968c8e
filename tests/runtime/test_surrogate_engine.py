"""The surrogate engine (deid_runtime.surrogates) as redaction and the training corpus use it: the kind
and form of what a surrogate replaces are kept (issue 11 section 1, issue 13 section 2), every
choice of a redacted document comes from a secret key, and the data of every locale is consistent
with the classifier that reads it."""

from __future__ import annotations

import datetime as dt
import os
import random
import re
import subprocess
import sys

import pytest

from conftest import FACTORY_ONLY, modules_loaded_by, spans_of  # tests/ is on sys.path (pyproject's pythonpath)
from deid_factory.placeholders import load_inventory, placeholderize
from deid_factory.records import Record, Span, span_problems
from deid_runtime import ids
from deid_runtime import surrogates as S
from deid_runtime.redact import (KEY_ENV, Redactor, SurrogateKeyError, demo_key, load_key, redact_text,
                                         shift_date)
from deid_runtime.surrogates.locale import LocaleData, folded_words, locale_folder
from deid_factory.surrogates.stage import surrogate_records

KEY = b"test key: 32 bytes of not-secret"
LOCALES = ["es", "fr", "en", "de"]


def _redact(text, items, lang="es", doc_id="doc", key=KEY, **kw):
    out, spans = redact_text(text, spans_of(text, items), "surrogate", lang=lang, doc_id=doc_id, key=key, **kw)
    return out, [out[s:e] for s, e, _ in spans]


def _kind(label, text, lang, context=""):
    return S.describe(label, text, S.load_locale(lang), context).get("kind")


# ----------------------------------------------------------------------------- kind kept (redaction)
LOCATION_DOC = ("País: España. Provincia de Sevilla; vive en Lugo (CP 28013), antes en 41001 Sevilla. "
                "Nació en Andalucía.")
LOCATION_ITEMS = [("España", "LOCATION"), ("Sevilla", "LOCATION"), ("Lugo", "LOCATION"), ("28013", "LOCATION"),
                  ("41001 Sevilla", "LOCATION"), ("Andalucía", "LOCATION")]


@pytest.mark.parametrize("doc_id", [f"d{i}" for i in range(15)])
def test_redacted_locations_keep_their_kind(doc_id):
    """Today every LOCATION became a city: 'País: España' -> 'País: Logroño'."""
    es = S.load_locale("es")
    out, values = _redact(LOCATION_DOC, LOCATION_ITEMS, doc_id=doc_id)
    country, province, city, postal, postal_city, region = values
    assert country in es.countries and country != "España"
    assert province in es.regions and _kind("LOCATION", province, "es") == "region"
    assert city in [c for c, _ in es.cities] and city != "Lugo"
    assert re.fullmatch(r"\d{5}", postal) and postal != "28013"
    code, town = postal_city.split(" ", 1)
    assert re.fullmatch(r"\d{5}", code) and town in [c for c, _ in es.cities]
    assert region in es.regions
    assert out.startswith("País: ") and ". Provincia de " in out


@pytest.mark.parametrize("name,kind", [
    ("Hospital Universitario La Paz", "hospital"), ("Centro de Salud Delicias", "health_centre"),
    ("Universidad Complutense", "university"), ("Construcciones Pérez S.L.", "company"),
    ("Ayuntamiento de Lugo", "institution")])
def test_redacted_organizations_keep_their_kind(name, kind):
    assert _kind("ORGANIZATION", name, "es") == kind
    for i in range(10):
        _, (value,) = _redact(f"Remitido desde {name} ayer.", [(name, "ORGANIZATION")], doc_id=f"o{i}")
        assert value != name and _kind("ORGANIZATION", value, "es") == kind, value


@pytest.mark.parametrize("lang", LOCALES)
def test_locale_data_reads_back_as_its_own_kind(lang):
    """Every surrogate the data can produce is classified as the kind it was drawn for: the word
    lists and the classifier's keywords of a locale agree (a data error fails here)."""
    locale = S.load_locale(lang)
    for country in locale.countries:
        assert _kind("LOCATION", country, lang) == "country", country
    for region in locale.region_names:
        assert _kind("LOCATION", region, lang) == "region", region
    assert len(locale.region_names) >= 10
    for city, postal in locale.cities:
        assert _kind("LOCATION", city, lang) in ("city", "country"), city
    for city, codes in locale.postcodes.items():
        for postal in codes:  # every real code of a town (cities.tsv, one line each)
            assert _kind("LOCATION", postal, lang) == "postal_code", postal
            assert _kind("LOCATION", f"{postal} {city}", lang) == "postal_city", (postal, city)
    for kind in ("hospital", "health_centre", "university", "company", "institution"):
        patterns = locale.organizations[kind]
        assert patterns, kind
        for pattern in patterns:
            name = pattern.format(city="Ciudad", surname="Apellido")
            assert _kind("ORGANIZATION", name, lang) == kind, (lang, name)


def test_every_locale_has_every_data_file():
    for lang in LOCALES:
        locale = LocaleData.load(locale_folder(lang))
        assert locale.lang == lang
        for part in ("countries", "regions", "cities", "streets", "professions", "given_female", "given_male", "surnames"):
            assert len(getattr(locale, part)) >= 15, (lang, part)
        for section in ("date", "age", "phone", "address", "email", "url", "kinds"):
            locale[section]
    with pytest.raises(S.LocaleDataError, match="no surrogate data for locale 'xx'"):
        S.load_locale("xx", strict=True)


# ----------------------------------------------------------------------------- professions
@pytest.mark.parametrize("lang,text,value,gender", [
    ("es", "Varón que trabaja como estibador en el puerto.", "estibador", "m"),   # listed
    ("es", "Mujer que trabaja como enfermera de noche.", "enfermera", "f"),
    ("es", "Su hija es abogada y vive fuera.", "abogada", "f"),                   # by its ending
    ("fr", "Mme X, ancienne ostréicultrice, vit seule.", "ostréicultrice", "f"),
    ("fr", "Il est chaudronnier dans une usine.", "chaudronnier", "m"),
    ("fr", "Elle est chaudronnière dans une usine.", "chaudronnière", "f"),
    ("fr", "Elle travaille comme secrétaire médicale.", "secrétaire médicale", "f"),
])
def test_a_profession_surrogate_keeps_the_grammatical_gender_of_the_original(lang, text, value, gender):
    """'ancienne ostréicultrice' must not become 'ancienne infirmier': the surrogate is drawn in the
    gender the original was written in (professions.txt 'masculine|feminine', formats.yml
    `profession_endings` for the occupations not listed)."""
    locale = S.load_locale(lang)
    wanted = {m if gender == "m" else f for m, f in locale.professions}
    assert _kind("PROFESSION", value, lang) is None  # professions have no kind, only a form
    assert S.describe("PROFESSION", value, locale).get("gender") == gender
    seen = set()
    for i in range(25):
        _, (new,) = _redact(text, [(value, "PROFESSION")], lang=lang, doc_id=f"g{i}")
        assert new in wanted, (value, new)
        seen.add(new)
    assert len(seen) > 5  # still drawn from the whole list


@pytest.mark.parametrize("lang", ["es", "fr", "it", "pt"])
def test_profession_endings_never_contradict_the_listed_forms(lang):
    """The endings decide for occupations the list lacks: on the listed ones they must give each
    form its own gender or no answer, never the other one."""
    locale = LocaleData.load(locale_folder(lang))
    pairs = [(m, f) for m, f in locale.professions if m != f]
    assert len(pairs) >= 10, lang
    locale.profession_genders = {}  # the endings alone
    from deid_runtime.surrogates.kinds import profession_gender
    for m, f in pairs:
        assert profession_gender(m, locale) in ("m", None), (lang, m)
        assert profession_gender(f, locale) in ("f", None), (lang, f)
    told = sum(profession_gender(w, locale) is not None for pair in pairs for w in pair)
    assert told >= 1.5 * len(pairs), (lang, told)  # the endings tell most forms


def test_a_profession_line_with_three_forms_is_refused_with_its_file(tmp_path):
    folder = tmp_path / "xq" / "surrogate_data"
    _data_copy("es", folder)
    (folder / "professions.txt").write_text("enfermero|enfermera\nuno|dos|tres\n", encoding="utf-8")
    with pytest.raises(S.LocaleDataError, match=r"professions.txt: 'uno\|dos\|tres'"):
        LocaleData.load(folder)


# ----------------------------------------------------------------------------- dates
WEEKDAYS_ES = ["lunes", "martes", "miércoles", "jueves", "viernes", "sábado", "domingo"]
MONTHS_ES = ["enero", "febrero", "marzo", "abril", "mayo", "junio", "julio", "agosto", "septiembre", "octubre",
             "noviembre", "diciembre"]


# Every 14 November that fell on a Tuesday in 2000-2040: "martes 14 de noviembre" is one of them.
TUESDAYS_14_NOVEMBER = [d for d in (dt.date(y, 11, 14) for y in range(2000, 2041)) if d.weekday() == 1]


def test_a_date_without_a_year_stays_a_date_of_the_same_form():
    """Today 'martes 14 de noviembre' became 'aqklvp 09 af iigahgalu'. For 300 keys (each its own
    document shift): the weekday moves by the document's shift, the surrogate is the date of a real
    Tuesday 14 November moved by that shift (its weekday fits its day and month in that year), and
    the other dates of the document move by the same shift. No year is assumed: a date without one
    has none, and which Tuesday it was decides only whether the move crosses a 29 February."""
    import hashlib

    text = "Ingresa el 03/04/2020. Cita el martes 14 de noviembre, control el 14/11, alta en noviembre de 2020."
    items = [("03/04/2020", "DATE"), ("martes 14 de noviembre", "DATE"), ("14/11", "DATE"), ("noviembre de 2020", "DATE")]
    shifts = set()
    for i in range(300):
        key = hashlib.sha256(b"date key %d" % i).digest()
        _, (full, weekday_date, day_month, month_year) = _redact(text, items, doc_id=f"doc{i}", key=key)
        shift = Redactor(key).document(f"doc{i}", "es").date_shift
        shifts.add(shift)
        m = re.fullmatch(r"(\w+) (\d{1,2}) de (\w+)", weekday_date)
        assert m and m.group(1) in WEEKDAYS_ES and m.group(3) in MONTHS_ES, weekday_date
        weekday, day, month = WEEKDAYS_ES.index(m.group(1)), int(m.group(2)), MONTHS_ES.index(m.group(3)) + 1
        assert weekday == (WEEKDAYS_ES.index("martes") + shift) % 7, (shift, weekday_date)
        moved = [t + dt.timedelta(days=shift) for t in TUESDAYS_14_NOVEMBER]
        assert any((d.day, d.month, d.weekday()) == (day, month, weekday) for d in moved), (shift, weekday_date)
        assert day_month == f"{day:02d}/{month:02d}", (shift, weekday_date, day_month)  # the same shift
        full_moved = dt.date(2020, 4, 3) + dt.timedelta(days=shift)
        assert full == f"{full_moved.day:02d}/{full_moved.month:02d}/{full_moved.year}", (shift, full)
        assert re.fullmatch(r"(\w+) de \d{4}", month_year) and month_year.split()[0] in MONTHS_ES
    assert len(shifts) >= 100 and min(shifts) < 0 < max(shifts)  # many shifts, both ways


@pytest.mark.parametrize("value,days,lang,expected", [
    ("martes 14 de noviembre", 2, "es", "jueves 16 de noviembre"),
    ("Martes 28 de febrero", 1, "es", "Miércoles 1 de marzo"),
    ("14/11", 30, "es", "14/12"),
    ("14.11.", -14, "de", "31.10."),
    ("11/2020", 31, "fr", "12/2020"),
    ("Tuesday, November 14th", 7, "en", "Tuesday, November 21st"),
    ("1er mars 2020", 4, "fr", "5 mars 2020"),
    ("mardi", 1, "fr", "mercredi"),
    ("14 mar 2020", 1, "es", "15 mar 2020"),  # 'mar' is March here, not Tuesday
])
def test_shift_keeps_dates_without_year_and_weekdays_well_formed(value, days, lang, expected):
    assert shift_date(value, days, lang) == expected


def test_a_date_that_cannot_be_shifted_becomes_a_date_only_when_it_names_one():
    """Issue 25: a surrogate only where the span is surely of its kind. "ayer" names no day, month or
    year of the locale: a visible [DATE?], not an invented date; a form the shift does not know but
    that names a year still becomes a date."""
    _, (value,) = _redact("Visto ayer por la tarde.", [("ayer", "DATE")])
    assert value == "[DATE?]"
    _, (value,) = _redact("Operado en la primavera de 2019.", [("primavera de 2019", "DATE")])
    assert re.search(r"\d", value) and "?" not in value and value != "primavera de 2019"


# ----------------------------------------------------------------------------- identifiers, phones
@pytest.mark.parametrize("lang,keys", [("es", ids.keys(["es"])), ("fr", ids.keys(["fr"])), ("de", ids.keys(["de"])),
                                       ("en", ids.keys(["us", "gb"]))])
def test_redacted_identifiers_pass_their_own_check_digits(lang, keys):
    """Today IDs were random characters: some DNI letters were wrong, one NIE began with 'U'."""
    rng = random.Random(5)
    for key in keys:
        identifier = ids.get(key)
        for i in range(5):
            original = identifier.written(identifier.generate(rng))
            _, (new,) = _redact(f"Nº {original}.", [(original, "ID")], lang=lang, doc_id=f"{key}{i}")
            # (a value two kinds accept, an ADELI that is a FINESS too, gets a surrogate both accept)
            assert new != original and identifier.is_valid(new), (key, original, new)
            assert ids.layout_of(new) == ids.layout_of(original), (key, original, new)


def test_nie_and_dni_surrogates_are_valid():
    for i in range(30):
        _, (nie, dni) = _redact("NIE X-1234567-L, DNI 12345678Z.", [("X-1234567-L", "ID"), ("12345678Z", "ID")],
                                doc_id=str(i))
        assert re.fullmatch(r"[XYZ]-\d{7}-[A-Z]", nie) and ids.get("es.nie").is_valid(nie), nie
        assert re.fullmatch(r"\d{8}[A-Z]", dni) and ids.get("es.dni").is_valid(dni), dni


@pytest.mark.parametrize("phone,lang,prefix", [
    ("+34 612 345 678", "es", "+34 6"), ("0034 912345678", "es", "0034 9"), ("+44 20 7946 0958", "es", "+44 2"),
    ("+33 6 12 34 56 78", "fr", "+33 6"), ("06 12 34 56 78", "fr", "06"), ("+1 (555) 201-3344", "en", "+1 (5"),
    ("+49 30 1234567", "de", "+49 3")])
def test_a_phone_keeps_its_country_code_and_layout(phone, lang, prefix):
    for i in range(10):
        _, (new,) = _redact(f"Tel. {phone}.", [(phone, "PHONE")], lang=lang, doc_id=str(i))
        assert new.startswith(prefix) and new != phone
        assert re.sub(r"\d", "#", new) == re.sub(r"\d", "#", phone)


# ----------------------------------------------------------------------------- persons
PERSON_DOC = ("Antonio Jiménez Castro, 54 años. Firmado: A. Jiménez Castro. El Sr. Jiménez refiere dolor. "
              "JIMÉNEZ CASTRO, ANTONIO. Avisar a su hija Lucía Jiménez Ortega.")
PERSON_ITEMS = [("Antonio Jiménez Castro", "PERSON"), ("A. Jiménez Castro", "PERSON"), ("Sr. Jiménez", "PERSON"),
                ("JIMÉNEZ CASTRO, ANTONIO", "PERSON"), ("Lucía Jiménez Ortega", "PERSON")]


@pytest.mark.parametrize("doc_id", [f"p{i}" for i in range(10)])
def test_the_same_person_keeps_one_surrogate_across_partial_forms(doc_id):
    out, (full, initial, title, upper, daughter) = _redact(PERSON_DOC, PERSON_ITEMS, doc_id=doc_id)
    given, first, second = full.split()
    assert initial == f"{given[0]}. {first} {second}"
    assert title == f"Sr. {first}"
    assert upper == f"{first.upper()} {second.upper()}, {given.upper()}"
    d_given, d_first, d_second = daughter.split()
    assert d_first == first and d_second != second  # the family name is shared, as in the original
    for original in ("Antonio", "Jiménez", "JIMÉNEZ", "Castro", "Lucía", "Ortega"):
        assert original not in out


def test_partial_forms_first_and_in_another_order_give_the_same_person():
    items = list(reversed(PERSON_ITEMS))
    text = ". ".join(v for v, _ in items) + "."
    _, values = _redact(text, items, doc_id="order")
    daughter, upper, title, initial, full = values
    given, first, second = full.split()
    assert title == f"Sr. {first}" and initial == f"{given[0]}. {first} {second}"
    assert upper == f"{first.upper()} {second.upper()}, {given.upper()}"


@pytest.mark.parametrize("lang,text,items", [
    ("fr", "Mme LE GOFF Maëlle, suivie par le Dr Jean-Pierre MARTIN. Maëlle revient; Mme LE GOFF va bien.",
     [("LE GOFF Maëlle", "PERSON"), ("Jean-Pierre MARTIN", "PERSON"), ("Maëlle", "PERSON"), ("LE GOFF", "PERSON")]),
    ("es", "Paciente: Ana GARCÍA, en consulta con MORENO Luis. Ana mejora. Luis la revisa.",
     [("Ana GARCÍA", "PERSON"), ("MORENO Luis", "PERSON"), ("Ana", "PERSON"), ("Luis", "PERSON")]),
])
def test_words_in_capitals_are_the_surnames_whatever_their_place(lang, text, items):
    """'LE GOFF Maëlle': the surname in capitals comes first, so word order alone would make 'Maëlle'
    the surname and 'LE GOFF' given names; the given name alone must stay the same given name."""
    names = S.names_of(S.load_locale(lang))
    for i in range(8):
        _, (first, second, given_alone, other_alone) = _redact(text, items, lang=lang, doc_id=f"c{i}")
        capitals = [w for w in first.split() if w.isupper()]
        given = [w for w in first.split() if not w.isupper()]
        assert given == [given_alone], (first, given_alone)
        if lang == "fr":
            assert " ".join(capitals) == other_alone, (first, other_alone)
            assert all(S.fold(w) in names.female_set for w in given), first
            assert second.split()[-1].isupper() and not second.split()[0].isupper(), second
        else:
            assert second.split()[-1] == other_alone, (second, other_alone)
            assert S.fold(other_alone) in names.male_set, second


@pytest.mark.parametrize("context,name,sex", [
    ("Ingresa la paciente", "Zuriñeta Ruiz", "f"), ("Ingresa el paciente", "Zuriñeta Ruiz", "m"),
    ("Acude", "Sra. Zuriñeta Ruiz", "f"), ("Acude", "Lucía Pérez", "f"), ("Acude", "Juan Pérez", "m")])
def test_the_sex_of_a_given_name_is_kept(context, name, sex):
    names = S.names_of(S.load_locale("es"))
    assert not names.is_given("Zuriñeta")  # unknown to the name lists: only the context tells
    female, male = names.female_set, names.male_set
    for i in range(15):
        _, (value,) = _redact(f"{context} {name}.", [(name, "PERSON")], doc_id=f"s{i}")
        given = value.removeprefix("Sra. ").split()[0]
        assert S.fold(given) in (female if sex == "f" else male), (name, value)


@pytest.mark.parametrize("lang,text,items", [
    ("es", "LUGO y lugo; HOSPITAL GENERAL; Ana GARCÍA", [("LUGO", "LOCATION"), ("lugo", "LOCATION"),
                                                         ("HOSPITAL GENERAL", "ORGANIZATION"), ("Ana GARCÍA", "PERSON")]),
    ("fr", "MARTIN Jean, né à LYON", [("MARTIN Jean", "PERSON"), ("LYON", "LOCATION")]),
])
def test_casing_of_the_original_is_kept(lang, text, items):
    for i in range(5):
        _, values = _redact(text, items, lang=lang, doc_id=str(i))
        for (original, _), value in zip(items, values):
            for o_word, v_word in zip(original.split(), value.split()):
                if o_word.isupper():
                    assert v_word.isupper(), (original, value)
                elif o_word.islower():
                    assert v_word.islower(), (original, value)


def test_no_stray_spaces_and_spans_hold_their_surrogate():
    text = ("Paciente: ANA PÉREZ GARCÍA (DNI 12345678Z), 54 años, tel. +34 612 345 678, ana@correo.es, "
            "Calle Mayor 5, 28013 Madrid. Ingresa el martes 14 de noviembre en el Hospital La Paz. País: España. "
            "Médico: Dr. Luis Gil. IP 10.0.0.1, web www.ejemplo.es, enfermera.")
    items = [("ANA PÉREZ GARCÍA", "PERSON"), ("12345678Z", "ID"), ("54 años", "AGE"), ("+34 612 345 678", "PHONE"),
             ("ana@correo.es", "EMAIL"), ("Calle Mayor 5, 28013 Madrid", "ADDRESS"), ("martes 14 de noviembre", "DATE"),
             ("Hospital La Paz", "ORGANIZATION"), ("España", "LOCATION"), ("Dr. Luis Gil", "PERSON"),
             ("10.0.0.1", "IP"), ("www.ejemplo.es", "URL"), ("enfermera", "PROFESSION")]
    for i in range(30):
        out, spans = redact_text(text, spans_of(text, items), "surrogate", lang="es", doc_id=str(i), key=KEY)
        assert "  " not in out and " ," not in out and " ." not in out
        assert len(spans) == len(items)
        for s, e, label in spans:
            value = out[s:e]
            assert value == value.strip() and value, (label, value)
        rec = Record("r", "es", out, [Span(s, e, label) for s, e, label in spans], {})
        assert not span_problems(rec)


# ----------------------------------------------------------------------------- the key
def test_surrogates_come_from_the_key():
    text = "Ana Ruiz, DNI 12345678Z, ingresa el 03/04/2020 en Lugo."
    items = [("Ana Ruiz", "PERSON"), ("12345678Z", "ID"), ("03/04/2020", "DATE"), ("Lugo", "LOCATION")]
    a = _redact(text, items, key=KEY)[0]
    assert _redact(text, items, key=KEY)[0] == a  # reproducible for the key's owner
    assert _redact(text, items, key=KEY[::-1])[0] != a  # another key, other surrogates and shift
    assert Redactor(KEY).document("doc").date_shift != Redactor(KEY[::-1]).document("doc").date_shift
    with pytest.raises(SurrogateKeyError, match="surrogate mode needs a secret key"):
        redact_text(text, spans_of(text, items), "surrogate", lang="es", doc_id="doc")
    with pytest.raises(SurrogateKeyError, match="at least 16"):
        Redactor(b"short")
    # the demo key: allowed only when asked for, and it is not the secret one
    demo = redact_text(text, spans_of(text, items), "surrogate", lang="es", doc_id="doc", demo=True)[0]
    assert demo != a and demo == _redact(text, items, key=demo_key(0))[0]


def test_key_from_a_file_or_the_environment(tmp_path):
    key_file = tmp_path / "surrogate.key"
    key_file.write_bytes(KEY + b"\n")
    assert load_key(key_file, environ={}) == KEY
    assert load_key(None, environ={KEY_ENV: KEY.decode()}) == KEY
    assert load_key(None, environ={}) is None
    with pytest.raises(SurrogateKeyError, match="cannot read the key file"):
        load_key(tmp_path / "missing.key", environ={})
    (tmp_path / "short.key").write_bytes(b"abc")
    with pytest.raises(SurrogateKeyError, match="short.key is 3 bytes"):
        load_key(tmp_path / "short.key", environ={})


def test_a_patient_id_makes_documents_of_one_patient_share_surrogates():
    text = "Antonio Jiménez Castro ingresa el 03/04/2020 en Lugo."
    items = [("Antonio Jiménez Castro", "PERSON"), ("03/04/2020", "DATE"), ("Lugo", "LOCATION")]
    one = _redact(text, items, doc_id="note-1", patient_id="P-7")[1]
    two = _redact("Control: Sr. Jiménez, visto el 03/04/2020 en Lugo.", [("Sr. Jiménez", "PERSON"),
                  ("03/04/2020", "DATE"), ("Lugo", "LOCATION")], doc_id="note-2", patient_id="P-7")[1]
    assert two == [f"Sr. {one[0].split()[1]}", one[1], one[2]]
    other = _redact(text, items, doc_id="note-1", patient_id="P-8")[1]
    assert other != one


# ----------------------------------------------------------------------------- training side
_INV: dict = {}


def _placeholder_record(rid, text, items, target, source="es"):
    spans, cursor = [], 0
    for surface, label, *attrs in items:
        start = text.index(surface, cursor)
        spans.append(Span(start, start + len(surface), label, attrs[0] if attrs else {}))
        cursor = start + len(surface)
    _INV.setdefault(target, load_inventory(target))
    rec = placeholderize(Record(rid, source, text, spans, {}), _INV[target])
    rec.lang = target  # as if translated by a copy model
    return rec


@pytest.mark.parametrize("target", ["es", "fr"])
def test_training_surrogates_keep_the_kind_of_each_location(target):
    """The MEDDOCAN build turned 'País: España' into 'País: Logroño'; a country stays a country."""
    text = "País: España. Provincia: Sevilla. Municipio: Lugo. CP: 28013. Hospital Universitario La Paz, Centro de Salud Delicias."
    items = [("España", "LOCATION"), ("Sevilla", "LOCATION"), ("Lugo", "LOCATION"), ("28013", "LOCATION"),
             ("Hospital Universitario La Paz", "ORGANIZATION"), ("Centro de Salud Delicias", "ORGANIZATION")]
    recs = [_placeholder_record(f"k{i}", text, items, target) for i in range(40)]
    kept, report = surrogate_records(recs, target, seed=3)
    assert len(kept) == 40
    locale = S.load_locale(target)
    for rec in kept:
        country, province, city, postal, hospital, centre = [rec.text[s.start:s.end] for s in rec.spans]
        assert country in locale.countries, country
        assert province in locale.regions, province
        assert city in [c for c, _ in locale.cities], city
        assert postal in {p for codes in locale.postcodes.values() for p in codes}, postal
        assert _kind("ORGANIZATION", hospital, target) == "hospital", hospital
        assert _kind("ORGANIZATION", centre, target) == "health_centre", centre
        assert [s.attrs.get("kind") for s in rec.spans] == ["country", "region", "city", "postal_code", "hospital", "health_centre"]
    assert report["kinds"]["LOCATION:country"] == 40


def test_training_source_label_tells_the_kind_the_text_does_not():
    items = [("La Fe", "ORGANIZATION", {"source_label": "CENTRO_SALUD"}), ("Ruritania", "LOCATION", {"source_label": "PAIS"})]
    recs = [_placeholder_record(f"s{i}", "Atendido en La Fe, natural de Ruritania.", items, "es") for i in range(10)]
    kept, _ = surrogate_records(recs, "es", seed=1)
    for rec in kept:
        centre, country = [rec.text[s.start:s.end] for s in rec.spans]
        assert _kind("ORGANIZATION", centre, "es") == "health_centre" and country in S.load_locale("es").countries


def test_training_dates_keep_their_parts_and_casing_of_places_is_kept():
    text = "Cita el martes 14 de noviembre; visto en noviembre de 2020; PAÍS: ESPAÑA."
    items = [("martes 14 de noviembre", "DATE"), ("noviembre de 2020", "DATE"), ("ESPAÑA", "LOCATION")]
    months_fr = "janvier|février|mars|avril|mai|juin|juillet|août|septembre|octobre|novembre|décembre"
    days_fr = "lundi|mardi|mercredi|jeudi|vendredi|samedi|dimanche"
    recs = [_placeholder_record(f"t{i}", text, items, "fr") for i in range(30)]
    kept, _ = surrogate_records(recs, "fr", seed=2)
    for rec in kept:
        weekday_date, month_year, country = [rec.text[s.start:s.end] for s in rec.spans]
        m = re.fullmatch(rf"({days_fr}) (\d{{1,2}}|1er) ({months_fr})", weekday_date)
        assert m, weekday_date
        assert re.fullmatch(rf"({months_fr}) \d{{4}}", month_year), month_year
        assert country.isupper() and country.title() in [c.title() for c in S.load_locale("fr").countries]


def test_training_phone_keeps_a_foreign_calling_code():
    items = [("+44 20 7946 0958", "PHONE"), ("+34 600 111 222", "PHONE")]
    recs = [_placeholder_record(f"p{i}", "Tel. +44 20 7946 0958 o +34 600 111 222.", items, "fr") for i in range(20)]
    kept, _ = surrogate_records(recs, "fr", seed=0)
    for rec in kept:
        foreign, own = [rec.text[s.start:s.end] for s in rec.spans]
        assert foreign.startswith(("+44", "0044")) and own.startswith(("+33", "0033"))


# ----------------------------------------------------------------------------- runtime boundary
def test_engine_runs_in_a_wheel_layout_without_faker_or_deid_factory(tmp_path):
    """The deid_<lang> wheels run on the deid-runtime wheel (package.py builds it): the engine must
    work from that wheel, installed, with no deid_factory and no Faker (names from the locale's own
    lists), the locale's data coming from the installed deid_es wheel (its `deid_runtime.locales`
    entry point; a regex-only deid_es is enough to carry it)."""
    from deid_factory.package import assemble_pipeline, package_pipeline

    site = tmp_path / "site"
    assemble_pipeline(None, "es", tmp_path / "pipeline")
    wheel = package_pipeline(tmp_path / "pipeline", tmp_path / "dist", lang="es")
    (runtime_wheel,) = wheel.parent.glob("deid_runtime-*.whl")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), str(wheel),
                    str(runtime_wheel)], check=True, capture_output=True, timeout=300)
    script = f"""
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('faker', 'deid_factory'):
            raise ImportError('blocked: ' + name)
sys.meta_path.insert(0, Block())
sys.path.insert(0, {str(site)!r})
import deid_runtime
assert deid_runtime.__file__.startswith({str(site)!r}), deid_runtime.__file__  # the wheel's copy
from deid_runtime.redact import redact_text
text = 'Paciente Lucía Pérez, DNI 12345678Z, País: España, el martes 14 de noviembre.'
spans = [(9, 20, 'PERSON'), (26, 35, 'ID'), (43, 49, 'LOCATION'), (54, 76, 'DATE')]
out, new = redact_text(text, spans, 'surrogate', lang='es', doc_id='d', key=b'x' * 32)
from deid_runtime.surrogates.locale import locale_folder
assert locale_folder('es').is_relative_to({str(site)!r}), locale_folder('es')  # the deid_es wheel's data
print('|'.join(out[s:e] for s, e, _ in new))
"""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    ret = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    assert ret.returncode == 0, ret.stderr[-2000:]
    person, dni, country, date = ret.stdout.strip().split("|")
    es = S.load_locale("es")
    assert person.split()[0] in es.given_female and person.split()[1] in es.surnames
    assert ids.get("es.dni").is_valid(dni) and dni != "12345678Z"
    assert country in es.countries and re.fullmatch(r"\w+ \d{1,2} de \w+", date)


def test_runtime_surrogates_import_nothing_factory_only():
    assert modules_loaded_by("import deid_runtime.redact", FACTORY_ONLY + ("spacy",)) == []


def test_shapes_hold_no_text():
    """What the placeholder stage keeps of an entity: counts, flags and kind names, never its words."""
    es = S.load_locale("es")
    for label, text in (("LOCATION", "Zaragoza"), ("ORGANIZATION", "Clínica Miguel Servet"), ("PERSON", "Sra. Lucía Pérez"),
                        ("ADDRESS", "Calle Mayor 5, 28013 Madrid"), ("DATE", "martes 14 de noviembre"), ("ID", "12345678Z"),
                        ("PHONE", "+34 612 345 678")):
        shape = S.describe(label, text, es, "Paciente: ")
        flat = " ".join(str(v) for v in shape.values())
        for word in folded_words(text):
            if len(word) > 2 and not word.isdigit():
                assert word not in S.fold(flat), (label, word, shape)
        assert not any(ch.isdigit() and len(str(v)) > 3 for v in shape.values() for ch in str(v)), shape


def test_training_identifiers_keep_their_kind_or_their_role():
    """A NIE stays a NIE in a Spanish corpus; in a French one, a DNI recognised by its check letter
    (no `kind` attribute from the source) becomes a NIR, the French national identifier."""
    assert {ids.get(k).role for k in ids.keys()} <= set(ids.ROLES)  # every identifier of the registry has a role
    items = [("X-1234567-L", "ID"), ("12345678Z", "ID")]
    kept, _ = surrogate_records([_placeholder_record(f"i{i}", "NIE X-1234567-L, DNI 12345678Z.", items, "es")
                                 for i in range(10)], "es", seed=4)
    for rec in kept:
        nie, dni = [rec.text[s.start:s.end] for s in rec.spans]
        assert ids.get("es.nie").is_valid(nie) and ids.get("es.dni").is_valid(dni) and nie[0] in "XYZ"
    kept, report = surrogate_records([_placeholder_record(f"j{i}", "DNI 12345678Z.", [("12345678Z", "ID")], "fr")
                                      for i in range(10)], "fr", seed=4)
    assert report["id_kinds"] == {"fr_nir": 10}


# ----------------------------------------------------------------------------- where a locale's data is
@pytest.fixture
def empty_registry(monkeypatch):
    """The runtime's registry with nothing registered and no installed package declaring a locale
    (restored after the test, with load_locale's cache)."""
    from deid_runtime.surrogates import locale as registry

    monkeypatch.setattr(registry, "_FOLDERS", {})
    monkeypatch.setattr(registry, "_ROOTS", [])
    monkeypatch.setattr(registry, "_entry_point_folders", lambda: {})
    S.load_locale.cache_clear()
    yield registry
    S.load_locale.cache_clear()


def _data_copy(lang, dest):
    import shutil

    from deid_factory.locale import Locale

    shutil.copytree(Locale.load(lang).surrogate_data_dir, dest)
    return dest


def test_the_factory_reads_each_locale_from_its_own_folder():
    from deid_factory.locale import Locale

    for lang in LOCALES:
        assert locale_folder(lang) == Locale.load(lang).surrogate_data_dir
        assert S.load_locale(lang).folder == Locale.load(lang).surrogate_data_dir


def test_registered_folders_roots_and_entry_points_in_that_order(empty_registry, tmp_path, monkeypatch):
    fr = _data_copy("fr", tmp_path / "wheel" / "fr_data")
    monkeypatch.setattr(empty_registry, "_entry_point_folders", lambda: {"fr": fr})  # an installed deid_fr
    assert S.load_locale("fr").folder == fr and empty_registry.locales_with_data() == ["fr"]
    root = tmp_path / "project" / "languages"
    _data_copy("fr", root / "fr" / "surrogate_data")
    S.register_locale_root(root)  # a project's languages/ wins over the installed wheel
    assert S.load_locale("fr").folder == root / "fr" / "surrogate_data"
    mine = _data_copy("fr", tmp_path / "mine")
    S.register_locale_data("fr", mine)  # a folder registered by name wins over both
    assert S.load_locale("fr").folder == mine and S.load_locale("fr").lang == "fr"


def test_a_language_without_data_falls_back_to_en_else_the_first_locale(empty_registry, tmp_path):
    with pytest.raises(S.LocaleDataError, match="none is registered"):
        S.load_locale("xx")
    root = tmp_path / "languages"
    for lang in ("pt", "fr"):
        _data_copy(lang, root / lang / "surrogate_data")
    S.register_locale_root(root)
    assert S.load_locale("xx").lang == "fr"  # no en: the first by code, documented in load_locale
    assert S.load_locale(None).lang == "fr"
    _data_copy("en", root / "en" / "surrogate_data")
    S.register_locale_root(root)  # registering again clears what was loaded before
    assert S.load_locale("xx").lang == "en"
    with pytest.raises(S.LocaleDataError) as err:
        S.load_locale("xx", strict=True)
    message = str(err.value)
    assert "no surrogate data for locale 'xx'" in message and str(root / "xx" / "surrogate_data") in message
    assert "deid_runtime.locales" in message and "have: en, fr, pt" in message


@pytest.mark.parametrize("lang, name, particles", [("es", "Rosario Peñalver de la Cruz", ["de", "la"]),
                                                   ("nl", "Jan van der Berg", ["van", "der"]),
                                                   ("pt", "Maria dos Santos", ["dos"])])
@pytest.mark.parametrize("doc_id", ["d1", "d2", "d3"])
def test_name_particles_stay_as_written_and_the_names_around_them_change(lang, name, particles, doc_id):
    """A surname's particle ("de la", "van der", "dos": formats.yml `name_particles`) is not a name:
    it stays as written, every name word around it gets a surrogate, and a later mention of the
    same person without the given name gets the same surname with the same particles."""
    surname = name.split(" ", 1)[1]
    text = f"Nombre: {name}. Más tarde, {surname} vuelve."
    out, (full, later) = _redact(text, [(name, "PERSON"), (surname, "PERSON")], lang, doc_id)
    words = full.split()
    assert len(words) == len(name.split())
    assert [w for w in words if w in particles] == particles
    assert not set(w for w in name.split() if w not in particles) & set(words)
    assert later == full.split(" ", 1)[1]
