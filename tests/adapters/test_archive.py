"""--archive: removed entries kept byte for byte, once, even across a crash and rerun."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from axe.adapters.files.archive import archive_path, archive_removed
from axe.adapters.files.memory import read_memory, trim_memory
from axe.domain.entries import plan_trim
from axe.domain.errors import AgentError
from tests.support import entries


def trim_with_archive(path: Path, keep: int) -> None:
    snapshot = read_memory(path)
    trim_memory(path, snapshot, plan_trim(snapshot.content, keep), archive=True)


def test_removed_bytes_are_appended_in_order(tmp_path: Path) -> None:
    """--archive keeps every removed byte, pre-header text too, oldest first, run after run."""
    path = tmp_path / "m.md"
    path.write_bytes(b"notes\n" + entries(5))
    trim_with_archive(path, 2)
    assert archive_path(path).read_bytes() == b"notes\n" + entries(3)
    path.write_bytes(path.read_bytes() + entries(3, start=5))
    trim_with_archive(path, 2)
    assert archive_path(path).read_bytes() == b"notes\n" + entries(6)
    assert path.read_bytes() == entries(2, start=6)


def test_rerun_after_a_crash_between_archive_and_rename_adds_no_duplicate(tmp_path: Path) -> None:
    """A crash after the archive was written leaves the memory file whole; the rerun sees
    that the archive already ends with those entries and appends nothing twice."""
    path = tmp_path / "m.md"
    path.write_bytes(entries(5))
    archive_removed(archive_path(path), entries(3))  # what the crashed run had done
    trim_with_archive(path, 2)
    assert archive_path(path).read_bytes() == entries(3)
    assert path.read_bytes() == entries(2, start=3)


def test_rerun_that_removes_more_appends_only_the_rest(tmp_path: Path) -> None:
    """After a crash, a rerun that removes more archives only the entries not already there."""
    archive = tmp_path / "m.md.archive"
    archive.write_bytes(entries(2, start=100) + entries(3))  # older archive, then the crashed run
    archive_removed(archive, entries(4))
    assert archive.read_bytes() == entries(2, start=100) + entries(4)


def test_unrelated_archive_gets_everything(tmp_path: Path) -> None:
    """Removed entries the archive does not already end with are all appended after its own."""
    archive = tmp_path / "m.md.archive"
    archive.write_bytes(entries(2, start=100))
    archive_removed(archive, entries(2))
    assert archive.read_bytes() == entries(2, start=100) + entries(2)


def test_archive_that_cannot_be_written_leaves_the_memory_file_alone(tmp_path: Path) -> None:
    """If the archive cannot be written, nothing is trimmed and one line says why."""
    path = tmp_path / "m.md"
    path.write_bytes(entries(5))
    archive_path(path).mkdir()
    with pytest.raises(AgentError) as caught:
        trim_with_archive(path, 2)
    assert str(caught.value) == (
        f"cannot archive removed entries to {archive_path(path)}: a directory; "
        "the memory file was not changed"
    )
    assert path.read_bytes() == entries(5)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("memory_mode", [0o644, 0o664, 0o600], ids=oct)
def test_a_new_archive_has_the_memory_files_permissions(tmp_path: Path, memory_mode: int) -> None:
    """The archive holds the memory file's bytes: it is exactly as readable as the memory
    file, whatever the umask (not 0600 beside a 0644 file, not 0644 beside a 0664 one)."""
    path = tmp_path / "m.md"
    path.write_bytes(entries(5))
    path.chmod(memory_mode)
    trim_with_archive(path, 2)
    assert mode(archive_path(path)) == memory_mode
    assert mode(path) == memory_mode


def test_an_existing_archive_keeps_its_mode(tmp_path: Path) -> None:
    """An archive the user made private stays private when gc appends to it."""
    path = tmp_path / "m.md"
    path.write_bytes(entries(5))
    path.chmod(0o644)
    archive_path(path).write_bytes(entries(1, start=100))
    archive_path(path).chmod(0o600)
    trim_with_archive(path, 2)
    assert mode(archive_path(path)) == 0o600
    assert archive_path(path).read_bytes() == entries(1, start=100) + entries(3)


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a file to another user")
def test_an_archive_made_by_root_belongs_to_the_memory_files_owner(tmp_path: Path) -> None:
    """A gc run as root (a system cron job) on a user's memory file leaves an archive that
    user can read and append to, as it does the trimmed memory file."""
    path = tmp_path / "m.md"
    path.write_bytes(entries(5))
    os.chown(path, 4321, 4321)
    trim_with_archive(path, 2)
    owners = {(p.stat().st_uid, p.stat().st_gid) for p in (path, archive_path(path))}
    assert owners == {(4321, 4321)}
