"""The four ports the gc use case depends on, and the clock its adapters share: each a small
``typing.Protocol`` over domain values (architecture.md, "The ports")."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Protocol

from attrs import field, frozen

from axe.domain.analysed import AnalysedMemory
from axe.domain.entries import MemorySnapshot, TrimPlan
from axe.domain.events import Event
from axe.domain.model import AgentConfig, MemoryConfig, ModelRef
from axe.domain.results import Completion
from axe.domain.window import Window


class AgentRepository(Protocol):
    """Where agent definitions live (``*.toml`` files in the agents directories, in production)."""

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
        """Hold ``agent``'s memory file for one gc (read, analyse, archive, trim), so that
        overlapping runs on one file (agents sharing one included) come out as if one ran
        after the other; ``waiting(pid)`` is called once, before waiting, if another gc holds
        it (``pid`` when known).

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
        """Replace the file with the bytes from ``plan.keep_from`` on, atomically, bytes
        appended since ``snapshot`` was read included; with ``archive``, the removed bytes
        are first appended to the agent's archive. On any failure the file is as it was.
        Returns what the user must hear about a trim that did happen (a program still holds
        the old file open for writing, so what it writes later is not carried over), a
        clause in the store's words; None when there is nothing to tell.

        Raises:
            AgentError: the trim could not be carried out; nothing was changed.
        """

    def analysed(self, agent: AgentConfig) -> AnalysedMemory | None:
        """What gc left in ``agent``'s memory file when it last analysed it, as recorded by
        :meth:`remember_analysed`; None when there is no record it can trust (none, unreadable,
        corrupt, or where others could have written it). Needs no lock: it changes nothing.

        Raises:
            ConfigError: the memory path cannot be resolved.
        """

    def remember_analysed(
        self,
        agent: AgentConfig,
        left: bytes,
        *,
        model: ModelRef,
        budget: int | None = None,
        analysed: int | None = None,
    ) -> str | None:
        """Record, under the lock, that gc analysed ``agent``'s memory file with ``model`` and
        left ``left`` there, stamped with the run's clock; atomically, replacing any earlier
        record. Where it cannot be written safely nothing is recorded, which only costs a
        later ``--skip-unchanged`` an analysis, so this raises nothing: it returns why (a
        clause for a warning), or None when the record was kept.
        """


@frozen(kw_only=True)
class AnalysisRequest:
    """One single-shot request: a system prompt and one user message, no tools; ``content``
    is the memory log (or a part of it) exactly as read, decoded only where it is sent, or
    the part reports a merge combines. ``memory_config`` is not sent to remote models (the
    spec fixes what they see); the built-in analyst comments on the agent's own settings.
    ``retry_unanswered`` False: an attempt that went out and got no answer (a connection
    broken mid-request) may have been billed, so under a token budget it is not tried again
    (a retry after an error reply, which providers do not bill, still is).
    """

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
        """The most input tokens one request to ``request.model`` may carry, when known
        before sending (a configured cap, the model's window as the provider tells it, the
        largest of any model of the provider), and where that was learnt; None: unknown,
        so the request is sent whole and a too-long refusal says so.

        Raises:
            AgentError: the provider is unknown.
            ApiError: asking the server failed.
        """

    def count_tokens(self, request: AnalysisRequest) -> int:
        """The input tokens the provider counts for ``request``, asked of it for free
        before anything is sent (only with a budget or ``--estimate``, never on the spec's
        path).

        Raises:
            NoTokenCountError: the provider does not count (no endpoint, or one that answered
                that it has none or failed): gc plans on its own estimate.
            AgentError: the provider is unknown.
        """

    def charges_tokens(self, model: ModelRef) -> bool:
        """Whether a request to ``model`` spends tokens, which a budget counts (the
        offline analyst's spend none).

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
    """Time, one instance per run, handed to the memory file (lock waits, late appends,
    temp-file ages) and the HTTP side (deadlines, retry pauses). Tests pass one
    :class:`axe.testing.FakeClock`, which moves only when slept on, instead of sleeping."""

    def now(self) -> float:
        """Seconds since the epoch (wall time), to compare with file times."""

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back, for deadlines and elapsed time."""

    def sleep(self, seconds: float) -> None:
        """Wait ``seconds``."""


class Output(Protocol):
    """Where the facts of a run go: a console, a JSON stream, an embedding frontend."""

    def emit(self, event: Event) -> None:
        """Take note of ``event``; called in the order things happen, never concurrently."""
