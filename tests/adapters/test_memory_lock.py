"""The per-file lock: one gc at a time, a bounded wait, no sidecar left, every platform.

Two ``MemoryFileLocks`` stand for two processes: ``flock`` locks belong to an open file,
so two opens of the sidecar exclude each other even within this test process.
"""

from __future__ import annotations

import errno
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from axe.adapters.memory.lock import MemoryFileLocks, MsvcrtLocker
from axe.adapters.memory.store import FileMemoryStore
from axe.domain.entries import plan_trim
from axe.domain.errors import AgentError
from axe.testing import make_agent
from tests.support import entries


def lock_path(memory: Path) -> Path:
    """Where the lock of the (resolved) memory file ``memory`` is: hidden beside it."""
    return memory.with_name(f".{memory.name}.axe-gc.lock")


@pytest.fixture
def memory(tmp_path: Path) -> Path:
    path = tmp_path / "helper.md"
    path.write_bytes(entries(3))
    return path


def take(locks: MemoryFileLocks, path: Path, agent: str = "helper") -> None:
    """Take and release ``path``'s lock, as one short gc would."""
    with locks.hold(path, agent=agent, waiting=lambda _: None):
        pass


@contextmanager
def held_in_another_thread(locks: MemoryFileLocks, path: Path) -> Iterator[threading.Event]:
    """Hold ``path``'s lock in a thread until the yielded event is set."""
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        with locks.hold(path, agent="helper", waiting=lambda _: None):
            holding.set()
            release.wait(10)

    worker = threading.Thread(target=hold)
    worker.start()
    assert holding.wait(5)
    try:
        yield release
    finally:
        release.set()
        worker.join()


def test_a_second_gc_waits_for_the_first_and_is_told_who_holds_it(memory: Path) -> None:
    """The waiter hears once, with the holder's pid, and gets the lock when it is freed."""
    told: list[int | None] = []
    with held_in_another_thread(MemoryFileLocks(), memory) as release:
        threading.Timer(0.2, release.set).start()
        with MemoryFileLocks().hold(memory, agent="helper", waiting=told.append):
            assert release.is_set()
    assert told == [os.getpid()]


def test_past_the_limit_the_wait_gives_up_in_one_line(memory: Path) -> None:
    """A lock not freed in time is exit 1 with one line naming the agent and the holder."""
    with held_in_another_thread(MemoryFileLocks(), memory), pytest.raises(AgentError) as caught:
        take(MemoryFileLocks(timeout=0.1), memory)
    assert str(caught.value) == (
        f'memory file of agent "helper" is locked by another gc (pid {os.getpid()}) '
        f"({lock_path(memory)}); gave up after 0.1s "
        "(raise it with --lock-timeout or AXE_LOCK_TIMEOUT)"
    )


def test_threads_of_one_process_queue_without_a_time_limit(memory: Path) -> None:
    """--jobs agents sharing a file wait for each other however long: the holder is a
    sibling that will finish, and the time limit is for other processes."""
    locks = MemoryFileLocks(timeout=0.05)
    with held_in_another_thread(locks, memory) as release:
        threading.Timer(0.3, release.set).start()
        with locks.hold(memory, agent="helper", waiting=lambda _: None):
            assert release.is_set()


def test_a_symlink_and_its_target_are_one_file(tmp_path: Path, memory: Path) -> None:
    """Agents reaching one file by different paths share its lock."""
    link = tmp_path / "link.md"
    link.symlink_to(memory)
    with MemoryFileLocks().hold(link, agent="helper", waiting=lambda _: None):
        assert lock_path(memory) == tmp_path / ".helper.md.axe-gc.lock"
        assert lock_path(memory).exists()
        with pytest.raises(AgentError, match="is locked by another gc"):
            take(MemoryFileLocks(timeout=0.05), memory)


def test_no_sidecar_is_left_after_a_gc(memory: Path) -> None:
    """The sidecar exists only while a gc holds the lock."""
    with MemoryFileLocks().hold(memory, agent="helper", waiting=lambda _: None):
        assert lock_path(memory).exists()
    assert sorted(p.name for p in memory.parent.iterdir()) == ["helper.md"]


def test_a_waiter_whose_sidecar_was_removed_locks_the_new_one(memory: Path) -> None:
    """The holder removes the sidecar as it lets go; a waiter that had it open starts again
    on a fresh one, so the one it holds is the one every later gc sees."""
    waiter_holds, done = threading.Event(), threading.Event()

    def wait_then_hold() -> None:
        with MemoryFileLocks().hold(memory, agent="helper", waiting=lambda _: None):
            waiter_holds.set()
            done.wait(10)

    with held_in_another_thread(MemoryFileLocks(), memory) as release:
        waiter = threading.Thread(target=wait_then_hold)
        waiter.start()
        time.sleep(0.1)  # the waiter has opened the sidecar and polls it
        release.set()
    assert waiter_holds.wait(5)
    try:
        assert lock_path(memory).exists()
        with pytest.raises(AgentError, match="is locked by another gc"):
            take(MemoryFileLocks(timeout=0.05), memory)
    finally:
        done.set()
        waiter.join()


def test_a_missing_directory_needs_no_lock(tmp_path: Path) -> None:
    """No memory directory means no file to protect: gc goes on and finds nothing."""
    missing = tmp_path / "nowhere" / "helper.md"
    with MemoryFileLocks().hold(missing, agent="helper", waiting=lambda _: None):
        pass
    assert not missing.parent.exists()


def test_an_unusable_sidecar_is_one_line(memory: Path) -> None:
    """Something odd where the sidecar goes (a directory) is exit 1 with one line."""
    lock_path(memory).mkdir()
    with pytest.raises(AgentError) as caught:
        take(MemoryFileLocks(), memory)
    assert str(caught.value) == (
        f'cannot lock the memory file of agent "helper": {lock_path(memory)}: a directory'
    )


def test_a_symlink_planted_at_the_sidecar_is_not_followed(memory: Path, tmp_path: Path) -> None:
    """In a directory others can write, a link planted where the sidecar goes is refused
    in one line: gc never writes its pid into the file it points at."""
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious\n")
    lock_path(memory).symlink_to(victim)
    with pytest.raises(AgentError) as caught:
        take(MemoryFileLocks(), memory)
    assert str(caught.value) == (
        f'cannot lock the memory file of agent "helper": {lock_path(memory)}: '
        "a symbolic link, not followed"
    )
    assert victim.read_bytes() == b"precious\n"


class FakeMsvcrt:
    """Windows' msvcrt.locking as the lock uses it: records the position and mode of each
    call; a byte locked through one descriptor refuses another."""

    LK_NBLCK, LK_UNLCK = 2, 0

    def __init__(self) -> None:
        self.calls: list[tuple[int, int]] = []
        self.locked: set[int] = set()

    def locking(self, fd: int, mode: int, size: int) -> None:
        position = os.lseek(fd, 0, os.SEEK_CUR)
        self.calls.append((mode, position))
        if mode == self.LK_NBLCK:
            if position in self.locked:
                raise OSError(errno.EACCES, "Permission denied")
            self.locked.add(position)
        else:
            self.locked.discard(position)


def test_on_windows_a_byte_far_from_the_pid_is_locked_and_the_sidecar_stays(
    memory: Path,
) -> None:
    """Windows locks are mandatory, so the lock sits on a byte past the pid the waiter must
    read; the sidecar cannot be removed while open there, so it stays (substituted msvcrt)."""
    windows = FakeMsvcrt()
    locks = MemoryFileLocks(locker=MsvcrtLocker(windows), timeout=0.05)
    with locks.hold(memory, agent="helper", waiting=lambda _: None):
        assert lock_path(memory).read_text().split() == [str(os.getpid())]
        other = MemoryFileLocks(locker=MsvcrtLocker(windows), timeout=0.05)
        with pytest.raises(AgentError, match=f"pid {os.getpid()}"):
            take(other, memory)
    assert windows.calls[0] == (FakeMsvcrt.LK_NBLCK, 1 << 30)
    assert windows.calls[-1] == (FakeMsvcrt.LK_UNLCK, 1 << 30)
    assert lock_path(memory).exists()


def test_an_interrupted_run_starts_no_trim_and_leaves_no_sidecar(tmp_path: Path) -> None:
    """After Ctrl-C is settled, a worker that reaches its trim only now is refused (the
    process is about to end under it), and the sidecar of a lock still held by a worker
    that will never release it is gone."""
    store = FileMemoryStore(lambda: tmp_path)
    agent = make_agent("helper", last_n=1)
    path = store.path_for(agent)
    path.parent.mkdir(parents=True)
    path.write_bytes(entries(3))
    snapshot = store.read(agent)
    with store.lock(agent, waiting=lambda _: None):
        assert lock_path(path).exists()
        store.settle_interrupted(timeout=1)
        assert not lock_path(path).exists()
        with pytest.raises(AgentError, match="not trimmed: the run was interrupted"):
            store.trim(agent, snapshot, plan_trim(snapshot.content, 1), archive=False)
    assert path.read_bytes() == entries(3)


def test_a_sidecar_removed_for_an_interrupted_run_is_not_removed_again(memory: Path) -> None:
    """Once an interrupted run has removed the sidecars it held, a worker unwinding later
    leaves the path alone: another gc may have made its own sidecar there meanwhile."""
    locks = MemoryFileLocks()
    with locks.hold(memory, agent="helper", waiting=lambda _: None):
        locks.remove_held_sidecars()
        lock_path(memory).write_text("4242\n")  # the next gc's own sidecar
    assert lock_path(memory).read_text() == "4242\n"
