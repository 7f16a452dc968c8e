"""`factory synth`: the synthetic corpus written as a stage writes its records (`extract --format
synth`), with the corpus summary as its report."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import srsly
import typer

from ..extract import extract
from ..outputs import write_text_atomic


def synth(out: str | Path, n: int = 1000, seed: int = 13, lang: str = "es", report: str | Path | None = None) -> dict[str, Any]:
    """`extract --format synth` with the corpus summary as its report (and the seed): the `factory synth` command."""
    summary = {**extract(None, "synth", lang, out, n=n, seed=seed)["synth"], "seed": seed, "lang": lang, "out": str(out)}
    if report:
        write_text_atomic(report, srsly.json_dumps(summary, indent=2))
    return summary


def synth_command(
    out: Path = typer.Option(..., "--out", help="Output JSONL of records"),
    n: int = typer.Option(1000, "--n", help="Number of records"),
    seed: int = typer.Option(13, "--seed", help="Random seed (same seed, same corpus)"),
    lang: str = typer.Option("es", "--lang", help="Language of corpora/synth/<lang>/"),
    report: Path | None = typer.Option(None, "--report", help="Write the corpus report (JSON) here"),
) -> None:
    """Generate the embedded synthetic corpus: N clinical notes with gold PHI spans (= extract --format synth)."""
    import json

    rep = synth(out, n=n, seed=seed, lang=lang, report=report)
    typer.echo(json.dumps({k: v for k, v in rep.items() if k != "phi_per_kind"}, ensure_ascii=False, indent=1))
