"""Language router: send each document to the deid_<lang> pipeline of its language, or to none.

Router(pipelines={"es": nlp_es, "fr": nlp_fr}) picks a document's pipeline, in this order:
  1. `force_lang` (`factory redact --lang es`): every document goes to that pipeline;
  2. the language the document declares (a JSONL record's "lang"): that pipeline; a declared
     language without a pipeline is not second-guessed by detection;
  3. detection, restricted to the loaded languages: langdetect (seeded, so the same text always
     routes the same way) reads the first `detect_chars` characters, and the loaded language with
     the highest probability is chosen if that probability is at least `min_confidence` and the
     sample holds at least `min_letters` letters (below that, langdetect guesses). LangDetect
     computes langdetect's probabilities, bit for bit, for a chunk of documents at once in a sixth
     of langdetect's time, and stops as soon as a loaded language is sure to be chosen: the
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

import math
import random
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Container, Iterable, Iterator, Mapping, Sequence

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


class LangDetect:
    """langdetect's `detect_langs`, with the same results for a fraction of its CPU time.

    Language detection was the router's largest cost after the pipelines themselves (about 3 ms a
    note, a fifth of a small pipeline's time). This is langdetect's algorithm on its own profiles,
    operation for operation: the same text cleaning, the same n-grams in the same order, the same
    seeded draws (random.Random(seed): each trial's gauss, then one choice per update), and the same
    floating-point operations in the same order (an update multiplies every language's probability
    by weight + p(n-gram | language), elementwise, as langdetect's loop does; the sum at each
    convergence check is Python's left-to-right sum), so the probabilities are bit for bit
    langdetect's. What is faster: characters are normalised by one str.translate, the n-grams of a
    word are computed once per process (n-grams never span a space), an n-gram's probabilities are
    a row of a numpy table, and each run of five updates between two checks is one reduction;
    probabilities_many() runs those reductions for many texts at once (the router's way). CPU per
    1,000-character note: langdetect 2.7 ms, probabilities() 1.0 ms, probabilities_many() 0.35 ms,
    and 0.25 ms when settling (below).
    """

    ALPHA, ALPHA_WIDTH, N_TRIAL = 0.5, 0.05, 7  # langdetect's Detector defaults
    ITERATION_LIMIT, CONV_THRESHOLD, BASE_FREQ, PROB_THRESHOLD = 1000, 0.99999, 10000, 0.1
    MAX_TEXT_LENGTH = 10000
    MAX_CACHED_WORDS = 100_000  # words whose n-grams are kept (at most a few tens of MB)
    _SPACES = re.compile(" +")
    _LATIN = re.compile("[A-z]")
    # from U+0300: langdetect means to leave out Latin Extended Additional, but compares the block's
    # number with its name, so it never does
    _NON_LATIN = re.compile("[\u0300-\U0010ffff]")

    def __init__(self):
        import numpy as np
        from langdetect import detector_factory
        from langdetect.detector import Detector
        from langdetect.utils.ngram import NGram

        detector_factory.init_factory()
        factory = detector_factory._factory
        self._np = np
        self.langs = list(factory.langlist)
        self._probs = factory.word_lang_prob_map
        self._url, self._mail = Detector.URL_RE, Detector.MAIL_RE
        self._normalize_vi = NGram.normalize_vi
        self._dmarks = tuple(NGram.DMARK_CLASS)  # the combining marks normalize_vi looks for
        # NGram.normalize changes characters of the Basic Multilingual Plane only
        self._translate = {cp: norm for cp in range(0x10000)
                           if not 0xD800 <= cp <= 0xDFFF and (norm := NGram.normalize(chr(cp))) != chr(cp)}
        self._words: dict[tuple[str, bool], list[int]] = {}  # (word, a space follows) -> rows of its n-grams
        self._rows: dict[str, int] = {}  # n-gram -> its row in _table
        self._table = np.empty((1024, len(self.langs)))
        self._streams: dict[int, Any] = {}  # seed -> its first random words (probabilities_many)

    def _row(self, gram: str) -> int:
        row = self._rows.get(gram)
        if row is None:
            row = len(self._rows)
            if row == len(self._table):
                self._table = self._np.concatenate([self._table, self._np.empty_like(self._table)])
            self._table[row] = self._probs[gram]
            self._rows[gram] = row
        return row

    def _text(self, text: str) -> str:
        """Detector.append() and cleaning_text(), then NGram.normalize() of every character. Each
        step is skipped where it cannot change the text (no "http", no "@", no combining mark, no
        two spaces, no character from U+0300)."""
        if "http" in text:
            text = self._url.sub(" ", text)
        if "@" in text:
            text = self._mail.sub(" ", text)
        if any(mark in text for mark in self._dmarks):
            text = self._normalize_vi(text)
        text = text[: self.MAX_TEXT_LENGTH]
        if "  " in text:
            text = self._SPACES.sub(" ", text)  # a space after a space is dropped
        if self._NON_LATIN.search(text) and len(self._LATIN.findall(text)) * 2 < len(self._NON_LATIN.findall(text)):
            text = self._LATIN.sub("", text)
        return text.translate(self._translate)

    def _word_rows(self, word: str, spaced: bool) -> list[int]:
        """Detector._extract_ngrams() (NGram.add_char() inlined) over one word of normalised text,
        from the state every word starts in (after a space), and the space after it if one follows."""
        probs, rows = self._probs, []
        grams, capital = " ", False
        for ch in word + " " if spaced else word:
            last = grams[-1]
            if last == " ":
                grams, capital = " ", False
            elif len(grams) >= 3:
                grams = grams[1:]
            grams += ch
            if ch.isupper():
                if last.isupper():
                    capital = True
            else:
                capital = False
            if capital:
                continue
            for n in (1, 2, 3):
                if len(grams) < n:
                    break
                w = grams[-n:]
                if w != " " and w in probs:
                    rows.append(self._row(w))
        return rows

    def _ngrams(self, text: str) -> list[int]:
        """The rows of the n-grams of normalised text, in langdetect's order."""
        words, result = self._words, []
        parts = text.split(" ")
        last = len(parts) - 1
        for k, word in enumerate(parts):
            if not word:
                continue
            key = (word, k < last)
            rows = words.get(key)
            if rows is None:
                rows = self._word_rows(*key)
                if len(words) < self.MAX_CACHED_WORDS:
                    words[key] = rows
            result += rows
        return result

    def probabilities(self, text: str, seed: int, settle: tuple[Container[str], float] | None = None
                      ) -> list[tuple[str, float]]:
        """(language, probability) above 0.1, most likely first: langdetect's detect_langs(text)
        with DetectorFactory.seed = seed; [] for a text without features.

        settle=(languages, floor): stop after the trial at which one of `languages` is sure to come
        out most likely with at least `floor`: its probability so far (a sum over the trials done,
        which the remaining trials can only raise) exceeds both `floor` and one half (so no other
        language can reach it). The result is then that language alone, with that lower bound. A
        clear text settles after 4 of the 7 trials; the language chosen is the one all 7 give."""
        np = self._np
        rows = self._ngrams(self._text(text))
        if not rows:
            return []
        used, local = np.unique(np.array(rows), return_inverse=True)
        doc_table = self._table[used]  # the document's n-grams only
        picks, n_picks, n_langs = local.tolist(), len(rows), len(self.langs)
        rnd = random.Random()
        rnd.seed(seed)
        # random.choice(seq) is seq[rnd._randbelow(len(seq))], which draws getrandbits(k) until below len(seq)
        getrandbits, bits = rnd.getrandbits, n_picks.bit_length()
        multiply = np.multiply.reduce
        work = np.empty((6, n_langs))  # the probabilities, then the factors of up to five updates
        langprob = np.zeros(n_langs)
        for _ in range(self.N_TRIAL):
            prob = work[0]
            prob.fill(1.0 / n_langs)
            weighted = doc_table + (self.ALPHA + rnd.gauss(0.0, 1.0) * self.ALPHA_WIDTH) / self.BASE_FREQ
            take = weighted.take
            i, size = 0, 1  # updates 0, then 1-5, 6-10...: a convergence check after each run
            while True:
                drawn = []
                for _ in range(size):
                    r = getrandbits(bits)
                    while r >= n_picks:
                        r = getrandbits(bits)
                    drawn.append(picks[r])
                take(drawn, 0, work[1:size + 1])
                multiply(work[:size + 1], axis=0, out=prob)  # row by row, as langdetect's loop does
                i += size - 1
                values = prob.tolist()
                total = sum(values)
                prob /= total
                # the largest of the p / total is the largest p / total (division rounds monotonically)
                if max(values) / total > self.CONV_THRESHOLD or i >= self.ITERATION_LIMIT:
                    break
                i, size = i + 1, 5
            langprob += prob / self.N_TRIAL
            if settle is not None:
                best = int(langprob.argmax())
                sure = float(langprob[best])
                if sure > max(settle[1], 0.5 + 1e-9) and self.langs[best] in settle[0]:
                    return [(self.langs[best], sure)]
        found = [(lang, float(p)) for lang, p in zip(self.langs, langprob) if p > self.PROB_THRESHOLD]
        return sorted(found, key=lambda item: item[1], reverse=True)

    # ------------------------------------------------------------------ many documents at once
    MIN_BATCH = 4  # fewer texts are computed one by one
    WINDOW_WORDS = 2048  # random words of a seed's stream read ahead by probabilities_many (7 trials of ~90 draws need ~1,000)

    def _stream(self, seed: int):
        """The first WINDOW_WORDS 32-bit words of random.Random(seed), in the order it draws them
        (getrandbits(32 * n) lays them out least significant first)."""
        words = self._streams.get(seed)
        if words is None:
            rnd = random.Random()
            rnd.seed(seed)
            n = self.WINDOW_WORDS
            words = self._np.frombuffer(rnd.getrandbits(32 * n).to_bytes(4 * n, "little"), dtype="<u4").astype(self._np.int64)
            self._streams[seed] = words
        return words

    @staticmethod
    def _gauss(words, pos: int) -> tuple[float, float]:
        """random.Random.gauss() from the words at pos..pos+3 (two random() calls): the value it
        returns and the one it keeps for its next call."""
        def uniform(a: int, b: int) -> float:  # random.random(): 53 bits from two words
            return ((a >> 5) * 67108864.0 + (b >> 6)) * (1.0 / 9007199254740992.0)

        x2pi = uniform(int(words[pos]), int(words[pos + 1])) * (2.0 * math.pi)
        g2rad = math.sqrt(-2.0 * math.log(1.0 - uniform(int(words[pos + 2]), int(words[pos + 3]))))
        return 0.0 + math.cos(x2pi) * g2rad * 1.0, math.sin(x2pi) * g2rad

    def probabilities_many(self, texts: Sequence[str], seed: int, settle: tuple[Container[str], float] | None = None
                           ) -> list[list[tuple[str, float]]]:
        """[self.probabilities(text, seed, settle) for text in texts], the same numbers, computed
        for all the texts together: the numpy calls of each run of updates serve every document
        (their per-call cost was most of the time left), and each document's random draws are read
        from the seed's word stream (every document starts from the same seed) instead of drawn one
        by one: a draw is the next word whose top bits are below the number of n-grams, as
        random.choice draws it, and each trial's gauss takes its words as random.gauss does. A
        document that would read past the words read ahead is computed alone."""
        np = self._np
        results: list[list[tuple[str, float]] | None] = [None] * len(texts)
        rows_of = [self._ngrams(self._text(text)) for text in texts]
        todo = [j for j, rows in enumerate(rows_of) if rows]
        for j, rows in enumerate(rows_of):
            if not rows:
                results[j] = []
        if len(todo) < self.MIN_BATCH:  # reading ahead costs more than it saves on one or two texts
            for j in todo:
                results[j] = self.probabilities(texts[j], seed, settle)
            return results
        words = self._stream(seed)
        n_words = len(words)
        table, n_langs = self._table, len(self.langs)
        positions, lengths = [], []  # per document: word positions of its accepted draws, their count
        drawn = np.zeros((len(todo), n_words + 5), dtype=np.intp)  # per document: the rows it draws, in order
        for d, j in enumerate(todo):
            picks = np.array(rows_of[j], dtype=np.intp)
            top = words >> (32 - len(picks).bit_length())  # getrandbits(k) of each word
            pos = np.flatnonzero(top < len(picks))
            positions.append(pos)
            lengths.append(len(pos))
            drawn[d, :len(pos)] = picks[top[pos]]
        n_docs = len(todo)
        lengths_np = np.array(lengths)
        langprob = np.zeros((n_docs, n_langs))
        trials = [0] * n_docs
        cached: list[float | None] = [None] * n_docs  # the gauss value random.gauss keeps for its next call
        active = np.arange(n_docs)
        ptr = np.zeros(n_docs, dtype=np.intp)  # index of the document's next draw
        size = np.ones(n_docs, dtype=np.intp)  # updates in the coming run: 1, then 5
        done_updates = np.zeros(n_docs, dtype=np.intp)  # langdetect's i: the update the run ends on
        weight = np.zeros(n_docs)
        prob = np.full((n_docs, n_langs), 1.0 / n_langs)
        alone: list[int] = []  # documents to compute alone (past the words read ahead)

        def start_trial(d: int, word: int) -> bool:
            """Trial trials[d] of document d from word position `word`: its gauss, its first draw."""
            if cached[d] is None:
                if word + 4 > n_words:
                    return False
                z, cached[d] = self._gauss(words, word)
                word += 4
            else:
                z, cached[d] = cached[d], None
            weight[d] = (self.ALPHA + z * self.ALPHA_WIDTH) / self.BASE_FREQ
            ptr[d] = np.searchsorted(positions[d], word)
            return True

        for d in range(n_docs):
            if not start_trial(d, 0):
                alone.append(d)
        keep = np.ones(n_docs, dtype=bool)
        keep[alone] = False
        active = active[keep]
        sequential_sum = sys.version_info < (3, 12)  # sum() of floats adds left to right before 3.12
        steps = np.arange(5)
        while len(active):
            a_ptr, a_size = ptr[active], size[active]
            past = a_ptr + a_size > lengths_np[active]
            if past.any():
                alone += active[past].tolist()
                active = active[~past]
                continue
            factors = table[drawn[active[:, None], a_ptr[:, None] + steps]]  # (docs, 5, languages)
            factors += weight[active, None, None]
            single = a_size == 1
            if single.any():
                factors[single, 1:, :] = 1.0  # a run of one update: times 1.0 changes nothing
            a_prob = np.multiply.reduce(np.concatenate((prob[active, None, :], factors), axis=1), axis=1)
            totals = (np.add.accumulate(a_prob, axis=1)[:, -1] if sequential_sum
                      else np.array([sum(row) for row in a_prob.tolist()]))
            maxes = a_prob.max(axis=1)
            a_prob /= totals[:, None]
            prob[active] = a_prob
            ptr[active] = a_ptr + a_size
            updates = done_updates[active] + a_size - 1
            converged = (maxes / totals > self.CONV_THRESHOLD) | (updates >= self.ITERATION_LIMIT)
            done_updates[active] = updates + 1
            size[active] = 5
            finished = []
            for d in active[converged].tolist():
                langprob[d] += prob[d] / self.N_TRIAL
                trials[d] += 1
                if settle is not None:
                    best = int(langprob[d].argmax())
                    sure = float(langprob[d, best])
                    if sure > max(settle[1], 0.5 + 1e-9) and self.langs[best] in settle[0]:
                        results[todo[d]] = [(self.langs[best], sure)]
                        finished.append(d)
                        continue
                if trials[d] == self.N_TRIAL:
                    found = [(lang, float(p)) for lang, p in zip(self.langs, langprob[d]) if p > self.PROB_THRESHOLD]
                    results[todo[d]] = sorted(found, key=lambda item: item[1], reverse=True)
                    finished.append(d)
                    continue
                prob[d] = 1.0 / n_langs
                size[d], done_updates[d] = 1, 0
                if not start_trial(d, int(positions[d][ptr[d] - 1]) + 1):
                    alone.append(d)
                    finished.append(d)
            if finished:
                active = active[~np.isin(active, finished)]
        for d in alone:
            results[todo[d]] = self.probabilities(texts[todo[d]], seed, settle)
        return results


_LANG_DETECT: LangDetect | None = None


def lang_detect() -> LangDetect:
    """The process' LangDetect (the profiles are loaded once)."""
    global _LANG_DETECT
    if _LANG_DETECT is None:
        _LANG_DETECT = LangDetect()
    return _LANG_DETECT


def _by_language(found: list[tuple[str, float]]) -> dict[str, float]:
    """langdetect's (code, probability) pairs by spaCy language code ("zh-cn" -> "zh": no region)."""
    probs: dict[str, float] = {}
    for lang, prob in found:
        lang = lang.split("-")[0]
        probs[lang] = probs.get(lang, 0.0) + prob
    return probs


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
        return _by_language(lang_detect().probabilities(text[: self.detect_chars], self.seed,
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
                routes[i] = self._detected_route(_by_language(probs))
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
