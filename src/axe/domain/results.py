"""What gc did to an agent, as facts a frontend can show, count or store (the console words
them); the use case returns one :class:`AgentResult` per agent, a :class:`SweepResult` for
``--all``."""

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
    """Tokens a provider reports having read and written, summed over split analyses;
    ``cost``, the price in US dollars where the provider states it (OpenRouter's
    ``usage.cost``), a sum keeping the costs that are known."""

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
    """One reply of an :class:`~axe.application.ports.LLMClient`: its text, its cost, and
    the HTTP requests it took (``sent``, retries of a 429 or a 503 included)."""

    text: str
    usage: Usage | None = None
    sent: int = 1


@frozen(kw_only=True)
class Spent:
    """What one agent's analysis sent and what it cost, whatever came of it: the bill of a
    failed analysis counts too.

    ``requests`` counts every HTTP request that went out (refused, failed and retried
    ones included: each may have been billed); ``usage`` sums what the replies reported;
    ``parts`` is None unless the log was split, then the parts analysed so far.
    """

    usage: Usage | None = None
    requests: int = 0
    parts: int | None = None

    def counting(self, outcome: Completion | AxeError | None, *, part: bool) -> Spent:
        """With what one request came to (None: it was never sent); ``part``: it was a
        part of a split log."""
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
    """The report gc obtained for one agent's memory, and what obtaining it spent;
    ``parts`` is 1 when the whole log went in one request (gc-spec §3.7), more when the log
    was analysed in parts whose reports were then merged."""

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
    """The outcome of gc for one agent.

    ``entries`` is the count before any trim, None when gc did not get as far as reading
    the memory file; ``kept`` likewise (a failure before the trim keeps every entry it
    read; after a failure in the trim it is None: the store's error says). ``limit`` is
    the trim target the agent's memory config sets, dry run and failure included; None when
    it sets none, its memory is disabled or the agent did not load.
    A failed agent carries its ``error`` and whatever was learnt before it failed;
    ``spent`` is what its analysis sent, also when it failed (None: no analysis began).
    ``budget`` is the agent's token budget (None: unlimited) and ``budget_used`` the tokens
    counted against it; ``analysed``, the entries the report covers when the budget left
    the oldest out (None: every entry read); ``estimate``, what ``--estimate`` found
    instead of analysing; ``warnings``, what the trim asked the user to know.
    """

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
        """The entries the report covers, or the estimated analysis would; None without
        either."""
        if self.estimate is not None:
            return self.estimate.analysed
        if self.analysis is None:
            return None
        return self.entries if self.analysed is None else self.analysed

    @property
    def exit_code(self) -> int:
        """What ``axe gc <agent>`` would exit with for this agent alone."""
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
        """1 when any agent failed, whatever the kind of its failure (gc-spec §3.5, 5.6)."""
        return 1 if self.failed else EXIT_SUCCESS
