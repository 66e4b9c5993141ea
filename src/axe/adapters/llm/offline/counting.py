"""Counting in bounded memory: which fingerprints repeat, and which are frequent.

A log whose every task is different must not cost a dictionary entry per task just to learn
that nothing repeats. So a :class:`RepeatFilter` first marks each value in a table of small
counters that saturate at two (a one-hash counting Bloom filter, a few bytes per value);
only values whose slot was hit twice can repeat, and only those are counted exactly, in a
second pass (:func:`repeated`). The filter errs only towards "maybe", so the answer is
exact, and it is the same for any table size: the size trades memory for the length of the
second pass (with 16 slots a value, about one value in 16 that occurs once is looked at
needlessly).

:class:`FrequentCounter` finds the values that make up a given share of a stream with a
fixed number of counters (Misra and Gries); the caller then counts those few exactly.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

_SLOT_CAP = 2
_SATURATED_INCREMENT = bytes([1, 2, 2])
_SMALLEST_TABLE = 64
SLOTS_PER_VALUE = 16


class RepeatFilter:
    """Which of some values may occur more than once: never a false "no".

    One counter per slot, saturating at two; a value's slot is its remainder by the table
    size, so values must be well-mixed fingerprints. ``expected`` (how many values there
    are) sizes the table.
    """

    def __init__(
        self, values: Iterable[int], *, expected: int, slots_per_value: int = SLOTS_PER_VALUE
    ) -> None:
        self._size = size = max(_SMALLEST_TABLE, expected * slots_per_value)
        self._table = table = bytearray(size)
        for value in values:
            slot = value % size
            table[slot] = _SATURATED_INCREMENT[table[slot]]

    def positions(self, values: Iterable[int]) -> list[int]:
        """The positions in ``values`` of the non-zero values that may repeat."""
        table, size = self._table, self._size
        return [at for at, value in enumerate(values) if value and table[value % size] == _SLOT_CAP]


def repeated(values: Sequence[int], *, slots_per_value: int = SLOTS_PER_VALUE) -> dict[int, int]:
    """Exact counts of the non-zero values that occur more than once in ``values``."""
    maybe = RepeatFilter(values, expected=len(values), slots_per_value=slots_per_value)
    counts: dict[int, int] = {}
    for at in maybe.positions(values):
        counts[values[at]] = counts.get(values[at], 0) + 1
    return {value: count for value, count in counts.items() if count > 1}


class FrequentCounter:
    """Keeps every key that makes up more than ``1 / (capacity + 1)`` of what it was given.

    It may keep a few rarer keys too, and its counts are lower bounds: ask the data for
    exact counts of :attr:`candidates`. Each key carries a name (the first one it was given
    since it was last tracked).
    """

    def __init__(self, capacity: int) -> None:
        self._capacity = capacity
        self._counts: dict[int, int] = {}
        self._names: dict[int, str] = {}

    def add(self, key: int, name: str) -> None:
        """Count ``key``, known as ``name``."""
        if key in self._counts:
            self._counts[key] += 1
        elif len(self._counts) < self._capacity:
            self._counts[key] = 1
            self._names[key] = name
        else:
            self._forget_one_each()

    def _forget_one_each(self) -> None:
        for key in list(self._counts):
            self._counts[key] -= 1
            if not self._counts[key]:
                del self._counts[key]
                del self._names[key]

    @property
    def candidates(self) -> dict[int, str]:
        """Every key that may be frequent, with its name."""
        return dict(self._names)
