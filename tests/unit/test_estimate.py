"""The token estimate, kind of byte by kind of byte: exactly what each costs.

``tests/unit/test_tokens.py`` holds the estimate's promises (never below a tokenizer's
count, linear, additive); these pin the table behind it, which is built when the module
loads (so ``make mutate`` cannot vary it; docs/testing.md says how it was checked).
"""

from __future__ import annotations

import pytest

from axe.domain.tokens import certainly_under, estimate_tokens, token_classes


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        (b"", 0),
        (b"abcdefgh", 1 + 2 + 1),  # a word: one, and one per four letters (+1 at the end)
        (b"ab cd", 2 + 1 + 0.25 + 1),  # two words, a space
        (b"1234567", 1 + 7 / 3 + 1),  # a number: one, and one per three digits
        (b",.;!?()", 7 + 1),  # punctuation: a whole token each
        (b"\n\r\n", 3 + 1),  # line ends: a whole token each
        (b"\x00\x1b\x7f", 3 + 1),  # controls
        (b"\x80\xc3\xa9\xff", 4 + 1),  # every byte of and above 0x80
        (b"a\t\tb", 2 + 0.5 + 1 + 0.5 + 1),  # tabs are spaces; a run of two costs one more
        (b"    ", 1 + 2 + 1),  # four spaces: a token, one more per pair, and the end
        (b"x", 1 + 0.25 + 1),  # a single byte ends the text too
        (b"a1 b22", 2 + 0.5 + 2 + 1 + 0.25 + 1),  # numbers right after letters start anew
    ],
)
def test_each_kind_of_byte_costs_what_the_estimate_promises(text: bytes, tokens: float) -> None:
    """Words, numbers, spaces, punctuation, line ends, controls and non-ASCII bytes each
    cost what the module's rule says, so no kind of text is underestimated."""
    assert sum(token_classes(text)) == pytest.approx(tokens)
    assert estimate_tokens(text) == -(-tokens // 1)


def test_certainly_under_means_strictly_under() -> None:
    """A request estimated at exactly the limit is not under it; one token more room is."""
    assert estimate_tokens(b"abcdefgh") == 4
    assert not certainly_under(b"abcdefgh", 4)
    assert certainly_under(b"abcdefgh", 5)


def test_the_estimate_is_kept_by_kind_of_text() -> None:
    """What calibration works on: word starts, letters, number starts, digits, spaces, runs
    of spaces, one-token bytes, each in its own place (the text's end among the last)."""
    assert token_classes(b"ab 12,  c") == (2, 0.75, 1, 2 / 3, 0.75, 1, 2)
