"""Privacy: the router runs with no network, and no log line, report or error message of a stage or
of the router holds a PHI string of its input. (The whole small build runs the same way with the same
PHI check in tests/system/test_build_e2e.py, so CI builds only once.)

No network, twice over (network_isolation):
* the kernel: the run starts in a new network namespace (faultkit.network_namespace_prefix:
  `unshare -n`, or `unshare -rn` in a user namespace) whose only interface is loopback, so any
  process of the run - Python or not - gets ENETUNREACH for any other address; where the kernel
  allows neither, the guard below is the fallback (DEID_REQUIRE=netns fails instead);
* the Python socket guard (NETWORK_GUARD_SITECUSTOMIZE), a sitecustomize.py put on PYTHONPATH: every
  Python process of a run -- the command, spaCy's and weasel's children, spawned translation workers,
  pip -- installs it at start. It refuses every connection and name lookup except local AF_UNIX
  sockets and writes one line per attempt to $DEID_NET_GUARD_LOG, so a test can assert that nothing
  even tried (which the namespace alone cannot tell).
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import re
import subprocess
import sys
from pathlib import Path

import pytest

from deid_factory.cli import app
from deid_factory.records import Record, Span, read_records, write_records
import faultkit

NETWORK_GUARD_SITECUSTOMIZE = r'''
import errno
import os
import socket

_LOG = os.environ.get("DEID_NET_GUARD_LOG")


def _refuse(what):
    with open(_LOG, "a", encoding="utf-8") as handle:
        handle.write(f"pid {os.getpid()}: {what}\n")
    raise OSError(errno.ENETUNREACH, "network blocked by the test socket guard")


if _LOG:
    _connect, _connect_ex, _sendto = socket.socket.connect, socket.socket.connect_ex, socket.socket.sendto

    def connect(self, address):
        if self.family == socket.AF_UNIX:
            return _connect(self, address)
        _refuse(f"connect {address!r}")

    def connect_ex(self, address):
        if self.family == socket.AF_UNIX:
            return _connect_ex(self, address)
        _refuse(f"connect_ex {address!r}")

    def sendto(self, *args):
        if self.family == socket.AF_UNIX:
            return _sendto(self, *args)
        _refuse("sendto")

    def lookup(*args, **kwargs):
        _refuse(f"name lookup {args[:1]!r}")

    socket.socket.connect, socket.socket.connect_ex, socket.socket.sendto = connect, connect_ex, sendto
    socket.getaddrinfo = socket.gethostbyname = socket.gethostbyname_ex = socket.gethostbyaddr = lookup
'''

# A connection attempt of a child process, to prove the guard is installed where the run runs.
_PROBE = "import socket\nsocket.create_connection(('192.0.2.1', 80), timeout=2)"


def network_guard_env(tmp_path: Path, env: dict | None = None) -> tuple[dict, Path]:
    """Environment that installs the socket guard in every Python process started with it, and the
    file where the guard logs each refused attempt."""
    site = tmp_path / "network_guard_site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(NETWORK_GUARD_SITECUSTOMIZE, encoding="utf-8")
    attempts = tmp_path / "network_attempts.log"
    env = dict(os.environ if env is None else env)
    env["PYTHONPATH"] = os.pathsep.join(p for p in [str(site), env.get("PYTHONPATH", "")] if p)
    env["DEID_NET_GUARD_LOG"] = str(attempts)
    return env, attempts


def assert_guard_active(env: dict, attempts: Path) -> None:
    """A child process started with env cannot connect, and the attempt is logged."""
    lines_before = attempts.read_text().count("\n") if attempts.exists() else 0
    ret = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, timeout=60)
    assert ret.returncode != 0 and "network blocked by the test socket guard" in ret.stderr, ret.stderr
    assert attempts.read_text().count("\n") == lines_before + 1


def network_isolation(tmp_path: Path, env: dict | None = None) -> tuple[list[str], dict, Path]:
    """How the offline runs run: (command prefix, environment, attempts log). The prefix puts the
    command in a network namespace with loopback only, where the kernel allows it; the environment
    installs the socket guard in every Python process either way."""
    from conftest import require_or_fallback

    env, attempts = network_guard_env(tmp_path, env)
    prefix = faultkit.network_namespace_prefix()
    if prefix is None:
        require_or_fallback("netns", "no network namespace can be made here (unshare -n and unshare -rn refused)",
                            "the runs are offline under the Python socket guard only")
        return [], env, attempts
    return list(prefix), env, attempts


# Inside the namespace, without the Python guard: the interfaces there, what a TCP connection to a
# non-loopback address gets from the kernel, and whether loopback still works when it is up.
_KERNEL_PROBE = """
import json, socket
names = [n for _, n in socket.if_nameindex()]
out = socket.socket()
out.settimeout(10)
try:
    out.connect(("192.0.2.1", 80))
    connect = "connected"
except OSError as err:
    connect = [err.errno, err.strerror]
try:
    server = socket.create_server(("127.0.0.1", 0))
    client = socket.create_connection(server.getsockname(), timeout=10)
    loopback = "ok"
except OSError as err:
    loopback = [err.errno, err.strerror]
print(json.dumps({"interfaces": names, "connect": connect, "loopback": loopback}))
"""


def kernel_probe(prefix: list[str], env: dict) -> dict:
    """Run _KERNEL_PROBE through prefix with the socket guard off (it only acts when
    DEID_NET_GUARD_LOG is set), so what it sees is the kernel's answer."""
    bare = {k: v for k, v in env.items() if k != "DEID_NET_GUARD_LOG"}
    ret = subprocess.run([*prefix, sys.executable, "-c", _KERNEL_PROBE], env=bare, capture_output=True, text=True,
                         timeout=60)
    assert ret.returncode == 0, ret.stderr
    return json.loads(ret.stdout)


def assert_kernel_has_no_route_out(prefix: list[str], env: dict) -> None:
    """Where the runs have a namespace: only loopback there, and the kernel itself (not the guard)
    refuses a connection to another address."""
    if not prefix:
        return  # the fallback: network_isolation already warned, or failed under DEID_REQUIRE=netns
    seen = kernel_probe(prefix, env)
    assert seen["interfaces"] == ["lo"], seen
    assert seen["connect"] == [errno.ENETUNREACH, os.strerror(errno.ENETUNREACH)], seen


# Strings shorter than this are not searched: ages ("54"), days, initials and short surnames ("Gil")
# also occur as ordinary numbers and words in progress bars, timings, losses and label tables, so a
# hit would prove nothing. Every longer PHI string (names, full dates, IDs, phones, addresses,
# e-mails) must not occur as a whole word anywhere in what a run prints or logs.
MIN_PHI_CHARS = 4


def phi_strings(records_path: Path) -> set[str]:
    return {t.strip() for rec in read_records(records_path) for t in rec.span_texts() if len(t.strip()) >= MIN_PHI_CHARS}


def leaked_phi(phi: set[str], text: str) -> list[str]:
    """The PHI strings found in text as whole words (not inside a longer word or number: the year
    "2007" is not in the score "0.2007")."""
    return sorted(p for p in phi if re.search(rf"(?<!\w)(?<!\d\.){re.escape(p)}(?!\w)(?!\.\d)", text))


# ----------------------------------------------------------------------------- the guard itself
def test_the_socket_guard_blocks_child_processes_but_not_local_unix_sockets(tmp_path):
    env, attempts = network_guard_env(tmp_path)
    assert_guard_active(env, attempts)
    code = ("import socket\n"
            "a, b = socket.socketpair(socket.AF_UNIX)\n"
            "a.sendall(b'ok'); print(b.recv(2).decode())\n"
            "try:\n    socket.getaddrinfo('example.org', 443)\nexcept OSError as err:\n    print(err)\n")
    ret = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert ret.returncode == 0, ret.stderr
    assert ret.stdout.splitlines() == ["ok", "[Errno 101] network blocked by the test socket guard"]
    assert "name lookup ('example.org',)" in attempts.read_text()


def test_the_network_namespace_leaves_only_loopback(tmp_path):
    """The kernel half of the isolation: in the namespace the only interface is loopback; a TCP
    connection to a documentation address (192.0.2.1) fails with the kernel's ENETUNREACH, and
    loopback works (when `ip` could bring it up). With the guard on as well, the guard answers first
    and logs the attempt: both layers are there in the runs."""
    from conftest import require_or_skip

    prefix, env, attempts = network_isolation(tmp_path)
    if not prefix:
        require_or_skip("netns", "no network namespace can be made here (unshare -n and unshare -rn refused)")
    seen = kernel_probe(prefix, env)
    assert seen["interfaces"] == ["lo"], seen
    assert seen["connect"] == [errno.ENETUNREACH, "Network is unreachable"], seen
    if shutil.which("ip"):
        assert seen["loopback"] == "ok", seen
    ret = subprocess.run([*prefix, sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, timeout=60)
    assert ret.returncode != 0 and "network blocked by the test socket guard" in ret.stderr, ret.stderr
    assert attempts.read_text().count("\n") == 1


# ----------------------------------------------------------------------------- the router
# Invented notes (nobody real), one per language the router meets: es has a pipeline, fr and en go
# to the union fallback. Every PHI string is long enough to be searched (MIN_PHI_CHARS).
_NOTES = {
    "es_1": ("Paciente Leocadia Ybarra Quintanilla, DNI 48213579J, ingresa el 14/02/2023 en el Hospital Valdeluz. "
             "Teléfono de contacto 689 412 377, correo leocadia.ybarra@correo-ejemplo.es. Vive en Calle Almendrales 19, Zamora. "
             "Refiere dolor torácico opresivo de dos horas de evolución, sin fiebre."),
    "es_2": ("El doctor Anselmo Villaverde Icaza remite a la paciente desde Ponferrada el 03/11/2022. "
             "NHC 7734120. Antecedentes de hipertensión arterial y diabetes tipo 2 en tratamiento con metformina."),
    "fr_1": ("Patiente Ghislaine Tournefort, née le 12/07/1961, adressée par le Dr Perrichon de Clermont-Ferrand. "
             "Téléphone 04 73 55 21 90. Elle se plaint de douleurs abdominales depuis trois jours."),
    "en_1": ("Patient Thaddeus Wexley-Brandt was seen on 2021-09-30 at Harrowgate Infirmary. "
             "Phone (555) 014-7781, e-mail t.wexley@example.org. He reports chest pain since yesterday."),
}


def _note_records() -> list[Record]:
    """The notes as records with exact PHI spans (found by their surface strings)."""
    phi = {
        "es_1": ["Leocadia Ybarra Quintanilla", "48213579J", "14/02/2023", "Hospital Valdeluz", "689 412 377",
                 "leocadia.ybarra@correo-ejemplo.es", "Calle Almendrales 19", "Zamora"],
        "es_2": ["Anselmo Villaverde Icaza", "Ponferrada", "03/11/2022", "7734120"],
        "fr_1": ["Ghislaine Tournefort", "12/07/1961", "Perrichon", "Clermont-Ferrand", "04 73 55 21 90"],
        "en_1": ["Thaddeus Wexley-Brandt", "2021-09-30", "Harrowgate Infirmary", "(555) 014-7781", "t.wexley@example.org"],
    }
    labels = {"@": "EMAIL", "/": "DATE", "Hospital": "ORGANIZATION", "Infirmary": "ORGANIZATION"}
    records = []
    for rid, text in _NOTES.items():
        spans = []
        for surface in phi[rid]:
            start = text.index(surface)
            label = next((lab for key, lab in labels.items() if key in surface), "PERSON" if surface[0].isalpha() else "ID")
            spans.append(Span(start, start + len(surface), label))
        records.append(Record(rid, rid[:2], text, spans, {}))
    return records


@pytest.fixture(scope="module")
def privacy_deid_es(tmp_path_factory) -> Path:
    """deid_es without a trained NER (the es regex pack + merger): the router and redaction run the
    same code as with a full pipeline, in a second instead of a training run."""
    from deid_factory.package import assemble_pipeline

    out = tmp_path_factory.mktemp("privacy_pipeline") / "deid_es"
    assemble_pipeline(None, "es", out)
    return out


def test_router_redacts_offline_and_logs_no_phi(privacy_deid_es, tmp_path):
    """`factory redact` over text files and a JSONL file, with no network (network_isolation) and a broken
    input among them: it succeeds, tries no connection, and neither its output on the terminal
    (logging, progress bar, summary) nor its --report holds a PHI string of the input."""
    records = _note_records()
    phi = {t for rec in records for t in rec.span_texts()}
    assert all(len(p) >= MIN_PHI_CHARS for p in phi)
    notes = tmp_path / "notes"
    notes.mkdir()
    for rec in records[:3]:
        (notes / f"{rec.id}.txt").write_text(rec.text, encoding="utf-8")
    write_records(tmp_path / "more.jsonl", records[3:] + records[:1])
    # broken inputs the router must skip, naming the file (and line), not their text
    (notes / "latin1.txt").write_bytes("Paciente Leocadia Ybarra Quintanilla, año 2023.".encode("latin-1"))
    with (tmp_path / "more.jsonl").open("a", encoding="utf-8") as handle:
        handle.write('{"id": "broken", "text": "Anselmo Villaverde Icaza, DNI 48213579J\n')
    prefix, env, attempts = network_isolation(tmp_path)
    env["DEID_SURROGATE_KEY"] = "privacy test key, not a secret one"  # surrogate mode needs a key
    report = tmp_path / "report.json"
    ret = subprocess.run([*prefix, sys.executable, "-m", "deid_factory", "redact", str(notes), str(tmp_path / "more.jsonl"),
                          "--out", str(tmp_path / "redacted.jsonl"), "--format", "jsonl", "--mode", "surrogate",
                          "--pipelines", str(privacy_deid_es), "--report", str(report),
                          # fr and en notes have no pipeline: run them through the union of every pipeline and
                          # pack, and accept the skipped broken inputs (redact fails closed without these)
                          "--fallback", "union", "--allow-partial"],
                         env=env, capture_output=True, text=True, timeout=300)
    assert ret.returncode == 0, ret.stderr[-3000:]
    assert not attempts.exists(), attempts.read_text()
    result = json.loads(report.read_text())
    assert result["written"] == 5 and len(result["skipped"]) == 2
    printed = ret.stdout + ret.stderr
    assert "latin1.txt" in printed and "more.jsonl" in printed  # the skipped inputs are named
    assert leaked_phi(phi, printed) == []
    assert leaked_phi(phi, report.read_text()) == []
    # the redaction did happen: the structured PHI of the Spanish notes is gone from the output
    redacted = (tmp_path / "redacted.jsonl").read_text(encoding="utf-8")
    assert "48213579J" not in redacted and "leocadia.ybarra@correo-ejemplo.es" not in redacted
    assert_guard_active(env, attempts)
    assert_kernel_has_no_route_out(prefix, env)


def test_the_router_validates_the_dni_check_letter(privacy_deid_es):
    """The note's DNI has its right check letter ("TRWAGMYFPDXBNJZSQVHLCKE"[number % 23]), so the
    router reports it through the validated path (kind dni, check digit passed); the same number with
    a wrong letter falls back to the generic ID pattern."""
    from deid_runtime.router import Router

    number, letter = 48213579, "J"
    assert "TRWAGMYFPDXBNJZSQVHLCKE"[number % 23] == letter and f"{number}{letter}" in _NOTES["es_1"]
    router = Router.from_names([str(privacy_deid_es)])
    routed = router(_NOTES["es_1"])
    assert routed.lang == "es" and routed.pipeline == "es"
    [dni] = [s for s in routed.spans if _NOTES["es_1"][s.start:s.end] == f"{number}{letter}"]
    assert (dni.label, dni.kind, dni.validated) == ("ID", "dni", True)
    wrong = _NOTES["es_1"].replace(f"{number}{letter}", f"{number}Q")
    [generic] = [s for s in router(wrong).spans if wrong[s.start:s.end] == f"{number}Q"]
    assert generic.kind != "dni" and not generic.validated


# ----------------------------------------------------------------------------- error paths of stages
def _factory(args, capsys) -> tuple[int, str]:
    """Run the `factory` app in this process as the console script does; exit status and everything printed."""
    with pytest.raises(SystemExit) as info:
        app(args=[str(a) for a in args], prog_name="factory")
    captured = capsys.readouterr()
    return info.value.code, captured.out + captured.err


@pytest.fixture()
def privacy_source(tmp_path) -> tuple[Path, set[str]]:
    """The Spanish notes plus records that break a stage, each carrying PHI in its text."""
    records = [r for r in _note_records() if r.lang == "es"]
    src = tmp_path / "notes_es.jsonl"
    write_records(src, records)
    return src, {t for rec in records for t in rec.span_texts()}


def _append_line(path: Path, line: str) -> None:
    with path.open("a", encoding="utf-8") as handle:
        handle.write(line + "\n")


def test_broken_json_line_error_names_file_and_line_without_its_text(privacy_source, tmp_path, capsys, caplog):
    src, phi = privacy_source
    _append_line(src, '{"id": "es_9", "text": "Paciente Leocadia Ybarra Quintanilla, DNI 48213579J')
    for args, out in ((["detect", src, tmp_path / "d.jsonl"], tmp_path / "d.jsonl"),
                      (["placeholder", src, tmp_path / "p.jsonl", "--lang", "fr"], tmp_path / "p.jsonl"),
                      (["stats", src, "--out", tmp_path / "s.json"], tmp_path / "s.json")):
        code, printed = _factory(args, capsys)
        assert code == 1, args
        assert f"{src}:3" in printed and "Traceback" not in printed
        assert leaked_phi(phi, printed + caplog.text) == [], args
        assert not out.exists()  # nothing half-written

def test_bad_spans_are_reported_by_record_id_only(privacy_source, tmp_path, capsys, caplog):
    """A record whose spans do not fit its text: the placeholder stage drops it (the good records
    go through) and says why by id and offsets, never by the text it would have quoted."""
    import logging

    caplog.set_level(logging.DEBUG)
    src, phi = privacy_source
    bad_text = "Paciente Remedios Escolástica Urquiza, con DNI 51672093V, acude a urgencias."
    phi |= {"Remedios Escolástica Urquiza", "51672093V"}
    bad = Record("es_bad", "es", bad_text, [Span(9, 40, "PERSON"), Span(30, 57, "ID")], {})  # overlapping, off by a few
    write_records(src, list(read_records(src)) + [bad])
    code, printed = _factory(["placeholder", src, tmp_path / "p.jsonl", "--lang", "fr",
                              "--report", tmp_path / "report.json"], capsys)
    assert code == 0
    assert [r.id for r in read_records(tmp_path / "p.jsonl")] == ["es_1", "es_2"]
    report = (tmp_path / "report.json").read_text()
    assert "es_bad" in report + caplog.text
    assert leaked_phi(phi, printed + caplog.text + report) == []


def test_missing_route_and_unplaceholdered_input_errors_hold_no_phi(argos_home, privacy_source, tmp_path, capsys, caplog,
                                                                     translate_no_network):
    from deid_factory.placeholders import placeholder_file

    src, phi = privacy_source
    # records straight from extraction (no placeholders): refused, naming file, line and record
    code, printed = _factory(["translate", src, tmp_path / "t.jsonl", "--source-lang", "es", "--lang", "fr"], capsys)
    assert code == 1 and f"{src}:1" in printed and "es_1" in printed
    assert leaked_phi(phi, printed + caplog.text) == []
    # placeholdered, but no Argos route installed: stops at once, names the missing packages
    ph = tmp_path / "ph.jsonl"
    placeholder_file(src, ph, "fr")
    empty = tmp_path / "no_packages"
    empty.mkdir()
    code, printed = _factory(["translate", ph, tmp_path / "t.jsonl", "--source-lang", "es", "--lang", "fr",
                              "--packages-dir", empty, "--argos-dir", tmp_path / "argos"], capsys)
    assert code == 1 and "translate-es_en" in printed
    assert leaked_phi(phi, printed + caplog.text) == []
    assert translate_no_network == []
