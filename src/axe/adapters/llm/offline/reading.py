"""Finding an entry's header, Task line and Result on the log's bytes, without copying them.

An entry is what :mod:`axe.domain.entries` says it is (from a ``## `` line to the next).
Inside it, ``axe run`` writes a ``**Task:**`` line and a ``**Result:**`` that runs to the end
of the entry; hand-written entries may have neither. Everything here returns offsets into
the log, and decodes only the few bytes a caller asks for, because a log of 100,000 entries
must not become 100,000 strings.

Text is decoded leniently: valid UTF-8 as such, and any byte that is not valid UTF-8 as the
Windows-1252 (Latin-1) character it most likely was, so "caf\\xe9" reads as "café", one word.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import NamedTuple

from axe.domain.entries import HEADER

RESULT_LIMIT = 1000
NO_TIME = (1 << 63) - 1  # sorts after every real instant
_TASK = b"\n**Task:**"
_RESULT = b"\n**Result:**"
_ELLIPSIS = b"..."
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)
_STRAY_BYTES = {
    0xDC00 + byte: bytes([byte]).decode("cp1252", "replace") for byte in range(128, 256)
}

_FAILURE_WORDS = (
    r"\b(error|errors|failed|failure|fails|timeout|timed out|exception|denied|refused"
    r"|unauthori[sz]ed|forbidden|not found|panic|traceback|crash(?:ed)?)\b"
)
_FAILURE = re.compile(_FAILURE_WORDS, re.IGNORECASE)
_FAILURE_LOWER_BYTES = re.compile(_FAILURE_WORDS.encode())  # IGNORECASE is 3x slower
_VOLATILE = re.compile(
    r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b|\b0x[0-9a-f]+\b|\d+",
    re.IGNORECASE,
)
_QUOTE_CHARS = 80


class Parts(NamedTuple):
    """Offsets of one entry's pieces in the log; ``task_start`` is -1 without a Task line.

    The result runs from the ``**Result:**`` marker to the end of the entry, or is the
    whole body when there is no marker; its bounds are not stripped of whitespace.
    """

    header_end: int
    task_start: int
    task_end: int
    result_start: int
    result_end: int


def text_of(raw: bytes) -> str:
    """``raw`` decoded; bytes that are not UTF-8 read as Windows-1252, never as U+FFFD."""
    try:
        return raw.decode()
    except UnicodeDecodeError:
        return raw.decode("utf-8", "surrogateescape").translate(_STRAY_BYTES)


def locate(memory: bytes, start: int, end: int) -> Parts:
    """Where the header, the first Task line and the Result of the entry at ``start`` are."""
    header_end = memory.find(b"\n", start, end)
    if header_end == -1:
        return Parts(end, -1, -1, end, end)
    task = memory.find(_TASK, header_end, end)
    task_end = -1
    if task != -1:
        task_end = memory.find(b"\n", task + 1, end)
        task_end = end if task_end == -1 else task_end
        task += len(_TASK)
    result = memory.find(_RESULT, header_end, end)
    result_start = header_end + 1 if result == -1 else result + len(_RESULT)
    return Parts(header_end, task, task_end, result_start, end)


def label(memory: bytes, start: int, parts: Parts) -> str:
    """The header line as written (after ``## ``), used to cite the entry."""
    return text_of(memory[start + len(HEADER) : parts.header_end]).strip()


def task_text(memory: bytes, parts: Parts) -> str | None:
    """The Task line's text, or None when the entry has no Task line."""
    if parts.task_start == -1:
        return None
    return text_of(memory[parts.task_start : parts.task_end]).strip()


class Moment(NamedTuple):
    """When an entry ran: the instant (µs since the epoch) and the wall clock it was
    written in (µs, as if that clock were UTC), which decides its calendar day."""

    instant: int
    wall: int


def moment(memory: bytes, start: int, parts: Parts) -> Moment | None:
    """The entry's header timestamp (ISO 8601, UTC when it has no offset), if it has one."""
    words = memory[start + len(HEADER) : parts.header_end].split(maxsplit=1)
    if not words:
        return None
    try:
        when = datetime.fromisoformat(words[0].decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    instant = (when - _EPOCH) // _MICROSECOND
    if when.tzinfo is UTC:  # nearly every log: skip the offset
        return Moment(instant, instant)
    offset = when.utcoffset()
    return Moment(instant, instant + offset // _MICROSECOND if offset else instant)


def is_truncated(result: bytes) -> bool:
    """Whether a result was cut at ``axe run``'s limit: long, and ending in "..."."""
    if len(result) < RESULT_LIMIT or not result[-16:].rstrip().endswith(_ELLIPSIS):
        return False
    raw = result.strip()
    if raw.isascii():
        return len(raw) - raw.count(b"\r\n") >= RESULT_LIMIT
    return len(text_of(raw).replace("\r\n", "\n")) >= RESULT_LIMIT


def failure_line(result: bytes) -> str | None:
    """The first line of ``result`` that reports a failure, clipped for quoting, if any.

    The bytes are searched (ASCII case folded); a hit is confirmed on the decoded line,
    where a word boundary next to a non-ASCII letter is no boundary.
    """
    lowered = result.lower()
    at = 0
    while (found := _FAILURE_LOWER_BYTES.search(lowered, at)) is not None:
        line_start = result.rfind(b"\n", 0, found.start()) + 1
        line_end = result.find(b"\n", found.end())
        line_end = len(result) if line_end == -1 else line_end
        line = text_of(result[line_start:line_end])
        if _FAILURE.search(line):
            return clip(line)
        at = line_end
    return None


def result_of(memory: bytes, parts: Parts) -> bytes:
    return memory[parts.result_start : parts.result_end]


def failure_key(line: str) -> str:
    """Failures are the same when their lines differ only in numbers and ids."""
    return _VOLATILE.sub("#", line.lower())


def clip(text: str, limit: int = _QUOTE_CHARS) -> str:
    """``text`` on one line, cut to ``limit`` characters with "..." when longer."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."
