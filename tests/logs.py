"""Hypothesis strategies for memory logs shaped like real ones, with their known entries.

A log is drawn as whole lines, so the properties meet what `axe run` and a person editing
the file write: 0 to about 50 entries (most examples hold several), text before the first
heading or none (after a UTF-8 byte order mark too), LF, CRLF or both, a last line with
or without its line end, a last line that is a heading without its line end, empty `## `
headings, `## ` inside a result line (not an entry) and at the start of one (an entry, as
in the Go axe), `##` without its space, invalid UTF-8 and multi-byte characters. Each log
comes with the bytes of every entry as it was built, so a property compares what gc finds
with what was put there, not with a second parser.

Entries are drawn whole from a few hundred shapes (one draw each, so a property runs its
examples quickly), and one line of arbitrary bytes goes into one of them. Byte soups
(``memory_bytes`` in ``tests/unit/test_entries.py``) still cover the finder's odd inputs;
these cover the trims, which need logs that hold entries to trim.
"""

from __future__ import annotations

from attrs import frozen
from hypothesis import strategies as st

MOST_ENTRIES = 50

LF, CRLF = b"\n", b"\r\n"

# Heading text after "## ": a timestamp as `axe run` writes it, nothing at all, free text,
# invalid UTF-8, "## " again, multi-byte characters.
_HEADINGS = [b"2026-02-27T03:15:00Z", b"", b"not a time", b"\xff\xfe", b"## twice", "é €".encode()]

# Lines of an entry's body or of the text before the first heading, without their line
# ends. None starts with "## " (that would be a heading); several hold "## " or "##" where
# they do not start an entry.
_LINES = [
    b"**Task:** review PR 12",
    b"**Result:** see ## below",
    b"",
    b"##no space",
    b"#",
    b" ## indented",
    b"text with a lone \r inside",
    b"\xc3\x28 invalid \xff",
    "multi-byte: żółć 日本語 🙂".encode(),
]
_BODIES = [
    tuple(_LINES[(start + step * i) % len(_LINES)] for i in range(size))
    for size in range(4)
    for start in range(len(_LINES))
    for step in (1, 2)
][len(_LINES) * 2 - 1 :]  # one empty body, not eighteen


def _entry(heading: bytes, body: tuple[bytes, ...], eols: tuple[bytes, bytes]) -> bytes:
    lines = [b"## " + heading, *body]
    return b"".join(line + eols[i % 2] for i, line in enumerate(lines))


_SHAPES = {
    style: [_entry(heading, body, eols) for heading in _HEADINGS for body in _BODIES]
    for style, eols in {"lf": (LF, LF), "crlf": (CRLF, CRLF), "alternating": (CRLF, LF)}.items()
}
_ENTRIES = {
    "lf": st.sampled_from(_SHAPES["lf"]),
    "crlf": st.sampled_from(_SHAPES["crlf"]),
    "mixed": st.sampled_from([shape for shapes in _SHAPES.values() for shape in shapes]),
}
_PRE = st.sampled_from(
    [
        b"",
        b"",
        b"notes before the first entry\n",
        b"a\r\nb\r\n\r\n",
        b"\n",
        b"#\n",
        b"\xef\xbb\xbfnotes after a byte order mark\n",
    ]
)


@frozen
class Log:
    """A memory log and what was put in it: ``pre`` (text before the first heading) and
    each entry's bytes, in file order; ``data`` is ``pre`` and the entries joined."""

    pre: bytes
    entries: tuple[bytes, ...]

    @property
    def data(self) -> bytes:
        return self.pre + b"".join(self.entries)


def _not_a_heading(line: bytes) -> bytes:
    line = line.replace(b"\n", b" ")
    return b" " + line if line.startswith(b"## ") else line


@st.composite
def logs(draw: st.DrawFn, *, most: int = MOST_ENTRIES) -> Log:
    """A log of 0 to ``most`` entries: about one in ten has none, one in ten has one."""
    count = draw(st.sampled_from([0, 1]) if draw(st.integers(0, 4)) == 0 else st.integers(2, most))
    shapes = _ENTRIES[draw(st.sampled_from(list(_ENTRIES)))]
    found = draw(st.lists(shapes, min_size=count, max_size=count))
    pre = draw(_PRE)
    if found:
        at = draw(st.integers(0, count - 1))
        odd = _not_a_heading(draw(st.binary(max_size=12)))
        found[at] = found[at] + odd + LF
        ending = draw(st.sampled_from(["whole", "unended", "heading"]))
        if ending == "unended":  # a hand-edited file may end without its last line end
            found[-1] = found[-1].removesuffix(LF).removesuffix(b"\r")
        elif ending == "heading":  # or in a heading without its line end
            found.append(b"## " + draw(st.sampled_from(_HEADINGS)))
    return Log(pre=pre, entries=tuple(found))


# Logs for the part planner: entries of very unequal size (a heading alone, a few bytes, a
# few hundred, up to 40 KiB, so a span often crosses the planner's 32 KiB blocks), bodies of
# words, numbers, lines or multi-byte characters, so a cut often lands inside a character.
_FILLS = [b"word ", "é".encode(), "€".encode(), "🙂".encode(), b"x", b"12345 ", b"a line\n"]
_FILLS += ["ab\ncd €\n".encode(), "日本語のテキスト ".encode()]
_SIZES = [0, 0, 2, 30, 300, 3000, 40_000]  # bytes of fill: up to 40 KiB in one entry


def _filled(fill: bytes, size: int) -> bytes:
    """About ``size`` bytes of ``fill`` repeated, whole fills only."""
    return fill * -(-size // len(fill))


@st.composite
def planner_logs(draw: st.DrawFn) -> bytes:
    """A log in valid UTF-8 of 0 to 16 entries, most holding several, some over 32 KiB;
    the last entry may end without a line end."""
    count = draw(st.sampled_from([0, 1]) if draw(st.integers(0, 4)) == 0 else st.integers(2, 16))
    pre = draw(st.sampled_from([b"", b"", b"notes before the first entry\n", "é\r\n".encode()]))
    items = [
        b"## "
        + draw(st.sampled_from(_HEADINGS[:3]))
        + b"\n"
        + _filled(draw(st.sampled_from(_FILLS)), draw(st.sampled_from(_SIZES)))
        + draw(st.sampled_from([b"\n\n", b"\n"]))
        for _ in range(count)
    ]
    log = pre + b"".join(items)
    unended = bool(items) and draw(st.booleans())
    return log.rstrip(b"\n") if unended else log
