"""``--archive``: what a trim removes goes to ``<memory file>.archive``, exactly once whatever
stops gc. An intent record (the archive's size, the removed bytes' length and SHA-256, the
memory file's inode) is flushed before the append and removed after the trim. A trim that
fails before its rename gives the append back at once; a record a stopped gc left is settled
under the next gc's lock: the append is undone if the memory file still holds the removed
bytes (no trim), else kept if whole. A new archive gets the memory file's permissions and owner.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import typing
from collections.abc import Iterator
from pathlib import Path

import attrs

from axe.adapters.memory import durable
from axe.adapters.memory.durable import SourceFile
from axe.adapters.memory.paths import archive_path, intent_path
from axe.adapters.memory.side_files import (
    HandledFile,
    Place,
    create_new,
    follow,
    open_side,
    read_fields,
    shared,
)
from axe.adapters.shared.reading import describe_os_error
from axe.domain.errors import AgentError


@attrs.frozen
class Intent:
    """What one append is about to do, recorded before it starts."""

    archive_size: int
    archive_existed: bool
    length: int
    sha256: str
    device: int
    inode: int


_TYPES = {name: (kind,) for name, kind in typing.get_type_hints(Intent).items()}


@contextlib.contextmanager
def archiving(file: HandledFile, removed: bytes, source: SourceFile) -> Iterator[None]:
    """Append ``removed`` to the archive, flushed, for a block that trims ``source``; given
    back if either fails before the rename (OSError, AgentError)."""
    archive, archive_place = archive_at(file)
    fd, size, made = _open_archive(file, archive, archive_place)
    status, digest = source.status, hashlib.sha256(removed).hexdigest()
    intent = Intent(size, not made, len(removed), digest, status.st_dev, status.st_ino)
    recorded = False
    try:
        try:
            if made:
                durable.copy_ownership(fd, status)
            _record(file, intent, status)
            recorded = True
            durable.write_all(fd, removed, write=file.platform.write)
            file.platform.fsync(fd)
            if made:
                file.platform.fsync_directory(archive.parent)
        finally:
            os.close(fd)
        yield
    except BaseException:
        with contextlib.suppress(OSError, AgentError):  # else the next gc settles it
            if not source.renamed:
                _undo(file, archive, archive_place, intent)
            if recorded:
                os.unlink(intent_path(file.path))
        raise
    durable.remove_quietly(intent_path(file.path))  # if it stays, the next gc keeps the archive


def archive_at(file: HandledFile) -> tuple[Path, Place]:
    """Where the archive really is, and its rules (AgentError: a link in a shared directory)."""
    found, _ = follow(archive_path(file.path), file.platform, "archive")
    real = Path(os.path.realpath(found.parent)) / found.name
    return real, attrs.evolve(file.place(), shared=shared(real.parent, file.platform))


def _open_archive(file: HandledFile, archive: Path, place: Place) -> tuple[int, int, bool]:
    """The archive open for appending, its size, and whether this made it."""
    try:
        return create_new(archive, place, os.O_WRONLY | os.O_APPEND), 0, True
    except FileExistsError:
        fd, status = open_side(archive, place, os.O_WRONLY | os.O_APPEND)
        return fd, status.st_size, False
    except OSError as error:
        if not os.path.islink(archive_path(file.path)):
            raise
        why = f"it is a dangling link to {archive}, which cannot be created"
        raise OSError(error.errno, f"{why} ({describe_os_error(error)})") from None


def _record(file: HandledFile, intent: Intent, memory_status: os.stat_result) -> None:
    """Create the intent record, as private as the memory file, flushed (OSError: none)."""
    record, text = intent_path(file.path), json.dumps(attrs.asdict(intent)) + "\n"
    try:
        with durable.new_file(record, file.place()) as fd:
            durable.copy_ownership(fd, memory_status)
            durable.write_all(fd, text.encode(), write=file.platform.write)
            file.platform.fsync(fd)
            file.platform.fsync_directory(record.parent)
    except FileExistsError:
        made = f"{record} was made by another program while gc ran"
        raise FileExistsError(errno.EEXIST, made) from None


def settle_archive(file: HandledFile) -> None:
    """Settle what a stopped archiving left (see the module docstring). Raises OSError (the
    record stays), or AgentError for a record or archive gc does not trust."""
    record, place = intent_path(file.path), file.place()
    try:
        fields = read_fields(record, place, _TYPES)
    except FileNotFoundError:
        return
    intent = Intent(**fields) if fields else None  # None: cut short, so no append began
    if intent and min(intent.archive_size, intent.length, intent.device, intent.inode) >= 0:
        archive, archive_place = archive_at(file)
        untrimmed = _holds(place, None, intent)
        if untrimmed or not _holds(archive_place, archive, intent):
            _undo(file, archive, archive_place, intent)
    os.unlink(record)


def _holds(place: Place, archive: Path | None, intent: Intent) -> bool:
    """Whether the archive (None: the memory file) holds the recorded bytes where they were."""
    try:
        fd, status = place.open_memory() if archive is None else open_side(archive, place)
    except FileNotFoundError:
        return False
    try:
        if archive is None and (status.st_dev, status.st_ino) != (intent.device, intent.inode):
            return False
        offset = 0 if archive is None else intent.archive_size
        digest, end = hashlib.sha256(), offset + intent.length
        if status.st_size < end:
            return False
        while offset < end and (chunk := durable.pread(fd, min(1 << 20, end - offset), offset)):
            digest.update(chunk)
            offset += len(chunk)
        return digest.hexdigest() == intent.sha256
    finally:
        os.close(fd)


def _undo(file: HandledFile, archive: Path, place: Place, intent: Intent) -> None:
    """Give the archive back its size: one that never grew needs no write (so a read-only
    or immutable one settles too)."""
    try:
        fd, status = open_side(archive, place)
    except FileNotFoundError:
        return
    os.close(fd)
    if not intent.archive_existed:
        os.unlink(archive)
        file.platform.fsync_directory(archive.parent)
    elif status.st_size > intent.archive_size:
        fd, _ = open_side(archive, place, os.O_WRONLY)
        try:
            os.ftruncate(fd, intent.archive_size)
            file.platform.fsync(fd)
        finally:
            os.close(fd)
