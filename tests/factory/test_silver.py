"""Silver annotation and its filters (street suffixes, eponymous diseases) per locale."""

from __future__ import annotations

import pytest
import yaml

from deid_factory import PROJECT_ROOT
from deid_factory.records import Record, Span, read_records, write_records
from deid_factory.silver import (EponymFilter, SilverError, StreetFilter, annotate, apply_span_filters, filter_records,
                                 load_silver_config, silver)
from deid_factory.synth import generate_records

SILVER = {"annotator": "regex:es"}


def _person(text: str, name: str, **attrs) -> Record:
    start = text.index(name)
    return Record("r1", "es", text, [Span(start, start + len(name), "PERSON", dict(attrs or SILVER))])


def _kept(record: Record, locale: str = "es", apply_to: str | None = None, report: dict | None = None) -> list[str]:
    (out,) = apply_span_filters([record], load_silver_config(locale), apply_to, report if report is not None else {})
    return [out.text[s.start:s.end] for s in out.spans]


@pytest.mark.parametrize("locale", ["es", "fr", "en", "de"])
def test_every_locale_has_a_valid_config_with_50_eponyms(locale):
    cfg = load_silver_config(locale)
    assert len(cfg["eponym_filter"]["eponyms"]) >= 50
    assert cfg["street_filter"]["window"] == 20
    assert cfg["thresholds"]["k_std"] >= 1.0


@pytest.mark.parametrize("text,name", [
    ("Domicilio en la calle Miguel Benitez 90, Madrid.", "Miguel Benitez"),
    ("Vive en Avda. Blas de Lezo, 12.", "Blas de Lezo"),
    ("Dirección: C/ Rosalía de Castro s/n", "Rosalía de Castro"),
    ("Plaza de Clara Campoamor, 3", "Clara Campoamor"),
    ("Severo Ochoa, paseo 14", "Severo Ochoa"),  # suffix after the name
])
def test_street_filter_removes_names_next_to_street_words(text, name):
    report: dict = {}
    assert _kept(_person(text, name), report=report) == []
    assert report["street_filter"]["spans_removed"] == 1
    assert report["street_filter"]["removed"][0]["id"] == "r1"


@pytest.mark.parametrize("text,name", [
    ("Remitida por el Dr. Miguel Benitez por dolor abdominal.", "Miguel Benitez"),
    ("Acude con Ana Calles Soto, su hija.", "Ana Calles Soto"),  # "Calles" is a surname, not "calle"
    ("Vive en la calle Mayor número 20 de la ciudad, con Pedro Ruiz.", "Pedro Ruiz"),  # street word > 20 characters away
    ("Tratamiento por vía oral pautado por Laura Gil.", "Laura Gil"),  # "vía" is not in the list on purpose
])
def test_street_filter_keeps_real_names(text, name):
    assert _kept(_person(text, name)) == [name]


def test_street_filter_other_locales():
    assert _kept(_person("Domicilié 12 rue Victor Hugo, Lyon", "Victor Hugo"), "fr") == []
    assert _kept(_person("Lives at 4 Abraham Lincoln Street, Boston", "Abraham Lincoln"), "en") == []
    assert _kept(_person("Seen by Dr. John Smith today", "John Smith"), "en") == ["John Smith"]
    # German compounds: the street word ends a longer word
    assert _kept(_person("Wohnhaft in der Thomas-Mann-Straße 5", "Thomas-Mann"), "de") == []
    assert _kept(_person("Wohnt Goethestraße 12 bei Karl Weber", "Karl Weber"), "de") == []
    assert _kept(_person("Überwiesen von Dr. Karl Weber wegen Husten", "Karl Weber"), "de") == ["Karl Weber"]


@pytest.mark.parametrize("locale,text,name", [
    ("es", "Diagnosticado de enfermedad de Parkinson en 2015.", "Parkinson"),
    ("es", "Síndrome de SJOGREN primario.", "SJOGREN"),  # case and accents do not matter
    ("es", "Antecedente de síndrome de Guillain-Barré.", "Guillain-Barré"),
    ("en", "History of Crohn's disease since 2010.", "Crohn's"),
    ("fr", "Maladie de Basedow traitée.", "Basedow"),
    ("de", "Bekannter Morbus Bechterew.", "Bechterew"),
])
def test_eponym_filter_removes_disease_names(locale, text, name):
    report: dict = {}
    assert _kept(_person(text, name), locale, report=report) == []
    assert report["eponym_filter"]["spans_removed"] == 1


@pytest.mark.parametrize("text,name", [
    ("Paciente Juan Parkinson García, 70 años.", "Juan Parkinson García"),
    ("Atendida por la Dra. Marta Crohn.", "Marta Crohn"),
])
def test_eponym_filter_keeps_full_names_containing_an_eponym(text, name):
    assert _kept(_person(text, name)) == [name]


def test_gold_spans_are_not_judged_unless_asked():
    rec = _person("Domicilio en la calle Miguel Benitez 90.", "Miguel Benitez", annotator="gold")
    assert _kept(rec) == ["Miguel Benitez"]
    rec = _person("Domicilio en la calle Miguel Benitez 90.", "Miguel Benitez", kind="patient")  # no annotator: gold
    assert _kept(rec) == ["Miguel Benitez"]
    assert _kept(rec, apply_to="all") == []


def test_only_person_spans_are_filtered():
    text = "Vive en calle Goya 3, Hospital Parkinson de Soria"
    start = text.index("Hospital")
    rec = Record("r1", "es", text, [Span(start, len(text), "ORGANIZATION", dict(SILVER))])
    assert _kept(rec) == ["Hospital Parkinson de Soria"]


def test_filters_do_not_build_for_a_bad_config(tmp_path):
    path = tmp_path / "silver.yml"
    path.write_text(yaml.safe_dump({"street_filter": {"suffixes": []}, "eponym_filter": {"eponyms": ["X"]}, "thresholds": {}}))
    with pytest.raises(SilverError, match="suffixes is empty"):
        load_silver_config(path)
    with pytest.raises(SilverError, match="no silver filter configuration"):
        load_silver_config("xx")


def test_street_and_eponym_filters_as_objects():
    street = StreetFilter({"suffixes": ["calle"], "window": 5})
    text = "calle  Ana Ruiz"
    assert not street.drops(text, Span(7, 15, "PERSON"))  # "calle" ends 7 characters before: outside a 5-char window
    assert EponymFilter({"eponyms": ["Wolff-Parkinson-White"]}).drops("Wolff Parkinson White", Span(0, 21, "PERSON"))


def test_annotate_with_the_regex_pack_marks_the_annotator():
    text = "DNI 12345678Z, teléfono 600 123 456. Paciente Ana Ruiz."
    existing = Span(text.index("Ana"), text.index("Ana") + 8, "PERSON")
    rec = Record("r1", "es", text, [existing])
    report: dict = {}
    (out,) = annotate([rec], "regex:es", report)
    added = [s for s in out.spans if s.attrs.get("annotator") == "regex:es"]
    assert {(out.text[s.start:s.end], s.label) for s in added} >= {("12345678Z", "ID"), ("600 123 456", "PHONE")}
    assert any(s is existing or (s.start, s.end) == (existing.start, existing.end) for s in out.spans)
    assert report["spans_added"] == len(added)


def test_annotate_with_a_spacy_pipeline_and_filter(tmp_path):
    import spacy

    nlp = spacy.blank("es")
    ruler = nlp.add_pipe("entity_ruler")
    ruler.add_patterns([{"label": "PERSON", "pattern": "Parkinson"}, {"label": "PERSON", "pattern": [{"LOWER": "ana"}, {"LOWER": "ruiz"}]}])
    nlp.to_disk(tmp_path / "toy_pipeline")
    write_records(tmp_path / "in.jsonl", [Record("r1", "es", "Ana Ruiz tiene enfermedad de Parkinson.", [])])
    rep = silver(tmp_path / "in.jsonl", tmp_path / "out.jsonl", str(tmp_path / "toy_pipeline"), lang="es")
    (out,) = read_records(tmp_path / "out.jsonl")
    assert [(out.text[s.start:s.end], s.attrs["annotator"]) for s in out.spans] == [("Ana Ruiz", str(tmp_path / "toy_pipeline"))]
    assert rep["annotation"]["spans_added"] == 2 and rep["filters"]["eponym_filter"]["spans_removed"] == 1


def test_unknown_annotator_is_a_clear_error(tmp_path):
    with pytest.raises(SilverError, match="deid_zz"):
        list(annotate([Record("r", "es", "x", [])], "deid_zz"))


def test_default_filter_keeps_most_of_the_synthetic_corpus(tmp_path):
    write_records(tmp_path / "synth.jsonl", generate_records(1000, 13))
    rep = filter_records(tmp_path / "synth.jsonl", tmp_path / "out.jsonl", "es", report_path=tmp_path / "r.json")
    assert rep["records_kept"] >= 800
    assert rep["street_filter"]["spans_removed"] == 0  # gold spans are never judged by default
    th = rep["thresholds"]
    assert th["k_std"] == 2.0 and th["removed_length"] + th["removed_max_names"] == 1000 - rep["records_kept"]
    # the thesis' setting (k = 1) would throw away far more
    rep1 = filter_records(tmp_path / "synth.jsonl", tmp_path / "out1.jsonl", "es", k_std=1.0)
    assert rep1["records_kept"] < rep["records_kept"]
