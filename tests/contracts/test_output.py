"""One Output contract, held by the console and by RecordingOutput alike."""

from __future__ import annotations

import io
import typing

from axe.adapters.console import ConsoleOutput
from axe.domain.analysed import AnalysedMemory
from axe.domain.errors import ApiError
from axe.domain.events import (
    AgentFinished,
    AgentsIgnored,
    AgentSkipped,
    AgentStarted,
    AnalysisReady,
    AnalysisSplit,
    AnalysisStarted,
    Event,
    Exposure,
    MemoryRead,
    MemoryUnchanged,
    MergeStarted,
    NoAgentsDirectory,
    NoEntryHeadings,
    PartAnalysed,
    SweepFinished,
    SweepProgress,
    SweepStarted,
    WaitingForLock,
)
from axe.domain.model import ModelRef
from axe.domain.results import AgentResult, AgentStatus, Analysis, SweepResult
from axe.testing import RecordingOutput

SUCCEEDED = [
    AgentResult(agent=status.value, status=status, entries=1, kept=1, limit=1)
    for status in AgentStatus
    if status is not AgentStatus.FAILED
]
RESULTS = (
    *SUCCEEDED,
    AgentResult(agent="failed", status=AgentStatus.FAILED, error=ApiError("down")),
)
EVERY_KIND_OF_EVENT: list[Event] = [
    AgentsIgnored("/tmp/axe/agents", Exposure.WRITABLE, mode=0o777),
    AgentsIgnored("/tmp/axe/agents/x.toml", Exposure.OWNER, owner=1001),
    AgentsIgnored("C:\\shared\\axe\\agents", Exposure.UNCHECKED),
    NoAgentsDirectory(("/w/axe/agents", "/c/axe/agents")),
    NoAgentsDirectory(("/d", "/w/axe/agents", "/c/axe/agents")),
    SweepStarted(tuple(r.agent for r in RESULTS)),
    AgentSkipped("broken", ApiError("x")),
    AgentStarted("a", in_sweep=True),
    AgentStarted("a", in_sweep=False),
    WaitingForLock("a", 42),
    MemoryRead("a", 1, 10),
    MemoryUnchanged("a", AnalysedMemory(size=10, sha256="0" * 64, model="x/y", at=1795576500.5)),
    NoEntryHeadings("a", 10),
    AnalysisStarted("a", ModelRef("x", "y"), 1),
    AnalysisSplit("a", 3),
    PartAnalysed("a", 1, 3),
    MergeStarted("a", 3),
    AnalysisReady("a", Analysis(text="r")),
    *(AgentFinished(result) for result in RESULTS),
    SweepProgress(1, 2, ("b",)),
    SweepFinished(SweepResult(RESULTS)),
]

# What the text console prints for each event above, in order: (stdout, stderr).
TEXT_LINES = [
    (
        "",
        "Warning: ignoring /tmp/axe/agents: other users can write to it (mode 0777); run "
        "chmod go-w on it, or name it with --agents-dir\n",
    ),
    (
        "",
        "Warning: ignoring /tmp/axe/agents/x.toml: it belongs to another user (uid 1001), "
        "not to you\n",
    ),
    (
        "",
        "Warning: ignoring C:\\shared\\axe\\agents: outside your user profile, who can "
        "write to it cannot be checked; name it with --agents-dir\n",
    ),
    ("", "No agents directory found (looked in /w/axe/agents and /c/axe/agents)\n"),
    ("", "No agents directory found (looked in /d, /w/axe/agents and /c/axe/agents)\n"),
    ("", ""),
    ("", 'Warning: skipping agent "broken": x\n'),
    ("=== GC: a ===\n", ""),
    ("", ""),
    ("", ""),
    ("Agent: a\nEntries: 1\n", ""),
    ("Unchanged since gc analysed it at 2026-11-25T03:15:00Z. Skipping analysis and trim.\n", ""),
    (
        "",
        'Warning: no line in the memory file of agent "a" starts with "## ", so it holds no '
        "entries; its text is analysed as it is and nothing is trimmed\n",
    ),
    ("", ""),
    ("", ""),
    ("", ""),
    ("", ""),
    ("--- Analysis ---\nr\n", ""),
    ("Trimmed: 0 entries removed, 1 entries kept.\n", ""),
    ("No trimming needed: 1 entries within limit (1).\n", ""),
    ("No trim target configured (last_n and max_entries are both 0). Skipping trim.\n", ""),
    ("Dry run: no entries trimmed.\n", ""),
    ("", ""),  # unchanged: MemoryUnchanged said it
    ('No memory entries for agent "empty". Nothing to do.\n', ""),
    ("", 'Warning: agent "disabled" does not have memory enabled. Skipping.\n'),
    ("", 'Error: gc failed for agent "failed": down\n'),
    ("", ""),
    ("", "gc completed with errors: 1 of 8 agents failed\n"),
]


def test_the_list_holds_every_kind_of_event() -> None:
    """A new kind of event fails here until it is added above, with what it prints."""
    kinds = {type(event) for event in EVERY_KIND_OF_EVENT}
    assert kinds == set(typing.get_args(Event))
    assert len(TEXT_LINES) == len(JSON_LINES) == len(EVERY_KIND_OF_EVENT)


# What the console prints with --json for each event above, in order: (stdout, stderr).
# stderr is the text console's, word for word; stdout has one object per agent gc ran or
# skipped, and nothing else.
_SUCCEEDED_OBJECT = (
    '{{"agent": "{status}", "status": "{status}", "entries": 1, "removed": 0, "kept": 1, '
    '"limit": 1, "model": null, "analysis": null, "usage": null, "parts": null, '
    '"requests": null, "error": null, "exit_code": 0}}\n'
)
JSON_LINES = [
    *TEXT_LINES[:6],
    (
        '{"agent": "broken", "status": "failed", "entries": null, "removed": 0, "kept": null, '
        '"limit": null, "model": null, "analysis": null, "usage": null, "parts": null, '
        '"requests": null, "error": "x", "exit_code": 3}\n',
        'Warning: skipping agent "broken": x\n',
    ),
    *[("", err) for _out, err in TEXT_LINES[7:18]],
    *[
        (_SUCCEEDED_OBJECT.format(status=status), "")
        for status in ("trimmed", "within_limit", "no_target", "dry_run", "unchanged", "empty")
    ],
    (
        _SUCCEEDED_OBJECT.format(status="disabled"),
        'Warning: agent "disabled" does not have memory enabled. Skipping.\n',
    ),
    (
        '{"agent": "failed", "status": "failed", "entries": null, "removed": 0, "kept": null, '
        '"limit": null, "model": null, "analysis": null, "usage": null, "parts": null, '
        '"requests": null, "error": "down", "exit_code": 3}\n',
        'Error: gc failed for agent "failed": down\n',
    ),
    ("", ""),
    ("", "gc completed with errors: 1 of 8 agents failed\n"),
]


def _console_prints(*, json_lines: bool) -> list[tuple[str, str]]:
    """What the console adds to stdout and stderr for each event, one event at a time."""
    out, err = io.BytesIO(), io.BytesIO()
    console = ConsoleOutput(out, err, json_lines=json_lines)
    printed = []
    for event in EVERY_KIND_OF_EVENT:
        before = (len(out.getvalue()), len(err.getvalue()))
        console.emit(event)
        printed.append((out.getvalue()[before[0] :].decode(), err.getvalue()[before[1] :].decode()))
    return printed


def test_the_console_prints_exactly_these_lines_for_each_event() -> None:
    """Each event's exact bytes on each stream, progress events printing nothing."""
    assert _console_prints(json_lines=False) == TEXT_LINES


def test_with_json_each_agent_is_one_object_and_stderr_is_unchanged() -> None:
    """--json: each event's exact bytes; one JSON object per agent gc ran or skipped on
    stdout, keys in the documented order, and stderr exactly as without --json."""
    assert _console_prints(json_lines=True) == JSON_LINES
    assert [err for _out, err in JSON_LINES] == [err for _out, err in TEXT_LINES]


def test_the_recording_keeps_events_in_order() -> None:
    """A frontend's test sees the events exactly as the use case emitted them, each once,
    none rendered or left out."""
    recording = RecordingOutput()
    for event in EVERY_KIND_OF_EVENT:
        recording.emit(event)
    assert recording.events == EVERY_KIND_OF_EVENT
