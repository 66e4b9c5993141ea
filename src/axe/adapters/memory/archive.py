"""Keep what a trim removes: append it to ``<memory file>.archive``, exactly once.

Whatever stops gc (SIGKILL, power loss, ENOSPC, EIO), the archive afterwards holds each
trim's removed prefix exactly once: archive + memory file == the log. Before the append an
intent record (``.<memory file>.archive.axe-gc-intent``) is created and flushed: the
archive's size before the append, and the removed prefix's length and SHA-256 with the
memory file's device and inode. It is removed once the trim is done; otherwise the run's own
failure, or the next gc of that file under its lock, settles it by whether the memory file
still holds the prefix (same inode, same first bytes):

- the record is not whole: it was cut before the append began; it goes, the archive stays;
- the memory file still holds the prefix: the trim did not happen, so the append, whole or
  cut, is undone (the archive truncated to its recorded size, or removed if gc made it);
- otherwise the trim happened, after a flushed whole append: the archive is kept, unless it
  does not hold the whole append there (a cut entry is never kept).

Nothing is guessed from the archive's tail: entries with the same bytes occur. The archive
is followed through a link only outside a shared directory (a dangling link creates its
target; the link stays), and only one gc may trust is appended to (:mod:`.side_files`). A
new archive gets the memory file's permissions and owner; an existing one keeps its own.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

import attrs
from attrs import frozen

from axe.adapters.memory.durable import copy_ownership, pread, remove_quietly, write_all
from axe.adapters.memory.paths import archive_path, intent_path
from axe.adapters.memory.side_files import (
    HandledFile,
    Place,
    create_new,
    follow,
    open_side,
    shared,
)
from axe.adapters.shared.reading import describe_os_error, open_regular
from axe.domain.errors import AgentError

_HASH_CHUNK = 1 << 20
_LARGEST_RECORD = 4096  # a record is about 200 bytes


@frozen
class Intent:
    """What one append is about to do, recorded before it starts."""

    archive_size: int
    archive_existed: bool
    length: int
    sha256: str
    device: int
    inode: int


@contextlib.contextmanager
def archiving(file: HandledFile, removed: bytes, memory_status: os.stat_result) -> Iterator[None]:
    """Append ``removed`` (the memory file's first bytes; ``memory_status``, the file as gc
    holds it open) to its archive, flushed, for a block that trims the memory file; if the
    append or the block fails, settle at once (undone unless the trim happened), or if even
    that fails, by the next gc.

    Raises:
        OSError: the archive or its record cannot be read or written; the memory file is
            untouched, and what was appended is taken back.
        AgentError: the archive is one gc does not trust; nothing was changed.
    """
    settle_archive(file)
    archive, place = archive_at(file)
    fd, size, created = _open_archive(file, archive, place, memory_status)
    intent = Intent(
        archive_size=size,
        archive_existed=not created,
        length=len(removed),
        sha256=hashlib.sha256(removed).hexdigest(),
        device=memory_status.st_dev,
        inode=memory_status.st_ino,
    )
    try:
        _record(file, intent, memory_status)
    except BaseException:
        os.close(fd)
        if created:
            remove_quietly(archive)  # nothing was appended to it
        raise
    try:
        try:
            write_all(fd, removed, write=file.platform.write)
            file.platform.fsync(fd)
            if created:
                file.platform.fsync_directory(archive.parent)
        finally:
            os.close(fd)
        yield
    except BaseException:
        with contextlib.suppress(OSError, AgentError):
            settle_archive(file)
        raise
    remove_quietly(intent_path(file.path))  # if it stays, the next gc keeps the archive


def archive_at(file: HandledFile) -> tuple[Path, Place]:
    """Where the archive of ``file`` really is, and the rules it is opened by: the memory
    file's owners, its own directory's sharing.

    Raises:
        AgentError: it is a link in a shared directory, or the memory file is refused.
    """
    place = file.place()
    found, _ = follow(archive_path(file.path), file.platform, "archive")
    real = Path(os.path.realpath(found.parent)) / found.name
    return real, attrs.evolve(place, shared=shared(real.parent, file.platform))


def _open_archive(
    file: HandledFile, archive: Path, place: Place, memory_status: os.stat_result
) -> tuple[int, int, bool]:
    """The archive open for appending, its size, and whether this made it.

    Raises:
        OSError: it cannot be opened or made (a dangling link's target said so).
        AgentError: gc does not trust it.
    """
    flags = os.O_WRONLY | os.O_APPEND
    try:
        fd = create_new(archive, flags)
    except FileExistsError:
        fd, status = open_side(archive, place, flags)
        return fd, status.st_size, False
    except OSError as error:
        if archive == archive_path(file.path):
            raise
        why = describe_os_error(error)
        raise OSError(
            error.errno, f"it is a dangling link to {archive}, which cannot be created ({why})"
        ) from None
    try:
        copy_ownership(fd, memory_status)
    except BaseException:
        os.close(fd)
        remove_quietly(archive)
        raise
    return fd, 0, True


def _record(file: HandledFile, intent: Intent, memory_status: os.stat_result) -> None:
    """Create the intent record, exactly as private as the memory file, and flush it.

    Raises:
        OSError: it cannot be written (none is left), or something is at its name already.
    """
    record = intent_path(file.path)
    try:
        fd = create_new(record)
    except FileExistsError:
        made = f"{record} was made by another program while gc ran"
        raise FileExistsError(errno.EEXIST, made) from None
    try:
        try:
            copy_ownership(fd, memory_status)
            write_all(
                fd, json.dumps(attrs.asdict(intent)).encode() + b"\n", write=file.platform.write
            )
            file.platform.fsync(fd)
        finally:
            os.close(fd)
        file.platform.fsync_directory(record.parent)
    except BaseException:
        remove_quietly(record)
        raise


def settle_archive(file: HandledFile) -> None:
    """Finish what an archiving that did not end left behind (see the module docstring).

    Raises:
        OSError: the record, the memory file or the archive cannot be read, or the archive
            cannot be given back its size; the record stays for the next gc.
        AgentError: the record or the archive is one gc does not trust; nothing was changed.
    """
    record, place = intent_path(file.path), file.place()
    try:
        fd, _ = open_side(record, place)
    except FileNotFoundError:
        return
    with os.fdopen(fd, "rb") as opened:
        intent = _parse(opened.read(_LARGEST_RECORD))
    if intent is not None:
        archive, archive_place = archive_at(file)
        memory_holds = _holds(place.real, None, intent, 0)
        if memory_holds or not _holds(archive, archive_place, intent, intent.archive_size):
            _undo(file, archive, archive_place, intent)
    os.unlink(record)


def _parse(text: bytes) -> Intent | None:
    """The record, or None if it is not whole: then it was cut while being written, before
    the append started (it is flushed before), so there is nothing to undo."""
    try:
        intent = Intent(**json.loads(text))
    except (ValueError, TypeError):
        return None
    numbers = (intent.archive_size, intent.length, intent.device, intent.inode)
    if not all(type(n) is int and n >= 0 for n in numbers) or not isinstance(intent.sha256, str):
        return None
    return intent


def _holds(path: Path, place: Place | None, intent: Intent, offset: int) -> bool:
    """Whether the file at ``path`` holds the recorded bytes at ``offset``: the archive
    (gc's own, by ``place``), or (``place`` None) the memory file the record names."""
    try:
        fd, status = open_regular(path) if place is None else open_side(path, place)
    except FileNotFoundError:
        return False
    try:
        if place is None and (status.st_dev, status.st_ino) != (intent.device, intent.inode):
            return False
        if status.st_size < offset + intent.length:
            return False
        digest, end = hashlib.sha256(), offset + intent.length
        while offset < end and (chunk := pread(fd, min(_HASH_CHUNK, end - offset), offset)):
            digest.update(chunk)
            offset += len(chunk)
        return digest.hexdigest() == intent.sha256
    finally:
        os.close(fd)


def _undo(file: HandledFile, archive: Path, place: Place, intent: Intent) -> None:
    """Give the archive back its size before the append (and its space on a full disk): an
    archive that never grew needs no write, so a read-only or immutable one settles too."""
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
