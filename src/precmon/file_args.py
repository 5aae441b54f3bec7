"""Opening a file the user named (results, references, evaluation texts, sweep files) without hanging.

A named pipe (FIFO) given as a file argument blocked `open()` until some writer came, forever if
none did; a socket cannot be read at all. `open_file_arg` opens without blocking and refuses
both with a reason the caller puts into its one-line error. Devices such as /dev/zero open as
before: the callers read them bounded. Imports nothing from precmon, so every layer may use it.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO


class FileArgError(OSError):
    """Not a file precmon can read; str() is the reason, e.g. "is a named pipe (FIFO), not a file"."""


def open_file_arg(path: Path | str) -> BinaryIO:
    """`path` opened for reading in binary, never blocking on a FIFO.

    Raises:
        FileArgError: a FIFO, a socket or a folder.
        OSError: as `open` raises it (FileNotFoundError, PermissionError …).
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISFIFO(mode):
            raise FileArgError("is a named pipe (FIFO), not a file: precmon reads files whole")
        if stat.S_ISSOCK(mode):
            raise FileArgError("is a socket, not a file")
        if stat.S_ISDIR(mode):
            raise FileArgError("is a folder, not a file")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def same_file(a: Path | str, b: Path | str) -> bool:
    """Whether two paths name one file: through a link, a hard link, `..`, or one not there yet."""
    try:
        if os.path.exists(a) and os.path.exists(b):
            return os.path.samefile(a, b)
        return Path(a).resolve() == Path(b).resolve()
    except (OSError, RuntimeError):  # a link loop
        return False


def input_clash(out: Path | str, inputs: Iterable[tuple[str, Path | str | None]]) -> str | None:
    """Why an output may not go to `out`: "is the input NAME PATH" when it names one of `inputs`
    ((name, path) pairs: what a command reads, by the flag or role that names it, "" for a
    positional), else None. Checked on resolved paths
    before the output is opened: an export that replaced its input would lose what it was made of.
    `-` is stdout, never a file."""
    if str(out) == "-":
        return None
    for name, path in inputs:
        if path is not None and str(path) != "-" and same_file(out, path):
            return f"is the input {name} {path}" if name else f"is the input {path}"
    return None
