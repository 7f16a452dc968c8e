"""The `factory` command: one typer app, one thin command per stage (each stage module owns its command).

Commands are listed in the order a language is built (typer keeps the order they are added in),
grouped in help panels. The console script is `deid_factory.main`: it applies `--root` before
this module imports the stages.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import typer

from .records import OutputError, RecordError

BUILD = "Build a language (in pipeline order)"
USE = "Use a pipeline"
LOCALES = "Locales and regex packs"
TESTING = "Test kits"
# Help wraps at the terminal's width; written to a pipe or a file (no terminal), rich would wrap it
# at 80 columns: use this width there instead (TERMINAL_WIDTH still overrides both).
HELP_WIDTH_WITHOUT_TERMINAL = 120


class FactoryApp(typer.Typer):
    """The typer app, plus one place that turns expected failures into one line on stderr and exit
    status 1 instead of a traceback: an output that cannot be written (disk full, read-only or
    missing folder), a bad input record, a missing input file. Their messages name the file and
    record, never record text, so they are safe to print (and to keep in CI logs)."""

    def __call__(self, *args, **kwargs):
        if not os.environ.get("TERMINAL_WIDTH"):
            from typer import rich_utils

            rich_utils.MAX_WIDTH = shutil.get_terminal_size((HELP_WIDTH_WITHOUT_TERMINAL, 24)).columns
        try:
            return super().__call__(*args, **kwargs)
        except (OutputError, RecordError, FileNotFoundError) as err:
            typer.echo(f"error: {err}", err=True)
            sys.exit(1)


app = FactoryApp(help="Build deid_<lang> de-identification pipelines from annotated clinical narratives, "
                      "and redact documents with them.", no_args_is_help=True)


@app.callback()
def _global_options(
    root: Path = typer.Option(None, "--root", help="The project to work on (languages/, regex_packs/, corpora/). "
                              "Default: the current folder or the nearest parent that is one, else the data "
                              "the factory ships.", show_default=False),
) -> None:
    from . import PROJECT_ROOT as current  # what the stage modules were imported with

    if root is not None and root.expanduser().resolve() != current:
        # only reachable when the app is run without deid_factory.main (which applies --root first)
        raise typer.BadParameter(f"{root} was not applied before the stages loaded {current}; "
                                 f"run `factory --root {root} ...` or set DEID_FACTORY_ROOT", param_hint="--root")


# ------------------------------------------------------------------ build a language, stage by stage
from .extract import synth_command  # noqa: E402
from .extract import extract_command  # noqa: E402
from .detect import detect_command  # noqa: E402
from .silver import filter_command, silver_command  # noqa: E402
from .stats import stats_command  # noqa: E402
from .placeholders import calibrate_command, placeholder_command  # noqa: E402
from .translate_job import translate_command  # noqa: E402
from .surrogates import surrogate_command  # noqa: E402
from .pretrain import pretrain_command  # noqa: E402
from .train import train_command  # noqa: E402
from .selftrain import selftrain_command  # noqa: E402
from .evaluate import evaluate_command  # noqa: E402
from .errors import errors_command  # noqa: E402
from .package import assemble_command, install_command, package_command  # noqa: E402

for _name, _command in (
    ("synth", synth_command),
    ("extract", extract_command),
    ("detect", detect_command),
    ("filter", filter_command),
    ("silver", silver_command),
    ("stats", stats_command),
    ("placeholder", placeholder_command),
    ("calibrate", calibrate_command),
    ("translate", translate_command),
    ("surrogate", surrogate_command),
    ("pretrain", pretrain_command),
    ("train", train_command),
    ("selftrain", selftrain_command),
    ("evaluate", evaluate_command),
    ("errors", errors_command),
    ("assemble", assemble_command),
    ("package", package_command),
    ("install-wheel", install_command),
):
    app.command(_name, rich_help_panel=BUILD)(_command)

# ------------------------------------------------------------------ use a pipeline
from .redact_cli import redact_command  # noqa: E402

app.command("redact", rich_help_panel=USE)(redact_command)

# ------------------------------------------------------------------ locales, packs, project files
from .new_locale import new_locale_command  # noqa: E402
from .packs import pack_test_command, scan_command  # noqa: E402
from .rule_words import rule_words_command  # noqa: E402
from .render import render_projects_command  # noqa: E402

app.command("new-locale", rich_help_panel=LOCALES)(new_locale_command)
app.command("pack-test", rich_help_panel=LOCALES)(pack_test_command)
app.command("scan", rich_help_panel=LOCALES)(scan_command)
app.command("rule-words", rich_help_panel=LOCALES)(rule_words_command)
app.command("render-projects", rich_help_panel=LOCALES)(render_projects_command)

from .argos_testkit import argos_testkit_command  # noqa: E402

app.command("argos-testkit", rich_help_panel=TESTING)(argos_testkit_command)


def main() -> None:  # pragma: no cover - console entry (kept for `deid_factory.cli:main` callers)
    from . import main as factory_main

    factory_main()
