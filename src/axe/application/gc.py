"""The gc use case, gc-spec §3.3 and §3.5 in order, as plain functions over the four ports;
every run ends in a result value."""

from __future__ import annotations

import attrs
from attrs import Attribute, Factory, define, field, frozen, validators

from axe.application.analysis import LogAnalysis
from axe.application.ports import AgentRepository, LLMClient, MemoryStore, Output
from axe.application.stops import StopSignal
from axe.application.workers import run_in_order
from axe.domain import events
from axe.domain.analysed import Narrowed
from axe.domain.budget import Budget, Estimate
from axe.domain.entries import MemorySnapshot, count_entries, plan_trim
from axe.domain.errors import (
    AgentError,
    AxeError,
    ConfigError,
    ModelNotFoundError,
    ModelOrigin,
    detached,
)
from axe.domain.model import AgentConfig, ModelRef
from axe.domain.policy import trim_target
from axe.domain.results import AgentResult, AgentStatus, Analysis, Spent, SweepResult


def _model_override(value: ModelRef | str | None) -> ModelRef | None:
    """Parsed when the options are built, so a bad one is refused before any agent runs."""
    return ModelRef.parse(value) if isinstance(value, str) else value


PART_CONCURRENCY = 4  # parts of one log analysed at once: gentle on providers' rate limits


class BelowOneError(AgentError):
    """A count in :class:`GcOptions` (``option``: its keyword) is ``value``, below 1."""

    def __init__(self, option: str, value: int) -> None:
        super().__init__(f"{option} must be at least 1, not {value}")
        self.option = option
        self.value = value


def _at_least_one(_instance: object, attribute: Attribute[int], value: int) -> None:
    if value < 1:
        raise BelowOneError(attribute.name, value)


@frozen(kw_only=True)
class GcOptions:
    """The choices a user makes per run (``max_tokens`` 0: the agent file's budget, if any).

    Raises:
        AgentError: ``model_override`` is text that is not ``provider/model-name``.
        BelowOneError: a count is below 1 (an ``AgentError`` too).
    """

    dry_run: bool = False
    model_override: ModelRef | None = field(default=None, converter=_model_override)
    archive: bool = False
    jobs: int = field(default=1, validator=_at_least_one)
    part_concurrency: int = field(default=PART_CONCURRENCY, validator=_at_least_one)
    max_tokens: int = field(default=0, validator=validators.ge(0))
    estimate: bool = False
    skip_unchanged: bool = False


@frozen(kw_only=True)
class GcPorts:
    """The outside world, as the use case sees it; ``stop``: the frontend's signal handlers
    call its :meth:`StopSignal.interrupt`."""

    agents: AgentRepository
    memory: MemoryStore
    llm: LLMClient
    output: Output
    stop: StopSignal = field(factory=StopSignal)


def collect_garbage(name: str, options: GcOptions, ports: GcPorts) -> AgentResult:
    """``axe gc <name>``: a failure of any kind is part of the result, not raised, and
    nothing is trimmed unless the analysis succeeded."""
    ports.output.emit(events.AgentStarted(name, in_sweep=False))
    try:
        agent = ports.agents.load(name)
    except AxeError as error:
        result = AgentResult(agent=name, status=AgentStatus.FAILED, error=detached(error))
    else:
        if agent.memory.enabled:
            return _AgentGc(agent, options, ports).run()
        result = AgentResult(agent=name, status=AgentStatus.DISABLED)
    ports.output.emit(events.AgentFinished(result))
    return result


def collect_all_garbage(options: GcOptions, ports: GcPorts) -> SweepResult:
    """``axe gc --all``: every memory-enabled agent, in name order; with ``options.jobs``
    above 1, that many at once, the events still arriving as the sequential run emits them.
    A failing agent, or an agent file that does not load (skipped), stops no other.

    Raises:
        ConfigError: the agents directory cannot be listed.
    """
    agents = _memory_enabled_agents(ports)
    ports.output.emit(events.SweepStarted(tuple(agent.name for agent in agents)))
    if options.jobs == 1 or len(agents) < 2:
        results = [_sweep_one(agent, options, ports) for agent in agents]
    else:
        results = run_in_order(
            agents,
            lambda agent, out, _stop: _sweep_one(agent, options, attrs.evolve(ports, output=out)),
            jobs=options.jobs,
            output=ports.output,
            stop=ports.stop,
            progress=lambda done, running: events.SweepProgress(
                done, len(agents), tuple(agent.name for agent in running)
            ),
        )
    sweep = SweepResult(tuple(results))
    ports.output.emit(events.SweepFinished(sweep))
    return sweep


def _sweep_one(agent: AgentConfig, options: GcOptions, ports: GcPorts) -> AgentResult:
    ports.output.emit(events.AgentStarted(agent.name, in_sweep=True))
    return _AgentGc(agent, options, ports).run()


def _memory_enabled_agents(ports: GcPorts) -> list[AgentConfig]:
    enabled: list[AgentConfig] = []
    for name in ports.agents.list_names():
        try:
            agent = ports.agents.load(name)
        except ConfigError as error:
            ports.output.emit(events.AgentSkipped(name, detached(error)))
            continue
        if agent.memory.enabled:
            enabled.append(agent)
    return enabled


def _budget(flag: int, agent: AgentConfig) -> Budget | None:
    """``--max-tokens``, else the agent file's, as the Go axe's ``axe run`` chooses."""
    if flag > 0:
        return Budget(flag, flag=True)
    if agent.budget.max_tokens > 0:
        return Budget(agent.budget.max_tokens, flag=False, source=agent.source)
    return None


@define(repr=False, eq=False)  # a run's working state, compared by identity
class _AgentGc:
    """gc of one memory-enabled agent, keeping what it learns so that a failure at any step
    still says how far gc got."""

    agent: AgentConfig
    options: GcOptions
    ports: GcPorts
    entries: int | None = field(default=None, init=False)
    model: ModelRef | None = field(default=None, init=False)
    analysis: Analysis | None = field(default=None, init=False)
    spent: Spent | None = field(default=None, init=False)
    trimming: bool = field(default=False, init=False)  # then what is kept is the store's say
    budget: Budget | None = field(
        default=Factory(lambda gc: _budget(gc.options.max_tokens, gc.agent), takes_self=True),
        init=False,
    )
    budget_used: int = field(default=0, init=False)
    analysed: int | None = field(default=None, init=False)
    estimate: Estimate | None = field(default=None, init=False)
    changing: bool = field(default=False, init=False)  # a change begun, not yet reported

    def run(self) -> AgentResult:
        """A change to the file, once begun, is reported before any stop that came
        meanwhile is let through."""
        try:
            try:
                result = self._steps()
            except AxeError as error:
                result = self._failed(error)
            self.ports.output.emit(events.AgentFinished(result))
            return result
        finally:
            if self.changing:
                self.ports.stop.end_change()

    def _failed(self, error: AxeError) -> AgentResult:
        if isinstance(error, ModelNotFoundError) and self.model is not None:
            by_flag = self.options.model_override is not None
            error.origin = ModelOrigin(str(self.model), by_flag, self.agent.name, self.agent.source)
        kept = None if self.trimming else self.entries
        return self._result(AgentStatus.FAILED, kept=kept, error=detached(error))

    def _steps(self) -> AgentResult:
        if self.options.skip_unchanged and (skipped := self._unchanged()):
            return skipped  # decided without the lock: a skip changes nothing
        if self.options.dry_run or self.options.estimate:  # change nothing: take no lock
            return self._flow()
        with self.ports.memory.lock(self.agent, waiting=self._waiting):
            return self._flow()

    def _waiting(self, holder: int | None) -> None:
        self.ports.output.emit(events.WaitingForLock(self.agent.name, holder))

    def _report_read(self, snapshot: MemorySnapshot) -> int:
        count = self.entries = count_entries(snapshot.content)
        self.ports.output.emit(events.MemoryRead(self.agent.name, count, len(snapshot.content)))
        if not count:
            self.ports.output.emit(events.NoEntryHeadings(self.agent.name, len(snapshot.content)))
        return count

    def _unchanged(self, snapshot: MemorySnapshot | None = None) -> AgentResult | None:
        """The result of a skip, when the file holds exactly what gc left there for this
        model; None (nothing said) on any doubt, for the flow to decide."""
        if (since := self.ports.memory.analysed(self.agent)) is None:
            return None
        snapshot = snapshot or self.ports.memory.read(self.agent)
        if not snapshot.content:
            return None
        try:
            model = self.options.model_override or ModelRef.parse(self.agent.model)
        except AgentError:
            return None  # the flow says it, after the lines it always prints first
        budget = None if self.budget is None else self.budget.max_tokens
        if not since.holds(snapshot.content, model, budget):
            return None
        self.model = model
        count = self._report_read(snapshot)
        self.ports.output.emit(events.MemoryUnchanged(self.agent.name, since))
        return self._result(AgentStatus.UNCHANGED, kept=count)

    def _remember(self, left: bytes, entries: int) -> None:
        """What this gc leaves in the file, recorded with or without ``--skip-unchanged``
        (a nightly run after a run by hand costs nothing); when the budget left entries
        out, only a run with that budget skips it."""
        assert self.model is not None  # chosen before the analysis
        narrowed = None
        if self.budget and self.analysed is not None and self.analysed < entries:
            narrowed = Narrowed(self.budget.max_tokens, self.analysed)
        remember = self.ports.memory.remember_analysed
        why_not = remember(self.agent, left, model=self.model, narrowed=narrowed)
        if why_not is not None and self.options.skip_unchanged:
            self.ports.output.emit(events.RecordNotKept(self.agent.name, why_not))

    def _flow(self) -> AgentResult:
        snapshot = self.ports.memory.read(self.agent)
        if not snapshot.content:
            self.entries = 0
            return self._result(AgentStatus.EMPTY, kept=0)
        if self.options.skip_unchanged and (skipped := self._unchanged(snapshot)):
            return skipped  # another gc analysed it while this one waited for the lock
        count = self._report_read(snapshot)

        self.model = self.options.model_override or ModelRef.parse(self.agent.model)
        if self.options.estimate:
            self.estimate = self._analysis(self.model).estimate(snapshot.content, count)
            return self._result(AgentStatus.ESTIMATED, kept=count)
        self.ports.stop.check()
        self.analysis = self._analyse(snapshot.content, count, self.model)
        self.ports.output.emit(events.AnalysisReady(self.agent.name, self.analysis))

        if self.options.dry_run:
            return self._result(AgentStatus.DRY_RUN, kept=count)
        self.ports.stop.begin_change()  # from here a stop waits until this is reported
        self.changing = True
        target = trim_target(self.agent.memory)
        plan = plan_trim(snapshot.content, target or 0, total=count)  # 0 keeps every entry
        if not plan.changes_file:
            self._remember(snapshot.content, count)
            status = AgentStatus.NO_TARGET if target is None else AgentStatus.WITHIN_LIMIT
            return self._result(status, kept=count)
        self.trimming = True
        warning = self.ports.memory.trim(self.agent, snapshot, plan, archive=self.options.archive)
        if warning is not None:
            self.ports.output.emit(events.TrimWarning(self.agent.name, warning))
        # What was analysed and kept; bytes `axe run` appended meanwhile were not analysed,
        # so with them the file no longer matches and the next run analyses it.
        self._remember(snapshot.content[plan.keep_from :], plan.kept)
        result = self._result(AgentStatus.TRIMMED, removed=plan.removed, kept=plan.kept)
        return attrs.evolve(result, warnings=(warning,) if warning else ())

    def _analyse(self, memory: bytes, count: int, model: ModelRef) -> Analysis:
        self.ports.output.emit(events.AnalysisStarted(self.agent.name, model, count))
        analysis = self._analysis(model)
        try:
            return analysis.run(memory)
        finally:
            self.spent = analysis.spent  # what was sent is said, also on a failure
            self.budget_used = analysis.budget_used
            self.analysed = analysis.analysed

    def _analysis(self, model: ModelRef) -> LogAnalysis:
        return LogAnalysis(
            llm=self.ports.llm,
            output=self.ports.output,
            agent=self.agent.name,
            model=model,
            memory_config=self.agent.memory,
            concurrency=self.options.part_concurrency,
            stop=self.ports.stop,
            budget=self.budget,
        )

    def _result(
        self,
        status: AgentStatus,
        *,
        removed: int = 0,
        kept: int | None = None,
        error: AxeError | None = None,
    ) -> AgentResult:
        return AgentResult(
            agent=self.agent.name,
            status=status,
            entries=self.entries,
            removed=removed,
            kept=kept,
            limit=trim_target(self.agent.memory),
            model=self.model,
            analysis=self.analysis,
            error=error,
            spent=self.spent,
            budget=self.budget,
            budget_used=None if self.budget is None else self.budget_used,
            analysed=self.analysed,
            estimate=self.estimate,
        )
