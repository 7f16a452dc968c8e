"""deid_merger: resolution rules between NER entities and regex pack matches, on real Docs."""

import spacy
from spacy.tokens import Span

from conftest import CHECKOUT  # tests/ is on sys.path (pyproject's pythonpath)
from deid_runtime.merger import DEFAULT_NER_FIRST, DEFAULT_STRUCTURED, DeidMerger


def _doc(text, ner, regex):
    """ner: [(start_tok, end_tok, label)], regex: [(start_tok, end_tok, label, score)]."""
    nlp = spacy.blank("es")
    doc = nlp(text)
    doc.ents = [Span(doc, s, e, label=lab) for s, e, lab in ner]
    spans = []
    for s, e, lab, score in regex:
        span = Span(doc, s, e, label=lab)
        span._.deid_score = score
        span._.deid_source = "regex"
        spans.append(span)
    doc.spans["deid_regex"] = spans
    return doc


def _merge(doc, title_letters=()):
    # the resolution rules alone: the plausibility checks have their own tests (the end of this file)
    return DeidMerger("deid_merger", "deid_regex", "deid_ner", "deid", DEFAULT_STRUCTURED, DEFAULT_NER_FIRST,
                      title_letters=list(title_letters), plausibility_checks=False)(doc)


def test_validated_regex_beats_ner_on_a_structured_label():
    #        0        1   2         3
    doc = _doc("Paciente con 12345678Z hoy", ner=[(2, 3, "PERSON")], regex=[(2, 3, "ID", 0.95)])
    out = _merge(doc)
    assert [(e.start, e.end, e.label_) for e in out.ents] == [(2, 3, "ID")]
    assert out.ents[0]._.deid_source == "regex" and out.ents[0]._.deid_validated
    # the NER view is kept for evaluation
    assert [(s.label_) for s in out.spans["deid_ner"]] == ["PERSON"]


def test_ner_wins_for_names_over_unvalidated_patterns():
    doc = _doc("Vino Mayo Pérez ayer", ner=[(1, 3, "PERSON")], regex=[(1, 2, "DATE", 0.8)])
    out = _merge(doc)
    assert [(e.start, e.end, e.label_) for e in out.ents] == [(1, 3, "PERSON")]
    # unvalidated structured regex beats an NER guess of a non-name label
    doc = _doc("Tel 600 123 456 ok", ner=[(1, 3, "ID")], regex=[(1, 4, "PHONE", 0.8)])
    assert [(e.start, e.end, e.label_) for e in _merge(doc).ents] == [(1, 4, "PHONE")]


def test_same_label_overlaps_become_their_union_and_disjoint_spans_stay():
    doc = _doc("el 12 de marzo de 2020 en Lugo", ner=[(1, 4, "DATE"), (7, 8, "LOCATION")],
               regex=[(3, 6, "DATE", 0.8)])
    out = _merge(doc)
    assert [(e.start, e.end, e.label_) for e in out.ents] == [(1, 6, "DATE"), (7, 8, "LOCATION")]
    assert out.ents[0]._.deid_source == "ner+regex"
    assert [s.label_ for s in out.spans["deid"]] == ["DATE", "LOCATION"]


def test_non_canonical_ner_labels_are_dropped():
    doc = _doc("Ana vive aquí", ner=[(0, 1, "MISC")], regex=[])
    assert list(_merge(doc).ents) == []


def test_factory_in_a_pipeline_with_the_regex_pack():
    from deid_runtime.regex_pack import RegexPack

    nlp = spacy.blank("es")
    comp = nlp.add_pipe("deid_regex_pack", config={"write_ents": False})
    comp.pack = RegexPack.from_dir(CHECKOUT / "regex_packs" / "es")
    nlp.add_pipe("deid_merger")
    doc = nlp("Correo: ana.perez@hospital.es, DNI 12345678Z.")
    labels = {e.label_ for e in doc.ents}
    assert {"EMAIL", "ID"} <= labels
    assert all(e._.deid_source == "regex" for e in doc.ents)


def test_check_digits_not_score_decide_what_beats_the_ner():
    """With the pack in the pipeline, a DNI whose letter is right beats an NER name on the same
    tokens; a labelled number whose check fails (a generic ID) does not beat an NER organisation."""
    from deid_runtime.regex_pack import RegexPack

    nlp = spacy.blank("es")

    @spacy.Language.component("fake_ner_over_ids")
    def fake_ner(doc):
        doc.ents = [Span(doc, i, i + 1, label="PERSON" if t.text == "12345678Z" else "ORGANIZATION")
                    for i, t in enumerate(doc) if t.text in ("12345678Z", "12345678A")]
        return doc

    nlp.add_pipe("fake_ner_over_ids")
    comp = nlp.add_pipe("deid_regex_pack", config={"write_ents": False})
    comp.pack = RegexPack.from_dir(CHECKOUT / "regex_packs" / "es")
    nlp.add_pipe("deid_merger")
    doc = nlp("DNI: 12345678Z y DNI: 12345678A hoy")
    final = {e.text: (e.label_, e._.deid_validated) for e in doc.ents}
    assert final["12345678Z"] == ("ID", True)
    # the NER's label won the conflict (no check digits to beat it), and an 8-digit code taken for an
    # organisation is then written as an identifier (apply_conventions)
    assert final["12345678A"] == ("ID", False) and [e._.deid_source for e in doc.ents] == ["regex", "ner"]


def test_ner_spans_are_cut_at_line_breaks():
    #          0    1      2   3   4     5      6
    doc = _doc("Ana Bujons Tur \nCalle Mayor 5", ner=[(0, 6, "PERSON")], regex=[])
    assert [t.text for t in doc][3] == "\n"
    merged = _merge(doc)
    assert [(e.text, e.label_) for e in merged.ents] == [("Ana Bujons Tur", "PERSON"), ("Calle Mayor", "PERSON")]


def test_a_loser_keeps_the_tokens_the_winner_does_not_cover():
    """Fail closed: a higher-priority span that only partly overlaps a lower one wins the overlap,
    and the rest of the loser stays PHI under its own label; nothing a detector flagged leaks."""
    #          0        1         2   3   4   5
    doc = _doc("Calle Teléfono 612 345 678 hoy", ner=[(0, 3, "LOCATION")], regex=[(2, 5, "PHONE", 0.8)])
    out = _merge(doc)
    assert [(e.start, e.end, e.label_) for e in out.ents] == [(0, 3, "LOCATION"), (3, 5, "PHONE")]
    # a loser inside the winner leaves nothing; one that sticks out on both sides keeps both ends
    doc = _doc("a b c d e f", ner=[(1, 5, "PERSON")], regex=[(2, 3, "DATE", 0.8)])
    assert [(e.start, e.end, e.label_) for e in _merge(doc).ents] == [(1, 5, "PERSON")]
    doc = _doc("a b c d e f", ner=[(2, 3, "PERSON")], regex=[(1, 5, "ID", 0.8)])
    assert [(e.start, e.end, e.label_) for e in _merge(doc).ents] == [(1, 2, "ID"), (2, 3, "PERSON"), (3, 5, "ID")]


def _merge_text(text, lang, ner_words, titles_of=None):
    """Merge NER spans given as (word, label) over the runtime tokenizer's tokens of `text`, with the
    one-letter titles of the locale `titles_of` (default `lang`), as assembly configures the merger."""
    from deid_factory.locale import Locale
    from deid_runtime.tokenization import blank as phi_blank

    doc = phi_blank(lang)(text)
    ents = []
    for word, label in ner_words:
        start = text.index(word)
        ents.append(doc.char_span(start, start + len(word), label=label, alignment_mode="strict"))
    doc.ents = ents
    doc.spans["deid_regex"] = []
    return [(e.text, e.label_) for e in _merge(doc, Locale.load(titles_of or lang).title_letters).ents]


def test_a_name_span_takes_the_rest_of_a_hyphenated_word():
    """The tokenizer splits "Perros-Guirec" at the hyphen and the NER may tag one piece only: a
    place, person, organisation or street is never half a hyphenated word."""
    assert _merge_text("Née à Perros-Guirec le 3 mars", "fr", [("Perros", "LOCATION")]) == [("Perros-Guirec", "LOCATION")]
    assert _merge_text("domiciliée à Tain-l'Hermitage.", "fr", [("Hermitage", "LOCATION"), ("Tain", "LOCATION")]) == \
        [("Tain-l'Hermitage", "LOCATION")]
    assert _merge_text("Institut Paoli-Calmettes – Marseille", "fr", [("Institut Paoli", "ORGANIZATION")]) == \
        [("Institut Paoli-Calmettes", "ORGANIZATION")]
    assert _merge_text("vue par Marie Dupont-Aignan", "fr", [("Marie Dupont", "PERSON")]) == [("Marie Dupont-Aignan", "PERSON")]
    # a dash between words (spaces around it) is not a hyphen inside a word, and dates are left alone
    assert _merge_text("Lyon - Villeurbanne", "fr", [("Lyon", "LOCATION")]) == [("Lyon", "LOCATION")]
    assert _merge_text("du 12-14 mars", "fr", [("14 mars", "DATE")]) == [("14 mars", "DATE")]


def test_a_person_span_takes_the_initials_before_it_but_not_a_courtesy_title():
    assert _merge_text("Dr T. Renaud – RPPS", "fr", [("Renaud", "PERSON")]) == [("T. Renaud", "PERSON")]
    assert _merge_text("Dr M.-A. LE GALL\n", "fr", [("LE GALL", "PERSON")]) == [("M.-A. LE GALL", "PERSON")]
    assert _merge_text("Firmado: Dr. J. García López", "es", [("García López", "PERSON")]) == [("J. García López", "PERSON")]
    # "M." is Monsieur and "D." Don: titles stay outside the span, as the annotation conventions say;
    # they are the locale's (languages/<lc>/surrogate_data/titles.yml): in Spanish "M." is an initial
    assert _merge_text("M. Pennec, 72 ans", "fr", [("Pennec", "PERSON")]) == [("Pennec", "PERSON")]
    assert _merge_text("D. Juan Pérez", "es", [("Juan Pérez", "PERSON")]) == [("Juan Pérez", "PERSON")]
    assert _merge_text("M. Pennec, 72 ans", "fr", [("Pennec", "PERSON")], titles_of="es") == [("M. Pennec", "PERSON")]
    # only PERSON takes initials; a sentence's last letter is not an initial of the next name
    assert _merge_text("groupe B. Lyon", "fr", [("Lyon", "LOCATION")]) == [("Lyon", "LOCATION")]


def test_a_match_the_pack_scores_as_certain_ranks_with_validated_ones():
    """A record number after its label (score 0.95, no check digit) is not cut by an NER name over
    part of it; a plain pattern guess (0.8) still loses to the NER for a name label."""
    #          0  1      2 3             4
    text = "N° examen : CT230917-4411 fin"
    # (at 0.8 the NER span, completed to the whole hyphenated word, wins the label)
    # (the NER's "PERSON" over a 10-digit code is then written as an ID: apply_conventions)
    for score, expected in ((0.95, [("CT230917-4411", "ID", "regex")]), (0.8, [("CT230917-4411", "ID", "ner")])):
        doc = _doc(text, ner=[], regex=[])
        ct = doc.char_span(text.index("CT"), text.index("CT") + 8, alignment_mode="expand")
        whole = doc.char_span(text.index("CT"), text.index(" fin"), alignment_mode="expand")
        doc.ents = [Span(doc, ct.start, ct.end, label="PERSON")]
        span = Span(doc, whole.start, whole.end, label="ID")
        span._.deid_score = score
        doc.spans["deid_regex"] = [span]
        assert [(e.text, e.label_, e._.deid_source) for e in _merge(doc).ents] == expected, score


def test_ner_spans_do_not_start_or_end_with_punctuation_but_keep_partnered_brackets():
    assert _merge_text("CIPA: nhc-272226.\nNASS", "es", [("-272226", "ID")]) == [("272226", "ID")]
    assert _merge_text("Travessera de les Corts, 279 4D.", "es", [(", 279 4D.", "ADDRESS")]) == [("279 4D", "ADDRESS")]
    assert _merge_text("Tel. (+34) 912 345 678 fin", "es", [("(+34) 912 345 678", "PHONE")]) == [("(+34) 912 345 678", "PHONE")]


# ----------------------------------------------------------------------------- clinical facts (issue 25)
def _with_facts(text, ner, lang="es"):
    """text through a blank pipeline with the locale's real pack (and its clinical lexicon) and the
    merger, the NER's entities given as (substring, label); the final (text, label) entities."""
    from deid_runtime.regex_pack import RegexPack

    nlp = spacy.blank(lang)
    nlp.add_pipe("deid_regex_pack", config={"write_ents": False}).pack = RegexPack.from_dir(CHECKOUT / "regex_packs" / lang)
    nlp.add_pipe("deid_merger")
    doc = nlp.make_doc(text)
    ents = []
    for value, label in ner:
        start = text.index(value)
        ents.append(doc.char_span(start, start + len(value), label=label, alignment_mode="expand"))
    doc.ents = ents
    for _, component in nlp.pipeline:
        doc = component(doc)
    return [(e.text, e.label_) for e in doc.ents]


def test_no_candidate_of_any_label_keeps_a_dose_a_unit_or_a_drug():
    """Issue 25's note: at --recall-bias high the NER took "mg/24h" for a PROFESSION, "40 mg/12h"
    for an AGE and "AAS" for an ORGANIZATION; surrogate mode then wrote "furosemida 41 mg/14h"."""
    text = "Tratamiento: enalapril 10 mg/24h, furosemida 40 mg/12h, AAS 100 mg. Hb 13,2 g/dl, plaquetas 245.000."
    ner = [("mg/24h", "PROFESSION"), ("40 mg/12h", "AGE"), ("AAS", "ORGANIZATION"), ("13,2 g/dl", "DATE"),
           ("245.000", "PHONE"), ("enalapril", "PERSON")]
    assert _with_facts(text, ner) == []


def test_a_name_next_to_a_dose_is_still_a_name():
    text = "Se cita en 3 meses con el Dr. Ferrández 40 mg. Acude con su hijo Andrés enalapril."
    ner = [("en 3 meses", "DATE"), ("Ferrández 40 mg", "PERSON"), ("Andrés enalapril", "PERSON")]
    assert _with_facts(text, ner) == [("Ferrández", "PERSON"), ("Andrés", "PERSON")]


def test_a_piece_of_stop_words_or_punctuation_left_by_a_fact_is_dropped():
    text = "Toma 10 mg de enalapril cada 8 horas."
    assert _with_facts(text, [("10 mg de enalapril cada 8 horas", "PERSON")]) == []


def test_pack_dates_and_validated_identifiers_stay_phi_over_a_fact():
    """The exemptions: a date the pack's patterns found and a pack match with valid check digits are
    PHI even where a clinical fact is marked (here marked by hand over their tokens); the same tokens
    as NER spans are not."""
    nlp = spacy.blank("es")
    text = "Cita 12/03/2021 y DNI 12345678 Z hoy"
    for label, value, validated, source, kept in [("DATE", "12/03/2021", False, "regex", True),
                                                  ("ID", "12345678 Z", True, "regex", True),
                                                  ("DATE", "12/03/2021", False, "ner", False),
                                                  ("ID", "12345678 Z", False, "regex", False)]:
        doc = nlp(text)
        span = doc.char_span(text.index(value), text.index(value) + len(value), label=label)
        doc.spans["deid_clinical"] = [Span(doc, span.start, span.end, label="quantity")]
        if source == "ner":
            doc.ents = [span]
            doc.spans["deid_regex"] = []
        else:
            span._.deid_validated, span._.deid_score, span._.deid_source = validated, 0.8, "regex"
            doc.spans["deid_regex"] = [span]
        out = [(e.text, e.label_) for e in _merge(doc).ents]
        assert out == ([(value, label)] if kept else []), (label, source, validated)


def test_the_pack_alone_keeps_its_matches_out_of_facts():
    """Without a merger (write_ents=True, the router's union fallback), the pack component leaves
    out its own matches that overlap a fact: "plaquetas 912.000.000" is no phone."""
    from deid_runtime.regex_pack import RegexPack

    nlp = spacy.blank("es")
    nlp.add_pipe("deid_regex_pack").pack = RegexPack.from_dir(CHECKOUT / "regex_packs" / "es")
    doc = nlp("Control: plaquetas 912 345 678, teléfono 912 345 678.")
    assert [(e.text, e.label_) for e in doc.ents] == [("912 345 678", "PHONE")]
    assert doc.ents[0].start_char == doc.text.index("teléfono") + len("teléfono ")


# ---------------------------------------------------------------------- spans that cannot be their label (issue 27)
def _merged(text, ner, **settings):
    """The es merger with `settings` over NER spans alone; the es pack is loaded first, which
    registers its rules' date words and its clinical lexicon (the units of measure)."""
    from deid_runtime.regex_pack import RegexPack

    RegexPack.from_dir(CHECKOUT / "regex_packs" / "es")
    doc = _doc(text, ner=ner, regex=[])
    merger = DeidMerger("deid_merger", "deid_regex", "deid_ner", "deid", DEFAULT_STRUCTURED, DEFAULT_NER_FIRST,
                        **settings)
    return [(e.text, e.label_) for e in merger(doc).ents]


def _checked(text, ner, checks=True):
    return _merged(text, ner, plausibility_checks=checks)


def test_a_person_loses_the_verbs_and_function_words_it_ends_with():
    #              0     1      2        3  4          5
    text = "Lucía García Martínez le acompañan hoy"
    assert _checked(text, [(0, 5, "PERSON")]) == [("Lucía García Martínez", "PERSON")]
    assert _checked(text, [(0, 5, "PERSON")], checks=False) == [("Lucía García Martínez le acompañan", "PERSON")]


def test_a_person_that_is_a_number_is_an_identifier_and_its_digits_stay_phi():
    #       0    1        2
    text = "Cita 28034567 García"
    assert _checked(text, [(1, 2, "PERSON")]) == [("28034567", "ID")]
    assert _checked(text, [(1, 3, "PERSON")]) == [("28034567", "ID"), ("García", "PERSON")]


def test_a_date_with_no_date_token_is_dropped():
    #       0      1      2  3    4
    text = "Vuelve mañana el 3 de marzo"
    assert _checked(text, [(1, 2, "DATE"), (3, 6, "DATE")]) == [("3 de marzo", "DATE")]
    assert _checked("ingresó el tres de marzo", [(2, 5, "DATE")]) == [("tres de marzo", "DATE")]


# ------------------------------------------------------------------ annotation conventions (apply_conventions)
def _tok(doc, text, occurrence=0):
    """(start, end) token range of the `occurrence`-th `text` in the doc."""
    at = -1
    for _ in range(occurrence + 1):
        at = doc.text.index(text, at + 1)
    span = doc.char_span(at, at + len(text))
    assert span is not None, text
    return span.start, span.end


def _ents_of(text, ner, lang="fr", **config):
    nlp = spacy.blank(lang)
    doc = nlp(text)
    doc.ents = [Span(doc, *_tok(doc, t, *more), label=lab) for t, lab, *more in ner]
    doc.spans["deid_regex"] = []
    merger = DeidMerger("deid_merger", "deid_regex", "deid_ner", "deid", DEFAULT_STRUCTURED, DEFAULT_NER_FIRST, **config)
    return [(e.text, e.label_) for e in merger(doc).ents]


def test_a_persons_titles_stay_outside_its_span():
    """The NER of deid_fr took "M." into 12 PERSON spans of the French independent notes: every
    corpus leaves the title out. The titles are the locale's (assembly writes them into the config)."""
    titles = ["M.", "Mme", "Dr", "Dr.", "Pr", "Monsieur"]
    text = "Vu M. Chassagne Bernard puis Mme LE GOFF, avec le Dr. Y. Roux et Monsieur Dupont. M. seul."
    ner = [("M. Chassagne Bernard", "PERSON"), ("Mme LE GOFF", "PERSON"), ("Dr. Y. Roux", "PERSON"),
           ("Monsieur Dupont", "PERSON"), ("M.", "PERSON", 1)]
    assert _ents_of(text, ner, titles=titles) == [("Chassagne Bernard", "PERSON"), ("LE GOFF", "PERSON"), ("Y. Roux", "PERSON"),
                                                  ("Dupont", "PERSON")]
    # without the locale's titles nothing is cut (a name is never shortened by a guess)
    assert ("M. Chassagne Bernard", "PERSON") in _ents_of(text, ner)


def test_a_postcode_on_the_streets_line_is_part_of_the_address():
    text = "Domicile : 23 rue Paul Bert, 69003 Lyon\nCP 69003\n12 rue Haute\n75011 Paris"
    ner = [("23 rue Paul Bert", "ADDRESS"), ("69003", "LOCATION"), ("Lyon", "LOCATION"), ("12 rue Haute", "ADDRESS"),
           ("75011", "LOCATION"), ("Paris", "LOCATION")]
    joined = _ents_of(text, ner)
    assert joined[:2] == [("23 rue Paul Bert, 69003", "ADDRESS"), ("Lyon", "LOCATION")]
    # a postcode on the next line stays a place of its own
    assert ("75011", "LOCATION") in joined and ("12 rue Haute", "ADDRESS") in joined
    # MEDDOCAN's convention: the postcode apart
    apart = _ents_of(text, ner, postcode_in_address=False)
    assert ("23 rue Paul Bert", "ADDRESS") in apart and ("69003", "LOCATION") in apart


def test_a_code_taken_for_a_name_or_a_place_is_an_identifier():
    text = "Expediente AT-2024-58821, remitido desde 28041 Madrid por Lucía."
    ner = [("AT-2024-58821", "LOCATION"), ("28041", "LOCATION"), ("Madrid", "LOCATION"), ("Lucía", "PERSON")]
    assert _ents_of(text, ner, lang="es") == [("AT-2024-58821", "ID"), ("28041", "LOCATION"), ("Madrid", "LOCATION"),
                                              ("Lucía", "PERSON")]


def test_an_identifier_leaves_its_number_sign_out():
    text = "Colegiado nº 464617385 y expediente n° 12-334, ficha No 77812."
    ner = [("nº 464617385", "ID"), ("n° 12-334", "ID"), ("No 77812", "ID")]
    assert _ents_of(text, ner, lang="es") == [("464617385", "ID"), ("12-334", "ID"), ("77812", "ID")]


def test_two_dates_of_one_range_are_one_date():
    """"nuit du 21 au 22/06": the independent notes annotate a range as one DATE; the NER and the
    pack find its two ends, and "au" between them was left out (a gold token not covered)."""
    text = "Nuit du 21 au 22/06 : calme. Vu le 3/07, puis le 9/07.\nDu 12\nau 13 avril. Du 02/05/2023 au 09/05/2023."
    ner = [("21", "DATE"), ("22/06", "DATE"), ("3/07", "DATE"), ("9/07", "DATE"), ("12", "DATE"), ("13 avril", "DATE"),
           ("02/05/2023", "DATE"), ("09/05/2023", "DATE")]
    # ", puis le" is no range word; a range runs on one line; two whole dates stay two (as annotated)
    assert _ents_of(text, ner) == [("21 au 22/06", "DATE"), ("3/07", "DATE"), ("9/07", "DATE"), ("12", "DATE"),
                                   ("13 avril", "DATE"), ("02/05/2023", "DATE"), ("09/05/2023", "DATE")]
    assert _ents_of("del 3 al 5 de mayo", [("3", "DATE"), ("5 de mayo", "DATE")], lang="es") == [("3 al 5 de mayo", "DATE")]


def test_conventions_pass_an_empty_candidate_at_the_end_of_the_doc_through():
    """A candidate can be empty after trimming (E040 in a build's evaluation when the joins read the
    token at its start, one past the last)."""
    from deid_runtime.merger import _Candidate, apply_conventions

    doc = spacy.blank("fr")("Du 21 au 22/06.")
    cands = [_Candidate(1, 2, "DATE", "ner", 0.5, False, ""), _Candidate(3, 4, "DATE", "ner", 0.5, False, ""),
             _Candidate(len(doc), len(doc), "DATE", "ner", 0.5, False, "")]
    out = apply_conventions(doc, cands, None, True)
    assert [(doc[c.start:c.end].text, c.label) for c in out] == [("21 au 22/06", "DATE"), ("", "DATE")]


# ---------------------------------------------------------------------- label shapes (issue 27 §3)
def _shaped(text, ner, shape_checks=True):
    return _merged(text, ner, shape_checks=shape_checks)


def test_values_the_ner_took_for_dates_ages_or_phones_are_dropped():
    # a lab count, a reference range, a degree, a dimension, a weight: none is PHI under any label
    #       0       1     2 3 4         5
    text = "leucos 6.740 ( RN 12,0-18,0 )"
    ner = [(1, 2, "DATE"), (4, 5, "PHONE")]
    assert _shaped(text, ner) == []
    assert _shaped(text, ner, shape_checks=False) == [("6.740", "DATE"), ("12,0-18,0", "PHONE")]
    assert _shaped("pannus 360º y lesión de 3x2,5 cm", [(1, 2, "DATE"), (5, 6, "DATE")]) == []
    assert _shaped("Mujer de 78 años , 40 kg de peso", [(2, 4, "AGE"), (5, 7, "AGE")]) == [("78 años", "AGE")]


def test_an_email_needs_an_at_sign_and_lower_case_words_are_no_date():
    #       0           1   2 3     4
    text = "anticuerpos IgA y tenía malestar"
    # lower-case words of no PHI are dropped; a capitalised word keeps its label (it may be a name)
    assert _shaped(text, [(1, 2, "EMAIL"), (3, 5, "EMAIL")]) == [("IgA", "EMAIL")]
    assert _shaped(text, [(3, 5, "AGE")]) == []
    assert _shaped(text, [(3, 5, "AGE")], shape_checks=False) == [("tenía malestar", "AGE")]
    assert _shaped("Escribe a ana@correo.es hoy", [(2, 3, "EMAIL")]) == [("ana@correo.es", "EMAIL")]


def test_dates_ages_and_phones_of_their_shape_stay_and_nothing_flagged_is_let_out():
    assert _shaped("Ingresa el 12.03.2021 con 49 años", [(2, 3, "DATE"), (4, 6, "AGE")]) == [
        ("12.03.2021", "DATE"), ("49 años", "AGE")]
    assert _shaped("visto en marzo de 2019 , tres años", [(2, 5, "DATE"), (6, 8, "AGE")]) == [
        ("marzo de 2019", "DATE"), ("tres años", "AGE")]
    # a house number the NER took for a phone stays PHI, as an identifier; a phone stays a phone
    assert _shaped("Calle Mayor 14 , 6C", [(4, 5, "PHONE")]) == [("6C", "ID")]
    assert _shaped("Tel 600 123 456", [(1, 4, "PHONE")]) == [("600 123 456", "PHONE")]
    # a name's initial the NER took for a date keeps its label: never let out
    assert _shaped("firma D. Verhoeven", [(1, 2, "DATE")]) == [("D.", "DATE")]


def test_an_age_split_by_a_scanned_page_spacing_is_checked_whole():
    #       0   1  2    3
    text = "de 49  años"
    ner = [(1, 2, "AGE"), (3, 4, "AGE")]
    assert _shaped(text, ner) == [("49  años", "AGE")]


class _PassCountingDoc(spacy.tokens.Doc):
    """A Doc that counts the passes over all its tokens: iterations and `doc.text` (which spaCy builds
    anew from every token at each access)."""

    passes = 0

    def __iter__(self):
        type(self).passes += 1
        return super().__iter__()

    @property
    def text(self):
        type(self).passes += 1
        return spacy.tokens.Doc.text.__get__(self)


def _whole_document_passes(segments: int) -> tuple[int, int]:
    """(passes over the whole Doc, entities) of the pack + merger (plausibility checks on: the context
    rules and the clinical lexicon run too) on one text of `segments` copies of a note line."""
    from deid_factory.package import default_pack_dir
    from deid_runtime.regex_pack import RegexPack

    nlp = spacy.blank("es")
    nlp.add_pipe("deid_regex_pack", config={"write_ents": False}).pack = RegexPack.from_dir(default_pack_dir("es"))
    nlp.add_pipe("deid_merger", config={"plausibility_checks": True})
    line = "Acude Marta Soler Vidal, DNI 12345678Z, el 12/03/2020 a Lugo; tel. 600 123 456; paracetamol 1 g. "
    made = nlp.make_doc(line * segments)
    doc = _PassCountingDoc(nlp.vocab, words=[t.text for t in made], spaces=[bool(t.whitespace_) for t in made])
    doc.ents = [Span(doc, t.i, t.i + 3, label="PERSON") for t in doc if t.text == "Marta"]
    _PassCountingDoc.passes = 0
    for _, component in nlp.pipeline:
        doc = component(doc)
    return _PassCountingDoc.passes, len(doc.ents)


def test_pack_and_merger_pass_over_a_long_doc_a_fixed_number_of_times():
    """Work that grows with the candidates times the document is what made a 10 MB note cost 500 CPU
    seconds (docs/redact.md): apply_conventions read doc.text, a join over every token, once per
    candidate. Counted, not timed: four times the candidates, the same number of whole-Doc passes."""
    small_passes, small_ents = _whole_document_passes(10)
    big_passes, big_ents = _whole_document_passes(40)
    assert small_ents >= 40 and big_ents == 4 * small_ents  # the candidates did grow
    assert big_passes == small_passes <= 4
