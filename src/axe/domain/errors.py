"""The kinds of failure axe reports, and the one table of their exit codes (gc-spec §3.6,
and the Go axe's 4 for a budget), here because both the command line and the JSON report
need it. Errors that carry numbers carry them as values; the console words them."""

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
    """The LLM provider could not be used (exit 3); ``sent``: the HTTP requests that went
    out before it was given up, each of which may have been billed."""

    def __init__(self, message: str, *, sent: int = 0) -> None:
        super().__init__(message)
        self.sent = sent


@frozen
class ModelOrigin:
    """Where the model was named: by ``--model`` (``override``), or in ``agent``'s file."""

    model: str
    override: bool
    agent: str
    source: str = ""


class NoTokenCountError(AxeError):
    """The provider did not count a request; gc plans on its own estimate instead, never
    failing the agent. ``offered``: the provider counts for others, so the user may want
    to know; a provider that never counts is no news."""

    def __init__(self, reason: str, *, offered: bool = True) -> None:
        super().__init__(reason)
        self.reason = reason
        self.offered = offered


class ModelNotFoundError(ApiError):
    """The provider does not know the model (HTTP 404); the use case fills in ``origin``,
    so that a frontend can name what to fix."""

    def __init__(self, message: str, *, sent: int = 0) -> None:
        super().__init__(message, sent=sent)
        self.origin: ModelOrigin | None = None


class PromptTooLargeError(ApiError):
    """The prompt does not fit the model's window; ``tokens`` and ``limit``: the provider's
    own counts when its message gives them, for the planner to size parts by."""

    def __init__(
        self, message: str, *, tokens: int | None = None, limit: int | None = None, sent: int = 0
    ) -> None:
        super().__init__(message, sent=sent)
        self.tokens = tokens
        self.limit = limit


class WindowTooSmallError(ApiError):
    """The window cannot hold gc's instructions and a part of the log, in the provider's
    tokens: ``limit`` None: unknown, or nothing beside a reply of ``reply`` tokens;
    ``instructions`` None: the reply alone fills the window."""

    def __init__(self, *, limit: int | None, instructions: int | None, reply: int) -> None:
        super().__init__(
            f"context window too small: input limit {limit}, instructions {instructions}, "
            f"reply {reply}"
        )
        self.limit = limit
        self.instructions = instructions
        self.reply = reply


class RefusalMismatchError(ApiError):
    """A too-long refusal that cannot be true of what gc sent (``content`` bytes beside the
    instructions, ``estimate`` tokens in all), so shrinking the log cannot help."""

    def __init__(self, refusal: str, *, content: int, estimate: int) -> None:
        super().__init__(f"{refusal} (sent {content} bytes, estimated {estimate} tokens)")
        self.refusal = refusal
        self.content = content
        self.estimate = estimate


class BudgetTooSmallError(AxeError):
    """``budget`` cannot pay for analysing even the newest entry: ``needed`` tokens at most
    beside the ``spent`` ones; nothing is trimmed (exit 4)."""

    def __init__(self, budget: Budget, *, needed: int, spent: int = 0) -> None:
        super().__init__(
            f"budget of {budget.max_tokens} tokens too small: {spent} spent, {needed} needed"
        )
        self.budget = budget
        self.needed = needed
        self.spent = spent


def detached(error: AxeError) -> AxeError:
    """``error`` without the stack frames it was raised through, its causes' included: a
    result keeps its error, and the frames would keep a whole memory log alive."""
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
    return next((EXIT_CODES[kind] for kind in type(error).__mro__ if kind in EXIT_CODES), 1)
