"""Where Linux, macOS and Windows differ for a memory file, as one value the file is handed
(not ``sys.platform`` asked at each step), so tests run every branch on Linux by substitution.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import importlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Protocol

import attrs


class FcntlModule(Protocol):
    """The part of the ``fcntl`` module a full fsync uses (absent on Windows)."""

    def fcntl(self, fd: int, cmd: int, arg: int = 0, /) -> int: ...


class ReadLeases:
    """Linux read leases, granted only while nobody has the file open for writing. Breaking
    one sends SIGIO, which kills: the main thread ignores it while it holds one; another
    thread leases only where SIGIO is ignored for good (``axe gc`` ignores it at start)."""

    def __init__(self, *, usable: bool = True) -> None:
        self.usable = usable
        self._sigio = threading.Lock()  # held while the main thread ignores SIGIO for a while

    @contextlib.contextmanager
    def held(self, fd: int) -> Iterator[Callable[[], bool] | None]:
        """A read lease on ``fd`` for the block: yields a check that it is held unbroken,
        or None where none can be had here."""
        main = threading.current_thread() is threading.main_thread()
        with self._sigio:  # so another thread never takes the main one's SIG_IGN for good
            if not self.usable or (not main and signal.getsignal(signal.SIGIO) != signal.SIG_IGN):
                yield None
                return
            import fcntl  # noqa: PLC0415  (POSIX only: this module is imported on Windows too)

            def unbroken() -> bool:
                return held and fcntl.fcntl(fd, fcntl.F_GETLEASE) == fcntl.F_RDLCK

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


@attrs.frozen
class FilePlatform:
    """How the system ``name`` treats files. Windows refuses to rename over an open file, has
    no directory fsync, turns signal 0 into a Ctrl-C, and has access lists, not owners."""

    name: str
    fsync: Callable[[int], None]
    leases: ReadLeases = attrs.field(factory=lambda: ReadLeases(usable=False))
    replace: Callable[[Path, Path], None] = os.replace
    link: Callable[[Path, Path], None] = os.link
    write: Callable[[int, memoryview], int] = os.write

    @property
    def windows(self) -> bool:
        return self.name == "win32"

    def fsync_directory(self, directory: Path) -> None:
        """Make a rename or a new file in ``directory`` durable, where the system can."""
        if self.windows:
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
        """Whether the process ``pid_text`` names may still run (always, on Windows)."""
        if self.windows or not pid_text.isdigit():
            return self.windows
        try:
            os.kill(int(pid_text), 0)  # signal 0 only asks
        except ProcessLookupError:
            return False
        except OSError:  # PermissionError included: someone else's live process
            pass
        return True


def platform_for(
    name: str, *, fcntl: FcntlModule | None, fsync: Callable[[int], None] = os.fsync
) -> FilePlatform:
    """The rules of the system ``sys.platform`` calls ``name``: a flush is ``F_FULLFSYNC``
    where ``fcntl`` has it (macOS's ``fsync`` stops at the drive's volatile cache), else, or
    where refused, ``fsync``."""
    full = getattr(fcntl, "F_FULLFSYNC", None)

    def flush(fd: int) -> None:
        if fcntl is not None and full is not None:
            with contextlib.suppress(OSError):
                fcntl.fcntl(fd, full)
                return
        fsync(fd)

    return FilePlatform(name, flush, ReadLeases(usable=name.startswith("linux")))


@functools.cache
def current_platform() -> FilePlatform:
    """The rules of the system this process runs on: one value per process."""
    fcntl = None if sys.platform == "win32" else importlib.import_module("fcntl")
    return platform_for(sys.platform, fcntl=fcntl)
