"""The gc use case driven entirely through the public fakes: no click, no files, no HTTP.

Each test checks the facts the use case returns and emits; where the promise is about what
the user reads, the recorded events are replayed through the real console renderer and the
exact lines are compared, so the core and the renderer are checked together.
"""

from __future__ import annotations

import gc
import re
import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import attrs
import pytest
from hypothesis import event as drawn
from hypothesis import given
from hypothesis import strategies as st

from axe.application.gc import (
    BelowOneError,
    GcOptions,
    GcPorts,
    collect_all_garbage,
    collect_garbage,
)
from axe.application.ports import AnalysisRequest
from axe.domain.entries import MemorySnapshot
from axe.domain.errors import (
    AgentError,
    ApiError,
    ModelNotFoundError,
    ModelOrigin,
    PromptTooLargeError,
)
from axe.domain.events import (
    AgentFinished,
    AgentSkipped,
    AgentStarted,
    AnalysisReady,
    AnalysisSplit,
    AnalysisStarted,
    Event,
    MemoryRead,
    MergeStarted,
    NoEntryHeadings,
    PartAnalysed,
    SweepFinished,
    SweepProgress,
    SweepStarted,
    WaitingForLock,
)
from axe.domain.model import AgentConfig, ModelRef
from axe.domain.prompt import PATTERN_DETECTION_PROMPT
from axe.domain.results import AgentResult, AgentStatus, Analysis, Completion, Spent, Usage
from axe.testing import (
    FakeAgentRepository,
    FakeMemoryStore,
    RecordingOutput,
    ScriptedLLM,
    make_agent,
)
from tests.logs import Log, logs
from tests.rendering import rendered
from tests.support import entries


def ports(
    *agents: AgentConfig,
    files: dict[str, bytes] | None = None,
    llm: ScriptedLLM | None = None,
    broken: dict[str, str] | None = None,
) -> GcPorts:
    return GcPorts(
        agents=FakeAgentRepository(*agents, broken=broken),
        memory=FakeMemoryStore(files),
        llm=llm or ScriptedLLM("the analysis"),
        output=RecordingOutput(),
    )


def recorded(p: GcPorts) -> RecordingOutput:
    assert isinstance(p.output, RecordingOutput)
    return p.output


def store(p: GcPorts) -> FakeMemoryStore:
    assert isinstance(p.memory, FakeMemoryStore)
    return p.memory


def llm(p: GcPorts) -> ScriptedLLM:
    assert isinstance(p.llm, ScriptedLLM)
    return p.llm


def stdout(p: GcPorts) -> list[str]:
    return rendered(recorded(p).events)[0]


def stderr(p: GcPorts) -> list[str]:
    return rendered(recorded(p).events)[1]


def test_analyses_reports_and_trims() -> None:
    """The whole single-agent flow: the spec's stdout lines in order, and the facts behind them."""
    p = ports(make_agent("a", last_n=3), files={"a": entries(10)})
    result = collect_garbage("a", GcOptions(), p)
    assert stdout(p) == [
        "Agent: a",
        "Entries: 10",
        "--- Analysis ---",
        "the analysis",
        "Trimmed: 7 entries removed, 3 entries kept.",
    ]
    assert stderr(p) == []
    assert (result.status, result.entries, result.removed, result.kept) == (
        AgentStatus.TRIMMED,
        10,
        7,
        3,
    )
    assert (result.exit_code, result.model) == (0, ModelRef("anthropic", "claude-3"))
    assert store(p).files["a"] == entries(3, start=7)


def test_a_writer_still_holding_the_file_is_said_after_the_trim_and_kept_in_the_result() -> None:
    """A trim the store says a writer outlived is reported as done, with one stderr warning
    naming the agent, and the warning in the result (for --json)."""
    p = ports(make_agent("a", last_n=3), files={"a": entries(10)})
    store(p).held_open["a"] = "a program still holds /m/a.md open for writing"
    result = collect_garbage("a", GcOptions(), p)
    assert stdout(p)[-1] == "Trimmed: 7 entries removed, 3 entries kept."
    assert stderr(p) == ['Warning: agent "a": a program still holds /m/a.md open for writing']
    assert result.warnings == ("a program still holds /m/a.md open for writing",)
    assert (result.status, result.exit_code) == (AgentStatus.TRIMMED, 0)


def test_request_carries_prompt_memory_and_fixed_settings() -> None:
    """The one request holds the fixed prompt, the whole log, temperature 0.3 and 4096 tokens."""
    p = ports(make_agent("a", last_n=3), files={"a": entries(4)})
    collect_garbage("a", GcOptions(), p)
    (request,) = llm(p).requests
    assert request.system_prompt == PATTERN_DETECTION_PROMPT
    assert request.content == entries(4)
    assert (request.temperature, request.max_tokens) == (0.3, 4096)
    assert request.model == ModelRef("anthropic", "claude-3")


def test_model_override_replaces_the_agents_model() -> None:
    """--model decides which model analyses, and the result says which one did."""
    p = ports(make_agent("a"), files={"a": entries(2)})
    result = collect_garbage("a", GcOptions(model_override="ollama/llama3"), p)
    assert llm(p).requests[0].model == ModelRef("ollama", "llama3")
    assert result.model == ModelRef("ollama", "llama3")


def test_a_count_below_one_says_which_and_what_in_its_message() -> None:
    """An embedder that shows the error as it is reads which option and which value."""
    with pytest.raises(BelowOneError) as caught:
        GcOptions(jobs=0)
    assert str(caught.value) == "jobs must be at least 1, not 0"


def test_an_invalid_model_override_is_refused_before_any_agent_runs() -> None:
    """A bad --model is one AgentError when the options are built, not one per agent."""
    with pytest.raises(AgentError) as caught:
        GcOptions(model_override="nonsense")
    assert str(caught.value) == 'invalid model format "nonsense": expected provider/model-name'


def test_dry_run_reports_and_keeps_every_entry() -> None:
    """--dry-run prints the analysis and the dry-run line, and trims nothing."""
    p = ports(make_agent("a", last_n=3), files={"a": entries(10)})
    result = collect_garbage("a", GcOptions(dry_run=True), p)
    assert stdout(p)[-2:] == ["the analysis", "Dry run: no entries trimmed."]
    assert (result.status, result.removed, result.kept) == (AgentStatus.DRY_RUN, 0, 10)
    assert store(p).files["a"] == entries(10)
    assert store(p).trims == []


def test_memory_disabled_warns_and_does_nothing() -> None:
    """An agent without memory gets the spec's warning on stderr, exit 0, and no analysis."""
    p = ports(make_agent("a", enabled=False))
    result = collect_garbage("a", GcOptions(), p)
    assert stderr(p) == ['Warning: agent "a" does not have memory enabled. Skipping.']
    assert stdout(p) == []
    assert (result.status, result.exit_code, result.entries) == (AgentStatus.DISABLED, 0, None)
    assert llm(p).requests == []


@pytest.mark.parametrize("files", [{}, {"a": b""}], ids=["missing", "empty"])
def test_no_memory_means_nothing_to_do_and_no_llm_call(files: dict[str, bytes]) -> None:
    """A missing or empty memory file is 'Nothing to do', with no request made."""
    p = ports(make_agent("a", last_n=3), files=files)
    result = collect_garbage("a", GcOptions(), p)
    assert stdout(p) == ['No memory entries for agent "a". Nothing to do.']
    assert (result.status, result.entries, result.kept) == (AgentStatus.EMPTY, 0, 0)
    assert llm(p).requests == []


def test_no_trim_target_skips_the_trim() -> None:
    """last_n and max_entries both 0: the analysis runs, the file is left alone."""
    p = ports(make_agent("a"), files={"a": entries(10)})
    result = collect_garbage("a", GcOptions(), p)
    assert stdout(p)[-1] == (
        "No trim target configured (last_n and max_entries are both 0). Skipping trim."
    )
    assert result.status is AgentStatus.NO_TARGET
    assert store(p).files["a"] == entries(10)


def test_falls_back_to_max_entries() -> None:
    """last_n = 0 falls back to max_entries as the number of entries kept."""
    p = ports(make_agent("a", max_entries=5), files={"a": entries(10)})
    result = collect_garbage("a", GcOptions(), p)
    assert stdout(p)[-1] == "Trimmed: 5 entries removed, 5 entries kept."
    assert (result.limit, result.kept) == (5, 5)
    assert store(p).files["a"] == entries(5, start=5)


def test_max_entries_of_one_keeps_the_newest_entry() -> None:
    """last_n = 0 and max_entries = 1 keeps exactly the newest entry, as any other bound."""
    p = ports(make_agent("a", max_entries=1), files={"a": entries(3)})
    result = collect_garbage("a", GcOptions(), p)
    assert stdout(p)[-1] == "Trimmed: 2 entries removed, 1 entries kept."
    assert (result.status, result.removed, result.kept, result.limit) == (
        AgentStatus.TRIMMED,
        2,
        1,
        1,
    )
    assert store(p).files["a"] == entries(1, start=2)


def test_one_entry_over_the_limit_is_trimmed() -> None:
    """A log one entry over its limit loses exactly its oldest entry; it is not reported as
    within its limit."""
    p = ports(make_agent("a", last_n=2), files={"a": entries(3)})
    result = collect_garbage("a", GcOptions(), p)
    assert stdout(p)[-1] == "Trimmed: 1 entries removed, 2 entries kept."
    assert (result.status, result.removed, result.kept) == (AgentStatus.TRIMMED, 1, 2)
    assert store(p).files["a"] == entries(2, start=1)


def _settings(count: int, data: st.DataObject) -> tuple[int, int]:
    """``last_n`` and ``max_entries`` at the boundaries that matter for a log of ``count``
    entries, in most draws: a target of exactly the count, one fewer, one, or ``last_n = 0``
    falling back to ``max_entries`` of exactly the count; sometimes anything."""
    edges = sorted({count, max(count - 1, 0), 1})
    target = data.draw(st.sampled_from(edges) | st.integers(0, 60), label="target")
    case = data.draw(st.sampled_from(["last_n", "max_entries", "both", "neither"]), label="case")
    other = data.draw(st.integers(0, 60), label="other")
    return {
        "last_n": (target, other),
        "max_entries": (0, target),
        "both": (target, other),
        "neither": (0, 0),
    }[case]


@given(logs(), st.data())
def test_the_file_keeps_the_newest_entries_the_settings_ask_for(
    log: Log, data: st.DataObject
) -> None:
    """Whatever the log and the settings, gc leaves the file holding exactly the newest
    `last_n` (else `max_entries`) entries, byte for byte, and says so in its last line; a
    log within its limit, or with no limit, is left exactly as it was."""
    last_n, max_entries = _settings(len(log.entries), data)
    drawn(f"target - count: {max(-2, min(1, (last_n or max_entries) - len(log.entries)))}")
    p = ports(make_agent("a", last_n=last_n, max_entries=max_entries), files={"a": log.data})
    result = collect_garbage("a", GcOptions(), p)
    count = len(log.entries)
    target = last_n or max_entries
    if not log.data:
        assert (result.status, store(p).files["a"]) == (AgentStatus.EMPTY, b"")
    elif not target:
        assert (result.status, store(p).files["a"]) == (AgentStatus.NO_TARGET, log.data)
    elif count <= target:
        assert (result.status, store(p).files["a"]) == (AgentStatus.WITHIN_LIMIT, log.data)
        assert stdout(p)[-1] == f"No trimming needed: {count} entries within limit ({target})."
        assert store(p).trims == []
    else:
        assert result.status is AgentStatus.TRIMMED
        assert store(p).files["a"] == b"".join(log.entries[-target:])
        assert (result.entries, result.removed, result.kept) == (count, count - target, target)
        assert stdout(p)[-1] == (
            f"Trimmed: {count - target} entries removed, {target} entries kept."
        )


def test_nothing_to_trim_reports_count_and_limit() -> None:
    """A log within its limit is reported with both numbers and not rewritten."""
    p = ports(make_agent("a", last_n=10), files={"a": entries(3)})
    result = collect_garbage("a", GcOptions(), p)
    assert stdout(p)[-1] == "No trimming needed: 3 entries within limit (10)."
    assert (result.status, result.entries, result.limit) == (AgentStatus.WITHIN_LIMIT, 3, 10)
    assert store(p).trims == []


def test_llm_failure_trims_nothing_and_says_how_far_gc_got() -> None:
    """A failed analysis is exit 3, no trim, and the result still knows entries and model."""
    p = ports(make_agent("a", last_n=1), files={"a": entries(4)}, llm=ScriptedLLM(ApiError("boom")))
    result = collect_garbage("a", GcOptions(), p)
    assert (result.status, result.exit_code, str(result.error)) == (AgentStatus.FAILED, 3, "boom")
    assert (result.entries, result.model) == (4, ModelRef("anthropic", "claude-3"))
    assert store(p).files["a"] == entries(4)
    assert "--- Analysis ---" not in stdout(p)
    assert stderr(p) == ["boom"]


class WatchedStore(FakeMemoryStore):
    """A store that remembers, weakly, every snapshot it handed out."""

    def __init__(self, files: dict[str, bytes]) -> None:
        super().__init__(files)
        self.handed_out: list[weakref.ref[MemorySnapshot]] = []

    def read(self, agent: AgentConfig) -> MemorySnapshot:
        snapshot = super().read(agent)
        self.handed_out.append(weakref.ref(snapshot))
        return snapshot


def test_failed_results_do_not_keep_the_logs_they_read_alive() -> None:
    """--all against a provider that is down keeps every failed result, but not every log:
    a result's error carries no stack frames that would hold the log."""
    agents = [make_agent(name, last_n=1) for name in ("a", "b", "c")]
    memory = WatchedStore({agent.name: entries(50) for agent in agents})
    p = GcPorts(
        agents=FakeAgentRepository(*agents),
        memory=memory,
        llm=ScriptedLLM(ApiError("provider down")),
        output=RecordingOutput(),
    )
    sweep = collect_all_garbage(GcOptions(), p)
    gc.collect()
    assert [result.status for result in sweep.agents] == [AgentStatus.FAILED] * 3
    assert len(memory.handed_out) == 3
    assert [ref() for ref in memory.handed_out] == [None, None, None]


def test_a_failed_trim_does_not_claim_to_know_what_the_file_kept() -> None:
    """A failure before the trim keeps every entry read; a failure in the trim itself may
    come after the file changed, so the result leaves ``kept`` unknown, exit 1."""
    before = ports(
        make_agent("a", last_n=1), files={"a": entries(4)}, llm=ScriptedLLM(ApiError("x"))
    )
    failed_analysis = collect_garbage("a", GcOptions(), before)
    assert (failed_analysis.kept, failed_analysis.limit) == (4, 1)
    during = ports(make_agent("a", last_n=1), files={"a": entries(4)})
    store(during).failing_trim.add("a")
    failed_trim = collect_garbage("a", GcOptions(), during)
    assert (failed_trim.status, failed_trim.exit_code) == (AgentStatus.FAILED, 1)
    assert (failed_trim.entries, failed_trim.kept, failed_trim.limit) == (4, None, 1)


def test_empty_analysis_still_trims() -> None:
    """gc-spec §5.3: an empty reply prints an empty analysis and trimming proceeds."""
    p = ports(make_agent("a", last_n=1), files={"a": entries(3)}, llm=ScriptedLLM(""))
    collect_garbage("a", GcOptions(), p)
    assert stdout(p)[2:] == [
        "--- Analysis ---",
        "",
        "Trimmed: 2 entries removed, 1 entries kept.",
    ]


def test_invalid_agent_model_is_an_agent_error_after_the_counts() -> None:
    """The agent's own bad model string fails with exit 1 after Agent:/Entries: (gc-spec §5.2)."""
    p = ports(make_agent("a", model="nonsense"), files={"a": entries(2)})
    result = collect_garbage("a", GcOptions(), p)
    assert (result.status, result.exit_code) == (AgentStatus.FAILED, 1)
    assert stdout(p) == ["Agent: a", "Entries: 2"]
    assert stderr(p) == ['invalid model format "nonsense": expected provider/model-name']


def test_unknown_agent_is_a_config_error() -> None:
    """An agent that does not exist is exit 2 with the repository's message."""
    p = ports()
    result = collect_garbage("ghost", GcOptions(), p)
    assert (result.status, result.exit_code) == (AgentStatus.FAILED, 2)
    assert stderr(p) == ['agent "ghost" not found']


def test_archive_option_reaches_the_store() -> None:
    """--archive hands the removed prefix, pre-header text included, to the archive."""
    p = ports(make_agent("a", last_n=1), files={"a": b"pre\n" + entries(3)})
    collect_garbage("a", GcOptions(archive=True), p)
    assert store(p).archives["a"] == b"pre\n" + entries(2)


def test_events_name_the_agent_the_count_and_the_model() -> None:
    """A frontend learns the entry count before the slow step, and which model it waits for."""
    p = ports(make_agent("a"), files={"a": entries(2)})
    collect_garbage("a", GcOptions(), p)
    assert recorded(p).of_type(MemoryRead) == [MemoryRead("a", 2, len(entries(2)))]
    assert recorded(p).of_type(AnalysisStarted) == [
        AnalysisStarted("a", ModelRef("anthropic", "claude-3"), 2)
    ]


def test_usage_from_the_reply_travels_with_the_analysis() -> None:
    """The provider's token counts reach the analysis event and the result."""
    usage = Usage(input_tokens=120, output_tokens=30)
    p = ports(make_agent("a"), files={"a": entries(2)}, llm=ScriptedLLM(Completion("r", usage)))
    result = collect_garbage("a", GcOptions(), p)
    (ready,) = recorded(p).of_type(AnalysisReady)
    assert ready.analysis.usage == usage
    assert result.analysis is not None
    assert (result.analysis.usage, result.analysis.parts) == (usage, 1)


# --all


def test_all_processes_only_memory_enabled_agents_in_name_order() -> None:
    """--all runs the memory-enabled agents, by name, and returns their results in that order."""
    p = ports(
        make_agent("agent-c", last_n=2),
        make_agent("agent-a", last_n=2),
        make_agent("agent-b", enabled=False),
        files={"agent-a": entries(10), "agent-c": entries(5)},
    )
    sweep = collect_all_garbage(GcOptions(), p)
    separators = [line for line in stdout(p) if line.startswith("===")]
    assert separators == ["=== GC: agent-a ===", "=== GC: agent-c ==="]
    assert [r.agent for r in sweep.agents] == ["agent-a", "agent-c"]
    assert (sweep.failed, sweep.exit_code) == (0, 0)
    assert stderr(p) == []
    assert store(p).files == {"agent-a": entries(2, start=8), "agent-c": entries(2, start=3)}


def test_all_with_no_enabled_agents() -> None:
    """No memory-enabled agent: the spec's one line, and an empty sweep."""
    p = ports(make_agent("x", enabled=False), make_agent("y", enabled=False))
    sweep = collect_all_garbage(GcOptions(), p)
    assert stdout(p) == ["No agents with memory enabled."]
    assert sweep.agents == ()


def test_all_with_no_agents_at_all() -> None:
    """No agents at all reads the same as no memory-enabled agents."""
    p = ports()
    collect_all_garbage(GcOptions(), p)
    assert stdout(p) == ["No agents with memory enabled."]


def test_all_continues_after_a_failure_and_counts_it() -> None:
    """One agent failing is reported by name; the others still run; the summary counts it."""
    p = ports(
        make_agent("a", last_n=1),
        make_agent("b", last_n=1),
        files={"a": entries(3), "b": entries(3)},
    )
    store(p).unreadable.add("a")
    sweep = collect_all_garbage(GcOptions(), p)
    assert (sweep.failed, sweep.exit_code) == (1, 1)
    assert stderr(p) == [
        'Error: gc failed for agent "a": cannot read memory file of a: permission denied',
        "gc completed with errors: 1 of 2 agents failed",
    ]
    assert store(p).files["b"] == entries(1, start=2)


def test_all_counts_every_failure() -> None:
    """Every failing agent is one error line, and the summary counts them all."""
    names = [f"a{i}" for i in range(5)]
    p = ports(
        *(make_agent(n, last_n=1) for n in names),
        files={n: entries(2) for n in names},
        llm=ScriptedLLM(ApiError("down")),
    )
    sweep = collect_all_garbage(GcOptions(), p)
    assert stderr(p)[-1] == "gc completed with errors: 5 of 5 agents failed"
    assert len(stderr(p)) == 6
    assert [r.exit_code for r in sweep.agents] == [3] * 5
    assert sweep.exit_code == 1


def test_all_dry_run_trims_nobody() -> None:
    """--all --dry-run reports on every agent and trims none."""
    p = ports(
        make_agent("a", last_n=1),
        make_agent("b", last_n=1),
        files={"a": entries(3), "b": entries(3)},
    )
    collect_all_garbage(GcOptions(dry_run=True), p)
    assert stdout(p).count("Dry run: no entries trimmed.") == 2
    assert store(p).trims == []


def test_all_applies_the_model_override_to_every_agent() -> None:
    """--all --model analyses every agent with the given model."""
    p = ports(make_agent("a"), make_agent("b"), files={"a": entries(1), "b": entries(1)})
    collect_all_garbage(GcOptions(model_override="ollama/llama3"), p)
    assert [r.model.name for r in llm(p).requests] == ["llama3", "llama3"]


def test_all_skips_agent_files_that_do_not_load_with_a_warning() -> None:
    """A broken agent file is a warning under --all, not a failure, and not in the results."""
    p = ports(
        make_agent("good"), files={"good": entries(1)}, broken={"bad": "cannot parse bad.toml"}
    )
    sweep = collect_all_garbage(GcOptions(), p)
    assert stderr(p) == ['Warning: skipping agent "bad": cannot parse bad.toml']
    assert "=== GC: good ===" in stdout(p)
    assert [r.agent for r in sweep.agents] == ["good"]


# overlapping runs


def test_gc_holds_the_memory_file_for_its_whole_flow() -> None:
    """A real run locks the file before reading it, so a second run reads what it left."""
    p = ports(make_agent("a", last_n=1), files={"a": entries(3)})
    collect_garbage("a", GcOptions(), p)
    assert store(p).locked == ["a"]


def test_a_dry_run_neither_takes_nor_waits_for_the_lock() -> None:
    """--dry-run changes nothing, so it runs beside another gc without waiting."""
    p = ports(make_agent("a", last_n=1), files={"a": entries(3)})
    collect_garbage("a", GcOptions(dry_run=True), p)
    assert store(p).locked == []


def test_waiting_for_another_gc_is_an_event_before_the_read() -> None:
    """A frontend can say it is waiting for another gc, and for whom."""
    p = ports(make_agent("a", last_n=1), files={"a": entries(3)})
    busy = store(p)._locks.setdefault("a", threading.Lock())
    busy.acquire()
    threading.Timer(0.1, busy.release).start()
    collect_garbage("a", GcOptions(), p)
    kinds = [type(e).__name__ for e in recorded(p).events]
    assert kinds.index("WaitingForLock") < kinds.index("MemoryRead")


# interrupted runs


class GatedStore(FakeMemoryStore):
    """A store whose lock on ``busy`` agents is held by another gc until ``gate`` is set,
    and that counts every lock given back (``ended``), however the agent's flow ended."""

    def __init__(self, files: dict[str, bytes], busy: set[str]) -> None:
        super().__init__(files)
        self.busy = busy
        self.gate = threading.Event()
        self.waiting_for_gate = threading.Event()
        self.ended = threading.Semaphore(0)

    @contextmanager
    def lock(self, agent: AgentConfig, *, waiting: Callable[[int | None], None]) -> Iterator[None]:
        try:
            if agent.name in self.busy:
                waiting(4242)
                self.waiting_for_gate.set()
                self.gate.wait(10)
            with super().lock(agent, waiting=waiting):
                yield
        finally:
            self.ended.release()


class CtrlCOutput(RecordingOutput):
    """The coordinating thread's output: Ctrl-C arrives while it reports progress, once
    ``ready`` says the workers are where the test wants them."""

    def __init__(self, ready: Callable[[], bool]) -> None:
        super().__init__()
        self.ready = ready

    def emit(self, event: Event) -> None:
        if isinstance(event, SweepProgress) and self.ready():
            raise KeyboardInterrupt
        super().emit(event)


def test_ctrl_c_after_an_analysis_trims_nothing_and_sends_nothing_more() -> None:
    """Ctrl-C during `--all --jobs`: an agent whose analysis comes back afterwards trims
    nothing, and an agent still waiting for its file afterwards sends no request; every
    file is left exactly as it was (an interrupted run changes no file it has not started
    on)."""
    agents = [make_agent("a", last_n=1), make_agent("b", last_n=1)]
    files = {"a": entries(4), "b": entries(5)}
    memory = GatedStore(files, busy={"b"})
    asked = threading.Event()
    answer = threading.Event()

    def analyse(request: AnalysisRequest) -> str:
        asked.set()
        answer.wait(10)
        return "the analysis"

    llm = ScriptedLLM(script=analyse)
    output = CtrlCOutput(ready=lambda: asked.wait(10) and memory.waiting_for_gate.wait(10))
    p = GcPorts(agents=FakeAgentRepository(*agents), memory=memory, llm=llm, output=output)
    with pytest.raises(KeyboardInterrupt):
        collect_all_garbage(GcOptions(jobs=2), p)
    answer.set()  # a's analysis comes back after the interrupt
    memory.gate.set()  # the other gc lets go of b's file after the interrupt
    assert memory.ended.acquire(timeout=10)
    assert memory.ended.acquire(timeout=10)
    assert [request.content for request in llm.requests] == [files["a"]]
    assert memory.files == files
    assert memory.trims == []


# every fact, exactly


CLAUDE = ModelRef("anthropic", "claude-3")


def _done(
    agent: str, status: AgentStatus, *, entries: int, removed: int = 0, kept: int, limit: int | None
) -> AgentResult:
    """A result as a run that got through its analysis gives it (one request, no error)."""
    return AgentResult(
        agent=agent,
        status=status,
        entries=entries,
        removed=removed,
        kept=kept,
        limit=limit,
        model=CLAUDE,
        analysis=Analysis(text="the analysis"),
        spent=Spent(requests=1),
    )


def test_one_run_emits_exactly_these_facts_in_this_order() -> None:
    """An embedder's frontend sees, for `axe gc a`, exactly: started, read (count and size),
    analysis started (model, count), analysis ready, finished with every fact filled in."""
    p = ports(make_agent("a", last_n=1), files={"a": entries(3)})
    result = collect_garbage("a", GcOptions(), p)
    expected = _done("a", AgentStatus.TRIMMED, entries=3, removed=2, kept=1, limit=1)
    assert result == expected
    assert recorded(p).events == [
        AgentStarted("a", in_sweep=False),
        MemoryRead("a", 3, len(entries(3))),
        AnalysisStarted("a", CLAUDE, 3),
        AnalysisReady("a", Analysis(text="the analysis")),
        AgentFinished(expected),
    ]


@pytest.mark.parametrize(
    ("last_n", "status", "limit"),
    [(0, AgentStatus.NO_TARGET, None), (5, AgentStatus.WITHIN_LIMIT, 5)],
)
def test_an_untrimmed_file_is_reported_with_every_entry_kept(
    last_n: int, status: AgentStatus, limit: int | None
) -> None:
    """No target, or a log within its limit: the result says every entry is kept."""
    p = ports(make_agent("a", last_n=last_n), files={"a": entries(3)})
    assert collect_garbage("a", GcOptions(), p) == _done(
        "a", status, entries=3, removed=0, kept=3, limit=limit
    )


def test_a_sweep_emits_exactly_these_facts_in_this_order() -> None:
    """`--all` (one at a time): the skipped file, the agents it will run, then each agent's
    own facts marked as part of the sweep, then the sweep's outcome; no progress events."""
    p = ports(
        make_agent("a", last_n=1),
        make_agent("b", last_n=5),
        make_agent("c", enabled=False),
        files={"a": entries(3), "b": entries(2)},
        broken={"bad": "cannot parse bad.toml"},
    )
    sweep = collect_all_garbage(GcOptions(), p)
    a = _done("a", AgentStatus.TRIMMED, entries=3, removed=2, kept=1, limit=1)
    b = _done("b", AgentStatus.WITHIN_LIMIT, entries=2, kept=2, limit=5)
    assert sweep.agents == (a, b)
    skipped, *events = recorded(p).events
    assert isinstance(skipped, AgentSkipped)
    assert (skipped.agent, str(skipped.error)) == ("bad", "cannot parse bad.toml")
    assert events == [
        SweepStarted(("a", "b")),
        AgentStarted("a", in_sweep=True),
        MemoryRead("a", 3, len(entries(3))),
        AnalysisStarted("a", CLAUDE, 3),
        AnalysisReady("a", Analysis(text="the analysis")),
        AgentFinished(a),
        AgentStarted("b", in_sweep=True),
        MemoryRead("b", 2, len(entries(2))),
        AnalysisStarted("b", CLAUDE, 2),
        AnalysisReady("b", Analysis(text="the analysis")),
        AgentFinished(b),
        SweepFinished(sweep),
    ]


def test_progress_names_the_agents_under_way() -> None:
    """`--all --jobs 2`: each progress event counts the agents done out of all, and names
    the ones still running; the agents' own facts are those of a run one at a time."""
    p = ports(
        make_agent("a", last_n=1),
        make_agent("b", last_n=1),
        make_agent("c", last_n=1),
        files={name: entries(2) for name in "abc"},
    )
    sweep = collect_all_garbage(GcOptions(jobs=2), p)
    progress = recorded(p).of_type(SweepProgress)
    assert progress[0].done == 0
    assert set(progress[0].running) <= {"a", "b"}
    for event in progress:
        assert event.total == 3
        assert 0 <= event.done < 3
        assert set(event.running) <= {"a", "b", "c"}
    assert [type(e) for e in recorded(p).events if not isinstance(e, SweepProgress)][:2] == [
        SweepStarted,
        AgentStarted,
    ]
    assert recorded(p).of_type(SweepStarted) == [SweepStarted(("a", "b", "c"))]
    assert sweep.agents == tuple(
        _done(name, AgentStatus.TRIMMED, entries=2, removed=1, kept=1, limit=1) for name in "abc"
    )


def test_a_failure_before_the_read_knows_only_the_limit() -> None:
    """A memory file that cannot be read: the result says nothing of entries, model or
    spending, since gc learnt none of them; only the limit the settings give."""
    p = ports(make_agent("a", last_n=1), files={"a": entries(3)})
    store(p).unreadable.add("a")
    result = collect_garbage("a", GcOptions(), p)
    assert result.error is not None
    assert result == AgentResult(agent="a", status=AgentStatus.FAILED, limit=1, error=result.error)
    assert not hasattr(result.error, "origin")


def test_an_unknown_agent_fails_under_its_own_name() -> None:
    """`axe gc ghost`: the failed result and its events carry the name asked for."""
    p = ports()
    result = collect_garbage("ghost", GcOptions(), p)
    assert (result.agent, result.status, result.entries, result.limit) == (
        "ghost",
        AgentStatus.FAILED,
        None,
        None,
    )
    assert recorded(p).events[0] == AgentStarted("ghost", in_sweep=False)


def test_a_model_the_provider_does_not_know_is_traced_to_where_it_was_named() -> None:
    """A 404 for the model: the error says it came from the agent's file, and which file,
    so the user knows what to fix; --model is named as the origin when it was given."""
    agent = attrs.evolve(make_agent("a", last_n=1), source="/home/u/agents/a.toml")
    p = ports(agent, files={"a": entries(3)}, llm=ScriptedLLM(ModelNotFoundError("no model")))
    result = collect_garbage("a", GcOptions(), p)
    assert isinstance(result.error, ModelNotFoundError)
    assert result.error.origin == ModelOrigin(
        "anthropic/claude-3", False, "a", "/home/u/agents/a.toml"
    )
    q = ports(agent, files={"a": entries(3)}, llm=ScriptedLLM(ModelNotFoundError("no model")))
    overridden = collect_garbage("a", GcOptions(model_override="ollama/llama3"), q)
    assert isinstance(overridden.error, ModelNotFoundError)
    assert overridden.error.origin == ModelOrigin(
        "ollama/llama3", True, "a", "/home/u/agents/a.toml"
    )


def test_other_provider_failures_carry_no_model_origin() -> None:
    """Only a model the provider does not know is traced to its origin; a provider that is
    down is not blamed on the model."""
    p = ports(make_agent("a", last_n=1), files={"a": entries(3)}, llm=ScriptedLLM(ApiError("x")))
    result = collect_garbage("a", GcOptions(), p)
    assert result.error is not None
    assert not hasattr(result.error, "origin")
    assert result.spent == Spent(requests=0)


def test_a_log_without_headings_is_analysed_as_zero_entries() -> None:
    """Text with no `## ` line: the analysis is announced for 0 entries, not 1."""
    p = ports(make_agent("a", last_n=1), files={"a": b"just notes\n"})
    collect_garbage("a", GcOptions(), p)
    assert recorded(p).of_type(AnalysisStarted) == [AnalysisStarted("a", CLAUDE, 0)]
    assert recorded(p).of_type(NoEntryHeadings) == [NoEntryHeadings("a", 11)]


def test_a_split_analysis_reports_its_progress_under_the_agents_name() -> None:
    """A log larger than the window: every split, part and merge event names the agent, and
    each request carries the agent's memory settings."""
    agent = make_agent("a", last_n=1)
    llm = ScriptedLLM("report", window=3000)
    p = ports(agent, files={"a": entries(200)}, llm=llm)
    result = collect_garbage("a", GcOptions(), p)
    assert result.analysis is not None
    assert result.analysis.parts > 1
    progress = [
        e for e in recorded(p).events if isinstance(e, AnalysisSplit | PartAnalysed | MergeStarted)
    ]
    assert progress
    assert {e.agent for e in progress} == {"a"}
    assert {request.memory_config for request in llm.requests} == {agent.memory}


def ports_of(log: bytes) -> GcPorts:
    return ports(make_agent("a", last_n=1), files={"a": log}, llm=ScriptedLLM("r", window=30_000))


def test_waiting_for_another_gc_names_the_agent_and_the_holder() -> None:
    """The lock-wait event says which agent waits and which process holds its file."""
    memory = GatedStore({"a": entries(3)}, busy={"a"})
    p = GcPorts(
        agents=FakeAgentRepository(make_agent("a", last_n=1)),
        memory=memory,
        llm=ScriptedLLM("the analysis"),
        output=RecordingOutput(),
    )
    memory.gate.set()
    collect_garbage("a", GcOptions(), p)
    assert recorded(p).of_type(WaitingForLock) == [WaitingForLock("a", 4242)]


def test_ctrl_c_during_a_split_analysis_sends_no_further_part() -> None:
    """Ctrl-C while the first part of a large log is being analysed: no other part is sent
    afterwards, and the file is left as it was."""
    agents = [make_agent("a", last_n=1), make_agent("b", last_n=1)]
    files = {"a": entries(200), "b": entries(3)}
    memory = GatedStore(files, busy=set())
    in_flight = {"a": threading.Event(), "b": threading.Event()}
    answer = threading.Event()

    def analyse(request: AnalysisRequest) -> str:
        in_flight["b" if request.content == files["b"] else "a"].set()
        answer.wait(10)
        return "report"

    llm = ScriptedLLM(script=analyse, window=3000)
    output = CtrlCOutput(ready=lambda: all(event.wait(10) for event in in_flight.values()))
    p = GcPorts(agents=FakeAgentRepository(*agents), memory=memory, llm=llm, output=output)
    with pytest.raises(KeyboardInterrupt):
        collect_all_garbage(GcOptions(jobs=2, part_concurrency=1), p)
    answer.set()
    assert memory.ended.acquire(timeout=10)
    assert memory.ended.acquire(timeout=10)
    assert len([r for r in llm.requests if r.content != files["b"]]) == 1
    assert memory.files == files


def test_a_failed_part_is_named_with_how_many_parts_the_log_has() -> None:
    """A part that fails for another reason than its size is said as "analysis of part 3
    of N failed", N the number of parts the log was split into (never a placeholder)."""
    memory = entries(300)
    sent: list[AnalysisRequest] = []

    def provider(request: AnalysisRequest) -> Completion | ApiError:
        if request.content == memory:
            return PromptTooLargeError("too long", tokens=len(memory), limit=3000, sent=1)
        sent.append(request)
        if len(sent) == 3:
            return ApiError("anthropic API error (HTTP 500): overloaded", sent=1)
        return Completion("report", Usage(100, 5))

    agent, llm = make_agent("a", last_n=2), ScriptedLLM(script=provider)
    result = collect_garbage(
        "a", GcOptions(part_concurrency=1), ports(agent, files={"a": memory}, llm=llm)
    )
    assert isinstance(result.error, ApiError)
    said = re.fullmatch(r"analysis of part 3 of (\d+) failed: (.*)", str(result.error))
    assert said is not None
    assert said[2] == "anthropic API error (HTTP 500): overloaded"
    assert int(said[1]) >= 3
