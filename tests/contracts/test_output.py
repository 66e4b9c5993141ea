"""One Output contract, held by the console and by RecordingOutput alike."""

from __future__ import annotations

import io

import pytest

from axe.adapters.console import ConsoleOutput
from axe.application.ports import Output
from axe.domain.errors import ApiError
from axe.domain.events import (
    AgentFinished,
    AgentSkipped,
    AgentStarted,
    AnalysisReady,
    AnalysisStarted,
    Event,
    MemoryRead,
    SweepFinished,
    SweepStarted,
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
    SweepStarted(tuple(r.agent for r in RESULTS)),
    AgentSkipped("broken", ApiError("x")),
    AgentStarted("a", in_sweep=True),
    MemoryRead("a", 1, 10),
    AnalysisStarted("a", ModelRef("x", "y"), 1),
    AnalysisReady("a", Analysis(text="r")),
    *(AgentFinished(result) for result in RESULTS),
    SweepFinished(SweepResult(RESULTS)),
]


@pytest.fixture(params=["console", "console-json", "recording"])
def output(request: pytest.FixtureRequest) -> Output:
    if request.param == "recording":
        return RecordingOutput()
    return ConsoleOutput(io.BytesIO(), io.BytesIO(), json_lines=request.param == "console-json")


def test_every_kind_of_event_and_outcome_is_taken(output: Output) -> None:
    """No event or agent status makes an Output raise: a new one must be rendered somewhere."""
    for event in EVERY_KIND_OF_EVENT:
        output.emit(event)


def test_the_recording_keeps_events_in_order() -> None:
    """A frontend's test sees the events exactly as the use case emitted them."""
    recording = RecordingOutput()
    for event in EVERY_KIND_OF_EVENT:
        recording.emit(event)
    assert recording.events == EVERY_KIND_OF_EVENT
