"""Replacing the memory file where no file may be renamed over while it is open (Windows).

How late appends are still carried over there: architecture.md, "Replacing where open files
cannot be renamed".
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from pathlib import Path

from axe.adapters.memory.durable import (
    LateAppendError,
    ReplacedDuringTrimError,
    SourceFile,
    carry_over,
    collect_late_appends,
    copy_to_end,
    fsync_directory,
    remove_quietly,
    sibling_temp_path,
    write_tail_to_temp,
)
from axe.adapters.memory.platforms import FilePlatform
from axe.adapters.shared.reading import open_regular

_ACCESS_DENIED = 5  # what replacing a file that is open, or about to be deleted, gives
_SHARING_VIOLATION = 32
_IN_USE_LIMIT_SECONDS = 2.0
_FIRST_PAUSE_SECONDS = 0.001
_LONGEST_PAUSE_SECONDS = 0.05


def replace_closed_with_tail(
    source: SourceFile,
    target: Path,
    keep_from: int,
    *,
    platform: FilePlatform,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> None:
    """Replace ``target`` (open as ``source``, which this closes) with its bytes from
    ``keep_from`` on, renaming only when no handle of ours is open on either file.

    Raises:
        OSError: before the rename (including the file staying in use for two seconds):
            nothing changed, and the temp file and sidecar are gone.
        ReplacedDuringTrimError: another program replaced the file; nothing changed.
        LateAppendError: after the rename: the trim happened, but bytes appended during it
            could not be carried over.
    """
    temp, copied_to = write_tail_to_temp(source, target, keep_from, platform=platform)
    attempt = _Attempt(source.status, temp, target, copied_to, platform)
    try:
        source.close()
        _retry_while_in_use(attempt.run, sleep=sleep, clock=clock)
    except BaseException:
        remove_quietly(temp)
        if attempt.linked:
            remove_quietly(attempt.sidecar)
        raise
    fsync_directory(target.parent, platform=platform)
    late = b""
    if attempt.linked:
        late = _collect_from_sidecar(attempt.sidecar, attempt.copied_to, sleep=sleep, clock=clock)
    carry_over(target, late, like=source.status, platform=platform)


class _Attempt:
    """One try at the rename, and what earlier tries learnt: whether the sidecar exists
    and, without one, how far the old file has been copied."""

    def __init__(
        self,
        original: os.stat_result,
        temp: Path,
        target: Path,
        copied_to: int,
        platform: FilePlatform,
    ) -> None:
        self.original = original
        self.temp = temp
        self.target = target
        self.copied_to = copied_to
        self.platform = platform
        self.sidecar = sibling_temp_path(target, "-old")
        self.linked: bool | None = None  # None: not yet known

    def run(self) -> None:
        """Link the sidecar once, or catch up without one; then rename.

        Raises:
            OSError: a sharing violation (the caller retries) or any other failure.
        """
        if self.linked is None:
            self._link_sidecar()
        if not self.linked:
            self._catch_up()
        self.platform.replace(self.temp, self.target)

    def _link_sidecar(self) -> None:
        try:
            self.platform.link(self.target, self.sidecar)
        except OSError as error:
            if _winerror(error) == _SHARING_VIOLATION:
                raise
            self.linked = False  # no hard links here: catch up before each attempt instead
            return
        self.linked = True  # from here on, a failure removes the sidecar
        fd, status = open_regular(self.sidecar)
        os.close(fd)
        _require_same_file(status, self.original)

    def _catch_up(self) -> None:
        """Copy what the old file gained since the last copy into the (closed) temp file."""
        fd, status = open_regular(self.target)
        try:
            _require_same_file(status, self.original)
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


def _require_same_file(status: os.stat_result, original: os.stat_result) -> None:
    """Both statuses come from ``fstat``, as the memory store's own check does, so the
    file ids compare alike on every Windows version."""
    if (status.st_dev, status.st_ino) != (original.st_dev, original.st_ino):
        raise ReplacedDuringTrimError("replaced by another program during the trim")


def _winerror(error: OSError) -> int | None:
    code = getattr(error, "winerror", None)
    return code if isinstance(code, int) else None


def _retry_while_in_use(
    action: Callable[[], None], *, sleep: Callable[[float], None], clock: Callable[[], float]
) -> None:
    """Run ``action`` until it does not fail with a file in use, for two seconds at most.

    Raises:
        OSError: the last failure, once it is not a file in use or time is up.
    """
    deadline = clock() + _IN_USE_LIMIT_SECONDS
    pause = _FIRST_PAUSE_SECONDS
    while True:
        try:
            action()
        except OSError as error:
            if _winerror(error) not in {_SHARING_VIOLATION, _ACCESS_DENIED}:
                raise
            if clock() + pause > deadline:
                raise
        else:
            return
        sleep(pause)
        pause = min(pause * 2, _LONGEST_PAUSE_SECONDS)


def _collect_from_sidecar(
    sidecar: Path, offset: int, *, sleep: Callable[[float], None], clock: Callable[[], float]
) -> bytes:
    """What the old file (kept alive as ``sidecar``) holds beyond ``offset``; the sidecar
    is removed afterwards, closed first as Windows requires.

    Raises:
        LateAppendError: the sidecar could not be read.
    """
    try:
        fd, _ = open_regular(sidecar)
        try:
            return collect_late_appends(fd, offset, leases=False, sleep=sleep, clock=clock)
        finally:
            os.close(fd)
    except OSError as error:
        raise LateAppendError(_bytes_beyond(sidecar, offset), error) from error
    finally:
        remove_quietly(sidecar)


def _bytes_beyond(path: Path, offset: int) -> int:
    with contextlib.suppress(OSError):
        return max(os.stat(path).st_size - offset, 0)
    return 0
