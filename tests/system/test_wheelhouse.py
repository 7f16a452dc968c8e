"""Offline install (issue 26): `spacy project run package ... --vars.wheelhouse true` writes every
dependency of deid_<lang> and deid_runtime as wheels into packages/, and a fresh virtual
environment installs deid_es from that folder alone (`pip install --no-index --find-links`, no
pip configuration, no index, no network) and loads and runs the pipeline.

The wheelhouse step reaches the package registry (pip wheel), as it does on the build machine:
this test needs it (CI runs with the registries reachable). It runs the package step once on a copy
of the suite's shared small es build (tests/conftest.py e2e_es_build): no build of its own."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import new_venv  # tests/ is on sys.path (pytest rootdir import mode)
from test_build_e2e import FACTORY_ROOT

NOTE = "Paciente Marta Gil Romero, de 50 años, ingresa el 02/03/2021. DNI 12345678Z. Teléfono 612 345 678."


def _clean_pip_env() -> dict:
    """The environment without any pip setting of this machine (its find-links, its indexes): what
    the fresh venv installs can only come from the folder named on the command line."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PIP_") and k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PIP_CONFIG_FILE"] = os.devnull  # no pip.conf of the machine or the user
    return env


@pytest.fixture(scope="session")
def wheelhouse(e2e_es_build, tmp_path_factory) -> Path:
    """packages/ of a copy of the shared es build, after `spacy project run package` with the
    wheelhouse var on (the registry reachable)."""
    root = tmp_path_factory.mktemp("wheelhouse_build")
    for folder in ("languages", "regex_packs", "corpora"):
        if (e2e_es_build.root / folder).is_dir():
            shutil.copytree(e2e_es_build.root / folder, root / folder, symlinks=True)
    project = root / "languages" / "es"
    env = {k: v for k, v in os.environ.items() if k != "PIP_TARGET"}
    ret = subprocess.run([sys.executable, "-m", "spacy", "project", "run", "package", str(project),
                          "--vars.wheelhouse", "true"], cwd=root, env={**env, **FACTORY_ROOT},
                         capture_output=True, text=True, timeout=1200)
    assert ret.returncode == 0, (ret.stdout[-3000:], ret.stderr[-3000:])
    assert "wheelhouse:" in ret.stdout, ret.stdout[-2000:]
    return project / "packages"


@pytest.mark.slow
def test_the_wheelhouse_holds_every_dependency_at_the_versions_installed_here(wheelhouse):
    from importlib.metadata import version

    names = {w.name.split("-")[0].lower().replace("_", "-"): w.name.split("-")[1] for w in wheelhouse.glob("*.whl")}
    for own in ("deid-es", "deid-runtime"):
        assert own in names, sorted(names)
    # spaCy and what it needs to load a pipeline, langdetect (published as a source archive only:
    # built into a wheel here), at this environment's versions
    for dist in ("spacy", "thinc", "numpy", "srsly", "pydantic", "langdetect", "python-stdnum", "pyyaml"):
        assert dist in names, (dist, sorted(names))
        assert names[dist] == version(dist), (dist, names[dist], version(dist))
    assert not any(n in names for n in ("torch", "argostranslate", "deid-factory", "faker", "dask"))


@pytest.mark.slow
def test_a_fresh_venv_installs_deid_es_from_the_wheelhouse_alone_and_redacts(wheelhouse, tmp_path):
    env_dir = tmp_path / "venv"
    python = new_venv(env_dir)
    env = _clean_pip_env()
    ret = subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-index", "--find-links", str(wheelhouse),
                          "deid_es"], capture_output=True, text=True, timeout=900, env=env, cwd=tmp_path)
    assert ret.returncode == 0, ret.stderr[-3000:]
    code = ("import json, sys, spacy; from deid_runtime.router import Router; router = Router.from_names(['deid_es']); "
            "r = router(sys.argv[1]); print(json.dumps({'pipeline': r.pipeline, 'labels': sorted({s.label for s in r.spans}), "
            "'spacy': spacy.__file__, 'factory': __import__('importlib.util').util.find_spec('deid_factory') is not None}))")
    ret = subprocess.run([str(python), "-c", code, NOTE], capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert ret.returncode == 0, ret.stderr[-3000:]
    import json

    out = json.loads(ret.stdout.strip().splitlines()[-1])
    assert out["pipeline"] == "es" and {"DATE", "ID"} <= set(out["labels"]), out
    assert Path(out["spacy"]).is_relative_to(env_dir) and not out["factory"]  # the venv's own spaCy; no factory


def test_a_wheelhouse_value_that_is_not_a_yes_or_no_stops_before_anything_is_built(tmp_path):
    from typer.testing import CliRunner

    from deid_factory.cli import app
    from deid_factory.package import parse_switch

    assert [parse_switch(v, "x") for v in ("True", "false", "yes", "0", True)] == [True, False, True, False, True]
    result = CliRunner().invoke(app, ["package", str(tmp_path / "pipeline"), str(tmp_path / "packages"),
                                      "--wheelhouse", "perhaps"])
    assert result.exit_code == 1 and "--wheelhouse: expected true or false, got 'perhaps'" in result.output
    assert not (tmp_path / "packages").exists()
