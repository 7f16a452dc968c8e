"""Stage 9, package: assemble deid_<lang> (NER + regex pack + merger) and build its wheel.

assemble_pipeline()  trained NER (model-best) + `deid_regex_pack` (write_ents off) + `deid_merger`
                     -> a pipeline folder; the pack's data files are saved inside it.
package_pipeline()   `spacy package` makes the package skeleton, then two things spaCy 3.8 does not
                     do for us are fixed up before the wheel is built with pip:
                     * spaCy names a package `<lang>_<name>` (fr_deid_fr); the product is loaded as
                       spacy.load("deid_fr"), so the package folder, data folder, setup.py and the
                       package's __init__.py are renamed/rewritten to `deid_fr`;
                     * `spacy package --code` imports each file standalone, which breaks the relative
                       sibling imports of factory/runtime/, so the runtime modules are copied into
                       the package here and imported by the generated __init__.py (E004-tolerant:
                       an environment that also has deid_factory keeps its first registration).
                     The wheel declares its requirements (spaCy, python-stdnum, PyYAML, langdetect).
install_wheel()      pip-installs the wheel into the current environment (build's last step).
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import srsly
import typer

from . import PROJECT_ROOT
from .locale import packs_dir
from .records import OutputError, writes_to

log = logging.getLogger(__name__)

RUNTIME_DIR = Path(__file__).resolve().parent / "runtime"
# Subpackages of the runtime copied whole (spaCy's setup.py packages only the top folder, so their
# modules travel as package data: RUNTIME_DATA).
RUNTIME_SUBPACKAGES = ("ids", "surrogates")
RUNTIME_DATA = (["*.yml"] + [f"{name}/*.py" for name in RUNTIME_SUBPACKAGES]
                + ["surrogates/*.yml", "surrogates/locales/*/*"])  # the surrogate engine's data
# What the wheel needs at run time: nothing factory-only (no Argos, torch, Faker).
WHEEL_REQUIREMENTS = ["spacy>=3.8,<3.9", "python-stdnum>=1.20", "pyyaml>=6.0", "langdetect==1.0.9"]

WHEEL_INIT = '''"""deid_{lang}: clinical de-identification pipeline (NER + regex pack + merger), built by deid_factory."""
from pathlib import Path

from spacy.util import get_model_meta, load_model_from_path

from spacy.util import registry

# The components' code travels with the package. If deid_factory is installed too, its
# `spacy_factories` entry points register the same factory names; spaCy loads those when a
# Language is created and would raise E004 if our copies had registered first. So the entry
# points are loaded first, and then our copies step aside (E004 caught: the first, identical,
# registration is used). In an environment with only this wheel, our copies register.
registry._entry_point_factories.get_all()
try:
    from . import pack_component  # noqa: F401
except ValueError as err:  # pragma: no cover
    if "E004" not in str(err):
        raise
from . import merger  # noqa: F401,E402  (registration is E004-tolerant inside)
from . import biluo_tagger  # noqa: F401,E402  (idem)
from . import tokenization  # noqa: F401,E402  (registers deid.Tokenizer.v1, named in the pipeline's config)

__version__ = get_model_meta(Path(__file__).parent)["version"]


def load(**overrides):
    here = Path(__file__).parent
    meta = get_model_meta(here)
    return load_model_from_path(here / f"{{meta['name']}}-{{meta['version']}}", meta=meta, **overrides)
'''


class PackageError(RuntimeError):
    pass


def _atomic_dir(final: Path):
    """A temp folder next to `final`; call the returned commit() to swap it in."""
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=final.name + ".", suffix=".tmp", dir=final.parent))

    def commit():
        if final.exists():
            old = final.with_name(final.name + ".old")
            if old.exists():
                shutil.rmtree(old)
            final.rename(old)
            tmp.rename(final)
            shutil.rmtree(old)
        else:
            tmp.rename(final)

    return tmp, commit


def write_dir_atomic(final: Path, fill) -> None:
    """`fill(tmp)` writes a folder that replaces `final` only once it is complete: a failure (a full
    disk, an interrupt) leaves the previous `final` as it was and no temp folder behind."""
    try:
        tmp, commit = _atomic_dir(final)
    except OSError as err:
        raise OutputError(final, err) from None
    try:
        with writes_to(final):
            fill(tmp)
            commit()
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def default_pack_dir(lang: str) -> Path:
    return packs_dir(PROJECT_ROOT) / lang


def assemble_pipeline(model_dir: str | Path | None, lang: str, out_dir: str | Path,
                      pack_dir: str | Path | None = None, version: str = "0.1.0"):
    """NER model (or none: a blank `lang` pipeline) + regex pack + merger, saved to out_dir."""
    import spacy

    from .runtime import merger, pack_component  # noqa: F401  (register the factories)
    from .runtime.regex_pack import RegexPack
    from .runtime.tokenization import customize_tokenizer

    pack_dir = Path(pack_dir) if pack_dir else default_pack_dir(lang)
    if not (pack_dir / "pack.yml").exists():
        raise PackageError(f"{pack_dir}: regex pack not found (pack.yml missing)")
    if model_dir is not None:
        if not Path(model_dir).exists():
            raise PackageError(f"{model_dir}: trained model not found (run the train stage)")
        nlp = spacy.load(model_dir)
    else:
        nlp = spacy.blank(lang)
    if nlp.lang != lang:
        log.warning("model language %s differs from %s", nlp.lang, lang)
    customize_tokenizer(nlp)  # PHI token boundaries, as in the training DocBins; saved with the tokenizer
    for name in ("deid_regex_pack", "deid_merger"):
        if name in nlp.pipe_names:
            nlp.remove_pipe(name)
    # pack_dir stays null in the saved config: the pack's files are saved with the pipeline, so
    # the installed package never looks for the build machine's paths.
    component = nlp.add_pipe("deid_regex_pack", config={"pack_dir": None, "write_ents": False})
    component.pack = RegexPack.from_dir(pack_dir)
    nlp.add_pipe("deid_merger")
    nlp.meta.update({
        "name": f"deid_{lang}",
        "version": version,
        "description": f"Clinical text de-identification for '{lang}': CNN NER + {lang} regex/validator pack + merger. "
                       "Labels: PERSON AGE DATE ADDRESS LOCATION ORGANIZATION PROFESSION PHONE EMAIL URL IP ID.",
        "license": "MIT",
        "requirements": list(WHEEL_REQUIREMENTS),
    })
    write_dir_atomic(Path(out_dir), nlp.to_disk)
    return nlp


def package_pipeline(pipeline_dir: str | Path, out_dir: str | Path, lang: str | None = None,
                     version: str | None = None) -> Path:
    """Build dist wheel deid_<lang>-<version>-py3-none-any.whl in out_dir; returns its path."""
    from spacy.cli.package import package as spacy_package

    from .runtime import merger, pack_component  # noqa: F401

    pipeline_dir, out_dir = Path(pipeline_dir), Path(out_dir)
    meta_file = pipeline_dir / "meta.json"
    if not meta_file.exists():
        raise PackageError(f"{pipeline_dir}: not a pipeline folder (meta.json missing)")
    meta = srsly.read_json(meta_file)
    lang = lang or meta["lang"]
    version = version or meta.get("version", "0.1.0")
    name = f"deid_{lang}"
    out_dir.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="package.", dir=out_dir))
    try:
        spacy_package(pipeline_dir, work, name=name, version=version, create_sdist=False,
                      create_wheel=False, force=True, silent=True)
        spacy_name = f"{lang}_{name}"  # what spaCy 3.8 calls it
        src = work / f"{spacy_name}-{version}"
        pkg = src / spacy_name
        # rename fr_deid_fr -> deid_fr (package and data folder)
        (pkg / f"{spacy_name}-{version}").rename(pkg / f"{name}-{version}")
        pkg = pkg.rename(src / name)
        root = src.rename(work / f"{name}-{version}")
        pkg = root / name
        pkg_meta = srsly.read_json(root / "meta.json")
        # requirements: exactly what the runtime imports (spaCy's scan would add deid-factory,
        # whose entry points register the same factories but which the wheel does not need)
        pkg_meta["requirements"] = list(WHEEL_REQUIREMENTS)
        pkg_meta["name"], pkg_meta["version"], pkg_meta["lang"] = name, version, lang
        srsly.write_json(root / "meta.json", pkg_meta)
        srsly.write_json(pkg / f"{name}-{version}" / "meta.json", pkg_meta)
        setup = (root / "setup.py").read_text(encoding="utf-8")
        patched = setup.replace("model_name = str(meta['lang'] + '_' + meta['name'])", "model_name = str(meta['name'])")
        patched = patched.replace("package_data={model_name: list_files(model_dir)}",
                                  f"package_data={{model_name: list_files(model_dir) + {RUNTIME_DATA!r}}}")
        if patched.count("str(meta['name'])") != 1 or repr(RUNTIME_DATA) not in patched:
            raise PackageError("spaCy's package template changed: cannot rename the package to " + name)
        (root / "setup.py").write_text(patched, encoding="utf-8")
        for f in sorted(RUNTIME_DIR.iterdir()):
            if f.suffix in (".py", ".yml") and f.name != "__init__.py":
                shutil.copyfile(f, pkg / f.name)
            elif f.name in RUNTIME_SUBPACKAGES:
                shutil.copytree(f, pkg / f.name, ignore=shutil.ignore_patterns("__pycache__"))
        (pkg / "__init__.py").write_text(WHEEL_INIT.format(lang=lang), encoding="utf-8")
        dist = work / "dist"
        # Offline first: this environment's setuptools builds the wheel (>= 70.1 has bdist_wheel, or
        # with the `wheel` package). Only if that fails, pip's isolated build (needs an index).
        cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(root)]
        ret = subprocess.run(cmd[:4] + ["--no-build-isolation"] + cmd[4:], capture_output=True, text=True)
        if ret.returncode != 0:
            log.warning("offline wheel build failed; retrying with pip's isolated build environment")
            ret = subprocess.run(cmd, capture_output=True, text=True)
        if ret.returncode != 0:
            raise PackageError(f"pip wheel failed for {name} ({ret.returncode}): {ret.stderr[-2000:]}")
        wheels = list(dist.glob(f"{name}-{version}-*.whl"))
        if len(wheels) != 1:
            raise PackageError(f"expected one wheel for {name} in {dist}, found {len(wheels)}")
        final = out_dir / wheels[0].name
        os.replace(wheels[0], final)
        # keep the unpacked package folder for inspection, replacing an older one
        kept = out_dir / f"{name}-{version}"
        if kept.exists():
            shutil.rmtree(kept)
        root.rename(kept)
        shutil.rmtree(kept / "build", ignore_errors=True)
        for egg in kept.glob("*.egg-info"):
            shutil.rmtree(egg, ignore_errors=True)
        return final
    finally:
        shutil.rmtree(work, ignore_errors=True)


def find_wheel(packages_dir: str | Path, lang: str) -> Path:
    wheels = sorted(Path(packages_dir).glob(f"deid_{lang}-*.whl"), key=lambda p: p.stat().st_mtime)
    if not wheels:
        raise PackageError(f"{packages_dir}: no deid_{lang} wheel (run the package stage)")
    return wheels[-1]


def install_wheel(wheel: str | Path, with_deps: bool = False, python: str | None = None) -> None:
    """pip install the wheel into the environment of `python` (default: this one)."""
    cmd = [python or sys.executable, "-m", "pip", "install", "-q", "--force-reinstall"]
    if not with_deps:
        cmd.append("--no-deps")  # the factory environment already has the runtime requirements
    cmd.append(str(wheel))
    ret = subprocess.run(cmd, capture_output=True, text=True)
    if ret.returncode != 0:
        raise PackageError(f"pip install {Path(wheel).name} failed ({ret.returncode}): {ret.stderr[-2000:]}")


def assemble_command(
    model: Path = typer.Argument(None, help="Trained model folder (training/model-best); omit for a regex-only pipeline"),
    lang: str = typer.Option(..., "--lang", "-l", help="Language code (es, fr, en, de)"),
    out: Path = typer.Option(..., "--out", "-o", help="Output pipeline folder"),
    pack_dir: Path = typer.Option(None, "--pack-dir", help="Regex pack folder (default regex_packs/<lang>)"),
    version: str = typer.Option("0.1.0", "--version"),
) -> None:
    """Assemble deid_<lang>: NER + regex pack + merger in one spaCy pipeline folder."""
    try:
        nlp = assemble_pipeline(model, lang, out, pack_dir=pack_dir, version=version)
    except PackageError as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(1)
    typer.echo(f"assembled {out}: {nlp.pipe_names}")


def package_command(
    pipeline: Path = typer.Argument(..., help="Assembled pipeline folder"),
    out: Path = typer.Argument(..., help="Folder for the wheel"),
    lang: str = typer.Option(None, "--lang", "-l"),
    version: str = typer.Option(None, "--version"),
    install: bool = typer.Option(False, "--install", help="pip install the wheel into this environment"),
) -> None:
    """Build the deid_<lang> wheel with `spacy package` (and install it with --install)."""
    try:
        wheel = package_pipeline(pipeline, out, lang=lang, version=version)
        if install:
            install_wheel(wheel)
    except PackageError as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(1)
    typer.echo(f"wheel: {wheel}" + (" (installed)" if install else ""))


def install_command(
    packages_dir: Path = typer.Argument(..., help="Folder holding deid_<lang>-*.whl"),
    lang: str = typer.Option(..., "--lang", "-l"),
    with_deps: bool = typer.Option(False, "--with-deps", help="Also install the wheel's requirements"),
) -> None:
    """pip install the newest deid_<lang> wheel of a folder into this environment."""
    try:
        wheel = find_wheel(packages_dir, lang)
        install_wheel(wheel, with_deps=with_deps)
    except PackageError as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(1)
    typer.echo(f"installed {wheel.name}")
