"""The build decision: what a build is, decided once by `factory extract` and written to
`corpus/build.json`; the later corpus stages (detect, filter, placeholder, translate, surrogate)
read it (`--build corpus/build.json`, a dep of their steps) instead of each taking the build's
flags and deriving the same answers again.

A build makes deid_<lang> from a source corpus in `source_lang` (translated when that is another
language) and, in a translation build, a share of `lang`'s own synthetic corpus. Every record keeps
its language (`Record.lang`) until translation, and each language of the build has one *use*, which
tells each later stage what to do with a record of that language:

  translate    the source in another language: detection keeps what is written in source_lang, the
               corpus thresholds judge it, it is translated and its PHI surrogate-replaced
  surrogates   the source, already in `lang` (an annotated corpus not trained on as annotated):
               judged by the thresholds, not translated, its PHI surrogate-replaced
  as_written   written by the synthetic corpus in `lang` (the source of a same-language synthetic
               build, the native share of a translation build): the thresholds pass it, and it keeps
               the fictitious values the generator wrote
  native       the user's own annotated notes in `lang` (the native path): detection and thresholds
               only report, the notes are trained on as annotated
  skipped      not extracted at all; `skipped` says why (no translation route, native_share 1)

`translation` says whether and how the source is translated: "none" (source in `lang`, or not
used), "route" (an installed route was found: `route`), "unchecked" (extract was not told where the
Argos packages are: translate looks, and `if_no_route` applies there), "skipped" (no route).

The file holds no record text and no path but the source's (as given); it is deterministic, so
weasel reruns a later step only when the decision changed.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .outputs import write_json_atomic

USES = ("translate", "surrogates", "as_written", "native", "skipped")
TRANSLATION = ("none", "route", "unchecked", "skipped")
IF_NO_ROUTE = ("skip", "fail")
FILE_NAME = "build.json"


class BuildDecisionError(ValueError):
    """A build.json that cannot be used; the message names the file."""


@dataclass
class BuildDecision:
    lang: str  # the build's language: the pipeline's, the translation's target
    source_lang: str  # the source corpus' language
    source_format: str
    source_path: str | None = None
    native: bool = False  # the native path: the source is the user's annotated notes in `lang`
    native_share: float = 0.0  # share of lang's own synthetic corpus asked for (translation builds)
    translation: str = "none"
    route: list[str] | None = None
    if_no_route: str = "fail"
    uses: dict[str, str] = field(default_factory=dict)  # language -> use (USES)
    records: dict[str, int] = field(default_factory=dict)  # language -> records extracted
    skipped: list[dict[str, str]] = field(default_factory=list)  # {"what", "why"}, ids and counts only

    def __post_init__(self) -> None:
        bad = {lang: use for lang, use in self.uses.items() if use not in USES}
        if bad:
            raise BuildDecisionError(f"unknown use {bad} (one of {', '.join(USES)})")
        if self.translation not in TRANSLATION:
            raise BuildDecisionError(f"unknown translation {self.translation!r} (one of {', '.join(TRANSLATION)})")
        if self.if_no_route not in IF_NO_ROUTE:
            raise BuildDecisionError(f"if_no_route must be skip or fail, not {self.if_no_route!r}")

    # -- what the stages ask -------------------------------------------------------------------
    def use_of(self, lang: str | None) -> str | None:
        """How the records of `lang` are used (None: the build has none)."""
        return self.uses.get(lang) if lang else None

    @property
    def keeps_all(self) -> bool:
        """Detection and the corpus thresholds only report (the native path keeps every note)."""
        return self.native

    @property
    def as_written(self) -> bool:
        """The records in `lang` were written by the synthetic corpus and keep their values."""
        return self.use_of(self.lang) == "as_written"

    @property
    def translation_skipped(self) -> bool:
        return self.translation == "skipped"

    def why_skipped(self) -> str:
        """What is not used and why, in one line (for reports and summaries)."""
        return "; ".join(f"{s['what']}: {s['why']}" for s in self.skipped)

    # -- file ----------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def write(self, path: str | Path) -> None:
        write_json_atomic(path, self.to_dict())

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str = "<build>") -> "BuildDecision":
        known = set(cls.__dataclass_fields__)
        missing = [key for key in ("lang", "source_lang", "source_format") if key not in data]
        if missing:
            raise BuildDecisionError(f"{where}: missing {', '.join(missing)}")
        unknown = sorted(set(data) - known)
        if unknown:
            raise BuildDecisionError(f"{where}: unknown key(s) {', '.join(unknown)}")
        try:
            return cls(**data)
        except BuildDecisionError as err:
            raise BuildDecisionError(f"{where}: {err}") from None

    @classmethod
    def read(cls, path: str | Path) -> "BuildDecision":
        """A build.json written by `factory extract --build`; a clear error naming the file."""
        path = Path(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise FileNotFoundError(f"{path}: no build decision (run `factory extract ... --build {path}` first)") from None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
            raise BuildDecisionError(f"{path}: not a build decision ({type(err).__name__})") from None
        if not isinstance(data, dict):
            raise BuildDecisionError(f"{path}: not a build decision (a JSON object is expected)")
        return cls.from_dict(data, where=str(path))


def languages_of(source_lang: str | None, lang: str | None, default: str = "es") -> tuple[str, str]:
    """(source language, build language) of a command run without --build: each defaults to the
    other, both to `default` (the embedded corpus' language)."""
    source_lang = source_lang or lang or default
    return source_lang, lang or source_lang


def read_build(path: str | Path | None) -> BuildDecision | None:
    """The decision of a command's `--build PATH` (None when no path was given); a missing or bad
    file is a bad --build option (one line naming the file, exit status 2)."""
    if path is None:
        return None
    try:
        return BuildDecision.read(path)
    except (FileNotFoundError, BuildDecisionError) as err:
        import typer

        raise typer.BadParameter(str(err), param_hint="--build") from None
