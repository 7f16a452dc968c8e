"""Translation through real Argos (copy-model packages): routes, pivot, repair/drop, resume, offline."""

from __future__ import annotations

import json
import re
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from deid_factory.cli import app
from deid_factory.placeholders import load_inventory, placeholder_file, placeholderize
from deid_factory.records import Record, Span, read_records, write_records
from deid_factory.netguard import no_network
from deid_factory.translate import split_chunks
from deid_factory.translate_job import TranslateOptions, translate_file


def _placeholders(src: Path, tmp_path: Path, target: str = "fr") -> Path:
    out = tmp_path / f"ph_{target}.jsonl"
    placeholder_file(src, out, target)
    return out


def test_pivot_route_keeps_pivot_text_and_exact_spans(argos_home, argos_packages, translate_source, tmp_path):
    ph = _placeholders(translate_source, tmp_path)
    out = tmp_path / "tr.jsonl"
    report = translate_file(ph, out, TranslateOptions("es", "fr", packages_dir=argos_packages["pivot"], argos_dir=tmp_path / "argos",
                            beam_size=1, progress=False, report_path=tmp_path / "r.json"))
    assert report["route"] == ["es", "en", "fr"]
    assert (report["kept"], report["repaired"], report["dropped"]) == (5, 0, 0)
    assert report["placeholder_survival_first_attempt"] == 1.0
    source = {r.id: r for r in read_records(ph)}
    for rec in read_records(out):
        assert rec.lang == "fr"
        assert rec.meta["pivot_lang"] == "en" and rec.meta["pivot_text"] == rec.meta["source_text"] == source[rec.id].text
        assert len(rec.spans) == len(source[rec.id].spans)
        for span in rec.spans:
            assert rec.text[span.start : span.end] == span.attrs["placeholder"]
    assert json.loads((tmp_path / "r.json").read_text())["kept"] == 5


def test_no_clinical_text_in_logs(argos_home, argos_packages, translate_source, tmp_path, caplog):
    import logging

    caplog.set_level(logging.DEBUG)
    ph = _placeholders(translate_source, tmp_path)
    translate_file(ph, tmp_path / "tr.jsonl", TranslateOptions("es", "fr", packages_dir=argos_packages["pivot"], argos_dir=tmp_path / "argos", beam_size=1, progress=False))
    logged = "\n".join(r.getMessage() for r in caplog.records)
    for rec in read_records(ph):
        for sentence in rec.text.split("."):
            if len(sentence.strip()) > 12:
                assert sentence.strip() not in logged


def test_direct_route_preferred(argos_home, argos_packages, translate_source, tmp_path):
    ph = _placeholders(translate_source, tmp_path)
    both = tmp_path / "both"
    both.mkdir()
    for d in ("pivot", "direct"):
        for f in argos_packages[d].glob("*.argosmodel"):
            (both / f.name).write_bytes(f.read_bytes())
    report = translate_file(ph, tmp_path / "tr.jsonl", TranslateOptions("es", "fr", packages_dir=both, argos_dir=tmp_path / "argos", beam_size=1, progress=False))
    assert report["route"] == ["es", "fr"]
    assert all("pivot_text" not in r.meta for r in read_records(tmp_path / "tr.jsonl"))


def test_missing_route_stops_with_instructions(argos_home, argos_packages, translate_source, tmp_path, translate_no_network):
    ph = _placeholders(translate_source, tmp_path)
    only_es_en = tmp_path / "pk"
    only_es_en.mkdir()
    (only_es_en / "translate-es_en.argosmodel").write_bytes((argos_packages["pivot"] / "translate-es_en.argosmodel").read_bytes())
    result = CliRunner().invoke(app, ["translate", str(ph), str(tmp_path / "tr.jsonl"), "--source-lang", "es", "--lang", "fr",
                                      "--packages-dir", str(only_es_en), "--argos-dir", str(tmp_path / "argos")])
    assert result.exit_code == 1
    assert "translate-en_fr" in result.output and "--packages-dir" in result.output
    assert "translate-es_en +" not in result.output  # the installed pair is not listed as missing
    assert translate_no_network == []  # it did not try to download anything
    assert not (tmp_path / "tr.jsonl").exists() or (tmp_path / "tr.jsonl").read_text() == ""


def test_same_language_passes_through_without_argos(translate_source, tmp_path):
    ph = _placeholders(translate_source, tmp_path, "es")
    out = tmp_path / "tr.jsonl"
    code = (
        "import sys; from deid_factory.translate_job import TranslateOptions, translate_file;"
        f"r = translate_file({str(ph)!r}, {str(out)!r}, TranslateOptions('es', 'es', progress=False));"
        "assert 'argostranslate' not in sys.modules and 'ctranslate2' not in sys.modules; print(r['kept'])"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "5"
    src = {r.id: r for r in read_records(ph)}
    for rec in read_records(out):
        assert rec.text == src[rec.id].text and rec.meta["translation"]["skipped"] is True
    # ... and the Spanish chain goes on offline: Spanish surrogates (two surnames, Spanish months)
    from deid_factory.surrogates.stage import surrogate_file

    report = surrogate_file(out, tmp_path / "final", "es", seed=0)
    assert report["records_out"] == 5 and report["dropped"] == {}
    final = list(read_records(tmp_path / "final" / "records.jsonl"))
    assert all(r.lang == "es" for r in final)
    assert any(re.search(r"enero|febrero|marzo|abril|mayo|junio|julio|agosto|septiembre|octubre|noviembre|diciembre|\d/", r.text) for r in final)


def _lossy_records(tmp_path: Path) -> Path:
    from conftest import ARGOS_LOSSY_TERM  # noqa: F401  (the lossy package drops the first PERSON term)

    texts = {
        "keep": ("Ana acude hoy.", [("Ana", "PERSON")]),
        "repair": ("El paciente acude a consulta por dolor abdominal, refiere náuseas, y lo acompaña Ana.", [("Ana", "PERSON")]),
        "drop": ("El paciente acude a consulta por dolor abdominal intenso y persistente desde hace días con Ana.", [("Ana", "PERSON")]),
        "noname": ("Sin fiebre desde el 12 de mayo.", [("12 de mayo", "DATE")]),
    }
    recs = []
    for rid, (text, items) in texts.items():
        spans = []
        for surface, label in items:
            start = text.rindex(surface)
            spans.append(Span(start, start + len(surface), label))
        recs.append(Record(rid, "es", text, spans, {}))
    src = tmp_path / "lossy_src.jsonl"
    write_records(src, recs)
    return _placeholders(src, tmp_path)


def test_lossy_route_repairs_and_drops(argos_home, argos_packages, tmp_path):
    from conftest import ARGOS_LOSSY_TERM

    ph = _lossy_records(tmp_path)
    assert all(ARGOS_LOSSY_TERM in r.text for r in read_records(ph) if r.id != "noname")
    out = tmp_path / "tr.jsonl"
    report = translate_file(ph, out, TranslateOptions("es", "fr", packages_dir=argos_packages["lossy"], argos_dir=tmp_path / "argos", beam_size=1, progress=False))
    assert report["kept"] == 2 and report["repaired"] == 1 and report["repaired_by"] == {"clause": 1}
    assert report["dropped"] == 1 and report["dropped_by_reason"] == {"missing": 1}
    kept = {r.id: r for r in read_records(out)}
    assert set(kept) == {"keep", "repair", "noname"}
    assert kept["repair"].meta["translation"]["method"] == "clause"
    dropped = [json.loads(l) for l in Path(str(out) + ".dropped.jsonl").read_text().splitlines()]
    assert [d["id"] for d in dropped] == ["drop"] and dropped[0]["reason"] == "missing"
    assert "Ana" not in Path(str(out) + ".dropped.jsonl").read_text()  # reasons and ids only
    assert report["placeholder_survival_first_attempt"] < 1.0


def test_lossy_pivot_is_reported_at_pivot(argos_home, argos_packages, tmp_path):
    ph = _lossy_records(tmp_path)
    report = translate_file(ph, tmp_path / "tr.jsonl", TranslateOptions("es", "fr", packages_dir=argos_packages["lossy_pivot"], argos_dir=tmp_path / "argos", beam_size=1, progress=False))
    assert report["dropped_by_reason"] == {"missing_at_pivot": 3}
    assert report["kept"] == 1


def test_split_chunks_rejoin_exactly():
    text = "Primera frase. Segunda, con coma; y más: fin!\n\nOtra línea?  Última."
    for level in ("record", "sentence", "clause"):
        chunks = split_chunks(text, level)
        assert "".join(c + s for c, s in chunks) == text
    assert len(split_chunks(text, "sentence")) == 4
    assert len(split_chunks(text, "clause")) > 4


def _cli(args, env, timeout=300):
    """`factory ARGS` in a child process (the console script may not be on PATH in CI)."""
    return subprocess.Popen([sys.executable, "-c", "from deid_factory.cli import app; app()", *args],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_default_sigint)


def _default_sigint() -> None:
    # A test run started in the background by a non-interactive shell (`cmd &`) inherits SIGINT as
    # ignored, and Python then installs no KeyboardInterrupt handler: the Ctrl-C test must give the
    # child the default disposition, as a terminal would.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _many_placeholdered(translate_source: Path, tmp_path: Path) -> tuple[Path, int]:
    """60 placeholdered records (12 copies of the source): long enough to stop a run in the middle."""
    base = list(read_records(translate_source))
    many = [Record(f"{r.id}-{i:02d}", r.lang, r.text, r.spans, r.meta) for i in range(12) for r in base]
    src = tmp_path / "many.jsonl"
    write_records(src, many)
    return _placeholders(src, tmp_path), len(many)


def _wait_for_lines(proc, path: Path, n: int, timeout: float = 240) -> None:
    """Until the running `proc` has written at least `n` lines to `path` (or it ends, or time runs out)."""
    deadline = time.time() + timeout
    while time.time() < deadline and proc.poll() is None:
        if path.exists() and path.read_text().count("\n") >= n:
            return
        time.sleep(0.01)


@pytest.mark.slow
def test_resume_after_kill_equals_uninterrupted_run(argos_env, argos_packages, translate_source, tmp_path):
    ph, n_records = _many_placeholdered(translate_source, tmp_path)
    env = {**os.environ, **argos_env}
    common = ["--source-lang", "es", "--lang", "fr", "--packages-dir", str(argos_packages["pivot"]), "--beam-size", "1", "--no-progress"]
    full = tmp_path / "full.jsonl"
    proc = _cli(["translate", str(ph), str(full), "--argos-dir", str(tmp_path / "a1"), *common], env)
    assert proc.wait(timeout=300) == 0, proc.stderr.read()

    part = tmp_path / "part.jsonl"
    proc = _cli(["translate", str(ph), str(part), "--argos-dir", str(tmp_path / "a2"), *common], env)
    _wait_for_lines(proc, part, 5)
    assert proc.poll() is None, "the run finished before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    written = part.read_text().count("\n")
    assert 5 <= written < n_records
    with part.open("a") as handle:  # a torn line, as a crash in the middle of a write leaves
        handle.write('{"id": "torn", "te')
    proc = _cli(["translate", str(ph), str(part), "--argos-dir", str(tmp_path / "a2"), *common], env)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert f"({written} already done)" in out
    assert part.read_text() == full.read_text()


@pytest.mark.slow
def test_two_workers_same_output(argos_env, argos_packages, translate_source, tmp_path):
    ph = _placeholders(translate_source, tmp_path)
    one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    translate_file(ph, one, TranslateOptions("es", "fr", packages_dir=argos_packages["pivot"], argos_dir=tmp_path / "argos", beam_size=1, progress=False))
    report = translate_file(ph, two, TranslateOptions("es", "fr", packages_dir=argos_packages["pivot"], argos_dir=tmp_path / "argos", beam_size=1, progress=False, workers=2))
    assert report["kept"] == 5
    assert one.read_text() == two.read_text()


def test_guard_blocks_connections():
    import socket

    with no_network():
        with pytest.raises(OSError, match="network access is disabled"):
            socket.create_connection(("example.org", 80), timeout=1)
    with pytest.raises(OSError):  # outside the guard, the real function runs (and fails offline or connects)
        socket.socket(socket.AF_INET, socket.SOCK_STREAM).connect(("127.0.0.1", 9))


def _accepted(server) -> int:
    """Connections the kernel completed on the listening socket (accepted here, after the fact)."""
    import socket

    server.setblocking(False)
    count = 0
    while True:
        try:
            conn, _ = server.accept()
        except (BlockingIOError, socket.timeout):
            return count
        conn.close()
        count += 1


@pytest.mark.parametrize("allow_network", [False, True], ids=["guard-on", "guard-lifted"])
def test_translate_file_runs_the_route_under_its_socket_guard(allow_network, argos_home, argos_packages, translate_source,
                                                              tmp_path, monkeypatch):
    """translate_file itself switches the guard on around the stage (the default), and
    --allow-network lifts it. A probe in the Argos route, the code the guard is there for (a
    splitter or a model that would fetch something), connects to a server this test listens with on
    127.0.0.1 before each record is translated: under the guard the connection is refused by the
    guard (NetworkBlocked, which stops the stage naming the record) and the server sees nothing;
    lifted, every probe reaches the server and the stage completes."""
    import socket

    from deid_factory.argos_env import ArgosRoute
    from deid_factory.translate import RecordFailed

    server = socket.create_server(("127.0.0.1", 0))
    real_hops = ArgosRoute.translate_hops

    def probing_hops(self, text):
        socket.create_connection(server.getsockname(), timeout=10).close()
        return real_hops(self, text)

    monkeypatch.setattr(ArgosRoute, "translate_hops", probing_hops)
    ph = _placeholders(translate_source, tmp_path)
    options = TranslateOptions("es", "fr", packages_dir=argos_packages["pivot"], argos_dir=tmp_path / "argos", beam_size=1,
                               progress=False, allow_network=allow_network)
    try:
        if allow_network:
            assert translate_file(ph, tmp_path / "tr.jsonl", options)["kept"] == 5
            assert _accepted(server) >= 5  # one probe per record at least, each reached the server
        else:
            with pytest.raises(RecordFailed) as caught:
                translate_file(ph, tmp_path / "tr.jsonl", options)
            assert str(caught.value) == "record t1: NetworkBlocked"  # the guard's refusal, not the kernel's
            assert _accepted(server) == 0
    finally:
        server.close()
    assert socket.socket.connect.__name__ == "connect"  # the guard is off again after the stage


def test_input_without_placeholders_is_refused(tmp_path):
    src = tmp_path / "raw.jsonl"
    write_records(src, [Record("raw-7", "es", "Ana vino.", [Span(0, 3, "PERSON")], {})])
    result = CliRunner().invoke(app, ["translate", str(src), str(tmp_path / "o.jsonl"), "--source-lang", "es", "--lang", "fr"])
    assert result.exit_code == 1 and "raw-7" in result.output and "factory placeholder" in result.output
    assert "Ana" not in result.output


@pytest.mark.parametrize("target", ["fr", "en"])
def test_whole_stage_offline_with_sockets_blocked(target, argos_home, argos_packages, translate_source, tmp_path, translate_no_network):
    """placeholder -> translate (real Argos, pivot for fr, direct for en) -> surrogate, with every
    socket refused by the fixture (the stage's own guard is off, so any attempt would be recorded)."""
    from deid_factory.splits import read_docbin_spans
    from deid_factory.surrogates.stage import surrogate_file

    ph = _placeholders(translate_source, tmp_path, target)
    tr = tmp_path / "tr.jsonl"
    report = translate_file(ph, tr, TranslateOptions("es", target, packages_dir=argos_packages["pivot"], argos_dir=tmp_path / "argos",
                            beam_size=1, progress=False, allow_network=True))
    assert report["route"] == (["es", "en", "fr"] if target == "fr" else ["es", "en"])
    out = tmp_path / "final"
    sreport = surrogate_file(tr, out, target, seed=0)
    assert translate_no_network == []
    assert sreport["records_out"] == 5 and sreport["dropped"] == {}
    records = list(read_records(out / "records.jsonl"))
    inventory = load_inventory(target).all_terms()
    spans_by_text = {}
    for rec in records:
        assert rec.lang == target
        assert not any(re.search(rf"\b{t}\b", rec.text) for t in inventory)
        assert "pivot_text" in rec.meta or target == "en"
        spans_by_text[rec.text] = sorted((s.start, s.end, s.label) for s in rec.spans)
    n = 0
    for split in ("train", "dev", "test"):
        for text, ents in read_docbin_spans(out / f"{split}.spacy", target):
            assert sorted(ents) == spans_by_text[text]
            n += 1
    assert n == 5


def test_resume_redoes_records_whose_input_changed(argos_home, argos_packages, translate_source, tmp_path):
    ph = _placeholders(translate_source, tmp_path)
    out = tmp_path / "tr.jsonl"
    kw = dict(packages_dir=argos_packages["pivot"], argos_dir=tmp_path / "argos", beam_size=1, progress=False)
    first = translate_file(ph, out, TranslateOptions("es", "fr", limit=3, **kw))
    assert first["kept"] == 3 and first["resumed_from"] == 0
    records = list(read_records(ph))
    records[0].text = records[0].text.replace("Paciente", "Enfermo", 1)
    for span in records[0].spans:  # same length shift for every span after the edit
        span.start, span.end = span.start - 1, span.end - 1
    write_records(ph, records)
    second = translate_file(ph, out, TranslateOptions("es", "fr", **kw))
    assert second["resumed_from"] == 2 and second["kept"] == 5
    fresh = tmp_path / "fresh.jsonl"
    translate_file(ph, fresh, TranslateOptions("es", "fr", **kw))
    assert sorted(out.read_text().splitlines()) == sorted(fresh.read_text().splitlines())


MEDDOCAN = Path(__file__).resolve().parents[2].parent / "shared" / "corpora" / "meddocan" / "dev"


@pytest.mark.shared(MEDDOCAN)
@pytest.mark.slow
def test_meddocan_chain_to_french(argos_home, argos_packages, tmp_path):
    """Real annotated Spanish notes (MEDDOCAN, first 12 of dev) through placeholder -> Argos -> surrogate."""
    import itertools

    from deid_factory.readers import read_corpus
    from deid_runtime.validators import VALIDATORS
    from deid_factory.splits import read_docbin_spans
    from deid_factory.surrogates.stage import surrogate_file

    src = tmp_path / "src.jsonl"
    write_records(src, itertools.islice(read_corpus(MEDDOCAN, "brat", "meddocan", "es"), 12))
    ph = _placeholders(src, tmp_path)
    tr = tmp_path / "tr.jsonl"
    report = translate_file(ph, tr, TranslateOptions("es", "fr", packages_dir=argos_packages["pivot"], argos_dir=tmp_path / "argos", beam_size=1, progress=False))
    assert report["kept"] + report["repaired"] + report["dropped"] == report["records_in"] == 12
    # Every record comes through; a few hold sentences longer than the copy model's 320 positions
    # (CTranslate2 raises), and the sentence/clause retry repairs them.
    assert report["dropped"] == 0 and report["kept"] + report["repaired"] == 12
    sreport = surrogate_file(tr, tmp_path / "final", "fr", seed=0)
    assert sreport["records_out"] == 12
    assert sreport["id_validated"] and all(sreport["id_validated"].get(k, 0) == v for k, v in sreport["id_kinds"].items() if k != "pattern")
    records = list(read_records(tmp_path / "final" / "records.jsonl"))
    for rec in records:
        for span in rec.spans:
            if span.attrs.get("validated"):
                assert VALIDATORS[span.attrs["id_kind"]](rec.text[span.start : span.end])
    by_text = {r.text: sorted((s.start, s.end, s.label) for s in r.spans) for r in records}
    for split in ("train", "dev", "test"):
        for text, ents in read_docbin_spans(tmp_path / "final" / f"{split}.spacy", "fr"):
            assert sorted(ents) == by_text[text]


@pytest.mark.slow
@pytest.mark.parametrize("target", ["fr", "en"])
def test_embedded_corpus_to_target_through_cli(target, argos_env, argos_packages, tmp_path):
    """The default source (the embedded synthetic Spanish corpus) through the three CLI commands."""
    from deid_factory.synth import generate_records

    src = tmp_path / "src.jsonl"
    write_records(src, generate_records(4, 13, "es"))
    runner = CliRunner()
    ph, tr, final = tmp_path / "ph.jsonl", tmp_path / "tr.jsonl", tmp_path / "final"
    assert runner.invoke(app, ["placeholder", str(src), str(ph), "--lang", target]).exit_code == 0
    result = runner.invoke(app, ["translate", str(ph), str(tr), "--source-lang", "es", "--lang", target, "--packages-dir",
                                 str(argos_packages["pivot"]), "--argos-dir", str(tmp_path / "argos"), "--beam-size", "1",
                                 "--no-progress", "--report", str(tmp_path / "tr.json")])
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "tr.json").read_text())
    assert report["records_in"] == 4 and report["kept"] + report["repaired"] == 4
    result = runner.invoke(app, ["surrogate", str(tr), str(final), "--lang", target, "--seed", "0"])
    assert result.exit_code == 0, result.output
    sreport = json.loads((final / "report.json").read_text())
    assert sreport["records_out"] == 4 and sreport["splits"]["misaligned_dropped"] == 0
    assert {p.name for p in final.iterdir()} >= {"records.jsonl", "train.spacy", "dev.spacy", "test.spacy", "report.json"}
    assert all(r.lang == target for r in read_records(final / "records.jsonl"))


@pytest.mark.slow
def test_ctrl_c_with_workers_keeps_finished_records(argos_env, argos_packages, translate_source, tmp_path):
    ph, n_records = _many_placeholdered(translate_source, tmp_path)
    out = tmp_path / "tr.jsonl"
    args = ["translate", str(ph), str(out), "--source-lang", "es", "--lang", "fr", "--packages-dir", str(argos_packages["pivot"]),
            "--argos-dir", str(tmp_path / "argos"), "--beam-size", "1", "--no-progress", "--workers", "2"]
    proc = _cli(args, {**os.environ, **argos_env})
    _wait_for_lines(proc, out, 3)
    assert proc.poll() is None, "the run finished before it could be interrupted"
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130 and "run the same command again to resume" in err
    lines = out.read_text().splitlines()
    assert 3 <= len(lines) < n_records
    assert all(json.loads(line)["lang"] == "fr" for line in lines)


def test_device_option(argos_home, argos_packages, translate_source, tmp_path):
    import ctranslate2

    ph = _placeholders(translate_source, tmp_path)
    base = ["translate", str(ph), str(tmp_path / "tr.jsonl"), "--source-lang", "es", "--lang", "fr",
            "--packages-dir", str(argos_packages["pivot"]), "--argos-dir", str(tmp_path / "argos"), "--beam-size", "1", "--no-progress"]
    bad = CliRunner().invoke(app, [*base, "--device", "tpu"])
    assert bad.exit_code == 1 and "cpu or cuda" in bad.output
    if ctranslate2.get_cuda_device_count() == 0:
        result = CliRunner().invoke(app, [*base, "--device", "cuda"])
        assert result.exit_code == 1 and "no CUDA device" in result.output
    else:  # pragma: no cover - GPU machines
        result = CliRunner().invoke(app, [*base, "--device", "cuda"])
        assert result.exit_code == 0, result.output
        assert len(list(read_records(tmp_path / "tr.jsonl"))) == 5
    # a refused device leaves Argos' settings as they were
    from argostranslate import settings

    assert settings.device == "cpu" and os.environ.get("ARGOS_DEVICE_TYPE", "cpu") == "cpu"


def test_download_only_when_asked(argos_home, argos_packages, translate_source, tmp_path, translate_no_network):
    """Without --download nothing is fetched; with it, on a machine without network, a clear error."""
    ph = _placeholders(translate_source, tmp_path)
    empty = tmp_path / "pk"
    empty.mkdir()
    base = ["translate", str(ph), str(tmp_path / "tr.jsonl"), "--source-lang", "es", "--lang", "fr",
            "--packages-dir", str(empty), "--argos-dir", str(tmp_path / "argos")]
    result = CliRunner().invoke(app, base)
    assert result.exit_code == 1 and translate_no_network == []
    result = CliRunner().invoke(app, [*base, "--download"])
    assert result.exit_code == 1 and "could not fetch the Argos package index" in result.output
    assert translate_no_network  # it did try, because it was asked to
    import socket

    assert socket.socket.connect.__name__ == "refuse"  # the fixture's block is back in place


def test_report_names_the_route_the_inventory_was_calibrated_for(argos_home, argos_packages, translate_source, tmp_path):
    import yaml

    from deid_factory.placeholders import inventory_path

    raw = yaml.safe_load(inventory_path("fr").read_text())
    raw["calibration"] = {"route": ["es", "fr"]}
    raw["terms"] = {k: [{"term": t, "survival": 1.0} for t in v] for k, v in raw["candidates"].items()}
    inv = tmp_path / "placeholders.yml"
    inv.write_text(yaml.safe_dump(raw, allow_unicode=True))
    ph = tmp_path / "ph.jsonl"
    placeholder_file(translate_source, ph, "fr", inventory_file=inv)
    report = translate_file(ph, tmp_path / "tr.jsonl", TranslateOptions("es", "fr", packages_dir=argos_packages["pivot"], argos_dir=tmp_path / "argos", beam_size=1, progress=False))
    assert report["route"] == ["es", "en", "fr"] and report["inventory_calibrated_route"] == ["es", "fr"]
