"""One gc at a time per memory file, across processes, machines sharing a home, and threads.

Why a sidecar, keyed how, and what a crash leaves: architecture.md, "One gc per memory file".
"""

from __future__ import annotations

import contextlib
import errno
import importlib
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Protocol

from axe.domain.errors import AgentError
from axe.domain.model import quoted

# Imported with this module, not when a lock is taken: loading an extension module needs a
# file descriptor, which may be the very thing that has run out at that moment.
if sys.platform != "win32":
    import fcntl
_MSVCRT: object | None = importlib.import_module("msvcrt") if sys.platform == "win32" else None

DEFAULT_LOCK_TIMEOUT = 300.0
_SUFFIX = ".axe-gc.lock"
_FIRST_POLL, _LONGEST_POLL = 0.02, 0.25
_UNLOCKABLE = frozenset({errno.ENOENT, errno.EACCES, errno.EPERM, errno.EROFS})
_WINDOWS_LOCK_OFFSET = 1 << 30  # far past the pid at offset 0, which waiters must read


class _HeldSidecars:
    """The sidecars one :class:`MemoryFileLocks` holds the lock of, so an interrupted run
    that ends without unwinding (Ctrl-C under ``--jobs``) can still remove them before its
    locks die with the process."""

    def __init__(self) -> None:
        self._paths: set[Path] = set()
        self._guard = threading.Lock()

    def add(self, sidecar: Path) -> None:
        with self._guard:
            self._paths.add(sidecar)

    def discard(self, sidecar: Path) -> bool:
        """Forget ``sidecar``; False if :meth:`remove_all` already took it (and removed it:
        by now another gc may have made a new one by that name, not to be deleted)."""
        with self._guard:
            held = sidecar in self._paths
            self._paths.discard(sidecar)
            return held

    def remove_all(self) -> None:
        """Delete every held sidecar; the locks themselves go when the process ends."""
        with self._guard:
            held, self._paths = self._paths, set()
        for sidecar in held:
            with contextlib.suppress(OSError):
                os.unlink(sidecar)


def lock_path(memory_path: Path) -> Path:
    """The sidecar for ``memory_path``, beside its resolved real path."""
    real = Path(os.path.realpath(memory_path))
    return real.with_name(f".{real.name}{_SUFFIX}")


class Locker(Protocol):
    """The operating system's advisory lock on an open file, taken without waiting."""

    removes_sidecar: bool  # whether a holder may delete the sidecar before unlocking

    def try_lock(self, fd: int) -> bool:
        """Lock ``fd`` exclusively; False if another holder has it."""
        ...

    def unlock(self, fd: int) -> None: ...


class FlockLocker:
    """POSIX ``flock``: per open file, so two opens in one process exclude each other too."""

    removes_sidecar = True

    def try_lock(self, fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def unlock(self, fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)


class MsvcrtLocker:
    """Windows ``msvcrt.locking`` on one byte far past the pid (Windows locks are
    mandatory: a locked byte 0 could not be read by the waiter wanting the pid)."""

    removes_sidecar = False

    def __init__(self, windows: object | None = None) -> None:
        self._msvcrt: object = windows if windows is not None else _MSVCRT

    def try_lock(self, fd: int) -> bool:
        os.lseek(fd, _WINDOWS_LOCK_OFFSET, os.SEEK_SET)
        try:
            self._msvcrt.locking(fd, self._msvcrt.LK_NBLCK, 1)  # type: ignore[attr-defined]
        except OSError:
            return False
        return True

    def unlock(self, fd: int) -> None:
        os.lseek(fd, _WINDOWS_LOCK_OFFSET, os.SEEK_SET)
        self._msvcrt.locking(fd, self._msvcrt.LK_UNLCK, 1)  # type: ignore[attr-defined]


def platform_locker() -> Locker:
    return MsvcrtLocker() if sys.platform == "win32" else FlockLocker()


class MemoryFileLocks:
    """Hands out the lock of each memory file; one instance serves a whole process."""

    def __init__(
        self,
        *,
        timeout: float = DEFAULT_LOCK_TIMEOUT,
        locker: Locker | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._timeout = timeout
        self._locker = locker or platform_locker()
        self._clock = clock
        self._sleep = sleep
        self._in_process: dict[Path, threading.Lock] = {}
        self._registry = threading.Lock()
        self._held = _HeldSidecars()

    def remove_held_sidecars(self) -> None:
        """For a run ending without unwinding: remove the sidecars of the locks still held
        (their holders never will); the locks go with the process."""
        self._held.remove_all()

    @contextlib.contextmanager
    def hold(
        self, memory_path: Path, *, agent: str, waiting: Callable[[int | None], None]
    ) -> Iterator[None]:
        """Hold ``memory_path``'s lock for the block. ``waiting(pid)`` is called once if
        another gc holds it (``pid`` when the sidecar says), before waiting for it.

        Raises:
            AgentError: the lock was not free within the time limit, or the sidecar is
                unusable (a directory, say); nothing was read or changed.
        """
        sidecar = lock_path(memory_path)
        told = _Once(waiting)
        with self._thread_lock(sidecar, told), self._process_lock(sidecar, agent, told):
            yield

    @contextlib.contextmanager
    def _thread_lock(self, sidecar: Path, waiting: Callable[[int | None], None]) -> Iterator[None]:
        with self._registry:
            lock = self._in_process.setdefault(sidecar, threading.Lock())
        if not lock.acquire(blocking=False):
            waiting(os.getpid())  # a sibling thread of this very process holds it
            lock.acquire()
        try:
            yield
        finally:
            lock.release()

    @contextlib.contextmanager
    def _process_lock(
        self, sidecar: Path, agent: str, waiting: Callable[[int | None], None]
    ) -> Iterator[None]:
        wait = _Wait(
            self._locker, waiting, clock=self._clock, sleep=self._sleep, timeout=self._timeout
        )
        while True:
            fd, writable = _open(sidecar, agent)
            if fd is None:
                yield  # a directory gc cannot write to: no gc can trim this file
                return
            try:
                locked = wait.until_locked(fd)
            except BaseException:
                os.close(fd)
                raise
            if not locked:
                holder = _holder(fd)
                os.close(fd)
                raise _busy(sidecar, agent, holder, self._timeout)
            if _still_named(fd, sidecar):
                break
            self._locker.unlock(fd)  # its holder removed it: start again on the new one
            os.close(fd)
        removable = writable and self._locker.removes_sidecar
        if removable:
            self._held.add(sidecar)
        try:
            if writable:
                _write_pid(fd)
            yield
        finally:
            if removable and self._held.discard(sidecar):
                with contextlib.suppress(OSError):
                    os.unlink(sidecar)  # while still locked: see the module docstring
            self._locker.unlock(fd)
            os.close(fd)


class _Once:
    """The waiting callback, called at most once however many waits one gc goes through."""

    def __init__(self, waiting: Callable[[int | None], None]) -> None:
        self._waiting: Callable[[int | None], None] | None = waiting

    def __call__(self, holder: int | None) -> None:
        waiting, self._waiting = self._waiting, None
        if waiting is not None:
            waiting(holder)


class _Wait:
    """One gc's wait for a lock: the waiter is told once, and one deadline bounds the wait
    even when it starts again on a new sidecar."""

    def __init__(
        self,
        locker: Locker,
        waiting: Callable[[int | None], None],
        *,
        clock: Callable[[], float],
        sleep: Callable[[float], None],
        timeout: float,
    ) -> None:
        self._locker = locker
        self._waiting = waiting
        self._clock = clock
        self._sleep = sleep
        self._timeout = timeout
        self._deadline: float | None = None

    def until_locked(self, fd: int) -> bool:
        """True once ``fd`` is locked; False when the deadline passed first."""
        pause = _FIRST_POLL
        while not self._locker.try_lock(fd):
            self._waiting(_holder(fd))
            if self._deadline is None:
                self._deadline = self._clock() + self._timeout
            if self._clock() >= self._deadline:
                return False
            self._sleep(pause)
            pause = min(pause * 2, _LONGEST_POLL)
        return True


def _open(sidecar: Path, agent: str) -> tuple[int | None, bool]:
    flags = os.O_CREAT | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    try:
        return os.open(sidecar, os.O_RDWR | flags, 0o644), True
    except OSError as error:
        if error.errno not in _UNLOCKABLE:
            raise _unusable(sidecar, agent, error) from None
    try:  # someone else's sidecar we may not write: a read-only descriptor locks as well
        return os.open(sidecar, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0)), False
    except OSError as error:
        if error.errno in _UNLOCKABLE:
            return None, False
        raise _unusable(sidecar, agent, error) from None


def _still_named(fd: int, sidecar: Path) -> bool:
    """Whether ``sidecar`` still names the file open as ``fd`` (its holder may have
    removed it while this process waited)."""
    try:
        named = os.stat(sidecar)
    except OSError:
        return False
    held = os.fstat(fd)
    return (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)


def _write_pid(fd: int) -> None:
    """The holder's pid, padded to a fixed width so one write replaces any earlier one."""
    with contextlib.suppress(OSError):  # the pid only improves a waiter's message
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, f"{os.getpid():<20}\n".encode())


def _holder(fd: int) -> int | None:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        text = os.read(fd, 32).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdecimal() else None


def _busy(sidecar: Path, agent: str, holder: int | None, timeout: float) -> AgentError:
    who = f"another gc (pid {holder})" if holder else "another gc"
    return AgentError(
        f"memory file of agent {quoted(agent)} is locked by {who} ({sidecar}); gave up "
        f"after {timeout:g}s (raise it with --lock-timeout or AXE_LOCK_TIMEOUT)"
    )


def _unusable(sidecar: Path, agent: str, error: OSError) -> AgentError:
    reason = "a directory" if error.errno == errno.EISDIR else (error.strerror or str(error))
    return AgentError(f"cannot lock the memory file of agent {quoted(agent)}: {sidecar}: {reason}")
