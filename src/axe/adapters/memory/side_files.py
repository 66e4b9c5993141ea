"""Where a memory file really is, and the one way gc opens its own files beside it (the lock,
the ``--skip-unchanged`` record, the archive's intent record, the archive, temp files), so
that whoever else can write the directory can neither make gc write into a file of their
choosing nor feed it a file of theirs:

- never through a symbolic link: opened with ``O_NOFOLLOW``, created exclusively, or
  written to a temp file renamed into place;
- never trusted when another user owns it: refused in one line naming it (remove it).

A directory is *shared* when group or others may write to it, or it belongs to a user other
than gc's and root. There gc trusts only regular files its user owns with no other name
(a hard link), and follows no link, the memory file's own included. Elsewhere links are
followed, and gc also trusts files of the memory file's owner, whom it gives the files it
makes. Where permissions are access lists (Windows), no directory is shared and no owner is
checked.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import NamedTuple, Protocol

from attrs import frozen

from axe.adapters.memory.platforms import FilePlatform
from axe.adapters.shared.reading import open_regular
from axe.application.ports import Clock
from axe.domain.errors import AgentError

_OTHERS_WRITE = stat.S_IWGRP | stat.S_IWOTH
_MOST_LINKS = 40  # as the kernel's own limit on a path's links
NOTHING_CHANGED = "; nothing was changed"


class Shared(NamedTuple):
    """Why users other than gc's can change a directory's files, and what makes it private."""

    directory: Path
    why: str
    fix: str


@frozen
class Place:
    """A memory file's resolved path (``real``), whether its directory is :class:`Shared`,
    and whose side files gc trusts there (``owners``; None where there are no owners)."""

    real: Path
    shared: Shared | None
    owners: frozenset[int] | None

    def check(self, path: Path, status: os.stat_result) -> None:
        """Refuse the side file at ``path`` (``status``, as opened) unless gc may trust it.

        Raises:
            AgentError: another user owns it, or it has another name in a shared directory.
        """
        if self.owners is None:
            return
        if status.st_uid not in self.owners:
            why = f"belongs to another user (uid {status.st_uid})"
        elif self.shared and status.st_nlink > 1:
            why = f"has {status.st_nlink} names (hard links) in a directory others can write"
        else:
            return
        raise AgentError(
            f"{path} {why}, so gc does not trust it: remove it and run gc again{NOTHING_CHANGED}"
        )


class HandledFile(Protocol):
    """What the replace protocols and the archive need of a :class:`~.file.MemoryFile`
    (which they may not import: it imports them)."""

    @property
    def path(self) -> Path: ...

    @property
    def platform(self) -> FilePlatform: ...

    @property
    def clock(self) -> Clock: ...

    def place(self) -> Place: ...


def shared(directory: Path, platform: FilePlatform) -> Shared | None:
    """Whether users other than gc's may add, replace or remove files in ``directory``
    (see the module docstring); one that cannot be looked at is not (nothing opens in it)."""
    if not platform.owners:
        return None
    try:
        status = os.stat(directory)
    except OSError:
        return None
    if status.st_mode & _OTHERS_WRITE:
        return Shared(directory, "is writable by others", f"run chmod go-w {directory}")
    if status.st_uid not in {os.geteuid(), 0}:
        why = f"belongs to another user (uid {status.st_uid})"
        return Shared(directory, why, "run gc as that user")
    return None


def follow(path: Path, platform: FilePlatform, what: str) -> tuple[Path, os.stat_result | None]:
    """``path`` with its links followed, and the status of what it names (None: nothing).

    Raises:
        AgentError: a link on the way lies in a shared directory (``what`` names the file).
    """
    for _ in range(_MOST_LINKS):
        try:
            status = os.lstat(path)
        except OSError:
            return path, None
        if not stat.S_ISLNK(status.st_mode):
            return path, status
        if (where := shared(path.parent, platform)) is not None:
            raise AgentError(
                f"{what} {path} is a symbolic link, and {where.directory} {where.why}: gc "
                f"follows no link there ({where.fix}){NOTHING_CHANGED}"
            )
        path = Path(os.path.join(path.parent, os.readlink(path)))
    return path, status


def locate(path: Path, platform: FilePlatform) -> Place:
    """Where the memory file ``path`` really is, and the rules beside it.

    Raises:
        AgentError: it is a link in a shared directory, or another user's file in one.
    """
    found, status = follow(path, platform, "memory file")
    real = Path(os.path.realpath(found.parent)) / found.name
    where = shared(real.parent, platform)
    if status is not None:
        check_own(path, status, where)
    if not platform.owners:
        return Place(real, where, None)
    owners = {os.geteuid()} if status is None else {os.geteuid(), status.st_uid}
    return Place(real, where, frozenset(owners))


def check_own(path: Path, status: os.stat_result, where: Shared | None) -> None:
    """Refuse the memory file ``path`` (``status``) in a shared directory unless it is gc's
    user's own.

    Raises:
        AgentError: it is not.
    """
    if where is not None and status.st_uid != os.geteuid():
        raise AgentError(
            f"memory file {path} belongs to another user (uid {status.st_uid}), and "
            f"{where.directory} {where.why}: gc trims only its own files there "
            f"({where.fix}){NOTHING_CHANGED}"
        )


def open_side(
    path: Path, place: Place, flags: int = os.O_RDONLY, mode: int = 0o600
) -> tuple[int, os.stat_result]:
    """Open gc's own file at ``path`` beside the memory file at ``place``: never through a
    link, only a regular file, only one gc may trust (:meth:`Place.check`).

    Raises:
        OSError: as :func:`~axe.adapters.shared.reading.open_regular` with ``nofollow``.
        AgentError: gc does not trust it (the descriptor is closed).
    """
    fd, status = open_regular(path, nofollow=True, flags=flags, mode=mode)
    try:
        place.check(path, status)
    except AgentError:
        os.close(fd)
        raise
    return fd, status


def create_new(path: Path, flags: int = os.O_WRONLY) -> int:
    """A new file at ``path``, private to gc's user, never one already there (nor a link).

    Raises:
        OSError: it exists, or cannot be made.
    """
    flags |= os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    return os.open(path, flags | getattr(os, "O_NOFOLLOW", 0), 0o600)
