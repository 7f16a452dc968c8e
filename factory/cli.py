"""The `factory` command: one typer app, one thin command per stage (each stage module owns its command)."""

from __future__ import annotations

import typer

app = typer.Typer(help="Build deid_<lang> de-identification pipelines from annotated clinical narratives.", no_args_is_help=True)


def main() -> None:  # pragma: no cover - console entry
    app()
