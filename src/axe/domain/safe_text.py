"""Text from outside (a model's reply, a server's error, a file name) made inert for a
terminal, in the core so the console and the command line use the one rule: a log entry can
talk a model into replying with escape sequences that would rewrite the user's screen."""

from __future__ import annotations

import re

_SEQUENCES = r"""
      \x1b\][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?   # OSC ... BEL or ST (window title, links)
    | \x1b[P^_X][^\x1b\x9c]*(?:\x1b\\|\x9c)?        # DCS, PM, APC, SOS strings
    | \x1b\[[0-?]*[ -/]*[@-~]?                       # CSI: colours, cursor, erase
    | \x9b[0-?]*[ -/]*[@-~]?                         # 8-bit CSI
    | \x9d[^\x07\x9c]*(?:\x07|\x9c)?                 # 8-bit OSC
    | \x1b[ -/]*[0-~]?                               # other ESC sequences (charsets, keypad)
    """
# C0 and C1 controls but newline and tab; and the bidirectional overrides and isolates,
# which make a terminal show text in another order than it is read ("Trojan Source")
BIDI_CONTROLS = "\u202a-\u202e\u2066-\u2069"
_CONTROLS = f"[\x00-\x08\x0b-\x1f\x7f-\x9f{BIDI_CONTROLS}]"


def terminal_safe(text: str) -> str:
    """Whole sequences are removed (no ``[31m`` debris), then every control but newline and
    tab; a CRLF becomes a newline, a lone carriage return (which could overprint) is dropped."""
    if text.isprintable():
        return text
    text = re.sub(_SEQUENCES, "", text.replace("\r\n", "\n"), flags=re.VERBOSE)
    return re.sub(_CONTROLS, "", text)


# Controls, line separators and BIDI_CONTROLS as JSON writes them (\n, \u001b), so a quoted
# name parses as JSON: the one escaping of messages, quoted or not
_ESCAPED = [*range(0x20), *range(0x7F, 0xA0), 0x2028, 0x2029, *range(0x202A, 0x202F)]
CONTROL_ESCAPES = {code: f"\\u{code:04x}" for code in [*_ESCAPED, *range(0x2066, 0x206A)]} | {
    ord(char): f"\\{letter}" for char, letter in zip("\b\f\n\r\t", "bfnrt", strict=True)
}


def escaped_line(text: str) -> str:
    """One inert line, whatever ``text`` holds (an error naming a path with a newline)."""
    return text.translate(CONTROL_ESCAPES)
