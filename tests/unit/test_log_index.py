"""A memory log read once for planning (``LogIndex``): its units are where a line-by-line
reading finds the text before the first entry and each entry, and what any run of units
costs is never below the estimate of its bytes in one piece (exactly that for a run of up
to 64 KiB), whatever was asked before."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from axe.domain.log_index import BLOCK, LogIndex
from axe.domain.token_estimate import estimate_tokens
from tests.logs import Log, logs, planner_logs
from tests.unit.test_entries import memory_bytes, split_by_lines


def expected_units(data: bytes) -> tuple[bool, list[bytes]]:
    """Whether there is text before the first entry, and every unit's bytes, by the
    independent line-by-line reading of tests/unit/test_entries.py."""
    pre, found = split_by_lines(data)
    return bool(pre), ([pre] if pre else []) + found


def check_units(data: bytes) -> None:
    index = LogIndex(data)
    preamble, units = expected_units(data)
    assert index.preamble is preamble
    assert index.units == len(units)
    assert index.entries_in(0, index.units) == len(units) - preamble
    assert index.bounds == [0, *itertools.accumulate(map(len, units))]
    assert [data[a:b] for a, b in itertools.pairwise(index.bounds)] == units


@given(logs())
def test_units_are_the_entries_a_line_by_line_reading_finds(log: Log) -> None:
    """Logs shaped like real ones (CRLF, a BOM, text before the first heading, a last
    heading without its line end): unit 0 is the text before the first entry when there
    is some, every other unit one entry, exactly as written."""
    check_units(log.data)
    index = LogIndex(log.data)
    assert index.entries_in(0, index.units) == len(log.entries)
    assert [log.data[a:b] for a, b in itertools.pairwise(index.bounds)][index.preamble :] == list(
        log.entries
    )


@given(memory_bytes)
def test_units_of_any_bytes_are_where_a_line_by_line_reading_puts_them(data: bytes) -> None:
    """Byte soup (headings after LF, CRLF or a lone CR, "##" without its space, invalid
    UTF-8): the units agree with walking the bytes line by line."""
    check_units(data)


@pytest.mark.parametrize(
    ("data", "bounds", "preamble"),
    [
        (b"", [0], False),
        (b"## a", [0, 4], False),
        (b"notes", [0, 5], True),
        (b"\n## a\n", [0, 1, 6], True),
        (b"## a\n## b\n", [0, 5, 10], False),
        (b"x ## a\n##b\n## c", [0, 11, 15], True),
    ],
    ids=["empty", "one heading", "no entry", "a line end first", "two entries", "odd headings"],
)
def test_the_smallest_logs_have_the_units_written(
    data: bytes, bounds: list[int], preamble: bool
) -> None:
    """An empty log has no unit; text with no entry is one unit of text before the first
    entry; a heading counts only at the start of a line, with its space."""
    index = LogIndex(data)
    assert (index.bounds, index.preamble) == (bounds, preamble)


@given(logs(), st.data())
def test_entries_in_counts_the_entries_of_a_run_of_units(log: Log, data: st.DataObject) -> None:
    """The entries a run of units holds: every unit of it but the text before the first
    entry, which is no entry."""
    index = LogIndex(log.data)
    first = data.draw(st.integers(0, index.units), label="first")
    last = data.draw(st.integers(first, index.units), label="last")
    _, units = expected_units(log.data)
    held = units[first:last]
    assert index.entries_in(first, last) == sum(unit.startswith(b"## ") for unit in held)
    assert index.entries_in(0, index.units) == len(log.entries)


@given(logs())
def test_unit_at_is_the_unit_that_holds_a_byte(log: Log) -> None:
    """Every byte of the log is in the unit whose bounds hold it; the end of the log is in
    the last unit."""
    data = log.data
    index = LogIndex(data)
    for unit, (start, end) in enumerate(itertools.pairwise(index.bounds)):
        assert {index.unit_at(offset) for offset in range(start, end)} == {unit}
    if data:
        assert index.unit_at(len(data)) == index.units - 1


def _run(index: LogIndex, data: st.DataObject) -> tuple[int, int]:
    first = data.draw(st.integers(0, index.units), label="first unit")
    last = data.draw(st.integers(first, index.units), label="last unit")
    return first, last


@given(planner_logs(), st.data())
def test_a_run_of_units_costs_at_least_its_bytes_in_one_piece(
    log: bytes, data: st.DataObject
) -> None:
    """What the planner takes a run of units to cost, over 32 KiB blocks or not, is never
    below gc's estimate of its bytes in one piece (so a part within the window by it is
    within it by the estimate sent); a run within 64 KiB costs exactly that."""
    index = LogIndex(log)
    first, last = _run(index, data)
    start, end = index.bounds[first], index.bounds[last]
    cost, alone = index.cost(first, last), estimate_tokens(log[start:end])
    assert cost.most >= alone.most
    if end - start <= 2 * BLOCK:
        assert cost == alone
    event(f"32 KiB blocks crossed: {min(end // BLOCK - start // BLOCK, 3)}")


@given(planner_logs(), st.data())
def test_a_run_of_units_costs_no_more_than_its_units_apart_within_64_kib(
    log: bytes, data: st.DataObject
) -> None:
    """Within 64 KiB, a run costs at most what its units cost one by one (an estimate of
    a text in pieces is at least the estimate in one piece): planning a run whole never
    finds it dearer than its entries."""
    index = LogIndex(log)
    first, last = _run(index, data)
    if index.bounds[last] - index.bounds[first] > 2 * BLOCK:
        return
    apart = sum(index.cost(unit, unit + 1).most for unit in range(first, last))
    assert index.cost(first, last).most <= apart


# Words, numbers and runs of spaces of every length, so an end falls inside any of them.
_MIXED = (b"## a\nwords 12 345  x   y\t7    z\n" * 5000)[: 4 * BLOCK]


@given(st.lists(st.tuples(st.integers(0, 4 * BLOCK), st.integers(0, 4 * BLOCK)), min_size=2))
def test_a_span_costs_the_same_whatever_was_asked_before(spans: list[tuple[int, int]]) -> None:
    """The running sums and the ends kept from earlier questions never change an answer: a
    span costs what a fresh index says, in whatever order spans are asked, so a plan is the
    same however the planner searched for it."""
    index = LogIndex(_MIXED)
    for a, b in spans:
        start, end = min(a, b), max(a, b)
        assert index.span_cost(start, end) == LogIndex(_MIXED).span_cost(start, end)
        assert index.span_cost(start, end).most >= estimate_tokens(_MIXED[start:end]).most


@pytest.mark.parametrize(
    ("start", "end"),
    [
        (BLOCK - 10, BLOCK + 10),
        (5, 2 * BLOCK + 5),
        (5, 3 * BLOCK),
        (BLOCK + 5, 4 * BLOCK + 5),
        (0, 4 * BLOCK),
    ],
    ids=["across one boundary", "exactly 64 KiB", "from the start", "from inside a block", "all"],
)
def test_a_long_span_costs_at_least_what_it_costs_in_one_piece(start: int, end: int) -> None:
    """Across 32 KiB boundaries, a span of a large log is estimated no lower than in one
    piece, wherever it starts and ends."""
    log = b"## a\n" + b"word " * 30_000
    alone = estimate_tokens(log[start:end])
    cost = LogIndex(log).span_cost(start, end)
    assert cost.most >= alone.most
    if end - start <= 2 * BLOCK:
        assert cost == alone


@given(st.data())
def test_a_span_over_64_kib_costs_its_pieces_between_32_kib_boundaries(data: st.DataObject) -> None:
    """What the planner and the budget take a long span to cost (the figures of
    ``--estimate``) is gc's estimate of its pieces cut at every 32 KiB boundary inside it,
    summed, ``most`` and ``likely`` alike: a span from the log's start or from inside a
    block, ending anywhere, of a log whether or not it ends on a boundary."""
    log = _MIXED[: data.draw(st.sampled_from([4 * BLOCK, 4 * BLOCK - 7]), label="log")]
    start = data.draw(st.sampled_from([0, 1, BLOCK - 3, BLOCK, BLOCK + 11]), label="start")
    end = data.draw(st.integers(start + 2 * BLOCK + 1, len(log)), label="end")
    cuts = [start, *range((start // BLOCK + 1) * BLOCK, end, BLOCK), end]
    pieces = [estimate_tokens(log[a:b]) for a, b in itertools.pairwise(cuts) if b > a]
    cost = LogIndex(log).span_cost(start, end)
    assert (cost.most, cost.likely) == (
        sum(piece.most for piece in pieces),
        sum(piece.likely for piece in pieces),
    )
