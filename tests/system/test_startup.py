"""Start-up (issue 26): `factory` imports what a command needs when that command runs. `factory --help`
imports no stage and none of the heavy libraries, and `factory redact` runs without torch, which
thinc would import whenever it is installed. Each check runs the console entry in a fresh process
and reads that process's sys.modules."""

import inspect
import json
import subprocess
import sys
from importlib import import_module

import pytest

from deid_factory.cli import COMMANDS, app
from deid_factory.package import assemble_pipeline

HEAVY = ("spacy", "thinc", "torch", "argostranslate", "ctranslate2", "stanza", "dask", "distributed", "numpy",
         "faker", "matplotlib", "langdetect")

# Runs `factory ARGS...` as the console script does (deid_factory.main), then prints which of the
# modules named in the first argument the process imported (torch: only a real import counts; the
# console entry may block it with None).
PROBE = """
import json, sys
names = json.loads(sys.argv[1])
sys.argv = ["factory", *sys.argv[2:]]
from deid_factory import main
code = 0
try:
    main()
except SystemExit as exit_:
    code = exit_.code or 0
print(json.dumps({"exit": code, "imported": sorted(n for n in names if sys.modules.get(n) is not None),
                  "factory_modules": sorted(m for m in sys.modules if m.startswith("deid_factory."))}))
"""


def _factory(*args, cwd, names=HEAVY):
    ret = subprocess.run([sys.executable, "-c", PROBE, json.dumps(names), *map(str, args)], capture_output=True,
                         text=True, cwd=cwd, timeout=600)
    assert ret.returncode == 0, ret.stderr[-3000:]
    return ret.stdout, json.loads(ret.stdout.strip().splitlines()[-1])


def test_factory_help_imports_no_stage_and_no_heavy_library(tmp_path):
    printed, probe = _factory("--help", cwd=tmp_path)
    assert probe["exit"] == 0
    assert probe["imported"] == []
    assert probe["factory_modules"] == ["deid_factory.cli"]  # no stage module
    for name, *_ in COMMANDS:  # every command is listed all the same
        assert f" {name} " in printed, name


def test_a_command_imports_its_own_module_only(tmp_path):
    printed, probe = _factory("scan", "--help", cwd=tmp_path)
    assert probe["exit"] == 0 and "Usage: factory scan" in printed
    assert "deid_factory.packs" in probe["factory_modules"]
    assert not {"deid_factory.translate_job", "deid_factory.train", "deid_factory.redact_cli",
                "deid_factory.redact_engine"} & set(probe["factory_modules"])
    assert not {"torch", "argostranslate", "dask"} & set(probe["imported"])


def test_factory_redact_runs_without_torch(tmp_path):
    """A real redaction in a fresh process: spaCy, the pipeline and langdetect load, torch does not,
    though in this environment (the factory's, with Argos) `import spacy` alone imports it."""
    pipeline = tmp_path / "deid_es"
    assemble_pipeline(None, "es", pipeline)
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.txt").write_text("La paciente acude a urgencias por dolor abdominal. Teléfono de contacto 612 345 678, "
                                 "DNI 12345678Z.", encoding="utf-8")
    _, probe = _factory("redact", notes, "--out", tmp_path / "out", "--pipelines", pipeline, "--quiet", cwd=tmp_path)
    assert probe["exit"] == 0
    assert "[PHONE]" in (tmp_path / "out" / "a.txt").read_text(encoding="utf-8")
    assert {"spacy", "thinc", "numpy", "langdetect"} <= set(probe["imported"])
    assert "torch" not in probe["imported"]
    control = subprocess.run([sys.executable, "-c", "import importlib.util, sys, spacy; "
                              "print(importlib.util.find_spec('torch') is not None, 'torch' in sys.modules)"],
                             capture_output=True, text=True, cwd=tmp_path, check=True).stdout.split()
    if control[0] == "True":  # torch is installed here: spaCy alone would have imported it
        assert control[1] == "True"


@pytest.mark.parametrize("name,module,function,panel,summary", COMMANDS, ids=[c[0] for c in COMMANDS])
def test_each_listed_command_is_its_module_function_with_its_docstring_summary(name, module, function, panel, summary):
    callback = getattr(import_module(f"deid_factory.{module}"), function)
    assert inspect.getdoc(callback).split("\n\n")[0] == summary


def test_the_listing_and_each_command_help_are_what_typer_makes_of_the_functions_registered_eagerly():
    """The lazy app prints what an app with every function registered up front (the old cli.py)
    prints: the same listing, panels and order, and the same help for each command."""
    import typer
    from typer.testing import CliRunner

    from deid_factory.cli import FactoryApp, _global_options

    eager = FactoryApp(help=app.info.help, no_args_is_help=True)
    eager.callback()(_global_options)
    for name, module, function, panel, _summary in COMMANDS:
        eager.command(name, rich_help_panel=panel)(getattr(import_module(f"deid_factory.{module}"), function))
    runner, env = CliRunner(), {"TERMINAL_WIDTH": "150"}
    lazy_listing, eager_listing = runner.invoke(app, ["--help"], env=env), runner.invoke(eager, ["--help"], env=env)
    assert lazy_listing.exit_code == eager_listing.exit_code == 0
    assert lazy_listing.output == eager_listing.output
    for name, *_ in COMMANDS:
        lazy, eager_help = runner.invoke(app, [name, "--help"], env=env), runner.invoke(eager, [name, "--help"], env=env)
        assert lazy.exit_code == 0, (name, lazy.output)
        assert lazy.output == eager_help.output, name
    assert isinstance(typer.main.get_command(app).commands["scan"], typer.core.TyperCommand)
