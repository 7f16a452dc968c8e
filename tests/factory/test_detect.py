"""Language detection: fixed seed, PHI removed before detection, non-source records dropped with counts."""

from __future__ import annotations

import srsly

from deid_factory import PROJECT_ROOT
from deid_factory.detect import detect, detect_language, filter_language, phi_free_text
from deid_factory.records import Record, Span, read_records
from deid_factory.synth import generate_records

MIXED = PROJECT_ROOT / "corpora" / "fixtures" / "mixed_es_ca.jsonl"


def test_mixed_spanish_catalan_loses_the_catalan_records(tmp_path):
    rep = detect(MIXED, tmp_path / "es.jsonl", "es", report_path=tmp_path / "r.json")
    kept = list(read_records(tmp_path / "es.jsonl"))
    assert sorted(r.id for r in kept) == ["es-001", "es-002", "es-003", "es-004"]
    assert rep["records_read"] == 7 and rep["records_kept"] == 4
    assert rep["dropped_by_language"] == {"ca": 3}
    assert sorted(d["id"] for d in rep["dropped"]) == ["ca-001", "ca-002", "ca-003"]
    assert all(r.meta["lang_detected"] == "es" and r.meta["lang_prob"] > 0.9 for r in kept)
    assert srsly.read_json(tmp_path / "r.json")["dropped_by_language"] == {"ca": 3}


def test_detection_is_deterministic():
    text = next(iter(read_records(MIXED))).text
    assert len({detect_language(text) for _ in range(5)}) == 1


def test_phi_is_removed_before_detection():
    # a Spanish sentence wrapped around long English organisation names and a Catalan address
    text = ("Remitido desde St Thomas Hospital Trust and Kings College London Foundation por dolor, vive en "
            "Carrer de la Riera Alta de Sant Pere i Sant Pau amb la seva família.")
    org = "St Thomas Hospital Trust and Kings College London Foundation"
    addr = "Carrer de la Riera Alta de Sant Pere i Sant Pau amb la seva família"
    rec = Record("r1", "es", text, [Span(text.index(org), text.index(org) + len(org), "ORGANIZATION"),
                                   Span(text.index(addr), text.index(addr) + len(addr), "ADDRESS")])
    cleaned = phi_free_text(rec)
    assert "Thomas" not in cleaned and "Riera" not in cleaned and "Remitido desde" in cleaned
    kept = list(filter_language([rec], "es"))
    assert kept and kept[0].meta["lang_detected"] == "es"


def test_too_little_text_is_undetermined_and_dropped():
    rec = Record("r1", "es", "Juan Pérez 12/03/2020", [Span(0, 10, "PERSON"), Span(11, 21, "DATE")])
    assert detect_language(phi_free_text(rec)) == ("und", 0.0)
    assert list(filter_language([rec], "es")) == []


def test_the_synthetic_corpus_is_all_spanish():
    records = list(generate_records(150, 21))
    kept = list(filter_language(records, "es"))
    assert len(kept) == 150
