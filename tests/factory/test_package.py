"""deid_<lang> wheels: contents, declared requirements (deid-runtime, built beside), loading next to
deid_factory, clean venv; the packaging uses no private spaCy API and patches no generated file."""

import ast
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from deid_factory.locale import Locale
from deid_factory.package import WHEEL_REQUIREMENTS, PackageError, assemble_pipeline, package_pipeline

from conftest import new_venv  # tests/ is on sys.path (pytest rootdir import mode)

UNSEEN = "Paciente Marta Gil Romero, de 50 años, ingresa el 02/03/2021 en el Hospital Teruel. DNI 12345678Z."

LOAD_SCRIPT = """
import json, sys
import spacy
if sys.argv[1] == "factory-first":
    import deid_factory.package  # noqa: F401
    from deid_runtime import merger, pack_component  # noqa: F401
nlp = spacy.load("deid_es")
doc = nlp(sys.argv[2])
if sys.argv[1] == "factory-after":
    import deid_factory.package  # noqa: F401
    from deid_runtime import merger, pack_component  # noqa: F401
    doc = nlp(sys.argv[2])
# surrogate redaction with what is installed: the es data comes from the deid_es wheel's entry point
# (deid_runtime.locales) unless the factory, imported, registered its project's languages/ first
from deid_runtime.redact import redact_text
from deid_runtime.surrogates.locale import locale_folder
redacted, _ = redact_text(sys.argv[2], [(e.start_char, e.end_char, e.label_) for e in doc.ents], "surrogate",
                          lang="es", doc_id="d", key=b"k" * 32)
print(json.dumps({"pipes": nlp.pipe_names, "name": nlp.meta["name"],
                  "surrogate_data": str(locale_folder("es")), "redacted_differs": redacted != sys.argv[2],
                  "ents": [[e.start_char, e.end_char, e.label_] for e in doc.ents],
                  "merger_module": type(nlp.get_pipe("deid_merger")).__module__,
                  "package_file": sys.modules["deid_es"].__file__,
                  "runtime_file": sys.modules["deid_runtime"].__file__}))
"""


def _run(python, *args, env=None, cwd=None):
    # cwd matters: `python -c` puts it on sys.path, and the checkout's deid_factory.egg-info would
    # then announce deid_factory's entry points to a venv that does not have it
    ret = subprocess.run([str(python), "-c", LOAD_SCRIPT, *args], capture_output=True, text=True, env=env,
                         cwd=cwd, timeout=300)
    assert ret.returncode == 0, ret.stderr[-3000:]
    return json.loads(ret.stdout.strip().splitlines()[-1])


def test_wheel_carries_data_and_requires_the_runtime_built_beside_it(train_wheel):
    assert train_wheel.name == "deid_es-0.1.0-py3-none-any.whl"
    names = zipfile.ZipFile(train_wheel).namelist()
    for f in ("deid_es/__init__.py", "deid_es/meta.json", "deid_es/deid_es-0.1.0/deid_tagger/model",
              "deid_es/deid_es-0.1.0/deid_regex_pack/pack.yml",
              # the locale's surrogate data (the runtime holds none): every file of languages/es/surrogate_data/
              *(f"deid_es/surrogate_data/{p.name}" for p in Locale.load("es").surrogate_data_files())):
        assert f in names, f
    assert "deid_es/surrogate_data/formats.yml" in names
    # no copy of the runtime: its code is in deid-runtime, once
    assert [n for n in names if n.endswith(".py")] == ["deid_es/__init__.py"]
    metadata = zipfile.ZipFile(train_wheel).read("deid_es-0.1.0.dist-info/METADATA").decode()
    assert "Requires-Dist: deid-runtime==0.1.0" in metadata and "Requires-Dist: spacy" in metadata
    assert "deid-factory" not in metadata and "argos" not in metadata.lower()
    entry_points = zipfile.ZipFile(train_wheel).read("deid_es-0.1.0.dist-info/entry_points.txt").decode()
    assert "[spacy_models]" in entry_points and "deid_es = deid_es" in entry_points
    assert "[deid_runtime.locales]" in entry_points and "es = deid_es:surrogate_data" in entry_points
    # the saved config never points at the build machine's regex pack folder
    config = zipfile.ZipFile(train_wheel).read("deid_es/deid_es-0.1.0/config.cfg").decode()
    assert "regex_packs" not in config
    # the runtime's wheel, beside it: the components' code and data, the runtime's own requirements,
    # and the entry points through which spaCy finds the components
    (runtime,) = train_wheel.parent.glob("deid_runtime-*.whl")
    assert runtime.name == "deid_runtime-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(runtime) as whl:
        names = whl.namelist()
        metadata = whl.read("deid_runtime-0.1.0.dist-info/METADATA").decode()
        entry_points = whl.read("deid_runtime-0.1.0.dist-info/entry_points.txt").decode()
    for f in ("deid_runtime/merger.py", "deid_runtime/pack_component.py", "deid_runtime/regex_pack.py",
              "deid_runtime/validators.py", "deid_runtime/ids/es.py", "deid_runtime/surrogates/common.yml"):
        assert f in names, f
    assert not [n for n in names if "surrogate_data" in n or "/locales/" in n]  # a locale's data is its wheel's
    for req in ("spacy", "python-stdnum", "pyyaml", "langdetect"):
        assert f"Requires-Dist: {req}" in metadata
    assert "deid-factory" not in metadata and "argos" not in metadata.lower()
    for line in ("deid_merger = deid_runtime.merger:make_merger", "deid_regex_pack = deid_runtime.pack_component:make_regex_pack",
                 "deid_tagger = deid_runtime.biluo_tagger:make_biluo_tagger",
                 "deid.Tokenizer.v1 = deid_runtime.tokenization:create_tokenizer"):
        assert line in entry_points, line


def test_packaging_calls_no_private_spacy_api_and_patches_nothing():
    """package.py neither reaches into spaCy's registry (`registry._entry_point_factories`) nor
    rewrites a generated setup.py: the runtime registers through entry points, and the
    deid_<lang> package is written from declarative templates."""
    import deid_factory.package as package

    tree = ast.parse(Path(package.__file__).read_text(encoding="utf-8"))
    names = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    names |= {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    assert not {name for name in names if name.startswith("_entry_point")}
    docs = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr)}  # docstrings may tell why
    strings = [node.value for node in ast.walk(tree)
               if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs]
    assert not [s for s in strings if "setup.py" in s or "_entry_point" in s]
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert "spacy.cli.package" not in imported
    templates = "".join(p.read_text(encoding="utf-8") for p in package.WHEEL_TEMPLATES.iterdir())
    assert "_entry_point" not in templates and "registry" not in templates


@pytest.mark.parametrize("order", ["wheel-only-import", "factory-first", "factory-after"])
def test_wheel_loads_next_to_deid_factory(train_wheel, tmp_path, order):
    """The components come from deid_runtime alone (one registration), whichever is imported first:
    the wheel, or the factory and the runtime before or after it."""
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(train_wheel)],
                   check=True, capture_output=True)
    env = {**os.environ, "PYTHONPATH": str(target)}
    out = _run(sys.executable, order, UNSEEN, env=env)
    assert out["name"] == "deid_es"
    assert out["pipes"] == ["tok2vec", "deid_tagger", "deid_spacing", "deid_regex_pack", "deid_merger"]  # the default NER is the tagger
    labels = {lab for _, _, lab in out["ents"]}
    assert {"DATE", "ID"} <= labels
    assert out["redacted_differs"]
    if order == "wheel-only-import":  # nothing registered: the data is the installed wheel's
        assert Path(out["surrogate_data"]) == target / "deid_es" / "surrogate_data", out["surrogate_data"]


def test_assemble_and_package_errors_name_the_path(tmp_path):
    with pytest.raises(PackageError, match="nowhere"):
        assemble_pipeline(tmp_path / "nowhere", "es", tmp_path / "out")
    with pytest.raises(PackageError, match="pack"):
        assemble_pipeline(None, "es", tmp_path / "out", pack_dir=tmp_path)
    with pytest.raises(PackageError, match="meta.json"):
        package_pipeline(tmp_path, tmp_path / "dist")
    assemble_pipeline(None, "es", tmp_path / "pipeline")
    with pytest.raises(PackageError, match="formats.yml"):
        package_pipeline(tmp_path / "pipeline", tmp_path / "dist", surrogate_data=tmp_path / "nowhere")


def test_regex_only_pipeline_assembles(tmp_path):
    import spacy

    nlp = assemble_pipeline(None, "fr", tmp_path / "deid_fr")
    assert nlp.pipe_names == ["deid_regex_pack", "deid_merger"]
    loaded = spacy.load(tmp_path / "deid_fr")
    doc = loaded("Courriel : jean.dupont@exemple.fr")
    assert [e.label_ for e in doc.ents] == ["EMAIL"]
    assert json.loads((tmp_path / "deid_fr" / "meta.json").read_text())["requirements"] == WHEEL_REQUIREMENTS


def _dependencies_without_deid_factory(root: Path) -> Path:
    """A folder of symlinks to every entry of this environment's site-packages except deid_factory's
    (its package, its dist-info with the entry points, its editable-install hook) and any deid_<lang>
    installed here: the wheel's requirements as this environment has them, offline, without the code
    the wheel must not need."""
    import sysconfig

    root.mkdir()
    for site_dir in {Path(sysconfig.get_paths()[k]) for k in ("purelib", "platlib")}:
        for entry in site_dir.iterdir():
            name = entry.name.lower()
            if name.startswith(("deid_", "deid-", "__editable__")) or (root / entry.name).exists():
                continue
            (root / entry.name).symlink_to(entry)
    return root


@pytest.mark.slow
def test_clean_venv_with_only_the_wheel_tags_phi(train_wheel, tmp_path):
    """A fresh venv (no deid_factory) + the wheel and its declared requirements is enough. Offline: the
    third-party requirements come from this environment (a filtered view of its site-packages, without
    deid_factory and deid_runtime, added to the venv's path), and pip installs the wheel with
    --no-index --find-links <its folder>, so deid-runtime comes from the wheel built beside it and
    every other declared requirement must already be there."""
    env_dir = tmp_path / "venv"
    python = new_venv(env_dir)
    deps = _dependencies_without_deid_factory(tmp_path / "deps")
    venv_site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                    capture_output=True, text=True, check=True).stdout.strip())
    (venv_site / "zz_project_dependencies.pth").write_text(f"import site; site.addsitedir({str(deps)!r})\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PIP_NO_INDEX"] = "1"  # no index, no network: the requirements must be found installed
    ret = subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-index", "--find-links", str(train_wheel.parent),
                          "deid_es"],
                         capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert ret.returncode == 0, ret.stderr[-3000:]
    check = subprocess.run([str(python), "-c", "import deid_factory"], capture_output=True, cwd=tmp_path, env=env)
    assert check.returncode != 0, "deid_factory is importable in the clean venv"  # really clean
    check = subprocess.run([str(python), "-c", "import importlib.metadata as m; print(m.distribution('deid-factory'))"],
                           capture_output=True, cwd=tmp_path, env=env)
    assert check.returncode != 0, "deid_factory's metadata (its entry points) is visible in the clean venv"
    out = _run(python, "wheel-only", UNSEEN, env=env, cwd=tmp_path)
    assert out["merger_module"] == "deid_runtime.merger"
    assert Path(out["package_file"]).is_relative_to(venv_site), out["package_file"]  # the wheel, installed
    assert Path(out["runtime_file"]).is_relative_to(venv_site), out["runtime_file"]  # the runtime's wheel, installed
    assert Path(out["surrogate_data"]).is_relative_to(venv_site), out["surrogate_data"]  # the wheel's own data
    assert out["redacted_differs"]
    labels = {lab for _, _, lab in out["ents"]}
    assert {"PERSON", "DATE", "ID"} <= labels, out["ents"]


def test_assemble_with_a_recall_target_packages_the_smallest_o_bias_that_reaches_it(train_corpus, train_tagger_pipeline,
                                                                                     tmp_path):
    """`assemble --recall-target T --calibrate-on SET`: the pipeline is packaged at the smallest
    o_bias of the grid (from --recall-bias up, step 0.5) whose token recall on SET reaches T, the
    choice is written to recall_setting.json (scores only), and a target no setting reaches
    packages the top of the range and says so; without a set to calibrate on it is an error."""
    import spacy
    from typer.testing import CliRunner

    from deid_factory.cli import app
    from deid_factory.evaluate import load_corpus, recall_curve
    from deid_factory.package import assemble_pipeline
    from deid_factory.render import render_config
    from deid_factory.train import train_model

    # a tagger trained for two epochs only: unsure enough that its recall moves with o_bias
    config = tmp_path / "config.cfg"
    config.write_text(render_config("es", ner_model="tagger"), encoding="utf-8")
    train_model(train_corpus / "train.spacy", train_corpus / "dev.spacy", config, tmp_path / "model",
                gpu_id=-1, max_epochs=2, patience=2, seed=0)
    model = tmp_path / "model" / "model-best"
    calibrate_on = train_corpus / "test.jsonl"
    grid = [1.0 + 0.5 * i for i in range(23)]  # 1.0 ... 12.0
    assemble_pipeline(model, "es", tmp_path / "plain")
    curve = recall_curve(spacy.load(tmp_path / "plain"), load_corpus(calibrate_on), biases=grid)
    recall_at = {row["o_bias"]: row["token_recall"] for row in curve}
    assert recall_at[12.0] > recall_at[1.0], "the tiny tagger's recall does not move with o_bias: nothing to calibrate"
    target = next(r for b, r in recall_at.items() if r > recall_at[1.0])
    expected = min(b for b, r in recall_at.items() if r >= target)

    def assemble(out, *extra, model=model):
        return CliRunner().invoke(app, ["assemble", str(model), "--lang", "es", "--out", str(out), "--recall-bias", "1",
                                        *extra])

    res = assemble(tmp_path / "p", "--recall-target", str(target), "--calibrate-on", str(calibrate_on))
    assert res.exit_code == 0, res.output
    assert expected > 1.0 and spacy.load(tmp_path / "p").get_pipe("deid_tagger").o_bias == expected
    setting = json.loads((tmp_path / "p" / "recall_setting.json").read_text())
    assert setting["reached"] and setting["o_bias"] == expected and setting["token_recall"] >= target
    assert f"o_bias {expected}" in res.output

    # the fixture's tagger, trained longer, is so sure of some of its misses that no o_bias finds them
    confident = train_tagger_pipeline.parent / "model" / "model-best"
    top = recall_curve(spacy.load(train_tagger_pipeline), load_corpus(calibrate_on), biases=(12.0,))[0]
    assert top["token_recall"] < 1.0
    res = assemble(tmp_path / "q", "--recall-target", "1.0", "--calibrate-on", str(calibrate_on), model=confident)
    assert res.exit_code == 0, res.output
    assert spacy.load(tmp_path / "q").get_pipe("deid_tagger").o_bias == 12.0
    assert "not reached" in res.output and not json.loads((tmp_path / "q" / "recall_setting.json").read_text())["reached"]

    res = assemble(tmp_path / "r", "--recall-target", "0.99")
    assert res.exit_code == 1 and "--calibrate-on" in res.output
