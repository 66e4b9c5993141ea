"""Replacing a memory file by its own tail: at any instant, even under SIGKILL or a full disk,
the file is either exactly as it was or exactly trimmed, and no entry that ``axe run``
appends while gc works is lost.

The POSIX protocol, :func:`replace_open`:

1. Copy the kept tail into a temp file beside the original (same filesystem), picking up
   bytes appended meanwhile; give it the original's permissions; fsync it.
2. ``os.replace`` it over the original (atomic), then fsync the directory so the rename
   itself survives a power cut.
3. ``axe run`` appends with ``open(O_APPEND)``, one write, close, and no lock, so a writer
   that opened the old file just before the rename still writes into the old inode. Keep
   the old file open, wait until no writer holds it (a Linux read lease is granted only
   then; elsewhere, until it has stopped growing for 20 ms), and append what arrived.

Windows refuses step 2 while any handle is open; :mod:`.closed_replace` does steps 2 and 3
there with the pieces below. Temp files carry their writer's pid, so a later gc removes
those a killed run left. The old file's last close, which frees its blocks, is left to
:class:`~.releases.LaterReleases`.
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # no stubs: see signals_deferred
import contextlib
import functools
import math
import os
import signal
import stat
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from axe.adapters.memory.paths import sidecar
from axe.adapters.memory.releases import LaterReleases, release
from axe.adapters.shared.reading import open_regular

if TYPE_CHECKING:
    from axe.adapters.memory.platforms import FilePlatform, HandledFile

_COPY_CHUNK = 1 << 20
_ABANDONED_AFTER_SECONDS = 3600.0
_LISTING_SERVES_SECONDS = 60.0
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
    or an embedder's). On any other thread the block cannot be interrupted.

    The handlers are read and set through ``_signal``, the C module ``signal`` wraps:
    ``signal``'s own functions turn each handler into an enum, raising and catching a
    ``ValueError`` for every Python function, 12 µs a block against 1 µs, and a tenth of
    the instructions an agent of ``--all`` costs (docs/benchmarks.md, round ten).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    arrived: list[int] = []
    previous: dict[int, Callable[[int, FrameType | None], Any] | int] = {}
    for number in _DEFERRED_SIGNALS:
        handler = _signal.getsignal(number)
        if handler is not None:  # None: a handler not set from Python, left alone
            _signal.signal(number, lambda received, _frame: arrived.append(received))
            previous[number] = handler
    try:
        yield
    finally:
        for number, handler in previous.items():
            _signal.signal(number, handler)
        for number in dict.fromkeys(arrived):
            signal.raise_signal(number)


class SourceFile:
    """The memory file as a trim holds it open: its :class:`~.file.MemoryFile`, resolved
    ``path``, descriptor and status when opened. Windows must close it before the rename,
    POSIX keeps it until the late appends are collected; either way it is closed exactly
    once, so a descriptor number the system has reused is never closed by mistake.
    """

    def __init__(self, file: HandledFile, path: Path) -> None:
        self.file, self.path = file, path
        self.fd, self.status = open_regular(path)

    def close(self, releases: LaterReleases | None = None) -> None:
        """Close it now, or through ``releases`` (once it has been renamed over)."""
        if self.fd >= 0:
            fd, self.fd = self.fd, -1
            release(releases, functools.partial(os.close, fd), self.status.st_size)


class LateAppendError(OSError):
    """Bytes appended to the old file during the trim could not be added to the new one."""

    def __init__(self, size: int, cause: OSError) -> None:
        super().__init__(cause.errno, cause.strerror)
        self.size = size


class ReplacedDuringTrimError(OSError):
    """The path no longer names the file gc opened: another program replaced it."""


def replace_open(source: SourceFile, keep_from: int) -> None:
    """Replace the file open as ``source`` with its bytes from ``keep_from`` on, renaming
    over it while it is open (POSIX).

    Raises:
        OSError: before the rename: nothing changed and the temp file is gone.
        ReplacedDuringTrimError: another program replaced the file; nothing changed.
        LateAppendError: after the rename: the trim happened, but bytes appended during it
            could not be carried over.
    """
    temp, copied_to = write_tail_to_temp(source, keep_from)
    try:
        require_still_named(source)  # an editor may have saved a new version meanwhile
        source.file.platform.replace(temp, source.path)
    except BaseException:
        remove_quietly(temp)
        raise
    source.file.platform.fsync_directory(source.path.parent)
    carry_over(source, collect_late_appends(source.file, source.fd, copied_to))


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
    """A new temp file beside ``target``, private to its owner and open for writing for the
    block; closed after it, and removed if the block fails."""
    temp = new_temp(target)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(temp, flags | getattr(os, "O_BINARY", 0), 0o600)
    try:
        try:
            yield temp, fd
        finally:
            os.close(fd)
    except BaseException:
        remove_quietly(temp)
        raise


def write_temp(target: Path, data: bytes, *, platform: FilePlatform) -> Path:
    """A new temp file beside ``target`` holding ``data``, closed, to be renamed over a file
    of gc's own (the ``--skip-unchanged`` record). Not flushed: such a file is only a
    reason to skip, checked against the memory file's digest, so one lost or cut by a power
    failure costs an analysis, never a wrong skip.

    Raises:
        OSError: nothing was left behind.
    """
    with _temp_file(target) as (temp, fd):
        write_all(fd, data, write=platform.write)
    return temp


def write_tail_to_temp(source: SourceFile, keep_from: int) -> tuple[Path, int]:
    """A new temp file beside ``source`` holding it from ``keep_from`` to its end (bytes
    appended meanwhile included), with its permissions (and, where allowed, its owner),
    flushed to disk and closed; and the offset of ``source`` copied up to.

    Raises:
        OSError: nothing changed and the temp file is gone.
    """
    with _temp_file(source.path) as (temp, fd):
        copied_to = copy_to_end(source.fd, keep_from, fd)
        copy_ownership(fd, source.status)
        source.file.platform.fsync(fd)
    return temp, copied_to


class DirectoryNames:
    """The names in each directory, listed at most once a minute: every memory file's gc
    looks there for temps a killed gc left, and a fleet's files share one directory, so
    listing it for each agent made a run over N agents cost N² steps. A temp that appears
    after a listing is of a gc running now, or is removed by a look a minute later (the
    next run's, or the next of a program that keeps its store)."""

    def __init__(self) -> None:
        self._listed: dict[Path, tuple[float, str]] = {}

    def listed(self, directory: Path, now: float) -> str:
        """The names in ``directory``, each after a NUL, so one C search finds a prefix; as
        listed in the minute before ``now`` (monotonic seconds), else listed afresh.

        Raises:
            OSError: it cannot be listed.
        """
        at, names = self._listed.get(directory, (-math.inf, ""))
        if not 0 <= now - at < _LISTING_SERVES_SECONDS:  # a clock set back lists afresh
            names = "".join("\0" + name for name in os.listdir(directory))
            self._listed[directory] = (now, names)
        return names


def remove_abandoned_temps(file: HandledFile, names: DirectoryNames | None = None) -> list[Path]:
    """Delete temp files (and Windows sidecars) of ``file`` left by a gc that was killed,
    as the directory's listing in ``names`` (a fresh one when None) shows them.

    Only files whose writer process is gone, or that are over an hour old, are removed, so a
    gc running right now in another process keeps its temp file. Where a process cannot be
    probed (Windows), only age counts. Returns what was removed.
    """
    prefix, directory = temp_prefix(file.real), file.real.parent
    now = file.clock.now()
    removed: list[Path] = []
    try:
        listed = (names or DirectoryNames()).listed(directory, file.clock.monotonic())
    except OSError:
        return removed
    if "\0" + prefix not in listed:  # the usual answer, from one C search
        return removed
    for name in listed.split("\0"):
        if not (name.startswith(prefix) and name.endswith(".tmp")):
            continue
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


def append_durably(
    path: Path, data: bytes, *, platform: FilePlatform, new_file_like: os.stat_result
) -> None:
    """Append ``data`` in one ``O_APPEND`` write (as ``axe run`` does) and flush it to disk.

    An existing file keeps its mode; a file this creates gets the permissions and owner of
    ``new_file_like``, so an archive is exactly as private as the memory file whose bytes
    it holds.
    """
    flags = os.O_WRONLY | os.O_APPEND | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        fd = os.open(path, flags)
    else:
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


def carry_over(source: SourceFile, late: bytes) -> None:
    """Append ``late`` (bytes written into the old file after the copy) to the new file.

    Raises:
        LateAppendError: they could not be written; the trim itself has happened.
    """
    if not late:
        return
    try:
        append_durably(
            source.path, late, platform=source.file.platform, new_file_like=source.status
        )
    except OSError as error:
        raise LateAppendError(len(late), error) from error


def collect_late_appends(file: HandledFile, old_fd: int, offset: int) -> bytes:
    """Bytes written to the replaced file after ``offset``, once no writer can add more:
    while the platform's read lease is held unbroken, or (where none can be had) once the
    file has stopped growing for 20 ms; at most two seconds."""
    clock = file.clock
    late = bytearray()
    deadline = clock.monotonic() + _DRAIN_LIMIT_SECONDS
    quiet_since = clock.monotonic()
    while True:
        with file.platform.lease(old_fd) as unbroken:
            chunk = read_from(old_fd, offset + len(late))
            late += chunk
            if unbroken is not None and unbroken():
                return bytes(late)
        now = clock.monotonic()
        if chunk:
            quiet_since = now
        if unbroken is None and now - quiet_since >= _QUIET_SECONDS:
            return bytes(late)
        if now >= deadline:
            return bytes(late + read_from(old_fd, offset + len(late)))
        clock.sleep(_POLL_SECONDS)
