"""Every command that writes, on a full disk and into an unwritable folder.

For each of the 14 writing commands (extract, detect, filter, silver, synth, placeholder, calibrate,
translate, surrogate, train, assemble, evaluate, package, redact) the test first makes the command's
earlier outputs (a run on other inputs or another seed), then runs it again:

* full disk: with the earlier outputs on a size-limited tmpfs with room for half of what the earlier run wrote
  (faultkit.run_on_full_disk: a private mount namespace, ENOSPC from the kernel, in
  every process the command starts; a Python-level byte budget where no tmpfs can be mounted);
* unwritable: into a folder the process may not write (faultkit.unwritable: EACCES from the
  kernel, also as root).

Each run must exit with status 1 and end with one line `error: cannot write <path>: <reason>` naming
an output of the command, print no traceback and no PHI string of its inputs, and leave the earlier
outputs byte for byte, with no temp file beside them. translate, which appends and resumes, must
instead keep every record it finished, as whole lines, and finish on a re-run exactly as an
uninterrupted run would; redact --format jsonl keeps its finished rows in OUT.partial and its
shard journal (whole lines), and resumes the same way.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from deid_factory.cli import app
from deid_factory.records import read_records
from faultkit import PAGE, pages, run_on_full_disk, snapshot, unwritable
from test_privacy import leaked_phi, phi_strings

COMMANDS = ["extract", "detect", "filter", "silver", "synth", "placeholder", "calibrate", "translate", "surrogate",
            "train", "assemble", "evaluate", "package", "redact"]
N_RECORDS = 30  # ~25 KB of records: several tmpfs pages, so a run fails half-way through, not at its first write
ERROR_LINE = re.compile(r"^error: cannot write (?P<path>.+): (?P<reason>[^:]+)$")


@dataclass
class Inputs:
    corpus_a: Path  # synthetic es records, seed 1: the earlier run's input
    corpus_b: Path  # seed 2: the run under test
    translated_a: Path  # corpus_a placeholdered and passed through translate (es -> es)
    translated_b: Path
    pipeline: Path  # deid_es: regex pack + merger (no NER), enough to score and to redact
    argos_packages: Path  # one copy-model es -> fr Argos package
    argos_dir: Path
    inventory: Path  # a small placeholder inventory (candidates) to calibrate
    phi: set[str]


@pytest.fixture(scope="module")
def fault_inputs(tmp_path_factory, argos_home) -> Inputs:
    import yaml

    from deid_factory.argos_testkit import _default_sentences, build_package
    from deid_factory.package import assemble_pipeline
    from deid_factory.placeholders import load_inventory, placeholder_file
    from deid_factory.synth.command import synth
    from deid_factory.translate_job import TranslateOptions, translate_file

    root = tmp_path_factory.mktemp("fault_inputs")
    corpora, translated = [], []
    for seed in (1, 2):
        corpus = root / f"corpus_{seed}.jsonl"
        synth(corpus, n=N_RECORDS, seed=seed, lang="es")
        placeholder_file(corpus, root / f"ph_{seed}.jsonl", "es")
        translate_file(root / f"ph_{seed}.jsonl", root / f"tr_{seed}.jsonl", TranslateOptions("es", "es", progress=False))
        corpora.append(corpus)
        translated.append(root / f"tr_{seed}.jsonl")
    assemble_pipeline(None, "es", root / "deid_es")
    raw = yaml.safe_load(load_inventory("fr").path.read_text(encoding="utf-8"))
    small = {"PERSON": raw["candidates"]["PERSON"][:3], "DATE": raw["candidates"]["DATE"][:2]}
    inventory = root / "inventory.yml"
    inventory.write_text("# fault-test inventory\n" + yaml.safe_dump({"lang": "fr", "candidates": small}), encoding="utf-8")
    (root / "argos_packages").mkdir()
    build_package(root / "argos_packages" / "translate-es_fr.argosmodel", "es", "fr",
                  _default_sentences("") + small["PERSON"] + small["DATE"])
    phi = phi_strings(corpora[0]) | phi_strings(corpora[1])
    assert len(phi) > 50
    return Inputs(corpora[0], corpora[1], translated[0], translated[1], root / "deid_es", root / "argos_packages",
                  root / "argos", inventory, phi)


@dataclass
class Case:
    earlier: list  # the run that leaves the earlier outputs in the folder
    again: list  # the run under test: other inputs or another seed, so other bytes
    appends: bool = False  # translate: appends record by record and resumes


def case(command: str, i: Inputs, d: Path) -> Case:
    """The command's two runs, with every output in folder d."""
    argos = ["--packages-dir", i.argos_packages, "--argos-dir", i.argos_dir, "--beam-size", "1"]
    redact = ["--format", "jsonl", "--pipelines", i.pipeline, "--lang", "es", "--quiet"]
    cases = {
        "synth": Case(["synth", "--out", d / "s.jsonl", "--n", N_RECORDS, "--seed", 1, "--report", d / "s.json"],
                      ["synth", "--out", d / "s.jsonl", "--n", N_RECORDS, "--seed", 2, "--report", d / "s.json"]),
        "extract": Case(["extract", i.corpus_a, "--format", "jsonl", "--out", d / "x.jsonl", "--report", d / "x.json"],
                        ["extract", i.corpus_b, "--format", "jsonl", "--out", d / "x.jsonl", "--report", d / "x.json"]),
        "detect": Case(["detect", i.corpus_a, d / "d.jsonl", "--report", d / "d.json"],
                       ["detect", i.corpus_b, d / "d.jsonl", "--report", d / "d.json"]),
        "filter": Case(["filter", i.corpus_a, d / "f.jsonl", "--source-lang", "es", "--report", d / "f.json"],
                       ["filter", i.corpus_b, d / "f.jsonl", "--source-lang", "es", "--report", d / "f.json"]),
        "silver": Case(["silver", i.corpus_a, d / "sv.jsonl", "--annotator", "regex:es", "--report", d / "sv.json"],
                       ["silver", i.corpus_b, d / "sv.jsonl", "--annotator", "regex:es", "--report", d / "sv.json"]),
        "placeholder": Case(["placeholder", i.corpus_a, d / "ph.jsonl", "--lang", "fr", "--report", d / "ph.json"],
                            ["placeholder", i.corpus_b, d / "ph.jsonl", "--lang", "fr", "--report", d / "ph.json"]),
        "calibrate": Case(["calibrate", "--source-lang", "es", "--lang", "fr", "--out", d / "inventory.yml", *argos],
                          ["calibrate", "--source-lang", "es", "--lang", "fr", "--out", d / "inventory.yml", *argos,
                           "--min-survival", "0.5"]),
        "translate": Case(["translate", i.corpus_a, d / "tr.jsonl", "--source-lang", "es", "--lang", "es", "--no-progress",
                           "--limit", 10, "--report", d / "tr.json"],
                          ["translate", i.corpus_a, d / "tr.jsonl", "--source-lang", "es", "--lang", "es", "--no-progress",
                           "--report", d / "tr.json"], appends=True),
        "surrogate": Case(["surrogate", i.translated_a, d / "surrogate", "--lang", "es", "--seed", 0],
                          ["surrogate", i.translated_b, d / "surrogate", "--lang", "es", "--seed", 1]),
        "train": Case([],  # the earlier model: a copy of the session's tiny trained model (train_model)
                      ["train", "TRAIN", "DEV", "--config", "CONFIG", "--out", d / "training", "--max-epochs", 1]),
        "assemble": Case(["assemble", "--lang", "es", "--out", d / "deid_es"],
                         ["assemble", "MODEL", "--lang", "es", "--out", d / "deid_es"]),
        "evaluate": Case(["evaluate", i.pipeline, i.corpus_a, "--out", d / "metrics"],
                         ["evaluate", i.pipeline, i.corpus_b, "--out", d / "metrics"]),
        "package": Case(["package", i.pipeline, d / "packages"],
                        ["package", i.pipeline, d / "packages", "--version", "0.2.0"]),
        "redact": Case(["redact", i.corpus_a, "--out", d / "redacted.jsonl", *redact],
                       ["redact", i.corpus_b, "--out", d / "redacted.jsonl", *redact, "--mode", "mask"]),
    }
    return cases[command]


@pytest.fixture()
def fault_case(request, fault_inputs, tmp_path):
    """(command, Case, the folder holding its earlier outputs); train's inputs come from the session's
    tiny corpus, config and model, built only when a train case runs."""
    command = request.param
    folder = tmp_path / "outputs"
    folder.mkdir()
    c = case(command, fault_inputs, folder)
    if command == "train":
        corpus, config, model = (request.getfixturevalue(n) for n in ("train_corpus", "train_config", "train_model"))
        shutil.copytree(model, folder / "training")
        c.again = [{"TRAIN": corpus / "train.spacy", "DEV": corpus / "dev.spacy", "CONFIG": config}.get(a, a) for a in c.again]
    elif command == "assemble":
        model = request.getfixturevalue("train_model") / "model-best"
        c.again = [model if a == "MODEL" else a for a in c.again]
    if c.earlier:
        if command == "calibrate":
            shutil.copy(fault_inputs.inventory, folder / "inventory.yml")
        code, _, err = _factory(c.earlier, request.getfixturevalue("capsys"))
        assert code == 0, err
    assert snapshot(folder), "the earlier run left no output"
    return command, c, folder


def _factory(args, capsys) -> tuple[int, str, str]:
    """The `factory` app as its console script runs it, in this process: exit status, stdout, stderr."""
    capsys.readouterr()
    try:
        app(args=[str(a) for a in args], prog_name="factory")
    except SystemExit as exit_:
        code = exit_.code or 0
    else:
        code = 0
    printed = capsys.readouterr()
    return code, printed.out, printed.err


def _assert_one_error_line(code: int, printed: str, stderr: str, folder: Path, reason: str, phi: set[str]) -> Path:
    """Exit status 1; stderr ends with the one error line, naming an output in folder; no traceback, no
    PHI anywhere in what was printed. Returns the path the line names."""
    assert code == 1, printed[-3000:]
    assert "Traceback" not in printed, printed[-3000:]
    errors = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, stderr[-3000:]
    match = ERROR_LINE.match(stderr.strip().splitlines()[-1])
    assert match and match["reason"] == reason, stderr[-3000:]
    path = Path(match["path"])
    assert path.resolve().is_relative_to(folder.resolve()), path
    assert leaked_phi(phi, printed) == []
    return path


def _whole_jsonl_lines(data: bytes) -> list[dict]:
    assert data == b"" or data.endswith(b"\n"), "a partial last line"
    return [json.loads(line) for line in data.splitlines()]


# ----------------------------------------------------------------------------- full disk
def _moved(args: list, old: Path, new: Path) -> list:
    """args with every path under folder `old` moved to folder `new`."""
    return [new / Path(a).relative_to(old) if isinstance(a, Path) and a.is_relative_to(old) else a for a in args]


@pytest.mark.parametrize("fault_case", COMMANDS, indirect=True)
def test_full_disk(fault_case, fault_inputs, argos_env, tmp_path, capsys):
    """Room for half of what the earlier run wrote (in 4 KiB pages; the run under test writes about
    as much, or more): the disk fills up in the middle of the run."""
    command, c, folder = fault_case
    before = snapshot(folder)
    budget = pages(before) // 2 * PAGE
    run = run_on_full_disk([sys.executable, "-m", "deid_factory", *c.again], folder, budget)
    path = _assert_one_error_line(run.returncode, run.stdout + run.stderr, run.stderr, folder,
                                  "No space left on device", fault_inputs.phi)
    after = snapshot(run.after)
    if command == "redact":
        # the rows finished before the disk filled up and the journal of their shards, whole lines
        # only; the earlier output untouched; a re-run with room resumes to the bytes of a run that
        # had room all along
        assert len(_whole_jsonl_lines(after.pop("redacted.jsonl.partial", b""))) < N_RECORDS
        _whole_jsonl_lines(after.pop("redacted.jsonl.redact-journal.jsonl", b""))
        assert after == before, sorted(k for k in set(after) | set(before) if after.get(k) != before.get(k))
        _resume_gives_the_bytes_of_a_run_with_room(run.after, folder, c, capsys, "redacted.jsonl")
        return
    if not c.appends:
        assert after == before, sorted(k for k in set(after) | set(before) if after.get(k) != before.get(k))
        return
    # translate: the records done before are kept, whole, and a re-run with room finishes the file
    # to the bytes of a run that had room all along
    assert path == folder / "tr.jsonl"
    done, earlier = after["tr.jsonl"], before["tr.jsonl"]
    assert done.startswith(earlier) and len(_whole_jsonl_lines(earlier)) < len(_whole_jsonl_lines(done)) < N_RECORDS
    assert set(after) == set(before)
    resumed = _resume_gives_the_bytes_of_a_run_with_room(run.after, folder, c, capsys, "tr.jsonl")
    assert len(list(read_records(resumed / "tr.jsonl"))) == N_RECORDS


def _resume_gives_the_bytes_of_a_run_with_room(after_fault: Path, folder: Path, c: Case, capsys, output: str) -> Path:
    """Re-run the command with room on a copy of what the full disk left, and on a copy of the
    folder before the fault: `output` must come out the same bytes. Returns the resumed folder."""
    resumed, with_room = folder.with_name("resumed"), folder.with_name("with_room")
    shutil.copytree(after_fault, resumed)
    shutil.copytree(folder, with_room)
    for copy in (resumed, with_room):
        code, _, err = _factory(_moved(c.again, folder, copy), capsys)
        assert code == 0, err
    assert (resumed / output).read_bytes() == (with_room / output).read_bytes()
    return resumed


# ----------------------------------------------------------------------------- unwritable folder
@pytest.mark.parametrize("fault_case", COMMANDS, indirect=True)
def test_unwritable_output_folder(fault_case, fault_inputs, argos_env, capsys):
    command, c, folder = fault_case
    before = snapshot(folder)
    with unwritable(folder) as reason:
        code, out, err = _factory(c.again, capsys)
    _assert_one_error_line(code, out + err, err, folder, reason, fault_inputs.phi)
    assert snapshot(folder) == before
