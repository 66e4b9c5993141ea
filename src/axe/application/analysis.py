"""The short loop that sends what the planner asks for, within the agent's budget, tells
the frontend how far it got and counts what was spent; and its estimate, sending nothing."""

from __future__ import annotations

import itertools

import attrs
from attrs import Factory, define, field

from axe.application.ports import AnalysisRequest, LLMClient, Output
from axe.application.stops import StopSignal
from axe.application.workers import ordered_map
from axe.domain import events
from axe.domain.budget import Budget, Estimate
from axe.domain.errors import AxeError, NoTokenCountError
from axe.domain.log_index import LogIndex
from axe.domain.model import MemoryConfig, ModelRef
from axe.domain.planning import Ask, Batch, Failed, Finished, Outcome, Plan, Stage, start
from axe.domain.prompt import ANALYSIS_MAX_TOKENS, ANALYSIS_TEMPERATURE, PATTERN_DETECTION_PROMPT
from axe.domain.results import Analysis, Completion, Spent
from axe.domain.spending import Budgeted, estimated, within


@define(kw_only=True, eq=False)  # one agent's working state, used by identity
class LogAnalysis:
    """One agent's log with one model; ``spent``, ``budget_used`` and ``analysed`` (if the
    budget left the oldest entries out) stay readable after :meth:`run` failed."""

    llm: LLMClient
    output: Output
    agent: str
    model: ModelRef
    memory_config: MemoryConfig
    concurrency: int
    stop: StopSignal = Factory(StopSignal)
    budget: Budget | None = None
    spent: Spent = field(factory=Spent, init=False)
    budget_used: int = field(default=0, init=False)  # against the budget, if any
    analysed: int | None = field(default=None, init=False)
    _index: LogIndex | None = field(default=None, init=False)
    _counted: dict[tuple[str, object, int], int] = field(factory=dict, init=False)
    _counting: bool = field(default=True, init=False)  # until the provider says it cannot

    def run(self, memory: bytes) -> Analysis:
        """The report on ``memory``.

        Raises:
            ApiError: a request failed (the message says which part or merge), the window is
                too small, or the provider's refusals cannot be true of what was sent.
            AgentError: the provider is unknown.
            BudgetTooSmallError: the budget cannot pay for analysing the newest entry.
        """
        plan: Plan | Budgeted | Finished | Failed = self._first_plan(memory)
        announced = begins = 0  # the part count and the start the frontend was last told
        while not isinstance(plan, Finished | Failed):
            begins = self._tell_narrowing(plan, begins)
            batch = plan.batch()
            if batch.stage is Stage.MERGE:
                self.output.emit(events.MergeStarted(self.agent, batch.total))
            elif batch.stage is Stage.PARTS and batch.total != announced:
                announced = batch.total
                self.output.emit(events.AnalysisSplit(self.agent, announced))
            outcomes = self._send(batch)
            if isinstance(plan, Budgeted):
                self.budget_used = plan.charged(outcomes)
            plan = plan.after(outcomes)
        if isinstance(plan, Failed):
            raise _in_context(plan)
        self._tell_narrowing(plan, begins)
        self.analysed = self._entries_from(plan.first) if plan.first else None
        return Analysis(text=plan.text, spent=self.spent)

    def estimate(self, memory: bytes, entries: int) -> Estimate:
        """What :meth:`run` would send (a window lookup at most is sent).

        Raises:
            WindowTooSmallError: the window holds no part of the log beside the instructions.
            AgentError, ApiError: as :meth:`LLMClient.input_limit` raises them.
        """
        if not self.llm.charges_tokens(self.model):
            return Estimate(offline=True, analysed=entries)
        window = self.llm.input_limit(self._request(PATTERN_DETECTION_PROMPT, memory))
        tokens = None if window is None else window.tokens
        found = estimated(start(memory, tokens, LogIndex(memory)), self.budget, tokens, self._count)
        source = None if window is None else window.source
        return attrs.evolve(found, window_source=source, counted=bool(self._counted))

    def _first_plan(self, memory: bytes) -> Plan | Budgeted | Finished:
        """Within the budget, if the model spends tokens.

        Raises:
            BudgetTooSmallError: not even the newest entry's analysis fits the budget.
        """
        window = self.llm.input_limit(self._request(PATTERN_DETECTION_PROMPT, memory))
        tokens = None if window is None else window.tokens
        if self.budget is None or not self.llm.charges_tokens(self.model):
            return start(memory, tokens)
        self._index = LogIndex(memory)
        return within(start(memory, tokens, self._index), self.budget, count=self._count)

    def _tell_narrowing(self, plan: Plan | Budgeted | Finished, told: int) -> int:
        begins = plan.first if isinstance(plan, Budgeted | Finished) else 0
        if begins != told and self.budget is not None:
            everything, analysed = self._entries_from(0), self._entries_from(begins)
            self.output.emit(events.AnalysisNarrowed(self.agent, self.budget, analysed, everything))
        return begins

    def _entries_from(self, first: int) -> int:
        assert self._index is not None  # a budget is planned on the index
        return self._index.entries_in(first, self._index.units)

    def _send(self, batch: Batch) -> list[Outcome]:
        """The first refusal or failure stops what has not started (None in its place)."""
        answered = itertools.count(batch.done + 1)

        def settled(_index: int, outcome: Outcome) -> None:
            if batch.stage is Stage.PARTS and isinstance(outcome, Completion):
                self.output.emit(events.PartAnalysed(self.agent, next(answered), batch.total))

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

    def _count(self, ask: Ask) -> int | None:
        """The provider's count of ``ask``, each asked once; once the provider says it cannot
        count, gc's own estimate stands (and that is said)."""
        key = (ask.system_prompt, ask.part, len(ask.text))
        if self._counting and key not in self._counted:
            request = self._request(ask.system_prompt, ask.content())
            try:
                self._counted[key] = self.llm.count_tokens(request)
            except NoTokenCountError as error:
                self._counting = False
                if error.offered:
                    provider = self.model.provider
                    self.output.emit(events.CountingUnavailable(self.agent, provider, error.reason))
        return self._counted.get(key) if self._counting else None

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
    """The error itself (its kind decides the exit code), with what failed in front of its
    message when the log was split."""
    error = failed.error
    if failed.stage is Stage.PARTS:
        what = f"analysis of part {failed.at} of {failed.of} failed"
    elif failed.stage is Stage.MERGE:
        what = f"merging the {failed.of} part reports failed"
    else:
        return error
    error.args = (f"{what}: {error}", *error.args[1:])
    return error
