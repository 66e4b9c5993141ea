"""The token budget, carried by the plan (docs/cost.md): what a plan costs, told before
anything is sent by driving it with assumed answers (a forecast), and the plan that never
sends a request that could take what was spent past the budget.

A request may cost its input, at the bound of the provider's count the planner sizes
requests by (the estimate, brought down by the counts of replies so far), plus the reply it
allows. A batch goes out only if the budget can pay for every request in it and for what is
left of the plan after it; otherwise the plan is narrowed to the newest entries whose
analysis it can pay for. That is decided before the first request and again after each
batch, as only a refusal (or reports longer than assumed) can leave less than foreseen.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from attrs import frozen

from axe.domain.budget import Budget, Estimate
from axe.domain.errors import (
    ApiError,
    BudgetTooSmallError,
    PromptTooLargeError,
    WindowTooSmallError,
)
from axe.domain.parts import LogLayout
from axe.domain.planning import (
    Ask,
    Batch,
    Failed,
    Finished,
    Outcome,
    Plan,
    Sizing,
    Stage,
    narrowed,
    narrowing_points,
)
from axe.domain.prompt import ANALYSIS_MAX_TOKENS
from axe.domain.results import Completion, Usage
from axe.domain.tokens import Classes

# What a byte-pair tokenizer likely counts of each kind of text gc estimates (word starts,
# letters, number starts, digits, spaces, runs of spaces, one-token bytes): a word of n
# letters is about n/4 tokens and a half, a space joins the word after it, punctuation and
# line ends often join up. A little above tests/tokenizer.py's count on every log measured
# (3 to 17 %, docs/cost.md), so an estimate counts no fewer requests than a run makes.
_LIKELY_SHARES = (0.5, 1.0, 0.5, 1.0, 0.0, 0.5, 0.7)
# What a part's report is assumed to hold when merges are foreseen: three short sections,
# about 500 bytes (a model that writes longer reports may need a round of merges more).
_ASSUMED_REPORT = "\n".join(
    f"## {heading}\n"
    + "- Seen in entries 2026-01-01T10:00:00Z to 2026-01-09T10:00:00Z; what it suggests.\n" * 2
    for heading in ("Patterns Found", "Repeated Work", "Recommendations")
)


@frozen
class Forecast:
    """What a plan sends to its end when every request is answered: ``requests``, of which
    ``merges`` merge reports, with ``input_tokens`` in all and the reply each allows."""

    requests: int = 0
    merges: int = 0
    input_tokens: int = 0

    @property
    def output_tokens(self) -> int:
        return self.requests * ANALYSIS_MAX_TOKENS

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens


def likely_tokens(classes: Classes) -> int:
    """About what a provider counts of text estimated at ``classes``."""
    return math.ceil(
        sum(share * tokens for share, tokens in zip(_LIKELY_SHARES, classes, strict=True))
    )


def input_cost(sizing: Sizing, ask: Ask) -> int:
    """The most input tokens ``ask`` may cost by the provider's count, as far as ``sizing``
    knows how it counts: what the budget reserves for it beside its reply."""
    return math.ceil(sizing.calibration.bound(ask.estimate()))


def forecast(
    plan: Plan | Finished | Failed, *, likely: bool = False, above: float = math.inf
) -> Forecast:
    """What ``plan`` sends to its end, every request answered by a report of the assumed
    length: each request's input as the budget counts it, or, ``likely``, as a provider
    likely counts it, which the assumed replies report, so later parts are planned fuller,
    as a real run's are. Stops once the total passes ``above``.

    Raises:
        WindowTooSmallError: the plan comes to a merge that cannot fit the window.
    """
    seen = Forecast()
    while not isinstance(plan, Finished | Failed) and seen.total <= above:
        batch = plan.batch()
        if likely:
            costs = [likely_tokens(ask.estimate()) for ask in batch.asks]
        else:
            costs = [input_cost(plan.sizing, ask) for ask in batch.asks]
        merges = len(costs) if batch.stage is Stage.MERGE else 0
        seen = Forecast(
            seen.requests + len(costs), seen.merges + merges, seen.input_tokens + sum(costs)
        )
        plan = plan.after(
            [Completion(_ASSUMED_REPORT, Usage(cost, 0) if likely else None) for cost in costs]
        )
    return seen


@frozen(repr=False, eq=False)  # working state, used by identity; cheaper to define
class Budgeted:
    """``plan``, whose next batch and what follows it ``budget`` can pay for beside the
    ``used`` tokens already counted; it analyses the log from byte ``start`` on."""

    plan: Plan
    budget: Budget
    used: int = 0

    @property
    def start(self) -> int:
        return self.plan.pieces[0].start

    def batch(self) -> Batch:
        return self.plan.batch()

    def charged(self, outcomes: Sequence[Outcome]) -> int:
        """``used`` with what each request of the batch came to: a reply the tokens it
        reports, or (reporting none) what was reserved for it; a failure that may have been
        billed likewise; a refusal nothing (providers do not bill a prompt they refuse)."""
        asks = self.plan.batch().asks
        return self.used + sum(
            _charge(self.plan.sizing, ask, outcome)
            for ask, outcome in zip(asks, outcomes, strict=True)
        )

    def after(self, outcomes: Sequence[Outcome]) -> Budgeted | Finished | Failed:
        """The plan that follows, kept within what is left of the budget.

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
    elif isinstance(outcome, PromptTooLargeError) or not isinstance(outcome, ApiError):
        return 0  # refused, or never sent
    elif not outcome.sent:
        return 0
    return input_cost(sizing, ask) + ANALYSIS_MAX_TOKENS


def within(plan: Plan | Finished, budget: Budget, used: int = 0) -> Budgeted | Finished:
    """``plan`` as it is if ``budget`` can pay for it beside ``used``, else narrowed to the
    newest entries whose analysis it can pay for (by forecast: the most entries, found by
    doubling from the newest, then halving).

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
    if isinstance(newest, Finished):
        return newest
    return Budgeted(newest, budget, used)


def _affordable(plan: Plan, left: int) -> bool:
    """Whether ``left`` pays for ``plan`` to its end; for a plan that cannot be foreseen
    to its end (a merge of reports of the assumed length would not fit), for its next
    batch, as without a budget the window is found too small only when it is."""
    try:
        return forecast(plan, above=left).total <= left
    except WindowTooSmallError:
        asks = plan.batch().asks
        return sum(input_cost(plan.sizing, ask) + ANALYSIS_MAX_TOKENS for ask in asks) <= left


def _narrowed_within(plan: Plan, at: int, left: int) -> Plan | Finished | None:
    """``plan`` from byte ``at`` on, if ``left`` pays for it to its end; else None."""
    try:
        candidate = narrowed(plan, at)
        return candidate if forecast(candidate, above=left).total <= left else None
    except WindowTooSmallError:
        return None


def estimated(
    plan: Plan | Finished, budget: Budget | None, layout: LogLayout, window: int | None
) -> Estimate:
    """What analysing the log of ``plan`` (``window`` known before sending) would send
    under ``budget``, and how many of its entries it would cover.

    Raises:
        WindowTooSmallError: the window holds no part of the log beside gc's instructions.
    """
    everything = forecast(plan)
    chosen: Plan | Finished = plan
    if budget is not None:
        try:
            kept = within(plan, budget)
        except BudgetTooSmallError as error:
            return Estimate(window=window, all_entries=everything.total, one_entry=error.needed)
        chosen = kept.plan if isinstance(kept, Budgeted) else kept
    sure = forecast(chosen) if chosen is not plan else everything
    likely = forecast(chosen, likely=True)
    start = chosen.start if isinstance(chosen, Finished) else chosen.pieces[0].start
    return Estimate(
        window=window,
        requests=likely.requests,
        merges=likely.merges,
        most_requests=sure.requests,
        input_tokens=sure.input_tokens,
        likely_input_tokens=likely.input_tokens,
        output_tokens=sure.output_tokens,
        analysed=layout.entries_between(start, len(layout.log)),
        all_entries=everything.total,
    )
