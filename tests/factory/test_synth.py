"""The embedded synthetic Spanish corpus: deterministic, varied, valid spans, checksum-valid IDs."""

from __future__ import annotations

import ipaddress
import re
import shutil
from collections import Counter

import pytest
import yaml

from deid_factory.records import read_records, validate_record
from deid_runtime.validators import VALIDATORS
from deid_factory.synth.command import synth
from deid_factory.locale import Locale
from deid_factory.synth import SynthData, SynthError, corpus_report, generate_records

LABELS = {"PERSON", "AGE", "DATE", "ADDRESS", "LOCATION", "ORGANIZATION", "PROFESSION", "PHONE", "EMAIL", "URL", "IP", "ID"}


@pytest.fixture(scope="module")
def corpus():
    data = SynthData.load("es")
    return data, list(generate_records(1000, 13, "es", data))


def test_same_seed_same_corpus_other_seed_other_corpus():
    a = [r.to_dict() for r in generate_records(30, 7)]
    b = [r.to_dict() for r in generate_records(30, 7)]
    c = [r.to_dict() for r in generate_records(30, 8)]
    assert a == b
    assert [r["text"] for r in a] != [r["text"] for r in c]
    assert a[5]["id"] == "synth-es-7-000005"


def test_same_seed_same_corpus_across_processes():
    """Hash randomisation of another interpreter must not change the corpus."""
    import hashlib
    import json
    import os
    import subprocess
    import sys

    code = ("import hashlib, json; from deid_factory.synth import generate_records; "
            "print(hashlib.md5(json.dumps([r.to_dict() for r in generate_records(40, 13)], ensure_ascii=False).encode()).hexdigest())")
    here = hashlib.md5(json.dumps([r.to_dict() for r in generate_records(40, 13)], ensure_ascii=False).encode()).hexdigest()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONHASHSEED": "4242"})
    assert out.stdout.strip() == here


def test_default_corpus_is_large_varied_and_valid(corpus):
    data, records = corpus
    assert len(records) == 1000
    assert len({r.text for r in records}) == 1000
    for r in records:
        validate_record(r)
    rep = corpus_report(records, data)
    assert set(rep["phi_per_label"]) == LABELS  # every canonical label occurs
    assert rep["distinct_templates_used"] >= 400
    assert rep["tokens"] > 200_000
    assert len(rep["doc_types"]) >= 6 and len(rep["header_layouts"]) >= 7
    # no single template dominates: the model has to learn context, not one sentence
    uses = Counter(t for r in records for t in r.meta["templates"])
    assert max(uses.values()) < 0.5 * len(records)


def test_no_template_syntax_leaks_into_the_text(corpus):
    _, records = corpus
    for r in records:
        assert not re.search(r"[\[\]{}<>]|\.\.", r.text), r.id


def test_identifiers_pass_their_validators(corpus):
    _, records = corpus
    checks = {"dni": "es_dni", "nie": "es_nie", "nass": "es_nass", "iban": "iban"}
    seen = Counter()
    for r in records:
        for s in r.spans:
            kind = s.attrs.get("kind")
            if s.label == "ID" and kind in checks:
                value = r.text[s.start:s.end]
                assert VALIDATORS[checks[kind]](value), f"{r.id} [{s.start},{s.end}) {kind} fails its check digits"
                seen[kind] += 1
    assert all(seen[k] >= 10 for k in checks), seen


def test_span_conventions(corpus):
    _, records = corpus
    months = "enero|febrero|marzo|abril|mayo|junio|julio|agosto|septiembre|octubre|noviembre|diciembre"
    for r in records:
        for s in r.spans:
            value = r.text[s.start:s.end]
            if s.label == "PERSON":
                assert not re.match(r"(?i)(dra?|doctora?|sra?|don|doña|d|dña)\b", value), (r.id, s.start)
            elif s.label == "AGE":
                # number + unit: "46 años", "46a", "7 meses", or in words: "cuarenta y dos años"
                assert re.fullmatch(r"(\d+ ?|[a-záéíóúñ]+(?: y [a-zú]+)? )(años|a|meses)", value, re.I), (r.id, s.start)
            elif s.label == "DATE":
                assert re.search(rf"\d|{months}", value, re.I), (r.id, s.start)
            elif s.label == "EMAIL":
                assert re.fullmatch(r"[\w.\-]+@[\w.\-]+\.[a-z]+", value, re.I), (r.id, s.start)


def test_every_maker_of_the_data_has_its_method_on_the_note():
    """data.MAKERS says what a slot of each maker needs (its checks run when a folder is loaded);
    Note.make_<name> makes its piece: the two name the same makers, and a slot of each kind in the
    Spanish data is made through its method."""
    from deid_factory.synth import MAKERS, Note

    methods = {name.removeprefix("make_") for name in vars(Note) if name.startswith("make_")}
    assert methods == set(MAKERS)
    used = {spec["make"] for spec in SynthData.load("es").slots.values()}
    assert {"text", "record", "id", "person", "date", "age"} <= used <= set(MAKERS)


def test_ages_in_words_are_spanish_numbers():
    from deid_factory.synth import Note

    data = SynthData.load("es")
    note = Note(data, __import__("random").Random(1), None, "x")
    assert [note.number_in_words(n) for n in (7, 21, 30, 42, 61, 99)] == [
        "siete", "veintiún", "treinta", "cuarenta y dos", "sesenta y un", "noventa y nueve"]


def test_names_come_in_title_upper_and_lower_case(corpus):
    _, records = corpus
    cases = Counter()
    for r in records:
        for s in r.spans:
            if s.label == "PERSON":
                v = r.text[s.start:s.end]
                cases["upper" if v.isupper() else "lower" if v.islower() else "title"] += 1
    total = sum(cases.values())
    assert 0.5 < cases["title"] / total < 0.8
    assert 0.2 < cases["upper"] / total < 0.45
    assert cases["lower"] > 0


def test_patient_age_is_the_same_in_every_mention(corpus):
    _, records = corpus
    # the age follows from birth and admission dates: one patient, one age, however it is written
    for r in records:
        ages = {int(m.group()) for s in r.spans if s.label == "AGE" and s.attrs.get("kind") == "patient"
                and "mes" not in r.text[s.start:s.end].lower() for m in [re.match(r"\d+", r.text[s.start:s.end])] if m}
        assert len(ages) <= 1 and all(0 < n < 110 for n in ages), r.id


def test_synth_writes_records_and_report(tmp_path):
    rep = synth(tmp_path / "s.jsonl", n=25, seed=3, report=tmp_path / "s.json")
    records = list(read_records(tmp_path / "s.jsonl"))
    assert len(records) == 25 == rep["records"]
    assert records[24].id == "synth-es-3-000024"
    assert (tmp_path / "s.json").exists()


def test_bad_data_names_file_and_entry(tmp_path):
    folder = tmp_path / "es"
    shutil.copytree(Locale.load("es").synth_dir, folder)
    sections = yaml.safe_load((folder / "sections.yml").read_text(encoding="utf-8"))
    sections["documents"][0]["sections"].append("no_such_section")
    (folder / "sections.yml").write_text(yaml.safe_dump(sections, allow_unicode=True), encoding="utf-8")
    with pytest.raises(SynthError, match=r"sections\.yml.*no_such_section"):
        SynthData.load("es", folder)


def test_unknown_slot_is_an_error(tmp_path):
    folder = tmp_path / "es"
    shutil.copytree(Locale.load("es").synth_dir, folder)
    sections = yaml.safe_load((folder / "sections.yml").read_text(encoding="utf-8"))
    for spec in sections["sections"].values():
        spec["templates"] = ["Texto con {ranura_inexistente}."]
        spec["p"] = 1.0
    (folder / "sections.yml").write_text(yaml.safe_dump(sections, allow_unicode=True), encoding="utf-8")
    with pytest.raises(SynthError, match="ranura_inexistente"):
        list(generate_records(3, 1, "es", SynthData.load("es", folder)))


def test_a_second_language_is_data_only(tmp_path):
    """The engine has no Spanish in it: a copy of the data with another Faker locale and templates works."""
    folder = tmp_path / "fr"
    shutil.copytree(Locale.load("es").synth_dir, folder)
    lexicon = yaml.safe_load((folder / "lexicon.yml").read_text(encoding="utf-8"))
    lexicon["faker_locale"], lexicon["surnames"] = "fr_FR", 1
    (folder / "lexicon.yml").write_text(yaml.safe_dump(lexicon, allow_unicode=True), encoding="utf-8")
    sections = yaml.safe_load((folder / "sections.yml").read_text(encoding="utf-8"))
    sections["documents"] = [{"name": "note", "headers": {"ninguna": 1}, "sections": ["motif"]}]
    sections["sections"] = {"motif": {"headings": ["Motif"], "n": [2, 2], "templates": [
        "{Sex.noun} de {age} adressé<|e> par {doctor.title} {doctor} le {date.admission.numeric}.",
        "Contact : {phone}, {email}."]}}
    (folder / "sections.yml").write_text(yaml.safe_dump(sections, allow_unicode=True), encoding="utf-8")
    records = list(generate_records(5, 1, "fr", SynthData.load("fr", folder)))
    assert records[0].id == "synth-fr-1-000000"
    for r in records:
        validate_record(r)
        assert "motif" in r.text[:10].lower()
        people = [r.text[s.start:s.end] for s in r.spans if s.label == "PERSON"]
        assert len(people) == 1 and len(people[0].split()) >= 2


# ----------------------------------------------------------------------------- a locale is data only
FRENCH_LOCALE = {
    "lexicon.yml": """
faker_locale: fr_FR
surnames: 1
name_casing: {title: 1}
lists:
  relatives:
    - {rel: fille, sex: f}
  places:
    - {city: Lyon, cp: "69"}
  street_types: [rue]
  street_names: [de la République]
""",
    "formats.yml": """
months: [janvier, février, mars, avril, mai, juin, juillet, août, septembre, octobre, novembre, décembre]
date_formats:
  numeric: ["{dd}/{mm}/{yyyy}"]
  text: ["{d} {month} {yyyy}"]
age_formats: ["{n} ans"]
phone_formats: ["0# ## ## ## ##"]
ids:
  ipp: {kind: shape, role: record, layouts: ["########"]}
""",
    "slots.yml": """
slots:
  patient:  {make: person, label: PERSON, kind: patient, sex: patient, title: courtesy}
  fille:    {make: person, label: PERSON, kind: relative, relation: relatives}
  medecin:  {make: person, label: PERSON, kind: staff, title: staff}
  age:      {make: age, label: AGE}
  date:     {make: date, label: DATE}
  id:       {make: id, label: ID, keep: note}
  tel:      {make: shape, shapes: phone_formats, label: PHONE, keep: note}
  place:    {make: record, list: places, keep: note}
  ville:    {make: text, text: "{place.city}", label: LOCATION, kind: city, keep: note}
  cp:       {make: text, text: "{place.cp}{n:000-999}", label: LOCATION, kind: postcode, keep: note}
  adresse:  {make: text, text: "{n:1-99} {street_types} {street_names}", label: ADDRESS, keep: note}
""",
    "sections.yml": """
heading_formats: ["{H}\\n"]
newline_p: 0.0
documents:
  - {name: courrier, sections: [lettre]}
sections:
  lettre:
    headings: [Courrier]
    n: [3, 3]
    templates:
      - "{patient.title} {patient}, {age}, domicilié<|e> {adresse}, {cp} {ville}, IPP {id.ipp}."
      - "Adressé<|e> le {date.admission.text} par le {medecin.title} {medecin} ; tél. {tel}."
      - "Accompagné<|e> de sa {fille.rel}, {fille}."
""",
}

# The locale's titles (languages/fr/surrogate_data/titles.yml of its project: the `french_titles` fixture).
FRENCH_TITLES = """
courtesy: {m: ["M."], f: ["Mme"]}
staff: {m: ["Dr"], f: ["Dr"]}
"""


@pytest.fixture
def french_titles(tmp_path, monkeypatch):
    """A project whose French locale has the titles above: the synthetic corpus titles its persons
    with its locale's titles (Locale.titles), whatever folder its other data comes from."""
    import deid_factory

    root = tmp_path / "project"
    titles = root / "languages" / "fr" / "surrogate_data" / "titles.yml"
    titles.parent.mkdir(parents=True)
    titles.write_text(FRENCH_TITLES, encoding="utf-8")
    monkeypatch.setattr(deid_factory, "_root", root)
    return titles


# Each French sentence parsed back independently: a group named LABEL or LABEL_x is a span.
FRENCH_SENTENCES = [
    r"(?P<title>M\.|Mme) (?P<PERSON_patient>[^,]+), (?P<AGE>\d+ ans), domicilié(?P<e1>e?) (?P<ADDRESS>\d+ rue de la République), "
    r"(?P<LOCATION_cp>69\d{3}) (?P<LOCATION_city>Lyon), IPP (?P<ID>\d{8})\.",
    r"Adressé(?P<e2>e?) le (?P<DATE>\d{1,2} (?:janvier|février|mars|avril|mai|juin|juillet|août|septembre|octobre|novembre|décembre) "
    r"\d{4}) par le Dr (?P<PERSON_staff>[^;]+) ; tél\. (?P<PHONE>0\d(?: \d\d){4})\.",
    r"Accompagné(?P<e3>e?) de sa fille, (?P<PERSON_relative>[^,.;]+)\.",
]


def test_a_new_locale_is_a_folder_of_data_files(tmp_path, french_titles):
    """A French locale written from scratch (no copy of the Spanish data) builds notes with exact spans,
    through the one path every corpus takes (read_corpus / extract)."""
    from deid_factory.extract import extract
    from deid_factory.readers import read_corpus

    folder = tmp_path / "fr"
    folder.mkdir()
    for name, text in FRENCH_LOCALE.items():
        (folder / name).write_text(text, encoding="utf-8")
    records = list(read_corpus(folder, "synth", lang="fr", n=20, seed=3))
    assert [r.id for r in records][:2] == ["synth-fr-3-000000", "synth-fr-3-000001"]
    for r in records:
        assert r.text.startswith("COURRIER\n") and r.lang == "fr"
        expected, groups = set(), {}
        for pattern in FRENCH_SENTENCES:
            m = re.search(pattern, r.text)
            assert m, (r.id, pattern)
            expected |= {(m.start(g), m.end(g), g.split("_")[0]) for g in m.groupdict() if g.split("_")[0] in LABELS}
            groups.update(m.groupdict())
            assert r.text.count(m.group()) == 1
        assert {(s.start, s.end, s.label) for s in r.spans} == expected, r.id
        # agreement follows the patient's sex in every sentence: "M. ... domicilié", "Mme ... domiciliée"
        assert {groups["e1"], groups["e2"], groups["e3"]} == ({""} if groups["title"] == "M." else {"e"}), r.id
        kinds = {r.text[s.start:s.end]: s.attrs.get("kind") for s in r.spans}
        assert kinds["Lyon"] == "city" and sorted(kinds.values(), key=str).count("staff") == 1
    assert len({r.text for r in records}) == 20
    # the same corpus through `factory extract <folder> --format synth`
    rep = extract(folder, "synth", "fr", tmp_path / "fr.jsonl", n=20, seed=3)
    assert [r.to_dict() for r in read_records(tmp_path / "fr.jsonl")] == [r.to_dict() for r in records]
    assert rep["synth"]["records"] == 20 and rep["synth"]["doc_types"] == {"courrier": 20}


def _edited_copy(tmp_path, file: str, edit) -> "Path":
    """A copy of the Spanish data with one YAML file changed by `edit(data)`."""
    folder = tmp_path / "es"
    shutil.copytree(Locale.load("es").synth_dir, folder)
    data = yaml.safe_load((folder / file).read_text(encoding="utf-8"))
    edit(data)
    (folder / file).write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    return folder


def _set(path: str, value):
    """An edit that sets data[a][b]... = value (path "a.b")."""
    def edit(data):
        *parents, last = path.split(".")
        for key in parents:
            data = data[key]
        data[last] = value
    return edit


@pytest.mark.parametrize("file, edit, message", [
    ("slots.yml", _set("slots.phone.make", "telefono"), r"slots\.yml: slot 'phone': `make` must be one of .*text"),
    ("slots.yml", _set("slots.phone.label", "TELEFONO"), r"slots\.yml: slot 'phone': label 'TELEFONO' is not one of"),
    ("slots.yml", _set("slots.email.domains", "dominios"), r"slots\.yml: slot 'email': domains: no list 'dominios'"),
    ("slots.yml", _set("slots.country.text", "{paises}"), r"slots\.yml: slot 'country': \{paises\}: unknown slot"),
    ("slots.yml", _set("slots.doctor.attributes", {"licence": "id.carnet"}), r"slot 'doctor': attribute 'licence': \{id\.carnet\}"),
    ("slots.yml", _set("slots.symptom", {"make": "text", "text": "x"}), r"slot 'symptom': clinical\.yml has a list of the same name"),
    ("formats.yml", _set("ids.dni.layouts", ["########"]), r"formats\.yml: id 'dni': layout '########' has 8 places"),
    ("formats.yml", _set("ids.nass.kind", "es.nas"), r"formats\.yml: id 'nass': unknown identifier kind 'es\.nas'"),
    ("formats.yml", _set("timeline.test.from", "ingreso"), r"formats\.yml: timeline event 'test': `from` must be"),
    ("sections.yml", _set("sections.motivo.templates", ["Alta el {date.alta}."]), r"sections\.yml: section 'motivo': \{date\.alta\}: write"),
    ("sections.yml", _set("sections.motivo.templates", ["{relative.edad}."]), r"section 'motivo': \{relative\.edad\}: a person's part is one of"),
    ("sections.yml", _set("sections.motivo.templates", ["{places}."]), r"section 'motivo': \{places\}: list 'places' holds records"),
    ("lexicon.yml", _set("lists.places", [{"city": "Lugo", "province": "Lugo"}]), r"slots\.yml: slot 'postcode': \{place\.cp\}: list 'places': 1 of its 1 records have no field 'cp'"),
    ("lexicon.yml", _set("lists.symptom", ["tos"]), r"clinical\.yml: list 'symptom': lexicon\.yml has a list of the same name"),
])
def test_bad_data_is_found_at_load_naming_file_and_entry(tmp_path, file, edit, message):
    folder = _edited_copy(tmp_path, file, edit)
    with pytest.raises(SynthError, match=message):
        SynthData.load("es", folder)


# ----------------------------------------------------------------------------- name pools (lexicon.yml)
POOL_M, POOL_F = ["Kenzo", "Iñaki", "Moussa"], ["Maïwenn", "Aminata", "Zeynep"]
POOL_SURNAMES = ["Etxeberria", "Kervella", "Ouédraogo", "Nowak", "Le Bihannic"]
# The PERSON names of the small French locale (n=20, seed=3) drawn by the engine before it had name
# pools: a locale without pools must keep them (es, it, pt and nl builds stay bit-for-bit the same).
NAMES_BEFORE_POOLS = ["Théodore Gomez", "Christophe Devaux", "Thérèse Lemaître", "Anouk Toussaint", "Aimé Seguin",
                      "Josette Lelièvre", "Hortense Courtois", "Noël Olivier", "Thérèse Gimenez"]


def _french_locale(tmp_path, lexicon_extra: str = "", sections_extra: str = ""):
    """The small French locale above, with YAML appended to lexicon.yml and to its one section."""
    folder = tmp_path / "fr"
    folder.mkdir()
    for name, text in FRENCH_LOCALE.items():
        text += {"lexicon.yml": lexicon_extra, "sections.yml": sections_extra}.get(name, "")
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def _people(records):
    return [(r.text[s.start:s.end], s.attrs.get("kind")) for r in records for s in r.spans if s.label == "PERSON"]


@pytest.mark.usefixtures("french_titles")
def test_titles_are_the_locale_s_not_the_corpus_s(tmp_path):
    """A person's title is drawn from its locale's titles (here the fixture's: one form by sex); a
    lexicon.yml that writes titles of its own is refused: they would be a second list."""
    from deid_factory.readers import read_corpus

    titles = {m.group(1) for r in read_corpus(_french_locale(tmp_path), "synth", lang="fr", n=20, seed=3)
              for m in re.finditer(r"(?:^|\. )([^\s,]+) [^\s,]+ [^\s,]+, \d+ ans, domicilié", r.text, re.M)}
    assert titles == {"M.", "Mme"}
    (tmp_path / "again").mkdir()
    with pytest.raises(SynthError, match=r"lexicon\.yml: `titles` are the locale's, in .*titles\.yml"):
        SynthData.load("fr", _french_locale(tmp_path / "again", 'titles: {courtesy: {m: ["Sr."], f: ["Sra."]}}\n'))


@pytest.mark.usefixtures("french_titles")
def test_name_pools_with_extra_p_one_give_every_name(tmp_path):
    """With extra_p 1.0 every given name comes from the pool of the person's sex and every surname
    from extra_surnames; the relative of the locale is a daughter, so her given name is a female one."""
    from deid_factory.readers import read_corpus

    folder = _french_locale(tmp_path, f"""
given_names: {{extra_p: 1.0, m: {POOL_M}, f: {POOL_F}}}
surname_forms: {{extra_p: 1.0, extra_surnames: {POOL_SURNAMES}}}
""")
    people = _people(read_corpus(folder, "synth", lang="fr", n=30, seed=3))
    assert len(people) == 90
    for name, kind in people:
        given, surname = name.split(" ", 1)
        assert given in POOL_M + POOL_F and surname in POOL_SURNAMES, name
        if kind == "relative":
            assert given in POOL_F, name
    assert {n.split(" ", 1)[0] for n, _ in people} == set(POOL_M + POOL_F)  # every pool name is drawn
    assert {n.split(" ", 1)[1] for n, _ in people} == set(POOL_SURNAMES)


@pytest.mark.usefixtures("french_titles")
def test_name_pools_are_drawn_with_their_probability(tmp_path):
    """extra_p 0.3: about 30 % of the names from the pools, the rest from Faker."""
    from deid_factory.readers import read_corpus

    folder = _french_locale(tmp_path, f"""
given_names: {{extra_p: 0.3, m: {POOL_M}, f: {POOL_F}}}
surname_forms: {{extra_p: 0.3, extra_surnames: {POOL_SURNAMES}}}
""")
    people = _people(read_corpus(folder, "synth", lang="fr", n=200, seed=3))
    given = sum(n.split(" ", 1)[0] in POOL_M + POOL_F for n, _ in people) / len(people)
    surname = sum(n.split(" ", 1)[1] in POOL_SURNAMES for n, _ in people) / len(people)
    assert 0.2 < given < 0.4 and 0.2 < surname < 0.4, (given, surname)


@pytest.mark.parametrize("lexicon_extra", ["", "given_names: {extra_p: 0.4}\nsurname_forms: {extra_p: 0.4, extra_surnames: []}\n"])
@pytest.mark.usefixtures("french_titles")
def test_without_name_pools_the_names_are_those_of_the_engine_before(tmp_path, lexicon_extra):
    """No pool (no key, or a share without names): the same names as before the pools, draw for draw."""
    from deid_factory.readers import read_corpus

    people = _people(read_corpus(_french_locale(tmp_path, lexicon_extra), "synth", lang="fr", n=20, seed=3))
    assert [name for name, _ in people][:len(NAMES_BEFORE_POOLS)] == NAMES_BEFORE_POOLS


@pytest.mark.usefixtures("french_titles")
def test_a_section_may_case_its_names_itself(tmp_path):
    """sections.yml `name_casing` of a section (a nurse note in lower case) overrides lexicon.yml's."""
    from deid_factory.readers import read_corpus

    folder = _french_locale(tmp_path, sections_extra="    name_casing: {lower: 1}\n")
    people = _people(read_corpus(folder, "synth", lang="fr", n=10, seed=3))
    assert people and all(name.islower() for name, _ in people)


@pytest.mark.parametrize("edit, message", [
    (_set("given_names", {"extra_p": 2, "m": ["Iker"]}), r"lexicon\.yml: given_names extra_p: must be a probability"),
    (_set("given_names", ["Iker"]), r"lexicon\.yml: given_names: expected settings"),
    (_set("surname_forms.extra_surnames", "Etxeberria"), r"lexicon\.yml: surname_forms 'extra_surnames': must be a list of names"),
])
def test_bad_name_pools_are_found_at_load(tmp_path, edit, message):
    folder = _edited_copy(tmp_path, "lexicon.yml", edit)
    with pytest.raises(SynthError, match=message):
        SynthData.load("es", folder)


def test_a_bad_section_name_casing_is_found_at_load(tmp_path):
    folder = _edited_copy(tmp_path, "sections.yml", _set("sections.motivo.name_casing", {"minuscules": 1}))
    with pytest.raises(SynthError, match=r"sections\.yml: section 'motivo': name_casing"):
        SynthData.load("es", folder)


def test_the_synthetic_corpus_enters_through_the_reader_only(tmp_path):
    """generate_records, `factory synth` and `factory extract --format synth` are one path: the reader,
    whose checks find nothing to fix in the engine's spans."""
    from deid_factory.extract import extract
    from deid_factory.readers import ReadReport, read_corpus

    report = ReadReport()
    read = [r.to_dict() for r in read_corpus(None, "synth", "meddocan", "es", report=report, n=12, seed=4)]  # label map ignored
    assert read == [r.to_dict() for r in generate_records(12, 4)]
    assert report.records_ok == 12 and report.trimmed == report.duplicates == 0 and report.spans_kept == report.spans_read > 200
    assert report.corpus.to_dict()["records"] == 12
    summary = synth(tmp_path / "synth.jsonl", n=12, seed=4)
    rep = extract(None, "synth", "es", tmp_path / "extract.jsonl", n=12, seed=4)
    assert (tmp_path / "synth.jsonl").read_bytes() == (tmp_path / "extract.jsonl").read_bytes()
    assert [r.to_dict() for r in read_records(tmp_path / "extract.jsonl")] == read
    assert summary["records"] == rep["synth"]["records"] == rep["records_written"] == 12 and summary["seed"] == 4


# ----------------------------------------------------------------------------- the French corpus (corpora/synth/fr)
FR_DOC_TYPES = {"crh", "consultation", "courrier", "lettre_liaison", "operatoire", "imagerie", "ordonnance", "urgences", "biologie"}
FR_MONTHS = "janvier|février|mars|avril|mai|juin|juillet|août|septembre|octobre|novembre|décembre|janv|févr|avr|juil|sept|oct|nov|déc"
# A span's value, as the French conventions write it (corpora/eval/fr/README.md "Annotation conventions");
# headers printed all in capitals write ages, e-mail addresses and URLs in capitals too.
FR_VALUE = {
    # given name(s) and surname(s), titles outside: letters, spaces, hyphens, apostrophes, and initials with full
    # stops before the surname ("T. Renaud", "M.-A. LE GALL"; "M." alone would be the title)
    "PERSON": re.compile(r"(?!(?:Dr|Pr|M|Mme|Mlle|Madame|Monsieur|Docteur|Professeur)\.?(?: |$))"
                         r"(?:[^\W\d_]{1,2}\.(?:-[^\W\d_]{1,2}\.)? )?[^\W\d_]+(?:[ '’-]+[^\W\d_]+)*"),
    # number + unit ("72 ans", "77a", "8 mois"), or in words ("soixante-dix-huit ans")
    "AGE": re.compile(r"\d{1,3} ?(?:ans|a|mois)|[a-zé]+(?:[ -][a-zé]+)* ans", re.I),
    # a town (with its CEDEX), a region or country, a postal code, a département number
    "LOCATION": re.compile(r"\d{5}|\d{2,3}|2[AB]|[^\W\d_][^\d]*?(?: (?:CEDEX|Cedex)(?: \d{1,2})?)?"),
    "EMAIL": re.compile(r"[a-z0-9._-]+@[a-z0-9.-]+\.[a-z]{2,}", re.I),
    "URL": re.compile(r"(?:https?://)?(?:www\.)?[a-z0-9.-]+\.[a-z]{2,}(?:/[\w./-]*)?", re.I),
    # ten digits (0X XX XX XX XX in any spacing) or +33 / 0033 and nine digits
    "PHONE": re.compile(r"(?:0|\+33 ?(?:\(0\))?|0033 ?)[\d .()-]+"),
}


@pytest.fixture(scope="module")
def fr_corpus():
    data = SynthData.load("fr")
    return data, list(generate_records(200, 13, "fr", data))


def test_french_corpus_loads_and_covers_every_label_and_document_type(fr_corpus):
    data, records = fr_corpus
    assert {d["name"] for d in data.sections["documents"]} == FR_DOC_TYPES
    assert data.faker_locale == "fr_FR" and data.template_count() >= 800
    rep = corpus_report(records, data, "fr")
    assert rep["records"] == rep["distinct_texts"] == 200
    assert [r.id for r in records][:2] == ["synth-fr-13-000000", "synth-fr-13-000001"] and {r.lang for r in records} == {"fr"}
    assert set(rep["phi_per_label"]) == LABELS, rep["phi_per_label"]
    assert set(rep["doc_types"]) == FR_DOC_TYPES, rep["doc_types"]
    assert set(rep["header_layouts"]) == {l["name"] for l in data.header["layouts"]}
    assert rep["distinct_templates_used"] >= 0.85 * data.template_count()
    uses = Counter(t for r in records for t in r.meta["templates"])
    assert max(uses.values()) < 0.5 * len(records)  # no sentence the model could learn by heart


def test_french_corpus_is_deterministic_for_a_seed():
    a = [r.to_dict() for r in generate_records(30, 7, "fr")]
    assert a == [r.to_dict() for r in generate_records(30, 7, "fr")]
    assert [r["text"] for r in a] != [r.text for r in generate_records(30, 8, "fr")]


def test_french_spans_are_exact_and_follow_the_conventions(fr_corpus):
    """Every span is its text slice, trimmed, on one line, with a canonical label, and its value is
    what the label's convention says (no title in a PERSON, no preposition in an ORGANIZATION or
    LOCATION, CEDEX inside the town); every occurrence of a name, number or address of the note is
    inside a span (a value written again as context would be a PHI leak of the gold standard)."""
    _, records = fr_corpus
    for r in records:
        validate_record(r)  # offsets inside the text, trimmed, no overlaps, canonical labels
        assert not re.search(r"[\[\]{}<>]|\.\.", r.text), r.id  # no template syntax left
        covered = [(s.start, s.end) for s in r.spans]
        for s in r.spans:
            value, where = r.text[s.start:s.end], (r.id, s.start, s.label)
            assert "\n" not in value, where
            if s.label in FR_VALUE:
                assert FR_VALUE[s.label].fullmatch(value), where
            if s.label == "DATE":
                assert re.search(rf"\d|{FR_MONTHS}", value, re.I) and not re.match(r"(?i)(le|du|au|en|depuis)\b", value), where
            elif s.label in ("ORGANIZATION", "LOCATION"):
                assert not re.match(r"(?:au|aux|à|du|de|des|chez|la|le|l')\b", value), where
            elif s.label == "ADDRESS":
                assert re.search(r"\d|Lieu-dit|Hameau|Bourg|Ferme", value), where
            elif s.label == "IP":
                assert ipaddress.ip_address(value), where
            if s.label in ("PERSON", "ID", "PHONE", "EMAIL", "ADDRESS") and (s.label != "PERSON" or " " in value):
                for m in re.finditer(re.escape(value), r.text):
                    assert any(a <= m.start() and m.end() <= b for a, b in covered), (r.id, m.start(), s.label, "outside a span")


def test_french_identifiers_pass_their_check_digits(fr_corpus):
    """The identifiers with check digits (NIR, RPPS, ADELI, FINESS, SIRET, IBAN) come from the
    runtime.ids registry, in every layout formats.yml gives them, and pass the packs' validators."""
    from deid_runtime import ids
    from deid_runtime.validators import validator_name

    data, records = fr_corpus
    registry = {name: spec["kind"] for name, spec in data.formats["ids"].items() if spec["kind"] != "shape"}
    assert set(registry.values()) == {"fr.nir", "fr.rpps", "fr.adeli", "fr.finess", "fr.siret", "fr.iban"}
    seen = Counter()
    for r in records:
        for s in r.spans:
            key = registry.get(s.attrs.get("kind"))
            if s.label == "ID" and key:
                value = r.text[s.start:s.end]
                assert ids.get(key).is_valid(value), f"{r.id} [{s.start},{s.end}) {key} fails its check digits"
                validator = "iban" if key == "fr.iban" else validator_name(key)
                assert VALIDATORS[validator](value), f"{r.id} [{s.start},{s.end}) {key} fails validator {validator}"
                seen[key] += 1
    assert all(seen[k] >= 3 for k in registry.values()), seen


def test_french_patient_is_one_person_with_one_age(fr_corpus):
    """Within a note the patient keeps one name and one age, however each mention writes it (given
    name first or surname first, any casing; a married woman also under her birth name)."""
    _, records = fr_corpus
    for r in records:
        ages = {int(m.group()) for s in r.spans if s.label == "AGE" and s.attrs.get("kind") == "patient"
                and "mois" not in r.text[s.start:s.end] for m in [re.match(r"\d+", r.text[s.start:s.end])] if m}
        assert len(ages) <= 1, r.id
        names = {frozenset(r.text[s.start:s.end].lower().split()) for s in r.spans  # full names, not a birth name alone ("Da Silva")
                 if s.label == "PERSON" and s.attrs.get("kind") == "patient" and " " in r.text[s.start:s.end] and not s.attrs.get("part")}
        assert len(names) <= 2 and (not names or frozenset.intersection(*names)), r.id  # one given name, one or two surnames


def test_french_corpus_writes_the_names_and_places_of_the_tuning_errors(fr_corpus):
    """What the French data adds for the tuning set's error classes is in the corpus: names of the
    lexicon's pools, given names alone, initials with full stops inside the PERSON span (the title
    outside), hyphenated towns and address ranges, organisations whose generic word ("l'association",
    "le laboratoire") is outside the span, and names written in lower case."""
    data, records = fr_corpus
    pools = data.lexicon["given_names"]
    given_pool = {n.lower() for n in pools["m"] + pools["f"]}
    surname_pool = {n.lower() for n in data.lexicon["surname_forms"]["extra_surnames"]}
    assert len(pools["m"]) >= 150 and len(pools["f"]) >= 150 and len(surname_pool) >= 250
    people = [(r, s, r.text[s.start:s.end]) for r in records for s in r.spans if s.label == "PERSON"]
    from_pools = [v for _, _, v in people if any(w.lower() in given_pool | surname_pool for w in re.split(r"[ -]", v))]
    assert len(from_pools) > 0.15 * len(people), (len(from_pools), len(people))
    assert sum(s.attrs.get("part") == "given" for _, s, _ in people) >= 50  # a given name alone
    initials = [(r, s, v) for r, s, v in people if re.match(r"[A-ZÉ][a-z]?\.(?:-[A-Z]\.)? \S", v)]
    assert len(initials) >= 20 and any("-" in v[:4] for _, _, v in initials), len(initials)
    for r, s, v in initials:  # "Dr T. Renaud": the title before the span, never inside it
        assert not re.match(r"(?:Dr|Pr|M|Mme)\.? ", v), (r.id, s.start)
    towns = [r.text[s.start:s.end] for r in records for s in r.spans if s.label == "LOCATION" and s.attrs.get("kind") == "city"]
    assert sum("-" in t for t in towns) > 0.15 * len(towns)
    addresses = [r.text[s.start:s.end] for r in records for s in r.spans if s.label == "ADDRESS"]
    assert any(re.match(r"\d+(?:-| à )\d+ ", a) for a in addresses)  # "11-17 boulevard ..."
    orgs = [(r, s, r.text[s.start:s.end]) for r in records for s in r.spans if s.label == "ORGANIZATION"]
    assert not [v for _, _, v in orgs if re.match(r"(?i:association|laboratoire|club) [A-ZÉ]", v) and not v.isupper()]
    outside = [v for r, s, v in orgs if re.search(r"(?:association|laboratoire) $", r.text[max(0, s.start - 13):s.start])]
    assert len(outside) >= 5, outside
    assert any(v.startswith("Hôpitaux ") for _, _, v in orgs)
    lower = [v for r, s, v in people if v.islower() and any(t.startswith("transmissions_min") for t in r.meta["templates"])]
    assert len(lower) >= 10


# ----------------------------------------------------------------------------- the English and German corpora
# (corpora/synth/en, corpora/synth/de): the same checks for both, then what each country writes.
NATIVE = {
    "en": {
        "doc_types": {"discharge", "referral", "clinic_letter", "consult", "ward_note", "nursing", "lab_report", "imaging", "email",
                      "mdt", "emergency", "operation"},
        "faker": "en_GB",
        "registry": {"gb.nhs", "us.ssn", "us.npi", "gb.iban"},
        # titles stay outside a PERSON span
        "title": r"(?:Dr|Mr|Mrs|Ms|Miss|Prof|Professor|Doctor|Nurse|Sister|RN|SN)\.?(?: |$)",
        "article": r"(?:the|in|at|from|to|of|on)\b",
        "date_prep": r"(?i:on|from|since|in|at|until|by)\b",
        "months": "January|February|March|April|May|June|July|August|September|October|November|December|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Oct|Nov|Dec",
        "date_words": r"first|second|third|fourth|fifth|tenth|twentieth|thirtieth|teenth|nineteen|twenty",
        "age": re.compile(r"\d{1,3}(?:/12|y| y| yo|yo| y/o| y\.o| years?(?: old| of age)?| yrs?| mo|m| months?|[- ]+(?:year|yr|month|week|day)s?[- ]+old"
                          r"| +year +old)?|[a-z]+(?:-[a-z]+)?(?:[- ]years?(?:[- ]old)?)?", re.I),
        # an eponym as a disease, not a surname (Faker draws "Parkinson" as a name)
        "eponyms": r"(?:Parkinson|Crohn|Hashimoto|Alzheimer|Graves|Cushing)(?='s|' | disease| syndrome)",
    },
    "de": {
        "doc_types": {"entlassbrief", "ueberweisung", "ambulanzbrief", "konsil", "verlauf", "pflege", "labor", "radiologie", "email",
                      "konferenz", "notaufnahme", "op_bericht"},
        "faker": "de_DE",
        "registry": {"de.kvnr", "de.idnr", "de.lanr", "de.iban"},
        "title": r"(?:Dr|Herr|Herrn|Frau|Hr|Fr|Prof|PD|OA|OÄ|Sr|Schwester|Pfleger|med)\.?(?: |$)",
        "article": r"(?:der|die|das|dem|den|im|in|am|aus|nach|vom|zum|zur)\b",
        "date_prep": r"(?i:am|vom|bis|seit|im|ab)\b",
        "months": "Januar|Februar|März|April|Mai|Juni|Juli|August|September|Oktober|November|Dezember|Frühjahr|Sommer|Herbst|Winter|Anfang|Ende|Mitte",
        "date_words": r"ersten|zweiten|dritten|zehnten|zwanzigsten|dreißigsten|neunzehnhundert|zweitausend",
        # "alt"/"alte" stays outside ("[79 Jahre] alt"); a page read by OCR splits the unit ("79 Ja hre")
        "age": re.compile(r"\d{1,3}(?: ?Jahren?| ?J| a|a| Mon| Monate| Wochen| LM| ?-?[Jj]ährige[rn]?| -jährige| ?-jähr| Jahr e| J ahre|  Jahre"
                          r"| Ja hre)?|[a-zäöüß]+(?: Jahren?)?", re.I),
        "eponyms": r"(?<=Morbus )(?:Parkinson|Crohn|Basedow|Bechterew|Alzheimer)|(?<=M\. )(?:Parkinson|Crohn|Basedow)|(?:Hashimoto|Alzheimer|Parkinson)(?=-)",
    },
}


@pytest.fixture(scope="module", params=sorted(NATIVE))
def native_corpus(request):
    lc = request.param
    data = SynthData.load(lc)
    return lc, data, list(generate_records(300, 13, lc, data))


def test_native_corpus_loads_and_covers_every_label_and_document_type(native_corpus):
    lc, data, records = native_corpus
    spec = NATIVE[lc]
    assert {d["name"] for d in data.sections["documents"]} == spec["doc_types"]
    assert data.faker_locale == spec["faker"] and data.template_count() >= 700
    rep = corpus_report(records, data, lc)
    assert rep["records"] == rep["distinct_texts"] == 300 and {r.lang for r in records} == {lc}
    assert set(rep["phi_per_label"]) == LABELS, rep["phi_per_label"]
    assert set(rep["doc_types"]) == spec["doc_types"], rep["doc_types"]
    assert set(rep["header_layouts"]) == {l["name"] for l in data.header["layouts"]}
    assert rep["distinct_templates_used"] >= 0.8 * data.template_count()
    uses = Counter(t for r in records for t in r.meta["templates"])
    assert max(uses.values()) < 0.5 * len(records)  # no sentence the model could learn by heart


def test_native_spans_are_exact_and_follow_the_conventions(native_corpus):
    """Every span is its trimmed text slice on one line with a canonical label; a PERSON holds no title, an
    ORGANIZATION or LOCATION no article or preposition, a DATE no preposition and a day, a month or a year,
    an AGE its number (or number word) and unit; every other occurrence of a name, number, address or
    e-mail of the note is inside a span too (a value written again as context would leak)."""
    lc, _, records = native_corpus
    spec = NATIVE[lc]
    for r in records:
        validate_record(r)
        assert not re.search(r"[\[\]{}]", r.text), r.id  # no template syntax left
        covered = [(s.start, s.end) for s in r.spans]
        for s in r.spans:
            value = r.text[s.start:s.end]
            where = (r.id, s.start, s.label, value)
            assert "\n" not in value, where
            if s.label == "PERSON":
                assert not re.match(spec["title"], value) and not re.search(r"\d", value), where
            elif s.label == "DATE":
                assert re.search(rf"\d|{spec['months']}|{spec['date_words']}", value, re.I), where
                assert not re.match(spec["date_prep"], value), where
            elif s.label in ("ORGANIZATION", "LOCATION"):
                assert not re.match(spec["article"], value), where
            elif s.label == "AGE":
                assert spec["age"].fullmatch(value), where
            elif s.label == "IP":
                assert ipaddress.ip_address(value), where
            elif s.label == "EMAIL":
                assert re.fullmatch(r"[\w.+-]+@[a-z0-9.-]+\.[a-z]{2,}", value, re.I), where
            if s.label in ("PERSON", "ID", "PHONE", "EMAIL", "ADDRESS") and (s.label != "PERSON" or " " in value):
                for m in re.finditer(re.escape(value), r.text):
                    assert any(a <= m.start() and m.end() <= b for a, b in covered), (r.id, m.start(), s.label, "outside a span")


def test_native_identifiers_pass_their_check_digits(native_corpus):
    """The identifiers with check digits (NHS number, SSN, NPI, IBAN; KVNR, Steuer-IdNr, LANR, IBAN) come
    from the runtime.ids registry in every layout formats.yml gives them, and pass the packs' validators."""
    from deid_runtime import ids
    from deid_runtime.validators import validator_name

    lc, data, records = native_corpus
    registry = {name: spec["kind"] for name, spec in data.formats["ids"].items() if spec["kind"] != "shape"}
    assert set(registry.values()) == NATIVE[lc]["registry"]
    seen = Counter()
    for r in records:
        for s in r.spans:
            key = registry.get(s.attrs.get("kind"))
            if s.label == "ID" and key:
                value = r.text[s.start:s.end]
                assert ids.get(key).is_valid(value), f"{r.id} [{s.start},{s.end}) {key} fails its check digits"
                validator = "iban" if key.endswith(".iban") else validator_name(key)
                assert VALIDATORS[validator](value), f"{r.id} [{s.start},{s.end}) {key} fails validator {validator}"
                seen[key] += 1
    assert all(seen[k] >= 2 for k in registry.values()), seen


def test_native_hard_negatives_are_written_and_never_annotated(native_corpus):
    """Eponymous diseases are in the text and never inside a PERSON span ("Deutsche Parkinson Vereinigung"
    is an organisation); doses and laboratory values are outside every span."""
    lc, _, records = native_corpus
    hits = [(r, m) for r in records for m in re.finditer(NATIVE[lc]["eponyms"], r.text)]
    assert len(hits) >= 15 and len({m.group() for _, m in hits}) >= 4, Counter(m.group() for _, m in hits)
    for r, m in hits:
        assert not any(s.label == "PERSON" and s.start < m.end() and m.start() < s.end for s in r.spans), (r.id, m.start(), m.group())
    doses = [(r, m) for r in records for m in re.finditer(r"\b\d+(?:[.,]\d+)? ?(?:mg|ml|mmol/[lL]|µg|micrograms|units|IE)\b", r.text)]
    assert len(doses) >= 200
    assert not [(r.id, m.start()) for r, m in doses if any(s.start < m.end() and m.start() < s.end for s in r.spans)]


def test_english_corpus_writes_british_irish_and_american_forms():
    """NHS numbers, UK postcodes after the town and Irish Eircodes; US states, ZIP (+4) codes after
    them and SSNs; dates day first ("3 March 2021", "03/03/2021") and month first ("March 3, 2021");
    ordinals and dates in words; "Mr"/"Mrs"/"Ms"/"Dr" outside the span; a retired patient's occupation
    without "retired"; addresses abroad."""
    records = list(generate_records(400, 13, "en"))
    spans = [(r, s, r.text[s.start:s.end]) for r in records for s in r.spans]
    values = {label: [v for _, s, v in spans if s.label == label] for label in LABELS}
    kinds = Counter(s.attrs.get("kind") for _, s, _ in spans if s.label == "ID")
    assert kinds["nhs"] >= 30 and kinds["ssn"] + kinds["ssn_last4"] >= 5 and kinds["mrn"] >= 30 and kinds["gmc"] >= 10
    assert sum(bool(re.fullmatch(r"[A-Z]{1,2}\d{1,2} \d[A-Z]{2}", v)) for v in values["LOCATION"]) >= 30  # UK postcodes
    assert sum(bool(re.fullmatch(r"\d{5}(?:-\d{4})?", v)) for v in values["LOCATION"]) >= 20  # ZIP codes
    assert sum(bool(re.fullmatch(r"[A-Z]{2}", v)) for v in values["LOCATION"]) >= 20  # state codes
    assert any(re.fullmatch(r"[A-Z]\d{2}(?: [A-Z0-9]{4})?|D\d{2} [A-Z0-9]{4}", v) for v in values["LOCATION"])  # Eircodes
    dates = values["DATE"]
    assert sum(bool(re.fullmatch(r"\d{1,2} (?:January|February|March|April|May|June|July|August|September|October|November|December) \d{4}", v)) for v in dates) >= 20
    assert sum(bool(re.fullmatch(r"(?:January|February|March|April|May|June|July|August|September|October|November|December) \d{1,2}, \d{4}", v)) for v in dates) >= 20
    assert sum(bool(re.match(r"\d{1,2}(?:st|nd|rd|th) ", v)) for v in dates) >= 5 and any(v.startswith("the ") for v in dates)
    months_first = [v for v in dates if (m := re.fullmatch(r"(\d{2})/(\d{2})/\d{4}", v)) and int(m.group(2)) > 12]
    days_first = [v for v in dates if (m := re.fullmatch(r"(\d{2})/(\d{2})/\d{4}", v)) and int(m.group(1)) > 12]
    assert len(months_first) >= 10 and len(days_first) >= 10
    titled = [r.text[max(0, s.start - 4):s.start] for r, s, _ in spans if s.label == "PERSON"]
    assert sum(t.endswith(("Mr ", "Mrs ", "Ms ", "Dr ", "Dr. ")) for t in titled) >= 100
    assert sum(r.text[max(0, s.start - 8):s.start] == "retired " for r, s, _ in spans if s.label == "PROFESSION") >= 10
    assert sum(v in ("Spain", "Portugal", "Poland", "Italy", "Nigeria", "Australia", "Canada", "Mexico", "India", "Turkey", "France",
                     "Germany", "the Netherlands", "Romania", "Bangladesh", "the Philippines") for v in values["LOCATION"]) >= 10


def test_german_corpus_writes_german_austrian_and_swiss_forms():
    """House numbers after the street ("Lindenweg 3a"), the postal code inside the ADDRESS when it follows
    the street on its line and a LOCATION of its own otherwise, birth names after "geb.", "Herr/Frau" and
    "Dr. med." outside the PERSON span, KVNR, dates "3. März 2021" and "03.03.2021", ages "72-jährige",
    Austrian and Swiss addresses."""
    records = list(generate_records(400, 13, "de"))
    spans = [(r, s, r.text[s.start:s.end]) for r in records for s in r.spans]
    addresses = [v for _, s, v in spans if s.label == "ADDRESS"]
    assert sum(bool(re.search(r"(?:straße|str\.|weg|allee|platz|Straße|gasse|ring) \d+", v)) for v in addresses) >= 100
    assert len([v for v in addresses if re.match(r"\d+ \w", v)]) < 0.03 * len(addresses)  # the number first only abroad
    assert sum(bool(re.search(r" \d+[a-c]?, \d{5}$", v)) for v in addresses) >= 20  # "Lindenweg 3a, 79104"
    assert sum(bool(re.fullmatch(r"(?:D-)?\d{5}", v)) for _, s, v in spans if s.label == "LOCATION") >= 50
    assert sum(bool(re.search(r"(?:strasse|gasse|Straße) \d+(?:/\d+)*$", v)) for v in addresses) >= 5  # Austria, Switzerland
    births = [(r, s) for r, s, _ in spans if s.label == "PERSON" and r.text[max(0, s.start - 5):s.start] == "geb. "]
    assert len(births) >= 10
    titled = [r.text[max(0, s.start - 9):s.start] for r, s, _ in spans if s.label == "PERSON"]
    assert sum(t.endswith(("Herr ", "Herrn ", "Frau ", "Dr. med. ", "Dr. ")) for t in titled) >= 100
    kinds = Counter(s.attrs.get("kind") for _, s, _ in spans if s.label == "ID")
    assert kinds["kvnr"] >= 20 and kinds["pid"] >= 50 and kinds["fallnr"] >= 30
    dates = [v for _, s, v in spans if s.label == "DATE"]
    assert sum(bool(re.fullmatch(r"\d{1,2}\. (?:Januar|Februar|März|April|Mai|Juni|Juli|August|September|Oktober|November|Dezember) \d{4}", v)) for v in dates) >= 20
    assert sum(bool(re.fullmatch(r"\d{2}\.\d{2}\.\d{4}", v)) for v in dates) >= 200
    ages = [v for _, s, v in spans if s.label == "AGE"]
    assert sum("jährige" in v for v in ages) >= 30 and any(v.endswith("jähriger") for v in ages)
