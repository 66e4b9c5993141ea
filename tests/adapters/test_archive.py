"""--archive: removed entries kept byte for byte, exactly once, whatever stops the append."""

from __future__ import annotations

import errno
import itertools
import os
import signal
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import pytest

from axe.adapters.memory.archive import settle_archive
from axe.adapters.memory.durable import signals_deferred
from axe.adapters.memory.paths import archive_path, intent_path
from axe.adapters.memory.platforms import FilePlatform, current_platform
from axe.adapters.memory.store import FileMemoryStore, MemoryFile, trim_entries
from axe.domain.entries import plan_trim
from axe.domain.errors import AgentError
from axe.domain.model import AgentConfig, MemoryConfig
from tests.support import entries, entry

DIED = 9  # the exit code of a child process "killed" at a chosen step


def trim_with_archive(path: Path, keep: int, platform: FilePlatform | None = None) -> None:
    file = MemoryFile(path, platform=platform or current_platform())
    snapshot = file.read()
    file.trim(snapshot, plan_trim(snapshot.content, keep), archive=True)


def next_gc(path: Path, keep: int) -> None:
    """What the next `axe gc --archive` does under the lock: settle, then trim if needed."""
    file = MemoryFile(path)
    settle_archive(file)
    snapshot = file.read()
    plan = plan_trim(snapshot.content, keep)
    if plan.changes_file:
        file.trim(snapshot, plan, archive=True)


def cut(content: bytes, keep: int) -> int:
    return plan_trim(content, keep).keep_from


def names(directory: Path) -> list[str]:
    """What is in ``directory`` but temp files, which a later trim removes (tested apart)."""
    return sorted(name for name in os.listdir(directory) if not name.endswith(".tmp"))


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
    assert names(tmp_path) == ["m.md", "m.md.archive"]  # no intent record stays


def test_entries_with_the_same_bytes_are_each_archived(tmp_path: Path) -> None:
    """An entry whose bytes equal the archive's last one is archived again, not taken for a
    copy a crashed run left (nothing is guessed from the archive's tail)."""
    path = tmp_path / "m.md"
    archive_path(path).write_bytes(entry(7))
    path.write_bytes(entry(7) + entries(2))
    trim_with_archive(path, 2)
    assert archive_path(path).read_bytes() == entry(7) + entry(7)


def dying_at(step: int, *, midway: bool) -> FilePlatform:
    """This system's rules, except that the process ends (like SIGKILL: no cleanup) at the
    ``step``-th write, flush or rename: before it (a write half done) or, ``midway`` False,
    just after it."""
    base = current_platform()
    calls = itertools.count(1)

    def around(action: Callable[[], object], half: Callable[[], object] | None = None) -> object:
        if next(calls) != step:
            return action()
        if midway:
            if half is not None:
                half()
            os._exit(DIED)
        result = action()
        os._exit(DIED)
        return result

    def write(fd: int, data: memoryview) -> int:
        written = around(lambda: os.write(fd, data), lambda: os.write(fd, data[: len(data) // 2]))
        assert isinstance(written, int)
        return written

    def fsync(fd: int) -> None:
        around(lambda: base.fsync(fd))

    def replace(source: Path, target: Path) -> None:
        around(lambda: os.replace(source, target))

    return attrs.evolve(base, write=write, fsync=fsync, replace=replace)


def in_child(action: Callable[[], None]) -> int:
    """Run ``action`` in a forked process; its exit code (DIED where it was cut short)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover  (the child)
        code = 0
        try:
            action()
        except BaseException:  # noqa: BLE001  (reported as exit code 1)
            code = 1
        os._exit(code)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


@pytest.mark.parametrize("midway", [True, False], ids=["during", "after"])
@pytest.mark.parametrize("existing", [b"", entries(2, start=100)], ids=["new", "existing"])
@pytest.mark.parametrize("rerun_keeps", [2, 1, 3])
def test_killed_at_any_step_the_next_gc_leaves_each_entry_archived_once(
    tmp_path: Path, midway: bool, existing: bytes, rerun_keeps: int
) -> None:
    """Killed during or after any write, flush or rename of a `gc --archive` (the record,
    the append, the trim), the next gc leaves archive + memory file == the log, byte for
    byte, whatever it then keeps: no entry twice, none cut, no record left."""
    original = b"notes\n" + entries(6)
    steps = 0
    for step in itertools.count(1):
        path = tmp_path / f"step-{step}" / "m.md"
        path.parent.mkdir()
        path.write_bytes(original)
        if existing:
            archive_path(path).write_bytes(existing)
        code = in_child(lambda: trim_with_archive(path, 2, dying_at(step, midway=midway)))  # noqa: B023
        assert code in (DIED, 0), f"step {step}: the child failed"
        trimmed = path.read_bytes() != original
        assert path.read_bytes() in (original, original[cut(original, 2) :]), f"step {step}"
        next_gc(path, rerun_keeps)
        kept_from = cut(original, min(rerun_keeps, 2) if trimmed else rerun_keeps)
        assert archive_path(path).read_bytes() == existing + original[:kept_from], f"step {step}"
        assert path.read_bytes() == original[kept_from:], f"step {step}"
        assert names(path.parent) == ["m.md", "m.md.archive"], f"step {step}"
        if code == 0:
            break
        steps += 1
    assert steps >= 6  # record written and flushed, archive appended and flushed, renamed


def test_an_append_cut_short_is_undone_even_after_a_trim_without_archive(tmp_path: Path) -> None:
    """A gc killed mid-append, then a gc without --archive that trims: the next settling
    removes the cut append (a cut entry is never kept); what that trim removed unarchived
    is its own choice."""
    path = tmp_path / "m.md"
    path.write_bytes(entries(6))
    archive_path(path).write_bytes(entries(1, start=100))
    append = 4  # the record written and flushed, its directory flushed, then the append
    assert in_child(lambda: trim_with_archive(path, 2, dying_at(append, midway=True))) == DIED
    assert len(archive_path(path).read_bytes()) > len(entries(1, start=100))
    snapshot = MemoryFile(path).read()
    MemoryFile(path).trim(snapshot, plan_trim(snapshot.content, 2), archive=False)
    settle_archive(MemoryFile(path))
    assert archive_path(path).read_bytes() == entries(1, start=100)
    assert names(tmp_path) == ["m.md", "m.md.archive"]


def test_a_record_cut_while_being_written_is_dropped(tmp_path: Path) -> None:
    """A record that is not whole was cut before the append began: it is removed and the
    archive is left exactly as it is."""
    path = tmp_path / "m.md"
    path.write_bytes(entries(5))
    archive_path(path).write_bytes(entries(2, start=100))
    intent_path(path).write_bytes(b'{"archive_size": 0, "archive_exi')
    next_gc(path, 2)
    assert archive_path(path).read_bytes() == entries(2, start=100) + entries(3)
    assert names(tmp_path) == ["m.md", "m.md.archive"]


def failing(
    errno_: int, *, at: str, archive: Path, partly: bool = True
) -> tuple[FilePlatform, list[int]]:
    """This system's rules, except that one step fails once with ``errno_``: the archive's
    ``write`` (after writing part of the data when ``partly``) or ``fsync``, the
    ``record``'s write, or the ``rename``. Also returns the archive's size at the failure."""
    base = current_platform()
    sizes: list[int] = []
    pending = [at]

    def fails(step: str, fd: int | None = None) -> bool:
        if step not in pending:
            return False
        if fd is not None and (os.readlink(f"/proc/self/fd/{fd}") == str(archive)) != (
            step != "record"
        ):
            return False
        pending.clear()
        return True

    def write(fd: int, data: memoryview) -> int:
        if fails("write", fd):
            if partly:
                os.write(fd, data[: len(data) // 2])
            sizes.append(os.fstat(fd).st_size)
            raise OSError(errno_, os.strerror(errno_))
        if fails("record", fd):
            raise OSError(errno_, os.strerror(errno_))
        return os.write(fd, data)

    def fsync(fd: int) -> None:
        if fails("fsync", fd):
            raise OSError(errno_, os.strerror(errno_))
        base.fsync(fd)

    def replace(source: Path, target: Path) -> None:
        if fails("rename"):
            raise OSError(errno_, os.strerror(errno_))
        os.replace(source, target)

    return attrs.evolve(base, write=write, fsync=fsync, replace=replace), sizes


@pytest.mark.parametrize("existing", [None, entries(2, start=100)], ids=["new", "existing"])
@pytest.mark.parametrize(
    ("at", "errno_"),
    [("write", errno.ENOSPC), ("write", errno.EIO), ("fsync", errno.EIO), ("record", errno.ENOSPC)],
)
def test_a_failed_append_gives_its_space_back(
    tmp_path: Path, existing: bytes | None, at: str, errno_: int
) -> None:
    """A full disk or an I/O error during the append: one line, the memory file untouched,
    and the archive back to its bytes before the append (gone if it was new), so the disk
    is no fuller than before; no record stays."""
    path = tmp_path / "m.md"
    path.write_bytes(entries(5))
    if existing is not None:
        archive_path(path).write_bytes(existing)
    platform, sizes = failing(errno_, at=at, archive=archive_path(path))
    with pytest.raises(AgentError) as caught:
        trim_with_archive(path, 2, platform)
    assert str(caught.value) == (
        f"cannot archive removed entries to {archive_path(path)}: {os.strerror(errno_)}; "
        "the memory file was not changed"
    )
    assert path.read_bytes() == entries(5)
    if existing is None:
        assert names(tmp_path) == ["m.md"]
    else:
        assert archive_path(path).read_bytes() == existing
        assert names(tmp_path) == ["m.md", "m.md.archive"]
    if at == "write":
        (size,) = sizes
        assert size > len(existing or b"")  # the failed write had written a part


def archive_that_failed_to_undo(directory: Path) -> Path:
    """A memory file of five entries whose ``--archive`` trim to two failed on a disk that
    kept failing (every flush of the archive, EIO): the append could not even be undone,
    so its intent record stays for the next gc to settle."""
    path = directory / "m.md"
    path.write_bytes(entries(5))
    archive_path(path).write_bytes(entries(1, start=100))
    base = current_platform()

    def fsync(fd: int) -> None:
        if os.readlink(f"/proc/self/fd/{fd}") == str(archive_path(path)):
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        base.fsync(fd)

    with pytest.raises(AgentError):
        trim_with_archive(path, 2, attrs.evolve(base, fsync=fsync))
    assert intent_path(path).exists()
    assert path.read_bytes() == entries(5)
    return path


def test_an_undo_that_fails_too_is_finished_by_the_next_gc(tmp_path: Path) -> None:
    """A disk that keeps failing: the append cannot even be undone, so its record stays,
    and the next gc (on a disk that works again) undoes it before archiving once."""
    path = archive_that_failed_to_undo(tmp_path)
    next_gc(path, 2)
    assert archive_path(path).read_bytes() == entries(1, start=100) + entries(3)
    assert path.read_bytes() == entries(2, start=3)
    assert names(tmp_path) == ["m.md", "m.md.archive"]


def test_trim_entries_settles_what_a_stopped_archive_left_first(tmp_path: Path) -> None:
    """The library's trim_entries takes the lock as gc does, settling first: an archive
    append a failed gc left is undone before the trim, so no entry is archived twice."""
    path = archive_that_failed_to_undo(tmp_path)
    assert trim_entries(path, 2) == 3
    assert archive_path(path).read_bytes() == entries(1, start=100)
    assert path.read_bytes() == entries(2, start=3)
    assert names(tmp_path) == ["m.md", "m.md.archive"]


@pytest.mark.parametrize("looked_at", [True, False], ids=["seen", "cannot be looked at"])
def test_a_record_that_cannot_be_settled_fails_that_gc_with_one_line(
    tmp_path: Path, looked_at: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The next gc settles a record under the lock, before anything else; if it cannot, it
    says so in one line and changes nothing, also when its place could not even be looked
    at (only a record known to be absent is no record)."""
    store = FileMemoryStore(lambda: tmp_path)
    helper = AgentConfig(name="helper", model="x/y", display_name="h", memory=MemoryConfig())
    path = store.path_for(helper)
    path.parent.mkdir()
    path.write_bytes(entries(5))
    intent_path(path).mkdir()  # unreadable as a record
    if not looked_at:
        lstat = os.lstat

        def refused(where: str | os.PathLike[str], **kwargs: Any) -> os.stat_result:
            if Path(where) == intent_path(path):
                raise PermissionError(13, "Permission denied")
            return lstat(where, **kwargs)

        monkeypatch.setattr(os, "lstat", refused)
    with pytest.raises(AgentError) as caught, store.lock(helper, waiting=lambda _: None):
        pass
    assert str(caught.value) == (
        f"cannot settle the archive {archive_path(path)} by its intent record: "
        f"{intent_path(path)} is a directory; the memory file was not changed (fix that, or "
        f"delete {intent_path(path)} to go on without settling)"
    )
    assert path.read_bytes() == entries(5)
    assert sorted(os.listdir(path.parent)) == [intent_path(path).name, "helper.md"]  # no lock


def freeze(path: Path) -> None:
    """Make ``path`` immutable (chattr +i), as an administrator may an archive."""
    if os.geteuid() != 0:
        pytest.skip("making a file immutable needs root")
    done = subprocess.run(["chattr", "+i", str(path)], capture_output=True, check=False)
    if done.returncode:
        pytest.skip(f"no immutable files here: {done.stderr.decode().strip()}")


def test_an_append_that_failed_before_writing_settles_without_a_write(tmp_path: Path) -> None:
    """An append that fails having written nothing, into an archive that then cannot be
    written at all (immutable): it never grew, so it needs no write to be back, and the
    intent record goes at once; the next gc, with or without --archive, goes on."""
    path = tmp_path / "m.md"
    path.write_bytes(entries(5))
    archive = archive_path(path)
    archive.write_bytes(entries(1, start=100))
    base = current_platform()

    def write(fd: int, data: memoryview) -> int:
        if os.readlink(f"/proc/self/fd/{fd}") == str(archive):
            freeze(archive)
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return base.write(fd, data)

    try:
        with pytest.raises(AgentError) as caught:
            trim_with_archive(path, 2, attrs.evolve(base, write=write))
        assert str(caught.value) == (
            f"cannot archive removed entries to {archive}: Input/output error; the memory file "
            "was not changed"
        )
        assert names(tmp_path) == ["m.md", "m.md.archive"]
        assert trim_entries(path, 2) == 3
    finally:
        subprocess.run(["chattr", "-i", str(archive)], capture_output=True, check=False)
    assert archive.read_bytes() == entries(1, start=100)


def test_a_rename_that_fails_takes_the_append_back(tmp_path: Path) -> None:
    """The trim fails after the archive was appended (the rename refused): the append is
    undone at once, so the next gc archives those entries once, not twice."""
    path = tmp_path / "m.md"
    path.write_bytes(entries(5))
    archive_path(path).write_bytes(entries(1, start=100))
    platform, _ = failing(errno.EIO, at="rename", archive=archive_path(path))
    with pytest.raises(AgentError) as caught:
        trim_with_archive(path, 2, platform)
    assert str(caught.value) == (
        f"cannot trim memory file {path}: Input/output error; the file was not changed"
    )
    assert archive_path(path).read_bytes() == entries(1, start=100)
    trim_with_archive(path, 2)
    assert archive_path(path).read_bytes() == entries(1, start=100) + entries(3)


def test_a_file_an_editor_replaced_during_the_trim_takes_the_append_back(tmp_path: Path) -> None:
    """Another program saves a new version of the memory file after gc archived what it
    would remove: gc does not trim, and it archives nothing either, so the entries the new
    version still holds are archived once, by the next gc, not twice."""
    path = tmp_path / "m.md"
    path.write_bytes(entries(5))
    archive_path(path).write_bytes(entries(1, start=100))
    base = current_platform()

    def an_editor_saves_after_the_append(fd: int) -> None:
        base.fsync(fd)
        if os.readlink(f"/proc/self/fd/{fd}") == str(archive_path(path)):
            saved = tmp_path / "saved"
            saved.write_bytes(entries(6))
            os.replace(saved, path)

    with pytest.raises(AgentError) as caught:
        trim_with_archive(path, 2, attrs.evolve(base, fsync=an_editor_saves_after_the_append))
    assert str(caught.value) == (
        f"memory file {path} was replaced while gc was running; not trimmed (run gc again)"
    )
    assert (archive_path(path).read_bytes(), path.read_bytes()) == (
        entries(1, start=100),
        entries(6),
    )
    assert names(tmp_path) == ["m.md", "m.md.archive"]
    trim_with_archive(path, 2)
    assert archive_path(path).read_bytes() == entries(1, start=100) + entries(4)


def test_ctrl_c_during_a_trim_is_delivered_once_the_trim_is_done() -> None:
    """A Ctrl-C (or SIGTERM) that arrives while a trim runs on the main thread interrupts
    the program only after the trim's last step, never between two of them."""
    steps = []

    def trim() -> None:
        with signals_deferred():
            signal.raise_signal(signal.SIGINT)
            steps.append("the rest of the trim")

    with pytest.raises(KeyboardInterrupt):
        trim()
    assert steps == ["the rest of the trim"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


@pytest.mark.parametrize("ignored", [True, False], ids=["SIG_IGN", "the program's own handler"])
def test_a_sigterm_during_a_trim_reaches_the_handler_the_program_had(ignored: bool) -> None:
    """After a trim, SIGTERM finds the handler the program had set (SIG_IGN, or its own
    function), and one that arrived during the trim reaches that handler once, after it."""
    received: list[int] = []
    handler = signal.SIG_IGN if ignored else lambda number, _frame: received.append(number)
    previous = signal.signal(signal.SIGTERM, handler)
    try:
        with signals_deferred():
            signal.raise_signal(signal.SIGTERM)
            signal.raise_signal(signal.SIGTERM)
            assert received == []
        assert signal.getsignal(signal.SIGTERM) is handler
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert received == ([] if ignored else [signal.SIGTERM])


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
    assert names(tmp_path) == ["m.md", "m.md.archive"]


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
