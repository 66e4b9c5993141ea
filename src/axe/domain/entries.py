"""Memory entries (a line starting ``## `` up to the next, axe-formats.md), found on raw
bytes, never decoded: memory files are hand-edited, may hold CRLF or invalid UTF-8, and the
bytes kept must come out exactly as they went in."""

from __future__ import annotations

import re

from attrs import frozen

from axe.domain.errors import AgentError

HEADER = b"## "
_LINE_HEADER = b"\n" + HEADER
ENTRY_START = re.compile(rb"\n(?=## )")  # ends where an entry begins, but at the file's start


def count_entries(data: bytes) -> int:
    """Number of entries in ``data``; text before the first header is not an entry."""
    return data.count(_LINE_HEADER) + data.startswith(HEADER)


def entry_starts(data: bytes) -> list[int]:
    starts = [found.end() for found in ENTRY_START.finditer(data)]
    return [0, *starts] if data.startswith(HEADER) else starts


def _entry_start_before(data: bytes, end: int) -> int:
    """Offset of the last entry that starts before ``end``, or -1 if there is none."""
    # A "\n## " at m starts an entry at m + 1; m + 1 < end means the match fits in end + 2.
    at = data.rfind(_LINE_HEADER, 0, end + 2)
    if at != -1:
        return at + 1
    return 0 if end > 0 and data.startswith(HEADER) else -1


def start_of_last(data: bytes, n: int) -> int | None:
    """Offset where the last ``n`` entries begin, or None if there are fewer; read from the
    end, so the cost follows what is kept."""
    start = len(data)
    for _ in range(n):
        start = _entry_start_before(data, start)
        if start == -1:
            return None
    return start


@frozen
class TrimPlan:
    """A trim decided before anything is written: every byte from ``keep_from`` to the end,
    appended ones included, survives unchanged; ``removed == 0``: the file is not touched."""

    keep_from: int
    removed: int
    kept: int

    @property
    def changes_file(self) -> bool:
        return self.removed > 0


def check_keep(keep: int) -> None:
    """Raises AgentError for a negative number of entries to keep (gc-spec Requirement 1.1)."""
    if keep < 0:
        raise AgentError("keepN must be non-negative")


def plan_trim(data: bytes, keep: int, *, total: int | None = None) -> TrimPlan:
    """Keep only the last ``keep`` entries (0: all) of ``data``, as ``LoadEntries(path,
    keep)`` would show them; ``total``: ``count_entries(data)``, if the caller has it.

    Raises:
        AgentError: ``keep`` is negative.
    """
    check_keep(keep)
    total = count_entries(data) if total is None else total
    start = start_of_last(data, keep) if keep else None
    if start is None or total <= keep:
        return TrimPlan(keep_from=0, removed=0, kept=total)
    return TrimPlan(keep_from=start, removed=total - keep, kept=keep)


@frozen
class MemorySnapshot:
    """A memory file's bytes as read, and the store's ``stamp`` of that version, by which it
    refuses to trim a file replaced or shrunk since."""

    content: bytes
    stamp: object = None
