"""The `factory` command line as a user meets it: the project it works on (current folder, --root,
or the packs a plain install ships), `pack-test` asking what CI asks, help that is not cut at 80
columns and lists the commands in pipeline order, and a one-line message when an extra is missing."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from deid_factory import PROJECT_ROOT
from deid_factory.new_locale import scaffold_locale
from deid_factory.packs import MIN_CASES


def factory(args, cwd: Path | None = None, env: dict | None = None, code: str | None = None) -> tuple[int, str]:
    """`python -m deid_factory ARGS` (or `python -c CODE ARGS`) in a child process: exit status, all it printed."""
    cmd = [sys.executable, "-c", code, *map(str, args)] if code else [sys.executable, "-m", "deid_factory", *map(str, args)]
    ret = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    return ret.returncode, ret.stdout + ret.stderr


def _plain_env() -> dict:
    """The environment without the variables that choose a project or a help width."""
    return {k: v for k, v in os.environ.items() if k not in ("DEID_FACTORY_ROOT", "COLUMNS", "TERMINAL_WIDTH")}


@pytest.fixture()
def cli_project(tmp_path) -> Path:
    """A project of its own (not this checkout): a Swedish locale (one the factory does not ship)
    scaffolded into an empty layout."""
    root = tmp_path / "project"
    (root / "corpora").mkdir(parents=True)
    scaffold_locale("sv", "Swedish", "sv_SE", calling_code="46", root=root)
    return root


def test_commands_work_on_the_project_in_the_current_folder_or_root(cli_project, tmp_path):
    env = _plain_env()
    # from the project's folder, and from inside one of its languages (where spaCy projects run)
    for cwd in (cli_project, cli_project / "languages" / "sv"):
        code, printed = factory(["pack-test", "sv", "--no-minimums"], cwd=cwd, env=env)
        assert code == 0 and "sv: " in printed and "0 failed" in printed, printed
    # from anywhere else, with --root
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    code, printed = factory(["--root", cli_project, "pack-test", "sv", "--no-minimums"], cwd=elsewhere, env=env)
    assert code == 0 and "0 failed" in printed, printed
    # without it, the Swedish pack is not found (the shipped packs are), and the message says where it looked
    code, printed = factory(["pack-test", "sv"], cwd=elsewhere, env=env)
    assert code == 1 and "no regex pack for locale 'sv'" in printed and "known: ca, de, en, es, fr, it, nl, pt" in printed
    code, printed = factory(["--root", tmp_path / "missing", "pack-test", "sv"], cwd=elsewhere, env=env)
    assert code == 1 and "no such folder" in printed


def test_pack_test_asks_for_the_same_minimums_as_ci(cli_project):
    code, printed = factory(["pack-test", "sv"], cwd=cli_project, env=_plain_env())
    # every starter case passes, but a starter pack is not a finished pack
    assert code == 1 and "0 failed" in printed
    assert "sv: not finished: " in printed and f"need at least {MIN_CASES}" in printed
    code, printed = factory(["pack-test", "fr"], env=_plain_env())
    assert code == 0 and "not finished" not in printed, printed


@pytest.mark.slow
def test_a_plain_install_finds_the_packs_it_ships(tmp_path):
    """`pip install .` (a wheel, not an editable checkout), then `factory pack-test fr` elsewhere."""
    src = tmp_path / "src"
    outputs = shutil.ignore_patterns("__pycache__", "corpus", "training", "metrics", "packages", "assets", "*.lock")
    for name in ("factory", "regex_packs", "languages", "corpora"):
        shutil.copytree(PROJECT_ROOT / name, src / name, ignore=outputs)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(PROJECT_ROOT / name, src / name)
    pip = [sys.executable, "-m", "pip", "-q"]
    subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", tmp_path / "wheel", src], check=True,
                   capture_output=True, timeout=600)
    (wheel,) = (tmp_path / "wheel").glob("deid_factory-*.whl")
    subprocess.run([*pip, "install", "--no-deps", "--target", tmp_path / "site", wheel], check=True, capture_output=True,
                   timeout=600)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**_plain_env(), "PYTHONPATH": str(tmp_path / "site")}
    code, printed = factory(["pack-test", "fr"], cwd=elsewhere, env=env,
                            code="import sys, deid_factory; print(deid_factory.__file__); sys.argv[0] = 'factory'; deid_factory.main()")
    assert code == 0, printed
    assert printed.startswith(str(tmp_path / "site" / "deid_factory")), printed  # the installed copy ran
    assert "fr: " in printed and "0 failed" in printed


def test_help_is_not_cut_at_80_columns_and_lists_commands_in_pipeline_order():
    code, printed = factory(["--help"], env=_plain_env())  # a pipe, not a terminal
    assert code == 0
    assert max(len(line) for line in printed.splitlines()) > 80
    listed = re.findall(r"^│ ([a-z][a-z-]+) {2,}", printed, re.M)  # the first column of the command panels
    assert listed[:20] == ["synth", "extract", "detect", "filter", "silver", "stats", "placeholder", "calibrate",
                           "translate", "surrogate", "pretrain", "train", "selftrain", "distill", "evaluate", "errors",
                           "assemble", "package", "install-wheel", "redact"]


def test_help_writes_flags_as_flags_and_arguments_in_capitals():
    """Issue 30: "--quiet <bool>" suggested a value a flag does not take ("--quiet true" read "true"
    as an input) and the usage read "{inputs}...". Every command's help, as the user sees it."""
    from typer.testing import CliRunner

    from deid_factory.cli import COMMANDS, app

    runner = CliRunner()
    for name, *_ in COMMANDS:
        printed = runner.invoke(app, [name, "--help"], env={"COLUMNS": "200", "TERM": "dumb"}).output
        usage = next(line for line in printed.splitlines() if "Usage:" in line)
        assert "<bool>" not in printed and "{" not in usage, (name, usage)
        assert re.search(r"--help\s+Show this message", printed), name
    printed = runner.invoke(app, ["redact", "--help"], env={"COLUMNS": "200", "TERM": "dumb"}).output
    assert re.search(r"Usage: \S+ redact \[OPTIONS\] INPUT\.\.\.", printed)
    assert re.search(r"--quiet\s+-q\s+No progress bar", printed)  # no type between the flag and its help


# spellings that name a language in other tools; here a language option is --lang or --source-lang
OTHER_LANGUAGE_SPELLINGS = {"--target", "--source", "--locale", "--target-lang", "--tgt", "--src", "--language",
                            "--source-language", "--target-language", "--from", "--to"}


def test_every_command_names_the_same_language_the_same_way():
    """One name per concept (docs/architecture.md, "Option names"): the language a command works
    for (the build's, the pipeline's, the corpus') is --lang in every command, and where a command
    also handles a source corpus in another language, that one is --source-lang, never --target,
    --source or --locale (which once meant the source at one stage and the target at another)."""
    from deid_factory.cli import COMMANDS, load_command

    with_source = []
    for name, command in ((c[0], load_command(c[0])) for c in COMMANDS):  # each command as it runs
        options = {opt: param for param in command.params if param.param_type_name == "option"
                   for opt in [*param.opts, *param.secondary_opts]}
        assert not set(options) & OTHER_LANGUAGE_SPELLINGS, (name, sorted(set(options) & OTHER_LANGUAGE_SPELLINGS))
        for opt, param in options.items():
            text = param.help or ""
            if re.search(r"\b(target|source) language\b|^Language of the (build|source)", text, re.I):
                assert opt in ("--lang", "--source-lang"), (name, opt, text)  # a language by another name
        if "--lang" in options:
            assert options["--lang"].name == "lang"
        if "--source-lang" in options:
            with_source.append(name)
            assert options["--source-lang"].name == "source_lang"
            assert "--lang" in options, name  # a source language is always beside the build's
            assert options["--source-lang"].help.startswith("Language of the source"), name
            assert options["--lang"].help.startswith("Language of the build"), name
    # the commands of a build that see both languages
    assert set(with_source) == {"extract", "detect", "filter", "calibrate", "translate"}


def test_translate_without_the_extra_says_which_extra_to_install(translate_source, tmp_path):
    from deid_factory.placeholders import placeholder_file

    placeholdered = tmp_path / "ph.jsonl"
    placeholder_file(translate_source, placeholdered, "fr")
    without_argos = ("import sys; sys.modules['argostranslate'] = None; sys.argv[0] = 'factory'; "
                     "from deid_factory import main; main()")
    code, printed = factory(["translate", placeholdered, tmp_path / "out.jsonl", "--source-lang", "es", "--lang", "fr",
                             "--no-progress"], code=without_argos)
    assert code == 1
    assert printed.strip() == ("error: Argos Translate is not installed: install the translate extra "
                               "(pip install 'deid-factory[translate]')")
