"""Language detection of the router: langdetect's `detect_langs`, with the same results in a
fraction of its CPU time (docs/router.md, "Language detection", has the measurements).

The router asks for the language of a chunk of documents at once (`LangDetect.probabilities_many`);
`probabilities` is the same computation for one text. `lang_detect()` is the process' detector (the
profiles are loaded once), `by_language` merges langdetect's regional codes into spaCy's ("zh-cn"
-> "zh").
"""

from __future__ import annotations

import math
import random
import re
import sys
from typing import Any, Container, Sequence


class LangDetect:
    """langdetect's `detect_langs`, bit for bit, computed for many texts at once.

    This is langdetect's algorithm on its own profiles, operation for operation: the same text
    cleaning, the same n-grams in the same order, the same seeded draws (random.Random(seed): each
    trial's gauss, then one choice per update), and the same floating-point operations in the same
    order (an update multiplies every language's probability by weight + p(n-gram | language),
    elementwise, as langdetect's loop does; the sum at each convergence check is Python's
    left-to-right sum), so the probabilities are langdetect's. What is faster: characters are
    normalised by one str.translate, the n-grams of a word are computed once per process (n-grams
    never span a space), an n-gram's probabilities are a row of a numpy table, each run of five
    updates between two checks is one reduction, and the numpy calls of a run serve every text of
    the call at once (their per-call cost was most of the time left).
    """

    ALPHA, ALPHA_WIDTH, N_TRIAL = 0.5, 0.05, 7  # langdetect's Detector defaults
    ITERATION_LIMIT, CONV_THRESHOLD, BASE_FREQ, PROB_THRESHOLD = 1000, 0.99999, 10000, 0.1
    MAX_TEXT_LENGTH = 10000
    MAX_CACHED_WORDS = 100_000  # words whose n-grams are kept (at most a few tens of MB)
    # random words of a seed's stream read at first (7 trials of ~90 draws need ~1,000); a text
    # that needs more (long trials) makes the call read twice as many
    WINDOW_WORDS = 2048
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
        self._streams: dict[int, tuple[random.Random, Any]] = {}  # seed -> its generator, the words it drew so far
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
        return self.probabilities_many([text], seed, settle)[0]

    def _stream(self, seed: int, n_words: int):
        """At least the first `n_words` 32-bit words of random.Random(seed), in the order it draws
        them (getrandbits(32 * n) lays them out least significant first); the words drawn are kept
        per seed, and a longer stream continues the same generator."""
        np = self._np
        rnd, words = self._streams.get(seed, (None, None))
        if rnd is None:
            rnd = random.Random()
            rnd.seed(seed)
            words = np.empty(0, dtype=np.int64)
        if len(words) < n_words:
            more = max(n_words - len(words), self.WINDOW_WORDS)
            drawn = np.frombuffer(rnd.getrandbits(32 * more).to_bytes(4 * more, "little"), dtype="<u4")
            words = np.concatenate([words, drawn.astype(np.int64)])
            self._streams[seed] = (rnd, words)
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
        """[self.probabilities(text, seed, settle) for text in texts]: langdetect's trials of every
        text run side by side, each run of updates one set of numpy calls for all of them. Each
        text's random draws are read from the seed's word stream (every text starts from the same
        seed) instead of drawn one by one: a draw is the next word whose top bits are below the
        number of n-grams, as random.choice draws it, and each trial's gauss takes its words as
        random.gauss does. A text that reaches the end of the words read so far makes the stream
        twice as long, for every text (the words before stay where they were)."""
        np = self._np
        results: list[list[tuple[str, float]] | None] = [None] * len(texts)
        rows_of = [self._ngrams(self._text(text)) for text in texts]
        todo = [j for j, rows in enumerate(rows_of) if rows]
        for j, rows in enumerate(rows_of):
            if not rows:
                results[j] = []
        if not todo:
            return results
        n_docs = len(todo)
        picks_of = [np.array(rows_of[j], dtype=np.intp) for j in todo]
        words = np.empty(0, dtype=np.int64)
        positions: list[Any] = []  # per document: word positions of its accepted draws
        drawn = lengths = None  # every document's draws in order, one row of `stride` each (flat); how many each has
        stride = 0
        stale = True  # the running rows' offsets into `drawn` and their limits are to be recomputed

        def read(n_words: int) -> None:
            """Read the stream's first n_words words and every document's draws from them."""
            nonlocal words, drawn, lengths, stride, stale
            words = self._stream(seed, n_words)
            stride = len(words) + 5  # a run reads up to 5 draws from where it starts
            positions.clear()
            drawn = np.zeros(n_docs * stride, dtype=np.intp)
            for d, picks in enumerate(picks_of):
                top = words >> (32 - len(picks).bit_length())  # getrandbits(k) of each word
                pos = np.flatnonzero(top < len(picks))
                positions.append(pos)
                drawn[d * stride:d * stride + len(pos)] = picks[top[pos]]
            lengths = np.array([len(pos) for pos in positions])
            stale = True

        read(self.WINDOW_WORDS)
        table, n_langs = self._table, len(self.langs)
        langprob = np.zeros((n_docs, n_langs))
        trials = [0] * n_docs
        cached: list[float | None] = [None] * n_docs  # the gauss value random.gauss keeps for its next call
        # the state of the documents still running, one row each (`ids`: which document), kept
        # compact (a finished document's row is dropped) so that a run of updates reads them whole
        ids = np.arange(n_docs)
        ptr = np.zeros(n_docs, dtype=np.intp)  # index of the document's next draw
        size = np.ones(n_docs, dtype=np.intp)  # updates in the coming run: 1 (a trial's first), then 5
        updates = np.zeros(n_docs, dtype=np.intp)  # updates of the trial so far (langdetect's i + 1)
        weight = np.zeros(n_docs)
        prob = np.full((n_docs, n_langs), 1.0 / n_langs)
        first_runs = True  # some row's coming run is the first of its trial

        def start_trial(row: int, word: int) -> None:
            """The next trial of the document in `row`, from word position `word`: its gauss, its first draw."""
            d = int(ids[row])
            if cached[d] is None:
                if word + 4 > len(words):
                    read(2 * len(words))
                z, cached[d] = self._gauss(words, word)
                word += 4
            else:
                z, cached[d] = cached[d], None
            weight[row] = (self.ALPHA + z * self.ALPHA_WIDTH) / self.BASE_FREQ
            ptr[row] = np.searchsorted(positions[d], word)

        for row in range(n_docs):
            start_trial(row, 0)
        sequential_sum = sys.version_info < (3, 12)  # sum() of floats adds left to right before 3.12
        steps = np.arange(5)
        while len(ids):
            if stale:
                offsets, limits, stale = ids * stride, lengths[ids], False
            end = ptr + size
            if (end > limits).any():
                read(2 * len(words))  # a document's run goes past the words read so far
                continue
            factors = table[drawn[(offsets + ptr)[:, None] + steps]]  # (documents, 5, languages)
            factors += weight[:, None, None]
            if first_runs:
                factors[size == 1, 1:, :] = 1.0  # a run of one update: times 1.0 changes nothing
            prob = np.multiply.reduce(np.concatenate((prob[:, None, :], factors), axis=1), axis=1)
            totals = (np.add.accumulate(prob, axis=1)[:, -1] if sequential_sum
                      else np.array([sum(row) for row in prob.tolist()]))
            maxes = prob.max(axis=1)
            prob /= totals[:, None]
            ptr = end
            updates += size
            # the largest of the p / total is the largest p / total (division rounds monotonically)
            converged = (maxes / totals > self.CONV_THRESHOLD) | (updates > self.ITERATION_LIMIT)
            if first_runs:
                size.fill(5)
                first_runs = False
            if not converged.any():
                continue
            running = np.ones(len(ids), dtype=bool)
            for row in np.flatnonzero(converged).tolist():
                d = int(ids[row])
                langprob[d] += prob[row] / self.N_TRIAL
                trials[d] += 1
                if settle is not None:
                    best = int(langprob[d].argmax())
                    sure = float(langprob[d, best])
                    if sure > max(settle[1], 0.5 + 1e-9) and self.langs[best] in settle[0]:
                        results[todo[d]] = [(self.langs[best], sure)]
                        running[row] = False
                        continue
                if trials[d] == self.N_TRIAL:
                    found = [(lang, float(p)) for lang, p in zip(self.langs, langprob[d]) if p > self.PROB_THRESHOLD]
                    results[todo[d]] = sorted(found, key=lambda item: item[1], reverse=True)
                    running[row] = False
                    continue
                prob[row] = 1.0 / n_langs
                size[row], updates[row] = 1, 0
                first_runs = True
                start_trial(row, int(positions[d][ptr[row] - 1]) + 1)
            if not running.all():
                ids, ptr, size, updates, weight, prob = (a[running] for a in (ids, ptr, size, updates, weight, prob))
                stale = True
        return results


_LANG_DETECT: LangDetect | None = None


def lang_detect() -> LangDetect:
    """The process' LangDetect (the profiles are loaded once)."""
    global _LANG_DETECT
    if _LANG_DETECT is None:
        _LANG_DETECT = LangDetect()
    return _LANG_DETECT


def by_language(found: list[tuple[str, float]]) -> dict[str, float]:
    """langdetect's (code, probability) pairs by spaCy language code ("zh-cn" -> "zh": no region)."""
    probs: dict[str, float] = {}
    for lang, prob in found:
        lang = lang.split("-")[0]
        probs[lang] = probs.get(lang, 0.0) + prob
    return probs
