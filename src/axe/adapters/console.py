"""The terminal: results on stdout, problems on stderr, a live status line while waiting.

stdout carries exactly the spec's lines so scripts can parse it. The status line appears
only when stderr is a terminal (never in cron mail or pipes) and is erased before anything
else is written, so it leaves no trace in what the user keeps.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import BinaryIO

_FRAMES = "|/-\\"
_ERASE_LINE = "\r\x1b[2K"
_DIM, _RESET = "\x1b[2m", "\x1b[0m"


class ConsoleOutput:
    """An ``Output`` over two binary streams (usually the process's stdout and stderr)."""

    def __init__(
        self,
        stdout: BinaryIO,
        stderr: BinaryIO,
        *,
        interactive: bool = False,
        color: bool = False,
        clock: Callable[[], float] = time.monotonic,
        refresh_seconds: float = 0.1,
    ) -> None:
        self._stdout = stdout
        self._stderr = stderr
        self._interactive = interactive
        self._color = color
        self._clock = clock
        self._refresh = refresh_seconds
        self._lock = threading.Lock()
        self._status_shown = False

    def say(self, text: str) -> None:
        self._write(self._stdout, text + "\n")

    def warn(self, text: str) -> None:
        self._write(self._stderr, text + "\n")

    @contextlib.contextmanager
    def waiting(self, status: str) -> Iterator[None]:
        if not self._interactive:
            yield
            return
        stop = threading.Event()
        started = self._clock()

        def paint(frame: int) -> None:
            elapsed = int(self._clock() - started)
            line = f"{_FRAMES[frame % len(_FRAMES)]} {status} ({elapsed}s)"
            if self._color:
                line = f"{_DIM}{line}{_RESET}"
            with self._lock:
                self._raw(self._stderr, _ERASE_LINE + line)
                self._status_shown = True

        def animate() -> None:
            frame = 1
            while not stop.wait(self._refresh):
                paint(frame)
                frame += 1

        paint(0)  # at once, so even a short wait is visible
        painter = threading.Thread(target=animate, name="axe-status", daemon=True)
        painter.start()
        try:
            yield
        finally:
            stop.set()
            painter.join()
            with self._lock:
                self._clear_status()

    def _write(self, stream: BinaryIO, text: str) -> None:
        with self._lock:
            self._clear_status()
            self._raw(stream, text)

    def _clear_status(self) -> None:
        if self._status_shown:
            self._raw(self._stderr, _ERASE_LINE)
            self._status_shown = False

    @staticmethod
    def _raw(stream: BinaryIO, text: str) -> None:
        stream.write(text.encode("utf-8", "backslashreplace"))
        stream.flush()
