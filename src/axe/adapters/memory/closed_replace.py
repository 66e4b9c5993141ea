"""Replacing the memory file where no file may be renamed over while it is open (Windows).

Windows refuses ``os.replace`` over a file any handle holds open (a sharing violation, or
"access denied"). So gc closes its own handles first; an ``axe run`` appending, or a scanner
reading the file for a few milliseconds, makes the rename fail: it is retried with short
pauses for up to two seconds, then gc gives up with the file unchanged.

The same rule tells when the old file's last writer is done: once the rename succeeds no
handle was open on it. So before renaming, gc hard-links the old file to a hidden sidecar;
after the rename the sidecar holds every byte anyone appended, and gc carries over what lies
beyond its copy, watching a further 20 ms for a writer that shares delete access. Where no
hard link can be made (FAT, some shares), gc copies what the old file gained into the temp
file before each attempt; an entry appended between that last read and the rename is then
lost, as gc-spec §5.1 accepts.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from axe.adapters.memory.durable import (
    LateAppendError,
    SourceFile,
    carry_over,
    collect_late_appends,
    copy_to_end,
    new_temp,
    remove_quietly,
    require_same_file,
    write_tail_to_temp,
)
from axe.adapters.shared.reading import open_regular

_ACCESS_DENIED = 5  # what replacing a file that is open, or about to be deleted, gives
_SHARING_VIOLATION = 32
_IN_USE_LIMIT_SECONDS = 2.0
_FIRST_PAUSE_SECONDS = 0.001
_LONGEST_PAUSE_SECONDS = 0.05


def replace_closed(source: SourceFile, keep_from: int) -> bool:
    """Replace the file open as ``source`` (which this closes) with its bytes from
    ``keep_from`` on, renaming only when no handle of ours is open on either file; False:
    no writer can hold the old file after the rename.

    Raises:
        As :func:`.durable.replace_open`; ``OSError`` also when the file stays in use for
        two seconds (the sidecar gone too).
    """
    temp, copied_to = write_tail_to_temp(source, keep_from)
    attempt = _Attempt(source, temp, copied_to)
    try:
        source.close()
        attempt.retry_while_in_use()
    except BaseException:
        remove_quietly(temp)
        if attempt.linked:
            remove_quietly(attempt.sidecar)
        raise
    source.platform.fsync_directory(source.path.parent)
    carry_over(source, attempt.collect_from_sidecar() if attempt.linked else b"")
    return False


class _Attempt:
    """The tries at the rename, and what earlier tries learnt: whether the sidecar exists
    and, without one, how far the old file has been copied."""

    def __init__(self, source: SourceFile, temp: Path, copied_to: int) -> None:
        self.source, self.platform = source, source.platform
        self.temp = temp
        self.copied_to = copied_to
        self.sidecar = new_temp(source.path, "-old")
        self.linked: bool | None = None  # None: not yet known

    def retry_while_in_use(self) -> None:
        """Try until no attempt fails with a file in use, for two seconds at most.

        Raises:
            OSError: the last failure, once it is not a file in use or time is up.
        """
        clock = self.source.clock
        deadline = clock.monotonic() + _IN_USE_LIMIT_SECONDS
        pause = _FIRST_PAUSE_SECONDS
        while True:
            try:
                self._run()
            except OSError as error:
                if _winerror(error) not in {_SHARING_VIOLATION, _ACCESS_DENIED}:
                    raise
                if clock.monotonic() + pause > deadline:
                    raise
            else:
                return
            clock.sleep(pause)
            pause = min(pause * 2, _LONGEST_PAUSE_SECONDS)

    def _run(self) -> None:
        """Link the sidecar once, or catch up without one; then rename."""
        if self.linked is None:
            self._link_sidecar()
        if not self.linked:
            self._catch_up()
        self.platform.replace(self.temp, self.source.path)

    def _link_sidecar(self) -> None:
        try:
            self.platform.link(self.source.path, self.sidecar)
        except OSError as error:
            if _winerror(error) == _SHARING_VIOLATION:
                raise
            self.linked = False  # no hard links here: catch up before each attempt instead
            return
        self.linked = True  # from here on, a failure removes the sidecar
        fd, status = open_regular(self.sidecar)
        os.close(fd)
        require_same_file(status, self.source.status)

    def _catch_up(self) -> None:
        """Copy what the old file gained since the last copy into the (closed) temp file.
        Its status comes from ``fstat``, as the first one did, so the file ids compare
        alike on every Windows version."""
        fd, status = open_regular(self.source.path)
        try:
            require_same_file(status, self.source.status)
            if status.st_size <= self.copied_to:
                return
            flags = os.O_WRONLY | os.O_APPEND | getattr(os, "O_BINARY", 0)
            temp_fd = os.open(self.temp, flags | getattr(os, "O_CLOEXEC", 0))
            try:
                self.copied_to = copy_to_end(fd, self.copied_to, temp_fd)
                self.platform.fsync(temp_fd)
            finally:
                os.close(temp_fd)
        finally:
            os.close(fd)

    def collect_from_sidecar(self) -> bytes:
        """What the old file (kept alive as the sidecar) holds beyond the copy; the sidecar
        is removed afterwards, closed first as Windows requires.

        Raises:
            LateAppendError: the sidecar could not be read.
        """
        try:
            fd, _ = open_regular(self.sidecar)
            try:
                return collect_late_appends(self.source, fd, self.copied_to)[0]
            finally:
                os.close(fd)
        except OSError as error:
            raise LateAppendError(self._bytes_beyond_copy(), error) from error
        finally:
            remove_quietly(self.sidecar)

    def _bytes_beyond_copy(self) -> int:
        with contextlib.suppress(OSError):
            return max(os.stat(self.sidecar).st_size - self.copied_to, 0)
        return 0


def _winerror(error: OSError) -> int | None:
    code = getattr(error, "winerror", None)
    return code if isinstance(code, int) else None
