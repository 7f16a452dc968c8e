"""Stage 9, package: assemble deid_<lang> (NER + regex pack + merger) and build its wheel.

assemble_pipeline()  trained NER (model-best) + `deid_regex_pack` (write_ents off) + `deid_merger`
                     -> a pipeline folder; the pack's data files are saved inside it.
package_pipeline()   two wheels into one folder, so that `pip install --no-index --find-links DIR
                     deid_<lang>` works offline:
                     * deid_<lang>: the pipeline folder as package data and a load() __init__.py,
                       from factory/templates/wheel/ (a declarative pyproject.toml). It requires
                       deid-runtime==<its version> and spaCy, and carries no code of its own. It
                       also carries the locale's surrogate data (languages/<lang>/surrogate_data/,
                       as deid_<lang>/surrogate_data/) and declares it to the runtime through a
                       `deid_runtime.locales` entry point, so surrogate redaction works with the
                       wheel alone (the runtime holds no locale's data).
                       Not `spacy package`: spaCy 3.8 names a package `<lang>_<name>` (its setup.py
                       template rebuilds the name as meta['lang'] + '_' + meta['name']), and the
                       product is spacy.load("deid_fr"), not es_deid_fr/fr_deid_fr.
                     * deid-runtime (factory/runtime/, its own pyproject.toml): the components,
                       registered with spaCy through its `spacy_factories` / `spacy_tokenizers`
                       entry points.
write_wheelhouse()   on request (`factory package --wheelhouse true`, the build's `wheelhouse` var): every
                     dependency of deid_<lang> and deid-runtime as wheels into the same folder, for
                     this machine's Python and platform and at the versions installed here, so that
                     `pip install --no-index --find-links DIR deid_<lang>` installs on a machine
                     without network. It is the only step that goes online (pip, to the registry
                     this machine is configured for), and only when asked.
install_wheel()      pip-installs the wheel into the current environment (build's last step).
"""

from __future__ import annotations

import errno
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

import deid_runtime
import srsly
import typer
from jinja2 import Environment, FileSystemLoader, StrictUndefined

from . import PACKAGE_DIR
from .locale import SURROGATE_DATA, Locale
from .outputs import WRITE_ONLY_ERRNOS, OutputError, write_text_atomic, writes_to

log = logging.getLogger(__name__)

RUNTIME_DISTRIBUTION = "deid-runtime"
RUNTIME_VERSION = deid_runtime.__version__
# The runtime's source (factory/runtime/ with its pyproject.toml) in a checkout or editable install.
RUNTIME_SOURCE = Path(deid_runtime.__file__).resolve().parent.parent
WHEEL_TEMPLATES = PACKAGE_DIR / "templates" / "wheel"
# What a deid_<lang> wheel requires: the runtime it was assembled with (which brings python-stdnum,
# PyYAML, langdetect) and the spaCy its data was saved by; nothing factory-only (no Argos, torch, Faker).
WHEEL_REQUIREMENTS = [f"{RUNTIME_DISTRIBUTION}=={RUNTIME_VERSION}", "spacy>=3.8,<3.9"]
# Left behind by a build of a source folder: never copied into a wheel's build folder.
BUILD_LEFTOVERS = shutil.ignore_patterns("__pycache__", "build", "dist", "*.egg-info")


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
    """The regex pack of locale `lang` of the factory's project: regex_packs/<regex_pack of its
    locale.yml> (regex_packs/<lang>/ for a locale without a locale.yml)."""
    return Locale.of(lang).pack_dir


def set_recall_bias(pipeline_dir: str | Path, bias: float) -> None:
    """Write `bias` as the o_bias of the saved pipeline's deid_tagger (its config.cfg), so that
    spacy.load gives the pipeline with that recall setting; a pipeline without the tagger (regex
    only, or spaCy's parser NER) is left as it is."""
    from thinc.api import Config

    from deid_runtime.biluo_tagger import recall_bias

    path = Path(pipeline_dir) / "config.cfg"
    config = Config().from_disk(path, interpolate=False)
    tagger = config.get("components", {}).get("deid_tagger")
    if tagger is None:
        return
    tagger["o_bias"] = recall_bias(bias)
    write_text_atomic(path, config.to_str())  # a pipeline already in place is never left half-written


def assemble_pipeline(model_dir: str | Path | None, lang: str, out_dir: str | Path,
                      pack_dir: str | Path | None = None, version: str = "0.1.0", recall_bias: float = 0.0):
    """NER model (or none: a blank `lang` pipeline) + regex pack + merger, saved to out_dir.
    recall_bias: the o_bias the saved deid_tagger decodes with (docs/training.md, "Recall setting");
    the model is trained with 0, the packaged pipeline gets the build's `recall_bias` var."""
    import spacy

    from deid_runtime.regex_pack import RegexPack
    from deid_runtime.tokenization import blank as phi_blank, upgrade_tokenizer

    locale = Locale.of(lang)
    pack_dir = Path(pack_dir) if pack_dir else locale.pack_dir
    if not (pack_dir / "pack.yml").exists():
        raise PackageError(f"{pack_dir}: regex pack not found (pack.yml missing)")
    if model_dir is not None:
        if not Path(model_dir).exists():
            raise PackageError(f"{model_dir}: trained model not found (run the train stage)")
        # the PHI tokenizer comes with the model: its config names deid.Tokenizer.v1 (the training
        # config's) and its saved tokenizer holds the rules. A model trained from an older config
        # (spaCy's plain tokenizer) is given it here, config included.
        nlp = upgrade_tokenizer(spacy.load(model_dir))
    else:
        nlp = phi_blank(lang)
    if nlp.lang != lang:
        log.warning("model language %s differs from %s", nlp.lang, lang)
    for name in ("deid_spacing", "deid_regex_pack", "deid_merger"):
        if name in nlp.pipe_names:
            nlp.remove_pipe(name)
    ner = next((name for name in ("deid_tagger", "ner") if name in nlp.pipe_names), None)
    if ner is not None:
        # the NER reads a note of double spaces (a PDF's or a scan's text) as if single-spaced
        nlp.add_pipe("deid_spacing", after=ner, config={"ner": ner})
    # pack_dir stays null in the saved config: the pack's files are saved with the pipeline, so
    # the installed package never looks for the build machine's paths.
    # The locale's data the two components need travels inside the pipeline: the pack is saved with
    # the titles its patterns use (`{title}`), the merger's config holds the locale's one-letter titles.
    component = nlp.add_pipe("deid_regex_pack", config={"pack_dir": None, "write_ents": False})
    component.pack = RegexPack.from_dir(pack_dir)
    nlp.add_pipe("deid_merger", config={"title_letters": locale.title_letters, "titles": locale.titles().forms()})
    nlp.meta.update({
        "name": f"deid_{lang}",
        "version": version,
        "description": f"Clinical text de-identification for '{lang}': CNN NER + {lang} regex/validator pack + merger. "
                       "Labels: PERSON AGE DATE ADDRESS LOCATION ORGANIZATION PROFESSION PHONE EMAIL URL IP ID.",
        "license": "MIT",
        "requirements": list(WHEEL_REQUIREMENTS),
    })

    def save(folder: Path) -> None:
        nlp.to_disk(folder)
        set_recall_bias(folder, recall_bias)

    write_dir_atomic(Path(out_dir), save)
    if "deid_tagger" in nlp.pipe_names:
        nlp.get_pipe("deid_tagger").o_bias = float(recall_bias)  # the returned object decodes as the saved one
    return nlp


def _pip_wheel(source: Path | str, dist: Path, what: str) -> Path:
    """Build the wheel of the project folder (or requirement) `source` into `dist`; returns it. Offline first: this
    environment's setuptools builds it (no build isolation). Only if that fails, pip's isolated
    build (which needs an index)."""
    cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(source)]
    ret = subprocess.run(cmd[:4] + ["--no-build-isolation"] + cmd[4:], capture_output=True, text=True)
    if ret.returncode != 0:
        _raise_if_write_failure(ret.stderr, dist)  # a full disk is not fixed by another build environment
        log.warning("offline wheel build of %s failed; retrying with pip's isolated build environment", what)
        ret = subprocess.run(cmd, capture_output=True, text=True)
    if ret.returncode != 0:
        _raise_if_write_failure(ret.stderr, dist)
        raise PackageError(f"pip wheel failed for {what} ({ret.returncode}): {ret.stderr[-2000:]}")
    wheels = list(dist.glob("*.whl"))
    if len(wheels) != 1:
        raise PackageError(f"expected one wheel for {what} in {dist}, found {len(wheels)}")
    return wheels[0]


# Errors of pip's build that only writing causes (pip prints the OSError: "[Errno 28] No space left
# on device"); EACCES too, since pip only writes into the folders this module gives it.
_PIP_WRITE_ERRNOS = WRITE_ONLY_ERRNOS | {errno.EACCES}


def _raise_if_write_failure(stderr: str, dist: Path) -> None:
    """OutputError (one line) when pip failed because it could not write, instead of pip's stderr."""
    for found in re.finditer(r"\[Errno (\d+)\]", stderr):
        code = int(found[1])
        if code in _PIP_WRITE_ERRNOS:
            raise OutputError(dist, OSError(code, os.strerror(code)))


def _work_dir(out_dir: Path, prefix: str) -> Path:
    """A fresh temporary folder inside out_dir (created if needed), so the final os.replace stays on
    one file system; a folder that cannot be written is an OutputError naming it."""
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(prefix=prefix, dir=out_dir))
    except OSError as err:
        raise OutputError(out_dir, err) from None


def _is_runtime_source(folder: Path) -> bool:
    try:
        project = tomllib.loads((folder / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return False
    return project.get("name") == RUNTIME_DISTRIBUTION


def build_runtime_wheel(out_dir: str | Path) -> Path:
    """deid_runtime-<version>-py3-none-any.whl in out_dir, built from the runtime's source folder
    (a copy: the checkout is not written to). Without the source (deid_factory installed from a
    wheel), pip fetches that version's wheel the way it finds any package (index, --find-links)."""
    out_dir = Path(out_dir)
    work = _work_dir(out_dir, "runtime.")
    try:
        with writes_to(out_dir):
            dist = work / "dist"
            if _is_runtime_source(RUNTIME_SOURCE):
                source = work / "src"
                shutil.copytree(RUNTIME_SOURCE, source, ignore=BUILD_LEFTOVERS)
                wheel = _pip_wheel(source, dist, RUNTIME_DISTRIBUTION)
            else:
                wheel = _pip_wheel(f"{RUNTIME_DISTRIBUTION}=={RUNTIME_VERSION}", dist, RUNTIME_DISTRIBUTION)
            final = out_dir / wheel.name
            os.replace(wheel, final)
            return final
    finally:
        shutil.rmtree(work, ignore_errors=True)


def default_surrogate_data(lang: str) -> Path:
    """languages/<lang>/surrogate_data/ of the factory's project: what the wheel of `lang` carries."""
    return Locale.of(lang).surrogate_data_dir


def _wheel_files(name: str, lang: str, meta: dict, data_dir: str, surrogate_data: str | None) -> dict[str, str]:
    """pyproject.toml and <name>/__init__.py of the deid_<lang> package, from the templates."""
    env = Environment(loader=FileSystemLoader(str(WHEEL_TEMPLATES)), undefined=StrictUndefined,
                      keep_trailing_newline=True)
    # a JSON string or list of strings is a TOML basic string or array (Jinja's tojson would escape < > ')
    env.filters["toml"] = lambda value: json.dumps(value, ensure_ascii=False)
    context = {"name": name, "lang": lang, "version": meta["version"], "data_dir": data_dir,
               "description": meta.get("description", ""), "license": meta.get("license", ""),
               "requirements": meta["requirements"], "surrogate_data": surrogate_data}
    return {"pyproject.toml": env.get_template("pyproject.toml.j2").render(**context),
            f"{name}/__init__.py": env.get_template("__init__.py.j2").render(**context)}


def package_pipeline(pipeline_dir: str | Path, out_dir: str | Path, lang: str | None = None,
                     version: str | None = None, surrogate_data: str | Path | None = None) -> Path:
    """Build deid_<lang>-<version>-py3-none-any.whl in out_dir, and beside it the
    deid_runtime wheel it requires; returns the deid_<lang> wheel's path. `surrogate_data`: the
    locale's surrogate data folder the wheel carries (default languages/<lang>/surrogate_data/ of
    the project); a language without one is packaged without it (one line says so), and redaction
    in surrogate mode then falls back as deid_runtime.surrogates.load_locale says."""
    pipeline_dir, out_dir = Path(pipeline_dir), Path(out_dir)
    meta_file = pipeline_dir / "meta.json"
    if not meta_file.exists():
        raise PackageError(f"{pipeline_dir}: not a pipeline folder (meta.json missing)")
    meta = srsly.read_json(meta_file)
    lang = lang or meta["lang"]
    version = version or meta.get("version", "0.1.0")
    name = f"deid_{lang}"
    data_dir = f"{name}-{version}"
    # requirements: exactly the runtime and spaCy (whatever an older assemble wrote)
    meta.update({"name": name, "version": version, "lang": lang, "requirements": list(WHEEL_REQUIREMENTS)})
    data_source = Path(surrogate_data) if surrogate_data is not None else default_surrogate_data(lang)
    if not (data_source / "formats.yml").is_file():
        if surrogate_data is not None:
            raise PackageError(f"{data_source}: not a surrogate data folder (formats.yml missing)")
        log.warning("%s: no surrogate data for %s: the wheel carries none", data_source, name)
        data_source = None
    build_runtime_wheel(out_dir)
    work = _work_dir(out_dir, "package.")
    try:
        with writes_to(out_dir):  # a full disk or read-only folder: one line naming it (cli)
            root = work / data_dir
            pkg = root / name
            shutil.copytree(pipeline_dir, pkg / data_dir, ignore=BUILD_LEFTOVERS)
            for meta_path in (pkg / "meta.json", pkg / data_dir / "meta.json"):
                srsly.write_json(meta_path, meta)
            if data_source is not None:  # beside the pipeline folder, found through the entry point
                shutil.copytree(data_source, pkg / SURROGATE_DATA, ignore=BUILD_LEFTOVERS)
            for rel, text in _wheel_files(name, lang, meta, data_dir,
                                          SURROGATE_DATA if data_source is not None else None).items():
                (root / rel).write_text(text, encoding="utf-8")
            final = out_dir / _pip_wheel(root, work / "dist", name).name
            os.replace(work / "dist" / final.name, final)
            if final.name != f"{name}-{version}-py3-none-any.whl":
                raise PackageError(f"{final.name}: not the wheel name expected for {name} {version}")
            # keep the unpacked package folder for inspection, replacing an older one
            kept = out_dir / data_dir
            if kept.exists():
                shutil.rmtree(kept)
            shutil.rmtree(root / "build", ignore_errors=True)
            for egg in root.glob("*.egg-info"):
                shutil.rmtree(egg, ignore_errors=True)
            root.rename(kept)
            return final
    finally:
        shutil.rmtree(work, ignore_errors=True)


# Distributions that are this project's own: never pinned to what is installed here (an editable
# checkout's version need not exist on any registry); deid-runtime comes from the wheel built beside.
OWN_DISTRIBUTIONS = {"deid-factory", "deid-runtime"}


def _installed_versions() -> str:
    """Constraints (name==version, one a line) of every distribution installed in this
    environment but the project's own: the wheelhouse gets the versions the pipeline was built and
    tested with, not whatever the registry has newest."""
    from importlib.metadata import distributions

    pins = {}
    for dist in distributions():
        name = re.sub(r"[-_.]+", "-", (dist.metadata["Name"] or "")).lower()
        if name and name not in OWN_DISTRIBUTIONS and not name.startswith("deid-"):
            pins[name] = f"{name}=={dist.version}"
    return "".join(line + "\n" for _, line in sorted(pins.items()))


def write_wheelhouse(wheel: str | Path) -> list[Path]:
    """Every dependency of the deid_<lang> `wheel` (deid-runtime, spaCy and theirs, transitively)
    as wheels in the wheel's own folder, for this Python and platform, at the versions installed
    in this environment (`pip wheel`: a dependency published as source only, like langdetect, is
    built into a wheel here, so installing needs no build tools either). pip reaches the registry
    this machine is configured for; deid-runtime is the wheel built beside. Returns the wheels the
    folder holds afterwards. A failure names the folder and gives pip's last lines (no text of
    any note goes near it)."""
    wheel = Path(wheel)
    folder = wheel.parent
    with tempfile.TemporaryDirectory(prefix="wheelhouse.") as tmp:
        constraints = Path(tmp) / "constraints.txt"
        constraints.write_text(_installed_versions(), encoding="utf-8")
        cmd = [sys.executable, "-m", "pip", "wheel", "-q", "--wheel-dir", str(folder), "--find-links", str(folder),
               "--constraint", str(constraints), str(wheel)]
        ret = subprocess.run(cmd, capture_output=True, text=True)
    if ret.returncode != 0:
        _raise_if_write_failure(ret.stderr, folder)
        raise PackageError(f"{folder}: could not write the wheelhouse of {wheel.name} (pip wheel {ret.returncode}; "
                           f"it needs the package registry): {ret.stderr[-2000:]}")
    wheels = sorted(folder.glob("*.whl"))
    log.info("wheelhouse %s: %d wheels", folder, len(wheels))
    return wheels


def parse_switch(value: str | bool, what: str) -> bool:
    """A yes/no value from the command line or a project var (weasel writes a YAML boolean as True/False)."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "yes", "1", "on"):
        return True
    if text in ("false", "no", "0", "off", ""):
        return False
    raise PackageError(f"{what}: expected true or false, got {value!r}")


def find_wheel(packages_dir: str | Path, lang: str) -> Path:
    wheels = sorted(Path(packages_dir).glob(f"deid_{lang}-*.whl"), key=lambda p: p.stat().st_mtime)
    if not wheels:
        raise PackageError(f"{packages_dir}: no deid_{lang} wheel (run the package stage)")
    return wheels[-1]


def install_wheel(wheel: str | Path, with_deps: bool = False, python: str | None = None) -> None:
    """pip install the wheel into the environment of `python` (default: this one)."""
    cmd = [python or sys.executable, "-m", "pip", "install", "-q", "--force-reinstall"]
    if with_deps:  # deid-runtime: the wheel built beside it, offline
        cmd += ["--find-links", str(Path(wheel).parent)]
    else:
        cmd.append("--no-deps")  # the factory environment has deid-runtime and its requirements
    cmd.append(str(wheel))
    ret = subprocess.run(cmd, capture_output=True, text=True)
    if ret.returncode != 0:
        raise PackageError(f"pip install {Path(wheel).name} failed ({ret.returncode}): {ret.stderr[-2000:]}")


def assemble_command(
    model: Path = typer.Argument(None, help="Trained model folder (training/model-best); omit for a regex-only pipeline"),
    lang: str = typer.Option(..., "--lang", "-l", help="Language code of a locale in languages/ (es, fr, ca, it...)"),
    out: Path = typer.Option(..., "--out", "-o", help="Output pipeline folder"),
    pack_dir: Path = typer.Option(None, "--pack-dir", help="Regex pack folder (default regex_packs/<lang>)"),
    version: str = typer.Option("0.1.0", "--version"),
    recall_bias: float = typer.Option(0.0, "--recall-bias", min=0.0,
                                      help="o_bias of the packaged deid_tagger (0 = as trained; the build passes its recall_bias var)"),
    recall_target: float = typer.Option(0.0, "--recall-target", min=0.0, max=1.0,
                                        help="Token recall the packaged pipeline must reach on --calibrate-on: its o_bias is "
                                        "the smallest (>= --recall-bias, step 0.5) that reaches it; 0 = off"),
    calibrate_on: str = typer.Option("-", "--calibrate-on", help="Annotated set for --recall-target (your own notes: "
                                     "DocBin, records JSONL, brat folder, i2b2 XML); '-' = none"),
    label_map: str = typer.Option(None, "--label-map", help="Label map of a brat/i2b2 --calibrate-on set (e.g. meddocan)"),
) -> None:
    """Assemble deid_<lang>: NER + regex pack + merger in one spaCy pipeline folder."""
    from .evaluate import EvalError

    try:
        nlp = assemble_pipeline(model, lang, out, pack_dir=pack_dir, version=version, recall_bias=recall_bias)
        if recall_target > 0:
            calibration = calibrate_recall_setting(nlp, out, calibrate_on, recall_target, recall_bias, lang, label_map)
            typer.echo(f"recall setting: {calibration['message']}")
    except (PackageError, EvalError) as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(1)
    typer.echo(f"assembled {out}: {nlp.pipe_names}")


def calibrate_recall_setting(nlp, pipeline_dir: str | Path, annotated: str | Path, target: float, floor: float,
                             lang: str | None = None, label_map: str | None = None) -> dict:
    """Package the assembled pipeline at the smallest o_bias (>= floor, the build's recall_bias) at
    which its token recall on an annotated set of the user's own reaches `target`: a recall goal
    stated as a recall, on the notes it is meant for, rather than as a knob value. Writes the
    result to PIPELINE/recall_setting.json (scores only) and the o_bias into its config. When no
    setting reaches the target, the pipeline is packaged at the top of the range and the message
    says so: the target is a goal, the closest the pipeline gets is still the safest choice."""
    from .evaluate import O_BIASES, calibrate_pipeline, load_corpus

    if annotated in (None, "", "-"):
        raise PackageError("--recall-target needs an annotated set to calibrate on (--calibrate-on; "
                           "the build passes its dev split, your own notes when --vars.dev_path is given)")
    if "deid_tagger" not in nlp.pipe_names:
        raise PackageError(f"{pipeline_dir}: no deid_tagger, no recall setting to calibrate")
    data = load_corpus(annotated, lang=lang, label_map=label_map or None)
    if not data:
        raise PackageError(f"{annotated}: no annotated documents to calibrate on")
    high = max(float(floor), O_BIASES[-1])
    found = calibrate_pipeline(nlp, data, target, low=float(floor), high=high)
    reached = found is not None
    bias, scores = found if reached else (high, calibrate_pipeline(nlp, data, 0.0, low=high, high=high)[1])
    set_recall_bias(pipeline_dir, bias)
    nlp.get_pipe("deid_tagger").o_bias = float(bias)
    result = {"target_token_recall": target, "floor_o_bias": float(floor), "o_bias": bias, "reached": reached,
              "documents": len(data), **scores}
    write_text_atomic(Path(pipeline_dir) / "recall_setting.json", srsly.json_dumps(result, indent=2))
    result["message"] = (f"o_bias {bias}: token recall {scores['token_recall']:.4f} >= {target} on {len(data)} "
                         f"annotated documents (strict F1 {scores['strict_f']:.4f})" if reached else
                         f"token recall {target} not reached on {len(data)} annotated documents even at o_bias "
                         f"{bias} ({scores['token_recall']:.4f}): packaged at o_bias {bias}")
    log.info("recall setting: %s", result["message"])
    return result


def package_command(
    pipeline: Path = typer.Argument(..., help="Assembled pipeline folder"),
    out: Path = typer.Argument(..., help="Folder for the wheel"),
    lang: str = typer.Option(None, "--lang", "-l"),
    version: str = typer.Option(None, "--version"),
    install: bool = typer.Option(False, "--install", help="pip install the wheel into this environment"),
    wheelhouse: str = typer.Option("false", "--wheelhouse", help="true: also write every dependency of the two "
                                   "wheels into the folder (pip wheel, from the registry; for this Python and "
                                   "platform, at the versions installed here), for an install with --no-index"),
) -> None:
    """Build the deid_<lang> wheel and, beside it, the deid-runtime wheel it requires (--install: into this environment)."""
    try:
        with_dependencies = parse_switch(wheelhouse, "--wheelhouse")
        wheel = package_pipeline(pipeline, out, lang=lang, version=version)
        wheels = write_wheelhouse(wheel) if with_dependencies else []
        if install:
            install_wheel(wheel)
    except PackageError as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(1)
    typer.echo(f"wheel: {wheel}" + (" (installed)" if install else ""))
    if with_dependencies:
        typer.echo(f"wheelhouse: {len(wheels)} wheels in {wheel.parent} "
                   f"(pip install --no-index --find-links {wheel.parent} {wheel.name.split('-')[0]})")


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
