"""Replacing a memory file by its tail so that, whatever stops gc (SIGKILL, a full disk), it
is exactly as it was or exactly trimmed, and nothing ``axe run`` appends meanwhile is lost:

1. the tail goes to a temp file beside it, flushed, with its permissions (named with gc's
   pid, so a later gc can tell an abandoned one and remove it);
2. the temp file is renamed over it (on Windows only once no handle is open on it: retried)
   and the directory flushed;
3. a writer that opened the old file still writes there: gc reads on until none holds it (a
   Linux read lease is granted only then; elsewhere until 20 ms pass quiet), at most
   :data:`DRAIN_SECONDS`, and appends what arrived to the new file, flushed.
"""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from axe.adapters.memory.paths import sidecar
from axe.adapters.memory.side_files import HandledFile, Place, create_new, open_side
from axe.adapters.shared.reading import describe_os_error
from axe.domain.errors import AgentError

DRAIN_SECONDS = 2.0  # how long a trim waits for the old file's last writer to close it
_CHUNK = 1 << 20
_ABANDONED_AFTER_SECONDS = 3600.0
_QUIET_SECONDS, _POLL_SECONDS = 0.02, 0.001
_ACCESS_DENIED, _SHARING_VIOLATION = 5, 32  # Windows' errors for a file in use
_IN_USE_SECONDS, _FIRST_PAUSE, _LONGEST_PAUSE = 2.0, 0.001, 0.05
_DEFERRED = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM") if hasattr(signal, name))


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """Hold Ctrl-C and SIGTERM back for the block (a trim half done would be worse), then
    raise them again for the program's own handlers; only the main thread has any."""
    arrived: list[int] = []
    main = threading.current_thread() is threading.main_thread()
    # None: a handler not set from Python, which cannot be put back
    previous = {n: h for n in _DEFERRED if main and (h := signal.getsignal(n)) is not None}
    for number in previous:
        signal.signal(number, lambda got, _: arrived.append(got))
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        for number in dict.fromkeys(arrived):
            signal.raise_signal(number)


class SourceFile:
    """The memory file as a trim holds it open (closed once: before the rename on Windows);
    once ``renamed`` over, the trim stands whatever fails."""

    def __init__(self, file: HandledFile, place: Place, fd: int, status: os.stat_result) -> None:
        self.given, self.path, self.place = file.path, place.real, place
        self.fd, self.status, self.renamed = fd, status, False
        self.platform, self.clock = file.platform, file.clock

    def close(self) -> None:
        if self.fd >= 0:
            fd, self.fd = self.fd, -1
            os.close(fd)


def replace_open(source: SourceFile, keep_from: int) -> bool:
    """Replace ``source`` by its tail, renamed over it while open; whether a writer still
    holds the old file."""
    temp, copied_to = write_tail_to_temp(source, keep_from)
    try:
        require_same_file(source.path, source)  # an editor may have saved meanwhile
        source.platform.replace(temp, source.path)
    except BaseException:
        remove_quietly(temp)
        raise
    source.renamed = True
    source.platform.fsync_directory(source.path.parent)
    return carry_over(source, source.fd, copied_to)


def replace_closed(source: SourceFile, keep_from: int) -> bool:
    """As :func:`replace_open` where no open file may be renamed over (Windows): gc's own
    handle closed, retried for 2 s; a hard link to the old file keeps what was appended (no
    hard links: gc catches up before each try, losing at most an entry in the last instant)."""
    temp, copied_to = write_tail_to_temp(source, keep_from)
    old = new_temp(source.path, "-old")
    source.close()
    try:
        linked, copied_to = _rename_when_free(source, temp, old, copied_to)
    except BaseException:
        remove_quietly(temp)
        remove_quietly(old)
        raise
    source.renamed = True
    source.platform.fsync_directory(source.path.parent)
    if linked:
        try:
            fd, _ = open_side(old, source.place)
            try:
                carry_over(source, fd, copied_to)
            finally:
                os.close(fd)
        finally:
            remove_quietly(old)
    return False


def _rename_when_free(
    source: SourceFile, temp: Path, old: Path, copied_to: int
) -> tuple[bool, int]:
    """Rename ``temp`` over the memory file while it is not in use; whether the old file is
    kept as ``old``, and how far it is copied into ``temp``."""
    clock, pause, linked = source.clock, _FIRST_PAUSE, None
    deadline = clock.monotonic() + _IN_USE_SECONDS
    while True:
        try:
            if linked is None:
                linked = _link(source, old)
            if not linked:  # no hard links here: catch up before each try instead
                copied_to = _catch_up(source, temp, copied_to)
            source.platform.replace(temp, source.path)
        except OSError as error:
            in_use = getattr(error, "winerror", None) in {_SHARING_VIOLATION, _ACCESS_DENIED}
            if not in_use or clock.monotonic() + pause > deadline:
                raise
        else:
            return linked, copied_to
        clock.sleep(pause)
        pause = min(pause * 2, _LONGEST_PAUSE)


def _link(source: SourceFile, old: Path) -> bool:
    """Whether the old file is now also ``old`` (a hard link), to be read after the rename."""
    try:
        source.platform.link(source.path, old)
    except OSError as error:
        if getattr(error, "winerror", None) == _SHARING_VIOLATION:
            raise
        return False
    fd, status = open_side(old, source.place)
    os.close(fd)
    require_same_file(status, source)
    return True


def _catch_up(source: SourceFile, temp: Path, copied_to: int) -> int:
    """Copy what the old file gained into ``temp``; how far it is copied now (statuses from
    ``fstat``, whose file ids compare alike on every Windows)."""
    fd, status = source.place.open_memory()
    try:
        require_same_file(status, source)
        if status.st_size > copied_to:
            temp_fd, _ = open_side(temp, source.place, os.O_WRONLY | os.O_APPEND)
            try:
                copied_to = copy_to_end(fd, copied_to, temp_fd)
                source.platform.fsync(temp_fd)
            finally:
                os.close(temp_fd)
        return copied_to
    finally:
        os.close(fd)


def require_same_file(found: Path | os.stat_result, source: SourceFile) -> None:
    """Raises AgentError unless ``found`` (a path or status) is still the file gc opened."""
    with contextlib.suppress(FileNotFoundError):
        if os.path.samestat(os.stat(found) if isinstance(found, Path) else found, source.status):
            return
    raise changed(source.given, "was replaced")


def changed(path: Path, how: str) -> AgentError:
    return AgentError(f"memory file {path} {how} while gc was running; not trimmed (run gc again)")


def new_temp(target: Path, kind: str = "") -> Path:
    return sidecar(target, f"-{os.getpid()}-{os.urandom(4).hex()}{kind}.tmp")


def temp_prefix(target: Path) -> str:
    return sidecar(target, "-").name


@contextlib.contextmanager
def new_file(path: Path, place: Place) -> Iterator[int]:
    """A new file of gc's at ``path``, open for the block, removed if the block fails."""
    fd = create_new(path, place)
    try:
        try:
            yield fd
        finally:
            os.close(fd)
    except BaseException:
        remove_quietly(path)
        raise


def write_tail_to_temp(source: SourceFile, keep_from: int) -> tuple[Path, int]:
    """A flushed temp file holding ``source`` from ``keep_from`` on, and where it ends."""
    with new_file(temp := new_temp(source.path), source.place) as fd:
        copied_to = copy_to_end(source.fd, keep_from, fd)
        copy_ownership(fd, source.status)
        source.platform.fsync(fd)
    return temp, copied_to


def remove_abandoned_temps(file: HandledFile, place: Place | None = None) -> list[Path]:
    """Delete and return the temps a killed gc left beside ``file`` (at ``place``): those
    whose writer is gone, or over an hour old, so a gc running now keeps its own."""
    real = (place or file.place()).real
    prefix, now, removed = temp_prefix(real), file.clock.now(), []
    with contextlib.suppress(OSError):
        for name in os.listdir(real.parent):
            if not (name.startswith(prefix) and name.endswith(".tmp")):
                continue
            path = real.with_name(name)
            with contextlib.suppress(OSError):
                young = now - os.lstat(path).st_mtime < _ABANDONED_AFTER_SECONDS
                if young and file.platform.may_be_running(name[len(prefix) :].split("-")[0]):
                    continue
                os.unlink(path)
                removed.append(path)
    return removed


def remove_quietly(path: Path) -> None:  # a temp it leaves, a later gc removes
    with contextlib.suppress(OSError):
        os.unlink(path)


def pread(fd: int, size: int, offset: int) -> bytes:  # Windows has no os.pread
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
    while chunk := pread(source_fd, _CHUNK, offset):
        write_all(dest_fd, chunk)
        offset += len(chunk)
    return offset


def copy_ownership(fd: int, status: os.stat_result) -> None:
    if hasattr(os, "fchmod"):  # Windows has it only from Python 3.13
        os.fchmod(fd, stat.S_IMODE(status.st_mode))
    if hasattr(os, "fchown"):
        with contextlib.suppress(OSError):  # only possible as root or for the same owner
            os.fchown(fd, status.st_uid, status.st_gid)


def carry_over(source: SourceFile, old_fd: int, offset: int) -> bool:
    """Append to the new file, flushed, what was written into the old one (``old_fd``) after
    ``offset``; whether a writer still held it at the end (if the platform tells)."""
    late, held = _late_appends(source, old_fd, offset)
    if late:
        try:
            fd, _ = source.place.open_memory(os.O_WRONLY | os.O_APPEND)
            try:
                write_all(fd, late, write=source.platform.write)
                source.platform.fsync(fd)
            finally:
                os.close(fd)
        except OSError as error:
            raise AgentError(
                f"trimmed memory file {source.given}, but {len(late)} bytes appended during "
                f"the trim could not be added back: {describe_os_error(error)}"
            ) from None
    return held


def _late_appends(source: SourceFile, old_fd: int, offset: int) -> tuple[bytes, bool]:
    """What the old file holds after ``offset`` once no writer can add more (at most
    :data:`DRAIN_SECONDS`), and whether one still held it then (if the platform tells)."""
    clock, late = source.clock, bytearray()
    quiet_since = clock.monotonic()
    deadline = quiet_since + DRAIN_SECONDS
    while True:
        with source.platform.leases.held(old_fd) as unbroken:
            late += (chunk := _read_from(old_fd, offset + len(late)))
            if unbroken is not None and unbroken():
                return bytes(late), False
        now = clock.monotonic()
        if chunk:
            quiet_since = now
        if unbroken is None and now - quiet_since >= _QUIET_SECONDS:
            return bytes(late), False
        if now >= deadline:
            return bytes(late + _read_from(old_fd, offset + len(late))), unbroken is not None
        clock.sleep(_POLL_SECONDS)


def _read_from(fd: int, offset: int) -> bytes:
    return pread(fd, max(os.fstat(fd).st_size - offset, 0), offset)
