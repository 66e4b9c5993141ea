"""The agent's token budget and ``--estimate`` in the use case, through the
public fakes: where the budget comes from, what it counts, what it lets the analysis cover,
and the estimate that sends nothing.

The provider is ``tests/unit/test_analysis.py``'s window, which counts with the stand-in
tokenizer (``tests/tokenizer.py``) and reports that count in every reply.
"""

from __future__ import annotations

import attrs
import pytest

from axe.application.gc import GcOptions, GcPorts, collect_all_garbage, collect_garbage
from axe.application.ports import AnalysisRequest
from axe.domain.budget import Budget, Estimate
from axe.domain.entries import count_entries
from axe.domain.errors import BudgetTooSmallError, NoTokenCountError, PromptTooLargeError
from axe.domain.events import AnalysisNarrowed, AnalysisReady, CountingUnavailable
from axe.domain.model import AgentConfig, BudgetConfig, ModelRef
from axe.domain.prompt import ANALYSIS_MAX_TOKENS
from axe.domain.results import AgentResult, AgentStatus, Completion
from axe.domain.window import Window as InputWindow
from axe.domain.window import WindowSource
from axe.testing import (
    FakeAgentRepository,
    FakeMemoryStore,
    RecordingOutput,
    ScriptedLLM,
    make_agent,
)
from tests.rendering import rendered
from tests.support import entries
from tests.unit.test_analysis import Window


def agent(name: str = "a", *, budget: int = 0, **settings: object) -> AgentConfig:
    """An agent keeping its newest two entries, with ``[budget] max_tokens = budget``."""
    made = make_agent(name, last_n=2, **settings)  # type: ignore[arg-type]
    return attrs.evolve(made, budget=BudgetConfig(budget), source=f"/agents/{name}.toml")


def gc(
    memory: bytes, llm: ScriptedLLM, *, budget: int = 0, **options: object
) -> tuple[AgentResult, RecordingOutput, FakeMemoryStore]:
    output, store = RecordingOutput(), FakeMemoryStore({"a": memory})
    ports = GcPorts(
        agents=FakeAgentRepository(agent(budget=budget)), memory=store, llm=llm, output=output
    )
    return collect_garbage("a", GcOptions(**options), ports), output, store  # type: ignore[arg-type]


def billed(llm: ScriptedLLM, window: int) -> int:
    """What the provider counted for every request it answered: input and output."""
    reply = Window(window)
    total = 0
    for request in llm.requests:
        answer = reply(request)
        if isinstance(answer, Completion) and answer.usage is not None:
            total += answer.usage.input_tokens + answer.usage.output_tokens
    return total


@pytest.mark.parametrize(
    ("flag", "in_file", "expected"),
    [
        (5_000_000, 9_000_000, Budget(5_000_000, flag=True)),
        (0, 9_000_000, Budget(9_000_000, flag=False, source="/agents/a.toml")),
        (0, 0, None),
        (1, 9_000_000, Budget(1, flag=True)),
        (1, 0, Budget(1, flag=True)),
        (0, 1, Budget(1, flag=False, source="/agents/a.toml")),
    ],
    ids=[
        "the flag wins",
        "else the agent file",
        "else unlimited",
        "a flag of 1 wins",
        "a flag of 1 alone",
        "a file's 1",
    ],
)
def test_the_budget_comes_from_the_flag_else_the_agent_file_else_none(
    flag: int, in_file: int, expected: Budget | None
) -> None:
    """--max-tokens N (N > 0) wins over [budget] max_tokens (> 0); 0 in either means not
    given; with neither the analysis is unlimited, its budget fields null."""
    llm = ScriptedLLM(script=Window(100_000))
    result, _, _ = gc(entries(5), llm, budget=in_file, max_tokens=flag)
    assert result.budget == expected
    if expected is not None and expected.max_tokens == 1:  # exit 4, nothing sent
        assert (result.exit_code, llm.requests) == (4, [])
        return
    assert result.budget_used == (None if expected is None else billed(llm, 100_000))
    assert result.analysed_entries == 5


def test_a_negative_max_tokens_is_refused_by_the_options() -> None:
    """An embedder's GcOptions refuses a negative budget, as the command line does."""
    with pytest.raises(ValueError, match="max_tokens"):
        GcOptions(max_tokens=-1)


def test_a_budget_that_covers_everything_changes_nothing() -> None:
    """The same requests, the same events and the same stdout as without a budget, only
    the result's budget fields filled in (and no retry of an attempt that went out
    unanswered, which a budget cannot pay twice for)."""
    memory = entries(400)
    plain_llm, budgeted_llm = ScriptedLLM(script=Window(3000)), ScriptedLLM(script=Window(3000))
    plain, plain_output, _ = gc(memory, plain_llm)
    budgeted, output, store = gc(memory, budgeted_llm, max_tokens=10**9)
    assert [request.retry_unanswered for request in budgeted_llm.requests] == [False] * len(
        plain_llm.requests
    )
    unbudgeted = [attrs.evolve(r, retry_unanswered=True) for r in budgeted_llm.requests]
    assert unbudgeted == plain_llm.requests
    assert output.events[:-1] == plain_output.events[:-1]
    assert rendered(output.events) == rendered(plain_output.events)
    assert attrs.evolve(budgeted, budget=None, budget_used=None) == plain
    assert budgeted.budget_used == billed(budgeted_llm, 3000)
    assert store.files["a"] == entries(2, start=398)


def test_a_log_of_ten_windows_under_two_spends_at_most_the_budget_on_the_newest_entries() -> None:
    """A log about ten windows long, a budget of two: what the provider counts never
    exceeds it, the report covers one run of the newest entries, one stderr line says how
    many, and the trim goes on as configured."""
    memory = entries(3000)  # about 100,000 tokens by the stand-in tokenizer
    llm = ScriptedLLM(script=Window(10_000), window=10_000)
    result, output, store = gc(memory, llm, max_tokens=20_000)
    assert result.status is AgentStatus.TRIMMED
    assert billed(llm, 10_000) <= result.budget_used <= 20_000  # type: ignore[operator]
    (narrowed,) = output.of_type(AnalysisNarrowed)
    analysed = narrowed.analysed
    assert (narrowed.entries, result.analysed_entries) == (3000, analysed)
    assert 0 < analysed < 3000
    sent = b"".join(request.content for request in llm.requests if request.content[:3] == b"## ")
    assert memory.endswith(sent)
    assert count_entries(sent) == analysed
    assert store.files["a"] == entries(2, start=2998)
    assert rendered(output.events)[1] == [
        "Budget of 20,000 tokens (from --max-tokens): analysing the newest "
        f'{analysed:,} of 3,000 entries of agent "a"'
    ]


def test_a_refusal_mid_run_never_takes_the_spending_past_the_budget() -> None:
    """The window is learnt only from a refusal, after the plan was made for one request:
    what is left of the plan is narrowed again to what the budget pays for, and the
    provider's count still stays within it."""
    memory = entries(3000)
    llm = ScriptedLLM(script=Window(8_000))  # no window known up front
    result, output, _ = gc(memory, llm, max_tokens=24_000)
    assert result.status is AgentStatus.TRIMMED
    assert isinstance(llm.requests[0], AnalysisRequest)
    assert isinstance(Window(8_000)(llm.requests[0]), PromptTooLargeError)
    assert billed(llm, 8_000) <= 24_000
    told = [event.analysed for event in output.of_type(AnalysisNarrowed)]
    assert len(told) >= 1
    assert told == sorted(told, reverse=True)
    assert result.analysed_entries == told[-1]


def test_a_budget_too_small_for_the_newest_entry_is_exit_4_with_no_request() -> None:
    """Not even the instructions, the newest entry and a reply fit: exit 4, one line that
    names the budget, where it was set and the smallest that would do; no request, no trim."""
    memory = entries(50)
    llm = ScriptedLLM(script=Window(100_000))
    result, output, store = gc(memory, llm, budget=4_000)
    assert (result.status, result.exit_code) == (AgentStatus.FAILED, 4)
    assert isinstance(result.error, BudgetTooSmallError)
    needed = result.error.needed
    assert 4_000 < needed <= 4_000 + ANALYSIS_MAX_TOKENS
    assert llm.requests == []
    assert store.files["a"] == memory
    assert (result.budget_used, result.analysed_entries) == (0, None)
    assert rendered(output.events)[1] == [
        "budget of 4,000 tokens (from [budget] max_tokens in /agents/a.toml) is too small: "
        f"analysing even the newest entry needs a budget of {needed:,} tokens; nothing was "
        "sent or trimmed"
    ]


def test_under_all_an_agent_the_budget_is_too_small_for_fails_like_any_other() -> None:
    """--all: the budget applies to each agent on its own; one too small fails with its
    error line (exit 4 in its result) and the sweep exits 1; the other is analysed."""
    small, roomy = agent("small", budget=3_000), agent("roomy", budget=50_000)
    store = FakeMemoryStore({"small": entries(9), "roomy": entries(9)})
    output, llm = RecordingOutput(), ScriptedLLM(script=Window(100_000))
    ports = GcPorts(agents=FakeAgentRepository(small, roomy), memory=store, llm=llm, output=output)
    sweep = collect_all_garbage(GcOptions(), ports)
    assert [(r.agent, r.exit_code) for r in sweep.agents] == [("roomy", 0), ("small", 4)]
    assert sweep.exit_code == 1
    (failure, summary) = rendered(output.events)[1]
    assert failure.startswith(
        'Error: gc failed for agent "small": budget of 3,000 tokens (from [budget] max_tokens '
        "in /agents/small.toml) is too small"
    )
    assert summary == "gc completed with errors: 1 of 2 agents failed"
    assert store.files["small"] == entries(9)


def test_the_offline_analyst_spends_nothing_so_it_reads_every_entry() -> None:
    """builtin/heuristic under a budget far below the log: every entry analysed, 0 used."""
    llm = ScriptedLLM("## Patterns Found\nnone", free=True)
    result, output, _ = gc(entries(500), llm, max_tokens=5_000)
    assert (result.status, result.budget_used, result.analysed_entries) == (
        AgentStatus.TRIMMED,
        0,
        500,
    )
    assert [request.content for request in llm.requests] == [entries(500)]
    assert not output.of_type(AnalysisNarrowed)


def test_an_estimate_sends_nothing_takes_no_lock_and_trims_nothing() -> None:
    """--estimate: no request, no lock, the file as it was, exit 0, status estimated;
    the spec's Agent and Entries lines first."""
    memory = entries(300)
    llm = ScriptedLLM(script=Window(100_000), window=100_000)
    result, output, store = gc(memory, llm, estimate=True)
    assert (result.status, result.exit_code, result.kept) == (AgentStatus.ESTIMATED, 0, 300)
    assert llm.requests == []
    assert (store.locked, store.files["a"]) == ([], memory)
    assert not output.of_type(AnalysisReady)
    assert result.estimate is not None
    assert (result.estimate.requests, result.estimate.analysed) == (1, 300)
    assert rendered(output.events)[0] == [
        "Agent: a",
        "Entries: 300",
        "Model: anthropic/claude-3, input window 100,000 tokens",
        "Requests: 1",
        f"Input tokens: {result.estimate.input_tokens:,} at most, likely about "
        f"{result.estimate.likely_input_tokens:,}",
        f"Output tokens: {ANALYSIS_MAX_TOKENS:,} at most",
        f"Budget: unlimited (every entry needs {result.estimate.all_entries:,} at most)",
    ]


def test_an_estimate_under_a_budget_too_small_is_reported_not_failed() -> None:
    """--estimate with a budget too small for one entry: exit 0, the smallest budget that
    would do, the same figure a real run would refuse with."""
    llm = ScriptedLLM(script=Window(100_000))
    estimate, _, _ = gc(entries(50), llm, budget=4_000, estimate=True)
    real, _, _ = gc(entries(50), llm, budget=4_000)
    assert (estimate.status, estimate.exit_code, estimate.analysed_entries) == (
        AgentStatus.ESTIMATED,
        0,
        None,
    )
    assert isinstance(real.error, BudgetTooSmallError)
    assert estimate.estimate is not None
    assert estimate.estimate.one_entry == real.error.needed


def test_an_estimate_says_what_the_budget_would_let_the_analysis_cover() -> None:
    """--estimate under a budget that covers part of the log: the same newest entries a
    real run analyses."""
    memory = entries(3000)
    window = 10_000
    estimate, _, _ = gc(memory, ScriptedLLM(window=window), max_tokens=20_000, estimate=True)
    real, _, _ = gc(memory, ScriptedLLM(script=Window(window), window=window), max_tokens=20_000)
    assert estimate.analysed_entries == real.analysed_entries
    assert estimate.estimate is not None
    assert estimate.estimate.input_tokens + estimate.estimate.output_tokens <= 20_000


def test_an_estimate_for_the_offline_analyst_covers_every_entry_for_nothing() -> None:
    """--estimate with builtin/heuristic: no token, every entry the log holds analysed."""
    result, _, _ = gc(entries(40), ScriptedLLM(free=True), max_tokens=5_000, estimate=True)
    assert (result.status, result.estimate) == (
        AgentStatus.ESTIMATED,
        Estimate(offline=True, analysed=40),
    )


class _WindowsByModel(ScriptedLLM):
    """A provider whose models have windows of their own; only claude-3's is known."""

    def input_limit(self, request: AnalysisRequest) -> InputWindow | None:
        claude = request.model == ModelRef("anthropic", "claude-3")
        return InputWindow(100_000, WindowSource.MODEL) if claude else None

    def charges_tokens(self, model: ModelRef) -> bool:
        return model.provider == "anthropic"


def test_an_estimate_asks_for_the_window_of_the_model_the_run_uses() -> None:
    """--estimate looks up the window of the agent's model, or of --model's."""
    own, _, _ = gc(entries(40), _WindowsByModel(), estimate=True)
    other, _, _ = gc(entries(40), _WindowsByModel(), estimate=True, model_override="anthropic/x")
    assert own.estimate is not None
    assert other.estimate is not None
    assert (own.estimate.window, other.estimate.window) == (100_000, None)


def test_a_provider_that_counts_for_others_but_not_this_run_is_said_once() -> None:
    """A count endpoint that failed (or no key to ask with) is said once per run, and the
    budget rests on gc's estimate; a provider that never counts is no news and says nothing."""

    def failing(request: AnalysisRequest) -> int:
        raise NoTokenCountError("its count endpoint answered HTTP 500")

    failed = ScriptedLLM(script=Window(100_000), window=100_000, counts=failing)
    _, output, _ = gc(entries(3000), failed, budget=20_000)
    assert [e for e in output.events if isinstance(e, CountingUnavailable)] == [
        CountingUnavailable("a", "anthropic", "its count endpoint answered HTTP 500")
    ]
    never = ScriptedLLM(script=Window(100_000), window=100_000)
    result, output, _ = gc(entries(3000), never, budget=20_000)
    assert result.status is AgentStatus.TRIMMED
    assert [e for e in output.events if isinstance(e, CountingUnavailable)] == []
