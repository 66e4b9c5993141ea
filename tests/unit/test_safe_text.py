"""Text from outside made inert for a terminal: each kind of sequence, exactly what is left.

The console's own tests (``tests/adapters/test_console.py``) print a hostile reply end to
end; these state the rule itself, one kind of sequence per row, so the fast suite that
``make mutate`` runs sees every branch of it.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from axe.domain.safe_text import BIDI_CONTROLS, escaped_line, terminal_safe


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("plain text, ## and all", "plain text, ## and all"),
        ("a\x1b[31mred\x1b[0m b", "ared b"),  # CSI colours
        ("x\x1b[2Jy\x1b[?25lz", "xyz"),  # CSI erase, private cursor mode
        ("\x1b]0;owned\x07title", "title"),  # OSC ended by BEL
        ("\x1b]8;;http://x\x1b\\link", "link"),  # OSC ended by ST
        ("\x1b]0;t\x9cafter", "after"),  # OSC ended by the 8-bit ST
        ("\x1b]0;never ended", ""),  # OSC to the end of the text
        ("\x1bPq#0;2\x1b\\after", "after"),  # DCS
        ("\x1b^private\x9cafter", "after"),  # PM ended by the 8-bit ST
        ("\x1b_apc\x1b\\x", "x"),  # APC
        ("\x1bXsos\x1b\\x", "x"),  # SOS
        ("\x9b2Jcleared", "cleared"),  # 8-bit CSI
        ("\x9d0;title\x07after", "after"),  # 8-bit OSC ended by BEL
        ("\x9d0;title\x9cafter", "after"),  # 8-bit OSC ended by the 8-bit ST
        ("\x1b(Bcharset", "charset"),  # ESC with an intermediate byte
        ("\x1b=keypad", "keypad"),  # ESC and a final byte
        ("over\rwrite", "overwrite"),  # a lone CR would overprint
        ("line\r\nnext", "line\nnext"),  # CRLF is a line end
        ("tab\tand\nnewline", "tab\tand\nnewline"),
        ("bell\x07nul\x00del\x7fc1\x85end", "bellnuldelc1end"),
        ("\x0b\x0c\x1f", ""),
        ("rm \u202etxt.exe", "rm txt.exe"),  # right-to-left override
        ("\u202a\u202b\u202c\u202d\u2066\u2067\u2068\u2069ok", "ok"),  # embeddings, isolates
        ("\u2065\u2070\u2029", "\u2065\u2070\u2029"),  # beside the ranges: not controls here
    ],
)
def test_terminal_controls_are_removed_and_text_is_kept(text: str, shown: str) -> None:
    """What a reply or an error message shows on a terminal: whole control sequences gone,
    no debris left, the text around them unchanged."""
    assert terminal_safe(text) == shown


@given(st.text())
def test_an_escaped_line_is_one_inert_line_and_unchanged_without_controls(text: str) -> None:
    """A stderr line is one line with no control, bidi control or line separator left, and
    a text without any is shown exactly as it is."""
    unsafe = re.compile(f"[\x00-\x1f\x7f-\x9f\u2028\u2029{BIDI_CONTROLS}]")
    shown = escaped_line(text)
    assert len(shown.splitlines()) <= 1
    assert not unsafe.search(shown)
    if not unsafe.search(text):
        assert shown == text


def test_an_escaped_line_writes_each_control_as_a_quoted_name_does() -> None:
    """Newline, tab, escape, a C1 control, a bidi override and a line separator, each as JSON
    writes it, as a quoted agent name beside it is."""
    shown = escaped_line("a\nb\tc\x1b[31m\x85\u202e\u2028 Mön")
    assert shown == "a\\nb\\tc\\u001b[31m\\u0085\\u202e\\u2028 Mön"
