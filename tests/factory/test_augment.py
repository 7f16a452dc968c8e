"""Training noise (factory/augment.py): every augmenter keeps the gold spans exact.

Small invented notes: each transform's output and its span offsets are checked by hand; then every
transform runs on generated notes of two languages under many seeds and its spans are checked
against what the transform may change; then the spaCy side: the reference doc cut by the training
tokenizer, the rendered config's `[corpora.train.augmenter]` resolved and read as spaCy's training
loop reads it, `factory train` with an augmenter config, and the trained model loaded without the
factory."""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys

import pytest

from conftest import spans_of  # tests/ is on sys.path (pyproject's pythonpath)
from deid_factory import augment as A

NOTE = ("Paciente: Lucía Ferrer Gil\nNHC: 4050201\nTel: 600 120 340\nCorreo: lucia.ferrer@correo.es\n"
        "Se avisa a la Dra. Marta Soler, que indica reposo absoluto durante tres semanas por tendinopatía.\n")
PHI = [("Lucía Ferrer Gil", "PERSON"), ("4050201", "ID"), ("600 120 340", "PHONE"),
       ("lucia.ferrer@correo.es", "EMAIL"), ("Marta Soler", "PERSON")]


def phi_spans(text: str, phi=PHI) -> list[tuple[int, int, str]]:
    return spans_of(text, phi)


class Always:
    """An rng that takes every chance (random() = 0) and the low end of every range."""

    def __init__(self, value: float = 0.0):
        self.value = value

    def random(self) -> float:
        return self.value

    def randint(self, a: int, b: int) -> int:
        return a

    def choice(self, seq):
        return seq[0]


def texts(text, spans):
    return [text[s:e] for s, e, _ in spans]


# --------------------------------------------------------------------------- Rewrite


def test_rewrite_moves_spans_with_their_characters():
    text = "ab CD ef"
    rw = A.Rewrite(text)
    rw.insert(3, "<")      # at the span's start: outside it
    rw.insert(4, " ")      # inside: the span grows
    rw.insert(5, ">")      # at its end: outside
    rw.replace(0, "")      # a deletion before it shifts it left
    rw.replace(7, "FF")    # after it: no effect on it
    new, spans = rw.apply([(3, 5, "X")])
    assert new == "b <C D> eFF"
    assert texts(new, spans) == ["C D"]
    rw = A.Rewrite("xy")
    rw.insert(2, "!")      # at the very end
    assert rw.apply([(0, 2, "X")]) == ("xy!", [(0, 2, "X")])


def test_spans_ok_rejects_what_a_reference_doc_cannot_take():
    assert A.spans_ok("ab cd", [(0, 2, "X"), (3, 5, "Y")])
    assert not A.spans_ok("ab cd", [(0, 3, "X")])          # ends on a space
    assert not A.spans_ok("ab cd", [(2, 2, "X")])          # empty
    assert not A.spans_ok("ab cd", [(0, 4, "X"), (3, 5, "Y")])  # overlap
    assert not A.spans_ok("ab cd", [(3, 9, "X")])          # past the end


# --------------------------------------------------------------------------- each transform, by hand


def test_scan_spacing_spaces_digits_reads_zeros_as_o_and_opens_emails():
    new, spans = A.scan_spacing(NOTE, phi_spans(NOTE), Always())
    assert texts(new, spans) == ["Lucía  Ferrer  Gil", "4 O 5 O 2 O 1", "6 O O   1 2 O   3 4 O",
                                 "lucia . ferrer @ correo . es", "Marta  Soler"]
    # a space before punctuation that ends a word, never inside the name: "Soler ," (the span ends at "r")
    assert "Marta  Soler ," in new and "NHC :" in new
    # nothing but spaces and O-for-0 changed
    assert re.sub(r"\s", "", new).replace("O", "0") == re.sub(r"\s", "", NOTE).replace("O", "0")
    assert A.scan_spacing(NOTE, phi_spans(NOTE), Always(0.99)) == (NOTE, phi_spans(NOTE))
    # numbers outside PHI are spaced and read alike: spacing is no sign of PHI
    note = NOTE.replace("tres semanas", "21 días con 1,5 g de paracetamol")
    new, spans = A.scan_spacing(note, phi_spans(note), Always())
    assert "2 1  días  con  1 , 5  g" in new and texts(new, spans)[1] == "4 O 5 O 2 O 1"


def test_broken_lines_break_sentences_and_fields_outside_phi():
    new, spans = A.broken_lines(NOTE, phi_spans(NOTE), Always())
    assert len(new) == len(NOTE) and spans == phi_spans(NOTE)  # spaces became line breaks, one for one
    assert new.startswith("Paciente:\nLucía Ferrer Gil\nNHC:\n4050201\n")  # field label / value
    assert all(len(line) <= 30 + 12 for line in new.split("\n"))  # wrapped at the drawn width (30)
    assert "reposo\nabsoluto" in new or "absoluto\ndurante" in new  # a sentence broken in the middle
    assert all("\n" not in t for t in texts(new, spans))  # PHI never broken
    # a long plain word at the break is hyphenated: "-\n" inserted, spans moved after it
    long_note = "Informe: " + "x" * 3 + " tendinopatía crónica " * 3 + "Ana Gil"
    ann = [(long_note.index("Ana Gil"), len(long_note), "PERSON")]
    new, spans = A.broken_lines(long_note, ann, Always(), min_width=14, max_width=14)
    assert "-\n" in new and texts(new, spans) == ["Ana Gil"]
    assert new.replace("-\n", "").replace("\n", " ") == long_note


def test_header_prose_runs_fields_into_a_sentence():
    new, spans = A.header_prose(NOTE, phi_spans(NOTE), Always())
    assert new.startswith("paciente Lucía Ferrer Gil, nhc 4050201, tel 600 120 340, correo lucia.ferrer@correo.es\nSe avisa")
    assert texts(new, spans) == [p for p, _ in PHI]
    # a label holding a digit or no PHI after the colon is not a header field
    note = "Control 2: estable\nDiagnóstico: gota\nMédico: Ana Gil"
    new, spans = A.header_prose(note, [(note.index("Ana"), len(note), "PERSON")], Always())
    assert new == "Control 2: estable\nDiagnóstico: gota\nmédico Ana Gil" and texts(new, spans) == ["Ana Gil"]


def test_name_lists_write_initials_capitals_and_a_staff_list():
    new, spans = A.name_lists(NOTE, phi_spans(NOTE), Always())
    assert texts(new, spans) == ["L. FERRER GIL", "4050201", "600 120 340", "lucia.ferrer@correo.es", "M. SOLER",
                                 "L. FERRER GIL", "M. SOLER"]
    assert new.endswith("\nL. FERRER GIL M. SOLER")  # the team list: names separated by spaces only
    assert [label for *_, label in spans[-2:]] == ["PERSON", "PERSON"]
    # hyphenated and double given names
    note = "Firmado: Jean-Pierre Martin y José Ramón Nadal Cortina."
    phi = [("Jean-Pierre Martin", "PERSON"), ("José Ramón Nadal Cortina", "PERSON")]
    new, spans = A.name_lists(note, phi_spans(note, phi), Always(), upper_surname=0.0, staff_list=0.0)
    assert texts(new, spans) == ["J.-P. Martin", "J.R. Nadal Cortina"]
    # a one-word name or a name in lower case stays
    note = "Avisa a Pilar y a ana gil."
    phi = [("Pilar", "PERSON"), ("ana gil", "PERSON")]
    assert A.name_lists(note, phi_spans(note, phi), Always()) == (note, phi_spans(note, phi))


def test_lower_names_lowers_the_name_and_its_title():
    note = "Se avisa a la Dra. Marta Soler por el dolor.\nVisto por Dr. Pau Gil"
    phi = [("Marta Soler", "PERSON"), ("Pau Gil", "PERSON")]
    new, spans = A.lower_names(note, phi_spans(note, phi), Always(), whole_line=0.0)
    assert new == "Se avisa a la dra. marta soler por el dolor.\nVisto por dr. pau gil"
    assert texts(new, spans) == ["marta soler", "pau gil"]
    new, spans = A.lower_names(note, phi_spans(note, phi), Always())  # whole lines
    assert new == note.lower() and texts(new, spans) == ["marta soler", "pau gil"]
    # a character whose lower case is two characters stays: offsets never move
    note = "Visto por İlker Gil hoy"
    new, spans = A.lower_names(note, phi_spans(note, [("İlker Gil", "PERSON")]), Always(), whole_line=0.0)
    assert texts(new, spans) == ["İlker gil"] and len(new) == len(note)


# --------------------------------------------------------------------------- every transform, many notes


@pytest.fixture(scope="module")
def generated_notes():
    from deid_factory.readers import read_corpus

    notes = []
    for lang in ("es", "fr"):
        for r in read_corpus(None, "synth", lang=lang, n=20, seed=5):
            notes.append((r.text, [(s.start, s.end, s.label) for s in r.spans]))
    return notes


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


@pytest.mark.parametrize("name", sorted(A.TRANSFORMS))
def test_every_transform_keeps_spans_on_their_phi(name, generated_notes):
    """Under 5 seeds per note: spans stay valid, keep their labels and order, and hold exactly the
    PHI text as the transform may have changed it (and nothing else changed where it may not)."""
    transform = A.TRANSFORMS[name]
    changed = 0
    for k, (text, spans) in enumerate(generated_notes):
        for seed in range(5):
            new, new_spans = transform(text, spans, random.Random(1000 * k + seed))
            changed += new != text
            assert A.spans_ok(new, new_spans), (name, k, seed)
            assert [lab for *_, lab in new_spans[:len(spans)]] == [lab for *_, lab in spans]
            old_phi, new_phi = texts(text, spans), texts(new, new_spans[:len(spans)])
            if name == "deid.scan_spacing.v1":
                assert [_squash(p).replace("0", "O") for p in new_phi] == [_squash(p).replace("0", "O") for p in old_phi]
                assert _squash(new).replace("0", "O") == _squash(text).replace("0", "O")
            elif name == "deid.broken_lines.v1":
                assert new_phi == old_phi
                # spaces became line breaks; a hyphenation adds "-\n" inside a word
                assert _squash(new).replace("-", "") == _squash(text).replace("-", "")
            elif name == "deid.header_prose.v1":  # colons gone, labels lower-cased, lines joined by commas
                assert new_phi == old_phi
                assert re.sub(r"[\s,:]", "", new).lower() == re.sub(r"[\s,:]", "", text).lower()
            elif name == "deid.name_lists.v1":
                for (s, e, lab), old, cur in zip(spans, old_phi, new_phi):
                    if old != cur:  # initials + the rest of the name, maybe in capitals
                        assert lab == "PERSON" and cur[0] == old[0].upper() and cur[1] == "."
                        assert old.split()[-1].upper() == cur.split()[-1].upper()
                assert all(lab == "PERSON" for *_, lab in new_spans[len(spans):])
            elif name == "deid.lower_names.v1":
                assert len(new) == len(text) and new.lower() == text.lower() and new_spans == spans
    assert changed > len(generated_notes)  # the transforms do change notes


# --------------------------------------------------------------------------- spaCy: examples, config, training


@pytest.fixture(scope="module")
def nlp_es():
    from deid_runtime.tokenization import blank

    return blank("es")


def _example(nlp, text, spans):
    from spacy.training import Example

    doc = nlp.make_doc(text)
    doc.ents = [doc.char_span(s, e, label=lab) for s, e, lab in spans]
    return Example(nlp.make_doc(text), doc)


def test_augmented_example_is_cut_by_the_training_tokenizer_with_exact_entities(nlp_es):
    example = _example(nlp_es, NOTE, phi_spans(NOTE))
    out = A.augment_example(nlp_es, example, A.scan_spacing, Always())
    assert out is not example and out.predicted.text == out.reference.text
    assert [(e.text, e.label_) for e in out.reference.ents] == [
        ("Lucía  Ferrer  Gil", "PERSON"), ("4 O 5 O 2 O 1", "ID"), ("6 O O   1 2 O   3 4 O", "PHONE"),
        ("lucia . ferrer @ correo . es", "EMAIL"), ("Marta  Soler", "PERSON")]
    assert [t.text for t in out.reference[:4]] == [t.text for t in nlp_es.make_doc(out.reference.text)[:4]]
    assert all(t.ent_iob_ in ("B", "I", "O") for t in out.reference)  # every token annotated


def test_an_inexact_augmentation_leaves_the_example_as_it_was(nlp_es):
    example = _example(nlp_es, NOTE, phi_spans(NOTE))

    def off_tokens(text, spans, rng):  # a span that starts inside a word: not on token boundaries
        return "X" + text, [(s + 2, e + 1, lab) for s, e, lab in spans]

    def onto_space(text, spans, rng):  # a span that would end on whitespace
        return text + " ", [(s, e + 1, lab) if k == 0 else (s, e, lab) for k, (s, e, lab) in enumerate(spans)]

    assert A.augment_example(nlp_es, example, off_tokens, Always()) is example
    assert A.augment_example(nlp_es, example, onto_space, Always()) is example


# in this order: initials and the staff list, then the scan, then all in lower case
AUGMENTERS = {"deid.name_lists.v1": {"level": 1.0}, "deid.scan_spacing.v1": {"level": 1.0},
              "spacy.lower_case.v1": {"level": 1.0}}


def test_rendered_config_chains_the_augmenters_in_the_training_corpus(tmp_path, nlp_es):
    """The config rendered with augmenters is read as spaCy's training loop reads it: every
    example of the train corpus comes out with initials and a staff list, scanned, in lower case,
    its entities on the changed PHI; the dev corpus is not augmented; with no augmenters the
    config says null."""
    from spacy.tokens import DocBin
    from spacy.util import dot_to_object, load_config_from_str, registry

    from deid_factory.render import render_config

    assert "augmenter = null" in render_config("es").split("[corpora.train]")[1].split("[training]")[0]
    db = DocBin()
    for _ in range(20):
        db.add(_example(nlp_es, NOTE, phi_spans(NOTE)).reference)
    db.to_disk(tmp_path / "train.spacy")
    cfg = load_config_from_str(render_config("es", augmenters=AUGMENTERS),
                               overrides={"paths.train": str(tmp_path / "train.spacy"),
                                          "paths.dev": str(tmp_path / "train.spacy")}, interpolate=True)
    assert cfg["corpora"]["dev"]["augmenter"] is None
    train = registry.resolve({"c": dot_to_object(cfg, "corpora.train")})["c"]
    random.seed(0)
    examples = list(train(nlp_es))
    ids, firsts, listed = set(), set(), 0
    for example in examples:
        assert example.reference.text == example.predicted.text == example.reference.text.lower()
        ents = [(_squash(e.text), e.label_) for e in example.reference.ents]
        assert [label for _, label in ents[:5]] == ["PERSON", "ID", "PHONE", "EMAIL", "PERSON"]
        assert ents[0][0] in ("l.ferrergil", "lucíaferrergil") and ents[4][0] in ("m.soler", "martasoler")
        assert ents[1][0] in ("4050201", "4o5o2o1") and ents[3][0] == "lucia.ferrer@correo.es"
        if len(ents) > 5:  # the staff list ends the note: the short forms, as PERSON
            assert ents[5:] == [("l.ferrergil", "PERSON"), ("m.soler", "PERSON")]
            assert example.reference.text.rstrip().endswith(example.reference.ents[-1].text)
            listed += 1
        ids.add(example.reference.ents[1].text)
        firsts.add(ents[0][0])
    assert 0 < listed < len(examples) and firsts == {"l.ferrergil", "lucíaferrergil"}
    assert "4 o 5 o 2 o 1" in ids and "4 0 5 0 2 0 1" in ids  # zeros read as O in some notes, not all


def test_factory_train_finds_the_augmenters_and_the_model_loads_without_them(tmp_path, train_corpus):
    """`factory train` (its own process: nothing imported the augmenters before it) registers the
    factory's augmenters before spaCy reads the config; the trained model names them in its config
    ([corpora]), which spacy.load does not resolve, so a process with only spaCy and deid_runtime
    loads and runs it."""
    from deid_factory.render import render_config

    config = tmp_path / "config.cfg"
    config.write_text(render_config("es", augmenters={name: {"level": 0.5} for name in A.TRANSFORMS}), encoding="utf-8")
    run = subprocess.run([sys.executable, "-m", "deid_factory", "train", str(train_corpus / "train.spacy"),
                          str(train_corpus / "dev.spacy"), "--config", str(config), "--out", str(tmp_path / "out"),
                          "--max-epochs", "1", "--patience", "1", "--seed", "0"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]
    assert json.loads((tmp_path / "out" / "train_summary.json").read_text())["epochs_run"] == 1
    saved = (tmp_path / "out" / "model-best" / "config.cfg").read_text(encoding="utf-8")
    assert '@augmenters = "deid.scan_spacing.v1"' in saved
    code = ("import sys, spacy; nlp = spacy.load(sys.argv[1]); nlp('Paciente: Ana Gil, NHC 123.'); "
            "assert not any(m.startswith('deid_factory') for m in sys.modules), 'factory imported'; print('ok')")
    run = subprocess.run([sys.executable, "-c", code, str(tmp_path / "out" / "model-best")], capture_output=True, text=True)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr[-2000:]
