"""The token budget (docs/cost.md): a plan's cost, forecast by driving it with assumed
answers, and the plan narrowed to the newest entries the budget can pay for to its end,
decided before the first request and again after each batch."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import attrs
from attrs import frozen

from axe.domain.budget import Budget, Estimate
from axe.domain.errors import (
    ApiError,
    BudgetTooSmallError,
    PromptTooLargeError,
    WindowTooSmallError,
)
from axe.domain.planning import (
    ASSUMED_REPORT,
    Ask,
    Batch,
    Failed,
    Finished,
    Outcome,
    Plan,
    Sizing,
    Stage,
    Whole,
    instructions,
    narrowed,
    narrowing_points,
)
from axe.domain.prompt import ANALYSIS_MAX_TOKENS, PATTERN_DETECTION_PROMPT
from axe.domain.results import Completion, Usage

Count = Callable[[Ask], int | None]  # the provider's count of a request, where it gives one


@frozen
class Forecast:
    """What a plan sends to its end when every request is answered."""

    requests: int = 0
    merges: int = 0
    input_tokens: int = 0

    @property
    def output_tokens(self) -> int:
        return self.requests * ANALYSIS_MAX_TOKENS

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens


def reserved(sizing: Sizing, ask: Ask) -> int:
    """The provider's count where it gave one, else gc's upper estimate, scaled."""
    if ask.counted is not None:
        return ask.counted
    return math.ceil(ask.estimate().most * sizing.ratio)


def forecast(
    plan: Plan | Finished | Failed,
    *,
    likely: bool = False,
    above: float = math.inf,
    count: Count | None = None,
) -> Forecast:
    """Every request answered by :data:`ASSUMED_REPORT`, its input reserved, or ``likely``
    (reported by the replies, as a real run's are), or counted by ``count`` (not merges).

    Raises:
        WindowTooSmallError: the plan comes to a merge that cannot fit the window.
    """
    seen = Forecast()
    while not isinstance(plan, Finished | Failed) and seen.total <= above:
        batch = plan.batch()
        counting = None if batch.stage is Stage.MERGE else count
        costs = [_input(plan.sizing, ask, likely, counting) for ask in batch.asks]
        merges = len(costs) if batch.stage is Stage.MERGE else 0
        seen = Forecast(
            seen.requests + len(costs), seen.merges + merges, seen.input_tokens + sum(costs)
        )
        plan = plan.after(
            [Completion(ASSUMED_REPORT, Usage(cost, 0) if likely else None) for cost in costs]
        )
    return seen


def _input(sizing: Sizing, ask: Ask, likely: bool, count: Count | None) -> int:
    counted = ask.counted if ask.counted is not None or count is None else count(ask)
    if counted is not None:
        return counted
    return ask.estimate().likely if likely else reserved(sizing, ask)


@frozen(eq=False)
class Budgeted:
    """``plan``, which ``budget`` can pay for to its end beside the ``used`` tokens."""

    plan: Plan
    budget: Budget
    used: int = 0

    @property
    def first(self) -> int:
        return self.plan.pieces[0].first

    def batch(self) -> Batch:
        return self.plan.batch()

    def charged(self, outcomes: Sequence[Outcome]) -> int:
        """``used`` with each request of the batch: a reply's usage, else what was reserved;
        a failure that may have been billed likewise; a refusal nothing (it is not billed)."""
        asks = self.plan.batch().asks
        return self.used + sum(
            _charge(self.plan.sizing, ask, outcome)
            for ask, outcome in zip(asks, outcomes, strict=True)
        )

    def after(self, outcomes: Sequence[Outcome]) -> Budgeted | Finished | Failed:
        """The plan that follows, within what is left of the budget.

        Raises:
            BudgetTooSmallError: what is left cannot pay for the newest entry.
            WindowTooSmallError, RefusalMismatchError: as the plan's ``after``.
        """
        used = self.charged(outcomes)
        following = self.plan.after(outcomes)
        if isinstance(following, Finished | Failed):
            return following
        return within(following, self.budget, used)


def _charge(sizing: Sizing, ask: Ask, outcome: Outcome) -> int:
    if isinstance(outcome, Completion):
        usage = outcome.usage
        if usage is not None and usage.input_tokens > 0:
            return usage.input_tokens + usage.output_tokens
    elif not isinstance(outcome, ApiError) or isinstance(outcome, PromptTooLargeError):
        return 0  # never sent, or refused
    elif not outcome.sent:
        return 0
    return reserved(sizing, ask) + ANALYSIS_MAX_TOKENS


def within(
    plan: Plan | Finished, budget: Budget, used: int = 0, count: Count | None = None
) -> Budgeted | Finished:
    """``plan``, narrowed if need be to the earliest narrowing point ``budget`` pays for to
    its end (by forecast); with ``count``, one request is then moved to older entries while
    the provider's count of it stays within the budget.

    Raises:
        BudgetTooSmallError: not even the newest entry's analysis fits what is left.
        WindowTooSmallError: not even the newest entry fits the window.
    """
    if isinstance(plan, Finished):
        return plan
    left = budget.max_tokens - used
    if _affordable(plan, left):
        return Budgeted(plan, budget, used)
    points = narrowing_points(plan)
    newest = narrowed(plan, points[-1])
    needed = forecast(newest).total
    if needed > left:
        raise BudgetTooSmallError(budget, needed=needed, spent=used)
    unaffordable, affordable, step = 0, len(points) - 1, 1
    while affordable - unaffordable > 1:  # doubling from the newest end while affordable,
        # then halving: no plan forecast is much larger than the one chosen
        at = max(affordable - step, unaffordable + 1) if step else (unaffordable + affordable) // 2
        candidate = _narrowed_within(plan, points[at], left)
        if candidate is None:
            unaffordable, step = at, 0
        else:
            affordable, newest, step = at, candidate, step * 2
    if count is not None and isinstance(newest, Whole):
        newest = _counted(plan, points, affordable, budget=budget, used=used, count=count) or newest
    return newest if isinstance(newest, Finished) else Budgeted(newest, budget, used)


def _affordable(plan: Plan, left: int) -> bool:
    """Whether ``left`` pays for ``plan`` to its end; else, if its end cannot be foreseen
    (an assumed merge would not fit), for its next batch: the window is found too small only
    when it is."""
    try:
        return forecast(plan, above=left).total <= left
    except WindowTooSmallError:
        sizing = plan.sizing
        return sum(reserved(sizing, ask) + ANALYSIS_MAX_TOKENS for ask in plan.batch().asks) <= left


def _narrowed_within(plan: Plan, first: int, left: int) -> Plan | Finished | None:
    try:
        candidate = narrowed(plan, first)
        return candidate if forecast(candidate, above=left).total <= left else None
    except WindowTooSmallError:
        return None


def _counted(
    plan: Plan, points: list[int], at: int, *, budget: Budget, used: int, count: Count
) -> Whole | None:
    """One request from the earliest point the provider counts within what is left and the
    window, searched from ``points[at]`` (the estimate's choice): one count shows how far the
    estimate errs on this text. None: the provider does not count.

    Raises:
        BudgetTooSmallError: the provider counts even the newest entry's request above it.
    """
    room = budget.max_tokens - used - ANALYSIS_MAX_TOKENS
    older, newer = 0, len(points) - 1  # the points still in question
    best: Whole | None = None
    ratio, newest_count = 0.0, 0
    for _ in range(6):
        candidate = narrowed(plan, points[at])
        if not isinstance(candidate, Whole):
            older = at + 1  # more than one request: too far back for a count to settle
        else:
            candidate = _with_count(candidate, count)
            counted = candidate.ask.counted
            if counted is None:
                return best
            ratio = max(ratio, counted / max(candidate.ask.estimate().most, 1))
            window = candidate.sizing.window
            if counted <= room and (window is None or counted <= window):
                best, newer = candidate, at - 1
            else:
                older, newest_count = at + 1, counted
        if older > newer:
            break
        at = older + _earliest_expected(plan, points[older : newer + 1], room, ratio)
    if best is None:
        needed = newest_count + ANALYSIS_MAX_TOKENS
        raise BudgetTooSmallError(budget, needed=needed, spent=used)
    return best


def _with_count(plan: Whole, count: Count) -> Whole:
    counted = count(plan.ask)
    if counted is None:
        return plan
    return attrs.evolve(plan, ask=attrs.evolve(plan.ask, counted=counted))


def _earliest_expected(plan: Plan, points: list[int], room: int, ratio: float) -> int:
    """The earliest of ``points`` whose one request is expected within ``room``."""
    index, beside = plan.index, instructions(PATTERN_DETECTION_PROMPT).most
    low, high = 0, len(points) - 1
    while low < high:
        middle = (low + high) // 2
        if (index.cost(points[middle], index.units).most + beside) * ratio <= room:
            high = middle
        else:
            low = middle + 1
    return low


def estimated(
    plan: Plan | Finished, budget: Budget | None, window: int | None, count: Count | None = None
) -> Estimate:
    """What analysing the log of ``plan`` would send under ``budget``, and the entries covered.

    Raises:
        WindowTooSmallError: the window holds no part of the log beside gc's instructions.
    """
    if count is not None and isinstance(plan, Whole):
        plan = _with_count(plan, count)
    everything = forecast(plan, count=count)
    chosen: Plan | Finished = plan
    if budget is not None:
        try:
            kept = within(plan, budget, count=count)
        except BudgetTooSmallError as error:
            return Estimate(window=window, all_entries=everything.total, one_entry=error.needed)
        chosen = kept.plan if isinstance(kept, Budgeted) else kept
    sure = forecast(chosen, count=count) if chosen is not plan else everything
    likely = forecast(chosen, likely=True, count=count)
    first = chosen.first if isinstance(chosen, Finished) else chosen.pieces[0].first
    index = plan.index if not isinstance(plan, Finished) else None
    return Estimate(
        window=window,
        requests=likely.requests,
        merges=likely.merges,
        most_requests=sure.requests,
        input_tokens=sure.input_tokens,
        likely_input_tokens=likely.input_tokens,
        output_tokens=sure.output_tokens,
        analysed=index.entries_in(first, index.units) if index else None,
        all_entries=everything.total,
    )
