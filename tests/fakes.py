"""In-memory stand-ins for the four ports, for driving the use case without I/O.

They behave like the real adapters as far as the use case can tell (a store applies a trim
plan to its bytes, a repository raises ConfigError for an unknown agent) and record what
happened so tests can assert on it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from axe.application.ports import AgentRepository, AnalysisRequest, LLMClient, MemoryStore, Output
from axe.domain.entries import MemorySnapshot, TrimPlan
from axe.domain.errors import AgentError, AxeError, ConfigError
from axe.domain.model import AgentConfig, MemoryConfig, quoted


def agent(
    name: str = "helper",
    *,
    enabled: bool = True,
    last_n: int = 0,
    max_entries: int = 0,
    model: str = "anthropic/claude-3",
) -> AgentConfig:
    return AgentConfig(
        name=name,
        model=model,
        display_name=name,
        memory=MemoryConfig(enabled=enabled, last_n=last_n, max_entries=max_entries),
    )


class FakeAgentRepository:
    def __init__(self, *agents: AgentConfig, broken: dict[str, str] | None = None) -> None:
        self.agents = {a.name: a for a in agents}
        self.broken = broken or {}

    def load(self, name: str) -> AgentConfig:
        if name in self.broken:
            raise ConfigError(self.broken[name])
        if name not in self.agents:
            raise ConfigError(f"agent {quoted(name)} not found")
        return self.agents[name]

    def list_names(self) -> list[str]:
        return sorted([*self.agents, *self.broken])


class FakeMemoryStore:
    """Memory files as a dict of bytes; ``unreadable`` / ``failing_trim`` simulate I/O errors."""

    def __init__(self, files: dict[str, bytes] | None = None) -> None:
        self.files = dict(files or {})
        self.archives: dict[str, bytes] = {}
        self.unreadable: set[str] = set()
        self.failing_trim: set[str] = set()
        self.trims: list[tuple[str, TrimPlan]] = []

    def read(self, agent: AgentConfig) -> MemorySnapshot:
        if agent.name in self.unreadable:
            raise AgentError(f"cannot read memory file of {agent.name}: permission denied")
        return MemorySnapshot(content=self.files.get(agent.name, b""), stamp=agent.name)

    def trim(
        self, agent: AgentConfig, snapshot: MemorySnapshot, plan: TrimPlan, *, archive: bool
    ) -> None:
        if agent.name in self.failing_trim:
            raise AgentError("cannot trim memory file: no space left on device")
        current = self.files[agent.name]
        if archive:
            self.archives[agent.name] = (
                self.archives.get(agent.name, b"") + current[: plan.keep_from]
            )
        self.files[agent.name] = current[plan.keep_from :]
        self.trims.append((agent.name, plan))


class ScriptedLLM:
    """Answers every request with ``reply`` (or raises ``error``) and records the requests."""

    def __init__(self, reply: str = "## Patterns Found\nNone.", error: AxeError | None = None):
        self.reply = reply
        self.error = error
        self.requests: list[AnalysisRequest] = []

    def complete(self, request: AnalysisRequest) -> str:
        self.requests.append(request)
        if self.error is not None:
            raise self.error
        return self.reply


class RecordingOutput:
    """Keeps stdout and stderr as lists of lines, and which statuses were shown."""

    def __init__(self) -> None:
        self.stdout: list[str] = []
        self.stderr: list[str] = []
        self.statuses: list[str] = []

    def say(self, text: str) -> None:
        self.stdout.extend(text.split("\n"))

    def warn(self, text: str) -> None:
        self.stderr.extend(text.split("\n"))

    @contextmanager
    def waiting(self, status: str) -> Iterator[None]:
        self.statuses.append(status)
        yield


# mypy checks each fake against its port here.
_agents: AgentRepository = FakeAgentRepository()
_memory: MemoryStore = FakeMemoryStore()
_llm: LLMClient = ScriptedLLM()
_output: Output = RecordingOutput()
