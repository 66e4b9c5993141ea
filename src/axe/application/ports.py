"""The four ports the gc use case depends on, and the clock its adapters share."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Protocol

from attrs import field, frozen

from axe.domain.analysed import AnalysedMemory, Narrowed
from axe.domain.entries import MemorySnapshot, TrimPlan
from axe.domain.events import Event
from axe.domain.model import AgentConfig, MemoryConfig, ModelRef
from axe.domain.results import Completion
from axe.domain.window import Window


class AgentRepository(Protocol):
    """Where agent definitions live."""

    def load(self, name: str) -> AgentConfig:
        """The agent called ``name``.

        Raises:
            ConfigError: not found, unreadable, unparsable, invalid, or a hostile name.
        """

    def list_names(self) -> list[str]:
        """Every agent name, in name order; no agents directory means no agents.

        Raises:
            ConfigError: the agents directory exists but cannot be listed.
        """


class MemoryStore(Protocol):
    """Where each agent's memory log lives."""

    def lock(
        self, agent: AgentConfig, *, waiting: Callable[[int | None], None]
    ) -> AbstractContextManager[None]:
        """Hold ``agent``'s memory file for one gc, so overlapping runs on one file come out
        as if one ran after the other; ``waiting(pid)`` is called once if another gc holds it.

        Raises:
            ConfigError: the memory path cannot be resolved.
            AgentError: the file stayed locked past the time limit.
        """

    def read(self, agent: AgentConfig) -> MemorySnapshot:
        """The whole memory file; a missing file reads as empty.

        Raises:
            ConfigError: the memory path cannot be resolved.
            AgentError: the file exists but cannot be read.
        """

    def trim(
        self, agent: AgentConfig, snapshot: MemorySnapshot, plan: TrimPlan, *, archive: bool
    ) -> str | None:
        """Replace the file with the bytes from ``plan.keep_from`` on (late appends
        included), atomically, the removed bytes first archived with ``archive``. Returns a
        warning about a trim that did happen (a writer still holds the old file), or None.

        Raises:
            AgentError: the trim could not be carried out (the message says whether the
                file changed).
        """

    def analysed(self, agent: AgentConfig) -> AnalysedMemory | None:
        """What :meth:`remember_analysed` last recorded; None when there is no record it can
        trust. Needs no lock.

        Raises:
            ConfigError: the memory path cannot be resolved.
        """

    def remember_analysed(
        self, agent: AgentConfig, left: bytes, *, model: ModelRef, narrowed: Narrowed | None = None
    ) -> str | None:
        """Record, under the lock, that gc analysed the file with ``model`` and left ``left``
        there. Raises nothing: a record not kept only costs a later analysis; returns why,
        or None when it was kept."""


@frozen(kw_only=True)
class AnalysisRequest:
    """One single-shot request: a system prompt and one user message (the log, a part of
    it, or the reports a merge combines), no tools. ``memory_config`` is for the built-in
    analyst only. ``retry_unanswered`` False: an attempt that got no answer may have been
    billed, so under a budget it is not tried again."""

    model: ModelRef
    system_prompt: str
    content: bytes
    temperature: float
    max_tokens: int
    memory_config: MemoryConfig = field(factory=MemoryConfig)
    retry_unanswered: bool = True


class LLMClient(Protocol):
    """Something that answers one :class:`AnalysisRequest` with a report."""

    def input_limit(self, request: AnalysisRequest) -> Window | None:
        """The most input tokens one request may carry, when known before sending, and
        where that was learnt; None: unknown.

        Raises:
            AgentError: the provider is unknown.
            ApiError: asking the server failed.
        """

    def count_tokens(self, request: AnalysisRequest) -> int:
        """The input tokens the provider counts for ``request``, for free, before sending.

        Raises:
            NoTokenCountError: the provider does not count: gc plans on its own estimate.
            AgentError: the provider is unknown.
        """

    def charges_tokens(self, model: ModelRef) -> bool:
        """Whether a request to ``model`` spends tokens, which a budget counts.

        Raises:
            AgentError: the provider is unknown.
        """

    def complete(self, request: AnalysisRequest) -> Completion:
        """The reply text and, where the provider reports it, the tokens it used.

        Raises:
            AgentError: the provider is unknown.
            PromptTooLargeError: the request does not fit the model's context window.
            ApiError: no key, transport failure, HTTP error or an unusable reply.
        """


class Clock(Protocol):
    """Time, one instance per run (tests pass :class:`axe.testing.FakeClock`)."""

    def now(self) -> float:
        """Seconds since the epoch (wall time), to compare with file times."""

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back, for deadlines."""

    def sleep(self, seconds: float) -> None: ...


class Output(Protocol):
    """Where the facts of a run go: a console, a JSON stream, an embedding frontend."""

    def emit(self, event: Event) -> None:
        """Take note of ``event``; called in the order things happen, never concurrently."""
