"""One gc at a time per memory file, across processes and threads: a lock from the read to
the trim on a sidecar beside the resolved file, holding the holder's pid for a waiter's
message. On POSIX its holder removes it while still holding it, so a waiter that then gets
the lock finds it unnamed and starts again on a new one. Where gc cannot write the directory
no gc can trim either, so it goes on without one.
"""

from __future__ import annotations

import contextlib
import errno
import importlib
import os
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from axe.adapters.memory.durable import pread
from axe.adapters.memory.paths import sidecar
from axe.adapters.memory.platforms import current_platform
from axe.adapters.memory.side_files import Place, locate, open_side
from axe.adapters.shared.clock import SystemClock
from axe.adapters.shared.reading import describe_os_error
from axe.application.ports import Clock
from axe.domain.errors import AgentError
from axe.domain.model import quoted

# Imported now, not when a lock is taken: loading a module needs a descriptor, which may be
# the very thing that has run out then.
if sys.platform != "win32":
    import fcntl
_MSVCRT: object | None = importlib.import_module("msvcrt") if sys.platform == "win32" else None

DEFAULT_LOCK_TIMEOUT = 300.0
_FIRST_POLL, _LONGEST_POLL = 0.02, 0.25
_NOT_WRITABLE = frozenset({errno.ENOENT, errno.EACCES, errno.EPERM, errno.EROFS})
_WINDOWS_LOCK_OFFSET = 1 << 30  # far past the pid at offset 0, which waiters must read
Waiting = Callable[[int | None], None]


class FlockLocker:
    """POSIX ``flock``, per open file; a holder may remove the sidecar before unlocking."""

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
    """Windows ``msvcrt.locking``, mandatory: on a byte far past the pid waiters read."""

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


class MemoryFileLocks:
    """Hands out the lock of each memory file; one instance serves a whole process."""

    def __init__(
        self,
        *,
        timeout: float = DEFAULT_LOCK_TIMEOUT,
        locker: FlockLocker | MsvcrtLocker | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.timeout = timeout
        self.locker = locker or (MsvcrtLocker() if sys.platform == "win32" else FlockLocker())
        self.clock = clock or SystemClock()
        self._in_process: dict[Path, threading.Lock] = {}
        self._held: set[Path] = set()  # sidecars to remove if the run ends without unwinding
        self._guard = threading.Lock()

    def remove_held_sidecars(self) -> None:
        """Remove the sidecars still held, for a run ending without unwinding (Ctrl-C)."""
        with self._guard:
            held, self._held = self._held, set()
        for path in held:
            with contextlib.suppress(OSError):
                os.unlink(path)

    @contextlib.contextmanager
    def hold(
        self, memory_path: Path, *, agent: str, waiting: Waiting, place: Place | None = None
    ) -> Iterator[None]:
        """Hold ``memory_path``'s lock for the block, telling ``waiting`` as ``MemoryStore.lock``
        says. AgentError (nothing changed): not free in time, or the sidecar is unusable."""
        place = place or locate(memory_path, current_platform())
        path = sidecar(place.real, ".lock")
        told: list[int | None] = []

        def tell(holder: int | None) -> None:  # a gc is told once that it waits
            if not told:
                told.append(holder)
                waiting(holder)

        with self._guard:
            in_process = self._in_process.setdefault(path, threading.Lock())
        if not in_process.acquire(blocking=False):
            tell(os.getpid())  # a sibling thread of this very process holds it
            in_process.acquire()
        try:
            fd = self._lock_sidecar(path, place, agent, tell)
            try:
                yield  # without a sidecar where none can be made: no gc can trim there
            finally:
                with self._guard:  # not if remove_held_sidecars took it: maybe another gc's now
                    removable = path in self._held
                    self._held.discard(path)
                if removable:
                    with contextlib.suppress(OSError):
                        os.unlink(path)  # while still locked: see the module docstring
                if fd is not None:
                    self.locker.unlock(fd)
                    os.close(fd)
        finally:
            in_process.release()

    def _lock_sidecar(self, path: Path, place: Place, agent: str, tell: Waiting) -> int | None:
        """The sidecar, open and locked with this gc's pid in it (None where none can be
        made), held to be removed if gc may; started again when its holder removed it."""
        deadline = self.clock.monotonic() + self.timeout
        while True:
            fd, writable = _open(path, place, agent)
            if fd is None:
                return None
            try:
                self._wait_for(fd, path, agent, deadline, tell)
            except BaseException:
                os.close(fd)
                raise
            with contextlib.suppress(OSError):  # its holder may have removed it meanwhile
                if os.path.samestat(os.stat(path), os.fstat(fd)):
                    break
            self.locker.unlock(fd)
            os.close(fd)
        if writable and self.locker.removes_sidecar:
            with self._guard:
                self._held.add(path)
        if writable:
            with contextlib.suppress(OSError):  # the pid only improves a waiter's message
                os.lseek(fd, 0, os.SEEK_SET)
                os.write(fd, f"{os.getpid():<20}\n".encode())  # padded: replaces any earlier
        return fd

    def _wait_for(self, fd: int, path: Path, agent: str, deadline: float, tell: Waiting) -> None:
        """Return once ``fd`` is locked; AgentError when ``deadline`` passed first."""
        pause = _FIRST_POLL
        while not self.locker.try_lock(fd):
            tell(holder := _holder(fd))
            if self.clock.monotonic() >= deadline:
                who = f"another gc (pid {holder})" if holder else "another gc"
                raise AgentError(
                    f"memory file of agent {quoted(agent)} is locked by {who} ({path}); gave "
                    f"up after {self.timeout:g}s (raise it with --lock-timeout or AXE_LOCK_TIMEOUT)"
                )
            self.clock.sleep(pause)
            pause = min(pause * 2, _LONGEST_POLL)


def _open(path: Path, place: Place, agent: str) -> tuple[int | None, bool]:
    """The sidecar (None where gc may not make one) and whether gc may write it."""
    try:
        return open_side(path, place, os.O_RDWR | os.O_CREAT, 0o644)[0], True
    except OSError as error:
        if error.errno not in _NOT_WRITABLE:
            raise _unusable(path, agent, error) from None
        if not os.path.lexists(path):
            return None, False
    try:
        return open_side(path, place)[0], False
    except OSError as error:
        with contextlib.suppress(OSError):  # one gc may not even read: whose is it?
            place.check(path, os.lstat(path))
        raise _unusable(path, agent, error) from None


def _holder(fd: int) -> int | None:
    with contextlib.suppress(OSError):
        if (text := pread(fd, 32, 0).decode("ascii", "replace").strip()).isdecimal():
            return int(text)
    return None


def _unusable(path: Path, agent: str, error: OSError) -> AgentError:
    reason = "a directory" if error.errno == errno.EISDIR else describe_os_error(error)
    return AgentError(f"cannot lock the memory file of agent {quoted(agent)}: {path}: {reason}")
