"""Splitting a log into parts: every entry once, in order, every part within its room."""

from __future__ import annotations

import bisect
from itertools import pairwise

import pytest
from hypothesis import Phase, event, given, settings
from hypothesis import strategies as st

from axe.domain.entries import EntryCounts, count_entries, entry_starts
from axe.domain.parts import LogLayout, Part, halve, plan_parts
from axe.domain.tokens import estimate_tokens
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


def _units(log: bytes) -> list[int]:
    """Where a part may begin or end: every entry's start, the file's start and end."""
    return sorted({0, *entry_starts(log), len(log)}) if log else [0]


def _marker_for(log: bytes, part: Part) -> bytes:
    """The marker a cut of ``part`` is planned with (all of it left out)."""
    return Part(part.start, part.end, part.first_entry, part.entries, sent_bytes=0).content(log)


def _longest_head(layout: LogLayout, part: Part, room: int) -> int:
    """What a cut part should send: the longest head (at least its first 64 bytes) whose
    cost with the marker fits the room, then ended at its last line end when that lies in
    its second half, else moved back off the middle of a character (to its lead byte)."""
    log, start, size = layout.log, part.start, part.end - part.start
    budget = max(room - layout.cost_of(_marker_for(log, part)), 1)
    floor = min(64, size)
    lengths = range(floor, size + 1)  # the cost of a head never falls as it grows
    fitting = bisect.bisect_right(lengths, budget, key=lambda n: layout.cost(start, start + n))
    longest = lengths[max(fitting - 1, 0)]
    newline = log.rfind(b"\n", start, start + longest)
    if newline > start + longest // 2:
        return newline + 1 - start
    while longest > 1 and start + longest < len(log) and 0x80 <= log[start + longest] < 0xC0:
        longest -= 1
    return longest


def _check_within_room(layout: LogLayout, parts: list[Part], room: int) -> None:
    log = layout.log
    for part in parts:
        sent = part.content(log)
        if part.sent_bytes is None:
            assert estimate_tokens(sent) <= room
            continue
        # Cut: one unit that alone exceeds the room, its head sent with the marker.
        assert part.start in _units(log)
        assert _units(log)[_units(log).index(part.start) + 1] == part.end
        assert layout.cost(part.start, part.end) > room
        assert 0 < part.sent_bytes <= part.end - part.start
        assert part.sent_bytes == _longest_head(layout, part, room)
        assert sent.startswith(log[part.start : part.start + part.sent_bytes])
        omitted = part.end - part.start - part.sent_bytes
        assert sent.endswith(
            f"axe gc left out the last {omitted:,} bytes of this entry here: "
            "the entry alone is larger than the model's context window "
            "allows ...]\n".encode()
        )
        if estimate_tokens(sent) > room:  # only when even the first 64 bytes do not fit
            floor = log[part.start : part.start + min(64, part.end - part.start)]
            assert part.sent_bytes <= len(floor)
            assert estimate_tokens(floor) + estimate_tokens(_marker_for(log, part)) > room
            event("cut to its first 64 bytes, over the room")
        else:
            event("cut within the room")


@given(logs, st.integers(min_value=1, max_value=400))
def test_every_part_is_within_its_room_unless_cut_to_its_header(log: bytes, room: int) -> None:
    """What is sent for each part is estimated within the room; only an entry too large
    even for that is cut, with the marker, down to what fits; only when even its first 64
    bytes and the marker exceed the room is more sent than the room."""
    layout = LogLayout(log)
    _check_within_room(layout, plan_parts(layout, room), room)


_ROOMS = st.sampled_from([1, 40, 300, 2000, 9000]) | st.integers(min_value=1, max_value=30_000)


def _check_plan(layout: LogLayout, room: int, start: int, end: int) -> list[Part]:
    """The parts of ``start:end`` (two unit boundaries): they cover it once, in order, each
    within its room or cut down to what fits, and each ends only where the next entry
    would not fit."""
    parts = plan_parts(layout, room, start, end)
    _check_within_room(layout, parts, room)
    units = _units(layout.log)
    assert [p.start for p in parts[1:]] == [p.end for p in parts[:-1]]
    if parts:
        assert (parts[0].start, parts[-1].end) == (start, end)
    else:
        assert start == end
    assert sum(p.entries for p in parts) == LogLayout(layout.log).entries_between(start, end)
    for part, following in pairwise(parts):
        assert layout.cost(part.start, units[units.index(following.start) + 1]) > room
    return parts


@given(planner_logs(), _ROOMS, st.data())
def test_large_and_unequal_logs_are_split_into_as_few_parts_as_fit(
    log: bytes, room: int, data: st.DataObject
) -> None:
    """Entries of very unequal size, spans over 32 KiB, multi-byte text: the parts of the
    log, or of any run of its entries, cover it once, in order; each is within its room,
    or one entry too large for it cut down to what fits, between two characters; and a
    part ends only where the next entry would not fit (greedy filling: no more parts than
    a fill from the start needs)."""
    layout = LogLayout(log)
    parts = _check_plan(layout, room, 0, len(log))
    assert sum(p.entries for p in parts) == count_entries(log)
    units = _units(log)
    first = data.draw(st.integers(0, len(units) - 1), label="first unit")
    last = data.draw(st.integers(first, len(units) - 1), label="last unit")
    _check_plan(layout, room, units[first], units[last])
    for part in parts:
        if part.sent_bytes is not None:
            head = log[part.start : part.start + part.sent_bytes]
            head.decode("utf-8")  # raises when cut inside a character
            event(f"cut after a multi-byte character: {head[-1] >= 0x80}")
    event(f"log over 32 KiB: {len(log) > 1 << 15}")
    event(f"parts: {min(len(parts), 3)}")


_BLOCK = 1 << 15  # the planner keeps running estimates at every 32 KiB


@given(planner_logs(), st.lists(st.integers(0, 1000), min_size=2, max_size=2))
def test_a_span_costs_what_it_costs_in_one_piece(log: bytes, ends: list[int]) -> None:
    """The planner's estimate of any span of a log: exactly the estimate of its bytes in one
    piece when it crosses at most one 32 KiB boundary; over more, at most two tokens more
    per boundary it crosses (a word cut in two, the end of a piece), never less."""
    start, end = sorted(len(log) * end // 1000 for end in ends)
    cost = LogLayout(log).cost(start, end)
    alone = estimate_tokens(log[start:end])
    crossed = end // _BLOCK - -(-start // _BLOCK)
    if crossed <= 0:
        assert cost == alone
    else:
        assert alone <= cost <= alone + 2 * (crossed + 2)
    event(f"32 KiB boundaries crossed: {min(max(crossed + 1, 0), 3)}")


# Words, numbers and runs of spaces of every length, so an end falls inside any of them.
_MIXED = (b"## a\nwords 12 345  x   y\t7    z\n" * 5000)[: 4 * _BLOCK]


@given(st.integers(0, _BLOCK), st.lists(st.integers(2 * _BLOCK, 4 * _BLOCK - 1), min_size=2))
def test_a_span_costs_the_same_whatever_was_asked_before(start: int, ends: list[int]) -> None:
    """The planner counts a span's end on from the nearest end it counted before in the
    same 32 KiB block (a search for where a part ends tries ends ever closer together);
    the estimate is the one a fresh planner gives, wherever the ends fall, in one block or
    two, and in whatever order they are asked."""
    layout = LogLayout(_MIXED)
    for end in ends:
        assert layout.classes(start, end) == LogLayout(_MIXED).classes(start, end)


@given(planner_logs(), _ROOMS)
def test_halving_splits_near_the_middle_or_sends_half_of_one_entry(log: bytes, room: int) -> None:
    """A refusal without numbers halves a part: at the entry boundary nearest its middle,
    or, for a single entry, by sending half of what it sent, cut between characters."""
    layout = LogLayout(log)
    for part in plan_parts(layout, room):
        inside = [unit for unit in _units(log) if part.start < unit < part.end]
        halves = halve(layout, part)
        if inside:
            first, second = halves
            middle = (part.start + part.end) / 2
            assert (first.start, first.end, second.end) == (part.start, second.start, part.end)
            # the nearest, within a byte (the middle is rounded down to a byte; a tie goes to
            # the earlier boundary)
            assert all(abs(first.end - middle) <= abs(unit - middle) + 1 for unit in inside)
            assert first.entries + second.entries == part.entries
            assert second.first_entry == part.first_entry + first.entries
        else:
            (only,) = halves
            assert (only.start, only.end, only.first_entry, only.entries) == (
                part.start,
                part.end,
                part.first_entry,
                part.entries,
            )
            half = max(part.sent_size // 2, 1)
            assert only.sent_bytes is not None
            assert half - 4 < only.sent_bytes <= half
            log[part.start : part.start + only.sent_bytes].decode("utf-8")


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


def _label(log: bytes, start: int, end: int) -> str:
    return LogLayout(log).part(start, end).label(log)


def test_a_label_names_one_entry_or_a_range_by_its_first_and_last_headings() -> None:
    """The merge request names each report's entries by number and by heading: one entry
    by its own heading, a range by its first and last; text before the first entry names
    no entry and no heading."""
    log = entries(4)
    starts = entry_starts(log)
    assert _label(log, starts[2], starts[3]) == "entry 3, 2026-01-01T00:02:00Z"
    assert _label(log, starts[1], len(log)) == (
        "entries 2-4, 2026-01-01T00:01:00Z to 2026-01-01T00:03:00Z"
    )
    pre = b"notes\n" + entries(1)
    assert _label(pre, 0, 6) == "entries 1-0"  # only the text before the first entry


@pytest.mark.parametrize(
    ("log", "label"),
    [
        (b"## t1\na\n## t1\nb\n", "entries 1-2, t1"),  # the same heading is said once
        (b"## \na\n## t2\nb\n", "entries 1-2"),  # no first heading: none said
        (b"## t1\na\n##   \r\nb\n", "entries 1-2, t1"),  # trimmed to nothing
        (b"##  \xff t\xc3 \r\n", "entry 1, \ufffd t\ufffd"),  # not UTF-8: replaced
        (b"## " + b"x" * 300 + b"\nbody\n", "entry 1, " + "x" * 197),  # a line cut at 200
        (b"x\n## t1\na\n## t2", "entries 1-2, t1 to t2"),  # after text; no line end
        (b"## t1\na\n## x", "entries 1-2, t1 to x"),  # a short last heading, read whole
        (b"## t1\na\n## t2\nb\n## ", "entries 1-3, t1 to t2"),  # a bare `## ` at the end
    ],
)
def test_a_label_reads_its_headings_as_written(log: bytes, label: str) -> None:
    """Headings in a label are trimmed, invalid UTF-8 replaced, a heading line longer than
    200 bytes cut, and found at the very ends of the part."""
    assert _label(log, 0, len(log)) == label


def test_halving_a_tie_goes_to_the_earlier_boundary() -> None:
    """Halving is deterministic: of two boundaries equally near the middle (rounded down
    to a byte), the earlier one splits the part."""
    log = "é\r\n".encode() + b"## 2026-02-27T03:15:00Z\n\n\n## \n\n"
    layout = LogLayout(log)
    first, second = halve(layout, layout.part(0, len(log)))
    assert (first.start, first.end, second.start, second.end) == (0, 4, 4, len(log))
    assert (first.first_entry, first.entries, second.first_entry, second.entries) == (1, 0, 1, 2)


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
    layout = LogLayout(log)
    (only,) = halve(layout, layout.part(0, len(log)))
    assert only.sent_bytes == sent


def test_a_plan_needs_room_for_at_least_one_token() -> None:
    """Planning parts with no room at all is a programming error, said at once, not a loop."""
    for room in (0, -5):
        with pytest.raises(ValueError, match=r"^a part must have room for at least one token$"):
            plan_parts(LogLayout(entries(3)), room)


def test_an_entry_too_large_for_any_room_still_sends_its_first_64_bytes() -> None:
    """However small the room, a cut entry sends its first 64 bytes (its heading line, in
    practice) with the marker: the model learns which entry it was."""
    huge = b"## " + b"x" * 1000
    (cut,) = plan_parts(LogLayout(huge), 1)
    assert cut.sent_bytes == 64
    assert cut.content(huge).startswith(huge[:64] + b"\n[... axe gc left out the last 939 bytes")


@pytest.mark.parametrize(
    "log",
    [entries(12), (b"## b\n" + b"x" * 2000 + b"\n") * 5 + b"## a\n" * 40],
    ids=["equal entries", "large entries then small ones"],
)
def test_a_part_that_exactly_fills_its_room_is_kept_whole(log: bytes) -> None:
    """A span whose estimate equals the room fits, whatever the entries before its end
    look like: the first part holds exactly the entries that cost the room, not one
    fewer; a token less and it holds one fewer (a single entry is then cut)."""
    layout = LogLayout(log)
    starts = entry_starts(log)
    for held in range(1, len(starts)):
        room = layout.cost(0, starts[held])
        first = plan_parts(layout, room)[0]
        assert (first.entries, first.end, first.sent_bytes) == (held, starts[held], None)
        fewer = plan_parts(layout, room - 1)[0]
        if held == 1:
            assert (fewer.entries, fewer.sent_bytes is not None) == (1, True)
        else:
            assert (fewer.entries, fewer.sent_bytes) == (held - 1, None)


def test_the_marker_of_a_cut_is_costed_with_the_number_it_states() -> None:
    """The room a cut entry's head gets is what is left beside its marker, costed with the
    number of bytes it really says were left out."""
    huge = b"## huge\n" + b"word " * 70
    log = entries(5) + huge
    layout = LogLayout(log)
    cut = plan_parts(layout, 103)[-1]
    assert (cut.start, cut.sent_bytes) == (len(entries(5)), 73)
    assert cut.sent_bytes == _longest_head(layout, cut, 103)


def test_a_line_end_in_the_middle_of_a_cut_head_does_not_end_it() -> None:
    """A cut head ends on a line only when its last line end lies in its second half: one
    exactly at the middle would throw half of it away, so the head is cut by bytes."""
    huge = b"## h\n" + b"a" * 27 + b"\n" + b"b" * 600  # its line end is byte 32 of 64
    (cut,) = plan_parts(LogLayout(huge), 20)
    assert cut.sent_bytes == 64


@pytest.mark.parametrize(
    ("start", "end", "most_above"),
    [(_BLOCK - 10, _BLOCK + 10, 0), (5, 3 * _BLOCK, 6), (_BLOCK + 5, 4 * _BLOCK + 5, 8)],
    ids=["across one boundary", "from the start", "from inside a block"],
)
def test_a_span_of_a_large_log_costs_about_what_it_costs_in_one_piece(
    start: int, end: int, most_above: int
) -> None:
    """Across one 32 KiB boundary, a span is estimated exactly as in one piece; across more,
    at most two tokens more per boundary, wherever it starts."""
    log = b"## a\n" + b"word " * 30_000
    alone = estimate_tokens(log[start:end])
    assert alone <= LogLayout(log).cost(start, end) <= alone + most_above


@pytest.mark.parametrize("log", [b"x\n## a\n", b"\n## a\n"], ids=["2 bytes", "1 byte"])
def test_text_of_a_byte_or_two_before_the_first_entry_too_large_is_a_part_of_its_own(
    log: bytes,
) -> None:
    """Text before the first entry, a byte or two long, that alone exceeds the room is
    sent whole as a part of its own, the entry after it as the next: planning ends."""
    pre = log.index(b"## ")
    assert plan_parts(LogLayout(log), 1) == [
        Part(0, pre, 1, 0, sent_bytes=pre),
        Part(pre, len(log), 1, 1, sent_bytes=len(log) - pre),
    ]


def test_a_cut_head_fills_the_room_a_measure_with_fixed_instructions_leaves() -> None:
    """Where each request also carries instructions (planning's measure costs an empty
    span at what they cost), a cut entry's head gets all the room beside them and its
    marker: the instructions are counted once, not again with the marker."""
    log = entry(1, result="ab " * 2000)
    layout = LogLayout(log).measured(lambda classes: sum(classes) + 50)
    (part,) = plan_parts(layout, 300)
    assert part.sent_bytes is not None
    marker = layout.cost_of(_marker_for(log, part)) - layout.cost_of(b"")
    fitting = [n for n in range(64, 1000) if layout.cost(0, n) + marker <= 300]
    assert part.sent_bytes == max(fitting) > 200


def test_counts_made_of_other_bytes_are_not_taken_for_the_logs() -> None:
    """A layout handed entry counts of other bytes counts its own log's entries: parts are
    numbered from the log they are of."""
    log = entries(2)
    layout = LogLayout(log, entries=EntryCounts(b"## x\n" * len(log)))
    assert layout.part(0, len(log)) == Part(0, len(log), 1, 2)
    assert layout.entries_between(0, len(log)) == 2


def test_a_run_of_entries_is_planned_within_its_own_ends() -> None:
    """The parts of a run of entries (the planner plans each span alone) end at the run's
    end, however much room is left: never in the entries after it, which another part
    sends (were the first guess or a later one below the run's start, an offset counted
    from the log's end would find them)."""
    log = entries(50)
    starts = entry_starts(log)
    layout = LogLayout(log)
    for room in (layout.cost(0, starts[30]), layout.cost(0, len(log))):
        assert plan_parts(layout, room, 0, starts[10]) == [layout.part(0, starts[10])]
        assert plan_parts(layout, room, starts[5], starts[10]) == [
            layout.part(starts[5], starts[10])
        ]


def test_the_last_entry_of_a_run_is_sent_whole_when_it_fits_though_sparser_than_the_run() -> None:
    """The last entry of a run (the planner plans each span alone) that fits a part of its
    own is sent whole, not cut, even when the run's earlier entries are denser, so that
    a first guess from the run's density ends inside it."""
    dense = b"## a\n" + "é".encode() * 150 + b"\n"
    sparse = b"## b\n" + b"x" * 1000 + b"\n"
    log = dense + sparse + entries(2)
    layout = LogLayout(log)
    end = len(dense + sparse)
    room = layout.cost(0, len(dense))
    assert layout.cost(len(dense), end) <= room < layout.cost(0, end)
    assert room / (layout.cost(0, end) / end) < len(sparse)  # room's worth of the run: inside it
    assert plan_parts(layout, room, 0, end) == [
        layout.part(0, len(dense)),
        layout.part(len(dense), end),
    ]
