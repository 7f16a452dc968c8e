"""Catalan (issue 29): the router tells Catalan from Spanish on short notes, the Catalan synthetic
corpus is written in Catalan (with the Spanish a Catalan hospital writes now and then), and the two
surnames of a Catalan name are joined by "i" where the lexicon asks for it.

The short notes below were written for this test (not taken from any corpus or set of the project):
ten in each language, each with 40 to 100 letters, the same clinical content in both languages, so
the router has nothing but the language to go by."""

from __future__ import annotations

import re
import shutil
from collections import Counter
from pathlib import Path

import pytest
import spacy
import yaml

from deid_factory import PROJECT_ROOT
from deid_factory.package import default_pack_dir
from deid_factory.synth import generate_records
from deid_runtime.regex_pack import RegexPack
from deid_runtime.router import DEFAULT_MIN_LETTERS, Router

CATALAN = [
    "Pacient de 74 anys amb dolor abdominal i vòmits des d'ahir a la nit.",
    "Sr. Puig, dolor de genoll dret després d'una caiguda. Radiografia normal.",
    "La Sra. Vidal explica que no dorm bé i que està molt cansada.",
    "Ferida al dit índex amb un ganivet. Es neteja i es posen dos punts.",
    "Infecció d'orina. Es pauta fosfomicina dosi única i molta aigua.",
    "Truca el fill perquè el seu pare té més tos i li costa respirar.",
    "Retirada de punts de la cesària. Ferida neta i ben tancada.",
    "Caiguda al bany sense pèrdua de coneixement. Hematoma al front.",
    "Nena amb vòmits i diarrea des d'aquest matí, beu poc.",
    "CIP MAFE0720519004: control de glicèmies a casa cada dia i visita amb la infermera.",
]
SPANISH = [
    "Paciente de 74 años con dolor abdominal y vómitos desde ayer por la noche.",
    "Sr. Puig, dolor de rodilla derecha tras una caída. Radiografía normal.",
    "La Sra. Vidal explica que no duerme bien y que está muy cansada.",
    "Herida en el dedo índice con un cuchillo. Se limpia y se ponen dos puntos.",
    "Infección de orina. Se pauta fosfomicina dosis única y mucha agua.",
    "Llama el hijo porque su padre tiene más tos y le cuesta respirar.",
    "Retirada de puntos de la cesárea. Herida limpia y bien cerrada.",
    "Caída en el baño sin pérdida de conocimiento. Hematoma en la frente.",
    "Niña con vómitos y diarrea desde esta mañana, bebe poco.",
    "DNI 43920640R: control de glucemias en casa cada día y visita con la enfermera.",
]


def _letters(text: str) -> int:
    return sum(map(str.isalpha, text))


def _regex_pipeline(lang: str):
    from deid_runtime import merger, pack_component  # noqa: F401  (registers the factories)

    nlp = spacy.blank(lang)
    nlp.add_pipe("deid_regex_pack", config={"write_ents": False}).pack = RegexPack.from_dir(default_pack_dir(lang))
    nlp.add_pipe("deid_merger")
    return nlp


@pytest.fixture(scope="module")
def ca_es_router() -> Router:
    return Router({"ca": _regex_pipeline("ca"), "es": _regex_pipeline("es")})


def test_the_short_notes_are_short():
    for note in CATALAN + SPANISH:
        assert DEFAULT_MIN_LETTERS <= _letters(note) <= 100, note


@pytest.mark.parametrize("lang,notes", [("ca", CATALAN), ("es", SPANISH)])
def test_router_tells_catalan_from_spanish_on_short_notes(ca_es_router, lang, notes):
    routed = list(ca_es_router.pipe(notes))
    assert [r.pipeline for r in routed] == [lang] * len(notes), [(r.lang, round(r.confidence, 2)) for r in routed]
    assert all(r.doc.lang_ == lang for r in routed)
    # the note went through its language's pack: the Catalan health card code and the Spanish DNI are found
    last = routed[-1]  # the note with an identifier
    found = {(last.doc.text[s.start:s.end], s.label) for s in last.spans}
    assert (("MAFE0720519004", "ID") if lang == "ca" else ("43920640R", "ID")) in found


def test_a_catalan_note_is_not_sent_to_spanish_when_catalan_is_not_loaded():
    """Fail closed: with only deid_es loaded, a Catalan note is detected as Catalan and not redacted
    with the Spanish pipeline."""
    router = Router({"es": _regex_pipeline("es")})
    routes = router.route_many(CATALAN)
    assert all(r.pipeline == "none" and r.lang == "ca" for r in routes), [(r.lang, r.pipeline) for r in routes]


# ----------------------------------------------------------------------------- the synthetic corpus
@pytest.fixture(scope="module")
def catalan_records():
    return list(generate_records(120, seed=7, lang="ca"))


def test_catalan_corpus_is_detected_as_catalan(catalan_records):
    """Written natively in Catalan (not Spanish with Catalan names): langdetect, on the text with its
    PHI cut out, reads nearly every note as Catalan, the code-switched Spanish sentences included."""
    router = Router({"ca": spacy.blank("ca"), "es": spacy.blank("es")})
    texts = []
    for record in catalan_records:
        kept, cut = [], 0
        for span in sorted(record.spans, key=lambda s: s.start):
            kept.append(record.text[cut:span.start])
            cut = span.end
        kept.append(record.text[cut:])
        texts.append(" ".join(kept))
    langs = Counter(r.pipeline for r in router.route_many(texts))
    assert langs["ca"] >= 0.97 * len(texts), langs


def test_catalan_corpus_has_the_forms_of_catalan_notes(catalan_records):
    people = [r.text[s.start:s.end] for r in catalan_records for s in r.spans if s.label == "PERSON"]
    assert sum(" i " in p or " I " in p for p in people) >= 0.05 * len(people)  # "Puig i Soler"
    dates = [r.text[s.start:s.end] for r in catalan_records for s in r.spans if s.label == "DATE"]
    assert any(re.search(r"\d d'(?:abril|agost|octubre)", d) for d in dates)  # "3 d'abril": the elided month
    assert not any(re.search(r"\d de (?:abril|agost|octubre)", d) for d in dates)
    text = "\n".join(r.text for r in catalan_records)
    assert re.search(r"\b(?:Paciente|Refiere|Se remite|Informe de ecografía|Dolor tras)\b", text)  # Spanish code-switching
    assert any(s.attrs.get("kind") == "cip" for r in catalan_records for s in r.spans)
    # the article agrees with the organisation: "l'Hospital del Mar", never "el Hospital"
    assert not re.search(r"\b(?:el|del|al) Hospital\b", text)


def test_surnames_joined_by_the_lexicons_conjunction(tmp_path: Path):
    """lexicon.yml `surname_forms: {and_p, and_word}`: with and_p 1 every two-surname name has the
    conjunction before its second surname (and it stays out of e-mail addresses); with and_p 0 none."""
    def corpus(and_p: float) -> list:
        folder = tmp_path / f"ca_{and_p}"
        shutil.copytree(PROJECT_ROOT / "corpora" / "synth" / "ca", folder)
        lexicon = yaml.safe_load((folder / "lexicon.yml").read_text(encoding="utf-8"))
        lexicon["surname_forms"].update(and_p=and_p, particle_p=0, compound_p=0)
        (folder / "lexicon.yml").write_text(yaml.safe_dump(lexicon, allow_unicode=True), encoding="utf-8")
        from deid_factory.readers import read_corpus

        return list(read_corpus(folder, "synth", lang="ca", n=80, seed=3))

    def full_names(records):
        return [r.text[s.start:s.end] for r in records for s in r.spans
                if s.label == "PERSON" and s.attrs.get("kind") == "patient" and s.attrs.get("part") is None
                and "," not in r.text[s.start:s.end] and len(r.text[s.start:s.end].split()) == 4]

    joined, plain = corpus(1.0), corpus(0.0)
    # four words: a given name and two surnames with the conjunction ("Laura Sáez i Vila", "PRAT I QUISPE Sofía")
    assert full_names(joined) and all(" i " in n.lower() for n in full_names(joined)), full_names(joined)[:5]
    assert all(" i " not in n.lower() for n in full_names(plain))
    # e-mail addresses are made of the surnames without the conjunction ("maria_soler", not "maria_isoler")
    from deid_runtime.surrogates.forms import ascii_slug

    seconds = {ascii_slug(n.split()[3]) for n in full_names(joined) if n.split()[2].lower() == "i"}
    locals_ = [r.text[s.start:s.end].split("@")[0] for r in joined for s in r.spans if s.label == "EMAIL"]
    assert any(s in part for part in locals_ for s in seconds)
    assert not any("i" + s in part for part in locals_ for s in seconds), locals_[:8]
