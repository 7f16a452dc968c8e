"""spaCy component `deid_spacing`: the NER reads a note with runs of spaces as if single-spaced.

Text extracted from a PDF or a scan often writes two or more spaces between words ("Mohamed  El
Amrani  Bouziane", "49  años"). spaCy's tokenizer keeps every space after the first as a token of
its own, so the network sees a word, a blank, a word: a context no note of the synthetic corpus
has, and it cuts names and ages in pieces or labels their halves apart. This component, placed
right after the NER, runs the pipeline's tok2vec and NER again on a copy of the Doc without those
double spaces (longer runs, tabs and line breaks stay: they separate columns and end spans) and
writes the entities it finds back onto the original tokens, so offsets never change; an entity of
the first reading that no entity of the second overlaps is kept (what the NER flagged is never let
out). A Doc with no double space is left as it is, at no cost.

Measured in docs/router.md ("Runs of spaces").
"""

from __future__ import annotations

from spacy.language import Language
from spacy.tokens import Doc, Span


def _blank(token) -> bool:
    """The second space of a double space between two words (a token " "). Longer runs and tabs
    stay: they separate the columns of a header or a table ("Patient: Boersma   Born: ..."), and
    a line break ends spans."""
    return token.text == " "


def without_blanks(doc: Doc) -> tuple[Doc, list[int]] | None:
    """A copy of `doc` without its blank tokens, and for each of its tokens the index of the token of
    `doc` it copies; None when `doc` has no blank token."""
    kept = [t.i for t in doc if not _blank(t)]
    if len(kept) == len(doc):
        return None
    words = [doc[i].text for i in kept]
    spaces = [bool(doc[i].whitespace_) or (i + 1 < len(doc) and _blank(doc[i + 1])) for i in kept]
    return Doc(doc.vocab, words=words, spaces=spaces), kept


class SingleSpacedNER:
    def __init__(self, nlp: Language, name: str, tok2vec: str, ner: str):
        self.nlp, self.name = nlp, name
        self.tok2vec_name, self.ner_name = tok2vec, ner

    def __call__(self, doc: Doc) -> Doc:
        compact = without_blanks(doc)
        if compact is None or self.ner_name not in self.nlp.pipe_names:
            return doc
        copy, kept = compact
        if self.tok2vec_name in self.nlp.pipe_names:
            copy = self.nlp.get_pipe(self.tok2vec_name)(copy)
        copy = self.nlp.get_pipe(self.ner_name)(copy)
        found = [Span(doc, kept[e.start], kept[e.end - 1] + 1, label=e.label_) for e in copy.ents]
        taken = bytearray(len(doc))
        for span in found:
            taken[span.start:span.end] = b"\x01" * (span.end - span.start)
        # what the first reading flagged and the second did not touch stays PHI: never let out
        found += [e for e in doc.ents if not any(taken[e.start:e.end])]
        doc.ents = sorted(found, key=lambda span: span.start)
        return doc

    def pipe(self, docs, batch_size: int = 128):
        for doc in docs:
            yield self(doc)


@Language.factory("deid_spacing", default_config={"tok2vec": "tok2vec", "ner": "deid_tagger"})
def make_spacing(nlp: Language, name: str, tok2vec: str, ner: str) -> SingleSpacedNER:
    return SingleSpacedNER(nlp, name, tok2vec, ner)
