"""Splitting a log into parts: every entry once, in order, every part within its room."""

from __future__ import annotations

from itertools import pairwise

from hypothesis import given
from hypothesis import strategies as st

from axe.domain.entries import count_entries, entry_starts
from axe.domain.parts import LogLayout, Part, halve, plan_parts
from axe.domain.tokens import estimate_tokens
from tests.support import entries, entry

# Logs shaped like real ones, with the awkward cases: pre-header text, huge entries, CRLF,
# multi-byte characters, invalid UTF-8, a last entry without a newline.
_ENTRY = st.builds(
    lambda stamp, body: b"## " + stamp + b"\n" + body + b"\n\n",
    st.sampled_from([b"2026-01-01T00:00:00Z", b"not a time", b"\xff\xfe"]),
    st.binary(max_size=300).map(lambda b: b.replace(b"\n## ", b"\n#  "))
    | st.text(max_size=200).map(lambda t: t.replace("\n## ", "\n#  ").encode()),
)
logs = st.builds(
    lambda pre, items, tail: pre + b"".join(items) + tail,
    st.sampled_from([b"", b"notes before the first entry\n", "é\r\n".encode()]),
    st.lists(_ENTRY, max_size=30),
    st.sampled_from([b"", b"## last without newline"]),
)


def covered(parts: list[Part]) -> list[tuple[int, int]]:
    return [(p.start, p.end) for p in parts]


@given(logs, st.integers(min_value=1, max_value=400))
def test_parts_cover_the_log_once_in_order_at_entry_boundaries(log: bytes, room: int) -> None:
    """Every byte (so every entry) is in exactly one part; parts are consecutive, in log
    order, and begin only where an entry begins (or at the start of the file)."""
    layout = LogLayout(log)
    parts = plan_parts(layout, room)
    if not log:
        assert parts == []
        return
    spans = covered(parts)
    assert spans[0][0] == 0
    assert spans[-1][1] == len(log)
    assert all(a[1] == b[0] for a, b in pairwise(spans))
    starts = set(entry_starts(log)) | {0}
    assert all(start in starts for start, _ in spans)
    assert sum(p.entries for p in parts) == count_entries(log)


@given(logs, st.integers(min_value=1, max_value=400))
def test_every_part_is_within_its_room_unless_cut_to_its_header(log: bytes, room: int) -> None:
    """What is sent for each part is estimated within the room; only an entry too large
    even for that is cut, with the marker, down to what fits."""
    layout = LogLayout(log)
    for part in plan_parts(layout, room):
        sent = part.content(log)
        if part.sent_bytes is not None:
            assert b"axe gc left out the last" in sent
            assert part.entries <= 1
            assert estimate_tokens(sent) <= room or (part.sent_bytes or 0) <= 64
        else:
            assert estimate_tokens(sent) <= room


def test_a_part_holds_as_many_entries_as_fit() -> None:
    """Greedy filling: with room for about three entries, parts hold three."""
    log = entries(10)
    room = estimate_tokens(entries(3))
    parts = plan_parts(LogLayout(log), room)
    assert [p.entries for p in parts] == [3, 3, 3, 1]
    assert [p.first_entry for p in parts] == [1, 4, 7, 10]


def test_an_entry_too_large_is_cut_with_a_marker_saying_how_much() -> None:
    """A huge entry alone exceeds a part: its head is sent with the number of bytes left out."""
    huge = entry(1, result="x " * 5000)
    log = entry(0) + huge + entry(2)
    parts = plan_parts(LogLayout(log), 400)
    (cut,) = [p for p in parts if p.sent_bytes is not None]
    sent = cut.content(log)
    assert sent.startswith(huge[:40])
    omitted = len(huge) - (cut.sent_bytes or 0)
    assert f"axe gc left out the last {omitted:,} bytes of this entry".encode() in sent
    assert cut.first_entry == 2


def test_halving_splits_at_the_entry_boundary_nearest_the_middle() -> None:
    """A refusal without numbers halves the part at an entry boundary."""
    log = entries(6)
    layout = LogLayout(log)
    first, second = halve(layout, layout.part(0, len(log)))
    assert (first.entries, second.entries) == (3, 3)
    assert first.end == second.start


def test_halving_a_single_entry_cuts_it_to_half() -> None:
    """A single entry cannot be split at a boundary, so half of it is sent."""
    log = entry(0, result="y" * 1000)
    layout = LogLayout(log)
    (only,) = halve(layout, layout.part(0, len(log)))
    assert only.sent_bytes == len(log) // 2
    assert only.sent_bytes is not None


def test_labels_name_the_entries_and_their_timestamps() -> None:
    """The merge request tells the model which entries and times each report covers."""
    log = b"notes\n" + entries(4)
    layout = LogLayout(log)
    first, second = plan_parts(layout, estimate_tokens(b"notes\n" + entries(2)))[:2]
    assert first.label(log) == "entries 1-2, 2026-01-01T00:00:00Z to 2026-01-01T00:01:00Z"
    assert second.label(log).startswith("entries 3-4, 2026-01-01T00:02:00Z to")
