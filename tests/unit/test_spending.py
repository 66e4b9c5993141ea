"""The token budget carried by the plan (issue 25), on its own: properties over random logs,
windows, ways of refusing and budgets, the provider a pure function of the request
(``tests/unit/test_planning.py``'s), which counts at most what gc estimates, as the
estimate is built to stay above a provider's count.
"""

from __future__ import annotations

import pytest
from attrs import define, field
from hypothesis import example, given, settings
from hypothesis import strategies as st

from axe.domain.budget import Budget
from axe.domain.errors import (
    AxeError,
    BudgetTooSmallError,
    PromptTooLargeError,
    RefusalMismatchError,
    WindowTooSmallError,
)
from axe.domain.parts import LogLayout
from axe.domain.planning import Ask, Failed, Finished, Outcome, Plan, start
from axe.domain.prompt import ANALYSIS_MAX_TOKENS
from axe.domain.results import Completion, Usage
from axe.domain.spending import Budgeted, estimated, forecast, input_cost, within
from tests.support import entries, entry
from tests.unit.test_planning import _LOGS, _PROVIDERS, Provider, covered, drive

REPLY = 7  # the tokens of every reply, as the provider of tests/unit/test_planning.py counts


def budget_of(tokens: int) -> Budget:
    return Budget(max_tokens=tokens, flag=True)


@define
class Spent:
    """What a budgeted plan sent, as the provider counted it, and how it ended."""

    asks: list[Ask] = field(factory=list)
    billed: int = 0  # input and output of every answered request, by the provider's count
    end: Finished | Failed | AxeError | None = None
    first: int | None = None  # where the analysis began, once planned


def drive_within(log: bytes, provider: Provider, budget: Budget, *, limit: int = 400) -> Spent:
    """The budgeted plan driven to its end against ``provider``, one batch at a time,
    every request of a batch answered (the case that spends most)."""
    spent = Spent()
    cap = provider.window if provider.style == "cap" else None
    layout = LogLayout(log)
    try:
        plan: Budgeted | Finished | Failed = within(start(log, cap, layout), budget, layout)
        while isinstance(plan, Budgeted):
            assert len(spent.asks) < limit, "the plan never ended"
            spent.first = plan.start if spent.first is None else spent.first
            asks = plan.batch().asks
            reserved = sum(input_cost(plan.plan.sizing, ask) + ANALYSIS_MAX_TOKENS for ask in asks)
            assert plan.used + reserved <= budget.max_tokens, "a batch that could cross it"
            outcomes: list[Outcome] = []
            for ask in asks:
                spent.asks.append(ask)
                outcome = provider.answer(ask)
                if isinstance(outcome, Completion):  # reported or not, it was billed
                    spent.billed += provider.count(ask) + REPLY
                outcomes.append(outcome)
            plan = plan.after(outcomes)
        spent.end = plan
    except (WindowTooSmallError, RefusalMismatchError, BudgetTooSmallError) as error:
        spent.end = error
    return spent


_BUDGETS = st.integers(4_200, 60_000)


@settings(max_examples=150)
@given(_LOGS, _PROVIDERS, _BUDGETS)
@example(  # one refusal, then parts: what was planned for one request no longer fits
    b"".join(entry(i, result="the agent reviewed the change " * 4) for i in range(60)),
    Provider(window=1500, style="numbers", shares=(0.6,) * 7, usage=True),
    12_000,
)
def test_no_request_is_sent_that_could_take_the_spending_past_the_budget(
    log: bytes, provider: Provider, tokens: int
) -> None:
    """Whatever the log, the window and the refusals: no batch is planned that could take
    what was counted past the budget (its requests' input at the bound, and their whole
    replies), and what the provider bills (every answered request's input and output, by
    its own count, whether it reports it or not) never exceeds it; the analysis is a report, or exit 4 before anything is sent, or
    a failure that the same log fails with unbudgeted (a window too small)."""
    spent = drive_within(log, provider, budget_of(tokens))
    assert spent.billed <= tokens
    if isinstance(spent.end, BudgetTooSmallError):
        assert spent.end.needed > tokens - spent.end.spent
        assert spent.asks == [] or spent.end.spent > 0
    if isinstance(spent.end, Finished):
        first = spent.first if spent.first is not None else 0
        assert spent.end.text.startswith(f"span {spent.end.start}-{len(log)} ")
        assert spent.end.start >= first
        assert spent.end.start == 0 or log[spent.end.start - 1 : spent.end.start + 3] == b"\n## "


@settings(max_examples=150)
@given(_LOGS, _PROVIDERS)
def test_a_budget_that_covers_everything_changes_nothing(log: bytes, provider: Provider) -> None:
    """A budget larger than anything the log could cost: the same requests, in the same
    order, with the same end as without a budget."""
    unbudgeted = drive(log, provider, started=len(log) + 1)
    budgeted = drive_within(log, provider, budget_of(10**12))
    sent = [covered(ask) for ask, outcome in unbudgeted.sent()]
    assert [covered(ask) for ask in budgeted.asks] == sent
    assert type(budgeted.end) is type(unbudgeted.end)
    if isinstance(unbudgeted.end, Finished):
        assert budgeted.end == unbudgeted.end


def test_the_newest_entries_that_fit_are_analysed_and_no_more() -> None:
    """A log of ten windows, known up front, under a budget of two windows: one run of the
    newest entries is analysed, as many as the budget pays for: one entry more would
    not be affordable by the same forecast."""
    log = entries(1000)
    provider = Provider(window=4000, style="cap", shares=(0.65,) * 7)
    layout = LogLayout(log)
    plan = start(log, 4000, layout)
    assert not isinstance(plan, Finished)
    assert forecast(plan).total > 8000
    spent = drive_within(log, provider, budget_of(8000))
    assert isinstance(spent.end, Finished)
    assert spent.billed <= 8000
    assert spent.end.start > 0
    analysed = layout.entries_between(spent.end.start, len(log))
    assert 0 < analysed < 1000
    one_more = log.rfind(b"\n## ", 0, spent.end.start - 1) + 1
    assert forecast(start_from(log, one_more)).total > 8000


def start_from(log: bytes, at: int) -> Plan:
    from axe.domain.planning import narrowed

    layout = LogLayout(log)
    plan = start(log, 4000, layout)
    assert not isinstance(plan, Finished)
    following = narrowed(plan, at)
    assert not isinstance(following, Finished)
    return following


def test_a_budget_too_small_for_the_newest_entry_is_said_before_anything_is_sent() -> None:
    """Exit 4's facts: the budget, and the smallest budget that analyses the newest entry
    (its request as the budget counts it, and the reply it allows), nothing spent."""
    log = entries(50)
    layout = LogLayout(log)
    newest = entry(49)
    with pytest.raises(BudgetTooSmallError) as raised:
        within(start(log, None, layout), budget_of(4000), layout)
    needed = forecast(start(newest, None, LogLayout(newest))).total
    assert (raised.value.needed, raised.value.spent) == (needed, 0)
    assert needed > 4000
    assert within(start(log, None, layout), budget_of(needed), layout) is not None


def test_text_before_the_first_entry_goes_only_with_every_entry() -> None:
    """The preamble is analysed with the oldest entry when every entry fits, never alone
    and never with a later one."""
    log = b"# notes kept by hand\n" * 40 + entries(30)
    layout = LogLayout(log)
    whole = start(log, None, layout)
    everything = forecast(whole).total
    kept = within(whole, budget_of(everything), layout)
    assert isinstance(kept, Budgeted)
    assert kept.start == 0
    fewer = within(whole, budget_of(everything - 1), layout)
    assert isinstance(fewer, Budgeted)
    assert log[fewer.start : fewer.start + 3] == b"## "
    assert fewer.start > log.index(b"## ")


def test_a_reply_without_usage_counts_what_was_reserved_and_a_refusal_nothing() -> None:
    """What a budget counts: a reply's own usage, input and output; a reply that says
    none, what was reserved for it; a refused prompt, nothing (providers do not bill
    it)."""
    log = entries(10)
    layout = LogLayout(log)
    plan = within(start(log, None, layout), budget_of(50_000), layout)
    assert isinstance(plan, Budgeted)
    assert plan.charged([Completion("r", Usage(700, 120))]) == 820
    reserved = plan.charged([Completion("r")])
    assert reserved == forecast(plan.plan).total
    assert plan.charged([PromptTooLargeError("too long", tokens=9, limit=8)]) == 0


def test_an_estimate_counts_the_requests_a_real_run_makes_or_a_few_more() -> None:
    """--estimate on a log many windows long, known up front: no fewer requests than the
    plan driven against a provider that counts like a tokenizer makes, at most two more;
    input tokens never below what that provider counts."""
    log = entries(3000)
    provider = Provider(window=9000, style="cap", shares=(0.66,) * 7)
    real = drive(log, provider)
    assert isinstance(real.end, Finished)
    layout = LogLayout(log)
    estimate = estimated(start(log, 9000, layout), None, layout, 9000)
    made = len(real.sent())
    assert made <= estimate.requests <= made + 2
    assert estimate.input_tokens >= sum(provider.count(ask) for ask, _ in real.sent())
    assert estimate.analysed == 3000
