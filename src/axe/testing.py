"""In-memory stand-ins for the four ports and the clock, for testing a frontend built on gc
without files, a network or a terminal (docs/embedding.md). The contract tests run each fake
and its adapter through one suite, so a fake cannot drift from what the use case sees of
its adapter; each also records what happened, for assertions.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from axe.application import ports
from axe.application.workers import RecordingOutput
from axe.domain.analysed import AnalysedMemory, Narrowed
from axe.domain.entries import MemorySnapshot, TrimPlan
from axe.domain.errors import AgentError, AxeError, ConfigError, NoTokenCountError
from axe.domain.model import AgentConfig, MemoryConfig, ModelRef, quoted
from axe.domain.results import Completion
from axe.domain.window import Window, WindowSource

__all__ = [
    "FakeAgentRepository",
    "FakeClock",
    "FakeMemoryStore",
    "RecordingOutput",
    "ScriptedLLM",
    "make_agent",
]


def make_agent(
    name: str = "helper",
    *,
    enabled: bool = True,
    last_n: int = 0,
    max_entries: int = 0,
    model: str = "anthropic/claude-3",
    path: str = "",
) -> AgentConfig:
    """A valid agent; only what gc looks at can be set."""
    return AgentConfig(
        name=name,
        model=model,
        display_name=name,
        memory=MemoryConfig(enabled=enabled, path=path, last_n=last_n, max_entries=max_entries),
    )


class FakeAgentRepository:
    """Agents held in a dict; ``broken`` names fail to load with the given message."""

    def __init__(self, *agents: AgentConfig, broken: dict[str, str] | None = None) -> None:
        self.agents = {agent.name: agent for agent in agents}
        self.broken = dict(broken or {})

    def load(self, name: str) -> AgentConfig:
        if name in self.broken:
            raise ConfigError(self.broken[name])
        if name not in self.agents:
            raise ConfigError(f"agent {quoted(name)} not found")
        return self.agents[name]

    def list_names(self) -> list[str]:
        return sorted([*self.agents, *self.broken])


class FakeMemoryStore:
    """Memory files as bytes by agent name, locked per agent. Agents in ``unreadable`` and
    ``failing_trim`` fail as I/O would; ``trims`` and ``locked`` record what happened;
    :meth:`append` writes as a running ``axe run`` would. ``records`` holds what
    ``--skip-unchanged`` remembers, stamped by ``clock``, unless ``unrecordable`` says why not.
    """

    def __init__(
        self, files: dict[str, bytes] | None = None, *, clock: ports.Clock | None = None
    ) -> None:
        self.files = dict(files or {})
        self.archives: dict[str, bytes] = {}
        self.records: dict[str, AnalysedMemory] = {}
        self.clock = clock or FakeClock()
        self.unreadable: set[str] = set()
        self.failing_trim: set[str] = set()
        self.unrecordable: str | None = None
        self.held_open: dict[str, str] = {}
        self.trims: list[tuple[str, TrimPlan]] = []
        self.locked: list[str] = []
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    @contextmanager
    def lock(self, agent: AgentConfig, *, waiting: Callable[[int | None], None]) -> Iterator[None]:
        with self._guard:
            held = self._locks.setdefault(agent.name, threading.Lock())
        if not held.acquire(blocking=False):
            waiting(None)
            held.acquire()
        try:
            self.locked.append(agent.name)
            yield
        finally:
            held.release()

    def append(self, agent: AgentConfig, data: bytes) -> None:
        self.files[agent.name] = self.files.get(agent.name, b"") + data

    def read(self, agent: AgentConfig) -> MemorySnapshot:
        if agent.name in self.unreadable:
            raise AgentError(f"cannot read memory file of {agent.name}: permission denied")
        return MemorySnapshot(content=self.files.get(agent.name, b""), stamp=agent.name)

    def trim(
        self, agent: AgentConfig, snapshot: MemorySnapshot, plan: TrimPlan, *, archive: bool
    ) -> str | None:
        if agent.name in self.failing_trim:
            raise AgentError("cannot trim memory file: no space left on device")
        current = self.files.get(agent.name)
        if current is None:
            raise AgentError(
                f"memory file of {agent.name} disappeared before it could be trimmed; "
                "nothing was changed"
            )
        if not current.startswith(snapshot.content):  # only appends keep what was read
            raise AgentError(
                f"memory file of {agent.name} changed while gc was running; not trimmed "
                "(run gc again)"
            )
        if archive:
            removed = current[: plan.keep_from]
            self.archives[agent.name] = self.archives.get(agent.name, b"") + removed
        self.files[agent.name] = current[plan.keep_from :]
        self.trims.append((agent.name, plan))
        return self.held_open.get(agent.name)

    def analysed(self, agent: AgentConfig) -> AnalysedMemory | None:
        return self.records.get(agent.name)

    def remember_analysed(
        self, agent: AgentConfig, left: bytes, *, model: ModelRef, narrowed: Narrowed | None = None
    ) -> str | None:
        if self.unrecordable is not None:
            return self.unrecordable
        at = self.clock.now()
        self.records[agent.name] = AnalysedMemory.of(left, model=model, at=at, narrowed=narrowed)
        return None


class FakeClock:
    """A clock that moves only when slept on: ``sleep(s)`` advances ``time`` at once, records
    ``s`` in ``slept``, then calls ``on_sleep(time)``, so a test makes something happen while
    gc waits (a writer appending, a lock freed)."""

    def __init__(
        self, start: float = 0.0, *, on_sleep: Callable[[float], None] | None = None
    ) -> None:
        self.time = start
        self.slept: list[float] = []
        self.on_sleep = on_sleep

    def now(self) -> float:
        return self.time

    def monotonic(self) -> float:
        return self.time

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.time += seconds
        if self.on_sleep is not None:
            self.on_sleep(self.time)


Reply = str | Completion | AxeError


class ScriptedLLM:
    """Answers every request with ``reply`` (a text, a :class:`Completion` or an error to
    raise), or what ``script`` decides for it, and records them all, from any thread.
    ``window`` is the model's (a number: as a provider tells it); ``counts`` counts a
    request as the provider would (None: it cannot), each recorded in ``counted``; ``free``
    requests spend no tokens, as the offline analyst's do not.
    """

    def __init__(
        self,
        reply: Reply = "## Patterns Found\nNone.",
        *,
        script: Callable[[ports.AnalysisRequest], Reply] | None = None,
        window: int | Window | None = None,
        counts: Callable[[ports.AnalysisRequest], int] | None = None,
        free: bool = False,
    ) -> None:
        self.reply = reply
        self.script = script
        self.window = Window(window, WindowSource.MODEL) if isinstance(window, int) else window
        self.counts = counts
        self.free = free
        self.requests: list[ports.AnalysisRequest] = []
        self.counted: list[ports.AnalysisRequest] = []
        self._lock = threading.Lock()

    def input_limit(self, request: ports.AnalysisRequest) -> Window | None:
        return self.window

    def count_tokens(self, request: ports.AnalysisRequest) -> int:
        if self.counts is None:
            raise NoTokenCountError("it offers no count", offered=False)
        with self._lock:
            self.counted.append(request)
        return self.counts(request)

    def charges_tokens(self, model: ModelRef) -> bool:
        return not self.free

    def complete(self, request: ports.AnalysisRequest) -> Completion:
        with self._lock:
            self.requests.append(request)
        answer = self.script(request) if self.script is not None else self.reply
        if isinstance(answer, AxeError):
            raise answer
        return answer if isinstance(answer, Completion) else Completion(answer)


# mypy checks each fake against its port here.
_clock: ports.Clock = FakeClock()
_agents: ports.AgentRepository = FakeAgentRepository()
_memory: ports.MemoryStore = FakeMemoryStore()
_llm: ports.LLMClient = ScriptedLLM()
_output: ports.Output = RecordingOutput()
