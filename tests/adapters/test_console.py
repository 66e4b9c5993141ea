"""The console output: exact bytes on each stream, and a status line only for a person."""

from __future__ import annotations

import io
import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from axe.adapters.console import ConsoleOutput
from axe.adapters.console.status import cells, fit, status_text, terminal_columns
from axe.composition import console_output
from axe.domain.errors import ApiError, RefusalMismatchError
from axe.domain.events import (
    AgentFinished,
    AgentStarted,
    AnalysisReady,
    AnalysisSplit,
    AnalysisStarted,
    Event,
    MemoryRead,
    PartAnalysed,
    SweepFinished,
    SweepStarted,
    WaitingForLock,
)
from axe.domain.model import ModelRef
from axe.domain.results import AgentResult, AgentStatus, Analysis, Spent, SweepResult, Usage
from axe.domain.safe_text import terminal_safe
from axe.testing import FakeClock

MODEL = ModelRef("anthropic", "claude-3")


class Terminal(io.BytesIO):
    def isatty(self) -> bool:
        return True


def one_agent(text: str = "the report") -> list[Event]:
    result = AgentResult(
        agent="a",
        status=AgentStatus.TRIMMED,
        entries=3,
        removed=2,
        kept=1,
        limit=1,
        model=MODEL,
        analysis=Analysis(text=text, spent=Spent(usage=Usage(10, 5), requests=1)),
    )
    return [
        AgentStarted("a", in_sweep=False),
        MemoryRead("a", 3, 300),
        AnalysisStarted("a", MODEL, 3),
        AnalysisReady("a", Analysis(text=text, spent=Spent(usage=Usage(10, 5), requests=1))),
        AgentFinished(result),
    ]


def play(console: ConsoleOutput, events: list[Event]) -> None:
    for event in events:
        console.emit(event)


def test_results_go_to_stdout_exactly_as_the_spec_words_them() -> None:
    """stdout carries the spec's lines byte for byte; stderr stays empty."""
    out, err = io.BytesIO(), io.BytesIO()
    play(ConsoleOutput(out, err), one_agent("résumé ✓"))
    assert (
        out.getvalue()
        == (
            "Agent: a\nEntries: 3\n--- Analysis ---\nrésumé ✓\n"
            "Trimmed: 2 entries removed, 1 entries kept.\n"
        ).encode()
    )
    assert err.getvalue() == b""


def test_a_failed_agent_is_one_stderr_line_alone_and_named_in_a_sweep() -> None:
    """Alone, the error is printed as is; under --all it names the agent, then the summary."""
    failed = AgentResult(agent="b", status=AgentStatus.FAILED, error=ApiError("down"))
    err = io.BytesIO()
    ConsoleOutput(io.BytesIO(), err).emit(AgentFinished(failed))
    assert err.getvalue() == b"down\n"

    err = io.BytesIO()
    play(
        ConsoleOutput(io.BytesIO(), err),
        [SweepStarted(("b",)), AgentFinished(failed), SweepFinished(SweepResult((failed,)))],
    )
    assert err.getvalue() == (
        b'Error: gc failed for agent "b": down\ngc completed with errors: 1 of 1 agents failed\n'
    )


def test_the_status_line_shows_while_waiting_and_is_erased() -> None:
    """On a terminal the status names agent, count and model, and is wiped before the report."""
    out, err = io.BytesIO(), Terminal()
    play(ConsoleOutput(out, err, interactive=True, columns=lambda: 120), one_agent())
    shown = err.getvalue().decode()
    assert "Analysing a: 3 entries with anthropic/claude-3 (0s)" in shown
    assert shown.endswith("\r\x1b[2K")
    assert b"Analysing" not in out.getvalue()


def test_closing_the_console_erases_a_status_left_showing() -> None:
    """A run cut short (Ctrl-C mid-analysis) leaves no spinner beside the shell prompt:
    closing erases the row, and closing again writes nothing more."""
    err = Terminal()
    console = ConsoleOutput(io.BytesIO(), err, interactive=True, columns=lambda: 80)
    console.emit(AnalysisStarted("a", MODEL, 3))
    console.close()
    shown = err.getvalue()
    assert shown.endswith(b"\r\x1b[2K")
    console.close()
    assert err.getvalue() == shown


def test_the_status_timer_reads_the_runs_one_clock() -> None:
    """The status line's elapsed time is the run's clock's, as composition hands it the
    same clock as the memory file and the HTTP side: a test moves it without waiting."""
    err, clock = Terminal(), FakeClock(1_000.0)
    console = console_output(io.BytesIO(), err, {"NO_COLOR": "1", "COLUMNS": "120"}, clock=clock)
    console.emit(AnalysisStarted("a", MODEL, 3))
    clock.sleep(42)
    console.emit(AnalysisSplit("a", 4))
    console.close()
    shown = err.getvalue().decode()
    assert "Analysing a: 3 entries with anthropic/claude-3 (0s)" in shown
    assert "Analysing a: about 4 parts with anthropic/claude-3 (42s)" in shown


def test_the_wait_for_a_lock_names_the_agent_first() -> None:
    """On a narrow terminal the middle of a status gives way, so the agent comes first."""
    err = Terminal()
    console = ConsoleOutput(io.BytesIO(), err, interactive=True, columns=lambda: 120)
    console.emit(WaitingForLock("pr-reviewer", 4242))
    console.close()
    assert "| pr-reviewer: waiting for another gc (pid 4242) to finish with its memory (0s)" in (
        err.getvalue().decode()
    )


@pytest.mark.parametrize(
    ("environ", "columns"),
    [({"COLUMNS": "132"}, 132), ({"COLUMNS": "wide"}, 80), ({"COLUMNS": "0"}, 80), ({}, 80)],
)
def test_a_terminal_without_a_size_is_measured_by_columns(
    environ: dict[str, str], columns: int
) -> None:
    """A terminal that reports no width (0 columns, or none at all) is as wide as COLUMNS
    says, else 80."""
    assert terminal_columns(Terminal(), environ) == columns


def test_the_status_is_erased_before_a_warning_is_printed() -> None:
    """A stderr line never lands after a half-erased status."""
    err = Terminal()
    console = ConsoleOutput(io.BytesIO(), err, interactive=True, columns=lambda: 80)
    console.emit(AnalysisStarted("a", MODEL, 3))
    failed = AgentResult(agent="a", status=AgentStatus.FAILED, error=ApiError("Error: x"))
    console.emit(AgentFinished(failed))
    assert err.getvalue().decode().endswith("\r\x1b[2KError: x\n")


@pytest.mark.parametrize("columns", [20, 33, 40, 80])
def test_the_status_never_wraps_whatever_the_width(columns: int) -> None:
    """Each frame fits one row less one column, so erase-line always clears all of it."""
    err = Terminal()
    console = ConsoleOutput(io.BytesIO(), err, interactive=True, columns=lambda: columns)
    console.emit(AnalysisStarted("a-very-long-agent-name-" * 3, ModelRef("openai", "gpt" * 20), 9))
    console.emit(AnalysisReady("a", Analysis(text="r")))
    frames = [f for f in re.split(r"\r\x1b\[2K", err.getvalue().decode()) if f]
    assert frames
    assert all(cells(frame) <= columns - 1 for frame in frames)


def test_a_model_name_with_a_newline_or_tab_stays_on_one_row() -> None:
    """A status never moves the cursor off its row, whatever a TOML file names the model."""
    err = Terminal()
    console = ConsoleOutput(io.BytesIO(), err, interactive=True, columns=lambda: 120)
    console.emit(AnalysisStarted("a", ModelRef("ollama", "llama\n3\tbig\r"), 9))
    console.close()
    frames = [f for f in re.split(r"\r\x1b\[2K", err.getvalue().decode()) if f]
    assert frames == ["| Analysing a: 9 entries with ollama/llama 3 big (0s)"]


@given(st.text(max_size=80), st.integers(min_value=1, max_value=120), st.floats(0, 10_000))
def test_any_status_frame_fits_its_terminal(text: str, columns: int, elapsed: float) -> None:
    """Whatever the words, width and timer, a frame is at most one column short of a row."""
    assert cells(status_text(3, text, elapsed, columns)) <= max(columns - 1, 0)


def test_a_cut_status_keeps_its_start_and_its_end() -> None:
    """A line too wide loses its middle, so 'what' and 'how far' both stay readable."""
    cut = fit("Analysing pr-reviewer: 46 entries with anthropic/claude-sonnet-4", 30)
    assert cells(cut) == 30
    assert cut.startswith("Analysing")
    assert cut.endswith("claude-sonnet-4")
    assert "\u2026" in cut


def test_wide_characters_count_as_two_cells() -> None:
    """CJK names are measured in terminal cells, not characters."""
    assert cells("日本語") == 6
    assert cells(fit("日本語日本語", 5)) <= 5


def test_pipes_and_dumb_terminals_get_no_status_at_all() -> None:
    """cron mail and pipes never see status bytes, nor does TERM=dumb."""
    for stream, environ in ((io.BytesIO(), {}), (Terminal(), {"TERM": "dumb"})):
        play(console_output(io.BytesIO(), stream, environ), one_agent())
        assert stream.getvalue() == b""


def test_the_status_is_dimmed_on_a_colour_terminal_unless_no_color() -> None:
    """Colour only where allowed: NO_COLOR keeps the status but drops the dim escape."""
    coloured, plain = Terminal(), Terminal()
    play(console_output(io.BytesIO(), coloured, {}), one_agent())
    play(console_output(io.BytesIO(), plain, {"NO_COLOR": "1"}), one_agent())
    assert "\x1b[2m" in coloured.getvalue().decode()
    assert "Analysing" in plain.getvalue().decode()
    assert "\x1b[2m" not in plain.getvalue().decode()


HOSTILE = (
    "## Patterns Found\n\x1b[31mred\x1b[0m text\x1b]0;owned\x07 title\n"
    "\x9b2J cleared \x1b[2J\rover\tkept\r\n\x07bell\x00nul\x85next"
)


@pytest.mark.parametrize("stream", [io.BytesIO, Terminal], ids=["pipe", "terminal"])
def test_terminal_control_sequences_in_a_reply_never_reach_the_screen(
    stream: type[io.BytesIO],
) -> None:
    """Colours, OSC titles, C1 controls, bells, NULs and lone CRs are stripped; text stays."""
    out = stream()
    play(ConsoleOutput(out, io.BytesIO()), one_agent(HOSTILE))
    report = out.getvalue().decode().split("--- Analysis ---\n")[1].split("\nTrimmed:")[0]
    assert report == "## Patterns Found\nred text title\n cleared over\tkept\nbellnulnext"


@given(st.text())
def test_safe_text_has_no_control_characters_but_newline_and_tab(text: str) -> None:
    """Whatever a model says, what is printed holds no C0/C1 control but \\n and \\t, and
    no bidirectional override that would reorder what the reader sees."""
    assert not re.search(
        "[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", terminal_safe(text)
    )


def test_a_right_to_left_override_in_a_reply_is_dropped_on_screen_and_escaped_in_json() -> None:
    """U+202E in a report does not reach the terminal; --json writes it as \\u202e."""
    assert terminal_safe("rm \u202etxt.exe") == "rm txt.exe"
    out = io.BytesIO()
    play(ConsoleOutput(out, io.BytesIO(), json_lines=True), one_agent("a\u202eb"))
    assert b'"analysis": "a\\u202eb"' in out.getvalue()


def test_json_lines_stay_one_line_whatever_an_error_or_a_report_holds() -> None:
    """--json's error is the one line stderr prints (a path's newline as \\n), and a line
    or paragraph separator in a report is escaped, so no reader splits an object."""
    out = io.BytesIO()
    failed = AgentResult(agent="b", status=AgentStatus.FAILED, error=ApiError("in /d\nx\x1b"))
    play(ConsoleOutput(out, io.BytesIO(), json_lines=True), [AgentFinished(failed)])
    play(ConsoleOutput(out, io.BytesIO(), json_lines=True), one_agent("a\u2028b\u2029c"))
    text = out.getvalue().decode()
    assert len(text.splitlines()) == 2
    first, second = map(json.loads, text.splitlines())
    assert (first["error"], second["analysis"]) == ("in /d\\nx\\u001b", "a\u2028b\u2029c")


def test_json_lines_put_one_object_per_agent_on_stdout_and_keep_stderr() -> None:
    """--json: stdout is JSON only, one line per agent; stderr is what text mode prints."""
    out, err = io.BytesIO(), io.BytesIO()
    failed = AgentResult(agent="b", status=AgentStatus.FAILED, error=ApiError("down"))
    events = [SweepStarted(("a", "b")), *one_agent(HOSTILE)[1:], AgentFinished(failed)]
    play(ConsoleOutput(out, err, json_lines=True), events)
    first, second = (json.loads(line) for line in out.getvalue().decode().splitlines())
    assert first == {
        "agent": "a",
        "status": "trimmed",
        "entries": 3,
        "removed": 2,
        "kept": 1,
        "limit": 1,
        "model": "anthropic/claude-3",
        "analysis": HOSTILE,
        "usage": {"input_tokens": 10, "output_tokens": 5},
        "parts": 1,
        "requests": 1,
        "error": None,
        "exit_code": 0,
        "budget_max_tokens": None,
        "budget_used_tokens": None,
        "analysed_entries": 3,
    }
    assert (second["status"], second["error"], second["exit_code"]) == ("failed", "down", 3)
    assert err.getvalue() == b'Error: gc failed for agent "b": down\n'
    assert not re.search(b"[\x00-\x1f\x7f]|\xc2[\x80-\x9f]", out.getvalue().replace(b"\n", b""))


LONG_AGENT = "pr-reviewer-with-long-name"
LONG_MODEL = ModelRef("ollama", "llama3-some-really-long-model-name-here")


@pytest.mark.parametrize(
    ("columns", "frame"),
    [
        (60, "| pr-reviewer-with-long-name: llama\u2026-model-name-here (0s)"),
        (40, "| pr-reviewer-with-long-name: l\u2026 (0s)"),
    ],
)
def test_a_narrow_status_keeps_the_agent_name_and_room_for_the_ctrl_c_echo(
    columns: int, frame: str
) -> None:
    """At 60 and 40 columns the words around them go first, then the model's name gives
    way (from its middle) before the agent's, and the frame leaves three columns free: the
    echoed ^C lands on the status row, and the erase that follows clears both."""
    err = Terminal()
    console = ConsoleOutput(io.BytesIO(), err, interactive=True, columns=lambda: columns)
    console.emit(AnalysisStarted(LONG_AGENT, LONG_MODEL, 5))
    console.close()
    assert err.getvalue() == f"\r\x1b[2K{frame}\r\x1b[2K".encode()
    assert cells(frame) == columns - 3


@given(st.text(max_size=80), st.integers(min_value=1, max_value=120), st.floats(0, 10_000))
def test_any_status_frame_leaves_room_for_the_echoed_ctrl_c(
    text: str, columns: int, elapsed: float
) -> None:
    """Whatever the words and width, "^C" echoed after a frame stays on its row."""
    keep = text[: len(text) // 2]
    assert cells(status_text(3, text, elapsed, columns, keep)) <= max(columns - 3, 0)


def test_the_part_count_of_a_split_log_is_said_to_be_about_what_the_plan_expects() -> None:
    """The total on the status line can change when replies calibrate
    the plan, so it is worded as the plan's estimate, never as a promise."""
    err = Terminal()
    console = ConsoleOutput(
        io.BytesIO(), err, interactive=True, columns=lambda: 120, refresh_seconds=3600
    )
    play(
        console,
        [
            AnalysisStarted("a", MODEL, 3600),
            AnalysisSplit("a", 14),
            PartAnalysed("a", 1, 14),
            AnalysisSplit("a", 11),
            PartAnalysed("a", 2, 11),
        ],
    )
    frames = [frame for frame in err.getvalue().decode().split("\r\x1b[2K") if frame]
    assert frames[1:] == [
        "| Analysing a: about 14 parts with anthropic/claude-3 (0s)",
        "| Analysing a: part 1 of about 14 done with anthropic/claude-3 (0s)",
        "| Analysing a: about 11 parts with anthropic/claude-3 (0s)",
        "| Analysing a: part 2 of about 11 done with anthropic/claude-3 (0s)",
    ]
    console.close()


def test_a_refusal_that_cannot_be_true_is_one_line_quoting_the_provider() -> None:
    """The provider's own words, then what gc sent and what to check,
    byte for byte."""
    refusal = (
        "anthropic API error (HTTP 400 invalid_request_error): prompt is too long: 250123 "
        "tokens > 200000 maximum"
    )
    err = io.BytesIO()
    error = RefusalMismatchError(refusal, content=1716, estimate=1567)
    ConsoleOutput(io.BytesIO(), err).emit(AgentFinished(failed_with(error)))
    assert err.getvalue() == (
        b"anthropic API error (HTTP 400 invalid_request_error): prompt is too long: 250123 "
        b"tokens > 200000 maximum (gc sent 1,716 bytes beside its instructions: about 1,567 "
        b"tokens by its own estimate, which errs high; sending less would not help, so gc "
        b"stopped: check the model, its window and any gateway in between, or use --model "
        b"builtin/heuristic)\n"
    )


def failed_with(error: ApiError) -> AgentResult:
    return AgentResult(agent="a", status=AgentStatus.FAILED, error=error)


@pytest.mark.parametrize(
    ("columns", "frame"),
    [
        (90, "| Analysing a-anthropic: 12 entries with anthropic/claude-sonnet-4-20250514 (0s)"),
        (60, "| Analysing a-anthropic with claude-sonnet-4 (0s)"),
        (40, "| a-anthropic: claude-sonnet-4 (0s)"),
    ],
)
def test_a_narrow_status_names_the_model_without_its_date_rather_than_by_its_date(
    columns: int, frame: str
) -> None:
    """A long model name is shortened by dropping its provider and its date, never cut to
    its date alone: at 40 columns `claude-sonnet-4-20250514` reads `claude-sonnet-4`."""
    err = Terminal()
    console = ConsoleOutput(io.BytesIO(), err, interactive=True, columns=lambda: columns)
    console.emit(
        AnalysisStarted("a-anthropic", ModelRef("anthropic", "claude-sonnet-4-20250514"), 12)
    )
    console.close()
    assert err.getvalue() == f"\r\x1b[2K{frame}\r\x1b[2K".encode()
