"""Language router: send each document to the deid_<lang> pipeline of its language.

Router(pipelines={"es": nlp_es, "fr": nlp_fr}, fallback=...) detects each document's language with
langdetect (seeded, so the same text always routes the same way; only the first `detect_chars`
characters are read, which bounds the cost on long notes) and runs the matching pipeline.
Documents whose language has no pipeline (or cannot be detected, e.g. an empty or numbers-only
text, or detected below `min_confidence`) go to the fallback:
  "union"      the union of the structured patterns (ID, EMAIL, PHONE, URL, IP, DATE by default)
               of every loaded pipeline's regex pack -- language-independent identifiers still go;
  a language   e.g. "en": that loaded pipeline;
  None         no fallback: the document comes back with no spans (still reported).
Every routing decision is counted in `router.stats` (documents per pipeline, unknown languages).
A document longer than its pipeline's `nlp.max_length` (spaCy refuses those; 1,000,000 characters
by default) is cut at paragraph/line breaks into pieces under the limit, each piece is processed
and the pieces' Docs are joined back into one Doc over the whole text (offsets as in the input).

`Router.from_names(["deid_es", "deid_fr"])` loads installed packages (or pipeline folders);
`Router.from_names(None)` loads every installed deid_* package.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Sequence

from .merger import _Candidate, resolve

DEFAULT_UNION_LABELS = ("ID", "EMAIL", "PHONE", "URL", "IP", "DATE")
FALLBACK = "fallback"
SPACY_DEFAULT_MAX_LENGTH = 1_000_000


@dataclass
class Routed:
    doc: Any  # spacy Doc
    lang: str  # detected language ("unknown" when detection failed)
    pipeline: str  # language key of the pipeline used, "fallback" or "none"
    confidence: float
    meta: Any = None  # whatever the caller passed along with the text


@dataclass
class RouterStats:
    docs: int = 0
    by_pipeline: Counter = field(default_factory=Counter)
    detected: Counter = field(default_factory=Counter)
    unrouted_languages: Counter = field(default_factory=Counter)

    def to_dict(self) -> dict:
        return {"docs": self.docs, "by_pipeline": dict(self.by_pipeline), "detected": dict(self.detected),
                "unrouted_languages": dict(self.unrouted_languages)}


class UnionPacks:
    """A pipeline-like object: the union of structured regex pack matches, for unknown languages."""

    def __init__(self, packs: Sequence, labels: Sequence[str] = DEFAULT_UNION_LABELS, lang: str = "xx"):
        import spacy

        self.packs = list(packs)
        self.labels = set(labels)
        from .tokenization import customize_tokenizer

        self.nlp = customize_tokenizer(spacy.blank(lang))  # multilingual tokenizer
        self.lang = lang

    def _annotate(self, doc):
        from spacy.tokens import Span

        candidates = []
        for pack in self.packs:
            for m in pack.find(doc.text):
                if m.label not in self.labels:
                    continue
                span = doc.char_span(m.start, m.end, alignment_mode="expand")
                if span is None:
                    continue
                candidates.append(_Candidate(span.start, span.end, m.label, "regex", m.score, m.validated, m.kind))
        spans = []
        for c in resolve(candidates, self.labels, set()):
            span = Span(doc, c.start, c.end, label=c.label)
            span._.deid_source, span._.deid_score, span._.deid_kind = "regex", c.score, c.kind
            spans.append(span)
        doc.ents = spans
        doc.spans["deid_regex"] = spans
        doc.spans["deid"] = spans
        return doc

    @property
    def max_length(self) -> int:
        return self.nlp.max_length

    def __call__(self, text: str):
        return self._annotate(self.nlp.make_doc(text))

    def pipe(self, texts: Iterable[str], batch_size: int = 16):
        for text in texts:
            yield self(text)


def split_long_text(text: str, limit: int) -> list[str]:
    """Consecutive pieces of `text`, each at most `limit` characters, that join back to `text`.

    A piece ends after the last paragraph break (blank line) in the second half of its window, else
    after the last line break there, else after the last space; only a window without any of these
    is cut hard. Cutting between paragraphs keeps PHI spans (which never cross a blank line in
    practice) whole, and the second-half rule keeps the number of pieces close to len/limit.
    """
    if limit <= 0:
        raise ValueError("limit must be positive")
    pieces: list[str] = []
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
        pieces.append(text[start:cut])
        start = cut
    pieces.append(text[start:])
    return pieces


def _pipe_within_max_length(nlp, texts: list[str], batch_size: int) -> Iterator[Any]:
    """nlp.pipe(texts), except that a text over nlp.max_length is processed in pieces and joined
    back with Doc.from_docs (exact text, entities, span groups and their extension values kept)."""
    limit = getattr(nlp, "max_length", SPACY_DEFAULT_MAX_LENGTH) or SPACY_DEFAULT_MAX_LENGTH
    if all(len(t) <= limit for t in texts):
        yield from nlp.pipe(texts, batch_size=batch_size)
        return
    from spacy.tokens import Doc

    pieces: list[str] = []
    owner: list[int] = []  # index in `texts` of each piece
    for i, text in enumerate(texts):
        for piece in split_long_text(text, limit) if len(text) > limit else [text]:
            pieces.append(piece)
            owner.append(i)
    current, parts = 0, []
    for i, doc in zip(owner, nlp.pipe(pieces, batch_size=batch_size)):
        if i != current:
            yield parts[0] if len(parts) == 1 else Doc.from_docs(parts, ensure_whitespace=False, exclude=["tensor"])
            current, parts = i, []
        parts.append(doc)
    if parts:
        yield parts[0] if len(parts) == 1 else Doc.from_docs(parts, ensure_whitespace=False, exclude=["tensor"])


def pack_of(nlp):
    """The RegexPack of a deid pipeline, or None."""
    for name, component in nlp.pipeline:
        if getattr(component, "pack", None) is not None:
            return component.pack
    return None


class Router:
    def __init__(self, pipelines: dict[str, Any], fallback: str | Any | None = "union",
                 detect_chars: int = 1000, seed: int = 0, min_confidence: float = 0.5,
                 union_labels: Sequence[str] = DEFAULT_UNION_LABELS, extra_packs: Sequence = ()):
        if not pipelines and fallback in ("union", None) and not extra_packs:
            raise ValueError("router: no pipelines to route to")
        self.pipelines = dict(pipelines)
        self.detect_chars = detect_chars
        self.seed = seed
        self.min_confidence = min_confidence
        self.stats = RouterStats()
        self._blank_nlp = None
        if fallback == "union":
            packs = [p for p in (pack_of(nlp) for nlp in self.pipelines.values()) if p is not None]
            self.fallback = UnionPacks(packs + list(extra_packs), union_labels)
        elif isinstance(fallback, str):
            if fallback not in self.pipelines:
                raise ValueError(f"router: fallback {fallback!r} is not one of the loaded pipelines {sorted(self.pipelines)}")
            self.fallback = self.pipelines[fallback]
        else:
            self.fallback = fallback  # a pipeline object, or None
        self.fallback_name = fallback if isinstance(fallback, str) else ("custom" if fallback is not None else "none")

    # -------------------------------------------------------------- construction
    @classmethod
    def from_names(cls, names: Sequence[str] | None = None, fallback: str | None = "union", **kwargs) -> "Router":
        import spacy

        from . import merger, pack_component  # noqa: F401  (factories for pipeline folders)

        if not names:
            names = sorted(n for n in spacy.util.get_installed_models() if n.startswith("deid_"))
            if not names:
                raise ValueError("router: no installed deid_* pipeline found (build one: spacy project run build <lang>)")
        pipelines = {}
        for name in names:
            nlp = spacy.load(name)
            if nlp.lang in pipelines:
                raise ValueError(f"router: two pipelines for language {nlp.lang!r} ({name})")
            pipelines[nlp.lang] = nlp
        return cls(pipelines, fallback=fallback, **kwargs)

    # -------------------------------------------------------------- detection
    def detect(self, text: str) -> tuple[str, float]:
        """(language, probability) of the first `detect_chars` characters; ("unknown", 0) if none."""
        from langdetect import DetectorFactory, detect_langs
        from langdetect.lang_detect_exception import LangDetectException

        DetectorFactory.seed = self.seed  # langdetect is random unless seeded
        sample = text[: self.detect_chars]
        try:
            best = detect_langs(sample)[0]
        except (LangDetectException, IndexError):
            return "unknown", 0.0
        return best.lang, float(best.prob)

    def route(self, text: str) -> tuple[str, str, float]:
        lang, prob = self.detect(text)
        if lang in self.pipelines and prob >= self.min_confidence:
            return lang, lang, prob
        return lang, FALLBACK if self.fallback is not None else "none", prob

    # -------------------------------------------------------------- processing
    def __call__(self, text: str) -> Routed:
        return next(self.pipe([text]))

    def pipe(self, texts: Iterable[Any], batch_size: int = 16, chunk_size: int = 256,
             as_tuples: bool = False) -> Iterator[Routed]:
        """Route and process a stream of texts (or (text, meta) tuples); output keeps input order.

        Input is read `chunk_size` documents at a time, so a large stream is never held in memory.
        """
        chunk: list[tuple[str, Any]] = []
        for item in texts:
            chunk.append(item if as_tuples else (item, None))
            if len(chunk) >= chunk_size:
                yield from self._process(chunk, batch_size)
                chunk = []
        if chunk:
            yield from self._process(chunk, batch_size)

    def _blank(self):
        """The tokenizer-only pipeline for documents with no pipeline and no fallback (made once)."""
        if self._blank_nlp is None:
            import spacy

            self._blank_nlp = spacy.blank("xx")
        return self._blank_nlp

    def _process(self, chunk: list[tuple[str, Any]], batch_size: int) -> Iterator[Routed]:
        routes = [self.route(text) for text, _ in chunk]
        groups: dict[str, list[int]] = {}
        for i, (lang, target, prob) in enumerate(routes):
            groups.setdefault(target, []).append(i)
            self.stats.docs += 1
            self.stats.detected[lang] += 1
            self.stats.by_pipeline[target] += 1
            if target in (FALLBACK, "none"):
                self.stats.unrouted_languages[lang] += 1
        docs: list[Any] = [None] * len(chunk)
        for target, idx in groups.items():
            texts = [chunk[i][0] for i in idx]
            if target == "none":
                nlp = self._blank()  # tokenizer only: no spans
            else:
                nlp = self.fallback if target == FALLBACK else self.pipelines[target]
            processed = _pipe_within_max_length(nlp, texts, batch_size)
            for i, doc in zip(idx, processed):
                docs[i] = doc
        for i, (text, meta) in enumerate(chunk):
            lang, target, prob = routes[i]
            yield Routed(docs[i], lang, target, round(prob, 4), meta)
