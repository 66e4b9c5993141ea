"""Splitting a memory log that does not fit one request into parts that do.

A part is a run of consecutive entries, in log order, cut only where an entry begins (a
line starting ``## ``); together the parts cover the log exactly once. Text before the
first entry travels with the first part. An entry that alone exceeds a part is sent cut,
with a marker saying how many bytes were left out: that changes the prompt, never the file.
"""

from __future__ import annotations

import bisect
import copy
import math
from collections.abc import Callable

from attrs import frozen

from axe.domain.entries import BLOCK, HEADER, EntryCounts
from axe.domain.tokens import (
    Classes,
    Tally,
    classes_sum,
    tally,
    tally_classes,
    token_classes,
)

Measure = Callable[[Classes], float]  # what an estimate by kind of text costs (default: sum)
_MARKER = (
    "\n[... axe gc left out the last {omitted:,} bytes of this entry here: the entry alone "
    "is larger than the model's context window allows ...]\n"
)
_MIN_KEPT = 64  # bytes of a cut entry always sent: at least its header line, in practice


@frozen
class Part:
    """Bytes ``start:end`` of the log, holding entries ``first_entry`` (1-based) onward.

    ``sent_bytes`` is None when the part is sent whole; otherwise it is one entry of which
    only the first ``sent_bytes`` go out, followed by the marker.
    """

    start: int
    end: int
    first_entry: int
    entries: int
    sent_bytes: int | None = None

    @property
    def sent_size(self) -> int:
        """Bytes of the log this part sends (the marker of a cut entry not counted)."""
        return self.end - self.start if self.sent_bytes is None else self.sent_bytes

    def content(self, log: bytes) -> bytes:
        """What is sent for this part."""
        if self.sent_bytes is None:
            return log[self.start : self.end]
        omitted = self.end - self.start - self.sent_bytes
        marker = _MARKER.format(omitted=omitted).encode()
        return log[self.start : self.start + self.sent_bytes] + marker

    def label(self, log: bytes) -> str:
        """Which entries and timestamps the part covers, for the merge request."""
        last = self.first_entry + self.entries - 1
        span = (
            f"entry {self.first_entry}"
            if self.entries == 1
            else (f"entries {self.first_entry}-{last}")
        )
        first_header = _header(log, _first_entry_start(log, self.start, self.end))
        last_header = _header(log, _last_entry_start(log, self.start, self.end))
        if first_header and last_header and first_header != last_header:
            return f"{span}, {first_header} to {last_header}"
        return f"{span}, {first_header}" if first_header else span


_LINE_HEADER = b"\n" + HEADER


def _header(log: bytes, at: int) -> str:
    if not log.startswith(HEADER, at):
        return ""
    end = log.find(b"\n", at, at + 200)
    return log[at + 3 : end if end != -1 else at + 200].decode("utf-8", "replace").strip()


def _first_entry_start(log: bytes, start: int, end: int) -> int:
    if log.startswith(HEADER, start):
        return start
    at = log.find(_LINE_HEADER, start, end)
    return at + 1 if at != -1 else start


def _last_entry_start(log: bytes, start: int, end: int) -> int:
    at = log.rfind(_LINE_HEADER, start, end - 1)
    return at + 1 if at != -1 else start


class LogLayout:
    """One log's entries and estimate, worked out once, a 32 KiB block at a time as planning
    first asks for them, and shared by every split of it.

    Where parts may begin or end (units: each entry, and the text before the first) is
    found with ``find``/``rfind`` around the offset asked about, and entries are counted
    per block, so neither costs a Python step per entry of a log of 200,000 of them.
    """

    def __init__(
        self,
        log: bytes,
        measure: Measure = sum,
        entries: EntryCounts | None = None,
    ) -> None:
        self.log = log
        self._view = memoryview(log)
        self.measure = measure
        # The counts made for the ``Entries:`` line when they are of this log, else anew.
        self.entries = entries if entries is not None and entries.data is log else EntryCounts(log)
        self._blocks: list[Classes] = [(0.0,) * 7]  # the estimate up to each block boundary
        self._heads: dict[int, Classes] = {}  # the estimate from an offset to its block's end
        self._tails: dict[int, Tally] = {}  # the counts from its block's start to an offset
        self._ends: dict[int, list[int]] = {}  # by block: the offsets in _tails, in order

    def measured(self, measure: Measure) -> LogLayout:
        """The same log, entries and estimates, its spans costed by ``measure`` instead."""
        other = copy.copy(self)
        other.measure = measure
        return other

    def cost(self, start: int, end: int) -> int:
        return math.ceil(self.measure(self.classes(start, end)))

    def cost_of(self, data: bytes) -> int:
        """What ``data`` would cost, were it sent as (part of) the log."""
        return math.ceil(self.measure(token_classes(data)))

    def classes(self, start: int, end: int) -> Classes:
        """The estimate of bytes ``start:end`` by kind of text: whole blocks from the kept
        sums, the two ends counted apart (at most a word counted twice where they meet:
        never below the estimate of the span in one piece), the head once for each start
        and the tail on from the nearest end counted in its block, so planning many parts
        of a large log costs about one pass over it."""
        if self.in_one_piece(start, end):
            return token_classes(self._view[start:end])
        first, last = -(-start // BLOCK), end // BLOCK
        self._extend(last)
        blocks = self._blocks
        middle = tuple(b - a for a, b in zip(blocks[first], blocks[last], strict=True))
        if (head := self._heads.get(start)) is None:
            head = self._heads[start] = token_classes(self._view[start : first * BLOCK])
        return classes_sum(head, middle, tally_classes(self._tail(last, end)))

    def in_one_piece(self, start: int, end: int) -> bool:
        """Whether :meth:`classes` estimates bytes ``start:end`` in one piece (no whole block
        between its ends): exactly as those bytes alone are estimated."""
        return -(-start // BLOCK) >= end // BLOCK

    def _tail(self, block: int, end: int) -> Tally:
        """The counts of bytes from ``block``'s start to ``end``, counted on from the
        nearest offset before it already counted: a search for where a part ends tries
        ends ever closer together, and each costs only the bytes beyond the last that fit."""
        if (known := self._tails.get(end)) is not None:
            return known
        ends = self._ends.setdefault(block, [])
        at = bisect.bisect(ends, end)
        start, after = (ends[at - 1], self._tails[ends[at - 1]]) if at else (block * BLOCK, None)
        ends.insert(at, end)
        counted = self._tails[end] = tally(self._view[start:end], after)
        return counted

    def _extend(self, upto: int) -> None:
        """The running sums kept up to block ``upto``."""
        blocks = self._blocks
        for block in range(len(blocks) - 1, upto):
            blocks.append(classes_sum(blocks[-1], self._block_classes(block)))

    def _block_classes(self, block: int) -> Classes:
        """What the spread counts of one block: pure, so any process may count it."""
        return token_classes(self._view[block * BLOCK : (block + 1) * BLOCK])

    def entries_between(self, start: int, end: int) -> int:
        """How many entries begin in bytes ``start:end``."""
        return self.entries.before(end) - self.entries.before(start)

    def part(self, start: int, end: int) -> Part:
        """Bytes ``start:end`` as a part, its entries numbered and counted."""
        first = self.entries.before(start)
        return Part(start, end, first + 1, self.entries.before(end) - first)

    def unit_at_or_before(self, at: int, after: int) -> int | None:
        """The last entry's start in ``after+1:at+1``; None if there is none. (Every caller
        asks inside the log and decides about the log's end itself.)"""
        found = self.log.rfind(_LINE_HEADER, after, at + 3)  # its "##" at or before ``at``
        return found + 1 if found != -1 else None

    def unit_after(self, at: int, before: int) -> int | None:
        """The first entry's start in ``at+1:before``; None if there is none."""
        found = self.log.find(_LINE_HEADER, at, before + 2)  # its "##" before ``before``
        return found + 1 if found != -1 else None

    def bounds_between(self, start: int, end: int) -> list[int]:
        """The unit boundaries from ``start`` to ``end``, both included."""
        bounds = [start]
        while (following := self.unit_after(bounds[-1], end)) is not None:
            bounds.append(following)
        return bounds + [end] * (bounds[-1] != end)


def plan_parts(layout: LogLayout, room: int, start: int = 0, end: int | None = None) -> list[Part]:
    """Consecutive parts of ``start:end`` (the whole log by default), each estimated at
    most ``room`` tokens, as few as a greedy fill from the start gives.

    Raises:
        ValueError: ``room`` is not positive.
    """
    if room <= 0:
        raise ValueError("a part must have room for at least one token")
    end = len(layout.log) if end is None else end
    density = max(layout.cost(start, end), 1) / max(end - start, 1)
    parts: list[Part] = []
    while start < end:
        last = _furthest_fit(layout, start, end, room, density)
        if last is None:  # one unit alone is too big: send it cut
            last = layout.unit_after(start, end) or end
            parts.append(_cut(layout, start, last, room))
        else:
            parts.append(layout.part(start, last))
        start = last
    return parts


def _furthest_fit(layout: LogLayout, start: int, end: int, room: int, density: float) -> int | None:
    """The furthest place in ``start+1:end+1`` where a part from ``start`` may end within
    ``room`` (an entry's start, or ``end``), or None if not even the first does. Guesses
    from the log's density and corrects a few times, so each part costs a few estimates of
    its own size rather than one per entry."""
    fitting, too_far = start, end + 1  # the furthest end known to fit; the nearest known not to

    def candidate(guess: float) -> int | None:
        """An end between the two: the last at or before ``guess``, else the first."""
        at = min(int(guess), too_far - 1)
        found = end if at >= end else layout.unit_at_or_before(at, fitting)
        if found is None or found <= fitting:
            found = layout.unit_after(fitting, min(too_far, end))
            found = end if found is None and fitting < end < too_far else found
        return found

    def settle(at: int) -> int:
        nonlocal fitting, too_far
        cost = layout.cost(start, at)
        if cost <= room:
            fitting = at
        else:
            too_far = at
        return cost

    guess = start + room / density
    for _ in range(4):
        if (at := candidate(guess)) is None:
            break
        cost = settle(at)
        guess = start + (at - start) * room / max(cost, 1) * (1.02 if cost <= room else 0.97)
    while (at := candidate((fitting + too_far) // 2)) is not None:  # a few halvings settle it
        settle(at)
    return fitting if fitting > start else None


def _cut(layout: LogLayout, start: int, end: int, room: int) -> Part:
    """One unit too big for ``room``: the longest head (ending on a line, where possible)
    that fits with the marker."""
    marker = _MARKER.format(omitted=end - start).encode()
    marker_cost = layout.cost_of(marker) - layout.cost_of(b"")
    budget = max(room - marker_cost, 1)
    low, high = min(_MIN_KEPT, end - start), end - start
    while low < high:  # the longest head whose estimate fits
        middle = (low + high + 1) // 2
        if layout.cost(start, start + middle) <= budget:
            low = middle
        else:
            high = middle - 1
    newline = layout.log.rfind(b"\n", start, start + low)
    kept = newline + 1 - start if newline > start + low // 2 else _char_boundary(layout, start, low)
    whole = layout.part(start, end)
    return Part(start, end, whole.first_entry, whole.entries, sent_bytes=kept)


def _char_boundary(layout: LogLayout, start: int, length: int) -> int:
    """``length`` moved back off the middle of a UTF-8 sequence (to its lead byte)."""
    log = layout.log
    while length > 1 and start + length < len(log) and 0x80 <= log[start + length] < 0xC0:
        length -= 1
    return length


def halve(layout: LogLayout, part: Part) -> list[Part]:
    """Two parts of about equal size, for a refusal that did not say by how much; a part
    that is a single entry (or pre-header text) is cut to half of what it sent instead."""
    middle = (part.start + part.end) // 2
    below = layout.unit_at_or_before(min(middle, part.end - 1), part.start)
    above = layout.unit_after(middle, part.end)
    if below is not None or above is not None:  # the nearest to the middle; a tie: the earlier
        split = min(filter(None, (below, above)), key=lambda bound: abs(bound - middle))
        return [layout.part(part.start, split), layout.part(split, part.end)]
    kept = _char_boundary(layout, part.start, max(part.sent_size // 2, 1))
    return [Part(part.start, part.end, part.first_entry, part.entries, sent_bytes=kept)]
