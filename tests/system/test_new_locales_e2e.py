"""Italian, Portuguese and Dutch, each added with `factory new-locale` and data files only (README,
"Adding a locale"), build end to end through their spaCy projects: es -> en -> <lc> through
test-built copy-model Argos packages, the locale's surrogates and synthetic corpus, training,
assembly with the locale's regex pack, packaging and installing the wheel. The installed
deid_<lc> then finds its national identifier (validated by its check digits) and a person's name in
a sentence of its language that no training note holds.

The three builds are tiny (16 source + 16 native records, 12 short epochs) and run side by side
(each is mostly process start-up, one core each); every process runs in a network namespace with
loopback only and with network sockets blocked (tests/system/test_privacy.py's network_isolation), and nothing the builds print or log holds a PHI string of their
input."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from test_build_e2e import FACTORY_ROOT, _check_offline_and_no_phi_logged, _copy_project, _load_installed
from test_privacy import network_isolation

pytestmark = pytest.mark.slow

# The unseen sentence of each locale, its national identifier (computed with python-stdnum, not a
# real person's) and the name in it.
UNSEEN = {
    "it": ("Paziente: Lucia Fabbri, codice fiscale NGQZCD41S61A830M, ricoverata il 12/03/2021.",
           "NGQZCD41S61A830M", "Lucia Fabbri", "codice_fiscale"),
    "pt": ("Doente: Marta Loureiro, NIF 260313726, internada a 12/03/2021.",
           "260313726", "Marta Loureiro", "nif"),
    "nl": ("Patiënt: Sanne Verbeek, BSN 280334011, opgenomen op 12-03-2021.",
           "280334011", "Sanne Verbeek", "bsn"),
}
BUILD = ["--vars.n_records", "16", "--vars.max_epochs", "12", "--vars.patience", "12"]


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    """Start the three builds at once, wait for them all; per locale: (project, site, printed, env, attempts)."""
    root = tmp_path_factory.mktemp("new_locales")
    argos = root / "argos"
    pairs = ",".join(["es-en", *(f"en-{lc}" for lc in UNSEEN)])
    subprocess.run([sys.executable, "-m", "deid_factory", "argos-testkit", str(argos), "--pairs", pairs],
                   check=True, capture_output=True, timeout=600)
    running = {}
    for lc in UNSEEN:
        tree = root / lc  # one project tree per locale: its own folder, regex pack and synthetic corpus, as a user copies them
        project = _copy_project(lc, tree)
        (project / "assets" / "argos").mkdir(parents=True)
        for name in ("translate-es_en.argosmodel", f"translate-en_{lc}.argosmodel"):
            shutil.copy(argos / name, project / "assets" / "argos" / name)
        site = tree / "site"
        # beam 1: a copy model's other beams run to the maximum length (see test_build_e2e.py)
        # in a network namespace with loopback only where the kernel allows it, under the socket guard
        prefix, env, attempts = network_isolation(tree, {**os.environ, **FACTORY_ROOT, "PIP_TARGET": str(site), "ARGOS_BEAM_SIZE": "1"})
        proc = subprocess.Popen([*prefix, sys.executable, "-m", "spacy", "project", "run", "build", str(project), *BUILD],
                                cwd=tree, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        running[lc] = (proc, project, site, env, attempts, prefix)
    done = {}
    for lc, (proc, project, site, env, attempts, prefix) in running.items():
        printed, _ = proc.communicate(timeout=900)
        done[lc] = (proc.returncode, project, site, printed, env, attempts, prefix)
    return done


@pytest.mark.parametrize("lc", sorted(UNSEEN))
def test_new_locale_builds_through_the_pivot_and_finds_its_identifier_and_a_name(builds, lc):
    code, project, site, printed, env, attempts, prefix = builds[lc]
    assert code == 0, printed[-4000:]
    report = json.loads((project / "corpus" / "translate_report.json").read_text())
    assert report["route"] == ["es", "en", lc] and report["kept"] > 0  # Argos ran, through the pivot
    extract = json.loads((project / "corpus" / "extract_report.json").read_text())
    assert extract["native_synth"]["records"] == 16  # the locale's own synthetic corpus (corpora/synth/<lc>/)
    metrics = json.loads((project / "metrics" / "metrics.json").read_text())
    assert metrics["systems"]["combined"]["strict"]["micro"]["n_gold"] > 0
    assert (project / "packages" / f"deid_{lc}-0.1.0-py3-none-any.whl").exists()
    _check_offline_and_no_phi_logged(project, printed, env, attempts, prefix)

    text, identifier, name, _ = UNSEEN[lc]
    ents = _load_installed(site, f"deid_{lc}", text, project.parent.parent, env, prefix, attempts)
    found = {(text[s:e], label) for s, e, label in ents}
    assert (identifier, "ID") in found, ents
    # the name: every letter of it inside PERSON spans (the NER's work: the pack has no name pattern)
    start = text.index(name)
    person = {i for s, e, label in ents if label == "PERSON" for i in range(s, e)}
    assert all(i in person for i in range(start, start + len(name)) if text[i] != " "), ents


@pytest.mark.parametrize("lc", sorted(UNSEEN))
def test_the_pack_alone_validates_the_identifier(lc):
    """The identifier of the unseen sentence is the pack's validated kind, and its twin with a wrong
    check digit is not (no label in the sentence lets a failed check through as a generic ID)."""
    from deid_factory.packs import load_pack

    text, identifier, _, kind = UNSEEN[lc]
    pack = load_pack(lc)
    assert [(m.text, m.kind, m.validated) for m in pack.find(text) if m.label == "ID"] == [(identifier, kind, True)]
    last = identifier[-1]
    twin = identifier[:-1] + ("0" if last.isdigit() and last != "0" else "1" if last.isdigit() else "A" if last != "A" else "B")
    assert all(m.kind == "generic" or not m.validated for m in pack.find(text.replace(identifier, twin)) if m.label == "ID")
