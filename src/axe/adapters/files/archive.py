"""Keep what a trim removes: append it to ``<memory file>.archive``, exactly once.

The archive is written and fsynced *before* the trimmed file replaces the original, so a
crash in between leaves both the original and an archive that already holds the removed
prefix. The rerun recognises that: if the archive already ends with the first k removed
entries (k as large as possible), only the rest is appended.

The archive holds the memory file's own bytes, so a new archive gets the memory file's
permissions (and owner, where allowed); an existing one keeps whatever mode it was given.
"""

from __future__ import annotations

import os
from pathlib import Path

from axe.adapters.files.durable import append_durably, fsync_directory, pread
from axe.adapters.files.platforms import FilePlatform, current_platform
from axe.adapters.files.reading import open_regular
from axe.domain.entries import entry_starts


def archive_path(memory_path: Path) -> Path:
    return memory_path.with_name(memory_path.name + ".archive")


def archive_removed(
    path: Path,
    removed: bytes,
    *,
    memory_status: os.stat_result | None = None,
    platform: FilePlatform | None = None,
) -> None:
    """Append ``removed`` to the archive at ``path`` unless a crashed run already did.

    A new archive is created like the file ``memory_status`` describes (0600 without it).

    Raises:
        OSError: the archive cannot be read or written; the memory file is untouched.
    """
    if not removed:
        return
    platform = current_platform() if platform is None else platform
    existed = path.exists()
    already = _already_archived(path, removed) if existed else 0
    if already < len(removed):
        append_durably(path, removed[already:], platform=platform, new_file_like=memory_status)
    if not existed:
        fsync_directory(path.parent, platform=platform)


def _already_archived(path: Path, removed: bytes) -> int:
    """How many leading bytes of ``removed`` (a whole number of entries) end the archive."""
    try:
        fd, status = open_regular(path)
    except FileNotFoundError:
        return 0
    try:
        span = min(status.st_size, len(removed))
        tail = pread(fd, span, status.st_size - span) if span else b""
    finally:
        os.close(fd)
    boundaries = [b for b in entry_starts(removed) if b > 0] + [len(removed)]
    for boundary in sorted(boundaries, reverse=True):
        if boundary <= len(tail) and tail.endswith(removed[:boundary]):
            return boundary
    return 0
