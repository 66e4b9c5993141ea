"""Where Linux, macOS and Windows differ for a trim, as one value the trim is handed.

The trim in :mod:`.durable` is the POSIX recipe: rename over a file that others hold open,
fsync the directory, probe a process with signal 0, and (Linux) lease the old file to learn
when its last writer has gone. Windows refuses the first (a sharing violation), cannot do
the second and turns the third into a Ctrl-C; macOS's ``fsync`` stops at the drive's
volatile cache. The trim takes a :class:`FilePlatform` instead of asking ``sys.platform``
at each step, so the tests run every branch on Linux by substituting one: a filesystem shim
with Windows' rule, or a recording ``fcntl``.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from attrs import frozen


class FcntlModule(Protocol):
    """The part of the ``fcntl`` module a full fsync uses (absent on Windows)."""

    def fcntl(self, fd: int, cmd: int, arg: int = 0, /) -> int: ...


@frozen
class FilePlatform:
    """How one operating system's files behave, where a trim must care.

    Attributes:
        replace_needs_closed_files: renaming over a file that any handle holds open fails
            (Windows), so gc closes its own handles first and retries while others hold it.
        read_leases: a read lease tells when the replaced file's last writer is gone (Linux).
        probe_processes: ``kill(pid, 0)`` asks whether a pid lives (POSIX; on Windows
            signal 0 is ``CTRL_C_EVENT`` and would interrupt a console process group).
        fsync_directories: a directory can be opened and fsynced, which makes a rename
            durable (POSIX).
        fsync: flushes one descriptor to stable storage (see :func:`full_fsync`).
        replace, link: ``os.replace`` and ``os.link``, the seams the Windows shim takes.
        write: ``os.write`` for appends (the archive's, late entries'), the seam a test
            takes to fill the disk (ENOSPC) or fail it (EIO) in the middle of one.
    """

    name: str
    replace_needs_closed_files: bool
    read_leases: bool
    probe_processes: bool
    fsync_directories: bool
    fsync: Callable[[int], None]
    replace: Callable[[Path, Path], None] = os.replace
    link: Callable[[Path, Path], None] = os.link
    write: Callable[[int, memoryview], int] = os.write


def platform_for(
    name: str, *, fcntl: FcntlModule | None, fsync: Callable[[int], None] = os.fsync
) -> FilePlatform:
    """The rules for the system ``sys.platform`` calls ``name``, with its ``fcntl`` module
    (None where there is none) and plain ``fsync`` as the flush of last resort."""
    windows = name == "win32"
    return FilePlatform(
        name=name,
        replace_needs_closed_files=windows,
        read_leases=name.startswith("linux"),
        probe_processes=not windows,
        fsync_directories=not windows,
        fsync=functools.partial(full_fsync, fcntl=fcntl, fallback=fsync),
    )


def current_platform() -> FilePlatform:
    """The rules of the system this process runs on."""
    try:
        import fcntl  # noqa: PLC0415  (POSIX only)
    except ImportError:  # Windows
        return platform_for(sys.platform, fcntl=None)
    return platform_for(sys.platform, fcntl=fcntl)


def full_fsync(
    fd: int, *, fcntl: FcntlModule | None, fallback: Callable[[int], None] = os.fsync
) -> None:
    """Flush ``fd`` to stable storage, through the drive's own cache where the system can.

    On macOS ``fsync`` only hands the data to the drive, which may hold it in a volatile
    cache and write it out of order, so a power cut can lose a file gc called durable;
    ``F_FULLFSYNC`` asks the drive to write it down. It is used wherever ``fcntl`` has the
    constant, as SQLite does. Some filesystems (network shares, FAT) refuse it; then, and
    where the constant does not exist (Linux, Windows), plain ``fsync`` is the best there is.

    Raises:
        OSError: from ``fallback``, when even a plain fsync fails.
    """
    command = getattr(fcntl, "F_FULLFSYNC", None)
    if fcntl is not None and command is not None:
        try:
            fcntl.fcntl(fd, command)
        except OSError:
            pass
        else:
            return
    fallback(fd)
