"""End to end through the spaCy projects: a small es build (offline, no Argos) and a small fr
build through the es->en->fr pivot with test-built copy-model Argos packages. Each copies its
language project (its folder with surrogate_data/, its regex pack and its synthetic corpus: the
files its steps declare as deps) into a temporary tree so the checkout stays clean, and installs
the wheel into a temporary --target (PIP_TARGET) instead of the test environment.

The builds, and the loading of the wheel they installed, run with no network (tests/system/test_privacy.py's
network_isolation: a network namespace with loopback only where the kernel allows it, and the Python
socket guard, which logs any attempt, in every process), and everything they print or log is searched
for the PHI strings of their input corpus."""

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from deid_factory import PROJECT_ROOT, ROOT_ENV
from test_privacy import assert_guard_active, assert_kernel_has_no_route_out, leaked_phi, network_isolation, phi_strings

pytestmark = pytest.mark.slow
SMALL = ["--vars.n_records", "40", "--vars.max_epochs", "2", "--vars.patience", "2"]
OUTPUTS = ("corpus", "training", "metrics", "packages", "assets", "project.lock")
# The factory's commands read the locales (the target's and, in a translation build, the source's)
# of the checkout, as they did when the copy had no corpora/ and so was no project of its own: the
# copy holds what weasel checks (the steps' deps) and receives the outputs.
FACTORY_ROOT = {ROOT_ENV: str(PROJECT_ROOT)}


def _copy_project(lang: str, root: Path) -> Path:
    """The language's project folder (with its surrogate_data/), regex pack and synthetic corpus:
    every file its project.yml declares as a dep (weasel refuses a step whose deps are missing)."""
    dst = root / "languages" / lang
    shutil.copytree(PROJECT_ROOT / "languages" / lang, dst, ignore=shutil.ignore_patterns(*OUTPUTS))
    shutil.copytree(PROJECT_ROOT / "regex_packs" / lang, root / "regex_packs" / lang)
    if (PROJECT_ROOT / "corpora" / "synth" / lang).is_dir():  # extract's deps
        shutil.copytree(PROJECT_ROOT / "corpora" / "synth" / lang, root / "corpora" / "synth" / lang)
    return dst


def _weasel(args, cwd, env, prefix=()):
    """Run a workflow (through prefix: network_isolation's namespace, where given); return all it
    printed (stdout + stderr, read by the PHI check)."""
    ret = subprocess.run([*prefix, sys.executable, "-m", "spacy", "project", "run", *args], cwd=cwd, env=env,
                         capture_output=True, text=True, timeout=900)
    assert ret.returncode == 0, (ret.stdout[-4000:], ret.stderr[-4000:])
    return ret.stdout + ret.stderr


def _check_offline_and_no_phi_logged(project: Path, printed: str, env: dict, attempts: Path, prefix: list) -> None:
    """No process of the build even tried the network (and the guard was really there, and so was the
    kernel's namespace), and no PHI string of the extracted corpus is in what the build printed, in a
    log file it wrote, or in a stage report / metrics file (those are shared freely, unlike the
    corpus files themselves)."""
    assert not attempts.exists(), attempts.read_text()
    assert_guard_active(env, attempts)
    assert_kernel_has_no_route_out(prefix, env)
    phi = phi_strings(project / "corpus" / "extracted.jsonl")
    assert len(phi) >= 20  # the check has something to find
    logs = [p for p in project.rglob("*") if p.is_file() and (p.suffix == ".log" or p.name == "log.jsonl")]
    reports = [*project.glob("corpus/**/*.json"), *project.glob("metrics/*.json"), *project.glob("metrics/*.md"),
               *project.glob("training/*.json")]
    assert len(reports) >= 8
    texts = [printed] + [p.read_text(encoding="utf-8", errors="replace") for p in sorted(logs + reports)]
    assert leaked_phi(phi, "\n".join(texts)) == []


def _load_installed(site: Path, name: str, text: str, cwd: Path, env: dict, prefix: list, attempts: Path) -> list:
    """Load the installed wheel and tag text, offline as the build (same prefix, and the guard on
    PYTHONPATH ahead of the install folder); nothing tries the network."""
    code = ("import json,sys,spacy; nlp=spacy.load(sys.argv[1]); d=nlp(sys.argv[2]); "
            "print(json.dumps([[e.start_char,e.end_char,e.label_] for e in d.ents]))")
    guarded = {**env, "PYTHONPATH": os.pathsep.join([env["PYTHONPATH"], str(site)])}
    logged = attempts.read_text() if attempts.exists() else ""  # assert_guard_active's own probe, if it ran
    ret = subprocess.run([*prefix, sys.executable, "-c", code, name, text], capture_output=True, text=True, env=guarded,
                         cwd=cwd, timeout=300)
    assert ret.returncode == 0, ret.stderr[-3000:]
    assert (attempts.read_text() if attempts.exists() else "") == logged, "loading the wheel tried the network"
    return json.loads(ret.stdout.strip().splitlines()[-1])


# The NER's strict micro F1 on the build's held-out split that a small build must reach: a model
# that learned nothing scores 0 (measured: 0.44 for es, 0.51 for the fr pivot build, 2 epochs).
MIN_NER_F = 0.2


def _check_build(project: Path, lang: str, min_ner_f: float | None = MIN_NER_F):
    metrics = json.loads((project / "metrics" / "metrics.json").read_text())
    assert set(metrics["systems"]) == {"ner", "regex", "combined"}
    assert metrics["docs"] > 0
    assert (project / "metrics" / "report.md").exists()
    assert (project / "metrics" / "per_label_f1.png").exists()
    assert (project / "packages" / f"deid_{lang}-0.1.0-py3-none-any.whl").exists()
    if min_ner_f is not None:
        assert metrics["systems"]["ner"]["strict"]["micro"]["f"] >= min_ner_f, metrics["systems"]["ner"]["strict"]["micro"]
    return metrics


# Held-out prose (written for these tests: no note of any corpus holds it) with names in running text,
# where no pattern of the language's regex pack finds anything: only the NER can.
NER_ONLY = {
    "es": ("La paciente refiere que su hermano Anselmo Riquelme Zubizarreta la acompaña a la consulta. "
           "Acude también su marido, Eusebio Marín Cortés, que trabaja de noche. "
           "Según comenta Remedios Alcántara Vidal, la tos empeoró ayer.",
           ("Anselmo Riquelme Zubizarreta", "Eusebio Marín Cortés", "Remedios Alcántara Vidal")),
    "fr": ("La patiente est accompagnée de son frère, Anselme Riquier, qui vit avec elle. "
           "Elle est adressée par le docteur Hélène Marchetti pour une douleur thoracique. "
           "Selon sa fille Capucine Delaunay, la toux a commencé il y a trois jours.",
           ("Anselme Riquier", "Hélène Marchetti", "Capucine Delaunay")),
}


def _assert_the_ner_finds_names(ents: list, text: str, lang: str) -> None:
    """At least two of the three names of NER_ONLY[lang] (in `text`) lie, every letter, inside PERSON
    spans of the installed pipeline, and the regex pack alone finds nothing over any of them: the
    NER learned something (with learn rate 0 it finds none)."""
    from deid_factory.packs import load_pack

    prose, names = NER_ONLY[lang]
    offset = text.index(prose)
    pack = [(m.start, m.end, m.label) for m in load_pack(lang).find(prose)]
    person = {i for s, e, label in ents if label == "PERSON" for i in range(s, e)}
    found = []
    for name in names:
        start = prose.index(name)
        assert not any(s < start + len(name) and start < e for s, e, _ in pack), (name, pack)  # not the pack's
        if all(offset + i in person for i in range(start, start + len(name)) if prose[i] != " "):
            found.append(name)
    assert len(found) >= 2, (found, ents)


@dataclass
class SmallBuild:
    """A small offline build of a language project copied into `root` (tests/conftest.py's
    e2e_es_build makes the es one once per test run)."""

    root: Path
    project: Path
    site: Path  # PIP_TARGET: where its install step put the wheel
    env: dict
    prefix: list
    attempts: Path
    printed: str


def build_small_es(root: Path) -> SmallBuild:
    """`spacy project run build languages/es` with SMALL vars, offline (network_isolation), the
    wheel installed into root/site."""
    project = _copy_project("es", root)
    site = root / "site"
    prefix, env, attempts = network_isolation(root, {**os.environ, **FACTORY_ROOT, "PIP_TARGET": str(site)})
    printed = _weasel(["build", str(project), *SMALL], cwd=root, env=env, prefix=prefix)
    return SmallBuild(root, project, site, env, prefix, attempts, printed)


def test_small_es_build_offline_then_skips_when_up_to_date(e2e_es_build):
    build = e2e_es_build
    project, env, prefix, attempts = build.project, build.env, build.prefix, build.attempts
    _check_build(project, "es")
    text = "Paciente Marta Gil Romero ingresa el 02/03/2021. DNI 12345678Z. Teléfono 612 345 678. " + NER_ONLY["es"][0]
    ents = _load_installed(build.site, "deid_es", text, build.root, env, prefix, attempts)
    assert {"DATE", "ID"} <= {lab for _, _, lab in ents}
    # the phone is redacted (a 2-epoch tagger may put an NER-first label on it, which outranks an
    # unvalidated regex match; the label is not what leaks)
    phone = text.index("612 345 678")
    covered = {i for s, e, _ in ents for i in range(s, e)}
    assert all(i in covered for i in range(phone, phone + len("612 345 678")) if text[i] != " "), ents
    _assert_the_ner_finds_names(ents, text, "es")
    # nothing changed: the expensive stages are skipped
    out = _weasel(["build", str(project), *SMALL], cwd=build.root, env=env, prefix=prefix)
    assert "Skipping 'train'" in out and "Skipping 'translate'" in out
    _check_offline_and_no_phi_logged(project, build.printed + out, env, attempts, prefix)


# Fictitious unlabeled notes (written for this test): the pipeline labels them, no annotation is read.
UNLABELED_NOTES = [
    "Paciente Rosendo Albarracín Quesada, de 58 años, ingresa el 14/02/2023 en el Hospital de Cabueñes.",
    "Mujer de 71 años remitida desde su centro de salud de La Calzada. Vive en Gijón con su hija Begoña.",
    "Varón de 45 años, NHC 4471902, con dolor torácico. Teléfono de contacto 985 332 147.",
    "Firmado: Dra. Leire Etxeberria Sanz, Servicio de Medicina Interna, Hospital de Basurto, Bilbao.",
    "El 03/05/2022 acude a urgencias del Hospital Clínico de Valladolid por fiebre de tres días.",
    "Antecedentes: vive sola en Calle Mayor 12, 2.º B, 28013 Madrid. Trabaja como estibadora.",
]


def test_small_es_build_selftrain_from_unlabeled_notes(e2e_es_build, tmp_path):
    """`spacy project run build-selftrain es --vars.unlabeled_path FOLDER`, offline: the pipeline labels
    the notes, one round retrains on them, the report counts them, the pseudo-labelled corpus stays in
    the project's corpus folder, the wheel is built, and no text of the notes is printed or reported
    (the unit tests of tests/factory/test_selftrain.py show that a retrained model uses the pseudo-labels).
    It runs in a copy of the shared es build: the steps up to train are the same and are skipped."""
    for folder in ("languages", "regex_packs", "corpora"):
        if (e2e_es_build.root / folder).is_dir():
            shutil.copytree(e2e_es_build.root / folder, tmp_path / folder, symlinks=True)
    project = tmp_path / "languages" / "es"
    notes = tmp_path / "unlabeled"
    notes.mkdir()
    for i, text in enumerate(UNLABELED_NOTES):
        (notes / f"note{i}.txt").write_text(text + "\n", encoding="utf-8")
    site = tmp_path / "site"
    prefix, env, attempts = network_isolation(tmp_path, {**os.environ, **FACTORY_ROOT, "PIP_TARGET": str(site)})
    printed = _weasel(["build-selftrain", str(project), *SMALL, "--vars.unlabeled_path", str(notes),
                       "--vars.selftrain_rounds", "1"], cwd=tmp_path, env=env, prefix=prefix)
    assert "Skipping 'train'" in printed and "Skipping 'extract'" in printed  # the shared build's steps
    _check_build(project, "es")
    _assert_the_ner_finds_names(_load_installed(site, "deid_es", NER_ONLY["es"][0], tmp_path, env, prefix, attempts),
                                NER_ONLY["es"][0], "es")
    report = json.loads((project / "training" / "selftrain" / "selftrain_report.json").read_text())
    assert report["unlabeled"]["notes"] == len(UNLABELED_NOTES), report["unlabeled"]
    assert len(report["rounds"]) == 1 and report["rounds"][0]["notes_labelled"] == len(UNLABELED_NOTES)
    assert (project / "corpus" / "selftrain" / "round-1" / "pseudo.spacy").is_file()
    assert (project / "training" / "pipeline" / "config.cfg").is_file()
    _check_offline_and_no_phi_logged(project, printed, env, attempts, prefix)
    written = [printed] + [p.read_text(encoding="utf-8", errors="replace")
                           for p in (project / "training" / "selftrain").rglob("*.json")]
    for phi in ("Albarracín", "Etxeberria", "4471902", "985 332 147", "Cabueñes", "Calle Mayor 12"):
        assert any(phi in note for note in UNLABELED_NOTES), phi  # the check looks for text the notes hold
        assert not any(phi in text for text in written), phi


def test_small_fr_build_through_the_pivot(tmp_path):
    project = _copy_project("fr", tmp_path)
    argos = project / "assets" / "argos"
    subprocess.run([sys.executable, "-m", "deid_factory", "argos-testkit", str(argos), "--pairs", "es-en,en-fr"], check=True,
                   capture_output=True, timeout=600)
    assert len(list(argos.glob("*.argosmodel"))) == 2
    site = tmp_path / "site"
    # beam 1: a copy model's alternative beams run to the maximum length, ~50 s a record at Argos'
    # default beam 4 against ~1 s at beam 1 (bench/bench_factory.py); what is tested is the route
    prefix, env, attempts = network_isolation(tmp_path, {**os.environ, **FACTORY_ROOT, "PIP_TARGET": str(site), "ARGOS_BEAM_SIZE": "1"})
    # 16 records (train 12, dev 2, test 2)
    fr_small = ["--vars.n_records", "16", *SMALL[2:]]
    printed = _weasel(["build", str(project), *fr_small], cwd=tmp_path, env=env, prefix=prefix)
    metrics = _check_build(project, "fr")
    _check_offline_and_no_phi_logged(project, printed, env, attempts, prefix)
    report = json.loads((project / "corpus" / "translate_report.json").read_text())
    assert report["route"] == ["es", "en", "fr"] and report["kept"] > 0  # Argos ran, through the pivot
    assert metrics["systems"]["combined"]["strict"]["micro"]["n_gold"] > 0
    text = "Courriel : jean.dupont@exemple.fr, le 03/04/2021. " + NER_ONLY["fr"][0]
    ents = _load_installed(site, "deid_fr", text, tmp_path, env, prefix, attempts)
    assert {"EMAIL", "DATE"} <= {lab for _, _, lab in ents}
    _assert_the_ner_finds_names(ents, text, "fr")


def test_fr_build_without_a_route_uses_the_native_corpus(tmp_path):
    """`spacy project run build fr` on a machine with no Argos package: extract decides that
    translation is skipped, does not extract the Spanish source and says so in one line with how to
    add it, and deid_fr is built from the French synthetic corpus alone."""
    project = _copy_project("fr", tmp_path)
    site = tmp_path / "site"
    prefix, env, attempts = network_isolation(tmp_path, {**os.environ, **FACTORY_ROOT, "PIP_TARGET": str(site)})
    printed = _weasel(["build", str(project), "--vars.n_records", "24", *SMALL[2:]], cwd=tmp_path, env=env, prefix=prefix)
    metrics = _check_build(project, "fr")
    skipped = [line for line in printed.splitlines() if line.startswith("translation skipped")]
    report = json.loads((project / "corpus" / "translate_report.json").read_text())
    assert len(skipped) == 1 and "the es source records are not extracted" in skipped[0] and "assets/argos" in skipped[0]
    assert report["translated"] == 0 and report["passed_through"] == report["records_in"] == 24
    assert json.loads((project / "corpus" / "extract_report.json").read_text())["native_synth"]["records"] == 24
    assert json.loads((project / "corpus" / "build.json").read_text())["uses"] == {"es": "skipped", "fr": "as_written"}
    assert metrics["systems"]["combined"]["strict"]["micro"]["n_gold"] > 0
    assert not attempts.exists()
    assert_kernel_has_no_route_out(prefix, env)
    text = "Courriel : jean.dupont@exemple.fr, le 03/04/2021. " + NER_ONLY["fr"][0]
    ents = _load_installed(site, "deid_fr", text, tmp_path, env, prefix, attempts)
    assert {"EMAIL", "DATE"} <= {lab for _, _, lab in ents}
    _assert_the_ner_finds_names(ents, text, "fr")
