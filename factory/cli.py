"""The `factory` command: one typer app, one thin command per stage (each stage module owns its command).

Commands are listed in the order a language is built (typer keeps the order they are added in),
grouped in help panels. The console script is `deid_factory.main`, which applies `--root`.

A command's module is imported when that command runs, not before: `factory --help` lists the
commands from COMMANDS (name, module, function, one-line summary) and imports no stage, so it
starts without spaCy, torch, Argos or Dask (tests/system/test_startup.py), and `factory redact` imports
the redaction modules only. The summaries are the first paragraph of each command's docstring
(the test checks that they agree).
"""

from __future__ import annotations

import importlib
import os
import shutil
import sys
from pathlib import Path

import typer
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

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
        except (OSError, ValueError) as err:  # OutputError is an OSError, RecordError a ValueError
            from .records import RecordError
            from .outputs import OutputError

            if not isinstance(err, (OutputError, RecordError, FileNotFoundError)):
                raise
            typer.echo(f"error: {err}", err=True)
            sys.exit(1)


# (command, module, function, panel, the summary `factory --help` shows: the first paragraph of the
# function's docstring, which `factory COMMAND --help` shows whole)
COMMANDS: tuple[tuple[str, str, str, str, str], ...] = (
    ("synth", "synth.command", "synth_command", BUILD,
     "Generate the embedded synthetic corpus: N clinical notes with gold PHI spans (= extract --format synth)."),
    ("extract", "extract", "extract_command", BUILD,
     "Decide the build and extract its corpus (brat, jsonl, docbin, i2b2, inline or the embedded synthetic corpus) into validated JSONL."),
    ("detect", "detect", "detect_command", BUILD,
     "Detect the language of each record (PHI removed) and drop those not in their language, with counts."),
    ("filter", "silver", "filter_command", BUILD,
     "Silver filters (street suffixes, eponymous diseases) and corpus-statistic thresholds."),
    ("silver", "silver", "silver_command", BUILD,
     "Pre-annotate records with an existing annotator to make a silver standard."),
    ("stats", "stats", "stats_command", BUILD,
     "Per-record statistics (length, spans, density, quartiles) and a corpus summary."),
    ("placeholder", "placeholders", "placeholder_command", BUILD,
     "Replace every PHI entity by a persistent placeholder term (same entity -> same term)."),
    ("calibrate", "placeholders", "calibrate_command", BUILD,
     "Measure which placeholder candidates survive the installed Argos route and write the inventory."),
    ("translate", "translate_job", "translate_command", BUILD,
     "Translate placeholder records offline with Argos (direct route or pivot), resumable."),
    ("surrogate", "surrogates.stage", "surrogate_command", BUILD,
     "Insert surrogates of the build's language and write records.jsonl + train/dev/test DocBins + report.json."),
    ("pretrain", "pretrain", "pretrain_command", BUILD,
     "Pretrain the tok2vec on unlabeled notes (spaCy pretrain, character objective) for `train --init-tok2vec`.\n"
     "Reports counts, losses and seconds, no text."),
    ("train", "train", "train_command", BUILD,
     "Train the deid NER of one language with spaCy (CNN tok2vec + the config's NER)."),
    ("selftrain", "selftrain", "selftrain_command", BUILD,
     "Self-training: label unlabeled notes with the pipeline, keep the confident spans, retrain on\n"
     "gold + pseudo labels, repeat while dev strict F1 improves. Reports counts and scores, no text."),
    ("distill", "distill", "distill_command", BUILD,
     "Distill a small deid_tagger from a trained pipeline's tag probabilities (teacher -> student).\n"
     "Reports counts, losses and agreement, no text."),
    ("evaluate", "evaluate", "evaluate_command", BUILD,
     "Strict/overlap P/R/F1, token recall and fully-redacted docs for NER, regex pack and combined."),
    ("errors", "error_analysis", "errors_command", BUILD,
     "Error analysis: misses and false positives by label and context category, as counts and offsets."),
    ("assemble", "package", "assemble_command", BUILD,
     "Assemble deid_<lang>: NER + regex pack + merger in one spaCy pipeline folder."),
    ("package", "package", "package_command", BUILD,
     "Build the deid_<lang> wheel and, beside it, the deid-runtime wheel it requires (--install: into this environment)."),
    ("install-wheel", "package", "install_command", BUILD,
     "pip install the newest deid_<lang> wheel of a folder into this environment."),
    ("redact", "redact_cli", "redact_command", USE,
     "Redact documents with the deid_<lang> pipeline of their language; fail closed (exit 3) on any\n"
     "document no pipeline takes or input that cannot be read."),
    ("new-locale", "new_locale", "new_locale_command", LOCALES,
     "Scaffold a new locale as data files to fill in: settings, starter regex pack with cases, starter synthetic\n"
     "corpus, surrogate data and titles (docs/adding_a_locale.md)."),
    ("pack-test", "packs", "pack_test_command", LOCALES,
     "Run every test case of one locale pack and print the failures (pytest runs the same cases in CI)."),
    ("scan", "packs", "scan_command", LOCALES,
     "Print the pack's matches in a text file as offsets, label and kind (not the text: it is PHI)."),
    ("rule-words", "rule_words", "rule_words_command", LOCALES,
     "Write the number words (num2words) and name lists (Faker) of a locale's context rules into its pack folder."),
    ("render-projects", "render", "render_projects_command", LOCALES,
     "Render languages/<lc>/project.yml and configs/config.cfg, and the root project.yml, from factory/templates/."),
    ("argos-testkit", "argos_testkit", "argos_testkit_command", TESTING,
     "Build copy-model .argosmodel packages (offline test stand-ins for Argos Translate packages)."),
)


# How the help writes parameters. typer (0.29) writes a flag with a type, "--quiet <bool>", though it
# takes no value ("--quiet true" reads "true" as an input), and a required argument in braces,
# "{inputs}...". The factory writes flags as flags and arguments in capitals, "INPUT...", as click and
# Unix tools do (issue 30; tests/factory/test_cli.py reads the help of every command).
_typer_option_type = TyperOption.display_type_rich


def _option_type(self: TyperOption, ctx) -> str | None:
    if self.is_flag and self.metavar is None:
        return None
    return _typer_option_type(self, ctx)


def _argument_usage(self: TyperArgument) -> str:
    name = (self.metavar or self.name or "").upper()
    name = name if self.required else f"[{name}]"
    return name + ("..." if self.nargs != 1 else "")


TyperOption.display_type_rich = _option_type
TyperArgument._usage_display_name = _argument_usage


class _Listed(TyperCommand):
    """A command as `factory --help` lists it (name, summary, panel), before its module is imported."""


class LazyCommands(TyperGroup):
    """The factory's commands, each imported from its module when it is run (or its --help asked
    for); the group's own help lists them from COMMANDS without importing any."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        for name, _module, _function, panel, summary in COMMANDS:
            self.commands.setdefault(name, _Listed(name=name, help=summary, rich_help_panel=panel))

    def resolve_command(self, ctx, args):
        name, command, rest = super().resolve_command(ctx, args)
        if isinstance(command, _Listed):
            command = self.commands[name] = load_command(name)
        return name, command, rest


def load_command(name: str):
    """The click command of `name`: its module imported, its function made a command as
    app.command() would make it."""
    _name, module, function, panel, _summary = next(c for c in COMMANDS if c[0] == name)
    callback = getattr(importlib.import_module(f"{__package__}.{module}"), function)
    single = typer.Typer(add_completion=False)
    single.command(name, rich_help_panel=panel)(callback)
    return typer.main.get_command(single)


app = FactoryApp(cls=LazyCommands, help="Build deid_<lang> de-identification pipelines from annotated clinical narratives, "
                                        "and redact documents with them.", no_args_is_help=True)


@app.callback()
def _global_options(
    root: Path = typer.Option(None, "--root", help="The project to work on (languages/, regex_packs/, corpora/). "
                              "Default: the current folder or the nearest parent that is one, else the data "
                              "the factory ships.", show_default=False),
) -> None:
    from . import use_project_root

    if root is not None:  # deid_factory.main applied it already; the app run by itself applies it here
        try:
            use_project_root(root)
        except FileNotFoundError as err:
            raise typer.BadParameter(str(err), param_hint="--root") from None


def main() -> None:  # pragma: no cover - console entry (kept for `deid_factory.cli:main` callers)
    from . import main as factory_main

    factory_main()
