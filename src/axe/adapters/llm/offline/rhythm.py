"""When the agent ran: how often, the busiest day (unless every day ties), the longest
silence, bursts of runs.

Computed from the instants column (sorted once, and only when the log is out of order), so
it costs no more than a copy of one integer per run. Days are calendar days as each entry's
own clock wrote them; instants (the gap, its start) are told in UTC.
"""

from __future__ import annotations

from array import array
from collections import Counter
from datetime import UTC, datetime, timedelta
from itertools import pairwise

from attrs import frozen

from axe.adapters.llm.offline.columns import Columns
from axe.adapters.llm.offline.reading import NO_TIME

BURST_RUNS = 5
_BURST_WINDOW = 5 * 60 * 1_000_000  # µs
_DAY = 24 * 60 * 60 * 1_000_000  # µs
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@frozen
class Rhythm:
    """How the runs are spread over time."""

    runs: int
    span_days: int
    busiest_day: str | None  # None when every day with runs had as many
    busiest_runs: int
    longest_gap: timedelta
    gap_after: str
    bursts: int


def rhythm(columns: Columns) -> Rhythm | None:
    """The rhythm of the timestamped runs; None with fewer than two."""
    timed = array("q", (index for index, at in enumerate(columns.instants) if at != NO_TIME))
    if len(timed) < 2:
        return None
    order = timed
    if not _in_order(columns.instants, timed):
        order = array("q", sorted(timed, key=columns.instants.__getitem__))
    instants = array("q", (columns.instants[index] for index in order))
    days = Counter(columns.walls[index] // _DAY for index in timed)
    busiest, busiest_runs = min(days.items(), key=lambda day: (-day[1], day[0]))
    stands_out = len(set(days.values())) > 1  # when every day ties, none is the busiest
    gap, gap_at = max(
        (
            (later - earlier, position)
            for position, (earlier, later) in enumerate(pairwise(instants))
        ),
        key=lambda gap: gap[0],
    )
    return Rhythm(
        runs=len(timed),
        span_days=max(days) - min(days) + 1,
        busiest_day=_wall(busiest * _DAY).date().isoformat() if stands_out else None,
        busiest_runs=busiest_runs,
        longest_gap=timedelta(microseconds=gap),
        gap_after=_wall(instants[gap_at]).strftime("%Y-%m-%dT%H:%M:%SZ"),
        bursts=_bursts(instants),
    )


def _in_order(instants: array[int], timed: array[int]) -> bool:
    return all(instants[a] <= instants[b] for a, b in pairwise(timed))


def _wall(microseconds: int) -> datetime:
    return _EPOCH + timedelta(microseconds=microseconds)


def _bursts(instants: array[int]) -> int:
    """Stretches of at least :data:`BURST_RUNS` runs within five minutes of each other."""
    bursts, start, in_burst = 0, 0, False
    for end, instant in enumerate(instants):
        while instant - instants[start] > _BURST_WINDOW:
            start += 1
        if end - start + 1 >= BURST_RUNS:
            bursts += not in_burst
            in_burst = True
        else:
            in_burst = False
    return bursts
