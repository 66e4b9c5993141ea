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

from axe.domain.budget import Budget, Estimate
from axe.domain.errors import (
    ApiError,
    AxeError,
    BudgetTooSmallError,
    PromptTooLargeError,
    RefusalMismatchError,
    WindowTooSmallError,
)
from axe.domain.parts import LogLayout
from axe.domain.planning import (
    Ask,
    Failed,
    Finished,
    Outcome,
    Plan,
    narrowed,
    narrowing_points,
    start,
)
from axe.domain.prompt import ANALYSIS_MAX_TOKENS
from axe.domain.results import Completion, Usage
from axe.domain.spending import Budgeted, estimated, forecast, input_cost, within
from tests.support import entries, entry
from tests.unit.test_planning import _LOGS, _PROVIDERS, Provider, covered, drive, numbered_log

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
        plan: Budgeted | Finished | Failed = within(start(log, cap, layout), budget)
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
@example(  # merges that cannot be foreseen (a 300-token window): a batch paid with its replies
    numbered_log([(0, "w "), (0, "w "), (174, "w ")]),
    Provider(
        window=300, style="numbers", shares=(0.375, 0.375, 1.0, 1.0, 0.5, 1.0, 0.5), report=10
    ),
    4_826,
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
        within(start(log, None, layout), budget_of(4000))
    needed = forecast(start(newest, None, LogLayout(newest))).total
    assert (raised.value.needed, raised.value.spent) == (needed, 0)
    assert needed > 4000
    assert within(start(log, None, layout), budget_of(needed)) is not None


def test_text_before_the_first_entry_goes_only_with_every_entry() -> None:
    """The preamble is analysed with the oldest entry when every entry fits, never alone
    and never with a later one."""
    log = b"# notes kept by hand\n" * 40 + entries(30)
    layout = LogLayout(log)
    whole = start(log, None, layout)
    everything = forecast(whole).total
    kept = within(whole, budget_of(everything))
    assert isinstance(kept, Budgeted)
    assert kept.start == 0
    fewer = within(whole, budget_of(everything - 1))
    assert isinstance(fewer, Budgeted)
    assert log[fewer.start : fewer.start + 3] == b"## "
    assert fewer.start > log.index(b"## ")


def test_a_reply_without_usage_counts_what_was_reserved_and_a_refusal_nothing() -> None:
    """What a budget counts: a reply's own usage, input and output; a reply that says
    none, what was reserved for it; a refused prompt, nothing (providers do not bill
    it)."""
    log = entries(10)
    layout = LogLayout(log)
    plan = within(start(log, None, layout), budget_of(50_000))
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


def test_what_a_budget_counts_of_each_way_a_request_ends() -> None:
    """The budget counts what a provider may bill: a reply's own count when it gives one
    (of even one token), else what was reserved; a failure that went out, what was
    reserved; a refusal, a failure before sending and a request never started, nothing;
    all on top of what was spent before."""
    log = entries(10)
    layout = LogLayout(log)
    plan = within(start(log, None, layout), budget_of(50_000), used=100)
    assert isinstance(plan, Budgeted)
    reserved = forecast(plan.plan).total
    counted: list[tuple[Outcome, int]] = [
        (Completion("r", Usage(1, 5)), 6),
        (Completion("r", Usage(0, 5)), reserved),
        (PromptTooLargeError("too long", tokens=9, limit=8, sent=1), 0),
        (ApiError("down", sent=1), reserved),
        (ApiError("down"), 0),
        (None, 0),
    ]
    for outcome, tokens in counted:
        assert plan.charged([outcome]) == 100 + tokens, outcome


def test_what_was_spent_stays_spent_when_the_plan_is_narrowed() -> None:
    """A plan narrowed after tokens were spent keeps counting them: the budget left is the
    budget less what was spent, the narrowed plan carries it on, and exit 4 says it."""
    log = entries(50)
    layout = LogLayout(log)
    plan = start(log, None, layout)
    everything = forecast(plan).total
    kept = within(plan, budget_of(everything), used=1)
    assert isinstance(kept, Budgeted)
    assert (kept.start > 0, kept.used) == (True, 1)
    assert forecast(kept.plan).total <= everything - 1
    with pytest.raises(BudgetTooSmallError) as raised:
        within(plan, budget_of(everything), used=everything - 10)
    assert (raised.value.spent, raised.value.budget) == (everything - 10, budget_of(everything))


@pytest.mark.parametrize("point", [1, -2], ids=["all but the oldest", "the two newest"])
def test_a_budget_that_exactly_pays_for_the_newest_entries_analyses_them_all(point: int) -> None:
    """A budget of exactly what the newest entries from some entry on cost analyses exactly
    those: not one entry fewer (a forecast equal to the budget is affordable), whether
    that is every entry but the oldest or only the newest two of thirty."""
    log = entries(30)
    layout = LogLayout(log)
    plan = start(log, None, layout)
    assert not isinstance(plan, Finished)
    at = narrowing_points(plan)[point]
    kept = within(plan, budget_of(forecast(narrowed(plan, at)).total))
    assert isinstance(kept, Budgeted)
    assert kept.start == at


def test_a_budget_that_pays_only_for_the_first_batch_does_not_start_the_whole_plan() -> None:
    """A budget equal to what the first batch costs, when more batches follow: the whole
    plan is not affordable, so the analysis is narrowed to newest entries it can pay for
    to the end."""
    log = entries(1000)
    layout = LogLayout(log)
    plan = start(log, 4000, layout)
    assert not isinstance(plan, Finished)
    first = sum(input_cost(plan.sizing, ask) + ANALYSIS_MAX_TOKENS for ask in plan.batch().asks)
    assert forecast(plan).total > first
    kept = within(plan, budget_of(first))
    assert isinstance(kept, Budgeted)
    assert kept.start > 0
    assert forecast(kept.plan).total <= first


def test_an_estimate_states_its_parts_merges_and_totals() -> None:
    """--estimate's figures, as printed: a log of about fifteen windows, known up front,
    likely takes 12 parts and 3 merges, at most 18 requests; its input at most what the
    budget would count, likely less but not nothing; every entry needs exactly what the
    estimate adds up to. A log that fits: one request, no merge."""
    log = entries(1000)
    layout = LogLayout(log)
    plan = start(log, 4000, layout)
    everything = forecast(plan)
    estimate = estimated(plan, None, layout, 4000)
    assert (estimate.window, estimate.requests, estimate.merges) == (4000, 15, 3)
    assert (estimate.most_requests, estimate.analysed) == (everything.requests, 1000)
    assert everything.requests == 18
    assert (estimate.input_tokens, estimate.output_tokens) == (
        everything.input_tokens,
        everything.output_tokens,
    )
    assert estimate.all_entries == everything.total
    assert 0 < estimate.likely_input_tokens < estimate.input_tokens
    small = entries(5)
    fits = estimated(start(small, 4000, LogLayout(small)), None, LogLayout(small), 4000)
    assert (fits.requests, fits.merges, fits.most_requests, fits.analysed) == (1, 0, 1, 5)


def test_an_estimate_under_a_budget_too_small_says_what_would_do() -> None:
    """--estimate under a budget too small for the newest entry: the window, what every
    entry needs and what the newest alone needs (exit 4's figure), nothing else."""
    log = entries(50)
    layout = LogLayout(log)
    plan = start(log, 4000, layout)
    with pytest.raises(BudgetTooSmallError) as raised:
        within(plan, budget_of(100))
    estimate = estimated(plan, budget_of(100), layout, 4000)
    assert estimate == Estimate(
        window=4000, all_entries=forecast(plan).total, one_entry=raised.value.needed
    )


def test_a_plan_whose_merges_cannot_be_foreseen_is_paid_for_a_batch_at_a_time() -> None:
    """A window too small for merges of reports of the assumed length (a server that
    reports a context of 800 tokens): the budget pays for the next batch, its requests'
    input at the bound and their whole replies, or the plan is narrowed; a budget one
    token short of that batch never starts it."""
    log = entries(20)
    layout = LogLayout(log)
    plan = start(log, 800, layout)
    assert not isinstance(plan, Finished)
    with pytest.raises(WindowTooSmallError):
        forecast(plan)
    first = sum(input_cost(plan.sizing, ask) + ANALYSIS_MAX_TOKENS for ask in plan.batch().asks)
    kept = within(plan, budget_of(first))
    assert isinstance(kept, Budgeted)
    assert kept.start == 0
    narrower = within(plan, budget_of(first - 1))
    assert isinstance(narrower, Budgeted)
    assert narrower.start > 0
