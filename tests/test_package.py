"""deid_<lang> wheels: contents, declared requirements, loading next to deid_factory, clean venv."""

import json
import os
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

from deid_factory.package import WHEEL_REQUIREMENTS, PackageError, assemble_pipeline, package_pipeline

UNSEEN = "Paciente Marta Gil Romero, de 50 años, ingresa el 02/03/2021 en el Hospital Teruel. DNI 12345678Z."

LOAD_SCRIPT = """
import json, sys
import spacy
if sys.argv[1] == "factory-first":
    from deid_factory.runtime import merger, pack_component  # noqa: F401
nlp = spacy.load("deid_es")
doc = nlp(sys.argv[2])
if sys.argv[1] == "factory-after":
    from deid_factory.runtime import merger, pack_component  # noqa: F401
    doc = nlp(sys.argv[2])
print(json.dumps({"pipes": nlp.pipe_names, "name": nlp.meta["name"],
                  "ents": [[e.start_char, e.end_char, e.label_] for e in doc.ents],
                  "merger_module": type(nlp.get_pipe("deid_merger")).__module__}))
"""


def _run(python, *args, env=None, cwd=None):
    # cwd matters: `python -c` puts it on sys.path, and the checkout's deid_factory.egg-info would
    # then announce deid_factory's entry points to a venv that does not have it
    ret = subprocess.run([str(python), "-c", LOAD_SCRIPT, *args], capture_output=True, text=True, env=env,
                         cwd=cwd, timeout=300)
    assert ret.returncode == 0, ret.stderr[-3000:]
    return json.loads(ret.stdout.strip().splitlines()[-1])


def test_wheel_carries_code_data_and_requirements(train_wheel):
    assert train_wheel.name == "deid_es-0.1.0-py3-none-any.whl"
    names = zipfile.ZipFile(train_wheel).namelist()
    for f in ("deid_es/__init__.py", "deid_es/merger.py", "deid_es/pack_component.py", "deid_es/regex_pack.py",
              "deid_es/validators.py", "deid_es/surrogates/locales/es/formats.yml", "deid_es/deid_es-0.1.0/deid_tagger/model",
              "deid_es/deid_es-0.1.0/deid_regex_pack/pack.yml"):
        assert f in names, f
    metadata = zipfile.ZipFile(train_wheel).read("deid_es-0.1.0.dist-info/METADATA").decode()
    for req in ("spacy", "python-stdnum", "pyyaml", "langdetect"):
        assert f"Requires-Dist: {req}" in metadata
    assert "deid-factory" not in metadata and "argos" not in metadata.lower()
    # the saved config never points at the build machine's regex pack folder
    config = zipfile.ZipFile(train_wheel).read("deid_es/deid_es-0.1.0/config.cfg").decode()
    assert "regex_packs" not in config


@pytest.mark.parametrize("order", ["wheel-only-import", "factory-first", "factory-after"])
def test_wheel_loads_next_to_deid_factory(train_wheel, tmp_path, order):
    """deid_factory's entry points register the same factories: no E004 in any import order."""
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(train_wheel)],
                   check=True, capture_output=True)
    env = {**os.environ, "PYTHONPATH": str(target)}
    out = _run(sys.executable, order, UNSEEN, env=env)
    assert out["name"] == "deid_es"
    assert out["pipes"] == ["tok2vec", "deid_tagger", "deid_regex_pack", "deid_merger"]  # the default NER is the tagger
    labels = {lab for _, _, lab in out["ents"]}
    assert {"DATE", "ID"} <= labels


def test_assemble_and_package_errors_name_the_path(tmp_path):
    with pytest.raises(PackageError, match="nowhere"):
        assemble_pipeline(tmp_path / "nowhere", "es", tmp_path / "out")
    with pytest.raises(PackageError, match="pack"):
        assemble_pipeline(None, "es", tmp_path / "out", pack_dir=tmp_path)
    with pytest.raises(PackageError, match="meta.json"):
        package_pipeline(tmp_path, tmp_path / "dist")


def test_regex_only_pipeline_assembles(tmp_path):
    import spacy

    nlp = assemble_pipeline(None, "fr", tmp_path / "deid_fr")
    assert nlp.pipe_names == ["deid_regex_pack", "deid_merger"]
    loaded = spacy.load(tmp_path / "deid_fr")
    doc = loaded("Courriel : jean.dupont@exemple.fr")
    assert [e.label_ for e in doc.ents] == ["EMAIL"]
    assert json.loads((tmp_path / "deid_fr" / "meta.json").read_text())["requirements"] == WHEEL_REQUIREMENTS


@pytest.mark.slow
def test_clean_venv_with_only_the_wheel_tags_phi(train_wheel, tmp_path):
    """A fresh venv (no deid_factory) + the wheel and its declared requirements is enough."""
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    ret = subprocess.run([str(python), "-m", "pip", "install", "-q", str(train_wheel)],
                         capture_output=True, text=True, timeout=600)
    if ret.returncode != 0 and ("No matching distribution" in ret.stderr or "Could not find" in ret.stderr):
        pytest.skip("no package index reachable to install spaCy into the clean venv")
    assert ret.returncode == 0, ret.stderr[-3000:]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    check = subprocess.run([str(python), "-c", "import deid_factory"], capture_output=True, cwd=tmp_path, env=env)
    assert check.returncode != 0  # really clean
    out = _run(python, "wheel-only", UNSEEN, env=env, cwd=tmp_path)
    assert out["merger_module"] == "deid_es.merger"
    labels = {lab for _, _, lab in out["ents"]}
    assert {"PERSON", "DATE", "ID"} <= labels, out["ents"]
