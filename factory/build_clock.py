"""How long a build took. A build workflow (languages/<lc>/project.yml) starts with `clock-start`
and ends with `clock-stop`; both have no outputs, so weasel runs them every time, even when every
step between them is skipped as up to date:

    python -m deid_factory.build_clock start training/build_clock.json
    python -m deid_factory.build_clock stop training/build_clock.json --name "deid_es build"
    -> deid_es build: 7 min 12 s (from clock-start to clock-stop)

The README gives each build's expected time on the project's machine; this line is what a user
compares it with.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path


class ClockError(RuntimeError):
    pass


def start_clock(path: str | Path, now: float | None = None) -> float:
    """Write the start time to `path` (JSON); return it."""
    started = time.time() if now is None else now
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"started": started}) + "\n", encoding="utf-8")
    return started


def elapsed(path: str | Path, now: float | None = None) -> float:
    """Seconds since the start written to `path`."""
    path = Path(path)
    try:
        started = float(json.loads(path.read_text(encoding="utf-8"))["started"])
    except FileNotFoundError:
        raise ClockError(f"{path}: no start time (the workflow's clock-start step writes it)") from None
    except (ValueError, KeyError, TypeError):
        raise ClockError(f"{path}: not a start time written by clock-start") from None
    return max(0.0, (time.time() if now is None else now) - started)


def format_duration(seconds: float) -> str:
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes} min"
    return f"{minutes} min {secs} s" if minutes else f"{secs} s"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deid_factory.build_clock", description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=("start", "stop"))
    parser.add_argument("path", help="the clock file (JSON: the start time)")
    parser.add_argument("--name", default="build", help="what is timed, as printed")
    args = parser.parse_args(argv)
    if args.action == "start":
        start_clock(args.path)
        return 0
    try:
        took = elapsed(args.path)
    except ClockError as err:
        print(f"{args.name}: duration unknown ({err})")
        return 0  # the build itself succeeded: a missing clock never fails it
    print(f"{args.name}: {format_duration(took)} (from clock-start to clock-stop)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
