"""Keep what a trim removes: append it to ``<memory file>.archive``, exactly once.

Whatever stops gc (SIGKILL, power loss, ENOSPC, EIO), the archive afterwards holds each
trim's removed prefix exactly once: archive + memory file == the log. Before the append an
intent record (``.<memory file>.archive.axe-gc-intent``) is written and flushed: the
archive's size before the append, and the removed prefix's length and SHA-256 with the
memory file's device and inode. It is removed once the trim is done, and otherwise settled
by the run's own failure or by the next gc of that file (under its lock, which every gc
holds while it archives and trims). Settling asks whether the memory file still holds the
prefix (same inode, same first bytes):

- gc stopped before the record was whole: the append had not started; the record (if
  any, unreadable) is removed and the archive is left as it is.
- after the record, before, during or after the append, before the rename: the memory
  file still holds the prefix, so the trim did not happen: the append, whole or cut, is
  undone (the archive truncated to its recorded size, or removed if this run created it),
  and the next trim archives its own prefix.
- after the rename, before the record was removed: the memory file no longer holds the
  prefix, and the rename follows only a flushed whole append: the archive is kept.

An append that is not whole (length and hash) is undone even when the memory file no
longer holds the prefix (a gc without ``--archive`` trimmed it since): a cut entry is never
kept. Nothing is guessed from the archive's tail: entries with the same bytes occur.

The archive holds the memory file's own bytes, so a new archive (and the record, which
holds their hash) gets the memory file's permissions (and owner, where allowed); an
existing archive keeps whatever mode it was given.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from attrs import asdict, frozen

from axe.adapters.memory.durable import (
    append_durably,
    copy_ownership,
    pread,
    remove_quietly,
    write_all,
)
from axe.adapters.memory.paths import archive_path, intent_path
from axe.adapters.shared.reading import open_regular

if TYPE_CHECKING:
    from axe.adapters.memory.platforms import HandledFile

_HASH_CHUNK = 1 << 20


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
    """Append ``removed`` (the memory file's first bytes; ``memory_status`` is the file as
    gc holds it open) to its archive, flushed, for a block that trims the memory file; if the
    append or the block fails, the archive is settled at once (undone unless the trim
    happened), or if even that fails, by the next gc.

    Raises:
        OSError: the archive or its record cannot be read or written; the memory file is
            untouched, and what was appended is taken back (as above).
    """
    settle_archive(file)
    record = _record_intent(file, removed, memory_status)
    try:
        append_durably(
            archive_path(file.path), removed, platform=file.platform, new_file_like=memory_status
        )
        if not record.archive_existed:
            file.platform.fsync_directory(file.path.parent)
        yield
    except BaseException:
        with contextlib.suppress(OSError):
            settle_archive(file)
        raise
    remove_quietly(intent_path(file.path))  # if it stays, the next gc keeps the archive


def settle_archive(file: HandledFile) -> None:
    """Finish what an archiving that did not end left behind (see the module docstring).

    Raises:
        OSError: the record, the memory file or the archive cannot be read, or the archive
            cannot be truncated; the record stays for the next gc.
    """
    record = intent_path(file.path)
    try:
        text = record.read_bytes()
    except FileNotFoundError:
        return
    intent = _parse(text)
    if intent is not None:
        archive = archive_path(file.path)
        memory_holds = _holds(file.path, intent, 0, same_file=True)
        if memory_holds or not _holds(archive, intent, intent.archive_size):
            _undo(file, intent)
    os.unlink(record)


def _record_intent(file: HandledFile, removed: bytes, memory_status: os.stat_result) -> Intent:
    try:
        fd, status = open_regular(archive_path(file.path))
    except FileNotFoundError:
        size, existed = 0, False
    else:
        os.close(fd)
        size, existed = status.st_size, True
    intent = Intent(
        archive_size=size,
        archive_existed=existed,
        length=len(removed),
        sha256=hashlib.sha256(removed).hexdigest(),
        device=memory_status.st_dev,
        inode=memory_status.st_ino,
    )
    record = intent_path(file.path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(record, flags | getattr(os, "O_BINARY", 0), 0o600)
    try:
        try:
            copy_ownership(fd, memory_status)
            write_all(fd, json.dumps(asdict(intent)).encode() + b"\n", write=file.platform.write)
            file.platform.fsync(fd)
        finally:
            os.close(fd)
        file.platform.fsync_directory(record.parent)
    except BaseException:
        remove_quietly(record)
        raise
    return intent


def _parse(text: bytes) -> Intent | None:
    """The record, or None if it is not whole: then it was cut while being written, before
    the append started (it is flushed before), so there is nothing to undo."""
    try:
        fields = json.loads(text)
        intent = Intent(**fields)
    except (ValueError, TypeError):
        return None
    numbers = (intent.archive_size, intent.length, intent.device, intent.inode)
    if not all(type(n) is int and n >= 0 for n in numbers) or not isinstance(intent.sha256, str):
        return None
    return intent


def _holds(path: Path, intent: Intent, offset: int, *, same_file: bool = False) -> bool:
    """Whether the file at ``path`` holds the recorded bytes at ``offset`` (and, with
    ``same_file``, is still the file the record names)."""
    try:
        fd, status = open_regular(path)
    except FileNotFoundError:
        return False
    try:
        if same_file and (status.st_dev, status.st_ino) != (intent.device, intent.inode):
            return False
        if status.st_size < offset + intent.length:
            return False
        digest = hashlib.sha256()
        end = offset + intent.length
        while offset < end and (chunk := pread(fd, min(_HASH_CHUNK, end - offset), offset)):
            digest.update(chunk)
            offset += len(chunk)
        return digest.hexdigest() == intent.sha256
    finally:
        os.close(fd)


def _undo(file: HandledFile, intent: Intent) -> None:
    """Give the archive back its size before the append (and its space on a full disk)."""
    archive = archive_path(file.path)
    if not intent.archive_existed:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(archive)
        file.platform.fsync_directory(archive.parent)
        return
    try:
        fd = os.open(archive, os.O_WRONLY | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return
    try:
        if os.fstat(fd).st_size > intent.archive_size:
            os.ftruncate(fd, intent.archive_size)
            file.platform.fsync(fd)
    finally:
        os.close(fd)
