"""Entries found, counted and trimmed on raw bytes; properties over arbitrary input."""

from __future__ import annotations

from itertools import pairwise

import pytest
from hypothesis import Phase, event, given, settings
from hypothesis import strategies as st

from axe.domain.entries import (
    count_entries,
    entry_starts,
    plan_trim,
    start_of_last,
)
from axe.domain.errors import AgentError
from tests.logs import Log, logs
from tests.support import entries, entry

# Bytes that look like memory logs often enough to hit every boundary case: headers at the
# start, after LF and after CRLF, "##" without a space, "## " mid-line, invalid UTF-8.
_PIECES = st.sampled_from(
    [
        b"## ",
        b"##",
        b"#",
        b"\n",
        b"\r\n",
        b"\r",
        b" ",
        b"x",
        b"2026-02-27T03:15:00Z",
        b"\xff",
        b"\xc3",
    ]
)
memory_bytes = st.lists(_PIECES | st.binary(max_size=4), max_size=40).map(b"".join)


def split_by_lines(data: bytes) -> tuple[bytes, list[bytes]]:
    """An independent oracle: walk the lines, start an entry at every line that begins '## '."""
    pre, found = b"", []
    for line in data.splitlines(keepends=True) if b"\r" not in data else _lf_lines(data):
        if line.startswith(b"## "):
            found.append(line)
        elif found:
            found[-1] += line
        else:
            pre += line
    return pre, found


def _lf_lines(data: bytes) -> list[bytes]:
    """Lines ended by LF only: a lone CR is not a line end for axe (as for the Go axe)."""
    parts = data.split(b"\n")
    return [part + b"\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def test_counts_entries_at_line_starts_only() -> None:
    """A header counts at the start of the file or of a line, never mid-line."""
    assert count_entries(b"## a\ntext ## b\n## c\n") == 2
    assert count_entries(b"pre\n## a\n") == 1
    assert count_entries(b"") == 0
    assert count_entries(b"##a\n#### b\n") == 0


def test_crlf_lines_still_start_entries() -> None:
    """CRLF line ends do not hide a header from the count."""
    assert count_entries(b"## a\r\nx\r\n## b\r\n") == 2


def test_entry_starts_skip_pre_header_text() -> None:
    """Text before the first header is not an entry; every header line starts one."""
    data = b"notes\n## a\nA\n## b\nB"
    assert entry_starts(data) == [6, 13]


def test_plan_keeps_last_entries_and_drops_pre_header_text() -> None:
    """A trim keeps the newest entries and drops what came before the first header."""
    data = b"notes\n" + entries(5)
    plan = plan_trim(data, 3)
    assert data[plan.keep_from :] == entries(3, start=2)
    assert (plan.removed, plan.kept) == (2, 3)


@pytest.mark.parametrize(("count", "keep"), [(5, 0), (3, 5), (5, 5), (1, 1), (0, 5)])
def test_plan_leaves_file_alone_when_within_limit(count: int, keep: int) -> None:
    """keep = 0 or a log within its limit plans no change at all, pre-header text included."""
    plan = plan_trim(b"pre\n" + entries(count), keep)
    assert not plan.changes_file
    assert plan.removed == 0


def test_negative_keep_is_refused() -> None:
    """A negative keep is the spec's error, never a silent trim."""
    with pytest.raises(AgentError) as caught:
        plan_trim(entries(3), -1)
    assert str(caught.value) == "keepN must be non-negative"


def test_header_lines_inside_results_are_entry_boundaries() -> None:
    """As in the Go axe, a '## ' line inside a result starts a new entry."""
    data = entry(0, result="see below\n## not a timestamp\nmore") + entry(1)
    assert count_entries(data) == 3
    assert data[plan_trim(data, 2).keep_from :].startswith(b"## not a timestamp\n")


@given(memory_bytes)
def test_entries_are_found_where_a_line_by_line_reading_finds_them(data: bytes) -> None:
    """Byte-level entry finding agrees with walking the file line by line."""
    pre, found = split_by_lines(data)
    assert pre + b"".join(found) == data
    starts = entry_starts(data)
    assert len(found) == count_entries(data) == len(starts)
    bounds = [*starts, len(data)] if starts else []
    assert [data[a:b] for a, b in pairwise(bounds)] == found


def _keeps(count: int, data: st.DataObject) -> list[int]:
    """How many entries to keep of a log of ``count``: every edge (none, one, one fewer than
    the log holds, exactly as many, one more) and one drawn below the count, so that every
    example checks a trim and each way of leaving the file whole."""
    drawn = data.draw(st.integers(min_value=1, max_value=max(count - 1, 1)), label="keep")
    return sorted({0, 1, max(count - 1, 0), count, count + 1, drawn})


def _trimmed(data: bytes, keep: int) -> bytes:
    plan = plan_trim(data, keep)
    return data[plan.keep_from :] if plan.changes_file else data


@given(logs())
def test_entries_are_found_exactly_where_they_were_written(log: Log) -> None:
    """Every entry a log was written with is found, byte for byte, and nothing else is."""
    data = log.data
    starts = entry_starts(data)
    assert count_entries(data) == len(starts) == len(log.entries)
    assert [data[a:b] for a, b in pairwise([*starts, len(data)])] == list(log.entries)
    assert split_by_lines(data) == (log.pre, list(log.entries))
    event(f"entries: {min(len(log.entries), 2)}{'+' * (len(log.entries) > 2)}")


@given(logs(), st.data())
def test_trim_keeps_exactly_the_last_n_entries(log: Log, data: st.DataObject) -> None:
    """A trim keeps exactly the last N entries, byte for byte, and says how many it removed;
    keep = 0 or a log within its limit is left whole, text before the first entry included."""
    count = len(log.entries)
    for keep in _keeps(count, data):
        plan = plan_trim(log.data, keep)
        if 0 < keep < count:
            event("trimmed")
            assert plan.changes_file
            assert log.data[plan.keep_from :] == b"".join(log.entries[-keep:])
            assert (plan.removed, plan.kept) == (count - keep, keep)
        else:
            assert not plan.changes_file
            assert (plan.keep_from, plan.removed, plan.kept) == (0, 0, count)


@given(logs(), st.data())
def test_trimming_twice_changes_nothing_more(log: Log, data: st.DataObject) -> None:
    """gc run twice in a row trims nothing the second time, and the file keeps what the first
    trim kept."""
    for keep in _keeps(len(log.entries), data):
        once = _trimmed(log.data, keep)
        again = plan_trim(once, keep)
        assert not again.changes_file
        assert again.kept == count_entries(once)


@given(logs())
def test_start_of_last_agrees_with_a_forward_scan(log: Log) -> None:
    """Scanning back from the end finds, for every N, where the last N entries begin, the
    same boundary a forward scan finds; more entries than the log holds is None."""
    data = log.data
    starts = entry_starts(data)
    for keep in range(len(starts) + 2):
        expected = None if keep > len(starts) else (starts[-keep] if keep else len(data))
        assert start_of_last(data, keep) == expected, keep


# Byte soup with headings in it: every soup holds at least two entries, wherever they fall.
soup_with_entries = st.lists(
    _PIECES | st.binary(max_size=4) | st.just(b"\n## "), min_size=2, max_size=40
).map(lambda pieces: b"## " + pieces[0] + b"\n## " + b"".join(pieces[1:]))


@given(soup_with_entries, st.data())
def test_trim_keeps_exactly_the_last_n_entries_of_any_bytes(
    data: bytes, draw: st.DataObject
) -> None:
    """Even on bytes no one would write, a trim keeps exactly the last N entries a line by
    line reading finds, byte for byte; every example trims (N below the count found)."""
    _pre, found = split_by_lines(data)
    assert len(found) >= 2
    keep = draw.draw(st.integers(min_value=1, max_value=len(found) - 1), label="keep")
    plan = plan_trim(data, keep)
    assert plan.changes_file
    assert data[plan.keep_from :] == b"".join(found[-keep:])
    assert (plan.removed, plan.kept) == (len(found) - keep, keep)


@given(memory_bytes, st.integers(min_value=0, max_value=12))
def test_a_trim_of_any_bytes_within_their_limit_leaves_them_whole(data: bytes, keep: int) -> None:
    """Bytes holding no more entries than the limit (or a limit of 0) are left whole."""
    _pre, found = split_by_lines(data)
    if keep == 0 or len(found) <= keep:
        assert _trimmed(data, keep) == data


@pytest.mark.parametrize(
    ("data", "keep", "kept"),
    [
        (b"## a\r\nx\r\n## b\r\ny\r\n## c\r\n", 2, b"## b\r\ny\r\n## c\r\n"),
        (b"## a\nx\n## b\ny\n## end", 1, b"## end"),
        (b"## a\nx\n## b\ny\n## ", 2, b"## b\ny\n## "),
        (b"\xef\xbb\xbf## a\nx\n## b\ny\n## c\n", 1, b"## c\n"),
    ],
    ids=["CRLF only", "ends in a heading", "ends in an empty heading", "starts with a BOM"],
)
def test_logs_people_write_by_hand_keep_their_newest_entries_byte_for_byte(
    data: bytes, keep: int, kept: bytes
) -> None:
    """A CRLF-only log, one ending in a heading without a newline, and one starting with a
    UTF-8 BOM (whose first heading is then text before the first entry, as for the Go
    axe) keep exactly their newest entries."""
    plan = plan_trim(data, keep)
    assert data[plan.keep_from :] == kept
    assert plan.removed == count_entries(data) - keep


@given(memory_bytes, st.integers(min_value=0, max_value=12))
def test_start_of_last_agrees_with_a_forward_scan_on_any_bytes(data: bytes, keep: int) -> None:
    """Even on bytes no one would write, scanning back finds the forward scan's boundary."""
    starts = entry_starts(data)
    expected = None if keep > len(starts) else (starts[-keep] if keep else len(data))
    assert start_of_last(data, keep) == expected


def test_most_generated_logs_hold_several_entries() -> None:
    """The trim properties above meet logs with entries to trim: at least half the logs the
    strategy draws hold two entries or more (and some hold none, some one)."""
    counts: list[int] = []

    @settings(max_examples=200, database=None, phases=[Phase.generate])
    @given(logs())
    def draw(log: Log) -> None:
        counts.append(len(log.entries))

    draw()
    several = sum(count >= 2 for count in counts)
    assert several >= len(counts) / 2, counts
    assert 0 in counts
    assert 1 in counts
    assert max(counts) >= 30


def test_removing_exactly_one_entry_is_a_trim() -> None:
    """A log one entry over its limit loses that one entry; it is not "within limit"."""
    plan = plan_trim(entries(3), 2)
    assert plan.changes_file
    assert (plan.removed, plan.kept) == (1, 2)
    assert entries(3)[plan.keep_from :] == entries(2, start=1)


@pytest.mark.parametrize(
    ("data", "keep", "kept"),
    [
        (b"## a\n## ", 1, b"## "),
        (b"## a\n## \n", 1, b"## \n"),
        (b"## a\n## b", 1, b"## b"),
        (b"## \n## \n## \n", 2, b"## \n## \n"),
        (b"pre\n## \r\n## x\r\n## ", 2, b"## x\r\n## "),
    ],
)
def test_short_and_empty_headings_are_entries_like_any_other(
    data: bytes, keep: int, kept: bytes
) -> None:
    """An empty `## ` heading, even as the last line without a line end, is one entry: the
    trim keeps exactly N of them, never one too many."""
    assert start_of_last(data, keep) == len(data) - len(kept)
    assert data[plan_trim(data, keep).keep_from :] == kept
