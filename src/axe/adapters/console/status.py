"""The live status line on a terminal's stderr while gc waits for something slow.

It must never wrap, nor may the ``^C`` the terminal echoes after it: erase-line clears only
the cursor's row. So each paint measures the terminal (windows get resized) and cuts the
line to leave :data:`ROOM_FOR_ECHO` columns free, wide characters counting two cells.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
import unicodedata
from collections.abc import Callable, Mapping
from typing import BinaryIO

from axe.application.ports import Clock
from axe.domain.safe_text import terminal_safe

_FRAMES = "|/-\\"
ERASE_LINE = "\r\x1b[2K"
_DIM, _RESET = "\x1b[2m", "\x1b[0m"
_ELLIPSIS = "\u2026"
ROOM_FOR_ECHO = 3  # the echoed "^C", and one column so the cursor never waits to wrap


def cells(text: str) -> int:
    """Terminal columns ``text`` takes: East Asian wide characters two, combining marks none."""
    return sum(_cell_width(char) for char in text)


def _cell_width(char: str) -> int:
    if unicodedata.combining(char):
        return 0
    return 2 if unicodedata.east_asian_width(char) in "WF" else 1


def _head(text: str, room: int) -> str:
    taken, used = [], 0
    for char in text:
        width = _cell_width(char)
        if used + width > room:
            break
        taken.append(char)
        used += width
    return "".join(taken)


def fit(text: str, room: int) -> str:
    """``text`` in at most ``room`` cells: if too wide, its middle gives way to an ellipsis,
    so both the start (what is being done) and the end (to whom, how far) stay readable."""
    if cells(text) <= room:
        return text
    if room <= 1:
        return _head(text, room)
    head = _head(text, (room - 1) // 3)
    tail = _head(text[::-1], room - 1 - cells(head))[::-1]  # as much of its end as fits
    return head + _ELLIPSIS + tail


def fit_keeping(text: str, keep: str, room: int) -> str:
    """``text`` in at most ``room`` cells, ``keep`` (its first occurrence: an agent's name)
    given way last: the words after it shrink first, then those before it go, then it is
    cut too."""
    before, found, after = text.partition(keep) if keep else (text, "", "")
    if cells(text) <= room or not found:
        return fit(text, room)
    rest = room - cells(keep)
    if after and rest - cells(before) >= 2:
        return before + keep + _shrunk(after, rest - cells(before))
    if not after and rest >= 1:
        return fit(before, rest) + keep
    if after and rest >= 2:  # the words before go; the name leads
        return keep + _shrunk(after, rest)
    return fit(keep, room)


def _shrunk(text: str, room: int) -> str:
    """``text`` in ``room`` cells: its middle gives way, or with little room its end."""
    if cells(text) <= room or room >= 8:
        return fit(text, room)
    return _head(text, room - 1) + _ELLIPSIS


def one_row(text: str) -> str:
    """``text`` safe for the terminal and on one row: a model name from a TOML file may hold
    a newline or a tab, which would move the cursor off the row erase-line clears."""
    return re.sub(r"\s", " ", terminal_safe(text))


def status_text(
    frame: int,
    text: str,
    elapsed: float,
    columns: int,
    keep: str = "",
    *,
    shorter: tuple[str, ...] = (),
) -> str:
    """One frame of the status line, at most ``columns - ROOM_FOR_ECHO`` cells wide: ``text``,
    else the first of its ``shorter`` forms that fits whole (a model named without its
    provider and date stays readable where a cut would keep only its date), else the last
    cut to fit, ``keep`` (the agent's name) cut last."""
    width = columns - ROOM_FOR_ECHO
    spinner = f"{_FRAMES[frame % len(_FRAMES)]} "
    timer = f" ({int(elapsed)}s)"
    room = width - cells(spinner) - cells(timer)
    if room < 4:  # too narrow for words: the timer alone, or nothing
        return fit(timer.strip(), width)
    forms = (text, *shorter)
    chosen = next((form for form in forms if cells(form) <= room), forms[-1])
    return spinner + fit_keeping(chosen, keep, room) + timer


def terminal_columns(stream: BinaryIO, environ: Mapping[str, str]) -> int:
    """The width of the terminal behind ``stream``; where it reports none (a container
    console, a serial line), ``COLUMNS``, else 80."""
    try:
        columns = os.get_terminal_size(stream.fileno()).columns
    except (OSError, ValueError, AttributeError):
        columns = 0
    if columns > 0:
        return columns
    declared = environ.get("COLUMNS", "").strip()
    return int(declared) if declared.isdecimal() and int(declared) > 0 else 80


class StatusLine:
    """An animated one-row status on ``stream``, repainted every ``refresh_seconds``, timed
    by the run's ``clock``; every write happens under ``lock``, which the console shares, so
    a frame never lands in the middle of a result line."""

    def __init__(
        self,
        stream: BinaryIO,
        lock: threading.Lock,
        *,
        color: bool,
        clock: Clock,
        refresh_seconds: float = 0.1,
        columns: Callable[[], int] | None = None,
    ) -> None:
        self._stream = stream
        self._lock = lock
        self._color = color
        self._clock = clock
        self._refresh = refresh_seconds
        self._columns = columns or (lambda: terminal_columns(stream, os.environ))
        self._words: tuple[str, str, tuple[str, ...]] | None = None  # text, keep, shorter
        self._started = 0.0
        self._frame = 0
        self._painted = False
        self._stop = threading.Event()
        self._painter: threading.Thread | None = None

    def show(self, text: str, keep: str = "", shorter: tuple[str, ...] = ()) -> None:
        """Start showing ``text`` (caller holds the lock); the timer starts now. ``keep``
        is the part of it cut last on a narrow terminal (the agent's name), ``shorter`` the
        forms of it shown where it does not fit whole."""
        self._words = one_row(text), one_row(keep), tuple(map(one_row, shorter))
        self._started = self._clock.monotonic()
        self._paint()
        if self._painter is None:
            self._stop.clear()
            self._painter = threading.Thread(target=self._animate, name="axe-status", daemon=True)
            self._painter.start()

    def update(self, text: str, keep: str = "", shorter: tuple[str, ...] = ()) -> None:
        """Change the words but keep the timer running (caller holds the lock)."""
        if self._words is None:
            self.show(text, keep, shorter)
            return
        self._words = one_row(text), one_row(keep), tuple(map(one_row, shorter))
        self._paint()

    def hide(self) -> None:
        """Stop and erase (caller holds the lock); nothing is left on the screen."""
        self._words = None
        self.erase()
        painter, self._painter = self._painter, None
        if painter is not None:
            self._stop.set()
            # Quick: the painter never waits for the lock we hold. RuntimeError: Ctrl-C
            # struck inside its start(); it stops as soon as it starts.
            with contextlib.suppress(RuntimeError):
                painter.join()

    def erase(self) -> None:
        """Clear the row before something else is written (caller holds the lock)."""
        if self._painted:
            self._write(ERASE_LINE)
            self._painted = False

    def _animate(self) -> None:
        while not self._stop.wait(self._refresh):
            if not self._lock.acquire(blocking=False):
                continue  # someone is writing; this frame is skipped, never waited for
            try:
                self._frame += 1
                self._paint()
            finally:
                self._lock.release()

    def _paint(self) -> None:
        if self._words is None:
            return
        text, keep, shorter = self._words
        elapsed = self._clock.monotonic() - self._started
        line = status_text(self._frame, text, elapsed, self._columns(), keep, shorter=shorter)
        if self._color:
            line = f"{_DIM}{line}{_RESET}"
        self._painted = True  # first: a Ctrl-C during the write must still erase it
        self._write(ERASE_LINE + line)

    def _write(self, text: str) -> None:
        self._stream.write(text.encode("utf-8", "backslashreplace"))
        self._stream.flush()
