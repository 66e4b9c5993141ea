"""Entries found, counted and trimmed on raw bytes; properties over arbitrary input."""

from __future__ import annotations

from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from axe.domain.entries import count_entries, entry_starts, plan_trim, start_of_last
from axe.domain.errors import AgentError
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
    with pytest.raises(AgentError, match="keepN must be non-negative"):
        plan_trim(entries(3), -1)


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


@given(memory_bytes, st.integers(min_value=0, max_value=12))
def test_trim_keeps_exactly_the_last_n_entries(data: bytes, keep: int) -> None:
    """A trim keeps exactly the last N entries, byte for byte, or leaves the file whole."""
    _pre, found = split_by_lines(data)
    plan = plan_trim(data, keep)
    result = data[plan.keep_from :] if plan.changes_file else data
    if keep == 0 or len(found) <= keep:
        assert result == data
    else:
        assert result == b"".join(found[-keep:])
        assert plan.removed == len(found) - keep
    assert data.endswith(result)
    assert count_entries(result) == (len(found) if keep == 0 else min(len(found), keep))


@given(memory_bytes, st.integers(min_value=0, max_value=12))
def test_trimming_twice_changes_nothing_more(data: bytes, keep: int) -> None:
    """gc run twice in a row trims nothing the second time."""
    plan = plan_trim(data, keep)
    once = data[plan.keep_from :] if plan.changes_file else data
    assert not plan_trim(once, keep).changes_file


@given(memory_bytes, st.integers(min_value=0, max_value=12))
def test_start_of_last_agrees_with_a_forward_scan(data: bytes, keep: int) -> None:
    """Scanning back from the end finds the same boundary as scanning forward."""
    starts = entry_starts(data)
    expected = None if keep > len(starts) else (starts[-keep] if keep else len(data))
    assert start_of_last(data, keep) == expected
