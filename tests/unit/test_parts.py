"""Splitting a log into parts: every unit once, in order, every part within its room.

A part's room is said, as the planner says it, by a predicate on the part: here gc's upper
estimate of what the part sends (a run of units as the index costs it, a cut entry's head
with its marker as sent) within a number of tokens, beside fixed instructions or not.
"""

from __future__ import annotations

import bisect
from itertools import pairwise

import pytest
from hypothesis import Phase, event, given, settings
from hypothesis import strategies as st

from axe.domain.entries import count_entries
from axe.domain.log_index import LogIndex
from axe.domain.parts import Fits, Part, content, halve, label, plan_parts, size
from axe.domain.planning import request_tokens
from axe.domain.prompt import PATTERN_DETECTION_PROMPT
from axe.domain.token_estimate import estimate_tokens
from tests.logs import planner_logs
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
_ROOMS = st.sampled_from([1, 40, 300, 2000, 9000]) | st.integers(min_value=1, max_value=30_000)
SMALLEST_CUT = 64  # bytes of an entry a cut always sends


def cost(index: LogIndex, part: Part) -> int:
    """gc's upper estimate of what ``part`` sends, as the planner makes it."""
    if part.sent is None:
        return index.cost(part.first, part.last).most
    return estimate_tokens(content(index, part)).most


def within(index: LogIndex, room: int) -> Fits:
    return lambda part: cost(index, part) <= room


def _longest_head(index: LogIndex, unit: int, fits: Fits) -> int:
    """What a cut of ``unit`` should send: the longest head (at least its first 64 bytes)
    that fits with its marker, then ended at its last line end when that lies in its
    second half, else moved back off the middle of a character (to its lead byte)."""
    log, start = index.log, index.bounds[unit]
    whole = index.bounds[unit + 1] - start
    lengths = range(min(SMALLEST_CUT, whole), whole)
    fitting = bisect.bisect_left(lengths, True, key=lambda n: not fits(Part(unit, unit + 1, n)))
    longest = lengths[fitting - 1]
    newline = log.rfind(b"\n", start, start + longest)
    if newline > start + longest // 2:
        return newline + 1 - start
    while longest > 1 and start + longest < len(log) and 0x80 <= log[start + longest] < 0xC0:
        longest -= 1
    return longest


def check_parts(index: LogIndex, first: int, last: int, fits: Fits, guess: int = 1) -> list[Part]:
    """The parts of units ``first`` to ``last``: they cover the run once, in order; each fits, whole or as one unit cut to its longest head
    that fits; and each ends only where the next unit would not fit with it."""
    parts = plan_parts(index, first, last, fits, guess)
    if parts:
        assert (parts[0].first, parts[-1].last) == (first, last)
        assert all(a.last == b.first for a, b in pairwise(parts))
    else:
        assert first == last
    assert sum(index.entries_in(p.first, p.last) for p in parts) == index.entries_in(first, last)
    for part in parts:
        assert fits(part)
        if part.sent is not None:
            assert part.last == part.first + 1
            assert not fits(Part(part.first, part.last))
            assert 0 < part.sent < size(index, Part(part.first, part.last))
            assert part.sent == _longest_head(index, part.first, fits)
            start = index.bounds[part.first]
            omitted = index.bounds[part.last] - start - part.sent
            assert (
                content(index, part)
                == index.log[start : start + part.sent]
                + (
                    f"\n[... axe gc left out the last {omitted:,} bytes of this entry here: the "
                    "entry alone is larger than the model's context window allows ...]\n"
                ).encode()
            )
        elif part.last < last:  # greedy: the next unit does not fit with it
            assert not fits(Part(part.first, part.last + 1))
    return parts


def plan_or_none(index: LogIndex, first: int, last: int, fits: Fits) -> list[Part] | None:
    """The checked parts, or None when planning says no cut of some unit fits (then one
    unit's smallest cut, its first 64 bytes with the marker, does not)."""
    try:
        return check_parts(index, first, last, fits)
    except ValueError:
        assert any(
            not fits(Part(unit, unit + 1, min(SMALLEST_CUT, size(index, Part(unit, unit + 1)))))
            for unit in range(first, last)
        )
        event("no cut of some unit fits")
        return None


@given(logs, st.integers(min_value=1, max_value=400))
def test_parts_cover_the_log_once_in_order_at_entry_boundaries(log: bytes, room: int) -> None:
    """Every byte (so every entry) is in exactly one part; parts are consecutive, in log
    order, and begin only where an entry begins (or at the start of the file); each fits
    its room, or is one entry too large for it cut to the longest head that fits."""
    index = LogIndex(log)
    parts = plan_or_none(index, 0, index.units, within(index, room))
    if parts is None:
        return
    if not log:
        assert parts == []
        return
    starts = {0} | {at + 1 for at in range(len(log)) if log.startswith(b"\n## ", at)}
    assert {index.bounds[p.first] for p in parts} <= starts
    assert sum(index.entries_in(p.first, p.last) for p in parts) == count_entries(log)


@given(planner_logs(), _ROOMS, st.data())
def test_large_and_unequal_logs_are_split_into_as_few_parts_as_fit(
    log: bytes, room: int, data: st.DataObject
) -> None:
    """Entries of very unequal size, spans over 32 KiB, multi-byte text: the parts of the
    log, or of any run of its units, cover it once, in order; each is within its room, or
    one entry too large for it cut down to what fits, between two characters; and a part
    ends only where the next entry would not fit (greedy filling: no more parts than a
    fill from the start needs)."""
    index = LogIndex(log)
    fits = within(index, room)
    parts = plan_or_none(index, 0, index.units, fits)
    first = data.draw(st.integers(0, index.units), label="first unit")
    last = data.draw(st.integers(first, index.units), label="last unit")
    plan_or_none(index, first, last, fits)
    for part in parts or []:
        if part.sent is not None:
            head = content(index, part)[: part.sent]
            head.decode("utf-8")  # raises when cut inside a character
            event(f"cut after a multi-byte character: {head[-1] >= 0x80}")
    event(f"log over 32 KiB: {len(log) > 1 << 15}")
    event(f"parts: {min(len(parts or []), 3) if parts is not None else None}")


@given(planner_logs(), _ROOMS, st.integers(1, 40))
def test_the_parts_do_not_depend_on_where_the_search_begins(
    log: bytes, room: int, guess: int
) -> None:
    """How many units a part probably holds only says where the search for its end
    begins: the parts are the same whatever the guess."""
    index = LogIndex(log)
    fits = within(index, room)
    try:
        expected = plan_parts(index, 0, index.units, fits)
    except ValueError:
        return
    assert plan_parts(index, 0, index.units, fits, guess) == expected


@given(planner_logs(), _ROOMS)
def test_halving_splits_near_the_middle_or_sends_half_of_one_entry(log: bytes, room: int) -> None:
    """A refusal without numbers halves a part: at the unit start nearest its middle (a
    tie to the earlier), or, for a single unit, by sending half of what it sent, cut
    between characters."""
    index = LogIndex(log)
    try:
        parts = plan_parts(index, 0, index.units, within(index, room))
    except ValueError:
        return
    for part in parts:
        halves = halve(index, part)
        if part.last - part.first > 1:
            first, second = halves
            start, end = index.bounds[part.first], index.bounds[part.last]
            middle = (start + end) // 2
            inside = index.bounds[part.first + 1 : part.last]
            assert (first.first, first.last, second.last) == (part.first, second.first, part.last)
            assert (first.sent, second.sent) == (None, None)
            split = index.bounds[first.last]
            assert all(abs(split - middle) <= abs(unit - middle) for unit in inside)
            assert all(abs(split - middle) < abs(unit - middle) for unit in inside if unit < split)
        else:
            (only,) = halves
            assert (only.first, only.last) == (part.first, part.last)
            half = max(size(index, part) // 2, 1)
            assert only.sent is not None
            assert half - 4 < only.sent <= half
            content(index, only)[: only.sent].decode("utf-8")


def test_most_planner_logs_hold_several_entries_and_some_are_large() -> None:
    """The planner's properties meet logs worth splitting: at least half hold two entries
    or more, and some are larger than the planner's 32 KiB blocks."""
    sizes: list[tuple[int, int]] = []

    @settings(max_examples=200, database=None, phases=[Phase.generate])
    @given(planner_logs())
    def draw(log: bytes) -> None:
        sizes.append((count_entries(log), len(log)))

    draw()
    assert sum(count >= 2 for count, _ in sizes) >= len(sizes) / 2
    assert sum(length > 1 << 15 for _, length in sizes) >= len(sizes) / 10


def test_a_part_holds_as_many_entries_as_fit() -> None:
    """Greedy filling: with room for about three entries, parts hold three."""
    index = LogIndex(entries(10))
    parts = plan_parts(index, 0, 10, within(index, estimate_tokens(entries(3)).most))
    assert parts == [Part(0, 3), Part(3, 6), Part(6, 9), Part(9, 10)]


def test_an_entry_too_large_is_cut_with_a_marker_saying_how_much() -> None:
    """A huge entry alone exceeds a part: its head is sent with the number of bytes left out."""
    huge = entry(1, result="x " * 5000)
    index = LogIndex(entry(0) + huge + entry(2))
    (cut_part,) = [p for p in plan_parts(index, 0, 3, within(index, 400)) if p.sent is not None]
    assert cut_part.first == 1
    sent = content(index, cut_part)
    assert sent.startswith(huge[:40])
    omitted = len(huge) - (cut_part.sent or 0)
    assert f"axe gc left out the last {omitted:,} bytes of this entry".encode() in sent


def test_halving_splits_at_the_entry_boundary_nearest_the_middle() -> None:
    """A refusal without numbers halves the part at the entry boundary nearest its
    middle, also when that is where its last entry begins."""
    index = LogIndex(entries(6))
    assert halve(index, Part(0, 6)) == [Part(0, 3), Part(3, 6)]
    log = b"## a\n" + b"## " + b"x" * 500 + b"\n" + b"## " + b"y" * 504 + b"\n"
    index = LogIndex(log)
    assert index.bounds == [0, 5, 509, 1017]
    assert halve(index, Part(0, 3)) == [Part(0, 2), Part(2, 3)]


def test_halving_a_single_entry_cuts_it_to_half() -> None:
    """A single entry cannot be split at a boundary, so half of it is sent."""
    log = entry(0, result="y" * 1000)
    assert halve(LogIndex(log), Part(0, 1)) == [Part(0, 1, len(log) // 2)]


def test_halving_a_tie_goes_to_the_earlier_boundary() -> None:
    """Halving is deterministic: of two boundaries equally near the middle (rounded down
    to a byte), the earlier one splits the part."""
    log = "é\r\n".encode() + b"## 2026-02-27T03:15:00Z\n\n\n## \n\n"
    index = LogIndex(log)
    assert index.bounds == [0, 4, 30, len(log)]
    assert halve(index, Part(0, 3)) == [Part(0, 1), Part(1, 3)]


@pytest.mark.parametrize(
    ("log", "sent"),
    [
        ("é\n".encode(), 1),  # half of 3 bytes is 1: the lead byte, never nothing
        ("€\n".encode(), 1),  # half of 4 is 2, inside "€": back to its lead byte
        ("ĀĀĀĀĀ\n".encode(), 4),  # half of 11 is 5, on a continuation byte 0x80
        (b"\xc0" * 9 + b"\n", 5),  # not UTF-8: 0xC0 is no continuation, cut where it falls
    ],
)
def test_halving_one_unit_sends_half_of_it_between_characters(log: bytes, sent: int) -> None:
    """A unit that cannot be split is halved by sending the first half of its bytes, moved
    back to the start of the character it would cut, and at least one byte."""
    assert halve(LogIndex(log), Part(0, 1)) == [Part(0, 1, sent)]


def test_labels_name_the_entries_and_their_timestamps() -> None:
    """The merge request tells the model which entries and times each report covers, the
    text before the first entry going with the first of them: with it, that entry is
    named by its own heading; alone, it is numbered as that entry, with no heading (it has
    none)."""
    index = LogIndex(b"notes\n" + entries(4))
    assert label(index, 0, 3) == "entries 1-2, 2026-01-01T00:00:00Z to 2026-01-01T00:01:00Z"
    assert label(index, 0, 2) == "entry 1, 2026-01-01T00:00:00Z"
    assert label(index, 0, 1) == "entry 1"
    assert label(index, 3, 5) == "entries 3-4, 2026-01-01T00:02:00Z to 2026-01-01T00:03:00Z"


def test_a_label_names_one_entry_or_a_range_by_its_first_and_last_headings() -> None:
    """The merge request names each report's entries by number and by heading: one entry
    by its own heading, a range by its first and last."""
    index = LogIndex(entries(4))
    assert label(index, 2, 3) == "entry 3, 2026-01-01T00:02:00Z"
    assert label(index, 1, 4) == "entries 2-4, 2026-01-01T00:01:00Z to 2026-01-01T00:03:00Z"


@pytest.mark.parametrize(
    ("log", "expected"),
    [
        (b"## t1\na\n## t1\nb\n", "entries 1-2, t1"),  # the same heading is said once
        (b"## \na\n## t2\nb\n", "entries 1-2"),  # no first heading: none said
        (b"## t1\na\n##   \r\nb\n", "entries 1-2, t1"),  # trimmed to nothing
        (b"##  \xff t\xc3 \r\n", "entry 1, \ufffd t\ufffd"),  # not UTF-8: replaced
        (b"## " + b"x" * 300 + b"\nbody\n", "entry 1, " + "x" * 197),  # a line cut at 200
        (b"x\n## t1\na\n## t2", "entries 1-2, t1 to t2"),  # after text; no line end
        (b"## t1\na\n## x", "entries 1-2, t1 to x"),  # a short last heading, read whole
        (b"## t1\na\n## t2\nb\n## ", "entries 1-3, t1"),  # a bare `## ` at the end: none
    ],
)
def test_a_label_reads_its_headings_as_written(log: bytes, expected: str) -> None:
    """Headings in a label are trimmed, invalid UTF-8 replaced, a heading line longer than
    200 bytes cut, and found at the very ends of the part; the one heading said after a
    range is its first."""
    index = LogIndex(log)
    assert label(index, 0, index.units) == expected


def test_nothing_that_fits_is_said_at_once_not_a_loop() -> None:
    """Planning parts where not even an entry's first bytes fit is said at once (the
    planner makes it a window too small), not a loop."""
    index = LogIndex(entries(3))
    with pytest.raises(ValueError, match=r"^no cut of this entry fits$"):
        plan_parts(index, 0, 3, lambda part: False)


@pytest.mark.parametrize("before", [b"", b"## a\n" * 3], ids=["first", "after others"])
def test_an_entry_cut_sends_at_least_its_first_64_bytes_or_nothing(before: bytes) -> None:
    """However small the room, a cut entry sends its first 64 bytes (its heading line, in
    practice) with the marker, so the model learns which entry it was; a room too small
    for those is no room; wherever the entry lies in the log."""
    huge = b"## " + b"x" * 1000
    index = LogIndex(before + huge)
    unit = index.units - 1
    least = cost(index, Part(unit, unit + 1, 64))
    (part,) = plan_parts(index, unit, unit + 1, within(index, least))
    assert part.sent is not None
    assert part.sent >= 64
    omitted = len(huge) - part.sent
    assert content(index, part).startswith(
        huge[: part.sent] + f"\n[... axe gc left out the last {omitted:,} bytes".encode()
    )
    with pytest.raises(ValueError, match=r"^no cut of this entry fits$"):
        plan_parts(index, unit, unit + 1, within(index, least - 1))


@pytest.mark.parametrize(
    "log",
    [entries(12), (b"## b\n" + b"x" * 2000 + b"\n") * 5 + b"## a\n" * 40],
    ids=["equal entries", "large entries then small ones"],
)
def test_a_part_that_exactly_fills_its_room_is_kept_whole(log: bytes) -> None:
    """A span whose estimate equals the room fits, whatever the entries before its end
    look like: the first part holds exactly the entries that cost the room, not one
    fewer; a token less and it holds one fewer (a single entry then fits only cut)."""
    index = LogIndex(log)
    for held in range(1, index.units):
        room = index.cost(0, held).most
        assert plan_parts(index, 0, held + 1, within(index, room))[0] == Part(0, held)
        if held > 1:
            fewer = plan_parts(index, 0, held + 1, within(index, room - 1))[0]
            assert fewer == Part(0, held - 1)
        else:
            assert not within(index, room - 1)(Part(0, 1))


def test_the_marker_of_a_cut_is_costed_with_the_number_it_states() -> None:
    """The room a cut entry's head gets is what is left beside its marker, costed with the
    number of bytes it really says were left out."""
    log = entries(5) + b"## huge\n" + b"word " * 70
    index = LogIndex(log)
    room = cost(index, Part(5, 6, 64)) + 20
    fits = within(index, room)
    part = plan_parts(index, 5, 6, fits)[-1]
    assert part.sent is not None
    assert (part.first, part.sent) == (5, _longest_head(index, 5, fits))
    assert 64 < part.sent < len(log) - index.bounds[5]
    assert cost(index, part) <= room


def test_a_line_end_in_the_middle_of_a_cut_head_does_not_end_it() -> None:
    """A cut head ends on a line only when its last line end lies in its second half: one
    exactly at the middle would throw half of it away, so the head is cut by bytes."""
    huge = b"## h\n" + b"a" * 27 + b"\n" + b"b" * 600  # its line end is byte 32 of 64
    index = LogIndex(huge)
    (part,) = plan_parts(index, 0, 1, within(index, cost(index, Part(0, 1, 64))))
    assert part.sent is not None
    assert part.sent >= 64


def test_a_cut_head_fills_the_room_a_measure_with_fixed_instructions_leaves() -> None:
    """Where each request also carries instructions, a cut entry's head gets all the room
    beside them and its marker: the instructions are counted once, not again with it."""
    log = entry(1, result="ab " * 2000)
    index = LogIndex(log)
    beside = request_tokens(PATTERN_DETECTION_PROMPT, estimate_tokens(b"")).most
    room = beside + 300

    def fits(part: Part) -> bool:
        sent = content(index, part)
        return request_tokens(PATTERN_DETECTION_PROMPT, estimate_tokens(sent)).most <= room

    (part,) = plan_parts(index, 0, 1, fits)
    fitting = [n for n in range(64, 2000) if fits(Part(0, 1, n))]
    assert part.sent == _longest_head(index, 0, fits) == max(fitting) > 200


def test_a_run_of_entries_is_planned_within_its_own_ends() -> None:
    """The parts of a run of entries (the planner plans each span alone) end at the run's
    end, however much room is left: never in the entries after it, which another part
    sends."""
    index = LogIndex(entries(50))
    for room in (index.cost(0, 30).most, index.cost(0, 50).most):
        assert plan_parts(index, 0, 10, within(index, room)) == [Part(0, 10)]
        assert plan_parts(index, 5, 10, within(index, room), guess=40) == [Part(5, 10)]


def test_the_last_entry_of_a_run_is_sent_whole_when_it_fits_though_sparser_than_the_run() -> None:
    """The last entry of a run that fits a part of its own is sent whole, not cut, even
    when the run's earlier entries are denser, so that a first guess from the run's
    density ends inside it."""
    dense = b"## a\n" + "é".encode() * 300 + b"\n"
    sparse = b"## b\n" + b"a word of prose " * 60 + b"\n"
    index = LogIndex(dense + sparse + entries(2))
    room = index.cost(0, 1).most
    assert index.cost(1, 2).most <= room < index.cost(0, 2).most
    assert plan_parts(index, 0, 2, within(index, room)) == [Part(0, 1), Part(1, 2)]
