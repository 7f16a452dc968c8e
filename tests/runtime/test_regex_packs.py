"""Runs every test case of every locale regex pack, plus the pack-wide guarantees.

Each case in regex_packs/<lc>/pack.yml says: for this input, the whole pack reports exactly these
matches of the pattern's label (or of the labels the case names). Negatives expect nothing.
Run one locale alone with `pytest tests/runtime/test_regex_packs.py -k "fr"`.
"""

from __future__ import annotations

import time

# Timed with process_time (this process' CPU time), not the wall clock: a machine busy with other
# work (a parallel build, a second test run) must not turn a linear pattern into a failure.
from pathlib import Path

import pytest

from conftest import CHECKOUT, regex_pack  # tests/ is on sys.path (pyproject's pythonpath)
from deid_factory.packs import check_case
from deid_runtime.canonical import CANONICAL_LABELS
from deid_runtime.regex_pack import RegexPack, trim

PACKS_DIR = CHECKOUT / "regex_packs"
LOCALES = sorted(p.name for p in PACKS_DIR.iterdir() if (p / "pack.yml").exists())


def _all_cases():
    for locale in LOCALES:
        for pattern in regex_pack(locale).patterns:
            for index, case in enumerate(pattern.cases):
                kind = "neg" if not case.get("expect") else "pos"
                yield pytest.param(locale, pattern.name, index, id=f"{locale}:{pattern.name}:{index}:{kind}")


def test_every_locale_pack_is_found():
    assert {"es", "fr", "en"} <= set(LOCALES), LOCALES


@pytest.mark.parametrize("locale,pattern_name,index", list(_all_cases()))
def test_pack_case(locale: str, pattern_name: str, index: int):
    pack = regex_pack(locale)
    pattern = next(p for p in pack.patterns if p.name == pattern_name)
    result = check_case(pack, pattern, index)
    assert result.passed, result.describe()
    case = pattern.cases[index]
    if "kind" in case:
        kinds = {m.kind for m in pack.find(case["text"]) if m.label == pattern.label}
        assert case["kind"] in kinds, f"pack {locale!r}, pattern {pattern_name!r}, case {index}: kind {case['kind']!r} not in {kinds}"


@pytest.mark.parametrize("locale", LOCALES)
def test_pack_has_enough_cases(locale: str):
    cases = [c for p in regex_pack(locale).patterns for c in p.cases]
    negatives = [c for c in cases if not c.get("expect")]
    assert len(cases) >= 40, f"{locale}: {len(cases)} cases, need at least 40"
    assert len(negatives) * 3 >= len(cases), f"{locale}: {len(negatives)} negatives of {len(cases)}, need a third"
    untested = [p.name for p in regex_pack(locale).patterns if not p.cases]
    assert not untested, f"{locale}: patterns without cases: {untested}"


@pytest.mark.parametrize("locale", LOCALES)
def test_pack_labels_are_canonical_and_matches_trimmed(locale: str):
    pack = regex_pack(locale)
    assert set(pack.labels) <= set(CANONICAL_LABELS)
    for pattern in pack.patterns:
        for case in pattern.cases:
            for m in pack.find(case["text"]):
                assert m.text == case["text"][m.start : m.end]
                assert trim(case["text"], m.start, m.end) == (m.start, m.end), (locale, pattern.name, m)


ADVERSARIAL = {
    "digits": "1" * 100_000,
    "digits_spaced": "12 " * 33_000,
    "dots": "." * 100_000,
    "at_signs": "@" * 100_000,
    "dots_and_at": ".@" * 50_000,
    "word_dots": "a." * 50_000,
    "letters": "a" * 100_000,
    "email_like": ("a" * 50 + ".") * 2_000 + "@",
    "dashes_digits": "1-" * 50_000,
    "colons_hex": "a:" * 50_000,
    "slashes": "1/" * 50_000,
}


@pytest.mark.parametrize("locale", LOCALES)
def test_no_catastrophic_backtracking(locale: str):
    """Each pattern on each 100 kB adversarial input; the whole pack must finish well within a second."""
    pack = regex_pack(locale)
    slowest = (0.0, "", "")
    total = 0.0
    for input_name, text in ADVERSARIAL.items():
        for pattern in pack.patterns:
            started = time.process_time()
            for _ in pattern.regex.finditer(text):
                pass
            elapsed = time.process_time() - started
            total += elapsed
            slowest = max(slowest, (elapsed, pattern.name, input_name))
        assert slowest[0] < 0.5, f"{locale}: pattern {slowest[1]!r} took {slowest[0]:.2f}s on {slowest[2]!r}"
    per_input = total / len(ADVERSARIAL)
    assert per_input < 1.0, f"{locale}: whole pack took {per_input:.2f}s per 100 kB input on average"


def test_blacklist_window_is_respected(tmp_path: Path):
    """A blacklist term only suppresses matches within its window, on either side."""
    (tmp_path / "pack.yml").write_text(
        "locale: xx\npatterns:\n  - name: zip\n    label: LOCATION\n    regex: '(?<!\\d)\\d{5}(?!\\d)'\n",
        encoding="utf-8",
    )
    (tmp_path / "context.yml").write_text(
        "blacklists:\n  LOCATION:\n    - terms: [leucocitos]\n      window: 15\n", encoding="utf-8"
    )
    pack = RegexPack.from_dir(tmp_path)
    assert [m.text for m in pack.find("leucocitos: 12000")] == []
    assert [m.text for m in pack.find("12000 leucocitos")] == []
    assert [m.text for m in pack.find("leucocitos normales; vive en 28004")] == ["28004"]


def test_failed_check_digit_is_generic_id_only_after_a_trigger(tmp_path: Path):
    (tmp_path / "pack.yml").write_text(
        "locale: xx\npatterns:\n  - name: rpps\n    label: ID\n    validator: fr_rpps\n"
        "    regex: '(?<!\\d)\\d{11}(?!\\d)'\n",
        encoding="utf-8",
    )
    (tmp_path / "context.yml").write_text("triggers:\n  ID:\n    - terms: [IPP]\n      window: 10\n", encoding="utf-8")
    pack = RegexPack.from_dir(tmp_path)
    valid, invalid = "10003034567", "10003034568"
    assert [(m.text, m.kind, m.validated) for m in pack.find(f"RPPS {valid}")] == [(valid, "rpps", True)]
    assert pack.find(f"numéro {invalid}") == []
    assert [(m.text, m.kind) for m in pack.find(f"IPP : {invalid}")] == [(invalid, "generic")]


def _pairwise_reference(pack: RegexPack, text: str) -> list:
    """The overlap resolution spelled out naively: rank, then keep what overlaps nothing kept."""
    ranked = sorted(pack.candidates(text), key=lambda m: (not m.validated, -m.score, -(m.end - m.start), m.start))
    kept: list = []
    for match in ranked:
        if not any(match.start < k.end and k.start < match.end for k in kept):
            kept.append(match)
    return sorted(kept, key=lambda m: m.start)


@pytest.mark.parametrize("locale", LOCALES)
def test_overlap_resolution_agrees_with_pairwise_reference(locale: str):
    pack = regex_pack(locale)
    text = " ".join(case["text"] for pattern in pack.patterns for case in pattern.cases)
    found = pack.find(text)
    assert found == _pairwise_reference(pack, text)
    assert all(a.end <= b.start for a, b in zip(found, found[1:]))


@pytest.mark.parametrize("locale", LOCALES)
def test_many_matches_do_not_make_find_quadratic(locale: str):
    """30 000 e-mail addresses in 210 kB: resolving overlaps by comparing each match with every kept
    one took about 50 s here; with neighbour checks (bisect) it takes well under a second."""
    pack = regex_pack(locale)
    text = "a@b.fr " * 30_000
    started = time.process_time()
    found = pack.find(text)
    elapsed = time.process_time() - started
    assert len(found) == 30_000
    assert elapsed < 3.0, f"{locale}: find took {elapsed:.2f}s for {len(found)} matches"
