"""Writing a stage's outputs so that a failure never leaves half a file: every file is written to a
temp file next to it and renamed into place when complete (`write_text_atomic`, `write_json_atomic`,
`write_bytes_atomic`, `write_chunks_atomic`), a set of files all or none (`all_or_nothing`), a line
appended whole or not at all (`append_line`). A write that fails (disk full, read-only or missing
folder) is an `OutputError` naming the file, never the data."""

from __future__ import annotations

import errno
import os
import re
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Iterator

import srsly


class OutputError(OSError):
    """An output that could not be written (disk full, folder missing or read-only...).

    The message names the output path and the system's reason, never the data being written; the
    `factory` command prints it as one line without a traceback. Subclass of OSError, so code that
    already handles OSError keeps working."""

    def __init__(self, path: str | Path, err: OSError):
        reason = err.strerror or type(err).__name__
        super().__init__(err.errno, f"cannot write {path}: {reason}")
        self.path = Path(path)

    def __str__(self) -> str:
        return str(self.strerror)


# errno values only a write can cause: disk full, quota exceeded, read-only file system, file too large
WRITE_ONLY_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG}


@contextmanager
def writes_to(path: str | Path) -> Iterator[None]:
    """For outputs that library code writes itself (spaCy's nlp.to_disk, its training loop): inside
    the block, an OSError that only a write can cause becomes OutputError naming path, so the command
    ends with one clear line. Other OSErrors (a missing input, say) pass through unchanged."""
    try:
        yield
    except OutputError:
        raise
    except shutil.Error as err:
        # shutil.copytree (spaCy copies model-last to model-best with it) gathers the failure of each
        # file as (src, dst, "[Errno N] reason: ...") strings and raises them together, errno unset
        failures = err.args[0] if err.args and isinstance(err.args[0], list) else []
        found = {int(m[1]) for *_, why in failures for m in [re.match(r"\[Errno (\d+)\]", str(why))] if m}
        write_only = sorted(found & WRITE_ONLY_ERRNOS)
        if write_only:
            raise OutputError(path, OSError(write_only[0], os.strerror(write_only[0]))) from None
        raise
    except OSError as err:
        if err.errno in WRITE_ONLY_ERRNOS:
            raise OutputError(path, err) from None
        raise


_WRITE_BATCH = 1 << 20  # bytes gathered before one write() call: few system calls, bounded memory


def _umask() -> int:
    mask = os.umask(0)  # the only way to read it is to set it; read once, at import
    os.umask(mask)
    return mask


# mkstemp creates its file readable by the owner only; an output gets the usual rw-r--r-- (umask) mode.
_FILE_MODE = 0o666 & ~_umask()


def _write_fully(handle, data: bytes) -> None:
    """Write all of data to an unbuffered file (a raw write may write less than it was given)."""
    view = memoryview(data)
    while view:
        view = view[handle.write(view) :]


def write_chunks_atomic(path: str | Path, chunks: Iterable[bytes]) -> None:
    """Write the concatenated chunks to path atomically: a temp file in the same folder, renamed over
    path only once everything is written. On any failure the temp file is removed and an earlier
    file at path stays as it was. Failures to write become OutputError naming path; errors raised
    by the chunks iterator itself (a bad input record, say) pass through unchanged.
    Inside `all_or_nothing()`, the rename waits for the end of that block."""
    path = Path(path)
    tmp = _write_temp(path, chunks)
    if _STAGED:
        _STAGED[-1].append((tmp, path))
        return
    _rename_all([(tmp, path)])


def _write_temp(path: Path, chunks: Iterable[bytes]) -> str:
    """The chunks in a new temp file next to path (removed again on any failure); its name."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    except OSError as err:
        raise OutputError(path, err) from None
    try:
        os.fchmod(fd, _FILE_MODE)
        # Unbuffered: a failed write raises here, not again (and unhandled) when the file is closed.
        with os.fdopen(fd, "wb", buffering=0) as handle:
            pending = bytearray()
            for chunk in chunks:
                pending += chunk
                if len(pending) >= _WRITE_BATCH:
                    _write_checked(handle, bytes(pending), path)
                    pending.clear()
            _write_checked(handle, bytes(pending), path)
    except BaseException:
        _remove_quietly(tmp)
        raise
    return tmp


def _rename_all(staged: list[tuple[str, Path]]) -> None:
    """Move staged temp files over their outputs (a rename needs no free space); on a failure the
    temp files not moved yet are removed."""
    for i, (tmp, path) in enumerate(staged):
        try:
            os.replace(tmp, path)
        except OSError as err:
            for rest, _ in staged[i:]:
                _remove_quietly(rest)
            raise OutputError(path, err) from None


def _remove_quietly(tmp: str) -> None:
    try:
        os.unlink(tmp)
    except OSError:
        pass


# Temp files written inside all_or_nothing() blocks, innermost block last. Stages write their outputs
# from one thread (translation workers are processes), so a plain module-level stack is enough.
_STAGED: list[list[tuple[str, Path]]] = []


@contextmanager
def all_or_nothing() -> Iterator[None]:
    """For a stage that writes several outputs (DocBins + records + report, metrics + plots):
    every file written inside the block goes to a temp file, and all are renamed into place only
    when the block ends without error. On any error none is, the temp files are removed, and the
    earlier outputs stay as they were: never a mix of old and new files. Do not read an output
    back inside the block (it is not in place yet)."""
    staged: list[tuple[str, Path]] = []
    _STAGED.append(staged)
    try:
        yield
    except BaseException:
        _STAGED.pop()
        for tmp, _ in staged:
            _remove_quietly(tmp)
        raise
    _STAGED.pop()
    if _STAGED:  # nested: the outer block decides
        _STAGED[-1].extend(staged)
    else:
        _rename_all(staged)


def _write_checked(handle, data: bytes, path: Path) -> None:
    try:
        _write_fully(handle, data)
    except OSError as err:
        raise OutputError(path, err) from None


def write_text_atomic(path: str | Path, text: str) -> None:
    """Write a text file atomically (temp file in the same folder + rename), creating its folder."""
    write_chunks_atomic(path, [text.encode("utf-8")])


def write_json_atomic(path: str | Path, data: Any) -> None:
    """Write a JSON document (a stage report) atomically, indented, creating its folder."""
    write_text_atomic(path, srsly.json_dumps(data, indent=2) + "\n")


def write_bytes_atomic(path: str | Path, data: bytes) -> None:
    """Write a binary file (a DocBin, a zip, a PNG) atomically, creating its folder."""
    write_chunks_atomic(path, [data])


def append_line(handle, line: str, sync: bool = True) -> None:
    """Append one line to a file opened for appending and fsync it. Either the whole line reaches
    the file or none of it: on a failed write (disk full) the file is cut back to where it ended,
    so it always ends with a complete line, and OutputError names the file. With sync=False the
    line is in the file (a killed process keeps it) but not forced to the disk yet."""
    data = (line + "\n").encode("utf-8")
    handle.flush()  # nothing may stay in the handle's buffer: the line goes straight to the descriptor
    fd = handle.fileno()
    end = os.lseek(fd, 0, os.SEEK_END)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if sync:
            os.fsync(fd)
    except OSError as err:
        try:
            os.ftruncate(fd, end)  # truncating never needs free space
        except OSError:
            pass  # the next run's resume cuts a partial last line too
        raise OutputError(handle.name, err) from None
