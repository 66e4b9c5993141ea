"""Where Linux, macOS and Windows differ for a memory file, as one value the file is handed.

The POSIX way to replace a file (:mod:`.durable`) renames over it while others hold it open,
fsyncs the directory, probes a process with signal 0, and (Linux) leases the old file to
learn when its last writer has gone. Windows refuses the first (a sharing violation), so
there the file is replaced by :mod:`.closed_replace`; it cannot do the second and turns the
third into a Ctrl-C. macOS's ``fsync`` stops at the drive's volatile cache. A
:class:`~.file.MemoryFile` is handed a :class:`FilePlatform` instead of asking
``sys.platform`` at each step, so the tests run every branch on Linux by substituting one:
a filesystem shim with Windows' rule, or a recording ``fcntl``.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from attrs import frozen

if TYPE_CHECKING:
    from axe.adapters.memory.releases import LaterReleases
    from axe.application.ports import Clock


class FcntlModule(Protocol):
    """The part of the ``fcntl`` module a full fsync uses (absent on Windows)."""

    def fcntl(self, fd: int, cmd: int, arg: int = 0, /) -> int: ...


class HandledFile(Protocol):
    """What the replace protocols and the archive need of a memory file (a
    :class:`~.file.MemoryFile`, which they may not import: it imports them): where it is
    (``real``: every symlink resolved), the rules of its platform, and the run's clock."""

    @property
    def path(self) -> Path: ...

    @property
    def real(self) -> Path: ...

    @property
    def platform(self) -> FilePlatform: ...

    @property
    def clock(self) -> Clock: ...

    @property
    def releases(self) -> LaterReleases | None: ...

    def remove_abandoned_temps(self) -> None: ...


@frozen
class FilePlatform:
    """How one operating system's files behave, where replacing a memory file must care
    (see the module docstring): whether renaming over an open file fails
    (``replace_needs_closed_files``: then :mod:`.closed_replace` replaces it), whether
    ``kill(pid, 0)`` may probe a pid (``probe_processes``) and a directory be fsynced
    (``fsync_directories``); its flush (:func:`full_fsync`) and Linux's read ``leases``; and
    the seams tests take: ``replace`` and ``link`` (the Windows shim), ``write`` for appends
    (to fill the disk, ENOSPC, or fail it, EIO, in the middle of one).
    """

    name: str
    replace_needs_closed_files: bool
    probe_processes: bool
    fsync_directories: bool
    fsync: Callable[[int], None]
    leases: ReadLeases | None = None
    replace: Callable[[Path, Path], None] = os.replace
    link: Callable[[Path, Path], None] = os.link
    write: Callable[[int, memoryview], int] = os.write

    def lease(self, fd: int) -> AbstractContextManager[Callable[[], bool] | None]:
        """A read lease on ``fd`` for a block (see :meth:`ReadLeases.held`); None where the
        platform has none."""
        return self.leases.held(fd) if self.leases else contextlib.nullcontext(None)

    def fsync_directory(self, directory: Path) -> None:
        """Make a rename or a new file in ``directory`` durable, where the platform allows."""
        if not self.fsync_directories:
            return
        try:
            fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        except OSError:
            return
        try:
            self.fsync(fd)
        except OSError as error:
            if error.errno not in {errno.EINVAL, errno.ENOTSUP, errno.EBADF}:
                raise
        finally:
            os.close(fd)

    def may_be_running(self, pid_text: str) -> bool:
        """Whether the process ``pid_text`` names may still run: always, where processes
        cannot be probed (Windows)."""
        if not self.probe_processes:
            return True
        if not pid_text.isdigit():
            return False
        try:
            os.kill(int(pid_text), 0)  # signal 0 only asks
        except ProcessLookupError:
            return False
        except OSError:  # PermissionError included: someone else's live process
            pass
        return True


class ReadLeases:
    """Linux read leases: one is granted only while nobody has the file open for writing,
    and is broken as soon as a writer opens it, so holding one unbroken proves the last
    writer of a replaced file is gone.

    Breaking a lease sends its holder SIGIO, whose default action kills the process: the
    main thread ignores SIGIO while it holds a lease; another thread cannot change signal
    handling, so it leases only if SIGIO is ignored already (``axe gc`` ignores it at start,
    as an embedding program can). The platform value is one per process, so its one lock
    keeps the main thread from restoring SIGIO while another thread holds a lease.
    """

    def __init__(self) -> None:
        self._sigio = threading.Lock()

    @contextlib.contextmanager
    def held(self, fd: int) -> Iterator[Callable[[], bool] | None]:
        """A read lease on ``fd`` for the block. Yields a check that it is held and
        unbroken (False from the start if a writer had the file open), or None where no
        lease can be had here (this thread may not ignore SIGIO, or the filesystem has no
        leases): then the caller watches the file's size instead."""
        main = threading.current_thread() is threading.main_thread()
        if not main and signal.getsignal(signal.SIGIO) != signal.SIG_IGN:
            yield None
            return
        import fcntl  # noqa: PLC0415  (POSIX only)

        def unbroken() -> bool:
            return held and fcntl.fcntl(fd, fcntl.F_GETLEASE) == fcntl.F_RDLCK

        with self._sigio:
            previous = signal.signal(signal.SIGIO, signal.SIG_IGN) if main else None
            try:
                fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_RDLCK)
            except OSError as error:  # EAGAIN: a writer has the file open
                held, usable = False, error.errno in {errno.EAGAIN, errno.EBUSY}
            else:
                held = usable = True
            try:
                yield unbroken if usable else None
            finally:
                if held:
                    fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_UNLCK)
                if main:
                    signal.signal(signal.SIGIO, previous)


def platform_for(
    name: str, *, fcntl: FcntlModule | None, fsync: Callable[[int], None] = os.fsync
) -> FilePlatform:
    """The rules for the system ``sys.platform`` calls ``name``, with its ``fcntl`` module
    (None where there is none) and plain ``fsync`` as the flush of last resort."""
    windows = name == "win32"
    return FilePlatform(
        name=name,
        replace_needs_closed_files=windows,
        probe_processes=not windows,
        fsync_directories=not windows,
        fsync=functools.partial(full_fsync, fcntl=fcntl, fallback=fsync),
        leases=ReadLeases() if name.startswith("linux") else None,
    )


@functools.cache
def current_platform() -> FilePlatform:
    """The rules of the system this process runs on: one value per process."""
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
        with contextlib.suppress(OSError):
            fcntl.fcntl(fd, command)
            return
    fallback(fd)
