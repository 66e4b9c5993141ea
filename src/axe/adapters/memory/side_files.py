"""Where a memory file really is, and the one way gc opens its own files beside it: never
through a link, never one another user owns. In a *shared* directory (group or others may
write it, or it is neither gc's user's nor root's) gc trusts only regular files its user owns
with one name, and follows no link; elsewhere links are followed, and the memory file owner's
files (gc gives them those it makes) trusted. Windows has access lists: nothing is shared.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple, Protocol

from attrs import frozen

from axe.adapters.memory.platforms import FilePlatform
from axe.adapters.shared.reading import open_regular
from axe.application.ports import Clock
from axe.domain.errors import AgentError

_OTHERS_WRITE = stat.S_IWGRP | stat.S_IWOTH
_MOST_LINKS = 40  # the kernel's own limit on the links in a path
_LARGEST_RECORD = 4096  # gc's records are about 200 bytes; anything much larger is none


class Shared(NamedTuple):
    """Why users other than gc's can change ``directory``, and what makes it private."""

    directory: Path
    why: str
    fix: str


@frozen
class Place:
    """A memory file's resolved path, its directory's sharing, whose files gc trusts there."""

    real: Path
    shared: Shared | None
    owners: frozenset[int] | None

    def check(self, path: Path, status: os.stat_result) -> None:
        """Raises AgentError unless gc may trust its own file at ``path`` (``status``)."""
        if self.owners is None:
            return
        if status.st_uid not in self.owners:
            why = f"belongs to another user (uid {status.st_uid})"
        elif self.shared and status.st_nlink > 1:
            why = f"has {status.st_nlink} names (hard links) in a directory others can write"
        else:
            return
        raise AgentError(
            f"{path} {why}, so gc does not trust it: remove it and run gc again; "
            "nothing was changed"
        )

    def mine(self, path: Path, status: os.stat_result) -> None:
        """Raises AgentError for another user's memory file ``path`` in a shared directory."""
        if (where := self.shared) is not None and status.st_uid != os.geteuid():
            raise AgentError(
                f"memory file {path} belongs to another user (uid {status.st_uid}), and "
                f"{where.directory} {where.why}: gc trims only its own files there "
                f"({where.fix}); nothing was changed"
            )

    def open_memory(self, flags: int = os.O_RDONLY) -> tuple[int, os.stat_result]:
        """The memory file itself, and its status (no link followed in a shared directory)."""
        return open_regular(self.real, nofollow=self.shared is not None, flags=flags)


class HandledFile(Protocol):
    """What the replace protocols and the archive need of a :class:`~.store.MemoryFile`."""

    path: Path
    platform: FilePlatform
    clock: Clock

    def place(self) -> Place: ...


def shared(directory: Path, platform: FilePlatform) -> Shared | None:
    """Whether others may add, replace or remove files in ``directory``."""
    try:
        status = os.stat(directory)
    except OSError:
        return None
    if platform.windows:
        return None
    if status.st_mode & _OTHERS_WRITE:  # a sticky one (/tmp) must stay writable
        sticky = status.st_mode & stat.S_ISVTX
        fix = f"use a memory.path outside {directory}" if sticky else f"run chmod go-w {directory}"
        return Shared(directory, "is writable by others", fix)
    if status.st_uid not in {os.geteuid(), 0}:
        why = f"belongs to another user (uid {status.st_uid})"
        return Shared(directory, why, "run gc as that user")
    return None


def follow(path: Path, platform: FilePlatform, what: str) -> tuple[Path, os.stat_result | None]:
    """``path`` with its links followed (AgentError for one in a shared directory), and the
    status of what it names (None: nothing)."""
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
                f"follows no link there ({where.fix}); nothing was changed"
            )
        path = Path(os.path.join(path.parent, os.readlink(path)))
    return path, status


def locate(path: Path, platform: FilePlatform) -> Place:
    """Where the memory file ``path`` really is, and the rules beside it. Raises AgentError
    for a link, or another user's file, in a shared directory, or a link there above it."""
    for ancestor in path.parents:  # whoever may swap one for a link chooses the file
        follow(ancestor, platform, "directory on the memory file's path")
    found, status = follow(path, platform, "memory file")
    real = Path(os.path.realpath(found.parent)) / found.name
    owners = None  # os.geteuid does not exist where files have no owners
    if not platform.windows:
        owners = frozenset({os.geteuid(), status.st_uid if status else os.geteuid()})
    place = Place(real, shared(real.parent, platform), owners)
    if status is not None:
        place.mine(path, status)
    return place


def open_side(
    path: Path, place: Place, flags: int = os.O_RDONLY, mode: int = 0o600
) -> tuple[int, os.stat_result]:
    """Open gc's own file at ``path`` beside ``place``: never through a link, only a regular
    file (else OSError), only one gc may trust (else AgentError)."""
    fd, status = open_regular(path, nofollow=True, flags=flags, mode=mode)
    try:
        place.check(path, status)
    except AgentError:
        os.close(fd)
        raise
    return fd, status


def create_new(path: Path, place: Place, flags: int = os.O_WRONLY) -> int:
    """A new file of gc's, private to its user (FileExistsError: a file or link is there)."""
    return open_side(path, place, flags | os.O_CREAT | os.O_EXCL)[0]


def read_fields(
    path: Path,
    place: Place,
    types: Mapping[str, tuple[type, ...]],
    optional: Mapping[str, tuple[type, ...]] | None = None,
) -> dict[str, Any] | None:
    """The fields of gc's record at ``path`` (raises as :func:`open_side`), or None unless it
    is one JSON object of gc's size with every field ``types`` names, no other but those of
    ``optional``, each of its types."""
    fd, _ = open_side(path, place)
    with os.fdopen(fd, "rb") as opened:
        text = opened.read(_LARGEST_RECORD + 1)
    try:
        fields = json.loads(text) if len(text) <= _LARGEST_RECORD else None
    except ValueError:  # UnicodeDecodeError and JSONDecodeError included
        return None
    allowed = {**types, **(optional or {})}
    if not isinstance(fields, dict) or not types.keys() <= fields.keys() <= allowed.keys():
        return None
    return fields if all(type(fields[k]) in allowed[k] for k in fields) else None
