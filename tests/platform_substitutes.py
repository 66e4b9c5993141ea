"""Other systems' file rules enforced on Linux, so every platform branch of the trim runs here.

``WindowsRules`` gives ``os.replace`` and ``os.link`` Windows' refusal to touch a file that
any handle holds open. It does not trust the code under test to say what it has open: it
looks at the real descriptors in ``/proc/<pid>/fd`` (this process and any watched ones), so
a handle the trim forgot to close is caught wherever it was opened. ``RecordingFcntl``
stands in for macOS's ``fcntl`` module and notes which file each call was made on.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Iterable
from pathlib import Path

import attrs

from axe.adapters.memory.platforms import FilePlatform, platform_for


class SharingViolationError(PermissionError):
    """What Windows raises for a file in use: ERROR_SHARING_VIOLATION (winerror 32)."""

    winerror = 32

    def __init__(self, path: Path) -> None:
        super().__init__(
            errno.EACCES,
            "The process cannot access the file because it is being used by another process",
            str(path),
        )


class LinksUnsupportedError(OSError):
    """What creating a hard link gives on FAT and some network shares."""

    winerror = 1

    def __init__(self, path: Path) -> None:
        super().__init__(errno.EINVAL, "Incorrect function", str(path))


def descriptors_on(path: Path, pids: Iterable[int]) -> list[str]:
    """``pid:fd`` of every descriptor in ``pids`` open on the file at ``path`` (by any of
    its names, as Windows counts handles per file)."""
    try:
        wanted = os.stat(path)
    except FileNotFoundError:
        return []
    found = []
    for pid in pids:
        directory = f"/proc/{pid}/fd"
        try:
            names = os.listdir(directory)
        except OSError:
            continue
        for name in names:
            try:
                status = os.stat(f"{directory}/{name}")
            except OSError:
                continue
            if (status.st_dev, status.st_ino) == (wanted.st_dev, wanted.st_ino):
                found.append(f"{pid}:{name}")
    return found


class Holder:
    """Another program with the file open: a virus scanner, or an ``axe run`` about to
    append. It lets go after the file has been refused to gc ``refusals`` times (never when
    None), writing ``then_writes`` first if it is a writer."""

    def __init__(
        self, path: Path, *, refusals: int | None, then_writes: bytes | None = None
    ) -> None:
        self.fd: int | None = os.open(path, os.O_WRONLY | os.O_APPEND)
        self.refusals = refusals
        self.then_writes = then_writes

    def refused(self, count: int) -> None:
        if self.refusals is not None and count >= self.refusals:
            self.let_go()

    def let_go(self) -> None:
        if self.fd is not None:
            if self.then_writes:
                os.write(self.fd, self.then_writes)
            os.close(self.fd)
            self.fd = None


class WindowsRules:
    """``os.replace`` and ``os.link`` that refuse, as Windows does, while any descriptor in
    this process or in ``watched`` ones is open on a file they would touch.

    ``on_call("link" | "replace")`` runs just before each call is judged (an ``axe run``
    appending at that instant); ``links=False`` is a filesystem without hard links.
    """

    def __init__(
        self,
        *,
        holder: Holder | None = None,
        watched: Iterable[int] = (),
        on_call: Callable[[str], None] | None = None,
        links: bool = True,
    ) -> None:
        self.holder = holder
        self.pids = [os.getpid(), *watched]
        self.on_call = on_call
        self.links = links
        self.refusals = 0
        self.replaced = 0

    def platform(self, base: str = "win32") -> FilePlatform:
        """Windows' rules with these calls (``base`` lets a test hold another branch to them)."""
        rules = platform_for(base, fcntl=None)
        return attrs.evolve(rules, replace=self.replace, link=self.link)

    def replace(self, source: Path, target: Path) -> None:
        self._judge("replace", source, target)
        os.replace(source, target)
        self.replaced += 1

    def link(self, source: Path, target: Path) -> None:
        self._judge("link", source)
        if not self.links:
            raise LinksUnsupportedError(target)
        os.link(source, target)

    def _judge(self, call: str, *paths: Path) -> None:
        if self.on_call is not None:
            self.on_call(call)
        if any(descriptors_on(path, self.pids) for path in paths):
            self.refusals += 1
            if self.holder is not None:
                self.holder.refused(self.refusals)
            raise SharingViolationError(paths[-1])


class RecordingFcntl:
    """An ``fcntl`` module that notes the file and command of every call; with
    ``full_fsync`` it has macOS's ``F_FULLFSYNC``, with ``fails`` every call is refused
    (as on a network share)."""

    F_FULLFSYNC: int

    def __init__(self, *, full_fsync: bool, fails: bool = False) -> None:
        if full_fsync:
            self.F_FULLFSYNC = 51  # its value on macOS
        self.fails = fails
        self.calls: list[tuple[str, int]] = []

    def fcntl(self, fd: int, cmd: int, arg: int = 0, /) -> int:
        self.calls.append((os.readlink(f"/proc/self/fd/{fd}"), cmd))
        if self.fails:
            raise OSError(errno.ENOTSUP, "Operation not supported")
        return 0


class RecordingFsync:
    """``os.fsync`` that notes the file of every call."""

    def __init__(self) -> None:
        self.paths: list[str] = []

    def __call__(self, fd: int) -> None:
        self.paths.append(os.readlink(f"/proc/self/fd/{fd}"))
        os.fsync(fd)
