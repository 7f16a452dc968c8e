"""spaCy component `deid_tagger`: PHI entities from a token tagger over BILUO tags.

A per-token softmax over the tags O, B-X, I-X, L-X, U-X (X a canonical label), on the same tok2vec
as the transition-based NER, decoded into entities by a constrained Viterbi search (the best tag
sequence that is a valid BILUO sequence: no I-X without a B-X before it, no entity left open).

Why next to spaCy's NER:
  - speed: one matrix product and a softmax per token, where the transition-based parser runs a
    state machine with a hidden layer per action (docs/training.md measures both);
  - a recall knob: the per-token probabilities are kept, and `o_bias` lowers the log-probability
    of the O tag before decoding, so tokens the model is not confident are safe become PHI. A
    de-identifier that must not leak ("inverse de-identification") raises it, trading precision
    for recall; the evaluation draws the precision/recall curve of this knob.
Entities go to doc.ents (as the NER's do), so the merger, the evaluation and the router treat
both components alike.

Training: the gold tags are the reference entities aligned to the predicted tokens
(`Example.get_aligned_ner`), so the training data is the same DocBins as for the NER; tokens whose
alignment is ambiguous are left out of the loss.
"""

from __future__ import annotations

from itertools import islice
from typing import Callable, Iterable

import numpy
from spacy.language import Language
from spacy.pipeline.tagger import Tagger
from spacy.scorer import get_ner_prf
from spacy.tokens import Doc, Span
from spacy.training import Example, validate_examples
from thinc.api import Config, Model, SequenceCategoricalCrossentropy

OUTSIDE = "O"
_NEG_INF = -1e9

# Named settings of the recall knob (`factory redact --recall-bias high`; docs/training.md, "Recall
# setting"). "high": the smallest o_bias of the evaluation's grid at which deid_es built from
# MEDDOCAN train reached token recall >= 0.992 on the tune half of MEDDOCAN dev (0.99 plus a margin
# for notes never looked at); on the final half it gives 0.9906 at token precision 0.940. Each
# build's evaluation report gives its own curve and the o_bias at which it reaches 0.99.
RECALL_PRESETS = {"as_trained": 0.0, "high": 12.0}


def recall_bias(value: str | float) -> float:
    """An o_bias from a number or a preset name of RECALL_PRESETS (ValueError otherwise)."""
    if isinstance(value, str) and value.strip().lower() in RECALL_PRESETS:
        return RECALL_PRESETS[value.strip().lower()]
    try:
        bias = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"recall bias {value!r}: a number >= 0 or one of {', '.join(RECALL_PRESETS)}") from None
    if not bias >= 0:  # also refuses NaN
        raise ValueError(f"recall bias must be >= 0 (got {value!r})")
    return bias

# The component's own small CNN when it is used alone; the factory's configs give it a listener
# to the pipeline's shared tok2vec instead (languages/<lc>/configs/config.cfg).
DEFAULT_MODEL = Config().from_str("""
[model]
@architectures = "spacy.Tagger.v2"
nO = null
normalize = false

[model.tok2vec]
@architectures = "spacy.HashEmbedCNN.v2"
pretrained_vectors = null
width = 96
depth = 4
embed_size = 2000
window_size = 1
maxout_pieces = 3
subword_features = true
""")["model"]


def make_biluo_tagger(nlp: Language, name: str, model: Model, o_bias: float) -> "BiluoTagger":
    return BiluoTagger(nlp.vocab, model, name, o_bias=o_bias)


def _ner_scorer(examples: Iterable[Example], **kwargs) -> dict:
    return get_ner_prf(examples, **kwargs)


def _softmax(logits: numpy.ndarray) -> numpy.ndarray:
    shifted = numpy.exp(logits - logits.max(axis=1, keepdims=True))
    return shifted / shifted.sum(axis=1, keepdims=True)


class BiluoTagger(Tagger):
    """A Tagger whose labels are BILUO entity tags and whose output is doc.ents."""

    def __init__(self, vocab, model: Model, name: str = "deid_tagger", *, o_bias: float = 0.0,
                 scorer: Callable | None = _ner_scorer):
        super().__init__(vocab, model, name, overwrite=False, scorer=scorer)
        # an attribute, not part of self.cfg: from_disk replaces cfg with the saved one, and the
        # knob must follow the pipeline's config (spacy.load(..., config={...}) overrides it)
        self.o_bias = float(o_bias)
        self._transitions: numpy.ndarray | None = None

    # -- labels and the BILUO grammar -----------------------------------------------------------
    @property
    def entity_labels(self) -> tuple[str, ...]:
        return tuple(sorted({tag.split("-", 1)[1] for tag in self.labels if tag != OUTSIDE}))

    def add_entity_label(self, label: str) -> None:
        for prefix in "BILU":
            self.add_label(f"{prefix}-{label}")
        self._transitions = None

    def _grammar(self) -> tuple[numpy.ndarray, numpy.ndarray, numpy.ndarray]:
        """(transition, start, end) additive masks: 0 where allowed, -inf where not."""
        if self._transitions is None:
            tags = self.labels
            n = len(tags)
            trans = numpy.full((n, n), _NEG_INF, dtype="float32")
            start = numpy.full(n, _NEG_INF, dtype="float32")
            end = numpy.full(n, _NEG_INF, dtype="float32")
            for j, tag in enumerate(tags):
                prefix, _, label = tag.partition("-")
                if tag == OUTSIDE or prefix in "BU":
                    start[j] = 0.0
                if tag == OUTSIDE or prefix in "LU":
                    end[j] = 0.0
                for i, prev in enumerate(tags):
                    p_prefix, _, p_label = prev.partition("-")
                    closed = prev == OUTSIDE or p_prefix in "LU"
                    if closed and (tag == OUTSIDE or prefix in "BU"):
                        trans[i, j] = 0.0
                    elif not closed and prefix in "IL" and label == p_label:
                        trans[i, j] = 0.0
            self._transitions = (trans, start, end)
        return self._transitions

    # -- inference --------------------------------------------------------------------------------
    def predict(self, docs):
        """Per-token tag probabilities (an array per doc), decoded in set_annotations."""
        if not any(len(doc) for doc in docs):
            return [numpy.zeros((0, len(self.labels)), dtype="float32") for _ in docs]
        outputs = [self.model.ops.to_numpy(s) for s in self.model.predict(docs)]
        if self._logits_at_inference():
            outputs = [_softmax(x) for x in outputs]
        return outputs

    def _logits_at_inference(self) -> bool:
        """spaCy's Tagger.v2 skips the softmax at inference unless `normalize = true` (argmax needs
        no normalisation); the decoder and the o_bias knob need probabilities."""
        if not self.model.has_ref("softmax"):
            return False
        return not self.model.get_ref("softmax").attrs.get("softmax_normalize", True)

    def decode(self, probs: numpy.ndarray, o_bias: float | None = None) -> list[int]:
        """The best valid BILUO tag sequence (tag ids) for one document's probabilities."""
        n_tokens = probs.shape[0]
        if n_tokens == 0:
            return []
        scores = numpy.log(numpy.clip(probs, 1e-12, 1.0))
        bias = self.o_bias if o_bias is None else o_bias
        if bias:
            scores[:, self.labels.index(OUTSIDE)] -= bias
        trans, start, end = self._grammar()
        best = scores[0] + start
        back = numpy.zeros((n_tokens, scores.shape[1]), dtype="int32")
        for t in range(1, n_tokens):
            total = best[:, None] + trans
            back[t] = total.argmax(axis=0)
            best = total[back[t], numpy.arange(total.shape[1])] + scores[t]
        best = best + end
        path = [int(best.argmax())]
        for t in range(n_tokens - 1, 0, -1):
            path.append(int(back[t][path[-1]]))
        return path[::-1]

    def spans_from_tags(self, doc: Doc, tag_ids: list[int]) -> list[Span]:
        """The entities of a tag sequence, without whitespace tokens at their edges.

        spaCy makes a run of spaces or a line break a token of its own; the tagger may tag it as
        the end of the entity before it ("Anna Bujons Tur" + padding up to a column), and a span
        whose text ends in spaces is wrong in its offsets and counts as a miss in strict scoring
        (on MEDDOCAN dev, a few dozen names and addresses of header blocks and signatures).
        """
        spans, begin = [], None
        for i, tag_id in enumerate(tag_ids):
            prefix, _, label = self.labels[tag_id].partition("-")
            if prefix == "U":
                spans.append((i, i + 1, label))
            elif prefix == "B":
                begin = i
            elif prefix == "L" and begin is not None:
                spans.append((begin, i + 1, label))
                begin = None
        trimmed = []
        for start, end, label in spans:
            while start < end and doc[start].is_space:
                start += 1
            while end > start and doc[end - 1].is_space:
                end -= 1
            if start < end:
                trimmed.append(Span(doc, start, end, label=label))
        return trimmed

    def set_annotations(self, docs, batch_probs):
        if isinstance(docs, Doc):
            docs = [docs]
        for doc, probs in zip(docs, batch_probs):
            doc.ents = self.spans_from_tags(doc, self.decode(probs))

    # -- training ---------------------------------------------------------------------------------
    def get_loss(self, examples, scores):
        validate_examples(examples, "BiluoTagger.get_loss")
        loss_func = SequenceCategoricalCrossentropy(names=self.labels, normalize=False)
        truths = []
        for eg in examples:
            truths.append([tag if tag and tag != "-" and tag in self.labels else None for tag in eg.get_aligned_ner()])
        d_scores, loss = loss_func(scores, truths)
        if self.model.ops.xp.isnan(loss):
            raise ValueError(f"NaN loss in {self.name}")
        return float(loss), d_scores

    def initialize(self, get_examples, *, nlp=None, labels=None):
        self.add_label(OUTSIDE)
        entity_labels = set(labels or [])
        if not labels:
            for example in get_examples():
                entity_labels.update(ent.label_ for ent in example.reference.ents)
        for label in sorted(entity_labels):
            self.add_entity_label(label)
        docs, golds = [], []
        for example in islice(get_examples(), 10):
            docs.append(example.x)
            tags = [t if t in self.labels else OUTSIDE for t in example.get_aligned_ner()]
            golds.append(self.model.ops.asarray([[1.0 if tag == label else 0.0 for label in self.labels] for tag in tags],
                                                dtype="float32"))
        self.model.initialize(X=docs, Y=golds)

    def rehearse(self, examples, **kwargs):  # pragma: no cover - not used by the factory
        raise NotImplementedError("deid_tagger does not support rehearsal")


Language.factory(
    "deid_tagger",
    assigns=["doc.ents"],
    default_config={"o_bias": 0.0, "model": DEFAULT_MODEL},
    default_score_weights={"ents_f": 1.0, "ents_p": 0.0, "ents_r": 0.0, "ents_per_type": None},
)(make_biluo_tagger)
