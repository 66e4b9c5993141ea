"""One Output contract, held by the console and by RecordingOutput alike."""

from __future__ import annotations

import io
import typing

from axe.adapters.console import ConsoleOutput
from axe.domain.analysed import AnalysedMemory
from axe.domain.budget import Budget, Estimate
from axe.domain.errors import ApiError, BudgetTooSmallError
from axe.domain.events import (
    AgentFinished,
    AgentsIgnored,
    AgentSkipped,
    AgentStarted,
    AnalysisNarrowed,
    AnalysisReady,
    AnalysisSplit,
    AnalysisStarted,
    CountingUnavailable,
    Event,
    Exposure,
    MemoryRead,
    MemoryUnchanged,
    MergeStarted,
    NoAgentsDirectory,
    NoEntryHeadings,
    PartAnalysed,
    RecordNotKept,
    SweepFinished,
    SweepProgress,
    SweepStarted,
    TrimWarning,
    WaitingForLock,
)
from axe.domain.model import ModelRef
from axe.domain.results import AgentResult, AgentStatus, Analysis, SweepResult
from axe.domain.window import WindowSource
from axe.testing import RecordingOutput

SUCCEEDED = [
    AgentResult(agent=status.value, status=status, entries=1, kept=1, limit=1)
    for status in AgentStatus
    if status not in (AgentStatus.FAILED, AgentStatus.ESTIMATED)  # an estimate: see below
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

# The budget: an agent analysed within it, one it is too small for, and
# --estimate's results (narrowed by a budget, unlimited, offline, too small).
FLAG_BUDGET = Budget(50_000, flag=True)
FILE_BUDGET = Budget(2_000, flag=False, source="/c/axe/agents/h.toml")
CLAUDE = ModelRef("anthropic", "claude-3")


def _estimated(agent: str, entries: int, **facts: object) -> AgentResult:
    estimate = facts.pop("estimate")
    assert isinstance(estimate, Estimate)
    return AgentResult(
        agent=agent,
        status=AgentStatus.ESTIMATED,
        entries=entries,
        kept=entries,
        model=facts.pop("model", CLAUDE),  # type: ignore[arg-type]
        estimate=estimate,
        **facts,  # type: ignore[arg-type]
    )


BUDGET_EVENTS: list[Event] = [
    AnalysisNarrowed("a", FLAG_BUDGET, 412, 3600),
    AgentFinished(
        AgentResult(
            agent="a",
            status=AgentStatus.DRY_RUN,
            entries=3600,
            kept=3600,
            analysis=Analysis(text="r"),
            budget=FLAG_BUDGET,
            budget_used=49_000,
            analysed=412,
        )
    ),
    AgentFinished(
        AgentResult(
            agent="b",
            status=AgentStatus.FAILED,
            entries=5,
            kept=5,
            budget=FILE_BUDGET,
            budget_used=0,
            error=BudgetTooSmallError(FILE_BUDGET, needed=4_700),
        )
    ),
    AgentFinished(
        _estimated(
            "e",
            3600,
            budget=FLAG_BUDGET,
            budget_used=0,
            estimate=Estimate(
                window=9000,
                requests=17,
                merges=1,
                most_requests=23,
                input_tokens=214_332,
                likely_input_tokens=138_598,
                output_tokens=94_208,
                analysed=412,
                all_entries=308_540,
            ),
        )
    ),
    AgentFinished(
        _estimated(
            "f",
            20,
            estimate=Estimate(
                requests=1,
                most_requests=1,
                input_tokens=1_500,
                likely_input_tokens=1_050,
                output_tokens=4_096,
                analysed=20,
                all_entries=5_596,
            ),
        )
    ),
    AgentFinished(
        _estimated(
            "g",
            5,
            model=ModelRef("builtin", "heuristic"),
            budget=FILE_BUDGET,
            budget_used=0,
            estimate=Estimate(offline=True, analysed=5),
        )
    ),
    AgentFinished(
        _estimated(
            "h",
            5,
            budget=FILE_BUDGET,
            budget_used=0,
            estimate=Estimate(window=200_000, all_entries=9_000, one_entry=4_700),
        )
    ),
]
EVERY_KIND_OF_EVENT += BUDGET_EVENTS
EVERY_KIND_OF_EVENT.append(RecordNotKept("a", "/m is writable by others"))
HELD = "a program still holds /m/a.md open for writing"
EVERY_KIND_OF_EVENT += [
    CountingUnavailable("a", "openai", "its count endpoint answered HTTP 404"),
    CountingUnavailable("b", "openai", "its count endpoint answered HTTP 404"),  # said once a run
    AgentFinished(
        _estimated(
            "i",
            40,
            estimate=Estimate(
                window=1_000_000,
                window_source=WindowSource.PROVIDER,
                requests=1,
                most_requests=1,
                input_tokens=1_310,
                likely_input_tokens=1_310,
                output_tokens=4_096,
                analysed=40,
                all_entries=5_406,
                counted=True,
            ),
        )
    ),
    TrimWarning("a", HELD),
    AgentFinished(
        AgentResult(
            agent="a",
            status=AgentStatus.TRIMMED,
            entries=3,
            removed=2,
            kept=1,
            limit=1,
            warnings=(HELD,),
        )
    ),
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
BUDGET_TEXT_LINES = [
    (
        "",
        "Budget of 50,000 tokens (from --max-tokens): analysing the newest 412 of 3,600 entries "
        'of agent "a"\n',
    ),
    ("Dry run: no entries trimmed.\n", ""),
    (
        "",
        "budget of 2,000 tokens (from [budget] max_tokens in /c/axe/agents/h.toml) is too "
        "small: analysing even the newest entry needs a budget of 4,700 tokens; nothing was "
        "sent or trimmed\n",
    ),
    (
        "Model: anthropic/claude-3, input window 9,000 tokens\n"
        "Requests: about 17 (16 parts, 1 merge), at most 23\n"
        "Input tokens: 214,332 at most, likely about 138,598\n"
        "Output tokens: 94,208 at most\n"
        "Budget: 50,000 tokens (from --max-tokens): the newest 412 of 3,600 entries (every "
        "entry needs 308,540 at most)\n",
        "",
    ),
    (
        "Model: anthropic/claude-3, input window unknown until a request is refused\n"
        "Requests: 1\n"
        "Input tokens: 1,500 at most, likely about 1,050\n"
        "Output tokens: 4,096 at most\n"
        "Budget: unlimited (every entry needs 5,596 at most)\n",
        "",
    ),
    (
        "Model: builtin/heuristic, offline: it reads the log here, for no tokens\n"
        "Requests: none\n"
        "Input tokens: none\n"
        "Output tokens: none\n"
        "Budget: not needed, nothing is spent\n",
        "",
    ),
    (
        "Model: anthropic/claude-3, input window 200,000 tokens\n"
        "Requests: none\n"
        "Input tokens: none\n"
        "Output tokens: none\n"
        "Budget: 2,000 tokens (from [budget] max_tokens in /c/axe/agents/h.toml): too small, "
        "the newest entry alone needs 4,700 (every entry needs 9,000 at most)\n",
        "",
    ),
]
TEXT_LINES += BUDGET_TEXT_LINES
NOT_RECORDED = (
    'Warning: --skip-unchanged cannot record the analysis of agent "a" (/m is writable by '
    "others), so it will be analysed on every run\n"
)
TEXT_LINES.append(("", NOT_RECORDED))
NOT_COUNTED = (
    "Warning: openai could not count gc's requests (its count endpoint answered HTTP 404); "
    "the budget and the estimate rest on gc's own estimate, which errs high\n"
)
COUNTED_ESTIMATE = (
    "Model: anthropic/claude-3, input window at most 1,000,000 tokens, the provider's "
    "largest; the model's may be smaller\n"
    "Requests: 1\n"
    "Input tokens: 1,310, the provider's own count\n"
    "Output tokens: 4,096 at most\n"
    "Budget: unlimited (every entry needs 5,406 at most)\n"
)
TEXT_LINES += [
    ("", NOT_COUNTED),
    ("", ""),
    (COUNTED_ESTIMATE, ""),
    ("", f'Warning: agent "a": {HELD}\n'),
    ("Trimmed: 2 entries removed, 1 entries kept.\n", ""),
]


def test_the_list_holds_every_kind_of_event() -> None:
    """A new kind of event fails here until it is added above, with what it prints."""
    kinds = {type(event) for event in EVERY_KIND_OF_EVENT}
    assert kinds == set(typing.get_args(Event))
    assert len(TEXT_LINES) == len(JSON_LINES) == len(EVERY_KIND_OF_EVENT)


# What the console prints with --json for each event above, in order: (stdout, stderr).
# stderr is the text console's, word for word; stdout has one object per agent gc ran or
# skipped, and nothing else.
_NO_BUDGET = '"budget_max_tokens": null, "budget_used_tokens": null, "analysed_entries": null'
_SUCCEEDED_OBJECT = (
    '{{"agent": "{status}", "status": "{status}", "entries": 1, "removed": 0, "kept": 1, '
    '"limit": 1, "model": null, "analysis": null, "usage": null, "parts": null, '
    '"requests": null, "error": null, "exit_code": 0, ' + _NO_BUDGET.replace("{", "{{") + "}}\n"
)
ESTIMATED_FACTS = [
    ("e", 3600, CLAUDE, 50000, 0, 412, 17, 214332, 94208, 138598, 9000, 308540, None),
    ("f", 20, CLAUDE, None, None, 20, 1, 1500, 4096, 1050, None, 5596, None),
    ("g", 5, "builtin/heuristic", 2000, 0, 5, 0, 0, 0, 0, None, None, None),
    ("h", 5, CLAUDE, 2000, 0, None, 0, 0, 0, 0, 200000, 9000, 4700),
]


def _estimated_object(*facts: object) -> str:
    (
        agent,
        entries,
        model,
        budget,
        used,
        analysed,
        requests,
        sure,
        out,
        likely,
        window,
        every,
        newest,
    ) = ["null" if fact is None else fact for fact in facts]
    return (
        f'{{"agent": "{agent}", "status": "estimated", "entries": {entries}, "removed": 0, '
        f'"kept": {entries}, "limit": null, "model": "{model}", "analysis": null, '
        '"usage": null, "parts": null, "requests": null, "error": null, "exit_code": 0, '
        f'"budget_max_tokens": {budget}, "budget_used_tokens": {used}, '
        f'"analysed_entries": {analysed}, "estimated_requests": {requests}, '
        f'"estimated_input_tokens": {sure}, "estimated_output_tokens": {out}, '
        f'"likely_input_tokens": {likely}, "input_window_tokens": {window}, '
        '"input_window_source": null, "input_tokens_counted": false, '
        f'"budget_for_every_entry": {every}, "budget_for_newest_entry": {newest}}}\n'
    )


JSON_LINES = [
    *TEXT_LINES[:6],
    (
        '{"agent": "broken", "status": "failed", "entries": null, "removed": 0, "kept": null, '
        '"limit": null, "model": null, "analysis": null, "usage": null, "parts": null, '
        f'"requests": null, "error": "x", "exit_code": 3, {_NO_BUDGET}}}\n',
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
        f'"requests": null, "error": "down", "exit_code": 3, {_NO_BUDGET}}}\n',
        'Error: gc failed for agent "failed": down\n',
    ),
    ("", ""),
    ("", "gc completed with errors: 1 of 8 agents failed\n"),
    (
        "",
        "Budget of 50,000 tokens (from --max-tokens): analysing the newest 412 of 3,600 entries "
        'of agent "a"\n',
    ),
    (
        '{"agent": "a", "status": "dry_run", "entries": 3600, "removed": 0, "kept": 3600, '
        '"limit": null, "model": null, "analysis": "r", "usage": null, "parts": 1, '
        '"requests": 1, "error": null, "exit_code": 0, "budget_max_tokens": 50000, '
        '"budget_used_tokens": 49000, "analysed_entries": 412}\n',
        "",
    ),
    (
        '{"agent": "b", "status": "failed", "entries": 5, "removed": 0, "kept": 5, '
        '"limit": null, "model": null, "analysis": null, "usage": null, "parts": null, '
        '"requests": null, "error": "budget of 2,000 tokens (from [budget] max_tokens in '
        "/c/axe/agents/h.toml) is too small: analysing even the newest entry needs a budget "
        'of 4,700 tokens; nothing was sent or trimmed", "exit_code": 4, '
        '"budget_max_tokens": 2000, "budget_used_tokens": 0, "analysed_entries": null}\n',
        BUDGET_TEXT_LINES[2][1],
    ),
    *[(_estimated_object(*facts), "") for facts in ESTIMATED_FACTS],
    ("", NOT_RECORDED),
    ("", NOT_COUNTED),
    ("", ""),
    (
        _estimated_object(
            "i", 40, CLAUDE, None, None, 40, 1, 1310, 4096, 1310, 1_000_000, 5406, None
        )
        .replace('"input_window_source": null', '"input_window_source": "provider"')
        .replace('"input_tokens_counted": false', '"input_tokens_counted": true'),
        "",
    ),
    ("", f'Warning: agent "a": {HELD}\n'),
    (
        '{"agent": "a", "status": "trimmed", "entries": 3, "removed": 2, "kept": 1, '
        '"limit": 1, "model": null, "analysis": null, "usage": null, "parts": null, '
        f'"requests": null, "error": null, "exit_code": 0, {_NO_BUDGET}, '
        f'"warnings": ["{HELD}"]}}\n',
        "",
    ),
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
