"""One pass over the log that leaves a few integers per entry, in typed arrays.

Every later question (what repeats, what fails again, when runs happened) is answered from
these columns; an entry's bytes are read again only when it turns out to matter (a run of a
repeated task, whose result is compared until the results differ, or an entry the report
quotes). An entry costs about a dozen 8-byte integers, whatever its text.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator

from attrs import define, field

from axe.adapters.llm.offline.counting import FrequentCounter
from axe.adapters.llm.offline.reading import (
    NO_TIME,
    RESULT_LIMIT,
    Parts,
    failure_key,
    failure_line,
    is_truncated,
    locate,
    moment,
)
from axe.adapters.llm.offline.wording import LINE_MEMO_LIMIT, WordBook, fingerprint
from axe.domain.entries import entry_starts

_MEMO_RESULT_BYTES = RESULT_LIMIT + 100
KIND_SHARE = 10  # a kind of task is worth naming from one task in ten
_KINDS_TRACKED = 32  # at least KIND_SHARE; more spares the counter churn on varied logs


def _column() -> array[int]:
    return array("q")


def _fingerprints() -> array[int]:
    return array("Q")


@define
class Columns:
    """The log, and per entry (by index, in file order) what the analyst knows of it.

    Fingerprints are 0 where there is nothing (no Task line, no failure). ``book`` read
    the Task lines, and reads them again, from its memo where it can, for the few entries
    that turn out to matter.
    ``probes`` holds each entry's near-duplicate probes back to back; entry ``i``'s are
    ``probes[probe_ends[i - 1]:probe_ends[i]]``.
    """

    memory: bytes
    starts: array[int] = field(factory=_column)
    instants: array[int] = field(factory=_column)
    walls: array[int] = field(factory=_column)
    book: WordBook = field(factory=WordBook)
    shapes: array[int] = field(factory=_fingerprints)
    kinds: array[int] = field(factory=_fingerprints)
    wordings: array[int] = field(factory=_fingerprints)
    values: array[int] = field(factory=_fingerprints)
    failures: array[int] = field(factory=_fingerprints)
    probe_ends: array[int] = field(factory=_column)
    probes: array[int] = field(factory=_fingerprints)
    truncated: int = 0
    without_task: int = 0
    frequent_kinds: FrequentCounter = field(factory=lambda: FrequentCounter(_KINDS_TRACKED))

    def __len__(self) -> int:
        return len(self.starts)

    def parts(self, index: int) -> Parts:
        """Where entry ``index``'s pieces are in :attr:`memory`."""
        start = self.starts[index]
        end = self.starts[index + 1] if index + 1 < len(self.starts) else len(self.memory)
        return locate(self.memory, start, end)

    @property
    def tasks(self) -> int:
        """How many entries have a Task line with something in it."""
        return len(self.shapes) - self.shapes.count(0)

    def with_task(self) -> Iterator[int]:
        """Indexes of the entries that have a Task line with something in it."""
        return (index for index, shape in enumerate(self.shapes) if shape)


def scan(memory: bytes, book: WordBook | None = None) -> Columns:
    """Read every entry of ``memory`` once into :class:`Columns`."""
    columns = Columns(memory, book=book or WordBook())
    starts = entry_starts(memory)
    add_start, add_instant, add_wall = (
        columns.starts.append,
        columns.instants.append,
        columns.walls.append,
    )
    add_failure = columns.failures.append
    results = ResultBook()
    for start, end in zip(starts, [*starts[1:], len(memory)][: len(starts)], strict=True):
        parts = locate(memory, start, end)
        add_start(start)
        when = moment(memory, start, parts)
        add_instant(when.instant if when else NO_TIME)
        add_wall(when.wall if when else NO_TIME)
        _add_task(columns, parts)
        failure, truncated = results.read(memory[parts.result_start : parts.result_end])
        add_failure(failure)
        columns.truncated += truncated
    return columns


class ResultBook:
    """Reads results: which failure each reports (a fingerprint, 0 for none) and whether
    it was cut at the length limit. Remembers recent short results, since many logs say
    "Done." or the same error a thousand times; long ones would make the memo unbounded."""

    def __init__(self, limit: int = LINE_MEMO_LIMIT) -> None:
        self._memo: dict[bytes, tuple[int, bool]] = {}
        self._limit = limit

    def read(self, result: bytes) -> tuple[int, bool]:
        known = self._memo.get(result)
        if known is not None:
            return known
        failure = failure_line(result)
        verdict = (fingerprint(failure_key(failure)) if failure else 0, is_truncated(result))
        if len(result) <= _MEMO_RESULT_BYTES:
            if len(self._memo) >= self._limit:
                self._memo.clear()
            self._memo[result] = verdict
        return verdict


def _add_task(columns: Columns, parts: Parts) -> None:
    task = None
    if parts.task_start == -1:
        columns.without_task += 1
    else:
        task = columns.book.read(columns.memory[parts.task_start : parts.task_end])
    if task is None:
        for column in (columns.shapes, columns.kinds, columns.wordings, columns.values):
            column.append(0)
    else:
        columns.shapes.append(task.shape)
        columns.kinds.append(task.kind)
        columns.wordings.append(task.wording)
        columns.values.append(task.values)
        columns.probes.extend(task.probes)
        if task.kind:
            columns.frequent_kinds.add(task.kind, task.kind_word)
    columns.probe_ends.append(len(columns.probes))
