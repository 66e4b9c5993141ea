"""One entry's pieces on the log's bytes (from a ``## `` line to the next, as
:mod:`axe.domain.entries` says; ``axe run`` writes a ``**Task:**`` line and a ``**Result:**``
to the end, hand-written entries may have neither), and what its header and result say."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import NamedTuple

from axe.domain.entries import HEADER

RESULT_LIMIT = 1000
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_STRAY = {0xDC00 + byte: bytes([byte]).decode("cp1252", "replace") for byte in range(128, 256)}
_FAILURE_WORDS = (
    r"\b(?:errors?|exceptions?|failed|failures?|fails|timeout|timed out|denied|refused"
    r"|unauthori[sz]ed|forbidden|not found(?! any)|panic|traceback|crash(?:ed)?)\b"
)
_FAILURE = re.compile(_FAILURE_WORDS, re.IGNORECASE)
_MAYBE_FAILURE = re.compile(_FAILURE_WORDS.encode())  # on lower-cased bytes, before decoding
_NEGATIONS = frozenset({"no", "not", "without", "zero", "0", "never", "none", "nothing"})
_ZERO_AFTER = re.compile(r"\s*[:=]\s*(?:0|none)\b(?!\.\d)", re.IGNORECASE)  # "errors: 0"


class Pieces(NamedTuple):  # an entry's
    header: bytes  # after "## "
    task: bytes | None  # its Task line; None without one
    result: bytes  # after "**Result:**"; without that marker, the whole body


def text_of(raw: bytes) -> str:
    """``raw`` decoded; bytes that are not UTF-8 read as Windows-1252, never as U+FFFD."""
    try:
        return raw.decode()
    except UnicodeDecodeError:
        return raw.decode("utf-8", "surrogateescape").translate(_STRAY)


def pieces(memory: bytes, start: int, end: int) -> Pieces:
    """The pieces of the entry ``memory[start:end]``."""
    header_end = memory.find(b"\n", start, end)
    if header_end == -1:
        return Pieces(memory[start + len(HEADER) : end], None, b"")
    task_at, task = memory.find(b"\n**Task:**", header_end, end), None
    if task_at != -1:
        task_end = memory.find(b"\n", task_at + 1, end)
        task = memory[task_at + 10 : end if task_end == -1 else task_end]
    result = memory.find(b"\n**Result:**", header_end, end)
    body = header_end + 1 if result == -1 else result + 12
    return Pieces(memory[start + len(HEADER) : header_end], task, memory[body:end])


def moment(header: bytes) -> tuple[int, int] | None:
    """When the entry ran, if its header starts with an ISO 8601 time on the calendar in UTC
    (UTC without an offset): µs since the epoch, and the day since then on its writer's clock."""
    try:
        when = datetime.fromisoformat(header.split(maxsplit=1)[0].decode("ascii"))
        wall = when.replace(tzinfo=UTC)  # the writer's clock, read as UTC
        instant = when.astimezone(UTC) if when.tzinfo else wall
    except (IndexError, UnicodeDecodeError, ValueError, OverflowError):
        return None
    return (instant - _EPOCH) // timedelta(microseconds=1), (wall - _EPOCH).days


def is_truncated(result: bytes) -> bool:
    """Whether a result was cut at ``axe run``'s limit: long, and ending in "..."."""
    text = result.strip()
    return text.endswith(b"...") and len(text_of(text).replace("\r\n", "\n")) >= RESULT_LIMIT


@lru_cache(maxsize=1 << 10)  # logs repeat their results: "Done.", the same error
def failure_line(result: bytes) -> str | None:
    """The first line of ``result`` that says something failed, clipped for quoting. A
    failure word counts unless its clause denies it, in the three words before it ("no
    errors", "0 failed", "without error", "not found any errors") or after it ("errors: 0")."""
    if not _MAYBE_FAILURE.search(result.lower()):
        return None
    for line in text_of(result).split("\n"):
        for found in _FAILURE.finditer(line):
            before = line[max(0, found.start() - 200) : found.start()]
            clause = before[max(map(before.rfind, ",.;:!?()[]")) + 1 :].lower().split()[-3:]
            if not _ZERO_AFTER.match(line, found.end()) and not any(
                word in _NEGATIONS or word.endswith(("n't", "n\u2019t")) for word in clause
            ):
                return clip(line)
    return None


def clip(text: str, limit: int = 80) -> str:
    """``text`` on one line, cut to ``limit`` characters with "..." when longer."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."
