"""``--all --jobs N``: concurrent agents, output exactly as the sequential run prints it."""

from __future__ import annotations

import random
import threading
import time

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from axe.application.gc import GcOptions, GcPorts, collect_all_garbage
from axe.application.ports import AnalysisRequest, Output
from axe.application.stops import Stopped, StopSignal
from axe.application.workers import run_in_order
from axe.domain.errors import ApiError
from axe.domain.events import AgentStarted, Event, SweepProgress
from axe.domain.results import Completion, SweepResult
from axe.testing import (
    FakeAgentRepository,
    FakeMemoryStore,
    RecordingOutput,
    ScriptedLLM,
    make_agent,
)
from tests.rendering import rendered
from tests.support import entries

KINDS = ["ok", "slow", "unreadable", "provider-down", "disabled", "broken", "empty", "within"]


def fleet(kinds: list[str], seed: int) -> GcPorts:
    """One agent per kind, named so that name order is the order of ``kinds``."""
    agents, files, broken, down, slow = [], {}, {}, set(), set()
    store = FakeMemoryStore()
    for index, kind in enumerate(kinds):
        name = f"agent-{index:02d}-{kind}"
        if kind == "broken":
            broken[name] = f"cannot parse {name}.toml"
            continue
        last_n = 50 if kind == "within" else 2
        agents.append(make_agent(name, enabled=kind != "disabled", last_n=last_n))
        files[name] = b"" if kind == "empty" else entries(5 + index)
        if kind == "unreadable":
            store.unreadable.add(name)
        if kind == "provider-down":
            down.add(entries(5 + index))
        if kind == "slow":
            slow.add(entries(5 + index))
    store.files.update(files)
    chance = random.Random(seed)
    lock = threading.Lock()

    def answer(request: AnalysisRequest) -> Completion | ApiError:
        with lock:
            pause = chance.uniform(0, 0.004)
        time.sleep(pause * (5 if request.content in slow else 1))  # later ones overtake it
        if request.content in down:
            return ApiError("anthropic API error (HTTP 503): overloaded")
        return Completion(f"report on {len(request.content)} bytes")

    return GcPorts(
        agents=FakeAgentRepository(*agents, broken=broken),
        memory=store,
        llm=ScriptedLLM(script=answer),
        output=RecordingOutput(),
    )


def facts(sweep: SweepResult) -> list[tuple[object, ...]]:
    """The results with errors as (kind, message): exceptions compare by identity."""
    return [
        (
            attrs.evolve(result, error=None),
            type(result.error).__name__,
            str(result.error) if result.error else None,
        )
        for result in sweep.agents
    ]


def swept(kinds: list[str], seed: int, jobs: int) -> tuple[list[Event], SweepResult, GcPorts]:
    ports = fleet(kinds, seed)
    sweep = collect_all_garbage(GcOptions(jobs=jobs), ports)
    assert isinstance(ports.output, RecordingOutput)
    return ports.output.events, sweep, ports


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.sampled_from(KINDS), min_size=1, max_size=10),
    st.integers(min_value=2, max_value=6),
    st.integers(),
)
def test_jobs_print_exactly_what_the_sequential_run_prints(
    kinds: list[str], jobs: int, seed: int
) -> None:
    """Whatever mix of successes, failures and skipped agents, and whatever finishes first,
    --jobs N prints byte for byte what --all prints, in text and in JSON, with the same
    results and the same files left behind."""
    one_by_one, sequential, sequential_ports = swept(kinds, seed, jobs=1)
    concurrent, parallel, parallel_ports = swept(kinds, seed, jobs=jobs)
    assert rendered(concurrent) == rendered(one_by_one)
    assert rendered(concurrent, json_lines=True) == rendered(one_by_one, json_lines=True)
    assert facts(parallel) == facts(sequential)
    assert isinstance(parallel_ports.memory, FakeMemoryStore)
    assert isinstance(sequential_ports.memory, FakeMemoryStore)
    assert parallel_ports.memory.files == sequential_ports.memory.files


def test_jobs_really_run_agents_at_the_same_time() -> None:
    """With --jobs 4 and a slow provider, four analyses are in flight at once."""
    in_flight, most = 0, 0
    lock = threading.Lock()

    def slow(request: AnalysisRequest) -> Completion:
        nonlocal in_flight, most
        with lock:
            in_flight += 1
            most = max(most, in_flight)
        time.sleep(0.05)
        with lock:
            in_flight -= 1
        return Completion("report")

    names = [f"a{i}" for i in range(8)]
    ports = GcPorts(
        agents=FakeAgentRepository(*(make_agent(n, last_n=1) for n in names)),
        memory=FakeMemoryStore({n: entries(2) for n in names}),
        llm=ScriptedLLM(script=slow),
        output=RecordingOutput(),
    )
    collect_all_garbage(GcOptions(jobs=4), ports)
    assert most == 4
    assert isinstance(ports.output, RecordingOutput)
    progress = ports.output.of_type(SweepProgress)
    assert progress[0].total == 8
    assert [e.agent for e in ports.output.of_type(AgentStarted)] == names


def test_a_stop_reaches_every_worker_and_nothing_queued_starts() -> None:
    """Ctrl-C in the coordinating thread is re-raised at once; the workers under way see
    the stop before they change anything, and queued work never starts."""
    started: list[int] = []
    changed: list[int] = []
    both_started = threading.Barrier(3)
    release = threading.Event()

    def work(item: int, _: Output, stop: StopSignal) -> int:
        started.append(item)
        both_started.wait(5)
        release.wait(5)
        stop.check()  # where gc checks before trimming
        changed.append(item)
        return item

    def interrupt(done: int, running: list[int]) -> Event:
        both_started.wait(5)  # two workers are busy: Ctrl-C arrives now
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_in_order(
            [0, 1, 2, 3, 4, 5],
            work,
            jobs=2,
            output=RecordingOutput(),
            stop=StopSignal(),
            progress=interrupt,
        )
    release.set()
    time.sleep(0.2)  # the two workers reach their check
    assert sorted(started) == [0, 1]
    assert changed == []


def test_stopped_is_not_an_agent_failure() -> None:
    """An interrupted agent is not reported as failed: the stop ends the whole run."""
    assert not issubclass(Stopped, ApiError)
