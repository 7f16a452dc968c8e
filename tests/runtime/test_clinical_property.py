"""Issue 25, wanted 5: redaction never changes a clinical fact, whatever a detector says.

A generated corpus of clinical sentences per locale (es fr en de it pt nl; material in
tests/data/clinical/<lc>.yml: doses, schedules, lab values with units, vital signs, durations, drug
names, with and without PHI around them) goes through the real regex pack, clinical lexicon and
merger of the locale, with ADVERSARIAL NER candidates: random spans with random labels over the
sentence, as a bad NER would emit them (few and short at the default recall setting, many and long
at a high one), plus candidates on some of the real PHI. Then it is redacted in every mode. The
properties:
  * every clinical fact outside a gold PHI span (all of them here) comes out unchanged, in tag,
    mask and surrogate modes, and no final PHI span touches one;
  * fail closed: a gold PHI span that a candidate of its label covered stays covered (a name next to
    a dose is still a name), and in tag mode its text is gone.
A real trained pipeline on the issue's note: tests/runtime/test_redact.py::test_the_issues_note_through_a_real_pipeline_keeps_every_clinical_fact.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import CHECKOUT, hypothesis_examples, use_checkout_surrogate_data
from deid_runtime.canonical import CANONICAL_LABELS

use_checkout_surrogate_data()
DATA = Path(__file__).resolve().parents[1] / "data" / "clinical"
LOCALES = ["es", "fr", "en", "de", "it", "pt", "nl"]
FACT_SLOTS = ("drug", "dose", "schedule", "lab", "vital", "duration")
KEY = b"property test key, 32 bytes long"
# what a bad NER emits per sentence: (most spans, longest span in tokens)
RECALL = {"default": (3, 3), "high": (10, 8)}
_SLOT = re.compile(r"\{(\w+)\}")


@lru_cache(maxsize=None)
def _material(lc: str) -> dict:
    return yaml.safe_load((DATA / f"{lc}.yml").read_text(encoding="utf-8"))


@lru_cache(maxsize=None)
def _pipeline(lc: str):
    """The locale's pack (with its clinical lexicon) and the merger, on the runtime tokenizer."""
    from deid_runtime import merger, pack_component  # noqa: F401
    from deid_runtime.regex_pack import RegexPack
    from deid_runtime.tokenization import blank

    nlp = blank(lc)
    nlp.add_pipe("deid_regex_pack", config={"write_ents": False}).pack = RegexPack.from_dir(CHECKOUT / "regex_packs" / lc)
    nlp.add_pipe("deid_merger")
    return nlp


@st.composite
def notes(draw, lc: str):
    """(text, fact spans, PHI spans [(start, end, label)]) of a few generated sentences."""
    material = _material(lc)
    phi_labels = {"person": "PERSON", "age": "AGE", "date": "DATE", "id": "ID", "phone": "PHONE", "place": "LOCATION"}
    text, facts, phi = "", [], []
    for template in draw(st.lists(st.sampled_from(material["templates"]), min_size=1, max_size=4)):
        pos = 0
        for slot in _SLOT.finditer(template):
            text += template[pos:slot.start()]
            name = slot.group(1)
            pool = material["facts"][name] if name in FACT_SLOTS else material["phi"][name]
            value = draw(st.sampled_from(pool))
            (facts if name in FACT_SLOTS else phi).append((len(text), len(text) + len(value), phi_labels.get(name)))
            text += value
            pos = slot.end()
        text += template[pos:] + " "
    return text.strip(), facts, phi


def _run(lc, data, recall):
    """Generate a note, put adversarial candidates on it, run the pack and the merger."""
    from spacy.util import filter_spans

    text, facts, phi = data.draw(notes(lc))
    nlp = _pipeline(lc)
    doc = nlp.make_doc(text)
    most, longest = RECALL[recall]
    n = len(doc)
    spans = []
    for _ in range(data.draw(st.integers(0, most * max(1, n // 25)))):
        start = data.draw(st.integers(0, n - 1))
        end = min(n, start + data.draw(st.integers(1, longest)))
        spans.append(doc.char_span(doc[start].idx, doc[end - 1].idx + len(doc[end - 1]),
                                   label=data.draw(st.sampled_from(CANONICAL_LABELS))))
    found = []  # gold PHI the bad NER also found, with its own label
    for start, end, label in phi:
        if data.draw(st.booleans()):
            span = doc.char_span(start, end, label=label, alignment_mode="expand")
            spans.insert(0, span)
            found.append((start, end, label))
    doc.ents = filter_spans([s for s in spans if s is not None])  # a NER's entities never overlap
    found = [f for f in found if any(e.start_char == f[0] and e.end_char == f[1] for e in doc.ents)]
    for _, component in nlp.pipeline:
        doc = component(doc)
    return text, facts, found, doc


def _check(lc, text, facts, found, doc):
    # redact_text: the surrogate checks read the lexicon the locale's pack registered when loaded
    from deid_runtime.redact import redact_text

    final = [(e.start_char, e.end_char, e.label_) for e in doc.ents]
    for start, end, _ in facts:
        touching = [text[s:e] for s, e, _ in final if s < end and start < e]
        assert not touching, f"{lc}: fact {text[start:end]!r} inside PHI spans {touching} of {text!r}"
    for start, end, label in found:
        uncovered = [i for i in range(start, end) if not text[i].isspace() and not any(s <= i < e for s, e, _ in final)]
        assert not uncovered, f"{lc}: the {label} {text[start:end]!r} was found by the NER and let out: {text!r}"
    for mode in ("tag", "mask", "surrogate"):
        out = redact_text(text, final, mode, lang=lc, doc_id="p", key=KEY)[0]
        values = [text[s:e] for s, e, _ in facts]
        # each fact, in the order written, and as often as written
        assert re.search(".*?".join(re.escape(v) for v in values), out, re.DOTALL), (lc, mode, values, out)
        for v in set(values):
            assert out.count(v) >= text.count(v), (lc, mode, v, out)
        if mode == "tag":
            for start, end, _ in found:
                assert text[start:end] not in out or text.count(text[start:end]) > 1, (lc, text[start:end], out)


@pytest.mark.parametrize("recall", sorted(RECALL))
@pytest.mark.parametrize("lc", LOCALES)
def test_no_clinical_fact_changes_whatever_the_ner_says(lc, recall):
    @settings(max_examples=hypothesis_examples(30), suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(st.data())
    def prop(data):
        _check(lc, *_run(lc, data, recall))

    prop()


@pytest.mark.parametrize("lc", LOCALES)
def test_every_fact_of_the_material_is_a_fact_of_the_lexicon(lc):
    """The material is written apart from the lexicon: each value it uses as a fact must be found
    whole by the locale's lexicon (else the property above would not be testing the lexicon)."""
    lexicon = _pipeline(lc).get_pipe("deid_regex_pack").pack.clinical
    missing = []
    for slot in FACT_SLOTS:
        for value in _material(lc)["facts"][slot]:
            text = f"x {value} x"
            if not any(f.start <= 2 and f.end >= 2 + len(value) for f in lexicon.find(text)):
                missing.append(value)
    assert not missing, f"tests/data/clinical/{lc}.yml: facts the {lc} lexicon does not find whole: {missing}"
