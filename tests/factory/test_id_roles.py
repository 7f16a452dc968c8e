"""What a source identifier identifies (its role) is said where the identifier is defined: a
registry identifier's role in its country module (deid_runtime/ids/<cc>.py), a synthetic-corpus
identifier's in corpora/synth/<lc>/formats.yml (written on its span), an annotated corpus label's
in its label map (corpora/label_maps/<corpus>.yml). No shared table lists them."""

from __future__ import annotations

import pytest

from deid_factory.labels import load_label_map, load_label_roles
from deid_factory.surrogates.stage import source_role
from deid_factory.synth import SynthData, SynthError, generate_records
from deid_runtime import ids


@pytest.mark.parametrize("lang", ["es", "fr"])
def test_the_synthetic_corpus_writes_each_identifier_s_role_on_its_span(lang):
    data = SynthData.load(lang)
    specs = data.formats["ids"]
    seen = set()
    for record in generate_records(60, seed=3, lang=lang, data=data):
        for span in record.spans:
            if span.label == "ID" and span.attrs.get("kind") in specs:
                spec = specs[span.attrs["kind"]]
                # a shape's role is its formats.yml `role`; a registry identifier's, its module's
                expected = spec.get("role") or ids.get(spec["kind"]).role
                assert span.attrs["role"] == expected, (record.id, span.attrs)
                seen.add(expected)
    assert {"record", "national"} <= seen


def test_a_shape_identifier_without_a_role_is_refused(tmp_path):
    import shutil

    folder = tmp_path / "fr"
    shutil.copytree(SynthData.load("fr").folder, folder)
    formats = folder / "formats.yml"
    text = formats.read_text(encoding="utf-8")
    assert "{kind: shape, role: record, " in text
    formats.write_text(text.replace("{kind: shape, role: record, ", "{kind: shape, ", 1), encoding="utf-8")
    with pytest.raises(SynthError, match="a shape needs a `role`"):
        SynthData.load("fr", folder=folder)


def test_annotated_corpus_labels_have_their_roles_in_their_label_map():
    roles = load_label_roles()
    meddocan = load_label_map("meddocan")
    assert roles["ID_ASEGURAMIENTO"] == "insurance" and roles["ID_TITULACION_PERSONAL_SANITARIO"] == "professional"
    # every label with a role is one the map reads as an ID (a misspelt label would never match)
    assert roles and all(meddocan.get(label) == "ID" for label in roles)


def test_a_source_identifier_s_role_comes_from_its_span_then_its_label_then_its_check_digits():
    labels = {"ID_ASEGURAMIENTO": "insurance"}
    assert source_role({"role": "episode", "source_label": "ID_ASEGURAMIENTO"}, "es.dni", labels) == "episode"
    assert source_role({"source_label": "ID_ASEGURAMIENTO"}, "es.dni", labels) == "insurance"
    assert source_role({"source_label": "OTHER"}, "es.dni", labels) == "national"  # ids/es.py: the DNI's role
    assert source_role({}, "fr.rpps", labels) == "professional"
    assert source_role({"role": "nonsense"}, None, labels) == ids.DEFAULT_ROLE == "record"
