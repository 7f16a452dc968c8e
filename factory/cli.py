"""The `factory` command: one typer app, one thin command per stage (each stage module owns its command)."""

from __future__ import annotations

import sys

import typer

from .records import OutputError, RecordError


class FactoryApp(typer.Typer):
    """The typer app, plus one place that turns expected failures into one line on stderr and exit
    status 1 instead of a traceback: an output that cannot be written (disk full, read-only or
    missing folder), a bad input record, a missing input file. Their messages name the file and
    record, never record text, so they are safe to print (and to keep in CI logs)."""

    def __call__(self, *args, **kwargs):
        try:
            return super().__call__(*args, **kwargs)
        except (OutputError, RecordError, FileNotFoundError) as err:
            typer.echo(f"error: {err}", err=True)
            sys.exit(1)


app = FactoryApp(help="Build deid_<lang> de-identification pipelines from annotated clinical narratives.", no_args_is_help=True)

from .packs import new_locale_command, pack_test_command, scan_command  # noqa: E402

app.command("pack-test")(pack_test_command)
app.command("scan")(scan_command)
app.command("new-locale")(new_locale_command)


from .train import train_command  # noqa: E402
from .evaluate import evaluate_command  # noqa: E402
from .package import assemble_command, install_command, package_command  # noqa: E402
from .render import render_projects_command  # noqa: E402

app.command("train")(train_command)
app.command("evaluate")(evaluate_command)
app.command("assemble")(assemble_command)
app.command("package")(package_command)
app.command("install-wheel")(install_command)
app.command("render-projects")(render_projects_command)

from .redact_cli import redact_command  # noqa: E402

app.command("redact")(redact_command)


from .placeholders import calibrate_command, placeholder_command  # noqa: E402
from .translate import translate_command  # noqa: E402
from .argos_testkit import argos_testkit_command  # noqa: E402

app.command("placeholder")(placeholder_command)
app.command("calibrate")(calibrate_command)
app.command("translate")(translate_command)
app.command("argos-testkit")(argos_testkit_command)
from .surrogates import surrogate_command  # noqa: E402

app.command("surrogate")(surrogate_command)

from .synth import synth_command  # noqa: E402
from .extract import extract_command  # noqa: E402
from .detect import detect_command  # noqa: E402
from .silver import filter_command, silver_command  # noqa: E402
from .stats import stats_command  # noqa: E402

app.command("synth")(synth_command)
app.command("extract")(extract_command)
app.command("detect")(detect_command)
app.command("filter")(filter_command)
app.command("stats")(stats_command)
app.command("silver")(silver_command)


def main() -> None:  # pragma: no cover - console entry
    app()
