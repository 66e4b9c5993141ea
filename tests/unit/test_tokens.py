"""The token estimate: above what a byte-pair tokenizer counts, linear, and additive."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from axe.domain import tokens
from axe.domain.tokens import (
    Calibration,
    certainly_under,
    estimate_tokens,
    most_tokens,
    tally,
    tally_classes,
    token_classes,
)
from tests.tokenizer import count_pieces, count_tokens

_FEW_KINDS = bytes(b"ab 1\t\n,\xe9"[byte % 8] for byte in range(256))  # so runs are common
log_like_text = st.lists(
    st.sampled_from(
        [
            "## 2026-02-27T03:15:00Z\n",
            "**Task:** ",
            "**Result:** ",
            "Review PR #4411",
            " the retry loop swallows cancellation;",
            "  ",
            "\n\n",
            "\r\n",
            "café ✓ 日本語",
            "0x3f9a2c7b",
            "a b c d e",
            "1 2 3 4 5",
            "...",
            "\t",
            " ",
        ]
    )
    | st.text(max_size=12),
    max_size=40,
).map("".join)


@given(log_like_text | st.text())
def test_the_estimate_is_never_below_a_tokenizers_count(text: str) -> None:
    """A request sized by the estimate never exceeds a window counted by the tokenizer."""
    assert estimate_tokens(text.encode()) >= count_tokens(text)


@given(st.binary(), st.binary())
def test_the_estimate_is_additive_at_entry_boundaries(first: bytes, second: bytes) -> None:
    """Two pieces cost what they cost apart when the second starts a line ('## ...'), so
    parts can be sized from their entries' costs."""
    second = b"## " + second
    first = first + b"\n"
    together = estimate_tokens(first + second)
    assert together <= estimate_tokens(first) + estimate_tokens(second)
    assert together >= estimate_tokens(first) + estimate_tokens(second) - 2


@pytest.mark.parametrize("tail", [b"abcdef 12345", b"123456 abc", b"  - x", b" ab"])
def test_slices_of_a_large_log_cost_what_one_pass_costs(
    tail: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A log estimated in slices costs exactly what one pass costs: a word, a number or a
    run of spaces across a slice boundary is not counted twice."""
    for filler in (b"x", b"7", b" "):
        data = filler * ((1 << 16) - 3) + tail
        sliced = estimate_tokens(data)
        monkeypatch.setattr(tokens, "_SLICE", 1 << 30)
        assert estimate_tokens(data) == sliced
        monkeypatch.undo()


@given(st.binary().map(lambda b: b.translate(_FEW_KINDS)), st.integers(1, 9))
def test_any_slicing_costs_what_one_pass_costs(data: bytes, size: int) -> None:
    """However a log is sliced for counting, its estimate by kind of text is that of one
    pass: words, numbers and runs of spaces (their pairs counted from each run's start)
    carry over slice boundaries, so planning can estimate a log piece by piece."""
    whole = token_classes(data)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tokens, "_SLICE", size)
        assert token_classes(data) == whole


@given(st.binary().map(lambda b: b.translate(_FEW_KINDS)), st.data())
def test_counting_on_from_a_tally_counts_as_one_pass(data: bytes, draw: st.DataObject) -> None:
    """Counted in pieces, each on from what the ones before counted, bytes count as in one
    piece: a part's planner tries longer spans by counting only the bytes they add."""
    cuts = sorted(draw.draw(st.lists(st.integers(0, len(data)), max_size=4)))
    counted = tally(b"")
    for start, end in zip([0, *cuts], [*cuts, len(data)], strict=True):
        counted = tally(data[start:end], counted)
    assert counted == tally(data)
    assert tally_classes(counted) == token_classes(data)


@given(st.binary().map(lambda b: b.translate(_FEW_KINDS)) | st.binary())
def test_no_bytes_are_estimated_above_the_most_their_length_allows(data: bytes) -> None:
    """The bound a log that surely fits is sent by, without a pass over it: a token and a
    third a byte and the one any text ends in, reached by a lone digit."""
    assert sum(token_classes(data)) <= most_tokens(len(data))
    assert sum(token_classes(b"7")) == most_tokens(1)


@given(st.binary(max_size=3000), st.integers(min_value=1, max_value=1000))
def test_certainly_under_agrees_with_the_estimate(data: bytes, tokens: int) -> None:
    """The shortcut that skips estimating large logs decides as the estimate would."""
    assert estimate_tokens(data) >= len(data) / 4
    assert certainly_under(data, tokens) == (estimate_tokens(data) < tokens)


def test_a_calibration_brings_like_text_to_its_count_and_keeps_other_text_whole() -> None:
    """Calibrated on prose, the bound of other prose comes down to about its real count and
    stays above it; text of another kind (CJK, counted a token a byte) keeps its full
    estimate, as the sample says nothing about it."""
    prose = " ".join(["the handlers swallow context cancellation and log the bodies"] * 40)
    other = " ".join(["a retry loop that logs request bodies and swallows the errors"] * 30)
    sample = token_classes(prose.encode())
    calibration = Calibration().learnt(sample, count_tokens(prose))
    bound = calibration.bound(token_classes(other.encode()))
    assert count_tokens(other) <= bound < 1.2 * count_tokens(other)
    assert bound < 0.8 * estimate_tokens(other.encode())
    cjk = token_classes("日本語のテキスト".encode() * 50)
    assert calibration.bound(cjk) == sum(cjk)


@pytest.mark.parametrize(
    ("data", "size"),
    [(b"x   ", 2), (b"x    y", 4), (b"ab     c", 3)],
    ids=["an odd run carried into a pair", "three then one", "across three slices"],
)
def test_a_run_of_spaces_across_slices_is_paired_as_in_one_pass(data: bytes, size: int) -> None:
    """A run of spaces split by a slice boundary is paired from its start, as one pass
    pairs it: the space an odd run leaves over pairs with the next slice's first, once."""
    whole = token_classes(data)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tokens, "_SLICE", size)
        assert token_classes(data) == whole


def test_a_log_that_starts_with_one_space_holds_no_pair_of_spaces() -> None:
    """The first byte has no space before it to pair with: one space is a quarter token
    and no pair, beside a word and the one token any text ends in."""
    assert token_classes(b" a") == (1.0, 0.25, 0.0, 0.0, 0.25, 0.0, 1.0)
    assert estimate_tokens(b" a") == 3


@given(
    st.lists(
        st.sampled_from(
            ["\n", "#", "## ", " ", "a", "Review", "42", "1234", ".", "\r", "é", "\t", "**Task:**"]
        ),
        max_size=40,
    ).map("".join)
)
def test_the_stand_in_tokenizer_counts_a_log_entry_by_entry_as_it_counts_it_whole(
    text: str,
) -> None:
    """The loopback's tokenizer sums counts split before each line that starts with ``#``;
    that must be the count of the pieces of the whole text, for any text."""
    assert count_tokens(text) == count_pieces(text)
