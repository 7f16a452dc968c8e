"""A build prints its duration at the end (issue 30): every build workflow starts with clock-start
and ends with clock-stop, which weasel runs even when every step between them is up to date."""

import subprocess
import sys

import srsly
from weasel.cli.run import check_rerun

from deid_factory.build_clock import elapsed, format_duration, main, start_clock
from deid_factory.locale import project_locales
from deid_factory import PROJECT_ROOT


def test_the_clock_measures_from_start_to_stop(tmp_path, capsys):
    clock = tmp_path / "training" / "build_clock.json"
    start_clock(clock, now=1000.0)
    assert elapsed(clock, now=1000.0 + 7 * 60 + 12) == 7 * 60 + 12
    assert format_duration(432) == "7 min 12 s" and format_duration(59.6) == "1 min 0 s" and format_duration(3 * 3600 + 125) == "3 h 2 min"
    assert main(["stop", str(clock), "--name", "deid_es build"]) == 0
    line = capsys.readouterr().out
    assert line.startswith("deid_es build: ") and "min" in line  # the clock file is from 1970: hours of it


def test_a_missing_clock_says_so_and_never_fails_the_build(tmp_path, capsys):
    assert main(["stop", str(tmp_path / "none.json")]) == 0
    assert "duration unknown" in capsys.readouterr().out


def test_every_build_workflow_is_timed_and_weasel_always_runs_the_clock(tmp_path):
    for lang in project_locales(PROJECT_ROOT):
        project = srsly.read_yaml(PROJECT_ROOT / "languages" / lang / "project.yml")
        builds = {name: steps for name, steps in project["workflows"].items() if name.startswith("build")}
        assert builds and all(steps[0] == "clock-start" and steps[-1] == "clock-stop" for steps in builds.values()), lang
        commands = {c["name"]: c for c in project["commands"]}
        # a lock file that knows both commands: a command with outputs would be skipped as up to date
        (tmp_path / "project.lock").write_text(srsly.yaml_dumps({"clock-start": {"outs": []}, "clock-stop": {"outs": []}}), encoding="utf-8")
        assert check_rerun(tmp_path, commands["clock-start"]) and check_rerun(tmp_path, commands["clock-stop"])
        assert not commands["clock-start"].get("outputs") and not commands["clock-stop"].get("outputs")


def test_the_module_runs_as_the_workflow_calls_it(tmp_path):
    clock = tmp_path / "clock.json"
    run = [sys.executable, "-m", "deid_factory.build_clock"]
    subprocess.run([*run, "start", str(clock)], check=True)
    out = subprocess.run([*run, "stop", str(clock), "--name", "deid_xx build"], check=True, capture_output=True, text=True).stdout
    assert out.startswith("deid_xx build: ") and out.rstrip().endswith("s (from clock-start to clock-stop)")
