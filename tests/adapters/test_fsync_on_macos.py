"""Every flush gc makes reaches the disk on macOS too (gc-spec Constraint 10).

macOS's ``fsync`` leaves data in the drive's volatile cache; ``fcntl(fd, F_FULLFSYNC)``
writes it down. A recording ``fcntl`` module stands in for macOS's, so these tests see on
which files gc asked for which flush: the archive and its intent record, the temp file that becomes the memory
file, the directory after each new name, and the memory file after late bytes.
"""

from __future__ import annotations

import os
from pathlib import Path

from axe.adapters.memory.platforms import platform_for
from axe.adapters.memory.store import MemoryFile
from axe.domain.entries import plan_trim
from axe.testing import FakeClock
from tests.platform_substitutes import RecordingFcntl, RecordingFsync
from tests.support import entries, entry

F_FULLFSYNC = 51

# In the order gc flushes them: the archive's intent record and its directory entry, the
# archive, its new directory entry, the temp file, the rename, then the bytes an `axe run`
# wrote into the old file, appended to the new one.
EVERY_FLUSH = [
    "intent record",
    "directory",
    "archive",
    "directory",
    "temp file",
    "directory",
    "memory file",
]


def kind(path: str, memory: Path) -> str:
    name = Path(path).name
    if path == str(memory.parent):
        return "directory"
    if name == memory.name:
        return "memory file"
    if name == memory.name + ".archive":
        return "archive"
    if name == f".{memory.name}.archive.axe-gc-intent":
        return "intent record"
    if name.startswith(f".{memory.name}.axe-gc-") and name.endswith(".tmp"):
        return "temp file"
    return path


def trim_with_archive_and_a_late_writer(memory: Path, fcntl: RecordingFcntl) -> RecordingFsync:
    """Trim to 2 entries with --archive under macOS's rules while an `axe run` that opened
    the file before the rename writes into it 5 ms later; return the plain fsyncs made."""
    memory.write_bytes(entries(5))
    snapshot = MemoryFile(memory).read()
    writer = os.open(memory, os.O_WRONLY | os.O_APPEND)

    def late_write(now: float) -> None:
        nonlocal writer
        if writer >= 0 and now >= 0.005:
            os.write(writer, entry(77))
            os.close(writer)
            writer = -1

    fsync = RecordingFsync()
    macos = platform_for("darwin", fcntl=fcntl, fsync=fsync)
    file = MemoryFile(memory, platform=macos, clock=FakeClock(on_sleep=late_write))
    try:
        file.trim(snapshot, plan_trim(snapshot.content, 2), archive=True)
    finally:
        if writer >= 0:
            os.close(writer)
    assert memory.read_bytes() == entries(2, start=3) + entry(77)
    assert memory.with_name("m.md.archive").read_bytes() == entries(3)
    return fsync


def test_where_f_fullfsync_exists_every_flush_uses_it(tmp_path: Path) -> None:
    """On macOS the archive, the temp file, the directory and the carried-over late bytes
    are all flushed with F_FULLFSYNC, and plain fsync is never relied on."""
    memory = tmp_path / "m.md"
    fcntl = RecordingFcntl(full_fsync=True)
    fsync = trim_with_archive_and_a_late_writer(memory, fcntl)
    assert [(kind(path, memory), command) for path, command in fcntl.calls] == [
        (flushed, F_FULLFSYNC) for flushed in EVERY_FLUSH
    ]
    assert fsync.paths == []


def test_without_f_fullfsync_every_flush_is_a_plain_fsync(tmp_path: Path) -> None:
    """Where fcntl has no F_FULLFSYNC (Linux, other systems), the same flushes are fsyncs
    and fcntl is never called."""
    memory = tmp_path / "m.md"
    fcntl = RecordingFcntl(full_fsync=False)
    fsync = trim_with_archive_and_a_late_writer(memory, fcntl)
    assert fcntl.calls == []
    assert [kind(path, memory) for path in fsync.paths] == EVERY_FLUSH


def test_a_filesystem_that_refuses_f_fullfsync_still_gets_fsync(tmp_path: Path) -> None:
    """A network share or FAT volume on macOS refuses F_FULLFSYNC; each flush then falls
    back to fsync instead of failing the trim."""
    memory = tmp_path / "m.md"
    fcntl = RecordingFcntl(full_fsync=True, fails=True)
    fsync = trim_with_archive_and_a_late_writer(memory, fcntl)
    assert [kind(path, memory) for path, _ in fcntl.calls] == EVERY_FLUSH
    assert [kind(path, memory) for path in fsync.paths] == EVERY_FLUSH
