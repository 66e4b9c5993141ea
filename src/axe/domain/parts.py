"""Parts of a log too large for one request: runs of consecutive units covering the log
once; an entry that alone exceeds a part is sent cut, with a marker (the file is untouched)."""

from __future__ import annotations

from collections.abc import Callable

from attrs import frozen

from axe.domain.log_index import LogIndex

MARKER = (
    "\n[... axe gc left out the last {omitted:,} bytes of this entry here: the entry alone "
    "is larger than the model's context window allows ...]\n"
)
SMALLEST_CUT = 64  # bytes of a cut entry always sent: at least its header line, in practice


@frozen
class Part:
    """Units ``first`` to ``last`` (exclusive); ``sent``: the bytes of its one unit sent cut."""

    first: int
    last: int
    sent: int | None = None


Fits = Callable[[Part], bool]  # whether the request that analyses a part may be sent


def content(index: LogIndex, part: Part) -> bytes:
    start, end = index.bounds[part.first], index.bounds[part.last]
    if part.sent is None:
        return index.log[start:end]
    marker = MARKER.format(omitted=end - start - part.sent).encode()
    return index.log[start : start + part.sent] + marker


def size(index: LogIndex, part: Part) -> int:
    """Bytes of the log ``part`` sends (a cut entry's marker not counted)."""
    whole = index.bounds[part.last] - index.bounds[part.first]
    return whole if part.sent is None else part.sent


def label(index: LogIndex, first: int, last: int) -> str:
    """Which entries and timestamps units ``first`` to ``last`` hold, for a merge request."""
    number = max(first - index.preamble, 0) + 1  # entries are numbered from 1
    count = index.entries_in(first, last)
    span = f"entry {number}" if count <= 1 else f"entries {number}-{number + count - 1}"
    opening = first + (index.preamble and first == 0 < last - 1)  # its first entry
    headers = [_header(index, unit) for unit in (opening, last - 1)]
    if headers[0] and headers[1] and headers[0] != headers[1]:
        return f"{span}, {headers[0]} to {headers[1]}"
    return f"{span}, {headers[0]}" if headers[0] else span


def _header(index: LogIndex, unit: int) -> str:
    if unit == 0 and index.preamble:
        return ""
    at = index.bounds[unit] + 3
    line = index.log[at : min(at + 197, index.bounds[unit + 1])].split(b"\n", 1)[0]
    return line.decode("utf-8", "replace").strip()


def plan_parts(index: LogIndex, first: int, last: int, fits: Fits, guess: int = 1) -> list[Part]:
    """Consecutive parts of units ``first`` to ``last``, each as large as ``fits`` allows (a
    unit too large alone is cut); ``guess``: how many units a part probably holds.

    Raises:
        ValueError: not even the smallest cut of a unit fits.
    """
    parts: list[Part] = []
    while first < last:
        end = _furthest(first, last, fits, guess)
        if end is None:
            parts.append(cut(index, first, fits))
            first += 1
        else:
            parts.append(Part(first, end))
            guess, first = end - first, end
    return parts


def _furthest(first: int, last: int, fits: Fits, guess: int) -> int | None:
    """The furthest end for which the part fits, or None: from ``guess``, doubling (or
    halving) to a bracket, then halving the bracket."""
    good, bad = first, last + 1
    probe = min(first + max(guess, 1), last)
    while good < probe < bad:  # a bracket: good fits, bad does not (or lies past the end)
        if fits(Part(first, probe)):
            good, probe = probe, min(first + 2 * (probe - first), last)
        else:
            bad, probe = probe, first + (probe - first) // 2
    while bad - good > 1:
        middle = (good + bad) // 2
        good, bad = (middle, bad) if fits(Part(first, middle)) else (good, middle)
    return good if good > first else None


def cut(index: LogIndex, unit: int, fits: Fits) -> Part:
    """The longest head of one unit (ending on a line, if one ends in its second half) that
    fits with the marker.

    Raises:
        ValueError: not even its first bytes fit.
    """
    whole = index.bounds[unit + 1] - index.bounds[unit]
    low, high = min(SMALLEST_CUT, whole), whole - 1
    if not fits(Part(unit, unit + 1, low)):
        raise ValueError("no cut of this entry fits")
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if fits(Part(unit, unit + 1, middle)) else (low, middle - 1)
    start = index.bounds[unit]
    newline = index.log.rfind(b"\n", start, start + low)
    kept = newline + 1 - start if newline > start + low // 2 else _lead(index.log, start, low)
    return Part(unit, unit + 1, kept)


def _lead(log: bytes, start: int, length: int) -> int:
    """``length`` moved back off the middle of a UTF-8 sequence (to its lead byte)."""
    while length > 1 and start + length < len(log) and 0x80 <= log[start + length] < 0xC0:
        length -= 1
    return length


def halve(index: LogIndex, part: Part) -> list[Part]:
    """Two parts of about equal size; a part of one unit is cut to half of what it sent."""
    if part.last - part.first > 1:
        middle = (index.bounds[part.first] + index.bounds[part.last]) // 2
        below = min(max(index.unit_at(middle), part.first + 1), part.last - 1)
        nearest = (below, min(below + 1, part.last - 1))  # the unit starts either side
        split = min(nearest, key=lambda unit: (abs(index.bounds[unit] - middle), unit))
        return [Part(part.first, split), Part(split, part.last)]
    start = index.bounds[part.first]
    return [Part(part.first, part.last, _lead(index.log, start, max(size(index, part) // 2, 1)))]
