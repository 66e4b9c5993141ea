"""``--skip-unchanged`` in the use case, on the public fakes: what is skipped, what is
analysed again, and what each analysis records; the record's decision on plain bytes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
from hypothesis import given
from hypothesis import strategies as st

from axe.application.gc import GcOptions, GcPorts, collect_all_garbage, collect_garbage
from axe.domain.analysed import AnalysedMemory, Narrowed, digest
from axe.domain.events import MemoryUnchanged
from axe.domain.model import AgentConfig, ModelRef
from axe.domain.results import AgentStatus
from axe.testing import (
    FakeAgentRepository,
    FakeClock,
    FakeMemoryStore,
    RecordingOutput,
    ScriptedLLM,
    make_agent,
)
from tests.rendering import rendered
from tests.support import entries, entry
from tests.unit.test_analysis import Window

SKIP = GcOptions(skip_unchanged=True)
NOON = 1_795_608_000.0  # 2026-11-25T12:00:00Z
MODEL = ModelRef("anthropic", "claude-3")


def ports(*agents: AgentConfig, files: dict[str, bytes]) -> GcPorts:
    return GcPorts(
        agents=FakeAgentRepository(*agents),
        memory=FakeMemoryStore(files, clock=FakeClock(NOON)),
        llm=ScriptedLLM("the analysis"),
        output=RecordingOutput(),
    )


def again(p: GcPorts) -> GcPorts:
    """The same files, records and agents, a new run: a fresh output and a fresh LLM."""
    return attrs.evolve(p, llm=ScriptedLLM("the analysis"), output=RecordingOutput())


def store(p: GcPorts) -> FakeMemoryStore:
    assert isinstance(p.memory, FakeMemoryStore)
    return p.memory


def sent(p: GcPorts) -> int:
    assert isinstance(p.llm, ScriptedLLM)
    return len(p.llm.requests)


def stderr(p: GcPorts) -> list[str]:
    assert isinstance(p.output, RecordingOutput)
    return rendered(p.output.events)[1]


def stdout(p: GcPorts, *, json_lines: bool = False) -> list[str]:
    assert isinstance(p.output, RecordingOutput)
    return rendered(p.output.events, json_lines=json_lines)[0]


@given(st.binary(max_size=64), st.binary(max_size=64))
def test_a_record_holds_exactly_the_bytes_it_was_made_of(left: bytes, now: bytes) -> None:
    """Only the very bytes gc left count as unchanged; any other content is a change."""
    record = AnalysedMemory.of(left, model=MODEL, at=NOON)
    assert record.holds(now, MODEL, None) is (now == left)
    assert (record.size, record.sha256) == (len(left), digest(left))


def test_a_record_of_another_model_does_not_hold() -> None:
    """The same bytes analysed by another model are analysed again by this one."""
    record = AnalysedMemory.of(b"x", model=MODEL, at=NOON)
    assert not record.holds(b"x", ModelRef("openai", "gpt-4o"), None)


def test_the_second_run_over_an_unchanged_fleet_sends_nothing() -> None:
    """A quiet fleet costs nothing: every agent analysed once is skipped the next time,
    no request and no trim, each a success, with the spec's two lines and the time; an
    embedder is told which agent is unchanged since which record."""
    fleet = [make_agent(name, last_n=3) for name in ("a", "b", "c")]
    first = ports(*fleet, files={agent.name: entries(10) for agent in fleet})
    assert collect_all_garbage(SKIP, first).exit_code == 0
    assert sent(first) == 3

    second = again(first)
    sweep = collect_all_garbage(SKIP, second)
    assert (sent(second), sweep.exit_code) == (0, 0)
    assert [result.status for result in sweep.agents] == [AgentStatus.UNCHANGED] * 3
    assert stdout(second)[:4] == [
        "=== GC: a ===",
        "Agent: a",
        "Entries: 3",
        "Unchanged since gc analysed it at 2026-11-25T12:00:00Z. Skipping analysis and trim.",
    ]
    assert len(store(second).trims) == 3  # the first run's, none since
    assert isinstance(second.output, RecordingOutput)
    assert second.output.of_type(MemoryUnchanged) == [
        MemoryUnchanged(name, AnalysedMemory.of(entries(3, 7), model=MODEL, at=NOON))
        for name in ("a", "b", "c")
    ]


def test_jobs_skip_the_same_agents_with_the_same_output() -> None:
    """Under --jobs the same agents are skipped and stdout is the sequential run's."""

    def recorded_fleet() -> GcPorts:
        fleet = [make_agent(name, last_n=3) for name in ("a", "b", "c", "d")]
        p = ports(*fleet, files={agent.name: entries(10) for agent in fleet})
        collect_all_garbage(SKIP, p)
        store(p).append(fleet[2], entry(99))
        return again(p)

    parallel, sequential = recorded_fleet(), recorded_fleet()
    collect_all_garbage(attrs.evolve(SKIP, jobs=3), parallel)
    collect_all_garbage(SKIP, sequential)
    assert (sent(parallel), sent(sequential)) == (1, 1)
    assert stdout(parallel) == stdout(sequential)


def test_a_skip_takes_no_lock() -> None:
    """Deciding to skip changes nothing, so it neither waits for another gc nor holds one up."""
    p = ports(make_agent("a", last_n=3), files={"a": entries(2)})
    collect_garbage("a", SKIP, p)
    store(p).locked.clear()
    result = collect_garbage("a", SKIP, again(p))
    assert (result.status, store(p).locked) == (AgentStatus.UNCHANGED, [])


def test_the_json_status_is_unchanged() -> None:
    """--json says "unchanged", with the entries it holds and no request."""
    p = ports(make_agent("a", last_n=3), files={"a": entries(2)})
    collect_garbage("a", SKIP, p)
    collect_garbage("a", SKIP, second := again(p))
    assert stdout(second, json_lines=True) == [
        '{"agent": "a", "status": "unchanged", "entries": 2, "removed": 0, "kept": 2, '
        '"limit": 3, "model": "anthropic/claude-3", "analysis": null, "usage": null, '
        '"parts": null, "requests": null, "error": null, "exit_code": 0, '
        '"budget_max_tokens": null, "budget_used_tokens": null, "analysed_entries": null}'
    ]


def changed(change: str, p: GcPorts, agent: AgentConfig) -> GcOptions:
    """Make one kind of change after a recorded run; the options of the next run."""
    files = store(p).files
    if change == "an appended entry":
        store(p).append(agent, entry(99))
    elif change == "an edit in the middle":  # same size
        files[agent.name] = files[agent.name].replace(b"Task number 8", b"Task NUMBER 8")
    elif change == "a deleted record":
        del store(p).records[agent.name]
    elif change == "another --model":
        return attrs.evolve(SKIP, model_override="anthropic/claude-4")
    return SKIP


def test_any_change_is_analysed_again() -> None:
    """An appended entry, an edit in the middle of the same size, a deleted record and
    another model each mean "changed": the agent is analysed again, as without the flag."""
    for change in ("an appended entry", "an edit in the middle", "a deleted record"):
        agent = make_agent("a", last_n=3)
        p = ports(agent, files={"a": entries(10)})
        collect_garbage("a", SKIP, p)
        options = changed(change, p, agent)
        result = collect_garbage("a", options, second := again(p))
        assert result.status is not AgentStatus.UNCHANGED, change
        assert sent(second) == 1, change
    agent = make_agent("a", last_n=3)
    p = ports(agent, files={"a": entries(10)})
    collect_garbage("a", SKIP, p)
    result = collect_garbage("a", changed("another --model", p, agent), second := again(p))
    assert (result.status, sent(second)) == (AgentStatus.WITHIN_LIMIT, 1)


def test_the_record_is_what_the_trim_kept() -> None:
    """After a trim the record describes the kept tail gc wrote; without one, the bytes it
    analysed; stamped with the run's clock and the model used."""
    trimmed = ports(make_agent("a", last_n=3), files={"a": entries(10)})
    collect_garbage("a", SKIP, trimmed)
    assert store(trimmed).records["a"] == AnalysedMemory.of(entries(3, 7), model=MODEL, at=NOON)
    kept = ports(make_agent("b", last_n=30), files={"b": entries(10)})
    collect_garbage("b", attrs.evolve(SKIP, model_override="openai/gpt-4o"), kept)
    record = AnalysedMemory.of(entries(10), model=ModelRef("openai", "gpt-4o"), at=NOON)
    assert store(kept).records["b"] == record


def test_an_entry_appended_during_the_analysis_is_analysed_next_time() -> None:
    """An entry `axe run` appends while gc analyses is carried over by the trim but was not
    analysed, so the next run analyses the file again."""
    agent = make_agent("a", last_n=3)
    p = ports(agent, files={"a": entries(10)})

    def reply_and_append(_: object) -> str:
        store(p).append(agent, entry(99))
        return "the analysis"

    collect_garbage("a", SKIP, attrs.evolve(p, llm=ScriptedLLM(script=reply_and_append)))
    assert store(p).files["a"] == entries(3, 7) + entry(99)
    assert collect_garbage("a", SKIP, second := again(p)).status is AgentStatus.TRIMMED
    assert sent(second) == 1


def test_every_analysis_records_but_a_dry_run() -> None:
    """A gc without --skip-unchanged records what it left too, so that a nightly
    --skip-unchanged run after a run by hand skips the agent; a dry run (which changes
    nothing) records nothing."""
    p = ports(make_agent("a", last_n=3), make_agent("b", last_n=3), files={"a": entries(5)})
    store(p).files["b"] = entries(5)
    collect_garbage("a", GcOptions(), p)
    collect_garbage("b", attrs.evolve(SKIP, dry_run=True), p)
    assert store(p).records == {"a": AnalysedMemory.of(entries(3, 2), model=MODEL, at=NOON)}
    result = collect_garbage("a", SKIP, second := again(p))
    assert (result.status, sent(second)) == (AgentStatus.UNCHANGED, 0)


def test_a_dry_run_skips_what_is_unchanged_too() -> None:
    """--dry-run --skip-unchanged leaves out what a real run would skip: no request."""
    p = ports(make_agent("a", last_n=30), files={"a": entries(5)})
    collect_garbage("a", SKIP, p)
    result = collect_garbage("a", attrs.evolve(SKIP, dry_run=True), second := again(p))
    assert (result.status, sent(second)) == (AgentStatus.UNCHANGED, 0)


def test_an_agent_analysed_while_this_gc_waited_for_the_lock_is_skipped() -> None:
    """Two overlapping runs: the one that waited for the lock finds the file as the first
    left it, with its record, and sends nothing."""
    p = ports(make_agent("a", last_n=3), files={"a": entries(10)})

    class Overlapping(FakeMemoryStore):
        """Another gc runs, and records, between this one's look and its lock."""

        raced = False

        def lock(self, agent: AgentConfig, *, waiting: Callable[[int | None], None]) -> Any:
            if not self.raced:
                self.raced = True
                collect_garbage("a", SKIP, attrs.evolve(p, memory=self))
            return super().lock(agent, waiting=waiting)

    racing = Overlapping({"a": entries(10)}, clock=FakeClock(NOON))
    result = collect_garbage("a", SKIP, second := attrs.evolve(again(p), memory=racing))
    assert (result.status, sent(second), sent(p)) == (AgentStatus.UNCHANGED, 0, 1)
    assert stdout(second)[-1].startswith("Unchanged since gc analysed it at")


def test_a_budget_narrowed_record_holds_only_under_that_budget() -> None:
    """A record of an analysis that a budget narrowed skips the file only for a run with the
    same budget: any other budget, or none, could read older entries, so it analyses."""
    record = AnalysedMemory.of(b"x", model=MODEL, at=NOON, narrowed=Narrowed(20_000, 7))
    assert record.holds(b"x", MODEL, 20_000)
    assert not record.holds(b"x", MODEL, 30_000)
    assert not record.holds(b"x", MODEL, None)
    whole = AnalysedMemory.of(b"x", model=MODEL, at=NOON)
    assert (whole.budget, whole.holds(b"x", MODEL, 30_000)) == (None, True)


def test_an_untrimmed_log_a_budget_narrowed_is_skipped_under_the_same_budget() -> None:
    """An agent without a trim limit whose oldest entries the budget left out is recorded
    with the budget and the entries analysed: the same budget skips it next time (the same
    newest entries would be paid for again), another budget analyses it."""
    budget = attrs.evolve(SKIP, max_tokens=20_000)
    window = ScriptedLLM(script=Window(10_000), window=10_000)
    p = attrs.evolve(ports(make_agent("a"), files={"a": entries(3000)}), llm=window)
    result = collect_garbage("a", budget, p)
    assert result.status is AgentStatus.NO_TARGET
    assert result.analysed_entries is not None
    assert 0 < result.analysed_entries < 3000
    assert store(p).records == {
        "a": AnalysedMemory.of(
            entries(3000), model=MODEL, at=NOON, narrowed=Narrowed(20_000, result.analysed_entries)
        )
    }
    second = attrs.evolve(again(p), llm=ScriptedLLM(script=Window(10_000), window=10_000))
    assert collect_garbage("a", budget, second).status is AgentStatus.UNCHANGED
    assert sent(second) == 0
    assert stdout(second)[-1] == (
        f"Unchanged since gc analysed its newest {result.analysed_entries:,} entries under a "
        "budget of 20,000 tokens at 2026-11-25T12:00:00Z. Skipping analysis and trim."
    )
    other = attrs.evolve(again(p), llm=ScriptedLLM(script=Window(10_000), window=10_000))
    wider = attrs.evolve(budget, max_tokens=30_000)
    assert collect_garbage("a", wider, other).status is AgentStatus.NO_TARGET
    assert sent(other) > 0


def test_a_trim_that_keeps_entries_a_budget_left_out_records_the_budget() -> None:
    """A trim that keeps more entries than the budget analysed records the budget too; a
    trim that keeps only analysed entries is recorded as a whole analysis."""
    budget = attrs.evolve(SKIP, max_tokens=20_000)
    window = ScriptedLLM(script=Window(10_000), window=10_000)
    p = attrs.evolve(ports(make_agent("a", last_n=5000), files={"a": entries(3000)}), llm=window)
    analysed = collect_garbage("a", budget, p).analysed_entries
    assert analysed is not None
    assert analysed < 3000
    assert store(p).records["a"].budget == 20_000
    assert store(p).records["a"].analysed == analysed
    result = collect_garbage("a", SKIP, second := again(p))
    assert (result.status, sent(second)) == (AgentStatus.WITHIN_LIMIT, 1)
    trimmed = attrs.evolve(ports(make_agent("b", last_n=3), files={"b": entries(3000)}), llm=window)
    assert collect_garbage("b", budget, trimmed).status is AgentStatus.TRIMMED
    assert store(trimmed).records["b"] == AnalysedMemory.of(entries(3, 2997), model=MODEL, at=NOON)


def test_a_record_that_cannot_be_kept_is_a_warning_under_the_flag_only() -> None:
    """Where the store cannot keep the record, --skip-unchanged says so once per run (the
    agent will be analysed every time); without the flag nothing is said, as nothing was
    asked of the record."""
    p = ports(make_agent("a", last_n=3), files={"a": entries(5)})
    store(p).unrecordable = "/m is writable by others"
    collect_garbage("a", GcOptions(), p)
    assert stderr(p) == []
    collect_garbage("a", SKIP, second := again(p))
    assert stderr(second) == [
        'Warning: --skip-unchanged cannot record the analysis of agent "a" (/m is writable '
        "by others), so it will be analysed on every run"
    ]
    assert store(p).records == {}


def test_a_trim_to_exactly_the_entries_a_budget_analysed_is_recorded() -> None:
    """A budget that analysed exactly the newest entries the trim keeps left nothing
    unanalysed in the file: the record is kept, and the next --skip-unchanged run skips."""
    budget = attrs.evolve(SKIP, max_tokens=20_000)
    window = ScriptedLLM(script=Window(10_000), window=10_000)
    probe = attrs.evolve(ports(make_agent("a"), files={"a": entries(3000)}), llm=window)
    analysed = collect_garbage("a", attrs.evolve(budget, dry_run=True), probe).analysed_entries
    assert analysed is not None
    assert 3 < analysed < 3000
    agent = make_agent("b", last_n=analysed)
    llm = ScriptedLLM(script=Window(10_000), window=10_000)
    p = attrs.evolve(ports(agent, files={"b": entries(3000)}), llm=llm)
    result = collect_garbage("b", budget, p)
    assert (result.status, result.analysed_entries) == (AgentStatus.TRIMMED, analysed)
    kept = entries(analysed, 3000 - analysed)
    assert store(p).records == {"b": AnalysedMemory.of(kept, model=MODEL, at=NOON)}
    assert collect_garbage("b", SKIP, again(p)).status is AgentStatus.UNCHANGED
