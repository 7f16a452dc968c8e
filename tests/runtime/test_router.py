"""Language router with real (regex-pack-only) es and fr pipelines."""

import json

import pytest
import spacy

from deid_factory.package import default_pack_dir
from deid_runtime.regex_pack import RegexPack
from deid_runtime.router import PIECE_CHARS, PhiSpan, Route, Router, RouterError

ES = "La paciente acude a urgencias por dolor abdominal. Teléfono de contacto 612 345 678, correo ana.perez@correo.es. DNI 12345678Z."
FR = "Le patient est admis aux urgences pour une douleur thoracique. Téléphone 06 12 34 56 78, courriel jean.dupont@exemple.fr."
IT = "Il paziente è stato ricoverato in ospedale per un dolore al petto. Contatto: mario.rossi@posta.it, tel. 0039 333 1234567."


def _regex_pipeline(lang):
    from deid_runtime import merger, pack_component  # noqa: F401

    nlp = spacy.blank(lang)
    comp = nlp.add_pipe("deid_regex_pack", config={"write_ents": False})
    comp.pack = RegexPack.from_dir(default_pack_dir(lang))
    nlp.add_pipe("deid_merger")
    return nlp


@pytest.fixture(scope="module")
def train_router_pipelines():
    return {"es": _regex_pipeline("es"), "fr": _regex_pipeline("fr")}


def test_documents_go_to_the_pipeline_of_their_language(train_router_pipelines):
    router = Router(train_router_pipelines)
    out = list(router.pipe([FR, ES, FR]))
    assert [r.lang for r in out] == ["fr", "es", "fr"]
    assert [r.pipeline for r in out] == ["fr", "es", "fr"]
    assert [r.doc.lang_ for r in out] == ["fr", "es", "fr"]
    es_labels = {e.label_ for e in out[1].doc.ents}
    assert {"PHONE", "EMAIL", "ID"} <= es_labels
    assert "EMAIL" in {e.label_ for e in out[0].doc.ents}
    assert router.stats.by_pipeline == {"fr": 2, "es": 1}


def test_unknown_language_is_not_processed_by_default(train_router_pipelines):
    # fail closed: an Italian note with only es and fr loaded is not run through a pipeline of the
    # wrong language, nor through a union that would leave its names in place
    router = Router(train_router_pipelines)
    r = router(IT)
    assert r.lang == "it" and r.pipeline == "none" and not r.processed
    assert r.doc is None and r.spans == []
    assert r.reason == "detected 'it' (1.00), which has no pipeline"
    assert router.stats.unrouted_languages == {"it": 1}


def test_union_fallback_runs_every_pipeline_and_every_extra_pack(train_router_pipelines):
    router = Router(train_router_pipelines, fallback="union", extra_packs=[RegexPack.from_dir(default_pack_dir("en"))])
    en = "The patient was admitted for chest pain and shortness of breath. SSN 536-22-1234, e-mail mario.rossi@posta.it."
    r = router(en)
    assert r.lang == "en" and r.pipeline == "fallback" and r.processed
    found = {(en[s.start:s.end], s.label) for s in r.spans}
    assert ("536-22-1234", "ID") in found  # only the en pack knows a US SSN
    assert ("mario.rossi@posta.it", "EMAIL") in found
    assert [(e.start_char, e.end_char, e.label_) for e in r.doc.ents] == [(s.start, s.end, s.label) for s in r.spans]
    # without the en pack, the es and fr pipelines alone miss the SSN
    alone = Router(train_router_pipelines, fallback="union")(en)
    assert "536-22-1234" not in {en[s.start:s.end] for s in alone.spans}


def test_too_short_or_unsure_detection_is_unroutable_but_a_declared_language_routes(train_router_pipelines):
    router = Router(train_router_pipelines)
    short = "NOMBRE: María Pérez Sánchez"  # langdetect: Hungarian, 0.71
    r = router(short)
    assert r.pipeline == "none" and r.reason == "too short to detect its language (23 letters, need 40)"
    assert router.route(short, declared="es") == Route("es", "es", 1.0, "declared")
    assert router.route(short, declared="es-ES").pipeline == "es"
    assert router.route(ES, declared="it").reason == "declared language 'it' has no pipeline"  # not re-detected
    forced = Router(train_router_pipelines, force_lang="fr")
    assert forced.route(ES) == Route("fr", "fr", 1.0, "forced")
    with pytest.raises(RouterError, match="no loaded pipeline for language 'it'"):
        Router(train_router_pipelines, force_lang="it")
    # a loaded language below the confidence floor is not taken on a guess
    unsure = Router(train_router_pipelines, min_confidence=1.01).route(ES)
    assert unsure.pipeline == "none" and unsure.reason.startswith("detected 'es' with confidence")


def test_named_fallback(train_router_pipelines):
    router = Router(train_router_pipelines, fallback="fr")
    r = router(IT)
    assert r.pipeline == "fallback" and r.doc.lang_ == "fr" and r.reason
    with pytest.raises(RouterError, match="fallback"):
        Router(train_router_pipelines, fallback="de")


def test_detection_is_seeded_and_bounded(train_router_pipelines):
    router = Router(train_router_pipelines, detect_chars=60)
    long_text = FR + " " + ES * 20  # only the French prefix is read
    assert router.detect(long_text)[0] == "fr"
    results = {Router(train_router_pipelines, seed=3).detect("Hola, buenos días")[0] for _ in range(5)}
    assert len(results) == 1


def test_pipe_keeps_order_across_chunks(train_router_pipelines):
    router = Router(train_router_pipelines)
    texts = [ES, FR] * 7
    out = list(router.pipe(((t, i) for i, t in enumerate(texts)), chunk_size=3, as_tuples=True))
    assert [r.meta for r in out] == list(range(14))
    assert [r.doc.text for r in out] == texts


def test_router_from_pipeline_folders_and_the_redact_command(tmp_path):
    from typer.testing import CliRunner

    from deid_factory.cli import app
    from deid_factory.package import assemble_pipeline

    for lang in ("es", "fr"):
        assemble_pipeline(None, lang, tmp_path / f"deid_{lang}")
    router = Router.from_names([str(tmp_path / "deid_es"), str(tmp_path / "deid_fr")])
    assert sorted(router.pipelines) == ["es", "fr"]
    with pytest.raises(ValueError, match="two pipelines"):
        Router.from_names([str(tmp_path / "deid_es"), str(tmp_path / "deid_es")])

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "es.txt").write_text(ES, encoding="utf-8")
    (docs / "fr.txt").write_text(FR, encoding="utf-8")
    (docs / "it.txt").write_text(IT, encoding="utf-8")
    pipelines = f"{tmp_path / 'deid_es'},{tmp_path / 'deid_fr'}"
    out, report = tmp_path / "out.jsonl", tmp_path / "report.json"
    # by default the Italian note is not written, named in one line, and the run fails (exit 3)
    result = CliRunner().invoke(app, ["redact", str(docs), "--out", str(out), "--format", "jsonl", "--mode", "tag",
                                      "--pipelines", pipelines, "--report", str(report), "--quiet"])
    assert result.exit_code == 3, result.output
    rows = {r["id"]: r for r in map(json.loads, out.read_text(encoding="utf-8").splitlines())}
    assert set(rows) == {"es", "fr"} and rows["es"]["pipeline"] == "es" and rows["fr"]["pipeline"] == "fr"
    rep = json.loads(report.read_text())
    assert rep["complete"] is False and rep["not_written"] == 1
    assert rep["unrouted"] == [{"input": str(docs / "it.txt"), "id": "it", "lang": "it", "how": "detected",
                                "pipeline": "none", "reason": "detected 'it' (1.00), which has no pipeline"}]
    # opting in to the union fallback writes it, redacted by every pipeline and pack
    result = CliRunner().invoke(app, ["redact", str(docs), "--out", str(out), "--format", "jsonl", "--mode", "tag",
                                      "--pipelines", pipelines, "--fallback", "union", "--quiet"])
    assert result.exit_code == 0, result.output
    rows = {r["id"]: r for r in map(json.loads, out.read_text(encoding="utf-8").splitlines())}
    assert rows["it"]["pipeline"] == "fallback"
    assert "[EMAIL]" in rows["it"]["redacted"] and "mario.rossi" not in rows["it"]["redacted"]


def test_a_pipeline_that_is_not_installed_is_named_in_one_line():
    # the README's example, on a machine where deid_fr was never built
    with pytest.raises(RouterError) as info:
        Router.from_names(["deid_fr_not_built"], fallback="union")
    message = str(info.value)
    assert message.startswith("router: pipeline 'deid_fr_not_built' is neither an installed package nor a pipeline folder")
    assert "E050" not in message and "\n" not in message


def test_a_pipeline_saved_with_a_relative_pack_dir_loads_from_any_folder(tmp_path, monkeypatch):
    # the README's "use a pack alone" example, saved, then loaded from another working directory
    from deid_factory import PROJECT_ROOT

    monkeypatch.chdir(PROJECT_ROOT)
    nlp = spacy.blank("fr")
    nlp.add_pipe("deid_regex_pack", config={"pack_dir": "regex_packs/fr"})
    nlp.to_disk(tmp_path / "pipe")
    monkeypatch.chdir(tmp_path)
    reloaded = spacy.load(tmp_path / "pipe")
    doc = reloaded("Tél. : 01 23 45 67 89")
    assert [(e.text, e.label_) for e in doc.ents] == [("01 23 45 67 89", "PHONE")]
    # a pack_dir that exists nowhere is still an error, once the component is used without a pack
    broken = spacy.blank("fr")
    broken.add_pipe("deid_regex_pack", config={"pack_dir": "no/such/pack"})
    with pytest.raises(ValueError, match="pack_dir 'no/such/pack' not found"):
        broken("Tél. : 01 23 45 67 89")


class _Watched:
    """A real pipeline whose nlp.pipe calls are counted: the characters each call was given."""

    def __init__(self, nlp):
        self.nlp, self.calls = nlp, []

    def pipe(self, texts, batch_size):
        texts = list(texts)
        self.calls.append(sum(map(len, texts)))
        return self.nlp.pipe(texts, batch_size=batch_size)

    def __getattr__(self, name):  # max_length, tokenizer, pipeline...
        return getattr(self.nlp, name)


def test_a_long_single_line_note_goes_through_in_bounded_pieces_with_exact_spans(train_router_pipelines):
    # one line, no paragraph or line break: pieces are cut at spaces, with context on both sides,
    # and no nlp.pipe call gets more than batch_chars characters (memory stays flat on any note)
    text = "".join(f"Nota {i}: la paciente refiere dolor, teléfono 6{i % 100:02d} 345 678, correo p{i}@correo.es; "
                   for i in range(600))
    whole = Router(train_router_pipelines)(text)
    watched = _Watched(train_router_pipelines["es"])
    router = Router({"es": watched}, piece_chars=2_000, piece_margin=100, batch_chars=5_000)
    (pieces,) = router.pipe([text], with_docs=False)
    assert 40_000 < len(text) < PIECE_CHARS and len(watched.calls) >= len(text) // 5_000  # whole: one piece
    assert max(watched.calls) <= 5_000
    assert pieces.doc is None and pieces.spans == whole.spans and len(pieces.spans) == 1200
    assert whole.spans == [PhiSpan(e.start_char, e.end_char, e.label_, e._.deid_source, e._.deid_score, e._.deid_kind,
                                   e._.deid_validated) for e in whole.doc.ents]
    # asked for a Doc, the router rebuilds one over the whole text
    rebuilt = router(text)
    assert rebuilt.doc.text == text
    assert [(e.start_char, e.end_char, e.label_, e._.deid_source) for e in rebuilt.doc.ents] == \
        [(e.start_char, e.end_char, e.label_, e._.deid_source) for e in whole.doc.ents]


# ----------------------------------------------------------------------------- language detection
DETECT_TEXTS = [ES, FR, IT, "NOMBRE: María Pérez Sánchez", "Hola, buenos días", "", "1234 5678 -- //", "ÁÉÍ ÓÚ ÑANDÚ",
                "The patient was admitted for chest pain. SSN 536-22-1234, see https://example.org/a?b=1 or a.b@c.org",
                "Patient JOHN SMITH, MRN 12345, seen by DR. ADAMS in the ER.", "東京都の病院に入院した患者です。",
                "Пациент поступил в больницу с болью в груди.", "مريض في المستشفى", "ỗỗỗỗ ạạạ ab ễ",
                "Tôi là người Việt Nam, tôi sống ở Hà Nội và làm việc ở bệnh viện", "Der Patient wurde stationär aufgenommen.",
                "Firmado: Dr. Álvaro Ruiz. Servicio de Medicina Interna, Hospital Clínico Universitario.",
                "Nguye\u0302\u0303n  Va\u0306n   A\u0301nh  đang ở bệnh vie\u0323\u0302n,   tha\u0300nh pho\u0302\u0301 Hue\u0302\u0301"]


def test_detection_gives_langdetects_probabilities_bit_for_bit_in_much_less_time():
    """The router's detector is langdetect's algorithm made faster (detection was the router's
    largest cost after the pipelines): the same probabilities, to the last bit, for any text and seed."""
    import random
    import time

    from langdetect import DetectorFactory, detect_langs
    from langdetect.lang_detect_exception import LangDetectException

    from deid_runtime.language_detection import lang_detect

    rng = random.Random(7)
    joined = " ".join(DETECT_TEXTS) * 3
    texts = DETECT_TEXTS + [joined[a:a + rng.randrange(3, 400)] for a in (rng.randrange(len(joined)) for _ in range(60))]
    detector = lang_detect()

    def reference(text, seed):
        DetectorFactory.seed = seed
        try:
            return [(item.lang, item.prob) for item in detect_langs(text)]
        except LangDetectException:
            return []

    for seed in (0, 3):
        expected = [sorted(reference(text, seed)) for text in texts]
        assert [sorted(detector.probabilities(text, seed)) for text in texts] == expected
        # many texts at once (the router's way): the same numbers
        assert [sorted(found) for found in detector.probabilities_many(texts, seed)] == expected
    notes = [(ES + " " + FR + " ") * 4, (FR + " " + ES + " ") * 4, IT * 6] * 6
    start = time.process_time()
    for text in notes:
        reference(text[:1000], 0)
    theirs = time.process_time() - start
    start = time.process_time()
    for text in notes:
        detector.probabilities(text[:1000], 0)
    ours = time.process_time() - start
    # loose bounds (the speed itself is bench/bench_redact.py's), CPU time of this process: one text
    # at a time (a batch of one, which the router never routes one by one) 0.72-0.78 measured
    assert ours < theirs, (ours, theirs)
    start = time.process_time()
    detector.probabilities_many([text[:1000] for text in notes], 0)
    assert time.process_time() - start < 0.5 * theirs  # 0.11-0.14 measured


@pytest.mark.parametrize("window", [3, 40, 300])
def test_detection_reads_more_of_the_random_stream_when_a_text_needs_it(window):
    """probabilities_many reads each seed's random words ahead; a text that needs more (long trials)
    makes it read further: the same results whatever the words read at first, settled or not, and
    one text alone (`probabilities`, the same loop) gives what it gives among many."""
    from deid_runtime.language_detection import LangDetect, lang_detect

    detector = LangDetect()
    detector.WINDOW_WORDS = window
    texts = DETECT_TEXTS + [ES * 3, FR * 3, IT * 3, (ES + " " + IT) * 2]
    for settle in (None, ({"es", "fr"}, 0.5), ({"es", "it"}, 0.9)):
        expected = lang_detect().probabilities_many(texts, 0, settle)  # the default window
        assert detector.probabilities_many(texts, 0, settle) == expected
        assert [detector.probabilities(t, 0, settle) for t in texts] == expected


def test_routing_stops_detecting_once_the_language_is_sure_and_decides_as_the_full_detection(train_router_pipelines):
    router = Router(train_router_pipelines)
    texts = DETECT_TEXTS + [ES * 3, FR * 3]
    assert router.route_many(texts) == [router.route(text) for text in texts]
    for text in texts:
        full = router.probabilities(text)  # all 7 trials
        route = router.route(text)
        if route.how == "detected" and route.pipeline != "none":
            loaded = {lang: p for lang, p in full.items() if lang in router.pipelines}
            assert route.lang == max(loaded, key=loaded.get) and route.confidence <= full[route.lang] + 1e-12
            assert route.confidence > router.min_confidence
    # a clear note settles after 4 of langdetect's 7 trials: a lower bound of about 4/7
    assert 0.5 < router.route(ES).confidence < 0.6 and router.probabilities(ES)["es"] > 0.99
    # an unroutable document's reason has the full probability
    assert router.route(IT).reason == "detected 'it' (1.00), which has no pipeline"
