"""The embedded synthetic Spanish corpus: deterministic, varied, valid spans, checksum-valid IDs."""

from __future__ import annotations

import re
import shutil
from collections import Counter

import pytest
import yaml

from deid_factory.records import read_records, validate_record
from deid_factory.runtime.validators import VALIDATORS
from deid_factory.synth import SYNTH_DIR, SynthData, SynthError, corpus_report, generate_records, synth

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
    shutil.copytree(SYNTH_DIR / "es", folder)
    sections = yaml.safe_load((folder / "sections.yml").read_text(encoding="utf-8"))
    sections["documents"][0]["sections"].append("no_such_section")
    (folder / "sections.yml").write_text(yaml.safe_dump(sections, allow_unicode=True), encoding="utf-8")
    with pytest.raises(SynthError, match=r"sections\.yml.*no_such_section"):
        SynthData.load("es", folder)


def test_unknown_slot_is_an_error(tmp_path):
    folder = tmp_path / "es"
    shutil.copytree(SYNTH_DIR / "es", folder)
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
    shutil.copytree(SYNTH_DIR / "es", folder)
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
