"""The four ports the gc use case depends on.

Each is a small ``typing.Protocol`` over domain values. Adapters (files, HTTP, console) and
the in-memory fakes in ``tests/fakes.py`` implement them structurally; mypy checks each
against its port where the composition root or a test binds it. Adapters translate their
library's exceptions into :mod:`axe.domain.errors` at the boundary, so the use case only
ever sees ``AgentError``, ``ConfigError`` or ``ApiError``.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Protocol

from attrs import field, frozen

from axe.domain.entries import MemorySnapshot, TrimPlan
from axe.domain.model import AgentConfig, MemoryConfig, ModelRef


class AgentRepository(Protocol):
    """Where agent definitions live (``<config>/agents/*.toml`` in production)."""

    def load(self, name: str) -> AgentConfig:
        """The agent called ``name``.

        Raises:
            ConfigError: not found, unreadable, unparsable, invalid, or a hostile name.
        """
        ...

    def list_names(self) -> list[str]:
        """Every agent name, in name order; no agents directory means no agents.

        Raises:
            ConfigError: the agents directory exists but cannot be listed.
        """
        ...


class MemoryStore(Protocol):
    """Where each agent's memory log lives."""

    def read(self, agent: AgentConfig) -> MemorySnapshot:
        """The whole memory file; a missing file reads as empty.

        Raises:
            ConfigError: the memory path cannot be resolved.
            AgentError: the file exists but cannot be read.
        """
        ...

    def trim(
        self, agent: AgentConfig, snapshot: MemorySnapshot, plan: TrimPlan, *, archive: bool
    ) -> None:
        """Replace the file with the bytes from ``plan.keep_from`` on, atomically.

        Bytes appended since ``snapshot`` was read are kept too. With ``archive``, the
        removed bytes are first appended to the agent's archive. On any failure the file is
        left exactly as it was.

        Raises:
            AgentError: the trim could not be carried out; nothing was changed.
        """
        ...


@frozen
class AnalysisRequest:
    """One single-shot analysis: the fixed prompt plus the whole memory log, no tools.

    ``memory_config`` is not sent to remote models (the spec fixes what they see); the
    built-in analyst uses it to comment on the agent's own settings.
    """

    model: ModelRef
    system_prompt: str
    memory: bytes
    temperature: float
    max_tokens: int
    memory_config: MemoryConfig = field(factory=MemoryConfig)


class LLMClient(Protocol):
    """Something that turns a memory log into the three-section report."""

    def complete(self, request: AnalysisRequest) -> str:
        """The report text.

        Raises:
            AgentError: the provider is unknown.
            ApiError: no key, transport failure, HTTP error or an unusable reply.
        """
        ...


class Output(Protocol):
    """Where the user sees results (stdout) and problems (stderr)."""

    def say(self, text: str) -> None:
        """Write ``text`` and a newline to the result stream (stdout)."""
        ...

    def warn(self, text: str) -> None:
        """Write ``text`` and a newline to the diagnostic stream (stderr)."""
        ...

    def waiting(self, status: str) -> AbstractContextManager[None]:
        """Show ``status`` while a slow step runs, where someone is watching; leave no trace."""
        ...
