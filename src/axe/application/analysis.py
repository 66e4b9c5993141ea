"""Analysing one agent's memory log: the short loop that sends what the planner
(:mod:`axe.domain.planning`) asks for, within the agent's budget
(:mod:`axe.domain.spending`), tells the frontend how far it got, and counts what every
request spent (architecture.md, "Big logs"); and the estimate of all that, sending nothing.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

from attrs import Factory, define, field

from axe.application.ports import AnalysisRequest, LLMClient, Output
from axe.application.workers import StopSignal, ordered_map
from axe.domain.entries import EntryCounts
from axe.domain.errors import AxeError
from axe.domain.events import AnalysisNarrowed, AnalysisSplit, MergeStarted, PartAnalysed
from axe.domain.model import MemoryConfig, ModelRef
from axe.domain.parts import LogLayout
from axe.domain.planning import Ask, Batch, Failed, Finished, Outcome, Plan, Stage, start
from axe.domain.prompt import ANALYSIS_MAX_TOKENS, ANALYSIS_TEMPERATURE, PATTERN_DETECTION_PROMPT
from axe.domain.results import Analysis, Completion, Spent

if TYPE_CHECKING:  # loaded with a budget or --estimate only: start-up
    from axe.domain.budget import Budget, Estimate
    from axe.domain.spending import Budgeted


@define(kw_only=True, repr=False, eq=False)  # one agent's working state, used by identity
class LogAnalysis:
    """The analysis of one agent's log with one model, within its ``budget`` (None:
    unlimited); emits progress for that agent.

    ``spent`` says what was sent so far, also after :meth:`run` failed; with a budget,
    ``budget_used`` what was counted against it, and ``analysed`` the entries the report
    covers, once it is in, if the budget left the oldest out.
    """

    llm: LLMClient
    output: Output
    agent: str
    model: ModelRef
    memory_config: MemoryConfig
    concurrency: int
    stop: StopSignal = Factory(StopSignal)
    budget: Budget | None = None
    spent: Spent = field(factory=Spent, init=False)
    budget_used: int | None = field(
        default=Factory(lambda self: None if self.budget is None else 0, takes_self=True),
        init=False,
    )
    analysed: int | None = field(default=None, init=False)
    _layout: LogLayout | None = field(default=None, init=False)

    def run(self, memory: bytes, entries: EntryCounts | None = None) -> Analysis:
        """The report on ``memory``; ``entries``, its entries as counted already (for the
        ``Entries:`` line), which planning then does not count again.

        Raises:
            ApiError: a request failed for another reason than its size (the message says
                which part or merge, when the log was split), the window is too small, or
                the provider's refusals cannot be true of what was sent.
            AgentError: the provider is unknown.
            BudgetTooSmallError: the budget cannot pay for analysing the newest entry.
        """
        plan: Plan | Budgeted | Finished | Failed = self._first_plan(memory, entries)
        announced = begins = 0  # the part count and the start the frontend was last told
        while not isinstance(plan, Finished | Failed):
            begins = self._tell_narrowing(plan, begins)
            batch = plan.batch()
            if batch.stage is Stage.MERGE:
                self.output.emit(MergeStarted(self.agent, batch.total))
            elif batch.stage is Stage.PARTS and batch.total != announced:
                announced = batch.total
                self.output.emit(AnalysisSplit(self.agent, announced))
            outcomes = self._send(batch)
            if not isinstance(plan, Plan):  # within a budget
                self.budget_used = plan.charged(outcomes)
            plan = plan.after(outcomes)
        if isinstance(plan, Failed):
            raise _in_context(plan)
        self._tell_narrowing(plan, begins)
        self.analysed = self._entries_from(plan.start) if plan.start else None
        return Analysis(text=plan.text, spent=self.spent)

    def estimate(self, memory: bytes, entries: EntryCounts) -> Estimate:
        """What :meth:`run` would send, sending no analysis (a window lookup at most), and
        how many of the log's ``entries`` (as counted already) it would cover.

        Raises:
            WindowTooSmallError: the window holds no part of the log beside the instructions.
            AgentError, ApiError: as :meth:`LLMClient.input_limit` raises them.
        """
        from axe.domain.budget import Estimate  # noqa: PLC0415  (--estimate only: start-up)
        from axe.domain.spending import estimated  # noqa: PLC0415

        if not self.llm.charges_tokens(self.model):
            return Estimate(offline=True, analysed=entries.total)
        cap = self.llm.input_limit(self._request(PATTERN_DETECTION_PROMPT, memory))
        layout = LogLayout(memory, entries=entries)
        return estimated(start(memory, cap, layout), self.budget, layout, cap)

    def _first_plan(self, memory: bytes, entries: EntryCounts | None) -> Plan | Budgeted | Finished:
        """The plan, within the budget when there is one and the model spends tokens (the
        offline analyst spends none, so it reads every entry): one pass over the log gives
        the estimates that both need.

        Raises:
            BudgetTooSmallError: not even the newest entry's analysis fits the budget.
        """
        cap = self.llm.input_limit(self._request(PATTERN_DETECTION_PROMPT, memory))
        layout = LogLayout(memory, entries=entries)  # counts nothing yet
        if self.budget is None or not self.llm.charges_tokens(self.model):
            return start(memory, cap, None if cap is None else layout)  # None: sent whole
        from axe.domain.spending import within  # noqa: PLC0415  (with a budget only: start-up)

        self._layout = layout
        return within(start(memory, cap, layout), self.budget)

    def _tell_narrowing(self, plan: Plan | Budgeted | Finished, told: int) -> int:
        """Where the analysis begins now; the frontend is told when the budget moved it."""
        begins = 0 if isinstance(plan, Plan) else plan.start
        if begins != told and self.budget is not None:
            everything = self._entries_from(0)
            analysed = self._entries_from(begins)
            self.output.emit(AnalysisNarrowed(self.agent, self.budget, analysed, everything))
        return begins

    def _entries_from(self, start: int) -> int:
        assert self._layout is not None  # a budget is planned on the layout
        return self._layout.entries_between(start, len(self._layout.log))

    def _send(self, batch: Batch) -> list[Outcome]:
        """Each request of ``batch``, through the one scheduler; the first refusal or
        failure stops what has not started (None in its place). Every answered part is
        told as it comes, in order; what each request spent is counted."""
        answered = itertools.count(batch.done + 1)

        def settled(_index: int, outcome: Outcome) -> None:
            if batch.stage is Stage.PARTS and isinstance(outcome, Completion):
                self.output.emit(PartAnalysed(self.agent, next(answered), batch.total))

        if len(batch.asks) == 1:  # a log that fits needs no worker thread
            self.stop.check()
            outcomes: list[Outcome] = [self._complete(batch.asks[0])]
            settled(0, outcomes[0])
        else:
            outcomes = ordered_map(
                batch.asks,
                self._complete,
                jobs=self.concurrency,
                stop=self.stop,
                name="axe-request",
                settled=settled,
                halts=lambda outcome: isinstance(outcome, AxeError),
            )
        for outcome in outcomes:
            self.spent = self.spent.counting(outcome, part=batch.stage is Stage.PARTS)
        return outcomes

    def _complete(self, ask: Ask) -> Completion | AxeError:
        try:  # the request (a part's bytes) is made here and not kept
            return self.llm.complete(self._request(ask.system_prompt, ask.content()))
        except AxeError as error:
            return error

    def _request(self, system_prompt: str, content: bytes) -> AnalysisRequest:
        return AnalysisRequest(
            model=self.model,
            system_prompt=system_prompt,
            content=content,
            temperature=ANALYSIS_TEMPERATURE,
            max_tokens=ANALYSIS_MAX_TOKENS,
            memory_config=self.memory_config,
            retry_unanswered=self.budget is None,  # a budget pays for one bill a request
        )


def _in_context(failed: Failed) -> AxeError:
    """The failed request's error itself, with what failed in front of its message when
    the log was split: its kind (so the exit code is the one the same failure has on a
    log that fits), its numbers and what the use case adds to it (where a model the
    provider does not know was named) are kept."""
    error = failed.error
    if failed.stage is Stage.PARTS:
        what = f"analysis of part {failed.at} of {failed.of} failed"
    elif failed.stage is Stage.MERGE:
        what = f"merging the {failed.of} part reports failed"
    else:
        return error
    error.args = (f"{what}: {error}", *error.args[1:])
    return error
