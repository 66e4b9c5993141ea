"""Crash-safe, race-safe replacement of a memory file by its own tail (POSIX).

The steps and why each is there: architecture.md, "Replacing a memory file".
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import stat
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any

from axe.adapters.memory.platforms import FilePlatform, current_platform

_COPY_CHUNK = 1 << 20
_TEMP_MARK = ".axe-gc-"
_TEMP_SUFFIX = ".tmp"
_ABANDONED_AFTER_SECONDS = 3600.0
_DRAIN_LIMIT_SECONDS = 2.0
_QUIET_SECONDS = 0.02
_POLL_SECONDS = 0.001


_DEFERRED_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM") if hasattr(signal, name)
)


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """Hold Ctrl-C and SIGTERM back for the block, then deliver them: a trim is atomic on
    disk, but an exception raised between its steps (archive appended, file not yet
    renamed; renamed, late appends not yet carried over) would leave it half done.

    Python runs signal handlers only on the main thread, so only there is anything to do:
    the handlers are swapped for a recorder for the block and put back after, and a signal
    that came meanwhile is raised again, reaching the program's own handler (``axe gc``'s,
    or an embedder's). On any other thread the block cannot be interrupted and nothing
    is touched.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    arrived: list[int] = []
    previous: dict[int, Callable[[int, FrameType | None], Any] | int] = {}
    for number in _DEFERRED_SIGNALS:
        handler = signal.getsignal(number)
        if handler is not None:  # None: a handler not set from Python, left alone
            signal.signal(number, lambda received, _frame: arrived.append(received))
            previous[number] = handler
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        for number in dict.fromkeys(arrived):
            signal.raise_signal(number)


def temp_prefix(target: Path) -> str:
    """Temp files of ``target`` are hidden and never end in ``.md``, so nothing reads them
    as memory; their name carries the writer's pid so abandoned ones can be recognised."""
    return f".{target.name}{_TEMP_MARK}"


def sibling_temp_path(target: Path, kind: str = "") -> Path:
    """A fresh hidden name beside ``target`` that the abandoned-temp cleanup recognises;
    ``kind`` tells a reader what it holds (the Windows sidecar is ``-old``)."""
    name = f"{temp_prefix(target)}{os.getpid()}-{os.urandom(4).hex()}{kind}{_TEMP_SUFFIX}"
    return target.with_name(name)


def create_sibling_temp(target: Path) -> tuple[int, Path]:
    """An exclusive new temp file beside ``target`` (same filesystem, so rename is atomic)."""
    temp = sibling_temp_path(target)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    return os.open(temp, flags | getattr(os, "O_BINARY", 0), 0o600), temp


def remove_abandoned_temps(
    target: Path, *, now: float | None = None, platform: FilePlatform | None = None
) -> list[Path]:
    """Delete temp files (and Windows sidecars) of ``target`` left by a gc that was killed.

    Only files whose writer process is gone, or that are over an hour old, are removed, so a
    gc running right now in another process keeps its temp file. Where a process cannot be
    probed (Windows), only age counts. Returns what was removed.
    """
    probe = (current_platform() if platform is None else platform).probe_processes
    prefix = temp_prefix(target)
    now = time.time() if now is None else now
    removed: list[Path] = []
    try:
        candidates = [e for e in os.scandir(target.parent) if e.name.startswith(prefix)]
    except OSError:
        return removed
    for entry in candidates:
        if not entry.name.endswith(_TEMP_SUFFIX):
            continue
        pid_text = entry.name[len(prefix) :].split("-", 1)[0]
        try:
            age = now - entry.stat(follow_symlinks=False).st_mtime
        except OSError:
            continue
        if age < _ABANDONED_AFTER_SECONDS and (not probe or _process_alive(pid_text)):
            continue
        with contextlib.suppress(OSError):
            os.unlink(entry.path)
            removed.append(Path(entry.path))
    return removed


def _process_alive(pid_text: str) -> bool:
    if not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


def fsync_directory(directory: Path, *, platform: FilePlatform) -> None:
    """Make a rename or a new file in ``directory`` durable, where the platform allows."""
    if not platform.fsync_directories:
        return
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        platform.fsync(fd)
    except OSError as error:
        if error.errno not in {errno.EINVAL, errno.ENOTSUP, errno.EBADF}:
            raise
    finally:
        os.close(fd)


def pread(fd: int, size: int, offset: int) -> bytes:
    """``os.pread`` where it exists (POSIX); elsewhere (Windows) a seek and a read."""
    if hasattr(os, "pread"):
        return os.pread(fd, size, offset)
    os.lseek(fd, offset, os.SEEK_SET)
    return os.read(fd, size)


def write_all(fd: int, data: bytes, *, write: Callable[[int, memoryview], int] = os.write) -> None:
    """``os.write`` may write less than asked (a signal, a pipe); loop until all is out."""
    view = memoryview(data)
    while view:
        view = view[write(fd, view) :]


def copy_to_end(source_fd: int, offset: int, dest_fd: int) -> int:
    """Copy ``source_fd`` from ``offset`` to its current end; return the new offset."""
    while True:
        chunk = pread(source_fd, _COPY_CHUNK, offset)
        if not chunk:
            return offset
        write_all(dest_fd, chunk)
        offset += len(chunk)


class SourceFile:
    """The memory file as gc holds it open: its descriptor and the status it had then.

    Windows must close it before the rename, POSIX keeps it until the late appends are
    collected; either way it is closed exactly once, so a descriptor number the system has
    reused is never closed by mistake.
    """

    def __init__(self, fd: int, status: os.stat_result) -> None:
        self.fd = fd
        self.status = status

    def close(self) -> None:
        if self.fd >= 0:
            fd, self.fd = self.fd, -1
            os.close(fd)


def replace_with_tail(
    source: SourceFile,
    target: Path,
    keep_from: int,
    *,
    platform: FilePlatform,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> None:
    """Replace ``target`` (open as ``source``) with its bytes from ``keep_from`` on, where a
    file may be renamed over while open (POSIX).

    Raises:
        OSError: before the rename: nothing changed and the temp file is gone.
        LateAppendError: after the rename: the trim happened, but bytes appended during it
            could not be carried over.
    """
    temp, copied_to = write_tail_to_temp(source, target, keep_from, platform=platform)
    try:
        require_still_named(target, source.status)  # an editor may have saved meanwhile
        platform.replace(temp, target)
    except BaseException:
        remove_quietly(temp)
        raise
    fsync_directory(target.parent, platform=platform)
    late = collect_late_appends(
        source.fd, copied_to, leases=platform.read_leases, sleep=sleep, clock=clock
    )
    carry_over(target, late, like=source.status, platform=platform)


def write_tail_to_temp(
    source: SourceFile, target: Path, keep_from: int, *, platform: FilePlatform
) -> tuple[Path, int]:
    """A new temp file beside ``target`` holding ``source`` from ``keep_from`` to its end
    (bytes appended meanwhile included), with the original's permissions, flushed to disk
    and closed. Returns it and the offset of ``source`` copied up to.

    Raises:
        OSError: nothing changed and the temp file is gone.
    """
    temp_fd, temp = create_sibling_temp(target)
    try:
        try:
            copied_to = copy_to_end(source.fd, keep_from, temp_fd)
            copy_ownership(temp_fd, source.status)
            platform.fsync(temp_fd)
        finally:
            os.close(temp_fd)
    except BaseException:
        remove_quietly(temp)
        raise
    return temp, copied_to


def remove_quietly(path: Path) -> None:
    """Remove a file of ours that is no longer wanted; if that fails, the cleanup of
    abandoned temps removes it later."""
    with contextlib.suppress(OSError):
        os.unlink(path)


def carry_over(target: Path, late: bytes, *, like: os.stat_result, platform: FilePlatform) -> None:
    """Append ``late`` (bytes written into the old file after the copy) to the new file.

    Raises:
        LateAppendError: they could not be written; the trim itself has happened.
    """
    if not late:
        return
    try:
        append_durably(target, late, platform=platform, new_file_like=like)
    except OSError as error:
        raise LateAppendError(len(late), error) from error


class LateAppendError(OSError):
    """Bytes appended to the old file during the trim could not be added to the new one."""

    def __init__(self, size: int, cause: OSError) -> None:
        super().__init__(cause.errno, cause.strerror)
        self.size = size


class ReplacedDuringTrimError(OSError):
    """The path no longer names the file gc opened: another program replaced it."""


def require_still_named(target: Path, opened: os.stat_result) -> None:
    """Raises ReplacedDuringTrimError if ``target`` no longer names the file gc opened.

    Checked just before the rename, so a new version another program saved while the tail
    was being copied is not overwritten: the window shrinks from the copy to a moment.
    """
    try:
        named = os.stat(target)
    except FileNotFoundError:
        raise ReplacedDuringTrimError("removed by another program during the trim") from None
    if (named.st_dev, named.st_ino) != (opened.st_dev, opened.st_ino):
        raise ReplacedDuringTrimError("replaced by another program during the trim")


def copy_ownership(fd: int, status: os.stat_result) -> None:
    """Give the file open as ``fd`` the permissions (and, where allowed, the owner) that
    ``status`` records: a file that holds the memory file's bytes is as private as it."""
    if hasattr(os, "fchmod"):  # Windows has it only from Python 3.13
        os.fchmod(fd, stat.S_IMODE(status.st_mode))
    if hasattr(os, "fchown"):
        with contextlib.suppress(OSError):  # only possible as root or for the same owner
            os.fchown(fd, status.st_uid, status.st_gid)


def append_durably(
    path: Path,
    data: bytes,
    *,
    platform: FilePlatform,
    new_file_like: os.stat_result | None = None,
) -> None:
    """Append ``data`` in one ``O_APPEND`` write (as ``axe run`` does) and flush it to disk.

    An existing file keeps its mode. A file this creates gets the permissions and owner of
    ``new_file_like`` when given (0600 otherwise), so an archive is no more and no less
    private than the memory file whose bytes it holds.
    """
    flags = os.O_WRONLY | os.O_APPEND | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        fd = os.open(path, flags)
    else:
        if new_file_like is not None:
            try:
                copy_ownership(fd, new_file_like)
            except BaseException:
                os.close(fd)
                raise
    try:
        write_all(fd, data, write=platform.write)
        platform.fsync(fd)
    finally:
        os.close(fd)


def collect_late_appends(
    old_fd: int,
    offset: int,
    *,
    leases: bool,
    sleep: Callable[[float], None],
    clock: Callable[[], float],
) -> bytes:
    """Bytes written to the replaced file after ``offset``, once no writer can add more.

    A writer that resolved the path before the rename writes to the old inode. With
    ``leases`` (Linux) a read lease is granted only while nobody has the file open for
    writing, and tells us if a writer opened it while we held it; otherwise, or where the
    lease is refused for good, we wait until the file has stopped growing for 20 ms.
    """
    late = bytearray()
    deadline = clock() + _DRAIN_LIMIT_SECONDS
    quiet_since = clock()
    while True:
        with _read_lease(old_fd, possible=leases and leases_possible()) as lease:
            chunk = _read_from(old_fd, offset + len(late))
            late += chunk
            if lease.held and lease.unbroken():
                return bytes(late)
        now = clock()
        if chunk:
            quiet_since = now
        if lease.unsupported and now - quiet_since >= _QUIET_SECONDS:
            return bytes(late)
        if now >= deadline:
            return bytes(late + _read_from(old_fd, offset + len(late)))
        sleep(_POLL_SECONDS)


def _read_from(fd: int, offset: int) -> bytes:
    parts = []
    while chunk := pread(fd, _COPY_CHUNK, offset):
        parts.append(chunk)
        offset += len(chunk)
    return b"".join(parts)


class _Lease:
    """The state of one attempt to take a read lease on the old file."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.held = False
        self.unsupported = False

    def unbroken(self) -> bool:
        """True while no writer has tried to open the file since the lease was taken."""
        import fcntl  # noqa: PLC0415  (POSIX only)

        return bool(fcntl.fcntl(self.fd, fcntl.F_GETLEASE) == fcntl.F_RDLCK)


_lease_lock = threading.Lock()


def leases_possible() -> bool:
    """Whether this thread of a Linux process can take a read lease without risking it.

    A writer opening a leased file makes the kernel send SIGIO, whose default action kills
    the process. On the main thread SIGIO is ignored for the moment the lease is held; any
    other thread cannot change signal handling, so it may lease only if SIGIO is already
    ignored (``axe gc`` ignores it at start; an embedding program can do the same with
    ``signal.signal(signal.SIGIO, signal.SIG_IGN)`` from its main thread).
    """
    if threading.current_thread() is threading.main_thread():
        return True
    return signal.getsignal(signal.SIGIO) == signal.SIG_IGN


@contextlib.contextmanager
def _sigio_ignored() -> Iterator[None]:
    if signal.getsignal(signal.SIGIO) == signal.SIG_IGN:
        yield
        return
    previous = signal.signal(signal.SIGIO, signal.SIG_IGN)  # only reached on the main thread
    try:
        yield
    finally:
        signal.signal(signal.SIGIO, previous)


@contextlib.contextmanager
def _read_lease(fd: int, *, possible: bool) -> Iterator[_Lease]:
    """Hold a Linux read lease on ``fd`` for the block, where that is ``possible``.

    Where it is not (another platform, or a thread that must not receive SIGIO), the lease
    is marked unsupported and the caller falls back to watching the file's size.
    """
    lease = _Lease(fd)
    if not possible:
        lease.unsupported = True
        yield lease
        return
    import fcntl  # noqa: PLC0415  (POSIX only)

    with _lease_lock, _sigio_ignored():
        try:
            fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_RDLCK)
            lease.held = True
        except OSError as error:
            lease.unsupported = error.errno not in {errno.EAGAIN, errno.EBUSY}
        try:
            yield lease
        finally:
            if lease.held:
                fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_UNLCK)
