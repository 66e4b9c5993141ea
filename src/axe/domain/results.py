"""What gc did to an agent, as facts a frontend can show, count or store."""

from __future__ import annotations

import enum

from attrs import frozen

from axe.domain.budget import Budget, Estimate
from axe.domain.errors import EXIT_SUCCESS, ApiError, AxeError, PromptTooLargeError, exit_code_for
from axe.domain.model import ModelRef


class AgentStatus(enum.Enum):
    """How one agent's gc ended; the values are the JSON report's ``status`` strings."""

    TRIMMED = "trimmed"
    WITHIN_LIMIT = "within_limit"
    NO_TARGET = "no_target"
    DRY_RUN = "dry_run"
    UNCHANGED = "unchanged"  # --skip-unchanged: the file holds what gc last analysed
    ESTIMATED = "estimated"
    EMPTY = "empty"
    DISABLED = "disabled"
    FAILED = "failed"


@frozen
class Usage:
    """Tokens a provider reports having read and written; ``cost``: US dollars, if stated."""

    input_tokens: int
    output_tokens: int
    cost: float | None = None

    def __add__(self, other: Usage) -> Usage:
        costs = [cost for cost in (self.cost, other.cost) if cost is not None]
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            sum(costs) if costs else None,
        )


@frozen
class Completion:
    """One reply; ``sent``: the HTTP requests it took, retries included."""

    text: str
    usage: Usage | None = None
    sent: int = 1


@frozen(kw_only=True)
class Spent:
    """What one agent's analysis sent and cost, whatever came of it: every HTTP request that
    went out may have been billed; ``parts`` is None unless the log was split."""

    usage: Usage | None = None
    requests: int = 0
    parts: int | None = None

    def counting(self, outcome: Completion | AxeError | None, *, part: bool) -> Spent:
        """With what one request came to (None: it was never sent)."""
        if isinstance(outcome, Completion):
            usage = self.usage if outcome.usage is None else outcome.usage
            if self.usage is not None and outcome.usage is not None:
                usage = self.usage + outcome.usage
            parts = (self.parts or 0) + 1 if part else self.parts
            return Spent(usage=usage, requests=self.requests + outcome.sent, parts=parts)
        sent = outcome.sent if isinstance(outcome, ApiError) else 0
        if isinstance(outcome, PromptTooLargeError):
            sent = max(sent, 1)  # a refusal is an answer to a request
        return Spent(usage=self.usage, requests=self.requests + sent, parts=self.parts)


@frozen(kw_only=True)
class Analysis:
    """The report gc obtained for one agent's memory, and what obtaining it spent."""

    text: str
    spent: Spent = Spent(requests=1)

    @property
    def usage(self) -> Usage | None:
        return self.spent.usage

    @property
    def parts(self) -> int:
        return self.spent.parts or 1

    @property
    def requests(self) -> int:
        return self.spent.requests


@frozen(kw_only=True)
class AgentResult:
    """The outcome of gc for one agent, whatever was learnt before it ended: ``entries``
    before any trim (None: not read), ``kept`` (None after a failure in the trim), ``spent``
    (None: no analysis began), ``analysed`` (None: every entry read)."""

    agent: str
    status: AgentStatus
    entries: int | None = None
    removed: int = 0
    kept: int | None = None
    limit: int | None = None
    model: ModelRef | None = None
    analysis: Analysis | None = None
    error: AxeError | None = None
    spent: Spent | None = None
    budget: Budget | None = None
    budget_used: int | None = None
    analysed: int | None = None
    estimate: Estimate | None = None
    warnings: tuple[str, ...] = ()

    @property
    def analysed_entries(self) -> int | None:
        """The entries the report covers, or the estimated analysis would."""
        if self.estimate is not None:
            return self.estimate.analysed
        if self.analysis is None:
            return None
        return self.entries if self.analysed is None else self.analysed

    @property
    def exit_code(self) -> int:
        return EXIT_SUCCESS if self.error is None else exit_code_for(self.error)


@frozen
class SweepResult:
    """The outcome of ``--all``: every memory-enabled agent's result, in name order."""

    agents: tuple[AgentResult, ...]

    @property
    def failed(self) -> int:
        return sum(result.status is AgentStatus.FAILED for result in self.agents)

    @property
    def exit_code(self) -> int:
        """1 when any agent failed, whatever the kind of its failure (gc-spec §3.5)."""
        return 1 if self.failed else EXIT_SUCCESS
