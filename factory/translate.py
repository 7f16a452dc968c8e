"""Translation of one placeholder record (stage 5's core): every placeholder must come back exactly.

A record that loses one is retried sentence by sentence, then clause by clause, and dropped with a
reason only if that fails too. Only the translation engine's own errors (ENGINE_ERRORS) count as a
failed translation; anything else is a bug and propagates. The Argos route itself is in
`argos_env.py`, the resumable stage over a file (workers, resume, report) in `translate_job.py`.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from typing import Any, Callable

import srsly

from .placeholders import find_placeholders, without_placeholder_text
from .records import Record

# The errors the translation engine raises for a text it cannot translate: CTranslate2 is C++ bound
# with pybind11, which turns std::runtime_error (input longer than the model's positions, CUDA out of
# memory...) into RuntimeError, std::invalid_argument / length_error / domain_error into ValueError
# and std::out_of_range into IndexError; SentencePiece raises RuntimeError, Argos and its sentence
# splitters (spaCy, Stanza, MiniSBD) ValueError or RuntimeError. Only these make a record "dropped"
# (after the sentence and clause retries); anything else (TypeError, AttributeError, KeyError,
# NetworkBlocked...) is a programming or set-up error and stops the stage naming the record id.
ENGINE_ERRORS: tuple[type[BaseException], ...] = (RuntimeError, ValueError, IndexError)
# Subclasses of RuntimeError that are never a bad translation.
_NOT_ENGINE_ERRORS: tuple[type[BaseException], ...] = (NotImplementedError, RecursionError)

def is_engine_error(err: BaseException) -> bool:
    """True for an error of the translation engine on one text (see ENGINE_ERRORS)."""
    return isinstance(err, ENGINE_ERRORS) and not isinstance(err, _NOT_ENGINE_ERRORS)


class RecordFailed(RuntimeError):
    """A record raised something that is not an engine error: the stage stops. The message names the
    record id and the exception type only, never the text (PHI); what was written stays written."""

    phi_free = True  # scaleout.py may carry it back from a Dask worker whole

    def __init__(self, record_id: str, error: str):
        super().__init__(f"record {record_id}: {error}")
        self.record_id = record_id
        self.error = error

    def __reduce__(self):  # picklable across worker processes
        return (RecordFailed, (self.record_id, self.error))


_SENTENCE_END = re.compile(r"(?<=[.!?…])[\"'»”)\]]*\s+|\n+")
_CLAUSE_END = re.compile(r"(?<=[.!?…,;:])[\"'»”)\]]*\s+|\n+")


def split_chunks(text: str, level: str) -> list[tuple[str, str]]:
    """Split text into (chunk, following separator) pairs whose concatenation is the text."""
    if level == "record":
        return [(text, "")]
    pattern = _SENTENCE_END if level == "sentence" else _CLAUSE_END
    result: list[tuple[str, str]] = []
    cursor = 0
    for m in pattern.finditer(text):
        if m.start() > cursor:
            result.append((text[cursor : m.start()], m.group()))
        elif result:
            result[-1] = (result[-1][0], result[-1][1] + m.group())
        cursor = m.end()
    if cursor < len(text) or not result:
        result.append((text[cursor:], ""))
    return result


LEVELS = ("record", "sentence", "clause")


def translate_record(record: Record, hops: Callable[[str], list[str]], route: list[str], target: str) -> dict[str, Any]:
    """Translate one placeholder record; return {"status": kept|repaired|dropped, "record"?, "reason"?, ...}.

    `hops(text)` returns the text after each hop of the route. Only ids and reasons are reported."""
    terms = (record.meta.get("placeholders") or {}).get("terms") or {}
    attempts: list[dict[str, Any]] = []
    first_problems = None
    for level in LEVELS:
        chunks = split_chunks(record.text, level)
        if level != "record" and len(chunks) <= 1 and attempts and attempts[-1]["chunks"] <= 1:
            continue  # same single chunk as the previous level: retrying changes nothing
        per_hop: list[list[str]] = [[] for _ in range(len(route) - 1)]
        failed = None
        for chunk, sep in chunks:
            try:
                outs = hops(chunk) if chunk.strip() else [chunk] * (len(route) - 1)
            except ENGINE_ERRORS as err:  # the engine could not translate this text: retried / dropped
                if not is_engine_error(err):
                    raise
                failed = err
                break
            for i, out in enumerate(outs):
                per_hop[i].append(out + sep)
        if failed is not None:
            attempts.append({"level": level, "chunks": len(chunks), "problem": f"error:{type(failed).__name__}"})
            continue
        texts = ["".join(parts) for parts in per_hop]
        problems: dict[str, str] = {}
        stage = "target"
        for hop_index, hop_text in enumerate(texts):
            spans, problems = find_placeholders(hop_text, terms)
            if problems:
                stage = "pivot" if hop_index < len(texts) - 1 else "target"
                break
        if first_problems is None:
            first_problems = len(problems)
        if not problems and not texts[-1].strip() and record.text.strip():
            problems = {"": "empty"}
        if not problems:
            meta = without_placeholder_text(record.meta)
            meta["source_text"] = record.text
            meta["source_lang"] = record.lang
            if len(texts) > 1:
                meta["pivot_text"] = texts[0]
                meta["pivot_lang"] = route[1]
            meta["translation"] = {
                "input_digest": input_digest(record),
                "route": route,
                "method": level,
                "attempts": attempts,
                "first_attempt_problem_terms": first_problems,
            }
            out = Record(record.id, target, texts[-1], spans, meta)
            return {"status": "kept" if level == "record" else "repaired", "method": level, "record": out.to_dict(), "terms": len(terms), "first_problems": first_problems}
        reason = sorted(Counter(problems.values()).items(), key=lambda kv: (-kv[1], kv[0]))[0][0]
        attempts.append({"level": level, "chunks": len(chunks), "problem": reason, "stage": stage, "terms_affected": len(problems)})
    last = attempts[-1] if attempts else {"problem": "empty"}
    reason = last["problem"]
    if last.get("stage") == "pivot":
        reason = f"{reason}_at_pivot"
    return {"status": "dropped", "id": record.id, "input_digest": input_digest(record), "reason": reason, "attempts": attempts, "terms": len(terms), "first_problems": first_problems if first_problems is not None else len(terms)}



def input_digest(record: Record) -> str:
    """Fingerprint of an input record: a resumed run redoes records whose input changed since."""
    return hashlib.sha1(srsly.json_dumps(record.to_dict(), sort_keys=True).encode("utf-8")).hexdigest()[:16]
