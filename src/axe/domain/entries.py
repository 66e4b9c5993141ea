"""Memory entries, found and counted on raw bytes.

An entry begins at every line that starts with the three bytes ``## `` and runs to the next
such line or the end of the file (axe-formats.md). Everything here works on ``bytes`` and
never decodes: memory files are hand-edited, may hold CRLF line ends or invalid UTF-8, and
the bytes that are kept must come out exactly as they went in.

The functions lean on ``bytes.count`` / ``bytes.rfind`` (C loops) rather than Python loops
over lines, because memory files are exactly the files that grew large, and the last N
entries are found by scanning back from the end so the cost follows what is kept.

"""

from __future__ import annotations

from attrs import frozen

from axe.domain.errors import AgentError

HEADER = b"## "
_LINE_HEADER = b"\n" + HEADER


def count_entries(data: bytes) -> int:
    """Number of entries in ``data``; text before the first header is not an entry."""
    return data.count(_LINE_HEADER) + data.startswith(HEADER)


def entry_starts(data: bytes) -> list[int]:
    """Byte offsets at which each entry begins, in file order."""
    starts = [0] if data.startswith(HEADER) else []
    at = data.find(_LINE_HEADER)
    while at != -1:
        starts.append(at + 1)
        at = data.find(_LINE_HEADER, at + 1)
    return starts


def _entry_start_before(data: bytes, end: int) -> int:
    """Offset of the last entry that starts before ``end``, or -1 if there is none."""
    # A "\n## " at m starts an entry at m + 1; m + 1 < end means the match fits in end + 2.
    at = data.rfind(_LINE_HEADER, 0, end + 2)
    if at != -1:
        return at + 1
    return 0 if end > 0 and data.startswith(HEADER) else -1


def start_of_last(data: bytes, n: int) -> int | None:
    """Offset where the last ``n`` entries begin, or None if there are fewer than ``n``;
    scanning back from the end of ``data``, it reads only the bytes that would be kept."""
    start = len(data)
    for _ in range(n):
        start = _entry_start_before(data, start)
        if start == -1:
            return None
    return start


@frozen
class TrimPlan:
    """What a trim of one memory snapshot will do, decided before anything is written: every
    byte from ``keep_from`` (the offset in the snapshot where the kept entries begin) to the
    end of the file, appended ones included, survives unchanged; ``removed == 0`` means the
    file must not be touched at all."""

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
    """Decide how to keep only the last ``keep`` entries of ``data``.

    ``keep == 0`` means "keep all" and, like a file already within the limit, yields a plan
    that leaves the file untouched (text before the first header included). Otherwise the
    pre-header text and all older entries go, as ``LoadEntries(path, keep)`` would show it.
    ``total`` is ``count_entries(data)`` when the caller has it already (a full scan saved).

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
    """The bytes of a memory file as read at one moment, and the store's note of which
    version of the file they came from (``stamp``, opaque to the core), by which it refuses to
    apply a :class:`TrimPlan` to a file replaced or shrunk since, at a stale offset."""

    content: bytes
    stamp: object = None
