"""Shared pytest fixtures. Each engineer's fixtures carry their area's prefix (train_: training,
evaluation, packaging, router and redaction tests)."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

# ----------------------------------------------------------------------------- hypothesis profiles
# ci (the default): a fixed replay - the same examples on every run (derandomize), so a failure in CI
# reproduces anywhere. explore (HYPOTHESIS_PROFILE=explore): fresh random examples on every run and
# HYPOTHESIS_EXPLORE_SCALE times as many, to look for inputs the fixed set never tries; a failure
# prints the shrunk input and a @reproduce_failure blob. Both: no example database in the working
# tree, no deadline (tests that time something do it themselves; a deadline flakes on a loaded
# machine). Tests that set their own max_examples scale it with hypothesis_examples(n).
HYPOTHESIS_CI_EXAMPLES = 25
HYPOTHESIS_EXPLORE_SCALE = 10
HYPOTHESIS_PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
try:
    from hypothesis import settings as _hypothesis_settings
except ImportError:  # the optional `test` extra is not installed: the property tests skip
    _hypothesis_settings = None
if _hypothesis_settings is not None:
    _hypothesis_settings.register_profile("ci", derandomize=True, database=None, deadline=None,
                                          max_examples=HYPOTHESIS_CI_EXAMPLES)
    _hypothesis_settings.register_profile("explore", derandomize=False, database=None, deadline=None, print_blob=True,
                                          max_examples=HYPOTHESIS_CI_EXAMPLES * HYPOTHESIS_EXPLORE_SCALE)
    _hypothesis_settings.load_profile(HYPOTHESIS_PROFILE)  # an unknown name fails at once, naming it


def hypothesis_examples(n: int) -> int:
    """max_examples for a test that sets its own: n under ci, HYPOTHESIS_EXPLORE_SCALE * n under explore."""
    return n * HYPOTHESIS_EXPLORE_SCALE if HYPOTHESIS_PROFILE == "explore" else n

# ----------------------------------------------------------------------------- DEID_REQUIRE
# Some skips hide a README claim when the machine cannot check it: the tests on ../shared (MEDDOCAN),
# the clean-venv wheel test, the unwritable-folder tests; some fallbacks weaken one (a Python-level
# full disk instead of a tmpfs, the Python socket guard alone instead of a network namespace).
# DEID_REQUIRE (comma-separated kinds, set by .ci/run) turns the skips and fallbacks of the kinds it
# names into failures, so CI cannot pass with a claim untested. The other skips (no /proc, no
# /dev/full: not Linux) stay skips whatever it says.
REQUIRE_KINDS = {
    "shared": "../shared/corpora (MEDDOCAN) is present",
    "wheel": "the deid_<lang> wheel installs into a fresh virtual environment without deid_factory",
    "unwritable": "a folder can be made unwritable to the stage under test (also as root)",
    "tmpfs": "a size-limited tmpfs can be mounted in a private mount namespace (unshare -m, or -rm), so the "
             "full-disk tests get ENOSPC from the kernel, not from the Python-level byte budget",
    "netns": "a network namespace with loopback only can be made (unshare -n, or -rn), so the end-to-end "
             "builds and the router run where the kernel has no route out, not only under the Python socket guard",
}
DEID_REQUIRE = {k.strip() for k in os.environ.get("DEID_REQUIRE", "").split(",") if k.strip()}
_UNKNOWN_REQUIRE = sorted(DEID_REQUIRE - set(REQUIRE_KINDS))


def pytest_configure(config):
    if _UNKNOWN_REQUIRE:  # a typo would silently turn a required check back into a skip
        raise pytest.UsageError(f"DEID_REQUIRE names unknown kinds {_UNKNOWN_REQUIRE}; known: {sorted(REQUIRE_KINDS)}")


def require_or_skip(kind: str, reason: str) -> None:
    """Skip the test with `reason`, or fail it when DEID_REQUIRE names `kind` (CI sets it)."""
    if kind not in REQUIRE_KINDS:
        raise ValueError(f"unknown require kind {kind!r}; known: {sorted(REQUIRE_KINDS)}")
    if kind in DEID_REQUIRE:
        pytest.fail(f"{reason} - and DEID_REQUIRE={','.join(sorted(DEID_REQUIRE))} requires that "
                    f"{REQUIRE_KINDS[kind]}", pytrace=False)
    pytest.skip(f"{reason} (DEID_REQUIRE={kind} would fail this)")


def require_or_fallback(kind: str, reason: str, fallback: str) -> None:
    """Go on with a weaker fallback (a warning in the test summary says which), or fail when
    DEID_REQUIRE names `kind` (CI sets it)."""
    import warnings

    if kind not in REQUIRE_KINDS:
        raise ValueError(f"unknown require kind {kind!r}; known: {sorted(REQUIRE_KINDS)}")
    if kind in DEID_REQUIRE:
        pytest.fail(f"{reason} - and DEID_REQUIRE={','.join(sorted(DEID_REQUIRE))} requires that "
                    f"{REQUIRE_KINDS[kind]}", pytrace=False)
    warnings.warn(f"{reason}: {fallback} (DEID_REQUIRE={kind} would fail this)", stacklevel=2)


SHARED = Path(__file__).resolve().parents[1].parent / "shared"


def pytest_runtest_setup(item):
    """@pytest.mark.shared(path, ...): each path (default: ../shared) must exist, else the test skips -
    or fails under DEID_REQUIRE=shared. Checked before the test's fixtures are built."""
    for mark in item.iter_markers(name="shared"):
        for path in (mark.args or (SHARED,)):
            if not Path(path).exists():
                require_or_skip("shared", f"{path} is absent (../shared is not next to the checkout)")


# ----------------------------------------------------------------------------- shared helpers
# The checkout these tests belong to (its regex_packs/, languages/, corpora/): the tests under
# tests/runtime read the project's data through it, not through deid_factory, so that they run with
# the runtime alone (tests/system/test_layout.py checks that they import nothing of deid_factory).
CHECKOUT = Path(__file__).resolve().parents[1]

# What the runtime distribution (deid_runtime and the deid_<lang> wheels) must never import: the
# factory's own package and the libraries only the factory needs (data generation, translation,
# GPU training). spaCy is the runtime's own engine; the tests that load nothing of spaCy say so.
FACTORY_ONLY = ("deid_factory", "faker", "argostranslate", "torch")


def spans_of(text: str, items) -> list[tuple[int, int, str]]:
    """(start, end, label) of each (surface, label) of `items`, each surface found in `text` after the
    previous one (so a name written twice gets its two places, in order)."""
    out, pos = [], 0
    for value, label in items:
        start = text.index(value, pos)
        out.append((start, start + len(value), label))
        pos = start + len(value)
    return out


_PACKS: dict = {}


def regex_pack(lc: str):
    """The checkout's regex pack regex_packs/<lc>/, loaded once per test run (a pack compiles hundreds of
    patterns; the pack tests of several modules share each one)."""
    from deid_runtime.regex_pack import RegexPack

    if lc not in _PACKS:
        _PACKS[lc] = RegexPack.from_dir(CHECKOUT / "regex_packs" / lc)
    return _PACKS[lc]


def use_checkout_surrogate_data() -> None:
    """Make the runtime's surrogate engine read languages/<lc>/surrogate_data/ of this checkout (what
    deid_factory.locale does on import for the factory's project), without importing the factory."""
    from deid_runtime.surrogates.locale import register_locale_root

    register_locale_root(CHECKOUT / "languages")


def new_venv(env_dir: Path) -> Path:
    """A fresh virtual environment with pip at `env_dir`; its python. Where none can be made here the
    test is skipped, or fails under DEID_REQUIRE=wheel (require_or_skip)."""
    import subprocess
    import venv

    try:
        venv.EnvBuilder(with_pip=True).create(env_dir)
    except (OSError, subprocess.CalledProcessError) as exc:
        require_or_skip("wheel", f"cannot create a virtual environment with pip here: {exc}")
    return env_dir / "bin" / "python"


def docstring_ids(tree) -> set[int]:
    """The ids of the docstring constants of a parsed module and of its functions and classes (scans
    of source for locale facts or root reads leave docstrings out)."""
    import ast

    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                ids.add(id(first.value))
    return ids


def imported_modules(path: Path, top_level_only: bool = False) -> set[str]:
    """The absolute module names a Python file imports: its import statements (`from x.y import z`
    names x.y; relative imports are left out) and its __import__("x") / import_module("x") calls with a
    literal name; anywhere in the file, or with top_level_only in the statements of the module body
    only (what importing the file runs)."""
    import ast

    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    nodes = tree.body if top_level_only else ast.walk(tree)
    names: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)
              and getattr(node.func, "id", getattr(node.func, "attr", None)) in ("__import__", "import_module")):
            names.add(node.args[0].value)
    return names


def modules_loaded_by(statement: str, watched=FACTORY_ONLY) -> list[str]:
    """Which of the `watched` top-level modules (a package counts with any of its submodules) a fresh
    Python process has imported after running `statement` - the runtime's "imports nothing
    factory-only" check, in a process whose sys.modules nothing else filled."""
    import json
    import subprocess
    import sys

    code = (f"{statement}\nimport json, sys\nwatched = json.loads(sys.argv[1])\n"
            "print(json.dumps(sorted(w for w in watched if any(m == w or m.startswith(w + '.') for m in sys.modules "
            "if sys.modules[m] is not None))))")
    ret = subprocess.run([sys.executable, "-c", code, json.dumps(list(watched))], capture_output=True, text=True,
                         timeout=300)
    assert ret.returncode == 0, ret.stderr[-2000:]
    return json.loads(ret.stdout.strip().splitlines()[-1])


# ----------------------------------------------------------------------------- train_ fixtures
# A tiny synthetic Spanish corpus with exact gold spans, built with Faker: enough for a CNN NER to
# learn PERSON/DATE/ID/... in a couple of epochs, small enough to train in seconds on 2 cores.
_TRAIN_TEMPLATES = [
    "Paciente {PERSON}, de {AGE} años, ingresa el {DATE} en el {ORGANIZATION}.",
    "Se cita a {PERSON} con DNI {ID} para control el {DATE}.",
    "Remitido por el Dr. {PERSON} desde {LOCATION} el día {DATE}.",
    "Contacto: teléfono {PHONE}, correo {EMAIL}. Domicilio en {ADDRESS}, {LOCATION}.",
    "La paciente {PERSON} refiere dolor abdominal desde el {DATE}. NHC {ID}.",
    "Informe firmado por {PERSON}, {PROFESSION} del {ORGANIZATION}.",
    "Varón de {AGE} años, natural de {LOCATION}, acude con su hija {PERSON}.",
]
_DNI_LETTERS = "TRWAGMYFPDXBNJZSQVHLCKE"


def _train_fill(label: str, fake, rng: random.Random) -> str:
    if label == "PERSON":
        name = f"{fake.first_name()} {fake.last_name()} {fake.last_name()}"
        return name.upper() if rng.random() < 0.3 else name
    if label == "AGE":
        return str(rng.randint(18, 95))
    if label == "DATE":
        return f"{rng.randint(1, 28):02d}/{rng.randint(1, 12):02d}/{rng.randint(1990, 2024)}"
    if label == "ID":
        n = rng.randint(10_000_000, 99_999_999)
        return f"{n}{_DNI_LETTERS[n % 23]}"
    if label == "ORGANIZATION":
        return f"Hospital {fake.city()}"
    if label == "LOCATION":
        return fake.city()
    if label == "PHONE":
        return f"6{rng.randint(10, 99)} {rng.randint(100, 999)} {rng.randint(100, 999)}"
    if label == "EMAIL":
        return fake.user_name() + "@" + rng.choice(["gmail.com", "hotmail.es", "salud.es"])
    if label == "ADDRESS":
        return f"Calle {fake.last_name()} {rng.randint(1, 200)}"
    if label == "PROFESSION":
        return rng.choice(["enfermera", "médico de familia", "cardióloga", "fisioterapeuta"])
    raise KeyError(label)


def train_make_records(n: int, seed: int = 0) -> list[dict]:
    """n records {id, lang, text, spans} in the project's record format."""
    from faker import Faker

    fake = Faker("es_ES")
    fake.seed_instance(seed)
    rng = random.Random(seed)
    records = []
    for i in range(n):
        text, spans = "", []
        for template in rng.sample(_TRAIN_TEMPLATES, 2):
            pos = 0
            sentence = ""
            for part in template.replace("}", "{").split("{"):
                if part in ("PERSON", "AGE", "DATE", "ID", "ORGANIZATION", "LOCATION", "PHONE", "EMAIL",
                            "ADDRESS", "PROFESSION"):
                    value = _train_fill(part, fake, rng)
                    start = len(text) + len(sentence)
                    sentence += value
                    spans.append({"start": start, "end": start + len(value), "label": part})
                else:
                    sentence += part
            text += sentence + " "
        records.append({"id": f"train-{i:04d}", "lang": "es", "text": text.strip(), "spans": spans, "meta": {}})
    return records


def train_write_docbin(records: list[dict], path: Path, lang: str = "es") -> None:
    import spacy
    from spacy.tokens import DocBin

    nlp = spacy.blank(lang)
    db = DocBin()
    for r in records:
        doc = nlp.make_doc(r["text"])
        ents = [doc.char_span(s["start"], s["end"], label=s["label"], alignment_mode="expand") for s in r["spans"]]
        doc.ents = [e for e in ents if e is not None]
        db.add(doc)
    path.parent.mkdir(parents=True, exist_ok=True)
    db.to_disk(path)


@pytest.fixture(scope="session")
def train_corpus(tmp_path_factory) -> Path:
    """Folder with train.spacy (48 docs), dev.spacy (12), test.spacy (12) and test.jsonl."""
    import srsly

    root = tmp_path_factory.mktemp("train_corpus")
    records = train_make_records(72, seed=0)
    train_write_docbin(records[:48], root / "train.spacy")
    train_write_docbin(records[48:60], root / "dev.spacy")
    train_write_docbin(records[60:], root / "test.spacy")
    srsly.write_jsonl(root / "test.jsonl", records[60:])
    return root


@pytest.fixture(scope="session")
def train_config(tmp_path_factory) -> Path:
    """The es training config rendered from the project template."""
    from deid_factory.render import render_config

    path = tmp_path_factory.mktemp("train_config") / "config.cfg"
    path.write_text(render_config("es"), encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def train_model(tmp_path_factory, train_corpus, train_config) -> Path:
    """A tiny es NER trained for a few epochs on CPU (about 20-40 s on 2 cores)."""
    from deid_factory.train import train_model as run_training

    out = tmp_path_factory.mktemp("train_model")
    run_training(train_corpus / "train.spacy", train_corpus / "dev.spacy", train_config, out,
                 gpu_id=-1, max_epochs=6, patience=6, seed=0)
    return out


@pytest.fixture(scope="session")
def train_pipeline(tmp_path_factory, train_model) -> Path:
    """deid_es assembled from the tiny model and the es regex pack."""
    from deid_factory.package import assemble_pipeline

    out = tmp_path_factory.mktemp("train_pipeline") / "deid_es"
    assemble_pipeline(train_model / "model-best", "es", out)
    return out


@pytest.fixture(scope="session")
def train_tagger_pipeline(tmp_path_factory, train_corpus) -> Path:
    """deid_es with the BILUO tagger (deid_tagger) instead of the transition-based NER, tiny."""
    from deid_factory.package import assemble_pipeline
    from deid_factory.render import render_config
    from deid_factory.train import train_model as run_training

    root = tmp_path_factory.mktemp("train_tagger")
    config = root / "config.cfg"
    config.write_text(render_config("es", ner_model="tagger"), encoding="utf-8")
    run_training(train_corpus / "train.spacy", train_corpus / "dev.spacy", config, root / "model",
                 gpu_id=-1, max_epochs=8, patience=8, seed=0)
    assemble_pipeline(root / "model" / "model-best", "es", root / "deid_es")
    return root / "deid_es"


@pytest.fixture(scope="session")
def train_wheel(tmp_path_factory, train_pipeline) -> Path:
    """The deid_es wheel built from the tiny pipeline, the deid_runtime wheel beside it (factory package)."""
    from deid_factory.package import package_pipeline

    return package_pipeline(train_pipeline, tmp_path_factory.mktemp("train_wheel"), lang="es")


# ----------------------------------------------------------------------------- argos_ / translate_ fixtures
# Real Argos Translate with copy-model packages built by deid_factory.argos_testkit: nothing is
# downloaded, nothing is installed outside pytest's temporary folders.
TRANSLATE_FIXTURES = Path(__file__).parent / "fixtures_translate"
ARGOS_LOSSY_TERM = "Faustino"  # first PERSON placeholder: the lossy package drops it late in a sentence
ARGOS_LOSSY_FROM = 14  # source token position from which the lossy package drops it


def _argos_xdg_env(root: Path) -> dict:
    return {"XDG_DATA_HOME": str(root / "data"), "XDG_CONFIG_HOME": str(root / "config"),
            "XDG_CACHE_HOME": str(root / "cache"), "ARGOS_PACKAGES_DIR": str(root / "packages")}


@pytest.fixture(scope="session")
def argos_home(tmp_path_factory) -> Path:
    """Import argostranslate with its data/config/cache folders in a temp dir (it reads them once, at
    import time), then restore the environment so other tests see theirs unchanged."""
    from deid_factory.argos_env import import_argos_with

    root = tmp_path_factory.mktemp("argos_home")
    import_argos_with(_argos_xdg_env(root))
    return root


@pytest.fixture()
def argos_env(argos_home, monkeypatch) -> dict:
    """The same temp Argos folders as environment variables, for subprocesses and spawned workers."""
    env = _argos_xdg_env(argos_home)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    return env


@pytest.fixture(scope="session")
def argos_packages(tmp_path_factory) -> dict:
    """Folders of .argosmodel files: pivot (es-en, en-fr), direct (es-fr), lossy (es-en, en-fr that
    drops ARGOS_LOSSY_TERM from position ARGOS_LOSSY_FROM), lossy_pivot (es-en lossy, en-fr)."""
    import shutil

    from deid_factory.argos_testkit import _default_sentences, build_package
    from deid_factory.placeholders import all_placeholder_terms

    root = tmp_path_factory.mktemp("argos_packages")
    sentences = _default_sentences("") + all_placeholder_terms()
    dirs = {name: root / name for name in ("pivot", "direct", "lossy", "lossy_pivot")}
    for d in dirs.values():
        d.mkdir()
    es_en = build_package(dirs["pivot"] / "translate-es_en.argosmodel", "es", "en", sentences)
    en_fr = build_package(dirs["pivot"] / "translate-en_fr.argosmodel", "en", "fr", sentences)
    build_package(dirs["direct"] / "translate-es_fr.argosmodel", "es", "fr", sentences)
    shutil.copy(es_en, dirs["lossy"] / es_en.name)
    build_package(dirs["lossy"] / "translate-en_fr.argosmodel", "en", "fr", sentences,
                  lossy_tokens=[ARGOS_LOSSY_TERM], lossy_from_position=ARGOS_LOSSY_FROM)
    build_package(dirs["lossy_pivot"] / "translate-es_en.argosmodel", "es", "en", sentences,
                  lossy_tokens=[ARGOS_LOSSY_TERM], lossy_from_position=0)
    shutil.copy(en_fr, dirs["lossy_pivot"] / en_fr.name)
    return dirs


@pytest.fixture()
def translate_source(tmp_path) -> Path:
    """The hand-written Spanish fixture records (exact PHI spans), copied to a temp folder."""
    import shutil

    path = tmp_path / "source_es.jsonl"
    shutil.copy(TRANSLATE_FIXTURES / "source_es.jsonl", path)
    return path


@pytest.fixture()
def translate_no_network(monkeypatch) -> list:
    """Block every socket connection and name lookup; the returned list records each attempt."""
    import socket

    attempts: list = []

    def refuse(*args, **kwargs):
        attempts.append(repr(args[1:2]) if len(args) > 1 else "lookup")
        raise OSError("network blocked by the translate_no_network fixture")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    return attempts


# ----------------------------------------------------------------------------- e2e_ fixtures
@pytest.fixture(scope="session")
def e2e_es_build(tmp_path_factory):
    """One small offline es build per test run (tests/system/test_build_e2e.py's build_small_es: the es
    project copied, `spacy project run build` with its SMALL vars, the wheel installed into a
    temporary folder), for the end-to-end tests that read it or build on a copy of it; a build takes
    minutes, and each test that made its own made the suite that much longer."""
    from test_build_e2e import build_small_es

    return build_small_es(tmp_path_factory.mktemp("e2e_es_build"))
