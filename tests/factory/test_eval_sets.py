"""Hand-written sets: readable, valid, as counted, and unseen.

Two kinds of set, each a brat folder that `factory evaluate` scores pipelines on:
  - corpora/eval/<lc>/, the challenge set: only ever scored, never looked at for a choice;
  - corpora/tune/<lc>/, the tuning set: may be looked at (error analysis, settings such as the
    recall knob), so that the challenge set can stay unseen.
These tests read every set with the project's own brat reader and check that
  - it holds at least MIN_DOCUMENTS[kind] documents (MIN_DOCUMENTS_OF for a set that asked for
    fewer: the Catalan sets of issue 29) and reads without a skipped record or a trimmed span;
  - every span is valid as written in the .ann file: the annotated string equals the text slice,
    the label is canonical, no space or punctuation at either end, no line break inside;
  - the counts its README.md states (documents, spans per label) are the counts of the files, so
    every label the set claims is really there;
  - no document shares text with a training source of the project (corpora/synth/, every locale):
    the word 8-grams of a document's PHI-free stretches are looked up in the training sources'
    text. A copied or lightly edited document shares most of its 8-grams; a stock phrase of
    French letters ("Je vous prie de croire, chère Consœur, ...") that a template may also use
    is a handful of them, so a document fails when more than MAX_SHARED_NGRAMS of its 8-grams
    occur in a training source;
  - no tuning document shares text, by the same rule, with a document of the challenge set of its
    language: a choice made on a tuning set that repeats the challenge set's wording would be a
    choice made on the challenge set;
  - for the sets written by the same hand as their language's generator (Catalan), the rule is
    stricter: not one word 8-gram of a challenge document's PHI-free text occurs in that
    language's synthetic corpus or in its tuning set.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from deid_factory import PROJECT_ROOT
from deid_factory.labels import CANONICAL_LABELS
from deid_factory.readers import ReadReport, iter_raw, read_corpus
from deid_factory.records import trim_span

CORPORA = PROJECT_ROOT / "corpora"
EVAL_DIR = CORPORA / "eval"
TUNE_DIR = CORPORA / "tune"
TRAINING_SOURCES = CORPORA / "synth"
SETS = sorted((kind.name, p.name) for kind in (EVAL_DIR, TUNE_DIR) if kind.is_dir()
              for p in kind.iterdir() if p.is_dir() and any(p.glob("*.ann")))
TUNE_SETS = [lc for kind, lc in SETS if kind == "tune"]
MIN_DOCUMENTS = {"eval": 40, "tune": 30}
MIN_DOCUMENTS_OF = {"eval/ca": 30, "tune/ca": 15}  # issue 29 asked for at least 30 and 15
# Challenge sets written by the hand that also wrote their language's generator and tuning set:
# they must share no 8-gram at all with either (issue 29).
DISJOINT_SETS = ["ca"]
NGRAM = 8
MAX_SHARED_NGRAMS = 0.05  # share of a document's 8-grams that may also occur in a training source
_WORD = re.compile(r"\w+")


def _read(kind: str, lc: str):
    report = ReadReport()
    records = list(read_corpus(CORPORA / kind / lc, "brat", lang=lc, on_error="raise", report=report))
    return records, report


@pytest.fixture(scope="module", params=SETS, ids=lambda s: "/".join(s))
def eval_set(request):
    """(name, records, report) of one set; the name is its folder under corpora/ (`tune/fr`)."""
    kind, lc = request.param
    return f"{kind}/{lc}", *_read(kind, lc)


def test_the_french_sets_exist():
    assert ("eval", "fr") in SETS, f"no brat files in {EVAL_DIR / 'fr'}"
    assert ("tune", "fr") in SETS, f"no brat files in {TUNE_DIR / 'fr'}"


def test_set_reads_whole_and_is_large_enough(eval_set):
    lc, records, report = eval_set
    need = MIN_DOCUMENTS_OF.get(lc, MIN_DOCUMENTS[lc.split("/")[0]])
    assert len(records) >= need, f"{lc}: {len(records)} documents, need at least {need}"
    assert report.trimmed == 0, f"{lc}: {report.trimmed} spans needed trimming"
    assert report.duplicates == 0 and report.spans_kept == report.spans_read
    assert all(r.spans for r in records), f"{lc}: documents without PHI: {[r.id for r in records if not r.spans]}"


def test_every_span_is_valid_as_written(eval_set):
    lc = eval_set[0]
    problems = []
    for raw in iter_raw(CORPORA / lc, "brat", lc.split("/")[1]):
        assert raw.error is None, raw.error
        for span in raw.spans:
            where = f"{raw.id} [{span.start},{span.end}) {span.label}"
            if span.label not in CANONICAL_LABELS:
                problems.append(f"{where}: label not canonical")
            if span.text is None or raw.text[span.start : span.end] != span.text:
                problems.append(f"{where}: .ann string differs from the text slice")
            if trim_span(raw.text, span.start, span.end) != (span.start, span.end):
                problems.append(f"{where}: space or punctuation at an edge")
            if "\n" in raw.text[span.start : span.end]:
                problems.append(f"{where}: line break inside")
    assert not problems, "\n".join(problems)


def _readme_counts(lc: str) -> tuple[int, dict[str, int]]:
    """The documents count and the per-label span counts from the README's tables (`| X | 1,234 |`);
    `lc` is the set's folder under corpora/ (`eval/fr`)."""
    documents, labels = None, {}
    for line in (CORPORA / lc / "README.md").read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 2 or not cells[1].replace(",", "").isdigit():
            continue
        value = int(cells[1].replace(",", ""))
        if cells[0] == "documents":
            documents = value
        elif cells[0] in CANONICAL_LABELS:
            labels[cells[0]] = value
    return documents, labels


def test_readme_counts_are_the_files_counts(eval_set):
    lc, records, _ = eval_set
    documents, claimed = _readme_counts(lc)
    actual = Counter(s.label for r in records for s in r.spans)
    assert documents == len(records), f"{lc}: README says {documents} documents, the folder holds {len(records)}"
    assert claimed, f"{lc}: README.md has no per-label count table"
    assert claimed == dict(actual), f"{lc}: README counts {claimed} != files {dict(actual)}"
    assert all(n > 0 for n in claimed.values())


# ----------------------------------------------------------------------------- unseen text
def _ngrams(words: list[str]) -> set[tuple[str, ...]]:
    return {tuple(words[i : i + NGRAM]) for i in range(len(words) - NGRAM + 1)}


def phi_free_ngrams(text: str, spans) -> set[tuple[str, ...]]:
    """Lower-cased word 8-grams of the text between PHI spans (none reaches across a span)."""
    grams: set[tuple[str, ...]] = set()
    cut = 0
    for start, end in sorted((s.start, s.end) for s in spans) + [(len(text), len(text))]:
        grams |= _ngrams(_WORD.findall(text[cut:start].lower()))
        cut = max(cut, end)
    return grams


def source_ngrams(folder: Path) -> set[tuple[str, ...]]:
    grams: set[tuple[str, ...]] = set()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        grams |= _ngrams(_WORD.findall(path.read_text(encoding="utf-8", errors="replace").lower()))
    return grams


def shared_documents(records, sources: set[tuple[str, ...]]) -> list[str]:
    """Ids (with the shared share) of the documents whose 8-grams occur too often in `sources`."""
    flagged = []
    for record in records:
        grams = phi_free_ngrams(record.text, record.spans)
        shared = len(grams & sources) / len(grams) if grams else 0.0
        if shared > MAX_SHARED_NGRAMS:
            flagged.append(f"{record.id} ({shared:.0%} of {len(grams)} 8-grams)")
    return flagged


def test_no_document_text_in_the_training_sources(eval_set):
    lc, records, _ = eval_set
    assert TRAINING_SOURCES.is_dir()
    sources = source_ngrams(TRAINING_SOURCES)
    assert len(sources) > 1000, "the training sources were not read"
    grams = [phi_free_ngrams(r.text, r.spans) for r in records]
    assert all(len(g) >= 20 for g in grams), f"{lc}: a document too short for the overlap check"
    flagged = shared_documents(records, sources)
    assert not flagged, f"{lc}: documents sharing text with {TRAINING_SOURCES}: {flagged}"


@pytest.mark.parametrize("lc", TUNE_SETS)
def test_no_tuning_document_text_in_the_challenge_set(lc):
    """A tuning set is looked at so that its language's challenge set need not be: a tuning
    document written from (or lightly edited out of) a challenge document would carry the
    challenge set's wording into every choice made on the tuning set. The challenge set of the
    language must exist, and its documents' word 8-grams (the whole text, PHI included) must hold
    at most MAX_SHARED_NGRAMS of any tuning document's PHI-free 8-grams."""
    assert ("eval", lc) in SETS, f"tune/{lc} has no challenge set {EVAL_DIR / lc} to be kept apart from"
    challenge, _ = _read("eval", lc)
    sources: set[tuple[str, ...]] = set()
    for record in challenge:
        sources |= _ngrams(_WORD.findall(record.text.lower()))
    assert len(sources) > 1000, f"the challenge set eval/{lc} was not read"
    records, _ = _read("tune", lc)
    flagged = shared_documents(records, sources)
    assert not flagged, f"tune/{lc}: documents sharing text with the challenge set eval/{lc}: {flagged}"


def _all_ngrams(records) -> set[tuple[str, ...]]:
    grams: set[tuple[str, ...]] = set()
    for record in records:
        grams |= _ngrams(_WORD.findall(record.text.lower()))
    return grams


@pytest.mark.parametrize("lc", DISJOINT_SETS)
def test_challenge_set_shares_no_8gram_with_its_generator_or_tuning_set(lc):
    """The Catalan challenge set, its tuning set and its generator come from one hand: the 5 %
    allowance above would let a stock sentence through, so here not one word 8-gram of a challenge
    document's PHI-free text may occur in corpora/synth/<lc>/ or anywhere in the tuning set."""
    assert (TRAINING_SOURCES / lc).is_dir(), f"no synthetic corpus {TRAINING_SOURCES / lc}"
    synth = source_ngrams(TRAINING_SOURCES / lc)
    assert len(synth) > 1000, f"the synthetic corpus synth/{lc} was not read"
    tuning = _all_ngrams(_read("tune", lc)[0])
    assert len(tuning) > 1000, f"the tuning set tune/{lc} was not read"
    shared = []
    for record in _read("eval", lc)[0]:
        grams = phi_free_ngrams(record.text, record.spans)
        for name, other in (("synth", synth), ("tune", tuning)):
            common = grams & other
            if common:
                shared.append(f"{record.id}: {len(common)} 8-gram(s) also in {name}/{lc}")
    assert not shared, "\n".join(shared)


def test_overlap_check_finds_a_copied_document(tmp_path: Path):
    """The check above can fail: a training source holding one set document's prose, even with
    other PHI in the slots and a different layout, flags that document and no other."""
    records, _ = _read(*SETS[0])
    copied = max(records, key=lambda r: len(r.text))
    prose = []
    cut = 0
    for span in copied.spans:
        prose.append(copied.text[cut : span.start])
        prose.append("{" + span.label.lower() + "}")
        cut = span.end
    prose.append(copied.text[cut:])
    template = tmp_path / "templates.yml"
    template.write_text("sections:\n  - '" + " ".join("".join(prose).split()).replace("'", "''") + "'\n", encoding="utf-8")
    flagged = shared_documents(records, source_ngrams(tmp_path))
    assert [f.split(" ")[0] for f in flagged] == [copied.id]
