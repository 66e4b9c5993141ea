"""Other systems' file rules enforced on Linux, so every platform branch of the trim runs here.

``RecordingFcntl`` stands in for macOS's ``fcntl`` module and notes which file each call
was made on.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable


class RecordingFcntl:
    """An ``fcntl`` module that notes the file and command of every call; with
    ``full_fsync`` it has macOS's ``F_FULLFSYNC``, with ``fails`` every call is refused
    (as on a network share)."""

    F_FULLFSYNC: int

    def __init__(self, *, full_fsync: bool, fails: bool = False) -> None:
        if full_fsync:
            self.F_FULLFSYNC = 51  # its value on macOS
        self.fails = fails
        self.calls: list[tuple[str, int]] = []

    def fcntl(self, fd: int, cmd: int, arg: int = 0, /) -> int:
        self.calls.append((os.readlink(f"/proc/self/fd/{fd}"), cmd))
        if self.fails:
            raise OSError(errno.ENOTSUP, "Operation not supported")
        return 0


class RecordingFsync:
    """``os.fsync`` that notes the file of every call."""

    def __init__(self) -> None:
        self.paths: list[str] = []

    def __call__(self, fd: int) -> None:
        self.paths.append(os.readlink(f"/proc/self/fd/{fd}"))
        os.fsync(fd)


class SteppedTime:
    """A clock that moves only when gc sleeps, and a record of how long it slept."""

    def __init__(self, on_sleep: Callable[[float], None] | None = None) -> None:
        self.now = 0.0
        self.on_sleep = on_sleep

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        if self.on_sleep is not None:
            self.on_sleep(self.now)
