"""Entries found, counted and trimmed on raw bytes; properties over arbitrary input."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from axe.domain.entries import count_entries, entry_starts, plan_trim, split_entries, start_of_last
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


def test_counts_entries_at_line_starts_only() -> None:
    """A header counts at the start of the file or of a line, never mid-line."""
    assert count_entries(b"## a\ntext ## b\n## c\n") == 2
    assert count_entries(b"pre\n## a\n") == 1
    assert count_entries(b"") == 0
    assert count_entries(b"##a\n#### b\n") == 0


def test_crlf_lines_still_start_entries() -> None:
    assert count_entries(b"## a\r\nx\r\n## b\r\n") == 2


def test_split_keeps_pre_header_text_apart() -> None:
    pre, found = split_entries(b"notes\n## a\nA\n## b\nB")
    assert pre == b"notes\n"
    assert found == [b"## a\nA\n", b"## b\nB"]


def test_plan_keeps_last_entries_and_drops_pre_header_text() -> None:
    data = b"notes\n" + entries(5)
    plan = plan_trim(data, 3)
    assert data[plan.keep_from :] == entries(3, start=2)
    assert (plan.removed, plan.kept) == (2, 3)


@pytest.mark.parametrize(("count", "keep"), [(5, 0), (3, 5), (5, 5), (1, 1), (0, 5)])
def test_plan_leaves_file_alone_when_within_limit(count: int, keep: int) -> None:
    plan = plan_trim(b"pre\n" + entries(count), keep)
    assert not plan.changes_file
    assert plan.removed == 0


def test_negative_keep_is_refused() -> None:
    with pytest.raises(AgentError, match="keepN must be non-negative"):
        plan_trim(entries(3), -1)


def test_header_lines_inside_results_are_entry_boundaries() -> None:
    """As in the Go axe, a '## ' line inside a result starts a new entry."""
    data = entry(0, result="see below\n## not a timestamp\nmore") + entry(1)
    assert count_entries(data) == 3
    assert data[plan_trim(data, 2).keep_from :].startswith(b"## not a timestamp\n")


@given(memory_bytes)
def test_pre_header_and_entries_reassemble_to_the_original(data: bytes) -> None:
    pre, found = split_entries(data)
    assert pre + b"".join(found) == data
    assert len(found) == count_entries(data) == len(entry_starts(data))
    assert all(e.startswith(b"## ") for e in found)


@given(memory_bytes, st.integers(min_value=0, max_value=12))
def test_trim_keeps_exactly_the_last_n_entries(data: bytes, keep: int) -> None:
    _pre, found = split_entries(data)
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
    plan = plan_trim(data, keep)
    once = data[plan.keep_from :] if plan.changes_file else data
    assert not plan_trim(once, keep).changes_file


@given(memory_bytes, st.integers(min_value=0, max_value=12))
def test_start_of_last_agrees_with_a_forward_scan(data: bytes, keep: int) -> None:
    starts = entry_starts(data)
    expected = None if keep > len(starts) else (starts[-keep] if keep else len(data))
    assert start_of_last(data, keep) == expected
