"""Placeholders: coreference, exact spans, no PHI kept, recovery classification, calibration."""

from __future__ import annotations

import json

import pytest
import yaml
from typer.testing import CliRunner

from deid_factory.cli import app
from deid_factory.placeholders import (
    Inventory,
    PlaceholderError,
    calibrate,
    find_placeholders,
    load_inventory,
    placeholder_file,
    placeholderize,
)
from deid_factory.records import Record, Span, read_records


def _rec(text, items, rid="r1"):
    spans, cursor = [], 0
    for surface, label in items:
        start = text.index(surface, cursor)
        spans.append(Span(start, start + len(surface), label))
        cursor = start + len(surface)
    return Record(rid, "es", text, spans, {})


def test_same_entity_same_placeholder_and_exact_spans():
    inv = load_inventory("fr")
    rec = _rec(
        "Ana Martín Ruiz ingresa. ANA MARTÍN RUIZ firma. Su hermano Luis Gómez llama. Martín mejora.",
        [("Ana Martín Ruiz", "PERSON"), ("ANA MARTÍN RUIZ", "PERSON"), ("Luis Gómez", "PERSON"), ("Martín", "PERSON")],
    )
    out = placeholderize(rec, inv)
    terms = [out.text[s.start : s.end] for s in out.spans]
    assert terms[0] == terms[1] != terms[2]  # case/accents do not split an entity
    assert len(set(terms)) == 3
    for span in out.spans:
        assert out.text[span.start : span.end] == span.attrs["placeholder"]
    mapping = out.meta["placeholders"]["terms"]
    assert mapping[terms[0]]["mentions"] == 2
    assert mapping[terms[3]]["link"] == terms[0] and mapping[terms[3]]["part"] == "family"
    assert out.meta["placeholder_text"] == out.text


def test_no_phi_in_placeholder_meta():
    rec = _rec("Paciente Jacinto Bermúdez, DNI 12345678Z, vive en Albacete.",
               [("Jacinto Bermúdez", "PERSON"), ("12345678Z", "ID"), ("Albacete", "LOCATION")])
    out = placeholderize(rec, load_inventory("fr"))
    dumped = json.dumps(out.to_dict(), ensure_ascii=False)
    for surface in ("Jacinto", "Bermúdez", "12345678", "Albacete"):
        assert surface not in dumped


def test_shapes_describe_form():
    rec = _rec("Nacido el 12/03/1950, ingresa el 3 de mayo de 2020 con 70 años; tel. +34 600 111 222.",
               [("12/03/1950", "DATE"), ("3 de mayo de 2020", "DATE"), ("70 años", "AGE"), ("+34 600 111 222", "PHONE")])
    out = placeholderize(rec, load_inventory("fr"))
    shapes = [out.meta["placeholders"]["terms"][s.attrs["placeholder"]]["shape"] for s in out.spans]
    assert shapes[0]["form"] == "numeric" and shapes[1]["form"] == "written"
    assert shapes[2]["unit"] is True and shapes[3]["international"] is True


def test_person_shape_keeps_only_a_sex_hint():
    rec = _rec("Vino Lucía Pérez con Juan y con Zubizarreta.", [("Lucía Pérez", "PERSON"), ("Juan", "PERSON"), ("Zubizarreta", "PERSON")])
    out = placeholderize(rec, load_inventory("fr"))
    shapes = [out.meta["placeholders"]["terms"][s.attrs["placeholder"]]["shape"] for s in out.spans]
    assert [sh.get("sex") for sh in shapes] == ["f", "m", None]  # a surname alone: no hint


def test_shapes_keep_the_kind_of_places_organisations_and_dates():
    """The kind travels in the shape (the original never does), read with the words before a span."""
    rec = _rec("País: España. Provincia de Sevilla, vive en Lugo, CP 28013. Centro de Salud Delicias. "
               "Cita el martes 14 de noviembre. Acude la paciente Zuriñeta Ruiz.",
               [("España", "LOCATION"), ("Sevilla", "LOCATION"), ("Lugo", "LOCATION"), ("28013", "LOCATION"),
                ("Centro de Salud Delicias", "ORGANIZATION"), ("martes 14 de noviembre", "DATE"), ("Zuriñeta Ruiz", "PERSON")])
    out = placeholderize(rec, load_inventory("fr"))
    shapes = [out.meta["placeholders"]["terms"][s.attrs["placeholder"]]["shape"] for s in out.spans]
    assert [sh["kind"] for sh in shapes[:5]] == ["country", "region", "city", "postal_code", "health_centre"]
    assert (shapes[5]["parts"], shapes[5]["weekday"]) == ("dm", True)
    assert shapes[6]["sex"] == "f"  # told by "la paciente", the name is unknown to the lists
    dumped = json.dumps(out.meta["placeholders"], ensure_ascii=False)  # no PHI, and no context either
    for surface in ("España", "Sevilla", "Lugo", "28013", "Delicias", "martes", "noviembre", "Zuriñeta", "paciente"):
        assert surface not in dumped


def test_inventory_exhausted_and_term_in_text():
    inv = Inventory({"PERSON": ["Faustino"], "ANY": ["Arvandel"]})
    rec = _rec("A B, C D y E F.", [("A B", "PERSON"), ("C D", "PERSON"), ("E F", "PERSON")])
    with pytest.raises(PlaceholderError) as err:
        placeholderize(rec, inv)
    assert err.value.reason == "inventory_exhausted"
    assert "A B" not in str(err.value)  # the message names the record, never the text
    # a term already in the text (outside PHI) is skipped for that record; inside a PHI span it is fine
    clash = _rec("Faustino dice que Ana vino.", [("Ana", "PERSON")])
    assert placeholderize(clash, inv).text == "Faustino dice que Arvandel vino."
    inside = _rec("Vino Faustino Pérez.", [("Faustino Pérez", "PERSON")])
    assert placeholderize(inside, inv).text == "Vino Faustino."


def test_bad_spans_are_refused_with_record_id():
    rec = Record("bad-1", "es", "Ana vino.", [Span(0, 4, "PERSON")], {})  # ends on a space
    with pytest.raises(PlaceholderError, match="bad-1"):
        placeholderize(rec, load_inventory("fr"))


@pytest.mark.parametrize(
    "text, reason",
    [
        ("Vino Faustino y Zelvorin.", None),
        ("Vino y Zelvorin.", "missing"),
        ("Vino Faustino, Faustino y Zelvorin.", "duplicated"),
        ("Vino FAUSTINO y Zelvorin.", "altered"),
        ("Vino Faustinos y Zelvorin.", "altered"),
        ("Vino FaustinoZelvorin.", "merged"),
    ],
)
def test_find_placeholders_classifies(text, reason):
    terms = {"Faustino": {"label": "PERSON", "mentions": 1}, "Zelvorin": {"label": "DATE", "mentions": 1}}
    spans, problems = find_placeholders(text, terms)
    if reason is None:
        assert not problems
        assert [text[s.start : s.end] for s in spans] == ["Faustino", "Zelvorin"]
    else:
        assert problems.get("Faustino") == reason


def test_placeholder_file_and_cli(translate_source, tmp_path):
    out, report = tmp_path / "ph.jsonl", tmp_path / "ph_report.json"
    result = CliRunner().invoke(app, ["placeholder", str(translate_source), str(out), "--lang", "fr", "--report", str(report)])
    assert result.exit_code == 0, result.output
    data = json.loads(report.read_text())
    records = list(read_records(out))
    assert data["records_in"] == data["records_out"] == len(records) == 5
    assert sum(data["mentions"].values()) == sum(len(r.spans) for r in records)
    # bad input: a clear error naming file and line
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"id": "x", "text": "hola"}\nnot json\n')
    bad = CliRunner().invoke(app, ["placeholder", str(broken), str(tmp_path / "o.jsonl"), "--lang", "fr"])
    assert bad.exit_code == 1 and "broken.jsonl:2" in bad.output
    assert not (tmp_path / "o.jsonl").exists()  # atomic: nothing half-written


def test_calibrate_measures_survival(argos_home, argos_packages, tmp_path):
    """Through the lossy route, the dropped term is rejected; every other candidate survives."""
    from conftest import ARGOS_LOSSY_TERM

    out = tmp_path / "placeholders.yml"
    raw = yaml.safe_load((load_inventory("fr").path).read_text())
    small = {"PERSON": raw["candidates"]["PERSON"][:3], "DATE": raw["candidates"]["DATE"][:2], "ANY": raw["candidates"]["ANY"][:2]}
    out.write_text("# test inventory\n" + yaml.safe_dump({"lang": "fr", "candidates": small}))
    # argos route with a package that drops the term from position 0: survival 0
    from deid_factory.argos_testkit import build_package, _default_sentences

    pk = tmp_path / "pk"
    pk.mkdir()
    build_package(pk / "translate-es_fr.argosmodel", "es", "fr", _default_sentences("") + small["PERSON"],
                  lossy_tokens=[ARGOS_LOSSY_TERM], lossy_from_position=0)
    result = calibrate("es", "fr", out, packages_dir=pk, argos_dir=tmp_path / "argos")
    assert result["route"] == ["es", "fr"]
    written = yaml.safe_load(out.read_text())
    kept = {e["term"]: e["survival"] for entries in written["terms"].values() for e in entries}
    assert ARGOS_LOSSY_TERM not in kept and written["rejected"][ARGOS_LOSSY_TERM]["survival"] == 0.0
    assert set(kept) == set(sum(small.values(), [])) - {ARGOS_LOSSY_TERM}
    assert all(v == 1.0 for v in kept.values())
    assert out.read_text().startswith("# test inventory")
    inv = load_inventory(path=out)
    assert inv.calibrated and ARGOS_LOSSY_TERM not in inv.all_terms()


def test_calibrate_rejects_altered_terms(tmp_path):
    """A route that upper-cases one term and inflects another: both are rejected, with the reason."""
    out = tmp_path / "p.yml"
    out.write_text(yaml.safe_dump({"candidates": {"PERSON": ["Faustino", "Eustaquio", "Leocadio"]}}))

    def route(text):
        return text.replace("Faustino", "FAUSTINO").replace("Eustaquio", "Eustaquios")

    result = calibrate("es", "fr", out, translate_fn=route)
    assert [e["term"] for e in result["terms"]["PERSON"]] == ["Leocadio"]
    assert result["rejected_terms"]["Faustino"]["outcomes"] == {"altered": 8}
