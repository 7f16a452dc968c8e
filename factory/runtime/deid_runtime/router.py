"""Language router: send each document to the deid_<lang> pipeline of its language, or to none.

Router(pipelines={"es": nlp_es, "fr": nlp_fr}) picks a document's pipeline, in this order:
  1. `force_lang` (`factory redact --lang es`): every document goes to that pipeline;
  2. the language the document declares (a JSONL record's "lang"): that pipeline; a declared
     language without a pipeline is not second-guessed by detection;
  3. detection, restricted to the loaded languages: langdetect (seeded, so the same text always
     routes the same way) reads the first `detect_chars` characters, and the loaded language with
     the highest probability is chosen if that probability is at least `min_confidence` and the
     sample holds at least `min_letters` letters (below that, langdetect guesses). LangDetect
     (language_detection.py) computes langdetect's probabilities, bit for bit, for a chunk of
     documents at once, and stops as soon as a loaded language is sure to be chosen: the
     confidence of a detected route is then a lower bound (the decision is the one the full
     computation gives).
A document none of these places is *unroutable*, and the `fallback` says what happens to it:
  None (default)  nothing: it comes back with pipeline "none", no Doc, no spans and a `reason` (never
                  text). It is not redacted, so it must not be written out: `factory redact`
                  does not write it and exits non-zero (fail closed);
  "union"         every loaded pipeline runs on it, plus every pack of `extra_packs` (the union of
                  all the languages' NER and patterns), and the union of their spans is kept;
  a language      that loaded pipeline runs on it (e.g. "es" for a Spanish-only warehouse).
Every decision is counted in `router.stats`.

Bounded memory and time on any input: a document longer than `piece_chars` (or than the pipeline's
nlp.max_length) is cut at paragraph, line or word breaks into pieces, each processed with
`piece_margin` characters of context on both sides and reporting the spans that start in its own
part; documents and pieces go through nlp.pipe in batches of at most `batch_size` texts and
`batch_chars` characters, and the input is read `chunk_size` documents (`chunk_chars` characters)
at a time. Results come back as character-offset spans (`Routed.spans`); the Doc of a document
processed in pieces is rebuilt over the whole text only when `with_docs` is asked for.

`Router.from_names(["deid_es", "deid_fr"])` routes to installed packages (or pipeline folders);
`Router.from_names(None)` to every installed deid_* package. It loads none of them: their languages
come from the packages' meta.json, detection needs only those, and each pipeline is loaded when
the first document routed to it arrives (`Pipelines`), so a pipeline no document needs costs
neither memory nor start-up time. The union fallback loads every pipeline, when first needed.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from .language_detection import by_language, lang_detect
from .merger import DEFAULT_NER_FIRST, DEFAULT_STRUCTURED, _Candidate, resolve

FALLBACK = "fallback"  # Routed.pipeline of a document the fallback processed
UNROUTED = "none"  # Routed.pipeline of a document nothing processed
UNKNOWN = "unknown"  # Routed.lang when no language could be detected
DEFAULT_MIN_CONFIDENCE = 0.5
DEFAULT_MIN_LETTERS = 40
PIECE_CHARS = 50_000
PIECE_MARGIN = 500
BATCH_CHARS = 100_000
CHUNK_CHARS = 2_000_000
SPACY_DEFAULT_MAX_LENGTH = 1_000_000
SPAN_EXTENSIONS = ("deid_source", "deid_score", "deid_kind", "deid_validated")
_SPACE = re.compile(r"\s")


class RouterError(ValueError):
    """A router that cannot be built (a pipeline not installed, a bad fallback); one line, no text."""


class Pipelines(Mapping):
    """The router's pipelines by language, each loaded when it is first asked for (`pipelines[lang]`).

    Which languages there are is known without loading anything (`in`, iteration, len): detection,
    declared and forced languages need only that. A pipeline is a loaded spaCy Language or a loader,
    a function of no arguments that returns one (`Pipelines.of_names` makes them from installed
    package names and folders). `on_load(lang, nlp)` runs on every pipeline as it is loaded
    (`factory redact --recall-bias` sets the tagger's o_bias there); `loaded` lists the languages
    loaded so far, in load order. A pipeline that fails to load fails where it is first needed.
    """

    def __init__(self, loaded: Mapping[str, Any] | None = None, loaders: Mapping[str, Callable[[], Any]] | None = None,
                 on_load: Callable[[str, Any], None] | None = None):
        self._loaded: dict[str, Any] = dict(loaded or {})
        self._loaders: dict[str, Callable[[], Any]] = {lang: f for lang, f in (loaders or {}).items() if lang not in self._loaded}
        self._order = [*self._loaded, *self._loaders]
        self.loaded: list[str] = list(self._loaded)
        self.on_load = on_load

    @classmethod
    def of_names(cls, names: Sequence[str], installed: Sequence[str],
                 on_load: Callable[[str, Any], None] | None = None) -> "Pipelines":
        """Loaders of the named installed packages or pipeline folders, by language, read from each
        one's meta.json (a pipeline whose meta.json cannot be found is loaded now to learn it). A
        name that is neither, or two pipelines of one language, is a RouterError here, before
        anything runs."""
        loaders: dict[str, Callable[[], Any]] = {}
        for name in names:
            lang = _declared_lang(name, installed)
            if lang is None:
                nlp = _load_pipeline(name, installed, None)
                lang, loader = nlp.lang, (lambda nlp=nlp: nlp)
            else:
                loader = lambda name=name, lang=lang: _load_pipeline(name, installed, lang)  # noqa: E731
            if lang in loaders:
                raise RouterError(f"router: two pipelines for language {lang!r} ({name})")
            loaders[lang] = loader
        return cls(loaders=loaders, on_load=on_load)

    def __getitem__(self, lang: str) -> Any:
        nlp = self._loaded.get(lang)
        if nlp is None:
            loader = self._loaders[lang]  # KeyError for a language without a pipeline, as a dict
            nlp = loader()
            if self.on_load is not None:
                self.on_load(lang, nlp)
            self._loaded[lang] = nlp
            del self._loaders[lang]
            self.loaded.append(lang)
        return nlp

    def __contains__(self, lang: object) -> bool:  # without loading (Mapping's would load)
        return lang in self._loaded or lang in self._loaders

    def __iter__(self) -> Iterator[str]:
        return iter(self._order)

    def __len__(self) -> int:
        return len(self._order)

    def __repr__(self) -> str:
        return f"Pipelines(languages={list(self)}, loaded={self.loaded})"


def _declared_lang(name: str, installed: Sequence[str]) -> str | None:
    """The language a pipeline's meta.json gives, found as spacy.load finds the pipeline (an
    installed package first, then a folder) without importing or loading it; None when there is no
    meta.json to read. A name that is neither a package nor a folder: RouterError."""
    import importlib.util

    import spacy
    import srsly

    meta_file = None
    if spacy.util.is_package(name):
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.submodule_search_locations:
            meta_file = Path(list(spec.submodule_search_locations)[0]) / "meta.json"
    elif Path(name).exists():
        meta_file = Path(name) / "meta.json"
    else:
        raise RouterError(f"router: pipeline {name!r} is neither an installed package nor a pipeline folder "
                          f"(installed deid_* pipelines: {', '.join(installed) or 'none'})")
    try:
        lang = srsly.read_json(meta_file).get("lang") if meta_file is not None else None
    except (OSError, ValueError, AttributeError):
        return None
    return lang if isinstance(lang, str) and lang else None


def _load_pipeline(name: str, installed: Sequence[str], lang: str | None):
    """spacy.load(name), its E050 turned into one line; a pipeline whose language is not the one its
    meta.json gave (`lang`) is refused, since documents were routed to it by that language."""
    import spacy

    from . import merger, pack_component  # noqa: F401  (factories for pipeline folders)

    try:
        nlp = spacy.load(name)
    except OSError as err:
        if "E050" not in str(err):
            raise
        raise RouterError(f"router: pipeline {name!r} is neither an installed package nor a pipeline folder "
                          f"(installed deid_* pipelines: {', '.join(installed) or 'none'})") from None
    if lang is not None and nlp.lang != lang:
        raise RouterError(f"router: pipeline {name!r} is a {nlp.lang!r} pipeline, but its meta.json says {lang!r}")
    return nlp


@dataclass(frozen=True)
class PhiSpan:
    """One final PHI span, in characters of the document's text."""

    start: int
    end: int
    label: str
    source: str | None = None  # "ner", "regex", "ner+regex" (deid_merger), None from other pipelines
    score: float | None = None
    kind: str | None = None
    validated: bool | None = None

    @classmethod
    def of(cls, span, offset: int = 0) -> "PhiSpan":
        ext = span._
        return cls(span.start_char + offset, span.end_char + offset, span.label_, *(
            getattr(ext, name) if ext.has(name) else None for name in SPAN_EXTENSIONS))

    @classmethod
    def all_of(cls, spans, offset: int = 0) -> list["PhiSpan"]:
        """[PhiSpan.of(s, offset) for s in spans], without an Underscore object and four attribute
        look-ups per span: a plain extension attribute (no getter, no method, an immutable default)
        is read where spaCy keeps it, doc.user_data[("._.", name, start_char, end_char)]; any other
        goes through span._ as in of(). (A tenth of the router's own time on an entity-dense note.)"""
        from spacy.tokens.underscore import Underscore

        readers = []  # per extension: None (not registered), (name, default) read from user_data, or name
        for name in SPAN_EXTENSIONS:
            ext = Underscore.span_extensions.get(name)
            if ext is None:
                readers.append(None)
            elif ext[1] is None and ext[2] is None and not isinstance(ext[0], Underscore.mutable_types):
                readers.append((name, ext[0]))
            else:
                readers.append(name)
        out = []
        for span in spans:
            start, end = span.start_char, span.end_char
            data = span.doc.user_data
            out.append(cls(start + offset, end + offset, span.label_, *(
                None if r is None else data.get(("._.", r[0], start, end), r[1]) if type(r) is tuple
                else getattr(span._, r) for r in readers)))
        return out


@dataclass(frozen=True)
class Route:
    lang: str  # the language decided on: forced, declared or detected ("unknown" when none)
    pipeline: str  # key of the pipeline to run, FALLBACK or UNROUTED
    confidence: float  # detected: at least this (detection stops once the language is sure)
    how: str  # "forced", "declared" or "detected"
    reason: str = ""  # why the document is unroutable ("" when it is not); names no text


@dataclass
class Routed:
    doc: Any  # spaCy Doc; None when nothing processed the document, or with with_docs=False
    lang: str
    pipeline: str  # language key of the pipeline used, "fallback" or "none"
    confidence: float
    meta: Any = None  # whatever the caller passed along with the text
    spans: list[PhiSpan] = field(default_factory=list)  # final PHI spans (= doc.ents when there is a doc)
    how: str = "detected"
    reason: str = ""

    @property
    def processed(self) -> bool:
        """False for a document that nothing processed: it holds all its PHI."""
        return self.pipeline != UNROUTED


@dataclass
class RouterStats:
    docs: int = 0
    by_pipeline: Counter = field(default_factory=Counter)
    by_how: Counter = field(default_factory=Counter)
    detected: Counter = field(default_factory=Counter)
    unrouted_languages: Counter = field(default_factory=Counter)

    def to_dict(self) -> dict:
        return {"docs": self.docs, "by_pipeline": dict(self.by_pipeline), "by_how": dict(self.by_how),
                "detected": dict(self.detected), "unrouted_languages": dict(self.unrouted_languages)}


@dataclass(frozen=True)
class _Piece:
    """The part of text `index` one nlp.pipe call processes: the window [start, end) of context
    around the part [own_start, own_end) whose spans it reports."""

    index: int
    start: int
    end: int
    own_start: int
    own_end: int
    whole: bool


def piece_bounds(text: str, limit: int) -> list[tuple[int, int]]:
    """Consecutive (start, end) parts of `text`, each at most `limit` characters, covering it.

    A part ends after the last paragraph break (blank line) in the second half of its window, else
    after the last line break there, else after the last space; only a window without any of these
    is cut hard. The second-half rule keeps the number of parts close to len/limit. Linear in len(text).
    """
    if limit <= 0:
        raise ValueError("limit must be positive")
    bounds: list[tuple[int, int]] = []
    start = 0
    while len(text) - start > limit:
        window_end = start + limit
        half = start + limit // 2
        cut = -1
        for sep in ("\n\n", "\n", " "):
            found = text.rfind(sep, half, window_end)
            if found != -1:
                cut = found + len(sep)
                break
        if cut <= start or cut > window_end:
            cut = window_end
        bounds.append((start, cut))
        start = cut
    bounds.append((start, len(text)))
    return bounds


def split_long_text(text: str, limit: int) -> list[str]:
    """The parts of piece_bounds() as strings: they join back to `text`."""
    return [text[s:e] for s, e in piece_bounds(text, limit)]


def _pieces(index: int, text: str, limit: int, margin: int) -> Iterator[_Piece]:
    if len(text) <= limit:
        yield _Piece(index, 0, len(text), 0, len(text), True)
        return
    for own_start, own_end in piece_bounds(text, limit):
        start = max(0, own_start - margin)
        if start > 0:  # begin the context after a space, not inside a word
            space = _SPACE.search(text, start, own_start)
            start = space.end() if space else start
        end = min(len(text), own_end + margin)
        if end < len(text):
            cut = max(text.rfind(" ", own_end, end), text.rfind("\n", own_end, end))
            end = cut if cut > own_end else end
        yield _Piece(index, start, end, own_start, own_end, False)


def _batches(pieces: Iterable[_Piece], max_docs: int, max_chars: int) -> Iterator[list[_Piece]]:
    batch: list[_Piece] = []
    chars = 0
    for piece in pieces:
        size = piece.end - piece.start
        if batch and (len(batch) >= max_docs or chars + size > max_chars):
            yield batch
            batch, chars = [], 0
        batch.append(piece)
        chars += size
    if batch:
        yield batch


def resolve_overlaps(spans: list[PhiSpan]) -> list[PhiSpan]:
    """Non-overlapping spans, sorted: the merger's rules (same label: union; different labels: the
    validated pattern, then the NER for names/places/institutions, then patterns; then the longer)."""
    spans = sorted(spans, key=lambda s: (s.start, s.end))
    if all(a.end <= b.start for a, b in zip(spans, spans[1:])):
        return spans
    candidates = [_Candidate(s.start, s.end, s.label, s.source or "other", s.score or 0.0, bool(s.validated), s.kind or "")
                  for s in spans]
    return [PhiSpan(c.start, c.end, c.label, c.source, c.score, c.kind or None, c.validated)
            for c in resolve(candidates, set(DEFAULT_STRUCTURED), set(DEFAULT_NER_FIRST))]


def pack_of(nlp):
    """The RegexPack of a deid pipeline, or None."""
    for _, component in getattr(nlp, "pipeline", []):
        if getattr(component, "pack", None) is not None:
            return component.pack
    return None


def pack_pipeline(pack, lang: str = "xx"):
    """A pipeline of one regex pack alone (multilingual tokenizer), for the union fallback."""
    from . import pack_component  # noqa: F401  (registers deid_regex_pack)
    from .tokenization import blank as phi_blank

    nlp = phi_blank(lang)
    nlp.add_pipe("deid_regex_pack", config={"pack_dir": None, "write_ents": True}).pack = pack
    return nlp


class Router:
    def __init__(self, pipelines: dict[str, Any], fallback: str | Any | None = None,
                 detect_chars: int = 1000, seed: int = 0, min_confidence: float = DEFAULT_MIN_CONFIDENCE,
                 min_letters: int = DEFAULT_MIN_LETTERS, force_lang: str | None = None,
                 extra_packs: Sequence = (), piece_chars: int = PIECE_CHARS, piece_margin: int = PIECE_MARGIN,
                 batch_chars: int = BATCH_CHARS, chunk_chars: int = CHUNK_CHARS):
        # a Pipelines loads each when first needed; a plain {lang: nlp} is all loaded already
        self.pipelines = pipelines if isinstance(pipelines, Pipelines) else Pipelines(pipelines)
        if not self.pipelines and not (fallback == "union" and extra_packs):
            raise RouterError("router: no pipelines to route to")
        if force_lang is not None and force_lang not in self.pipelines:
            raise RouterError(f"router: no loaded pipeline for language {force_lang!r} (loaded: {', '.join(sorted(self.pipelines)) or 'none'})")
        self.force_lang = force_lang
        self.detect_chars = detect_chars
        self.seed = seed
        self.min_confidence = min_confidence
        self.min_letters = min_letters
        self.piece_chars, self.piece_margin = piece_chars, piece_margin
        self.batch_chars, self.chunk_chars = batch_chars, chunk_chars
        self.stats = RouterStats()
        self._extra_packs = list(extra_packs)
        self._union_packs: list | None = None  # the packs' pipelines, made when the union first runs
        self._union_tokenizer = None
        if isinstance(fallback, str) and fallback != "union" and fallback not in self.pipelines:
            raise RouterError(f"router: fallback {fallback!r} is not 'union' nor one of the loaded pipelines "
                              f"({', '.join(sorted(self.pipelines)) or 'none'})")
        # None, "union", a language (its pipeline loaded when the first unroutable document comes) or a pipeline object
        self._fallback = fallback
        self.fallback_name = fallback if isinstance(fallback, str) else ("custom" if fallback is not None else "none")

    @property
    def fallback(self):
        """What runs on an unroutable document: None, "union", or a pipeline (a language's is
        loaded by asking for it)."""
        if isinstance(self._fallback, str) and self._fallback != "union":
            return self.pipelines[self._fallback]
        return self._fallback

    # -------------------------------------------------------------- construction
    @classmethod
    def from_names(cls, names: Sequence[str] | None = None, fallback: str | None = None,
                   on_load: Callable[[str, Any], None] | None = None, **kwargs) -> "Router":
        """A router to the named installed packages or pipeline folders (None: every installed
        deid_* package), none of them loaded yet (`Pipelines`); `on_load(lang, nlp)` runs on each
        as it loads."""
        import spacy

        installed = sorted(n for n in spacy.util.get_installed_models() if n.startswith("deid_"))
        if not names:
            names = installed
            if not names:
                raise RouterError("router: no installed deid_* pipeline found (build one: spacy project run build languages/<lc>)")
        return cls(Pipelines.of_names(names, installed, on_load), fallback=fallback, **kwargs)

    # -------------------------------------------------------------- detection and routing
    def probabilities(self, text: str, settle: bool = False) -> dict[str, float]:
        """langdetect's language probabilities (those above 0.1) for the first `detect_chars`
        characters, seeded (LangDetect: langdetect's results, faster). settle: stop as soon as a
        loaded language is sure to be chosen (LangDetect.probabilities); its probability is then a
        lower bound (at least min_confidence), and the only one given."""
        return by_language(lang_detect().probabilities(text[: self.detect_chars], self.seed,
                                                        (self.pipelines, self.min_confidence) if settle else None))

    def detect(self, text: str) -> tuple[str, float]:
        """(language, probability) of the most likely language, any language; ("unknown", 0) if none."""
        probs = self.probabilities(text)
        if not probs:
            return UNKNOWN, 0.0
        lang = max(probs, key=probs.get)
        return lang, probs[lang]

    def route(self, text: str, declared: str | None = None) -> Route:
        """Where a document goes (see the module docstring); no processing."""
        return self.route_many([text], [declared])[0]

    def route_many(self, texts: Sequence[str], declared: Sequence[str | None] | None = None) -> list[Route]:
        """[route(text, declared) for each text], the detections computed together (LangDetect.probabilities_many)."""
        routes: list[Route | None] = []
        samples: dict[int, str] = {}  # documents to detect: their samples
        for i, text in enumerate(texts):
            route = self._route_without_detection(text, declared[i] if declared else None)
            if route is None:
                samples[i] = text[: self.detect_chars]
            routes.append(route)
        if samples:
            found = lang_detect().probabilities_many(list(samples.values()), self.seed, (self.pipelines, self.min_confidence))
            for i, probs in zip(samples, found):
                routes[i] = self._detected_route(by_language(probs))
        return routes

    def _route_without_detection(self, text: str, declared: str | None) -> Route | None:
        """The route of a forced or declared language, or of a document too short to detect; None
        when detection decides."""
        if self.force_lang is not None:
            return Route(self.force_lang, self.force_lang, 1.0, "forced")
        if declared:
            lang = re.split(r"[-_]", declared.strip())[0].lower()
            if lang in self.pipelines:
                return Route(lang, lang, 1.0, "declared")
            return self._unroutable(lang, 1.0, "declared", f"declared language {lang!r} has no pipeline")
        letters = sum(map(str.isalpha, text[: self.detect_chars]))
        if letters < self.min_letters:
            return self._unroutable(UNKNOWN, 0.0, "detected",
                                    f"too short to detect its language ({letters} letters, need {self.min_letters})")
        return None

    def _detected_route(self, probs: dict[str, float]) -> Route:
        if not probs:
            return self._unroutable(UNKNOWN, 0.0, "detected", "no language detected")
        loaded = [lang for lang in probs if lang in self.pipelines]
        best = max(loaded, key=probs.get) if loaded else None
        if best is not None and probs[best] >= self.min_confidence:
            return Route(best, best, probs[best], "detected")
        top = max(probs, key=probs.get)
        if top in self.pipelines:
            reason = f"detected {top!r} with confidence {probs[top]:.2f}, below {self.min_confidence}"
        else:
            reason = f"detected {top!r} ({probs[top]:.2f}), which has no pipeline"
        return self._unroutable(top, probs[top], "detected", reason)

    def _unroutable(self, lang: str, confidence: float, how: str, reason: str) -> Route:
        return Route(lang, FALLBACK if self._fallback is not None else UNROUTED, confidence, how, reason)

    # -------------------------------------------------------------- processing
    def __call__(self, text: str, declared: str | None = None) -> Routed:
        return next(self.pipe([(text, None)], as_tuples=True, declared_lang=lambda _: declared))

    def pipe(self, texts: Iterable[Any], batch_size: int = 16, chunk_size: int = 256, as_tuples: bool = False,
             declared_lang: Callable[[Any], str | None] | None = None, with_docs: bool = True) -> Iterator[Routed]:
        """Route and process a stream of texts (or (text, meta) tuples); output keeps input order.

        declared_lang(meta) gives a document's declared language (or None). with_docs=False gives
        spans only (no Doc is kept: the least memory). Input is read `chunk_size` documents (at
        most `chunk_chars` characters) at a time, so a large stream is never held in memory.
        """
        chunk: list[tuple[str, Any]] = []
        chars = 0
        for item in texts:
            text, meta = item if as_tuples else (item, None)
            chunk.append((text, meta))
            chars += len(text)
            if len(chunk) >= chunk_size or chars >= self.chunk_chars:
                yield from self._process(chunk, batch_size, declared_lang, with_docs)
                chunk, chars = [], 0
        if chunk:
            yield from self._process(chunk, batch_size, declared_lang, with_docs)

    def _process(self, chunk: list[tuple[str, Any]], batch_size: int, declared_lang, with_docs: bool) -> Iterator[Routed]:
        routes = self.route_many([text for text, _ in chunk],
                                 [declared_lang(meta) for _, meta in chunk] if declared_lang else None)
        groups: dict[str, list[int]] = {}
        for i, route in enumerate(routes):
            groups.setdefault(route.pipeline, []).append(i)
            self.stats.docs += 1
            self.stats.by_how[route.how] += 1
            if route.how == "detected":
                self.stats.detected[route.lang] += 1
            self.stats.by_pipeline[route.pipeline] += 1
            if route.reason:
                self.stats.unrouted_languages[route.lang] += 1
        results: list[tuple[Any, list[PhiSpan]]] = [(None, [])] * len(chunk)
        for target, idx in groups.items():
            if target == UNROUTED:
                continue  # nothing runs on it: no Doc, no spans
            texts = [chunk[i][0] for i in idx]
            if target == FALLBACK and self._fallback == "union":
                annotated = self._annotate_union(texts, batch_size, with_docs)
            else:
                nlp = self.fallback if target == FALLBACK else self.pipelines[target]
                annotated = self._annotate(nlp, texts, batch_size, with_docs)
            for i, result in zip(idx, annotated):
                results[i] = result
        for (text, meta), route, (doc, spans) in zip(chunk, routes, results):
            yield Routed(doc, route.lang, route.pipeline, round(route.confidence, 4), meta, spans, route.how, route.reason)

    def _annotate(self, nlp, texts: list[str], batch_size: int, with_docs: bool) -> list[tuple[Any, list[PhiSpan]]]:
        """(Doc or None, final spans) of each text, by pieces where a text is long (module docstring)."""
        max_length = getattr(nlp, "max_length", SPACY_DEFAULT_MAX_LENGTH) or SPACY_DEFAULT_MAX_LENGTH
        margin = min(self.piece_margin, max_length // 4)
        limit = min(self.piece_chars, max_length - 2 * margin)
        results: list[Any] = [None] * len(texts)
        parts: dict[int, list[PhiSpan]] = {}  # spans of the texts processed in pieces
        groups: dict[int, dict[str, list[PhiSpan]]] = {}  # their span groups, to rebuild a Doc
        pieces = (piece for i, text in enumerate(texts) for piece in _pieces(i, text, limit, margin))
        for batch in _batches(pieces, batch_size, self.batch_chars):
            batch_texts = [texts[p.index] if p.whole else texts[p.index][p.start:p.end] for p in batch]
            for piece, doc in zip(batch, nlp.pipe(batch_texts, batch_size=len(batch))):
                if piece.whole:
                    results[piece.index] = (doc if with_docs else None, PhiSpan.all_of(doc.ents))
                    continue
                own = PhiSpan.all_of(doc.ents, piece.start)
                parts.setdefault(piece.index, []).extend(s for s in own if piece.own_start <= s.start < piece.own_end)
                if with_docs:
                    for key, group in doc.spans.items():
                        kept = PhiSpan.all_of(group, piece.start)
                        groups.setdefault(piece.index, {}).setdefault(key, []).extend(
                            s for s in kept if piece.own_start <= s.start < piece.own_end)
        for i, spans in parts.items():
            spans = resolve_overlaps(spans)
            doc = _doc_from_spans(nlp.tokenizer, texts[i], spans, groups.get(i, {})) if with_docs else None
            results[i] = (doc, spans)
        return results

    def _annotate_union(self, texts: list[str], batch_size: int, with_docs: bool) -> list[tuple[Any, list[PhiSpan]]]:
        """Every pipeline (each loaded now if it was not) and every extra pack on each text; the
        union of their spans."""
        if self._union_packs is None:
            self._union_packs = [pack_pipeline(p) for p in self._extra_packs]
        members = [self.pipelines[lang] for lang in self.pipelines] + self._union_packs
        per_member = [self._annotate(nlp, texts, batch_size, with_docs=False) for nlp in members]
        results = []
        for i, text in enumerate(texts):
            spans = resolve_overlaps([s for member in per_member for s in member[i][1]])
            doc = None
            if with_docs:
                if self._union_tokenizer is None:
                    from .tokenization import blank as phi_blank

                    self._union_tokenizer = phi_blank("xx").tokenizer
                doc = _doc_from_spans(self._union_tokenizer, text, spans, {"deid": spans})
            results.append((doc, spans))
        return results


def _doc_from_spans(tokenizer, text: str, spans: list[PhiSpan], groups: dict[str, list[PhiSpan]]):
    """A Doc over the whole text (tokenizer only: no length limit) with `spans` as its entities and
    the span groups, extension values included. Used for documents processed in pieces."""
    from spacy.tokens import Span
    from spacy.util import filter_spans

    from . import merger  # noqa: F401  (registers the deid_* span extensions)

    doc = tokenizer(text)

    def make(items: list[PhiSpan]) -> list:
        made = []
        for s in items:
            span = doc.char_span(s.start, s.end, label=s.label, alignment_mode="expand")
            if span is None:
                continue
            for name in SPAN_EXTENSIONS:
                if Span.has_extension(name):
                    setattr(span._, name, getattr(s, name.removeprefix("deid_")))
            made.append(span)
        return made

    doc.ents = filter_spans(make(spans))
    for key, items in groups.items():
        doc.spans[key] = make(items)
    return doc
