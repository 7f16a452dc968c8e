"""Faults the tests inject, from the kernel where it lets us: a full disk (a size-limited tmpfs in a
private mount namespace), an unwritable folder (permission bits, also for root), no network (a network
namespace). Each has a documented fallback where the kernel refuses; DEID_REQUIRE (tests/conftest.py)
turns a fallback into a failure in CI.

Full disk. `run_on_full_disk(argv, disk, budget)` runs a command with `disk` (a folder, with the
earlier outputs in it) on a file system that has `budget` bytes free (rounded up to whole 4 KiB pages:
tmpfs counts pages): this file, run as a script through `unshare -m` (root) or `unshare -rm` (an
unprivileged user namespace), mounts a tmpfs over `disk`, copies the earlier outputs in, shrinks the
tmpfs to what they use + budget (`mount -o remount,size=`), runs the command, and copies what the
disk holds afterwards to `<disk>.after` for the test to compare. Writes fail with the kernel's
ENOSPC, in every process the command starts (spaCy, pip, workers). The mount is private to the
namespace: nothing outside sees it, and it goes when the command ends. Where neither unshare works,
the fallback is FULL_DISK_SITECUSTOMIZE: a byte budget that Python's own open()/os.write() enforce
in the command's Python processes only (DEID_REQUIRE=tmpfs fails instead).

Unwritable folder. chmod 0o500; root ignores permission bits, so as root the calling thread drops
CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH from its effective capabilities (the kernel then holds it
to the owner bits), or, where capset is refused, the folder gets `chattr +i`. Either way the error
comes from the kernel (EACCES, or EPERM for the immutable folder).

Network. `network_namespace_prefix()` is `unshare -n` (root) or `unshare -rn`: the command runs in a
network namespace whose only interface is loopback, so a connection to any other address fails in
the kernel (ENETUNREACH), whatever the process is written in.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Iterator

PAGE = 4096  # tmpfs allocates whole pages; budgets are rounded up to them
_HERE = Path(__file__).resolve()


def snapshot(folder: Path) -> dict[str, bytes | None]:
    """Every file (relative name -> bytes) and folder (-> None) under folder: equal snapshots =
    nothing changed, nothing left over."""
    return {str(p.relative_to(folder)): p.read_bytes() if p.is_file() else None for p in sorted(folder.rglob("*"))}


def pages(snap: dict[str, bytes | None]) -> int:
    """The 4 KiB pages a tmpfs needs for the files of a snapshot."""
    return sum(-(-len(data) // PAGE) for data in snap.values() if data is not None)


# ----------------------------------------------------------------------------- namespaces
def _first_working(prefixes: list[list[str]], probe: list[str]) -> tuple[str, ...] | None:
    if shutil.which("unshare") is None:
        return None
    for prefix in prefixes:
        try:
            ret = subprocess.run([*prefix, *probe], capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if ret.returncode == 0:
            return tuple(prefix)
    return None


def _is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


@lru_cache(maxsize=None)
def mount_namespace_prefix() -> tuple[str, ...] | None:
    """`unshare -m` (root) or `unshare -rm` (user namespace) where a tmpfs can be mounted inside; else None."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="deid-tmpfs-probe.") as probe_dir:
        probe = ["sh", "-c", f"mount -t tmpfs -o size=4k tmpfs '{probe_dir}' && mount -o remount,size=8k '{probe_dir}'"]
        prefixes = [["unshare", "-m"], ["unshare", "-rm"]] if _is_root() else [["unshare", "-rm"]]
        return _first_working(prefixes, probe)


# Inside the namespace: loopback is the only interface (brought up when `ip` is there, so local
# sockets keep working); anything else is unreachable.
_NETNS_PROBE = "import socket; names = [n for _, n in socket.if_nameindex()]; assert names == ['lo'], names"


@lru_cache(maxsize=None)
def network_namespace_prefix() -> tuple[str, ...] | None:
    """A command prefix that runs its command in a new network namespace with loopback only
    (`unshare -n`, or `unshare -rn` in a user namespace); None where the kernel refuses both."""
    prefixes = [["unshare", "-n"], ["unshare", "-rn"]] if _is_root() else [["unshare", "-rn"]]
    found = _first_working(prefixes, [sys.executable, "-c", _NETNS_PROBE])
    if found is None:
        return None
    # `ip link set lo up` where iproute2 is installed; without it loopback stays down (stricter still)
    return (*found, "sh", "-c", 'ip link set lo up 2>/dev/null; exec "$@"', "netns")


# ----------------------------------------------------------------------------- full disk
# The fallback: installed at interpreter start in the child (on PYTHONPATH), files under
# $DEID_FULL_DIR share $DEID_FULL_BUDGET bytes; past it, writes fail with ENOSPC exactly as a full
# file system's do (a short write, then `OSError: [Errno 28] No space left on device`). Python-level:
# it covers open() and os.write() of Python processes, not C libraries writing on their own.
FULL_DISK_SITECUSTOMIZE = r'''
import builtins
import errno
import io
import os

_DIR = os.environ.get("DEID_FULL_DIR")
_left = [int(os.environ.get("DEID_FULL_BUDGET", "0"))]


def _under_full_dir(path):
    real = os.path.realpath(path)
    return real == _DIR or real.startswith(_DIR + os.sep)


def _fd_path(fd):
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return ""


def _take(n):
    """How many of n bytes still fit; nothing fits: ENOSPC, as the kernel reports it."""
    if n and _left[0] <= 0:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    k = min(n, _left[0])
    _left[0] -= k
    return k


class _FullDiskFile(io.FileIO):
    def write(self, data):
        view = memoryview(data).cast("B")
        return super().write(view[: _take(len(view))])


_real_open = io.open
_real_write = os.write


def _open(file, mode="r", buffering=-1, encoding=None, errors=None, newline=None, closefd=True, opener=None):
    if isinstance(file, int):
        path = _fd_path(file)
    elif isinstance(file, (str, bytes, os.PathLike)):
        path = os.fsdecode(file)
    else:
        path = ""
    if not any(c in mode for c in "wax+") or not path or not _under_full_dir(path):
        return _real_open(file, mode, buffering, encoding, errors, newline, closefd, opener)
    raw = _FullDiskFile(file, mode.replace("b", "").replace("t", ""), closefd, opener)
    if buffering == 0:
        return raw
    buffered = io.BufferedRandom(raw) if "+" in mode else io.BufferedWriter(raw)
    if "b" in mode:
        return buffered
    return io.TextIOWrapper(buffered, encoding or "utf-8", errors, newline, line_buffering=buffering == 1)


def _write(fd, data):
    if _under_full_dir(_fd_path(fd)):
        view = memoryview(data).cast("B")
        return _real_write(fd, view[: _take(len(view))])
    return _real_write(fd, data)


if _DIR:
    _DIR = os.path.realpath(_DIR)
    io.open = builtins.open = _open
    os.write = _write
'''


def python_full_disk_env(full_dir: Path, budget: int, site: Path, env: dict | None = None) -> dict:
    """Environment whose Python processes see only `budget` bytes free under full_dir (the fallback)."""
    site.mkdir(parents=True, exist_ok=True)
    (site / "sitecustomize.py").write_text(FULL_DISK_SITECUSTOMIZE, encoding="utf-8")
    env = dict(os.environ if env is None else env)
    env["PYTHONPATH"] = os.pathsep.join(p for p in [str(site), env.get("PYTHONPATH", "")] if p)
    env.update({"DEID_FULL_DIR": str(full_dir), "DEID_FULL_BUDGET": str(budget)})
    return env


@dataclass
class FullDiskRun:
    returncode: int
    stdout: str
    stderr: str
    after: Path  # a copy of what `disk` held when the command ended
    mechanism: str  # "tmpfs" (the kernel's ENOSPC) or "python" (the FULL_DISK_SITECUSTOMIZE fallback)


def run_on_full_disk(argv: list, disk: Path, budget: int, env: dict | None = None, cwd: Path | None = None,
                     timeout: float = 600) -> FullDiskRun:
    """Run argv with `budget` bytes free on the file system of `disk` (see the module docstring).
    `disk` keeps its content outside the run; what the run left there is in the returned `.after`."""
    from conftest import require_or_fallback  # tests/ is on sys.path (pytest rootdir import mode)

    disk = Path(disk).resolve()
    argv = [str(a) for a in argv]
    after = disk.with_name(disk.name + ".after")
    shutil.rmtree(after, ignore_errors=True)
    prefix = mount_namespace_prefix()
    if prefix is None:
        require_or_fallback("tmpfs", "no size-limited tmpfs can be mounted here (unshare -m and unshare -rm refused)",
                            "the full-disk tests use a Python-level byte budget instead")
        env = python_full_disk_env(disk, budget, disk.with_name(disk.name + ".site"), env)
        ret = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
        shutil.copytree(disk, after, symlinks=True)
        return FullDiskRun(ret.returncode, ret.stdout, ret.stderr, after, "python")
    spec = disk.with_name(disk.name + ".spec.json")
    result = disk.with_name(disk.name + ".result.json")
    spec.write_text(json.dumps({"argv": argv, "disk": str(disk), "budget": budget, "cwd": str(cwd) if cwd else None,
                                "timeout": timeout, "result": str(result), "after": str(after)}))
    ret = subprocess.run([*prefix, sys.executable, str(_HERE), str(spec)], env=env, capture_output=True, text=True,
                         timeout=timeout + 60)
    if ret.returncode != 0 or not result.exists():
        raise RuntimeError(f"the full-disk runner failed ({ret.returncode}): {ret.stderr[-3000:]}")
    data = json.loads(result.read_text())
    return FullDiskRun(data["returncode"], data["stdout"], data["stderr"], after, "tmpfs")


def _runner_main(spec_path: str) -> None:
    """In the private mount namespace: tmpfs over disk, earlier outputs in, shrink to used + budget, run."""
    spec = json.loads(Path(spec_path).read_text())
    disk = Path(spec["disk"])
    seed = disk.with_name(disk.name + ".seed")
    shutil.rmtree(seed, ignore_errors=True)
    shutil.copytree(disk, seed, symlinks=True)
    mode = f"{disk.stat().st_mode & 0o7777:o}"
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size=1g,mode={mode}", "tmpfs", str(disk)], check=True)
    shutil.copytree(seed, disk, symlinks=True, dirs_exist_ok=True)
    shutil.rmtree(seed)
    stat = os.statvfs(disk)
    used = (stat.f_blocks - stat.f_bfree) * stat.f_frsize
    size = used + -(-int(spec["budget"]) // PAGE) * PAGE
    # size=0 would mean "no limit" to tmpfs: a disk with nothing used and no budget gets one page, filled
    filler = None
    if size == 0:
        size = PAGE
        filler = disk / ".filler"
    subprocess.run(["mount", "-o", f"remount,size={size}", str(disk)], check=True)
    if filler is not None:
        filler.write_bytes(b"\0" * PAGE)
    try:
        ret = subprocess.run(spec["argv"], cwd=spec["cwd"], capture_output=True, text=True, timeout=spec["timeout"])
        out = {"returncode": ret.returncode, "stdout": ret.stdout, "stderr": ret.stderr}
    except subprocess.TimeoutExpired as err:
        out = {"returncode": 124, "stdout": str(err.stdout or ""), "stderr": f"timed out after {spec['timeout']} s"}
    if filler is not None:
        filler.unlink()
    shutil.copytree(disk, spec["after"], symlinks=True)
    Path(spec["result"]).write_text(json.dumps(out))


# ----------------------------------------------------------------------------- unwritable folder
# Root ignores permission bits because its threads hold CAP_DAC_OVERRIDE (and CAP_DAC_READ_SEARCH) in
# their effective capability set. A thread may drop capabilities from its effective set and raise them
# again later (they stay in the permitted set): without them, root is held to the owner bits of the
# folders it owns, as any user is to theirs. Capabilities are per thread; the stages write from the
# calling thread.
_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH = 1, 2
_LINUX_CAPABILITY_VERSION_3 = 0x20080522


def _capabilities():
    """(get, set) of this thread's effective capability words, via capget/capset; None where unavailable."""
    import ctypes
    import ctypes.util

    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]

    def get():
        header, data = Header(_LINUX_CAPABILITY_VERSION_3, 0), (Data * 2)()
        if libc.capget(ctypes.byref(header), data) != 0:
            raise OSError(ctypes.get_errno(), "capget failed")
        return header, data

    def set_(header, data):
        if libc.capset(ctypes.byref(header), data) != 0:
            raise OSError(ctypes.get_errno(), "capset failed")

    return get, set_


def drop_dac_capabilities():
    """Drop CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH from this thread's effective set; returns a function
    that restores them, or None where that cannot be done (not Linux, capset refused)."""
    caps = _capabilities()
    if caps is None:
        return None
    get, set_ = caps
    try:
        header, data = get()
        saved = data[0].effective
        data[0].effective = saved & ~((1 << _CAP_DAC_OVERRIDE) | (1 << _CAP_DAC_READ_SEARCH))
        set_(header, data)
    except OSError:
        return None

    def restore():
        header, data = get()
        data[0].effective = saved
        set_(header, data)

    return restore


def _can_create_a_file_in(folder: Path) -> bool:
    probe = folder / "probe"
    try:
        probe.write_text("")
    except PermissionError:
        return False
    probe.unlink()
    return True


@contextmanager
def unwritable(folder: Path) -> Iterator[str]:
    """Make `folder` and everything under it (the earlier outputs) read-only to this thread inside
    the block, which gets the reason the kernel will give; as it was after it. Folders 0o500 and
    files 0o400 for a normal user; as root, the same with CAP_DAC_OVERRIDE dropped from the thread's
    effective capabilities (so the owner bits hold, as for any user) - or, where capabilities cannot
    be changed, with the tree immutable (chattr -R +i, refused even to root). Where neither works the
    test skips, or fails under DEID_REQUIRE=unwritable (CI)."""
    from conftest import require_or_skip

    tree = [folder, *folder.rglob("*")]
    modes = {p: p.stat().st_mode & 0o7777 for p in tree}
    for p in sorted(tree, reverse=True):  # contents first: a folder stays enterable until its own turn
        p.chmod(0o500 if p.is_dir() else 0o400)
    try:
        if not _is_root():
            yield "Permission denied"
            return
        restore = drop_dac_capabilities()
        if restore is not None and not _can_create_a_file_in(folder):
            try:
                yield "Permission denied"
            finally:
                restore()
            return
        if restore is not None:  # the file system lets root write anyway: try the next way
            restore()
        if subprocess.run(["chattr", "-R", "+i", str(folder)], capture_output=True).returncode != 0:
            require_or_skip("unwritable", "running as root, CAP_DAC_OVERRIDE cannot be dropped and chattr +i is not "
                                          "available: no way to make a folder unwritable")
        try:
            yield "Operation not permitted"
        finally:
            subprocess.run(["chattr", "-R", "-i", str(folder)], check=True)
    finally:
        for p, mode in modes.items():
            p.chmod(mode)


if __name__ == "__main__":
    _runner_main(sys.argv[1])
