"""The token budget carried by the plan, on its own: properties over random logs,
windows, ways of refusing and budgets, the provider a pure function of the request
(``tests/unit/test_planning.py``'s), which counts at most what gc estimates, as the
estimate is built to stay above a provider's count. No figure of the estimate is pinned:
expected values are computed through it and the forecast.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable

import pytest
from attrs import define, field
from hypothesis import example, given, settings
from hypothesis import strategies as st

from axe.application.gc import GcOptions, GcPorts, collect_garbage
from axe.application.ports import AnalysisRequest
from axe.domain.budget import Budget, Estimate
from axe.domain.errors import (
    ApiError,
    AxeError,
    BudgetTooSmallError,
    PromptTooLargeError,
    RefusalMismatchError,
    WindowTooSmallError,
)
from axe.domain.log_index import LogIndex
from axe.domain.planning import (
    Ask,
    Failed,
    Finished,
    Outcome,
    Parts,
    Plan,
    Report,
    Whole,
    narrowed,
    narrowing_points,
    request_tokens,
    start,
)
from axe.domain.prompt import ANALYSIS_MAX_TOKENS, PATTERN_DETECTION_PROMPT
from axe.domain.results import AgentStatus, Completion, Usage
from axe.domain.spending import Budgeted, Count, estimated, forecast, reserved, within
from axe.domain.token_estimate import estimate_tokens
from axe.testing import (
    FakeAgentRepository,
    FakeMemoryStore,
    RecordingOutput,
    ScriptedLLM,
    make_agent,
)
from tests.support import entries, entry
from tests.unit.test_planning import (
    _LOGS,
    _PROVIDERS,
    MISMATCH,
    Provider,
    covered,
    drive,
    merge_floor,
    numbered_log,
    sent_estimate,
)

REPLY = 7  # the tokens of every reply, as the provider of tests/unit/test_planning.py counts


def budget_of(tokens: int) -> Budget:
    return Budget(max_tokens=tokens, flag=True)


def batch_cost(plan: Plan) -> int:
    """What a budget reserves for ``plan``'s next batch: each request's input as counted
    before sending, and the whole reply it allows."""
    return sum(reserved(plan.sizing, ask) + ANALYSIS_MAX_TOKENS for ask in plan.batch().asks)


def indexed(log: bytes, window: int | None) -> Plan:
    """The first plan of ``log`` as the use case makes it under a budget (on its index)."""
    plan = start(log, window, LogIndex(log))
    assert not isinstance(plan, Finished)
    return plan


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
    try:
        plan: Budgeted | Finished | Failed = within(indexed(log, cap), budget)
        while isinstance(plan, Budgeted):
            assert len(spent.asks) < limit, "the plan never ended"
            spent.first = plan.first if spent.first is None else spent.first
            assert plan.used + batch_cost(plan.plan) <= budget.max_tokens, "it could cross"
            outcomes: list[Outcome] = []
            for ask in plan.batch().asks:
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
    Provider(window=1500, style="numbers", shares=(0.6, 0.6), usage=True),
    12_000,
)
@example(  # a window that parts fit but merges of the assumed reports may not
    numbered_log([(0, "w "), (0, "w "), (174, "w ")]),
    Provider(window=600, style="numbers", shares=(1.0, 0.375), report=10),
    4_826,
)
def test_no_request_is_sent_that_could_take_the_spending_past_the_budget(
    log: bytes, provider: Provider, tokens: int
) -> None:
    """Whatever the log, the window and the refusals: no batch is planned that could take
    what was counted past the budget (its requests' input as reserved, and their whole
    replies), and what the provider bills (every answered request's input and output, by
    its own count, whether it reports it or not) never exceeds it; the analysis is a
    report on the newest entries from an entry on, or exit 4 before anything is sent, or
    a failure that the same log fails with unbudgeted (a window too small)."""
    spent = drive_within(log, provider, budget_of(tokens))
    assert spent.billed <= tokens
    if isinstance(spent.end, BudgetTooSmallError):
        assert spent.end.needed > tokens - spent.end.spent
        assert spent.asks == [] or spent.end.spent > 0
    if isinstance(spent.end, Finished):
        first = spent.first if spent.first is not None else 0
        units = LogIndex(log).units
        assert spent.end.text.startswith(f"span {spent.end.first}-{units} ")
        assert spent.end.first >= first


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
    provider = Provider(window=4000, style="cap", shares=(0.65, 0.65))
    plan = indexed(log, 4000)
    assert forecast(plan).total > 8000
    spent = drive_within(log, provider, budget_of(8000))
    assert isinstance(spent.end, Finished)
    assert spent.billed <= 8000
    assert 0 < spent.end.first < 1000
    assert forecast(narrowed(plan, spent.end.first)).total <= 8000
    assert forecast(narrowed(plan, spent.end.first - 1)).total > 8000


def test_a_budget_too_small_for_the_newest_entry_is_said_before_anything_is_sent() -> None:
    """Exit 4's facts: the budget, and the smallest budget that analyses the newest entry
    (its request as the budget counts it, and the reply it allows), nothing spent."""
    log = entries(50)
    newest = entry(49)
    needed = forecast(indexed(newest, None)).total
    assert needed == request_tokens(PATTERN_DETECTION_PROMPT, estimate_tokens(newest)).most + (
        ANALYSIS_MAX_TOKENS
    )
    with pytest.raises(BudgetTooSmallError) as raised:
        within(indexed(log, None), budget_of(needed - 1))
    assert (raised.value.needed, raised.value.spent) == (needed, 0)
    assert raised.value.budget == budget_of(needed - 1)
    kept = within(indexed(log, None), budget_of(needed))
    assert isinstance(kept, Budgeted)
    assert kept.first == 49


def test_text_before_the_first_entry_goes_only_with_every_entry() -> None:
    """The preamble is analysed with the oldest entry when every entry fits, never alone
    and never with a later one."""
    log = b"# notes kept by hand\n" * 40 + entries(30)
    whole = indexed(log, None)
    everything = forecast(whole).total
    kept = within(whole, budget_of(everything))
    assert isinstance(kept, Budgeted)
    assert kept.first == 0
    fewer = within(whole, budget_of(everything - 1))
    assert isinstance(fewer, Budgeted)
    assert fewer.first >= 2  # unit 1 is the oldest entry, which the preamble goes with
    assert log[LogIndex(log).bounds[fewer.first] :].startswith(b"## ")


def test_a_reply_without_usage_counts_what_was_reserved_and_a_refusal_nothing() -> None:
    """What a budget counts: a reply's own usage, input and output; a reply that says
    none, what was reserved for it; a refused prompt, nothing (providers do not bill
    it)."""
    plan = within(indexed(entries(10), None), budget_of(50_000))
    assert isinstance(plan, Budgeted)
    assert plan.charged([Completion("r", Usage(700, 120))]) == 820
    assert plan.charged([Completion("r")]) == forecast(plan.plan).total == batch_cost(plan.plan)
    assert plan.charged([PromptTooLargeError("too long", tokens=9, limit=8)]) == 0


def test_an_estimate_counts_the_requests_a_real_run_makes_or_a_few_more() -> None:
    """--estimate on a log many windows long, known up front: no fewer requests than the
    plan driven against a provider that counts like a tokenizer makes, at most two more;
    input tokens never below what that provider counts."""
    log = entries(3000)
    provider = Provider(window=9000, style="cap", shares=(0.66, 0.66))
    real = drive(log, provider)
    assert isinstance(real.end, Finished)
    estimate = estimated(indexed(log, 9000), None, 9000)
    made = len(real.sent())
    assert estimate.requests is not None
    assert made <= estimate.requests <= made + 2
    assert estimate.input_tokens is not None
    assert estimate.input_tokens >= sum(provider.count(ask) for ask, _ in real.sent())
    assert estimate.analysed == 3000


def test_what_a_budget_counts_of_each_way_a_request_ends() -> None:
    """The budget counts what a provider may bill: a reply's own count when it gives one
    (of even one token), else what was reserved; a failure that went out, what was
    reserved; a refusal, a failure before sending and a request never started, nothing;
    all on top of what was spent before."""
    plan = within(indexed(entries(10), None), budget_of(50_000), used=100)
    assert isinstance(plan, Budgeted)
    cost = batch_cost(plan.plan)
    counted: list[tuple[Outcome, int]] = [
        (Completion("r", Usage(1, 5)), 6),
        (Completion("r", Usage(0, 5)), cost),
        (PromptTooLargeError("too long", tokens=9, limit=8, sent=1), 0),
        (ApiError("down", sent=1), cost),
        (ApiError("down"), 0),
        (None, 0),
    ]
    for outcome, tokens in counted:
        assert plan.charged([outcome]) == 100 + tokens, outcome


def test_what_was_spent_stays_spent_when_the_plan_is_narrowed() -> None:
    """A plan narrowed after tokens were spent keeps counting them: the budget left is the
    budget less what was spent, the narrowed plan carries it on, and exit 4 says it."""
    plan = indexed(entries(50), None)
    everything = forecast(plan).total
    kept = within(plan, budget_of(everything), used=1)
    assert isinstance(kept, Budgeted)
    assert (kept.first > 0, kept.used) == (True, 1)
    assert forecast(kept.plan).total <= everything - 1
    with pytest.raises(BudgetTooSmallError) as raised:
        within(plan, budget_of(everything), used=everything - 10)
    assert (raised.value.spent, raised.value.budget) == (everything - 10, budget_of(everything))


@pytest.mark.parametrize("point", [1, -2], ids=["all but the oldest", "the two newest"])
def test_a_budget_that_exactly_pays_for_the_newest_entries_analyses_them_all(point: int) -> None:
    """A budget of exactly what the newest entries from some entry on cost analyses exactly
    those: not one entry fewer (a forecast equal to the budget is affordable), whether
    that is every entry but the oldest or only the newest two of thirty."""
    plan = indexed(entries(30), None)
    at = narrowing_points(plan)[point]
    kept = within(plan, budget_of(forecast(narrowed(plan, at)).total))
    assert isinstance(kept, Budgeted)
    assert kept.first == at


def test_a_budget_that_pays_only_for_the_first_batch_does_not_start_the_whole_plan() -> None:
    """A budget equal to what the first batch costs, when more batches follow: the whole
    plan is not affordable, so the analysis is narrowed to newest entries it can pay for
    to the end."""
    plan = indexed(entries(1000), 4000)
    first = batch_cost(plan)
    assert forecast(plan).total > first
    kept = within(plan, budget_of(first))
    assert isinstance(kept, Budgeted)
    assert kept.first > 0
    assert forecast(kept.plan).total <= first


def test_an_estimate_states_its_parts_merges_and_totals() -> None:
    """--estimate's figures, as printed: a log of about fifteen windows, known up front:
    the requests and merges it likely takes (a forecast with likely counts), at most the
    requests of the budget's forecast; its input at most what the budget would count,
    likely less but not nothing; every entry needs exactly what the forecast adds up to.
    A log that fits: one request, no merge."""
    plan = indexed(entries(1000), 4000)
    everything, likely = forecast(plan), forecast(plan, likely=True)
    estimate = estimated(plan, None, 4000)
    assert (estimate.window, estimate.requests, estimate.merges) == (
        4000,
        likely.requests,
        likely.merges,
    )
    assert (estimate.most_requests, estimate.analysed) == (everything.requests, 1000)
    assert 1 <= likely.merges < likely.requests <= everything.requests
    assert (estimate.input_tokens, estimate.output_tokens) == (
        everything.input_tokens,
        everything.output_tokens,
    )
    assert estimate.all_entries == everything.total
    assert estimate.likely_input_tokens == likely.input_tokens
    assert 0 < likely.input_tokens < everything.input_tokens
    fits = estimated(indexed(entries(5), 4000), None, 4000)
    assert (fits.requests, fits.merges, fits.most_requests, fits.analysed) == (1, 0, 1, 5)


def test_an_estimate_under_a_budget_too_small_says_what_would_do() -> None:
    """--estimate under a budget too small for the newest entry: the window, what every
    entry needs and what the newest alone needs (exit 4's figure), nothing else."""
    plan = indexed(entries(50), 4000)
    with pytest.raises(BudgetTooSmallError) as raised:
        within(plan, budget_of(100))
    estimate = estimated(plan, budget_of(100), 4000)
    assert estimate == Estimate(
        window=4000, all_entries=forecast(plan).total, one_entry=raised.value.needed
    )


def test_a_plan_whose_merges_cannot_be_foreseen_is_paid_for_a_batch_at_a_time() -> None:
    """A window that holds the smallest merge as a provider likely counts it, but not
    merges of reports of the assumed length by gc's upper estimate: the budget pays for the
    next batch, its requests' input as reserved and their whole replies, or the plan is
    narrowed; a budget one token short of that batch never starts it."""
    plan = indexed(entries(20), merge_floor())
    with pytest.raises(WindowTooSmallError):
        forecast(plan)
    first = batch_cost(plan)
    kept = within(plan, budget_of(first))
    assert isinstance(kept, Budgeted)
    assert kept.first == 0
    narrower = within(plan, budget_of(first - 1))
    assert isinstance(narrower, Budgeted)
    assert narrower.first > 0


def older_refused_newest_answered(
    log: bytes, newest_usage: float
) -> tuple[Budgeted, list[Outcome], Report]:
    """A budgeted plan of ``log`` in two parts (the window known up front), the budget
    exactly what it forecasts; the outcomes of its batch: the older part refused, the
    provider stating a smaller window, the newest answered, reporting ``newest_usage``
    times gc's estimate of it and a whole reply."""
    index = LogIndex(log)
    window = request_tokens(PATTERN_DETECTION_PROMPT, index.cost(0, index.units)).most * 6 // 10
    plan = start(log, window, index)
    assert isinstance(plan, Parts)
    kept = within(plan, budget_of(forecast(plan).total))
    assert isinstance(kept, Budgeted)
    older, newest = kept.batch().asks
    assert older.part is not None
    assert newest.part is not None
    assert newest.part.last == index.units
    stated = max(older.estimate().most * 2 // 3, merge_floor())
    counted = int(newest.estimate().most * newest_usage)
    outcomes: list[Outcome] = [
        PromptTooLargeError("too long", tokens=older.estimate().most, limit=stated),
        Completion("the newest report", Usage(counted, ANALYSIS_MAX_TOKENS)),
    ]
    return kept, outcomes, Report(newest.part.first, newest.part.last, "the newest report")


@pytest.mark.parametrize(
    ("usage", "ends"),
    [(1.0, Budgeted), (2.0, Finished)],
    ids=["some older entries still affordable", "only the newest report affordable"],
)
def test_a_newest_part_answered_beside_a_refused_older_one_is_kept_within_the_budget(
    usage: float, ends: type
) -> None:
    """The provider answers the newest part and refuses the older one
    in the same batch, stating a smaller window, and the budget cannot pay for the older
    part again: the plan that follows still covers the newest part (its report, with any
    older entries the budget still pays for), never an exception."""
    kept, outcomes, report = older_refused_newest_answered(entries(40), usage)
    used = kept.charged(outcomes)
    following = kept.after(outcomes)
    assert isinstance(following, ends)
    if isinstance(following, Finished):
        assert following == Finished(report.body, report.first)
        return
    assert isinstance(following, Budgeted)
    assert 0 < following.first < report.first
    assert report in following.plan.pieces
    assert following.used == used
    assert forecast(following.plan).total <= kept.budget.max_tokens - used


@pytest.mark.parametrize("usage", [1.0, 2.0])
def test_a_budgeted_run_that_loses_its_older_part_still_trims_and_reports_the_newest(
    usage: float,
) -> None:
    """Through the use case: the newest part answered and the older
    refused in the same batch (both under way together) under a budget that cannot pay
    for it again: gc reports the newest entries it analysed and trims (exit 0), never an
    internal error."""
    memory = entries(40)
    kept, outcomes, report = older_refused_newest_answered(memory, usage)
    refusal, answer = outcomes
    older, newest = (ask.content() for ask in kept.batch().asks)
    window = kept.plan.sizing.window
    refused: list[bytes] = []
    newest_arrived = threading.Event()

    def provider(request: AnalysisRequest) -> Completion | ApiError:
        if request.content == older and not refused:  # answered once both are under way
            refused.append(request.content)
            assert newest_arrived.wait(timeout=30), "the newest part was never sent"
            assert isinstance(refusal, ApiError)
            return refusal
        if request.content == newest:
            newest_arrived.set()
            assert isinstance(answer, Completion)
            return answer
        estimate = request_tokens(request.system_prompt, estimate_tokens(request.content))
        return Completion("## Patterns Found\nmerged", Usage(estimate.most, 50))

    store = FakeMemoryStore({"a": memory})
    ports = GcPorts(
        agents=FakeAgentRepository(make_agent("a", last_n=2)),
        memory=store,
        llm=ScriptedLLM(script=provider, window=window),
        output=RecordingOutput(),
    )
    options = GcOptions(max_tokens=kept.budget.max_tokens, part_concurrency=2)
    result = collect_garbage("a", options, ports)
    assert (result.status, result.exit_code, result.error) == (AgentStatus.TRIMMED, 0, None)
    assert result.analysed_entries is not None
    assert result.analysed_entries >= 40 - report.first >= 1
    assert result.analysis is not None
    if usage == 2.0:
        assert result.analysis.text == report.body
    assert store.files["a"] == entries(2, start=38)
    assert refused == [older]
    assert result.budget_used is not None
    assert result.budget_used <= kept.budget.max_tokens


def counting(share: float) -> Callable[[Ask], int]:
    """A provider that counts a request at ``share`` of gc's upper estimate of it."""
    return lambda ask: math.ceil(share * sent_estimate(ask).most)


def check_counted_within(kept: Budgeted | Finished, count: Count, budget: int) -> None:
    """The next batch of ``kept`` is within ``budget`` by what the budget reserves, which
    for a request the provider counted is that count (and within the window)."""
    assert isinstance(kept, Budgeted)
    for ask in kept.batch().asks:
        if ask.counted is not None:
            assert ask.counted == count(ask)
            assert kept.plan.sizing.window is None or ask.counted <= kept.plan.sizing.window
    assert kept.used + batch_cost(kept.plan) <= budget


def earliest_counted(plan: Plan, count: Callable[[Ask], int], left: int) -> int | None:
    """The earliest place the analysis may begin at whose one request the provider
    counts within ``left`` beside its whole reply, and within the window; None: none."""
    for point in narrowing_points(plan):
        candidate = narrowed(plan, point)
        if isinstance(candidate, Whole):
            counted = count(candidate.ask)
            window = candidate.sizing.window
            if counted + ANALYSIS_MAX_TOKENS <= left and (window is None or counted <= window):
                return point
    return None


@settings(max_examples=100)
@given(
    _LOGS,
    st.floats(0.3, 1.0),
    st.sampled_from([None, 2000, 5000]),
    _BUDGETS,
    st.sampled_from([0, 0, 1500]),
)
def test_a_provider_count_only_widens_what_a_budget_pays_for(
    log: bytes, share: float, window: int | None, tokens: int, spent: int
) -> None:
    """With the provider's own count of a request of the log's entries (at most gc's
    upper estimate), a budget pays for at least the newest entries it pays for by the
    estimate, and the request it sends is within the budget by that count, its whole
    reply reserved; exit 4 is said for the same budgets either way. Where the estimate
    settles on one request of the newest entries, the count moves it to the earliest
    entry whose one request the provider counts within what is left and the window."""
    count = counting(share)
    try:
        plan = indexed(log, window)
    except WindowTooSmallError:
        return
    try:
        by_estimate = within(plan, budget_of(tokens), used=spent)
    except BudgetTooSmallError:
        with pytest.raises(BudgetTooSmallError):
            within(plan, budget_of(tokens), used=spent, count=count)
        return
    by_count = within(plan, budget_of(tokens), used=spent, count=count)
    assert isinstance(by_estimate, Budgeted)
    assert isinstance(by_count, Budgeted)
    assert by_count.first <= by_estimate.first
    assert by_count.used == spent
    check_counted_within(by_count, count, tokens)
    if isinstance(by_estimate.plan, Whole) and by_estimate.first > 0:
        assert by_count.first == earliest_counted(plan, count, tokens - spent)


def test_a_provider_counting_below_the_estimate_lets_a_budget_pay_for_older_entries() -> None:
    """A provider whose own count of a request is half gc's upper estimate: a budget that
    pays for the newest half of the log by the estimate pays for older entries too by the
    provider's count (the request carries that count, which is what the budget reserves),
    and never for more than that count allows."""
    plan = indexed(entries(30), None)
    tokens = forecast(narrowed(plan, 15)).total
    count = counting(0.5)
    kept = within(plan, budget_of(tokens), count=count)
    check_counted_within(kept, count, tokens)
    assert isinstance(kept, Budgeted)
    assert kept.first < 15
    (ask,) = kept.batch().asks
    assert ask.counted == count(ask)
    if kept.first > 0:
        older = narrowed(plan, kept.first - 1)
        assert isinstance(older, Whole)
        assert count(older.ask) + ANALYSIS_MAX_TOKENS > tokens


def test_a_provider_counting_above_the_estimate_never_takes_the_budget_past_its_end() -> None:
    """A provider whose own count of a request is above gc's estimate (it happens: the
    planner learns the rate): under a budget that pays for the newest half of the log by
    the estimate, the request gc plans is within the budget by the provider's count, its
    whole reply reserved, or the analysis is narrowed further."""
    plan = indexed(entries(30), None)
    tokens = forecast(narrowed(plan, 15)).total
    count = counting(1.3)
    check_counted_within(within(plan, budget_of(tokens), count=count), count, tokens)


def test_a_plan_that_fits_is_kept_whole_and_the_first_part_is_whole() -> None:
    """A budget that pays for a log that fits one request keeps it as it is: one request
    of the whole log, from the first unit on."""
    plan = indexed(entries(10), None)
    assert isinstance(plan, Whole)
    kept = within(plan, budget_of(forecast(plan).total))
    assert isinstance(kept, Budgeted)
    assert (kept.first, kept.plan) == (0, plan)


def test_the_estimates_the_cost_page_shows_are_what_gc_plans() -> None:
    """docs/cost.md's `--estimate` examples, planned on the log they name
    (``tests/support.entries(3600)``): every figure they print, as the domain makes it.

    tests/unit/test_docs.py holds the page to what the installed axe prints; this holds
    the plan and the budget to those figures without a process, so a change to the
    estimate, the index's running sums, the planner or the budget's search that moves any
    of them is seen by ``make mutate`` too."""
    log = entries(3600)
    capped = estimated(indexed(log, 9000), budget_of(50_000), 9000)
    assert capped == Estimate(
        window=9000,
        requests=5,
        merges=1,
        most_requests=5,
        input_tokens=29_474,
        likely_input_tokens=21_988,
        output_tokens=5 * ANALYSIS_MAX_TOKENS,
        analysed=556,
        all_entries=269_666,
    )
    largest = estimated(indexed(log, 1_000_000), budget_of(3000), 1_000_000)
    assert largest == Estimate(window=1_000_000, all_entries=174_598, one_entry=4443)


def test_an_estimate_counts_a_split_logs_parts_as_the_provider_counts_them() -> None:
    """--estimate with a provider that counts: each part of a split log is the provider's
    count of it, in the figure the budget counts and in the likely one alike (a count is
    what is billed); the merges, whose reports are not written yet, stay gc's estimate;
    the requests are the same. Under a budget that narrows the analysis, the parts chosen
    are counted the same way, and the provider's counts let it cover more entries."""
    plan = indexed(entries(1000), 4000)
    count = counting(0.5)
    asks = plan.batch().asks
    assert len(asks) > 2
    estimate, counted = estimated(plan, None, 4000), estimated(plan, None, 4000, count)
    by_count = sum(map(count, asks))
    reserved_input = sum(reserved(plan.sizing, ask) for ask in asks)
    likely_input = sum(ask.estimate().likely for ask in asks)
    assert (counted.requests, counted.merges) == (estimate.requests, estimate.merges)
    assert counted.input_tokens == estimate.input_tokens - reserved_input + by_count
    assert counted.likely_input_tokens == estimate.likely_input_tokens - likely_input + by_count
    assert counted.all_entries == estimate.all_entries - reserved_input + by_count
    assert counted.analysed == 1000
    budget = budget_of(forecast(plan).total // 3)
    kept = within(plan, budget, count=count)
    assert isinstance(kept, Budgeted)
    assert isinstance(kept.plan, Parts)
    narrowed_by_count = estimated(plan, budget, 4000, count)
    assert narrowed_by_count.input_tokens == forecast(kept.plan, count=count).input_tokens
    assert narrowed_by_count.input_tokens < forecast(kept.plan).input_tokens
    assert narrowed_by_count.analysed == 1000 - kept.first


def test_an_estimate_of_a_log_one_request_carries_is_the_providers_count_of_it() -> None:
    """--estimate of a log that fits one request, with a provider that counts: its input,
    at most and likely, is the provider's count; every entry needs that and the reply.
    Under a budget the estimate pays for only half the log with, the count lets the
    analysis cover older entries, as the run would."""
    plan = indexed(entries(30), None)
    assert isinstance(plan, Whole)
    count = counting(0.5)
    whole = estimated(plan, None, None, count)
    assert (whole.requests, whole.input_tokens, whole.likely_input_tokens) == (
        1,
        count(plan.ask),
        count(plan.ask),
    )
    assert whole.all_entries == count(plan.ask) + ANALYSIS_MAX_TOKENS
    budget = budget_of(forecast(narrowed(plan, 15)).total)
    by_estimate, by_count = estimated(plan, budget, None), estimated(plan, budget, None, count)
    kept = within(plan, budget, count=count)
    assert isinstance(kept, Budgeted)
    assert (by_estimate.analysed, by_count.analysed) == (15, 30 - kept.first)
    assert kept.first < 15


def test_a_provider_counting_even_the_newest_entry_above_the_budget_is_exit_4() -> None:
    """The estimate pays for the newest entry but the provider counts its request higher
    than what is left beside the reply: exit 4 before anything is sent, the smallest
    budget named being the provider's count of that request and its whole reply, on top
    of what was spent."""
    plan = indexed(entries(30), None)
    newest = narrowed(plan, narrowing_points(plan)[-1])
    assert isinstance(newest, Whole)
    count = counting(3.0)
    budget = budget_of(forecast(newest).total + 100)
    with pytest.raises(BudgetTooSmallError) as raised:
        within(plan, budget, used=100, count=count)
    assert (raised.value.budget, raised.value.needed, raised.value.spent) == (
        budget,
        count(newest.ask) + ANALYSIS_MAX_TOKENS,
        100,
    )
    estimate = estimated(plan, budget, None, count)
    assert estimate.one_entry == count(newest.ask) + ANALYSIS_MAX_TOKENS


@pytest.mark.parametrize("spent", [0, 2000])
def test_a_budget_that_exactly_pays_by_the_providers_count_analyses_those_entries(
    spent: int,
) -> None:
    """A budget of exactly what the provider counts for the newest entries from one on,
    their whole reply, and what was spent before: those entries are analysed, not one
    fewer (a count equal to what is left is affordable), and no older one."""
    plan = indexed(entries(30), None)
    count = counting(0.5)
    at = 8
    older = narrowed(plan, at)
    assert isinstance(older, Whole)
    tokens = count(older.ask) + ANALYSIS_MAX_TOKENS + spent
    kept = within(plan, budget_of(tokens), used=spent, count=count)
    check_counted_within(kept, count, tokens)
    assert isinstance(kept, Budgeted)
    assert (kept.first, kept.used) == (at, spent)


def test_a_request_the_provider_counts_at_exactly_the_window_is_sent() -> None:
    """A window known up front that the provider's count of one request of the newest
    entries equals exactly, and a budget of that request and its whole reply: those
    entries are analysed in that request (a count equal to the window fits), not fewer."""
    count = counting(1.0)
    at = 15  # where the log's parts under that window begin their last one
    request = narrowed(indexed(entries(30), None), at)
    assert isinstance(request, Whole)
    window = count(request.ask)
    kept = within(
        indexed(entries(30), window), budget_of(window + ANALYSIS_MAX_TOKENS), count=count
    )
    check_counted_within(kept, count, window + ANALYSIS_MAX_TOKENS)
    assert isinstance(kept, Budgeted)
    assert kept.first == at
    (ask,) = kept.batch().asks
    assert ask.counted == window


def test_a_provider_counting_above_the_estimate_never_gets_a_request_above_the_window() -> None:
    """A window known up front and a provider that counts above gc's estimate: the
    request the budget settles on is within the window by the provider's count too, never
    only by gc's estimate."""
    plan = indexed(entries(30), None)
    window = narrowed(plan, 15)
    assert isinstance(window, Whole)
    capped = indexed(entries(30), window.ask.estimate().most)
    count = counting(1.3)
    tokens = count(window.ask) + ANALYSIS_MAX_TOKENS + 50
    kept = within(capped, budget_of(tokens), count=count)
    check_counted_within(kept, count, tokens)
    assert isinstance(kept, Budgeted)
    assert kept.first > 15


def test_an_analysis_already_finished_is_estimated_at_nothing() -> None:
    """A plan that is already its report (as :func:`start` may return) sends nothing: its
    estimate is no request and no token, with or without a budget."""
    done = Finished("the report")
    assert estimated(done, None, None) == Estimate()
    assert estimated(done, budget_of(5000), 4000) == Estimate(window=4000)


def test_a_budget_refuses_outcomes_that_do_not_match_the_batch() -> None:
    """A frontend charging a batch to the budget gives one outcome per request: too few
    or too many is a ValueError, never a request left uncharged."""
    plan = within(indexed(entries(200), 2000), budget_of(10**9))
    assert isinstance(plan, Budgeted)
    asks = len(plan.batch().asks)
    assert asks > 1
    for outcomes in ([Completion("r")] * (asks - 1), [Completion("r")] * (asks + 1)):
        with pytest.raises(ValueError, match=MISMATCH):
            plan.charged(outcomes)
        with pytest.raises(ValueError, match=MISMATCH):
            plan.after(outcomes)


def test_parts_counted_above_the_estimate_are_foreseen_to_make_smaller_merges() -> None:
    """--estimate with a provider that counts a split log's parts above gc's estimate:
    the likely figures foresee what the run will learn from the parts' replies (their
    counts raise the rate every later request is sized at), so more, smaller merges; the
    figures the budget counts assume replies that report nothing, each request charged
    what was reserved, so the same requests as without a count."""
    plan = indexed(entries(1000), 3000)
    exact, above = (
        estimated(plan, None, 3000, counting(1.0)),
        estimated(plan, None, 3000, counting(1.2)),
    )
    plain = estimated(plan, None, 3000)
    assert (exact.merges, exact.most_requests) == (plain.merges, plain.most_requests)
    assert above.merges > exact.merges
    assert above.requests - above.merges == exact.requests - exact.merges
    assert above.most_requests == exact.most_requests


def test_after_a_reply_counted_above_the_estimate_the_budget_reserves_at_that_rate() -> None:
    """A reply whose count is twice gc's estimate of its request: every later request of
    the run is reserved at twice its estimate, with its whole reply, so the budget stays
    above what the provider will count."""
    plan = within(indexed(entries(200), 2000), budget_of(10**9))
    assert isinstance(plan, Budgeted)
    asks = plan.batch().asks
    most = asks[0].estimate().most
    reply = Completion("r" * 100, Usage(2 * most, 7))
    following = plan.after([reply] + [None] * (len(asks) - 1))
    assert isinstance(following, Budgeted)
    assert following.used == 2 * most + 7
    later = following.batch().asks
    assert len(later) > len(asks) - 1  # planned again, smaller, at that rate
    assert following.charged([Completion("r")] * len(later)) == following.used + sum(
        math.ceil(2 * ask.estimate().most) + ANALYSIS_MAX_TOKENS for ask in later
    )


def test_a_provider_count_never_sends_whole_what_the_window_holds_only_in_parts() -> None:
    """A window known up front, a provider counting half gc's estimate, and a budget that
    pays for the one request of the newest entries the window holds: the count finds
    older entries affordable, but a request gc estimates above the window would be parts
    and merges the budget cannot pay for, so the analysis begins where that one request
    does."""
    plan = indexed(entries(200), 2000)
    assert isinstance(plan, Parts)
    points = narrowing_points(plan)
    holds = next(point for point in points if isinstance(narrowed(plan, point), Whole))
    assert holds > points[0]
    tokens = forecast(narrowed(plan, holds)).total
    count = counting(0.5)
    kept = within(plan, budget_of(tokens), count=count)
    check_counted_within(kept, count, tokens)
    assert isinstance(kept, Budgeted)
    assert isinstance(kept.plan, Whole)
    assert kept.first == holds
