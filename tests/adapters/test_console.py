"""The console output: exact bytes on each stream, and a status line only for a person."""

from __future__ import annotations

import io

from axe.adapters.console import ConsoleOutput
from axe.composition import console_output


class Terminal(io.BytesIO):
    def isatty(self) -> bool:
        return True


def test_say_and_warn_write_lines_to_their_own_streams() -> None:
    out, err = io.BytesIO(), io.BytesIO()
    console = ConsoleOutput(out, err)
    console.say("Agent: a")
    console.warn("Warning: x")
    console.say("résumé ✓")
    assert out.getvalue() == "Agent: a\nrésumé ✓\n".encode()
    assert err.getvalue() == b"Warning: x\n"


def test_waiting_prints_nothing_when_nobody_watches() -> None:
    out, err = io.BytesIO(), io.BytesIO()
    console = ConsoleOutput(out, err, interactive=False)
    with console.waiting("Analysing a"):
        pass
    assert out.getvalue() == err.getvalue() == b""


def test_waiting_shows_then_erases_a_status_on_a_terminal() -> None:
    out, err = io.BytesIO(), Terminal()
    ticks = iter([0.0, 0.0, 3.2, 3.4, 3.6, 3.8, 4.0, 4.2])
    console = ConsoleOutput(
        out, err, interactive=True, clock=lambda: next(ticks, 9.0), refresh_seconds=0.001
    )
    with console.waiting("Analysing a: 3 entries with x/y"):
        pass
    shown = err.getvalue().decode()
    assert "Analysing a: 3 entries with x/y (0s)" in shown
    assert shown.endswith("\r\x1b[2K")
    assert out.getvalue() == b""


def test_status_is_erased_before_a_warning_is_printed() -> None:
    err = Terminal()
    console = ConsoleOutput(io.BytesIO(), err, interactive=True, refresh_seconds=0.001)
    with console.waiting("busy"):
        console.warn("Error: x")
    assert "\r\x1b[2KError: x\n" in err.getvalue().decode()


def shown_while_waiting(stderr: io.BytesIO, environ: dict[str, str]) -> str:
    console = console_output(io.BytesIO(), stderr, environ)
    with console.waiting("busy"):
        console.warn("done")
    return stderr.getvalue().decode()


def test_status_is_dimmed_on_a_colour_terminal() -> None:
    assert "\x1b[2m" in shown_while_waiting(Terminal(), {})


def test_no_color_keeps_the_status_but_drops_colour() -> None:
    shown = shown_while_waiting(Terminal(), {"NO_COLOR": "1"})
    assert "busy" in shown
    assert "\x1b[2m" not in shown


def test_pipes_and_dumb_terminals_get_no_status_at_all() -> None:
    assert shown_while_waiting(io.BytesIO(), {}) == "done\n"
    assert shown_while_waiting(Terminal(), {"TERM": "dumb"}) == "done\n"
