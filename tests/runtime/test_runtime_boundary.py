"""The runtime boundary: deid_runtime (its own distribution, factory/runtime/) imports nothing of
deid_factory, and the factory's stages share its text conventions: training spans are trimmed by
the characters the runtime trims its matches by, and every stage folds accents and case alike."""

from pathlib import Path

import pytest

import deid_runtime
from conftest import FACTORY_ONLY, imported_modules  # tests/ is on sys.path (pyproject's pythonpath)
from deid_factory import placeholders, silver
from deid_factory.records import trim_span
from deid_runtime.regex_pack import trim
from deid_runtime.text import BOUNDARY_CHARS, fold

RUNTIME_SOURCES = sorted(Path(deid_runtime.__file__).parent.rglob("*.py"))


def test_runtime_imports_nothing_of_the_factory():
    assert len(RUNTIME_SOURCES) > 20
    offenders = [f"{path.name}: {m}" for path in RUNTIME_SOURCES for m in sorted(imported_modules(path))
                 if m.split(".")[0] in FACTORY_ONLY]
    assert offenders == []


@pytest.mark.parametrize("boundary", sorted(BOUNDARY_CHARS), ids=repr)
def test_training_spans_and_runtime_matches_lose_the_same_boundaries(boundary):
    text = f"{boundary}{boundary}X1{boundary}"
    assert trim_span(text, 0, len(text)) == (2, 4)
    assert trim(text, 0, len(text)) == (2, 4)


@pytest.mark.parametrize("text, kept", [
    ("(+34) 913748402.", "(+34) 913748402"),   # a bracket whose partner is inside stays
    ("Hospital (HUCA).", "Hospital (HUCA)"),
    (" (Madrid) ", "Madrid"),                  # a pair that wraps the whole span goes
    ("555) 201-3344", "555) 201-3344"),        # a partner outside the span: the bracket stays inside, nothing to pair
    ("(555 201", "555 201"),
])
def test_training_spans_keep_a_bracket_whose_partner_is_inside(text, kept):
    """The synthetic corpus labelled "(+34) 913748402" from "+34)": its trim dropped the "(" that
    the regex packs keep, so the model learned a boundary the packs and every corpus contradict."""
    start, end = trim_span(text, 0, len(text))
    assert text[start:end] == kept


def test_every_stage_folds_accents_and_case_alike():
    assert fold("GARCÍA Núñez") == "garcia nunez"
    # a term that came back with its case or accents changed is found as "altered", through fold
    assert placeholders.find_placeholders("vu par GARCÍA", {"Garcia": {"label": "PERSON", "mentions": 1}})[1] == {"Garcia": "altered"}
    assert placeholders.normalize_surface("García-López") == placeholders.normalize_surface("GARCIA LOPEZ") == "garcia lopez"
    assert silver._fold("Sjögren's") == "sjogren"
    assert silver._fold("Guillain-Barré") == "guillain barre"


def test_replace_spans_places_each_replacement_and_trims_its_punctuation():
    """The one span rewriter (placeholders, surrogates, redaction): offsets of each replacement in
    the new text; with trim, a replacement's own leading/trailing punctuation stays outside its span."""
    from deid_runtime.text import replace_spans

    text = "Vu par Dr X le 3 mars, tél. 06."
    spans = [(10, 11), (15, 21), (28, 30)]
    new, placed = replace_spans(text, spans, ["Jean Roux", "12/04/2021", "(555) 201-3344."])
    assert new == "Vu par Dr Jean Roux le 12/04/2021, tél. (555) 201-3344.."
    assert [new[a:b] for a, b in placed] == ["Jean Roux", "12/04/2021", "(555) 201-3344."]
    _, trimmed = replace_spans(text, spans, ["Jean Roux", "12/04/2021", "(555) 201-3344."], trim=True)
    assert [new[a:b] for a, b in trimmed] == ["Jean Roux", "12/04/2021", "(555) 201-3344"]
    assert replace_spans(text, [], []) == (text, [])
    with pytest.raises(ValueError):
        replace_spans(text, spans, ["only one"])
