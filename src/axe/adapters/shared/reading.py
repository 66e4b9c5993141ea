"""Read a whole regular file: opened non-blocking (a FIFO would hang ``open()``) and checked
to be a regular file before a byte is read."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from pathlib import Path

from attrs import frozen


@frozen
class FileStamp:
    """Which version of a file some bytes came from: same device, inode and at least size."""

    device: int
    inode: int
    size: int


class NotRegularFileError(OSError):
    """The path names a directory, FIFO, socket or device rather than a file."""

    def __init__(self, path: Path | str, kind: str) -> None:
        super().__init__(f"{path} is {kind}")
        self.kind = kind


def open_regular(
    path: Path | str, *, nofollow: bool = False, flags: int = os.O_RDONLY, mode: int = 0o600
) -> tuple[int, os.stat_result]:
    """Open ``path`` without blocking (nor through a final symlink, with ``nofollow``:
    gc's own files beside a memory file), with ``flags`` (``mode`` for a file they create),
    and return the descriptor and its status.

    Raises:
        FileNotFoundError: nothing at ``path``.
        NotRegularFileError: something other than a regular file is there (a symlink, with
            ``nofollow``).
        OSError: any other reason it cannot be opened.
    """
    nonblock = getattr(os, "O_NONBLOCK", 0)
    flags |= nonblock | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    if nofollow:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags, mode)
    except IsADirectoryError:  # where opening a directory is refused outright (Windows)
        raise NotRegularFileError(path, "a directory") from None
    except OSError as error:
        if nofollow and error.errno == errno.ELOOP:
            raise NotRegularFileError(path, "a symbolic link, not followed") from None
        raise
    try:
        status = os.fstat(fd)
        _require_regular(path, status)
        if nonblock:
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd, status


def _require_regular(path: Path | str, status: os.stat_result) -> None:
    if not stat.S_ISREG(status.st_mode):
        kind = "a directory" if stat.S_ISDIR(status.st_mode) else "not a regular file"
        raise NotRegularFileError(path, kind)


def read_regular(
    path: Path | str,
    *,
    limit: int | None = None,
    check: Callable[[os.stat_result], None] | None = None,
    nofollow: bool = False,
) -> tuple[bytes, FileStamp]:
    """All bytes of the regular file at ``path`` and the stamp of the version read; ``check``
    is shown its status as opened, before a byte is read, and may raise to refuse it.

    Raises:
        FileNotFoundError, NotRegularFileError, OSError: as :func:`open_regular`, or a read
            failed; ``ValueError`` if the file is larger than ``limit``; whatever ``check``
            raises.
    """
    fd, status = open_regular(path, nofollow=nofollow)
    with os.fdopen(fd, "rb", buffering=0) as file:
        if check is not None:
            check(status)
        if limit is not None and status.st_size > limit:
            raise ValueError(f"{path} is larger than {limit} bytes")
        data = file.read()  # to the end, bytes appended while reading included
    return data, FileStamp(device=status.st_dev, inode=status.st_ino, size=len(data))


def describe_os_error(error: OSError) -> str:
    """A short reason for ``error`` without repeating the path the caller already names."""
    if isinstance(error, NotRegularFileError):
        return error.kind
    return error.strerror or str(error)
