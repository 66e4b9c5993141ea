"""The kinds of failure axe reports, and the one table of their exit codes (gc-spec §3.6,
and the Go axe's 4 for a budget), beside them because two edges need it: the command line
and the JSON report's ``exit_code``. Most messages are complete one-line sentences for the
person at the terminal; the errors that carry numbers (a window too small, refusals that
cannot be true, a budget) carry them as values, and the console words them.
"""

from __future__ import annotations

from attrs import frozen

from axe.domain.budget import Budget


class AxeError(Exception):
    """Base of every failure axe reports to the user instead of a traceback."""


class AgentError(AxeError):
    """The agent cannot be processed: bad arguments, bad model string, memory I/O (exit 1)."""


class ConfigError(AxeError):
    """A configuration file or path is missing, unparsable or invalid (exit 2)."""


class ApiError(AxeError):
    """The LLM provider could not be used: no key, HTTP error, timeout, bad reply (exit 3);
    ``sent`` counts the HTTP requests that went out before it was given up, retries
    included (0 for a missing key): each may have been billed."""

    def __init__(self, message: str, *, sent: int = 0) -> None:
        super().__init__(message)
        self.sent = sent


@frozen
class ModelOrigin:
    """Where the model of an analysis was named: by ``--model`` (``override``), or in the
    agent ``agent``'s file at ``source`` (its path; "" when the repository has none)."""

    model: str
    override: bool
    agent: str
    source: str = ""


class NoTokenCountError(AxeError):
    """The provider did not count a request before it is sent (``reason``, in the adapter's
    words); gc plans on its own estimate instead. Never a failure of the agent. ``offered``:
    the provider counts for others (no key to ask with, an endpoint that failed), so the
    user may want to know; a provider that never counts is no news."""

    def __init__(self, reason: str, *, offered: bool = True) -> None:
        super().__init__(reason)
        self.reason = reason
        self.offered = offered


class ModelNotFoundError(ApiError):
    """The provider does not know the model, or the endpoint (HTTP 404); ``origin`` is
    filled in by the use case, which alone knows whether the model came from ``--model`` or
    the agent's file, so that a frontend can name what to fix."""

    def __init__(self, message: str, *, sent: int = 0) -> None:
        super().__init__(message, sent=sent)
        self.origin: ModelOrigin | None = None


class PromptTooLargeError(ApiError):
    """The provider refused a request because its prompt does not fit the model's window;
    ``tokens`` and ``limit`` are its own counts when its message gives them ("prompt is too
    long: 212230 tokens > 200000 maximum"), for the planner to size parts by."""

    def __init__(
        self, message: str, *, tokens: int | None = None, limit: int | None = None, sent: int = 0
    ) -> None:
        super().__init__(message, sent=sent)
        self.tokens = tokens
        self.limit = limit


class WindowTooSmallError(ApiError):
    """The model's window cannot hold gc's instructions and a part of the log, in the
    provider's tokens (the console words the advice): ``limit``, the input the window allows
    (None: unknown, or nothing beside a reply of ``reply`` tokens); ``instructions``, what
    gc's own instructions need (None when the reply alone fills the window).
    """

    def __init__(self, *, limit: int | None, instructions: int | None, reply: int) -> None:
        super().__init__(
            f"context window too small: input limit {limit}, instructions {instructions}, "
            f"reply {reply}"
        )
        self.limit = limit
        self.instructions = instructions
        self.reply = reply


class RefusalMismatchError(ApiError):
    """The provider refused a request as too long in terms that cannot be true of what gc
    sent (a gateway that counts differently, a misconfigured model), so shrinking the log
    cannot help: the provider's own words (``refusal``) and what was sent, ``content`` bytes
    beside the instructions and ``estimate`` tokens in all.
    """

    def __init__(self, refusal: str, *, content: int, estimate: int) -> None:
        super().__init__(f"{refusal} (sent {content} bytes, estimated {estimate} tokens)")
        self.refusal = refusal
        self.content = content
        self.estimate = estimate


class BudgetTooSmallError(AxeError):
    """``budget`` cannot pay for analysing even the newest entry: that takes ``needed``
    tokens at most (its input by gc's conservative estimate and the reply it allows) on top
    of ``spent``, what was already spent (only a refusal mid-run leaves less than planned);
    nothing is trimmed (exit 4, the Go axe's code for a budget)."""

    def __init__(self, budget: Budget, *, needed: int, spent: int = 0) -> None:
        super().__init__(
            f"budget of {budget.max_tokens} tokens too small: {spent} spent, {needed} needed"
        )
        self.budget = budget
        self.needed = needed
        self.spent = spent


def detached(error: AxeError) -> AxeError:
    """``error`` without the stack frames it was raised through, its causes' included: a
    result keeps its error as long as the caller keeps the result, and the frames would keep
    alive all they referred to, a whole memory log among them, for every failed agent."""
    seen: set[int] = set()
    cause: BaseException | None = error
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        cause.__traceback__ = None
        cause = cause.__cause__ or cause.__context__
    return error


EXIT_SUCCESS = 0
EXIT_CODES: dict[type[AxeError], int] = {
    AgentError: 1,
    ConfigError: 2,
    ApiError: 3,
    BudgetTooSmallError: 4,
}


def exit_code_for(error: AxeError) -> int:
    """The documented exit code of ``error``'s kind (1 for an unforeseen kind)."""
    for kind in type(error).__mro__:
        if kind in EXIT_CODES:
            return EXIT_CODES[kind]
    return 1
