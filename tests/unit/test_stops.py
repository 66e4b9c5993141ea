"""Stops (Ctrl-C, SIGTERM) never cost a report: every agent whose memory file changed is
reported before the run ends, and no agent without a report has a record.

The use case is driven through the public fakes; a stop is what the CLI's signal handler
does, ``StopSignal.interrupt``, or, on the coordinating thread of ``--jobs``, a
``KeyboardInterrupt`` raised while it reports progress.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import attrs
import pytest

from axe.application.gc import GcOptions, GcPorts, collect_all_garbage, collect_garbage
from axe.application.ports import AnalysisRequest
from axe.application.stops import StopSignal
from axe.domain.entries import MemorySnapshot, TrimPlan
from axe.domain.events import AgentFinished, AnalysisReady, Event, SweepProgress
from axe.domain.model import AgentConfig
from axe.testing import (
    FakeAgentRepository,
    FakeMemoryStore,
    RecordingOutput,
    ScriptedLLM,
    make_agent,
)
from tests.rendering import rendered
from tests.support import entries

NAMES = [f"a{index}" for index in range(8)]


class StopWhen(RecordingOutput):
    """The coordinating thread's output under ``--jobs``: Ctrl-C arrives while it reports
    progress, once ``ready`` says the workers are where the test wants them."""

    def __init__(self, ready: Callable[[], bool]) -> None:
        super().__init__()
        self.ready = ready
        self.stopped = False

    def emit(self, event: Event) -> None:
        if isinstance(event, SweepProgress) and not self.stopped and self.ready():
            self.stopped = True
            raise KeyboardInterrupt
        super().emit(event)


def fleet(output: RecordingOutput, store: FakeMemoryStore, llm: ScriptedLLM) -> GcPorts:
    agents = [make_agent(name, last_n=2) for name in NAMES]
    store.files.update({name: entries(5) for name in NAMES})
    return GcPorts(agents=FakeAgentRepository(*agents), memory=store, llm=llm, output=output)


def reported(events: list[Event]) -> list[str]:
    return [event.result.agent for event in events if isinstance(event, AgentFinished)]


def sections(names: list[str]) -> list[str]:
    """The text report of each of ``names``, analysed and trimmed from 5 entries to 2."""
    return [
        line
        for name in names
        for line in (
            f"=== GC: {name} ===",
            f"Agent: {name}",
            "Entries: 5",
            "--- Analysis ---",
            "the analysis",
            "Trimmed: 3 entries removed, 2 entries kept.",
        )
    ]


def test_a_stop_under_jobs_reports_every_agent_that_finished_before_it() -> None:
    """`--all --jobs 4`, one slow provider and seven fast ones, Ctrl-C once the seven are
    trimmed: each of them is reported in full, in name order (text and JSON), before the
    stop ends the run; the slow one is neither trimmed, nor recorded, nor reported."""
    release = threading.Event()
    store = FakeMemoryStore()

    def answer(request: AnalysisRequest) -> str:
        if request.content == store.files.get("a0"):
            release.wait(10)
        return "the analysis"

    output = StopWhen(ready=lambda: len(store.trims) == 7)
    p = fleet(output, store, ScriptedLLM(script=answer))
    store.files["a0"] = entries(6)  # its own content, so the provider knows it
    with pytest.raises(KeyboardInterrupt):
        collect_all_garbage(GcOptions(jobs=4), p)
    release.set()
    assert reported(output.events) == NAMES[1:]
    assert sorted(store.records) == NAMES[1:]
    assert store.files["a0"] == entries(6)
    text, _ = rendered(output.events)
    assert text == sections(NAMES[1:])
    objects, _ = rendered(output.events, json_lines=True)
    assert [line.split('"')[3] for line in objects] == NAMES[1:]


class SlowTrim(FakeMemoryStore):
    """A store whose trim of ``slow`` waits for ``release``, having said it began."""

    def __init__(self, slow: str) -> None:
        super().__init__()
        self.slow = slow
        self.began = threading.Event()
        self.release = threading.Event()

    def trim(
        self, agent: AgentConfig, snapshot: MemorySnapshot, plan: TrimPlan, *, archive: bool
    ) -> str | None:
        if agent.name == self.slow:
            self.began.set()
            self.release.wait(10)
        return super().trim(agent, snapshot, plan, archive=archive)


def test_a_stop_during_a_trim_under_jobs_waits_for_it_and_reports_it() -> None:
    """Ctrl-C while a worker is inside a trim: the stop waits until that trim and its
    report are done, then reports it with the others that finished; nothing starts after."""
    store = SlowTrim("a3")
    output = StopWhen(ready=store.began.is_set)
    p = fleet(output, store, ScriptedLLM("the analysis"))
    threading.Timer(0.2, store.release.set).start()  # the trim ends after the stop came
    with pytest.raises(KeyboardInterrupt):
        collect_all_garbage(GcOptions(jobs=8), p)
    assert "a3" in reported(output.events)
    assert "a3" in store.records
    assert store.files["a3"] == entries(2, start=3)
    trimmed = {name for name, _ in store.trims}
    assert trimmed == set(reported(output.events)) == set(store.records)


class StopWhileReporting(RecordingOutput):
    """The main thread's output under ``--jobs``: the CLI's signal handler hands it a stop
    while it writes ``agent``'s report, between two of its lines."""

    def __init__(self, stop: StopSignal, agent: str) -> None:
        super().__init__()
        self.stop = stop
        self.agent = agent

    def emit(self, event: Event) -> None:
        super().emit(event)
        if isinstance(event, AnalysisReady) and event.agent == self.agent:
            self.stop.interrupt(KeyboardInterrupt())


def test_a_stop_while_an_agents_report_is_written_lets_it_end_first() -> None:
    """`--all --jobs 4`, Ctrl-C after the analysis of a trimmed agent is printed but
    before its Trimmed: line: that line follows, and every agent whose file changed is
    reported in full, before the stop ends the run."""
    stop = StopSignal()
    store = FakeMemoryStore()
    output = StopWhileReporting(stop, "a3")
    p = attrs.evolve(fleet(output, store, ScriptedLLM("the analysis")), stop=stop)
    with pytest.raises(KeyboardInterrupt):
        collect_all_garbage(GcOptions(jobs=4), p)
    trimmed = sorted(name for name, _ in store.trims)
    assert "a3" in trimmed
    assert reported(output.events) == trimmed
    text, _ = rendered(output.events)
    assert text == sections(trimmed)


class InterruptedTrim(FakeMemoryStore):
    """A store during whose trim the CLI's signal handler hands a stop to ``stop``."""

    def __init__(self, stop: StopSignal, stop_with: BaseException) -> None:
        super().__init__({"a": entries(5)})
        self.stop = stop
        self.stop_with = stop_with

    def trim(
        self, agent: AgentConfig, snapshot: MemorySnapshot, plan: TrimPlan, *, archive: bool
    ) -> str | None:
        self.stop.interrupt(self.stop_with)  # Ctrl-C or SIGTERM, the moment the trim began
        return super().trim(agent, snapshot, plan, archive=archive)


@pytest.mark.parametrize("stop_with", [KeyboardInterrupt(), SystemExit(143)])
def test_a_stop_during_a_trim_is_raised_after_its_report(stop_with: BaseException) -> None:
    """`axe gc a`, Ctrl-C or SIGTERM as the trim begins: the trim finishes, its record is
    written and its Trimmed: line printed, and only then does the stop end the run."""
    stop = StopSignal()
    store = InterruptedTrim(stop, stop_with)
    output = RecordingOutput()
    p = GcPorts(
        agents=FakeAgentRepository(make_agent("a", last_n=2)),
        memory=store,
        llm=ScriptedLLM("the analysis"),
        output=output,
        stop=stop,
    )
    with pytest.raises(type(stop_with)):
        collect_garbage("a", GcOptions(), p)
    assert rendered(output.events)[0][-1] == "Trimmed: 3 entries removed, 2 entries kept."
    assert store.files["a"] == entries(2, start=3)
    assert "a" in store.records


def test_a_stop_before_the_trim_changes_nothing() -> None:
    """Ctrl-C while the provider is being asked: nothing is trimmed, recorded or reported."""
    stop = StopSignal()
    output = RecordingOutput()

    def answer(request: AnalysisRequest) -> str:
        stop.interrupt(KeyboardInterrupt())
        return "never used"

    store = FakeMemoryStore({"a": entries(5)})
    p = GcPorts(
        agents=FakeAgentRepository(make_agent("a", last_n=2)),
        memory=store,
        llm=ScriptedLLM(script=answer),
        output=output,
        stop=stop,
    )
    with pytest.raises(KeyboardInterrupt):
        collect_garbage("a", GcOptions(), p)
    assert (store.files["a"], store.trims, store.records) == (entries(5), [], {})
    assert reported(output.events) == []


def test_a_second_stop_while_the_first_is_carried_out_is_ignored() -> None:
    """While a stop waits for the changes under way, another Ctrl-C cannot cut it short."""
    stop = StopSignal()
    stop._halting = True  # as halt() sets it, before it waits
    stop.interrupt(KeyboardInterrupt())  # no exception: the first stop goes on
    assert stop.requested
