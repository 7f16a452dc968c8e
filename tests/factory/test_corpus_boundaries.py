"""Every gold span of every synthetic corpus starts and ends on a sensible boundary.

A wrong gold boundary is taught to the model and then scored as its miss: "(+34) 913748402" labelled
from "+34)" cost 7 strict PHONE misses in the es report, and every scaffolded locale inherits such a
span from the locale it starts from. The check is corpus-wide and locale-agnostic: a span
  - neither starts nor ends with a space or punctuation, except a bracket whose partner is inside it
    (the one trim every stage shares, deid_runtime.text.trim_span);
  - does not cut a word or a number: the character just outside it is not a letter next to a letter
    or a digit next to a digit;
  - holds no unbalanced bracket ("+34)" alone is the tail of a bracketed code, not a value).
"""

from __future__ import annotations

import pytest

from deid_factory.locale import synth_dir
from deid_factory.synth import generate_records
from deid_runtime.text import trim_span

LOCALES = sorted(p.name for p in synth_dir().iterdir() if (p / "sections.yml").is_file())
N_RECORDS = 300


def _same_kind(a: str, b: str) -> bool:
    """Two letters or two digits side by side: one word or one number. A letter against a digit is a
    boundary (scanned "le06/07/1994", "NHC272226")."""
    return (a.isalpha() and b.isalpha()) or (a.isdigit() and b.isdigit())


def _boundary_problems(text: str, start: int, end: int) -> list[str]:
    value = text[start:end]
    problems = []
    if trim_span(text, start, end) != (start, end):
        problems.append("edge punctuation or space")
    if start > 0 and _same_kind(text[start - 1], value[:1]):
        problems.append("starts inside a word")
    if end < len(text) and _same_kind(value[-1:], text[end]):
        problems.append("ends inside a word")
    for opening, closing in ("()", "[]"):
        depth = 0
        for ch in value:
            depth += (ch == opening) - (ch == closing)
            if depth < 0:
                break
        if depth != 0:
            problems.append(f"unbalanced {opening}{closing}")
    return problems


def test_the_check_finds_the_boundaries_it_names():
    text = "Tel. (+34) 913748402, Sr. Gómez."
    assert _boundary_problems(text, text.index("(+34)"), text.index(",")) == []
    assert _boundary_problems(text, text.index("+34"), text.index(",")) == ["unbalanced ()"]
    assert _boundary_problems(text, text.index("(+34)") - 1, text.index(",")) == ["edge punctuation or space"]
    assert _boundary_problems(text, text.index("Gómez") + 1, text.index("Gómez") + 5) == ["starts inside a word"]
    assert _boundary_problems(text, text.index("Gómez"), text.index("Gómez") + 3) == ["ends inside a word"]


@pytest.mark.parametrize("lang", LOCALES)
def test_every_gold_span_of_the_synthetic_corpus_sits_on_word_boundaries(lang):
    bad = []
    for record in generate_records(N_RECORDS, seed=5, lang=lang):
        for span in record.spans:
            for problem in _boundary_problems(record.text, span.start, span.end):
                bad.append(f"{record.id} {span.label} {span.start}-{span.end}: {problem}")
    # ids and offsets only: a corpus is synthetic, but the message format is the project's everywhere
    assert bad == [], f"{len(bad)} gold spans with a bad boundary, e.g. {bad[:10]}"
