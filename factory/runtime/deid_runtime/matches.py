"""The spans every finder returns and the two operations they all share: `trim` (punctuation and
spaces off a match's edges, paired brackets kept) and `NonOverlapping` (keep the first of any two
intervals that overlap, in log time). Kept apart from regex_pack.py so the context rules
(context_rules.py), which the pack loads, can build matches without importing the pack back."""
from __future__ import annotations

import bisect
from dataclasses import dataclass

from .text import BOUNDARY_CHARS  # trimmed from both ends of every match


@dataclass(frozen=True)
class Match:
    start: int
    end: int
    label: str
    text: str
    pattern: str
    kind: str
    score: float
    validated: bool = False

    def as_tuple(self) -> tuple[int, int, str]:
        return (self.start, self.end, self.label)


def trim(text: str, start: int, end: int) -> tuple[int, int]:
    """Drop leading/trailing punctuation and spaces, but keep a bracket whose partner is inside the
    match ("(+34) 912 345 678" keeps its "(", "912 345 678)" loses its ")")."""
    # The partner brackets are looked up once per side: testing `")" in text[start + 1 : end]` at
    # every step copied the rest of the match each time: quadratic on a URL that ends in thousands
    # of closing brackets (tests/runtime/test_regex_properties.py).
    last_close = text.rfind(")", start, end)
    while start < end:
        ch = text[start]
        if ch == "(" and last_close > start:
            break
        if ch not in BOUNDARY_CHARS:
            break
        start += 1
    first_open = text.find("(", start, end)
    while end > start:
        ch = text[end - 1]
        if ch == ")" and 0 <= first_open < end - 1:
            break
        if ch not in BOUNDARY_CHARS:
            break
        end -= 1
    return start, end


class NonOverlapping:
    """Intervals kept in order of arrival unless they overlap one kept before. The kept intervals
    never overlap, so sorted by start they are sorted by end too: a new one can only collide with
    its two neighbours (found by bisection), not with every kept one, which made thousands of
    spans in one long note quadratic."""

    def __init__(self):
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.values: list = []

    def overlaps(self, start: int, end: int) -> bool:
        i = bisect.bisect_right(self.starts, start)
        return (i > 0 and self.ends[i - 1] > start) or (i < len(self.starts) and self.starts[i] < end)

    def add(self, start: int, end: int, value) -> bool:
        """Keep (start, end) unless it overlaps a kept interval; True if kept."""
        if self.overlaps(start, end):
            return False
        i = bisect.bisect_right(self.starts, start)
        self.starts.insert(i, start)
        self.ends.insert(i, end)
        self.values.insert(i, value)
        return True

    def uncovered(self, start: int, end: int) -> list[tuple[int, int]]:
        """The parts of [start, end) that no kept interval covers."""
        gaps, pos = [], start
        i = max(bisect.bisect_right(self.starts, start) - 1, 0)
        while i < len(self.starts) and self.starts[i] < end:
            if self.ends[i] > pos:
                if self.starts[i] > pos:
                    gaps.append((pos, self.starts[i]))
                pos = self.ends[i]
            i += 1
        if pos < end:
            gaps.append((pos, end))
        return gaps

    def items(self) -> list:
        """The kept values, by position."""
        return list(self.values)
