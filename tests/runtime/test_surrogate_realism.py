"""Surrogates a reader cannot tell from the real thing (issue 30, section 1): a postal code and its
town stay a real pair, an organisation agrees with the article before it, an abbreviated month
becomes the new month's own abbreviation, an identifier keeps the number mark it caught, an address
keeps its street word, and the identifiers and ages of a person agree with what the document states
(the title, the shifted birth date, the shifted date of the visit). Every text here is fictitious,
written for these tests; every surrogate comes from the real engine (deid_runtime.redact)."""

from __future__ import annotations

import datetime as dt
import re
from functools import lru_cache
from pathlib import Path

import pytest
from stdnum.fr import nir as std_nir

from conftest import CHECKOUT, regex_pack, spans_of, use_checkout_surrogate_data  # tests/ is on sys.path (pyproject's pythonpath)
from deid_runtime import surrogates as S
from deid_runtime.redact import Redactor, redact
from deid_runtime.surrogates import values
from deid_runtime.text import fold

use_checkout_surrogate_data()  # languages/<lc>/surrogate_data/ of this checkout
KEY = b"test key: 32 bytes of not-secret"
DOC_IDS = [f"doc{i}" for i in range(24)]


def _lexicon(lang):
    return regex_pack(lang).clinical


def _redact(text, items, lang, doc_id):
    """(redacted text, the surrogate of each item): the checks read the locale's clinical lexicon."""
    done = redact(text, spans_of(text, items), "surrogate", lang=lang, doc_id=doc_id, key=KEY, lexicon=_lexicon(lang))
    return done.text, [done.text[s:e] for s, e, _ in done.spans]


@lru_cache(maxsize=None)
def _real_pairs(lang):
    """(town, postal code) pairs as cities.tsv lists them, read here without the engine."""
    path = CHECKOUT / "languages" / lang / "surrogate_data" / "cities.tsv"
    return {tuple(line.split("\t")) for line in Path(path).read_text(encoding="utf-8").splitlines()
            if line.strip() and not line.startswith("#")}


# ----------------------------------------------------------------------------- postal code and town
@pytest.mark.parametrize("doc_id", DOC_IDS)
def test_a_postal_code_and_its_town_stay_one_real_pair_at_every_mention(doc_id):
    """Today "28009 Madrid" became "50001 Huelva": the postal code and the town were drawn apart."""
    text = ("Domicilio: C/ Olmeda 14, 28009 Madrid. Natural de Madrid; CP 28009. "
            "Trabajó en 41003 Sevilla.")
    items = [("C/ Olmeda 14", "ADDRESS"), ("28009", "LOCATION"), ("Madrid", "LOCATION"), ("Madrid", "LOCATION"),
             ("28009", "LOCATION"), ("41003 Sevilla", "LOCATION")]
    _, (street, postal, town, town_again, postal_again, postal_town) = _redact(text, items, "es", doc_id)
    assert (town, postal) in _real_pairs("es"), (postal, town)
    assert (town_again, postal_again) == (town, postal)
    code, other = postal_town.split(" ", 1)
    assert (other, code) in _real_pairs("es"), postal_town
    assert town != "Madrid" and other != "Sevilla" and street.startswith("C/ ")


@pytest.mark.parametrize("doc_id", DOC_IDS[:12])
def test_an_address_holding_a_postal_code_goes_with_the_town_beside_it(doc_id):
    """An ADDRESS ending with its postal code before a LOCATION town, a town before its postal code in
    brackets, an ADDRESS holding both: each postal code is one of its town's, and one town stays one."""
    text = ("Adresse : 12 rue des Lilas, 33000 Bordeaux. Travaille à Lyon (69003). "
            "Ancienne adresse : 5 impasse du Moulin, 69003 Lyon.")
    items = [("12 rue des Lilas, 33000", "ADDRESS"), ("Bordeaux", "LOCATION"), ("Lyon", "LOCATION"),
             ("69003", "LOCATION"), ("5 impasse du Moulin, 69003 Lyon", "ADDRESS")]
    _, (address, town, town2, postal2, old_address) = _redact(text, items, "fr", doc_id)
    postal = re.search(r"\d{5}$", address).group(0)
    assert (town, postal) in _real_pairs("fr"), (address, town)
    assert (town2, postal2) in _real_pairs("fr"), (town2, postal2)
    assert old_address.endswith(f", {postal2} {town2}"), old_address  # the same code and town at every mention
    assert not re.search(r"\d{5} \w", address), address  # the town stays outside the ADDRESS, as written


@pytest.mark.parametrize("value,kept", [("CP 28009 Madrid", "CP "), ("CP 28009", "CP "), ("Madrid 28009 Centro", ""),
                                         ("28009 Madrid", "")])
def test_a_location_holding_a_postal_code_keeps_nothing_of_the_original_but_its_label(value, kept):
    """A label before the code ("CP") stays; everything else changes, a town and a code as one pair."""
    for doc_id in DOC_IDS[:8]:
        _, (new,) = _redact(f"Domicilio: {value}.", [(value, "LOCATION")], "es", doc_id)
        assert new.startswith(kept) and "Madrid" not in new and "28009" not in new and "Centro" not in new, new
        code = re.search(r"\d{5}", new)
        if code and new[len(kept):] != code.group(0):
            town = new[len(kept):].replace(code.group(0), "").strip()
            assert (town, code.group(0)) in _real_pairs("es"), new


def test_a_dutch_postcode_of_two_words_and_its_town():
    for doc_id in DOC_IDS[:8]:
        text = "Adres: Kerkstraat 12, 1012 AB Amsterdam. Woont sinds 2010 in Amsterdam."
        _, (address, town) = _redact(text, [("Kerkstraat 12, 1012 AB Amsterdam", "ADDRESS"), ("Amsterdam", "LOCATION")],
                                     "nl", doc_id)
        m = re.search(r", (\d{4} [A-Z]{2}) (.+)$", address)
        assert m and (m.group(2), m.group(1)) in _real_pairs("nl"), address
        assert m.group(2) == town != "Amsterdam"


# ----------------------------------------------------------------------------- abbreviated months
@pytest.mark.parametrize("lang,value,days,expected", [
    ("fr", "10 nov. 2023", 174, "2 mai 2024"),      # "mai" has no dot (today: "2 mai. 2024")
    ("fr", "10 nov. 2023", 60, "9 janv. 2024"),
    ("fr", "10 nov 2023", 60, "9 janv 2024"),       # written without its dot: stays without
    ("fr", "3 juin 2024", 60, "2 août 2024"),
    ("fr", "10 févr. 2023", 31, "13 mars 2023"),    # "mars" is written whole
    ("es", "10 nov. 2023", 174, "2 may. 2024"),
    ("es", "10 sep. 2023", 60, "9 nov. 2023"),      # "sep." and "sept." are both read
    ("it", "10 nov. 2023", 174, "2 mag. 2024"),
    ("pt", "10 nov. 2023", 174, "2 maio 2024"),     # "maio" is written whole
    ("nl", "10 nov. 2023", 174, "2 mei 2024"),
    ("nl", "2 mei 2024", -174, "10 november 2023"),  # a full name stays a full name
])
def test_an_abbreviated_month_becomes_the_new_months_own_abbreviation(lang, value, days, expected):
    assert S.shift_date(value, days, lang) == expected


def test_redacted_french_dates_never_write_a_dot_after_a_month_written_whole():
    seen = set()
    for doc_id in DOC_IDS:
        _, (date,) = _redact("Consultation du 10 nov. 2023 pour suivi.", [("10 nov. 2023", "DATE")], "fr", doc_id)
        assert not re.search(r"\b(mars|mai|juin|août)\.", date), date
        assert re.fullmatch(r"\d{1,2} (janv\.|févr\.|mars|avr\.|mai|juin|juil\.|août|sept\.|oct\.|nov\.|déc\.) 20\d\d", date), date
        seen.add(date.split()[1])
    assert len(seen) >= 4


# ----------------------------------------------------------------------------- articles
# Heads a name may start with after each article, in the test's own words (French grammar).
FR_AFTER = {"la": {"clinique", "polyclinique", "maison"}, "au": {"centre", "chu", "groupe", "cabinet"}}
ES_AFTER = {"la": {"clínica", "policlínica"}, "al": {"hospital", "complejo"}}


@pytest.mark.parametrize("doc_id", DOC_IDS)
def test_a_french_organisation_agrees_with_the_article_before_it(doc_id):
    """Today "la Clinique ..." could become "la Hôpital ...", "l'Hôpital ..." "l'Clinique ..."."""
    text = "Transférée de la Clinique Pasteur à l'Hôpital Nord, puis suivie au CHU de Lyon."
    items = [("Clinique Pasteur", "ORGANIZATION"), ("Hôpital Nord", "ORGANIZATION"), ("CHU de Lyon", "ORGANIZATION")]
    out, (after_la, after_l, after_au) = _redact(text, items, "fr", doc_id)
    assert fold(after_la.split()[0]) in FR_AFTER["la"], after_la
    assert fold(after_l)[0] in "aeiouyh", after_l
    assert fold(after_au.split()[0]) in FR_AFTER["au"], after_au
    assert "de la " in out and "à l'" in out and " au " in out


@pytest.mark.parametrize("doc_id", DOC_IDS[:12])
def test_spanish_and_italian_organisations_agree_with_their_articles(doc_id):
    text = "Ingresó en la Clínica Santa Elena y fue derivada al Hospital Comarcal de Ribera."
    _, (after_la, after_al) = _redact(text, [("Clínica Santa Elena", "ORGANIZATION"),
                                             ("Hospital Comarcal de Ribera", "ORGANIZATION")], "es", doc_id)
    assert fold(after_la.split()[0]) in {fold(w) for w in ES_AFTER["la"]}, after_la
    assert fold(after_al.split()[0]) in ES_AFTER["al"], after_al
    text = "Ricoverata all'Ospedale Maggiore, poi seguita alla Clinica Villa Rosa."
    _, (after_all, after_alla) = _redact(text, [("Ospedale Maggiore", "ORGANIZATION"),
                                                ("Clinica Villa Rosa", "ORGANIZATION")], "it", doc_id)
    assert fold(after_all)[0] in "aeiou", after_all
    assert fold(after_alla.split()[0]) in {"clinica", "casa", "azienda"} and fold(after_alla)[0] not in "aeiou", after_alla


def test_where_no_name_of_the_kind_agrees_the_original_generic_word_is_kept():
    """No Spanish university of the data starts with a masculine word: "el Instituto Universitario
    X" keeps "Instituto" before a drawn surname; a name without a generic word follows the articles
    written before it."""
    import random

    es = S.load_locale("es")
    for seed in range(10):
        name = values.organization(random.Random(seed), es, {"kind": "university"}, original="Instituto Universitario Celta")
        assert name.startswith("Instituto ") and len(name.split()) == 2, name
        free = values.organization(random.Random(seed), es, {"kind": "university"}, original="Complutense")
        assert free.split()[0] in ("Universidad", "Facultad"), free
        after_el = values.organization(random.Random(seed), es, {"kind": "hospital"}, original="Gregorio Marañón",
                                       articles=["m"])
        assert after_el.split()[0] in ("Hospital", "Complejo"), after_el


@pytest.mark.parametrize("lang", ["es", "fr", "it", "pt", "nl"])
def test_every_organisation_of_the_data_has_a_head_its_articles_know(lang):
    """A name the data can draw whose head no `articles.heads` group lists could never follow an
    article: only names that start with a surname ("{surname} et Fils SAS") may lack one."""
    from deid_runtime.surrogates.kinds import head_of

    locale = S.load_locale(lang)
    groups = set(locale.head_groups.values())
    assert groups <= {g for g in locale.article_groups.values()}, "a head group no article asks for"
    for kind, patterns in locale.organizations.items():
        for pattern in patterns:
            assert head_of(pattern, locale)[0] is not None or pattern.startswith("{surname}"), (lang, kind, pattern)


def test_a_patients_documents_agree_whatever_each_writes_around_a_value():
    """One patient's surrogates do not depend on what a document writes beside a value: a clinic
    with or without its article, a postal code with or without its town."""
    redactor = Redactor(KEY)
    first = "Vue à la Clinique Pasteur, 69003 Lyon."
    second = "Clinique Pasteur, code postal 69003."
    a = redactor.redact(first, spans_of(first, [("Clinique Pasteur", "ORGANIZATION"), ("69003 Lyon", "LOCATION")]), "a", "fr",
                        patient_id="p1", lexicon=_lexicon("fr"))
    b = redactor.redact(second, spans_of(second, [("Clinique Pasteur", "ORGANIZATION"), ("69003", "LOCATION")]), "b", "fr",
                        patient_id="p1", lexicon=_lexicon("fr"))
    (clinic_a, place_a), (clinic_b, postal_b) = ([d.text[s:e] for s, e, _ in d.spans] for d in (a, b))
    assert clinic_a == clinic_b and place_a.split()[0] == postal_b, (a.text, b.text)
    assert (place_a.split(" ", 1)[1], postal_b) in _real_pairs("fr")


# ----------------------------------------------------------------------------- identifiers
@pytest.mark.parametrize("doc_id", DOC_IDS[:12])
def test_an_identifier_keeps_the_number_mark_it_caught(doc_id):
    """Today "Colegiado nº 282812345" became "Colegiado yb 394857211"."""
    out, (value,) = _redact("Firmado: colegiado nº 282812345.", [("nº 282812345", "ID")], "es", doc_id)
    assert re.fullmatch(r"nº \d{9}", value) and value != "nº 282812345", value
    assert out.startswith("Firmado: colegiado nº ")


def test_no_identifier_is_drawn_for_a_value_without_a_digit():
    document = Redactor(KEY).document("d", "es")
    assert document.get("ID", "nº") == "[ID?]"
    assert document.get("ID", "Colegiado") == "[ID?]"


# ----------------------------------------------------------------------------- street words
@pytest.mark.parametrize("doc_id", DOC_IDS[:12])
def test_an_address_keeps_its_street_word(doc_id):
    _, (fr_address,) = _redact("Domiciliée Place Amélie Raba-Léon.", [("Place Amélie Raba-Léon", "ADDRESS")], "fr", doc_id)
    assert fr_address.startswith("Place ") and "Raba" not in fr_address, fr_address
    _, (es_address,) = _redact("Vive en Avda. de Olmeda 12, 2º B.", [("Avda. de Olmeda 12", "ADDRESS")], "es", doc_id)
    assert es_address.startswith("Avda. ") and re.search(r"\d", es_address) and "Olmeda" not in es_address, es_address
    _, (nl_address,) = _redact("Woont aan de Dorpsweg 12.", [("Dorpsweg 12", "ADDRESS")], "nl", doc_id)
    assert re.fullmatch(r"\w+weg \d+(-\d+)?", nl_address) and nl_address != "Dorpsweg 12", nl_address


@pytest.mark.parametrize("doc_id", DOC_IDS[:12])
def test_a_street_taken_for_a_name_or_a_town_keeps_its_street_word(doc_id):
    """Today "Place Amélie Raba-Léon" became "Grenoble Simone Lucie-Thomas": "Place" was drawn as a
    town. A street word alone stays, a name after it is a name; a span that starts with a street
    word is an address, and its surrogate one."""
    text = "Domiciliée Place Amélie Raba-Léon."
    out, (word, name) = _redact(text, [("Place", "LOCATION"), ("Amélie Raba-Léon", "PERSON")], "fr", doc_id)
    assert word == "Place" and "Amélie" not in name, out
    _, (as_person,) = _redact(text, [("Place Amélie Raba-Léon", "PERSON")], "fr", doc_id)
    assert as_person.startswith("Place ") and "Amélie" not in as_person, as_person
    fr = S.load_locale("fr")
    assert any(fold(as_person[len("Place "):]) == fold(street) for street in fr.streets), as_person
    # the Spanish pipeline took "la Plaza Amelia Rábade de Madrid" for a PERSON: the article stays
    text = "Vive en la Plaza Amelia Rábade de Madrid desde 2010."
    _, (as_person,) = _redact(text, [("la Plaza Amelia Rábade de Madrid", "PERSON")], "es", doc_id)
    assert as_person.startswith("la Plaza ") and not {"Amelia", "Rábade", "Madrid"} & set(as_person.split()), as_person
    # a street word alone and before no name is a place like any other: Ronda is a town
    _, (town,) = _redact("Natural de Ronda, vive en Madrid.", [("Ronda", "LOCATION")], "es", doc_id)
    assert town != "Ronda", town


def test_an_address_whose_street_word_is_not_known_still_gets_one():
    fr = S.load_locale("fr")
    types = {fold(t) for t in fr["address"]["types"]}
    for doc_id in DOC_IDS[:12]:
        _, (address,) = _redact("Domicile : Amélie Raba-Léon 12.", [("Amélie Raba-Léon 12", "ADDRESS")], "fr", doc_id)
        assert any(fold(word) in types for word in address.split()), address


# ----------------------------------------------------------------------------- the person's facts
def _nir(body: str) -> str:
    code = body + std_nir.calc_check_digits(body)
    return " ".join([code[0], code[1:3], code[3:5], code[5:7], code[7:10], code[10:13], code[13:]])


def _date(text: str) -> dt.date:
    day, month, year = map(int, text.split("/"))
    return dt.date(year, month, day)


def _age(born: dt.date, on: dt.date) -> int:
    return on.year - born.year - ((on.month, on.day) < (born.month, born.day))


NIR_DOC = "Madame Lucienne Ferrandou, née le {born}, NIR : {nir}. Âgée de {age} ans, vue en consultation le {seen}."


@pytest.mark.parametrize("born,seen", [("12/03/1961", "20/11/2023"), ("01/03/1961", "29/02/2024")])
def test_the_nir_and_the_age_agree_with_the_title_and_the_shifted_dates(born, seen):
    """Today "Madame" got a NIR starting with 1 and a birth month of another date, and "62 ans" moved
    by a year or two. Born on 1 March and seen on 29 February, a shift back by a few days makes a
    birthday fall inside the shift: the age then is one more."""
    age = _age(_date(born), _date(seen))
    nir = _nir(f"2{born[-2:]}{born[3:5]}75112345")
    text = NIR_DOC.format(born=born, nir=nir, age=age, seen=seen)
    items = [("Lucienne Ferrandou", "PERSON"), (born, "DATE"), (nir, "ID"), (f"{age} ans", "AGE"), (seen, "DATE")]
    ages = set()
    for doc_id in DOC_IDS:
        out, (_, new_born, new_nir, new_age, new_seen) = _redact(text, items, "fr", doc_id)
        born2, seen2 = _date(new_born), _date(new_seen)
        code = new_nir.replace(" ", "")
        assert std_nir.is_valid(code) and code != nir.replace(" ", ""), new_nir
        assert re.fullmatch(r"\d \d\d \d\d \w\w \d{3} \d{3} \d\d", new_nir), new_nir  # the layout kept
        assert code[0] == "2", (out, new_nir)  # Madame
        assert (code[1:3], code[3:5]) == (f"{born2.year % 100:02d}", f"{born2.month:02d}"), (new_born, new_nir)
        assert new_age == f"{_age(born2, seen2)} ans", (new_born, new_age, new_seen)
        ages.add(new_age)
    if born == "01/03/1961":
        assert ages == {f"{age} ans", f"{age + 1} ans"}  # the birthday inside the shift moved some


def test_no_relation_is_written_that_the_document_does_not_state():
    """An age with a birth date but no other date is no stated age: it still moves. A NIR in a note
    that names no one of its sex nor a date of its month keeps neither."""
    text = "Patiente née le 12/03/1961, 62 ans."
    moved = {_redact(text, [("12/03/1961", "DATE"), ("62 ans", "AGE")], "fr", d)[1][1] for d in DOC_IDS}
    assert "62 ans" not in moved
    nir = _nir("1610375112345")
    firsts, months = set(), set()
    for doc_id in DOC_IDS:
        _, (new,) = _redact(f"NIR : {nir}.", [(nir, "ID")], "fr", doc_id)
        firsts.add(new[0])
        months.add(new.split()[2])
    assert firsts == {"1", "2"} and len(months) > 3
