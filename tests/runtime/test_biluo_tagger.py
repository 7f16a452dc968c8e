"""deid_tagger: a BILUO token tagger decoded by constrained Viterbi, with a recall knob (o_bias)."""

from __future__ import annotations

import random

import numpy
import pytest
import spacy
from spacy.training import Example

from deid_runtime.biluo_tagger import OUTSIDE, BiluoTagger  # noqa: F401  (registers the factory)
from deid_runtime.tokenization import customize_tokenizer
from deid_factory.splits import record_to_doc
from deid_factory.synth import generate_records

LABELS = ["DATE", "ID", "PERSON"]


def _tagger() -> BiluoTagger:
    nlp = spacy.blank("es")
    tagger = nlp.add_pipe("deid_tagger")
    tagger.add_label(OUTSIDE)
    for label in LABELS:
        tagger.add_entity_label(label)
    return tagger


def _valid(tags: list[str]) -> bool:
    """A BILUO sequence: entities open with B and close with L, or are a single U."""
    open_label = None
    for tag in tags:
        prefix, _, label = tag.partition("-")
        if open_label is None:
            if prefix in ("I", "L"):
                return False
            if prefix == "B":
                open_label = label
        else:
            if prefix not in ("I", "L") or label != open_label:
                return False
            if prefix == "L":
                open_label = None
    return open_label is None


def test_decode_always_gives_a_valid_sequence_and_follows_confident_tags():
    tagger = _tagger()
    rng = numpy.random.default_rng(0)
    n_tags = len(tagger.labels)
    for _ in range(200):
        probs = rng.dirichlet(numpy.ones(n_tags) * 0.3, size=int(rng.integers(1, 30))).astype("float32")
        tags = [tagger.labels[i] for i in tagger.decode(probs)]
        assert _valid(tags), tags
    # confident, valid input is decoded as it is
    wanted = ["O", "B-PERSON", "I-PERSON", "L-PERSON", "O", "U-DATE", "O"]
    probs = numpy.full((len(wanted), n_tags), 0.01, dtype="float32")
    for i, tag in enumerate(wanted):
        probs[i, tagger.labels.index(tag)] = 0.9
    assert [tagger.labels[i] for i in tagger.decode(probs)] == wanted
    # an I- with no B- before it is repaired, not emitted
    broken = ["O", "I-PERSON", "L-PERSON", "O"]
    probs = numpy.full((len(broken), n_tags), 0.01, dtype="float32")
    for i, tag in enumerate(broken):
        probs[i, tagger.labels.index(tag)] = 0.9
    assert _valid([tagger.labels[i] for i in tagger.decode(probs)])


def test_entities_never_start_or_end_on_whitespace_tokens():
    """A run of spaces is a token of its own: tagged into an entity, it must not become part of
    the entity's offsets (a name padded to a column came out as 'Anna Bujons Tur      ')."""
    tagger = _tagger()
    doc = spacy.blank("es")("Nombre: Anna Bujons Tur        Fecha: 3 de mayo")
    tokens = [t.text for t in doc]
    pad = next(i for i, t in enumerate(doc) if t.is_space)
    tags = ["O"] * len(doc)
    start = tokens.index("Anna")
    tags[start:pad + 1] = ["B-PERSON"] + ["I-PERSON"] * (pad - start - 1) + ["L-PERSON"]
    ids = [tagger.labels.index(t) for t in tags]
    spans = tagger.spans_from_tags(doc, ids)
    assert [(s.text, s.label_) for s in spans] == [("Anna Bujons Tur", "PERSON")]
    # an entity that is nothing but whitespace disappears
    only_space = ["O"] * len(doc)
    only_space[pad] = "U-PERSON"
    assert tagger.spans_from_tags(doc, [tagger.labels.index(t) for t in only_space]) == []


def test_o_bias_turns_unsure_tokens_into_phi():
    tagger = _tagger()
    n_tags = len(tagger.labels)
    probs = numpy.full((5, n_tags), 0.3 / (n_tags - 1), dtype="float32")
    probs[:, tagger.labels.index(OUTSIDE)] = 0.7  # every token "probably safe"
    probs[2, tagger.labels.index("U-PERSON")] = 0.25
    assert all(tagger.labels[i] == OUTSIDE for i in tagger.decode(probs))
    assert tagger.labels[tagger.decode(probs, o_bias=2.0)[2]] == "U-PERSON"
    counts = [sum(tagger.labels[i] != OUTSIDE for i in tagger.decode(probs, o_bias=b)) for b in (0.0, 1.5, 3.0, 6.0)]
    assert counts == sorted(counts) and counts[-1] == 5


def _token_recall(nlp, records) -> float:
    from deid_factory.evaluate import leak_scores

    texts = [r.text for r in records]
    gold = [[(s.start, s.end, s.label) for s in r.spans] for r in records]
    pred = [[(e.start_char, e.end_char, e.label_) for e in nlp(t).ents] for t in texts]
    return leak_scores(texts, gold, pred)["token_recall"]


def test_tagger_learns():
    """Trained for a few seconds on 50 synthetic notes, it finds most PHI tokens of 10 notes it
    never saw; untrained, it finds none (the test fails if the tagger learns nothing)."""
    nlp = customize_tokenizer(spacy.blank("es"))
    nlp.add_pipe("deid_tagger")
    examples = [Example(nlp.make_doc(r.text), record_to_doc(nlp, r)) for r in generate_records(50, 3, "es")]
    held_out = list(generate_records(10, 99, "es"))
    optimizer = nlp.initialize(lambda: examples)
    untrained = _token_recall(nlp, held_out)
    rng = random.Random(0)
    for _ in range(10):
        rng.shuffle(examples)
        for i in range(0, len(examples), 8):
            nlp.update(examples[i : i + 8], sgd=optimizer, drop=0.1)
    assert untrained < 0.05
    assert _token_recall(nlp, held_out) > 0.8  # 0.92 when written; an untrained tagger: 0


def test_tagger_round_trips_through_disk(tmp_path):
    pipeline = spacy.blank("es")
    t = pipeline.add_pipe("deid_tagger", config={"o_bias": 1.25})
    t.add_label(OUTSIDE)
    t.add_entity_label("PERSON")
    pipeline.initialize()
    pipeline.to_disk(tmp_path / "p")
    loaded = spacy.load(tmp_path / "p")
    tagger2 = loaded.get_pipe("deid_tagger")
    assert tagger2.labels == t.labels and tagger2.o_bias == 1.25
    assert isinstance(loaded("Paciente estable.").ents, tuple)
