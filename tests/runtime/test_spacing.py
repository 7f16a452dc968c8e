"""deid_spacing: the NER reads a note of double spaces as if single-spaced, offsets unchanged."""

import spacy

from deid_runtime.spacing import without_blanks


def _pipeline(with_spacing: bool):
    # a real NER stand-in that, like the trained network, only knows names written single-spaced:
    # an entity ruler whose token patterns have no blank token between the words
    nlp = spacy.blank("es")
    ruler = nlp.add_pipe("entity_ruler")
    ruler.add_patterns([{"label": "PERSON", "pattern": [{"TEXT": "Mohamed"}, {"TEXT": "El"}, {"TEXT": "Amrani"}]},
                        {"label": "AGE", "pattern": [{"LIKE_NUM": True}, {"LOWER": "años"}]},
                        {"label": "PERSON", "pattern": [{"TEXT": "Ana"}]}])
    if with_spacing:
        nlp.add_pipe("deid_spacing", config={"tok2vec": "tok2vec", "ner": "entity_ruler"})
    return nlp


def test_a_double_spaced_note_is_read_single_spaced_and_offsets_stay():
    text = "Paciente:  Mohamed  El  Amrani,  de  49  años.\nHermana:   Ana"
    plain = _pipeline(False)(text)
    assert [e.text for e in plain.ents] == ["Ana"]  # the blank tokens cut every pattern but one
    doc = _pipeline(True)(text)
    assert [(e.text, e.label_) for e in doc.ents] == [("Mohamed  El  Amrani", "PERSON"), ("49  años", "AGE"), ("Ana", "PERSON")]
    assert doc.text == text and all(text[e.start_char:e.end_char] == e.text for e in doc.ents)


def test_what_only_the_first_reading_found_is_kept_and_single_spaced_notes_are_untouched():
    nlp = _pipeline(True)
    ruler = nlp.get_pipe("entity_ruler")
    # a pattern that only matches the double-spaced form: found by the first reading alone
    ruler.add_patterns([{"label": "ID", "pattern": [{"TEXT": "AB"}, {"IS_SPACE": True}, {"TEXT": "12"}]}])
    doc = nlp("Código AB  12 y Ana")
    assert ("AB  12", "ID") in [(e.text, e.label_) for e in doc.ents]
    assert without_blanks(nlp.make_doc("Mohamed El Amrani, 49 años")) is None
    # longer runs and tabs separate columns: they stay for the second reading
    copy, kept = without_blanks(nlp.make_doc("Nombre: Ana   Edad:  49"))
    assert copy.text == "Nombre: Ana   Edad: 49" and len(kept) == len(copy)
