"""Replacing a memory file by its own tail: at any instant, even under SIGKILL or a full disk,
the file is either exactly as it was or exactly trimmed, and no entry ``axe run`` appends
while gc works is lost.

The POSIX protocol, :func:`replace_open`:

1. Copy the kept tail into a temp file beside the original (same filesystem), picking up
   bytes appended meanwhile; give it the original's permissions; fsync it.
2. ``os.replace`` it over the original (atomic), then fsync the directory so the rename
   itself survives a power cut.
3. ``axe run`` appends with ``open(O_APPEND)``, one write, close, and no lock, so a writer
   that opened the old file before the rename still writes into the old inode. Keep the
   old file open, wait until no writer holds it (a Linux read lease is granted only then;
   elsewhere, until it has stopped growing for 20 ms), at most :data:`DRAIN_SECONDS`, and
   append what arrived.

Windows refuses step 2 while any handle is open; :mod:`.closed_replace` does steps 2 and 3
there with the pieces below. Temp files carry their writer's pid, so a later gc removes
those a killed run left.
"""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any

from axe.adapters.memory.paths import sidecar
from axe.adapters.memory.platforms import FilePlatform
from axe.adapters.memory.side_files import HandledFile, Place, create_new
from axe.application.ports import Clock

DRAIN_SECONDS = 2.0  # how long a trim waits for the old file's last writer to close it
_COPY_CHUNK = 1 << 20
_ABANDONED_AFTER_SECONDS = 3600.0
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
    that came meanwhile is raised again, reaching the program's own handler. On any other
    thread the block cannot be interrupted.
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


class SourceFile:
    """The memory file as a trim holds it open: its resolved ``path``, descriptor and status
    when opened, the ``place`` it was found at, and the run's platform and clock. Windows
    must close it before the rename, POSIX keeps it until the late appends are collected;
    either way it is closed exactly once."""

    def __init__(self, file: HandledFile, place: Place, fd: int, status: os.stat_result) -> None:
        self.path, self.place, self.fd, self.status = place.real, place, fd, status
        self.platform: FilePlatform = file.platform
        self.clock: Clock = file.clock

    def close(self) -> None:
        if self.fd >= 0:
            fd, self.fd = self.fd, -1
            os.close(fd)


class LateAppendError(OSError):
    """Bytes appended to the old file during the trim could not be added to the new one."""

    def __init__(self, size: int, cause: OSError) -> None:
        super().__init__(cause.errno, cause.strerror)
        self.size = size


class ReplacedDuringTrimError(OSError):
    """The path no longer names the file gc opened: another program replaced it."""


def replace_open(source: SourceFile, keep_from: int) -> bool:
    """Replace the file open as ``source`` with its bytes from ``keep_from`` on, renaming
    over it while it is open (POSIX); True if a writer still held the old file when the
    wait for it ended (see :func:`collect_late_appends`).

    Raises:
        OSError: before the rename: nothing changed and the temp file is gone.
        ReplacedDuringTrimError: another program replaced the file; nothing changed.
        LateAppendError: after the rename: the trim happened, but bytes appended during it
            could not be carried over.
    """
    temp, copied_to = write_tail_to_temp(source, keep_from)
    try:
        require_still_named(source)  # an editor may have saved a new version meanwhile
        source.platform.replace(temp, source.path)
    except BaseException:
        remove_quietly(temp)
        raise
    source.platform.fsync_directory(source.path.parent)
    late, held = collect_late_appends(source, source.fd, copied_to)
    carry_over(source, late)
    return held


def require_still_named(source: SourceFile) -> None:
    """Raises ReplacedDuringTrimError if ``source.path`` no longer names the file gc opened:
    checked just before the rename, so a version another program saved meanwhile is kept."""
    try:
        named = os.stat(source.path)
    except FileNotFoundError:
        raise ReplacedDuringTrimError("removed by another program during the trim") from None
    require_same_file(named, source.status)


def require_same_file(status: os.stat_result, original: os.stat_result) -> None:
    """Raises ReplacedDuringTrimError unless ``status`` is of the file gc opened."""
    if not os.path.samestat(status, original):
        raise ReplacedDuringTrimError("replaced by another program during the trim")


def new_temp(target: Path, kind: str = "") -> Path:
    """A fresh temp name beside ``target`` that :func:`remove_abandoned_temps` recognises;
    ``kind`` tells a reader what it holds (the Windows sidecar is ``-old``)."""
    return sidecar(target, f"-{os.getpid()}-{os.urandom(4).hex()}{kind}.tmp")


@contextlib.contextmanager
def _temp_file(target: Path) -> Iterator[tuple[Path, int]]:
    """A new temp file beside ``target``, open for writing for the block; closed after it,
    and removed if the block fails."""
    temp = new_temp(target)
    fd = create_new(temp)
    try:
        try:
            yield temp, fd
        finally:
            os.close(fd)
    except BaseException:
        remove_quietly(temp)
        raise


def write_temp(target: Path, data: bytes, *, platform: FilePlatform) -> Path:
    """A new temp file beside ``target`` holding ``data``, closed, not flushed: for the
    ``--skip-unchanged`` record, which a power cut may only lose (costing an analysis).

    Raises:
        OSError: nothing was left behind.
    """
    with _temp_file(target) as (temp, fd):
        write_all(fd, data, write=platform.write)
    return temp


def write_tail_to_temp(source: SourceFile, keep_from: int) -> tuple[Path, int]:
    """A new temp file beside ``source`` holding it from ``keep_from`` to its end (bytes
    appended meanwhile included), with its permissions (and, where allowed, its owner),
    flushed and closed; and the offset of ``source`` copied up to.

    Raises:
        OSError: nothing changed and the temp file is gone.
    """
    with _temp_file(source.path) as (temp, fd):
        copied_to = copy_to_end(source.fd, keep_from, fd)
        copy_ownership(fd, source.status)
        source.platform.fsync(fd)
    return temp, copied_to


def remove_abandoned_temps(file: HandledFile) -> list[Path]:
    """Delete the temp files (and Windows sidecars) beside ``file`` that a killed gc left,
    and return them: those whose writer process is gone, or over an hour old (where a
    process cannot be probed, only age counts), so a gc running now keeps its own."""
    real = file.place().real
    prefix, directory, now = temp_prefix(real), real.parent, file.clock.now()
    removed: list[Path] = []
    try:
        names = [n for n in os.listdir(directory) if n.startswith(prefix) and n.endswith(".tmp")]
    except OSError:
        return removed
    for name in names:
        path = directory / name
        try:
            age = now - os.lstat(path).st_mtime
        except OSError:
            continue
        pid_text = name[len(prefix) :].split("-", 1)[0]
        if age < _ABANDONED_AFTER_SECONDS and file.platform.may_be_running(pid_text):
            continue
        with contextlib.suppress(OSError):
            os.unlink(path)
            removed.append(path)
    return removed


def temp_prefix(target: Path) -> str:
    return sidecar(target, "-").name


def remove_quietly(path: Path) -> None:
    """Remove a file of ours that is no longer wanted; if that fails, the cleanup of
    abandoned temps removes it later."""
    with contextlib.suppress(OSError):
        os.unlink(path)


def pread(fd: int, size: int, offset: int) -> bytes:
    """``os.pread`` where it exists (POSIX); elsewhere (Windows) a seek and a read."""
    if hasattr(os, "pread"):
        return os.pread(fd, size, offset)
    os.lseek(fd, offset, os.SEEK_SET)
    return os.read(fd, size)


def read_from(fd: int, offset: int) -> bytes:
    """Everything in ``fd`` from ``offset`` on."""
    parts = []
    while chunk := pread(fd, _COPY_CHUNK, offset):
        parts.append(chunk)
        offset += len(chunk)
    return b"".join(parts)


def write_all(fd: int, data: bytes, *, write: Callable[[int, memoryview], int] = os.write) -> None:
    """``os.write`` may write less than asked (a signal, a pipe); loop until all is out."""
    view = memoryview(data)
    while view:
        view = view[write(fd, view) :]


def copy_to_end(source_fd: int, offset: int, dest_fd: int) -> int:
    """Copy ``source_fd`` from ``offset`` to its current end; return the new offset."""
    while chunk := pread(source_fd, _COPY_CHUNK, offset):
        write_all(dest_fd, chunk)
        offset += len(chunk)
    return offset


def copy_ownership(fd: int, status: os.stat_result) -> None:
    """Give the file open as ``fd`` the permissions (and, where allowed, the owner) that
    ``status`` records: a file that holds the memory file's bytes is as private as it."""
    if hasattr(os, "fchmod"):  # Windows has it only from Python 3.13
        os.fchmod(fd, stat.S_IMODE(status.st_mode))
    if hasattr(os, "fchown"):
        with contextlib.suppress(OSError):  # only possible as root or for the same owner
            os.fchown(fd, status.st_uid, status.st_gid)


def carry_over(source: SourceFile, late: bytes) -> None:
    """Append ``late`` (bytes written into the old file after the copy) to the new file,
    in one ``O_APPEND`` write as ``axe run`` does, flushed.

    Raises:
        LateAppendError: they could not be written; the trim itself has happened.
    """
    if not late:
        return
    flags = os.O_WRONLY | os.O_APPEND | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    if source.place.shared:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(source.path, flags)
        try:
            write_all(fd, late, write=source.platform.write)
            source.platform.fsync(fd)
        finally:
            os.close(fd)
    except OSError as error:
        raise LateAppendError(len(late), error) from error


def collect_late_appends(source: SourceFile, old_fd: int, offset: int) -> tuple[bytes, bool]:
    """Bytes written to the replaced file ``old_fd`` after ``offset``, once no writer can
    add more: while the platform's read lease is held unbroken, or (where none can be had)
    once the file has stopped growing for 20 ms; at most :data:`DRAIN_SECONDS`. Also
    whether a writer still held the file when that time was up (never where the platform
    cannot tell): what it writes later goes to the replaced file."""
    clock = source.clock
    late = bytearray()
    deadline = clock.monotonic() + DRAIN_SECONDS
    quiet_since = clock.monotonic()
    while True:
        with source.platform.lease(old_fd) as unbroken:
            chunk = read_from(old_fd, offset + len(late))
            late += chunk
            if unbroken is not None and unbroken():
                return bytes(late), False
        now = clock.monotonic()
        if chunk:
            quiet_since = now
        if unbroken is None and now - quiet_since >= _QUIET_SECONDS:
            return bytes(late), False
        if now >= deadline:
            return bytes(late + read_from(old_fd, offset + len(late))), unbroken is not None
        clock.sleep(_POLL_SECONDS)
