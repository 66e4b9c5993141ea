"""Agents, their memory settings, model references: the agents adapter builds them from TOML
and checks them with :func:`validate_agent`."""

from __future__ import annotations

from attrs import field, frozen

from axe.domain.errors import AgentError, ConfigError
from axe.domain.safe_text import CONTROL_ESCAPES

_QUOTE_ESCAPES = CONTROL_ESCAPES | {ord('"'): '\\"', ord("\\"): "\\\\"}


def quoted(text: str) -> str:
    """Quote ``text`` for a one-line message, as Go's ``%q`` does for axe's messages.

    Controls, bidirectional overrides and quotes are escaped, so a hostile agent name can
    neither forge output lines, nor drive the terminal, nor hide in another order than it is
    read, nor break a script that parses stderr.
    """
    return f'"{text.translate(_QUOTE_ESCAPES)}"'


@frozen
class ModelRef:
    """A ``provider/model-name`` reference; the model part may itself contain ``/``."""

    provider: str
    name: str

    @classmethod
    def parse(cls, text: str) -> ModelRef:
        """Split at the first ``/``.

        Raises:
            AgentError: no ``/``, or an empty provider or model name (exit 1, as in axe run).
        """
        provider, slash, name = text.partition("/")
        if not slash or not provider or not name:
            raise AgentError(f"invalid model format {quoted(text)}: expected provider/model-name")
        return cls(provider=provider, name=name)

    def __str__(self) -> str:
        return f"{self.provider}/{self.name}"


@frozen
class MemoryConfig:
    """The ``[memory]`` table; no table means memory is disabled."""

    enabled: bool = False
    path: str = ""
    last_n: int = 0
    max_entries: int = 0


@frozen
class BudgetConfig:
    """The ``[budget]`` table: ``max_tokens`` an analysis of the agent may spend, input
    plus output (0: unlimited), the cap the Go axe's ``axe run`` sets itself too."""

    max_tokens: int = 0


@frozen
class SubAgentsConfig:
    """The ``[sub_agents_config]`` table; gc only validates it, as the Go axe does on load."""

    max_depth: int = 0
    parallel: bool = False
    timeout: int = 0


@frozen
class Params:
    """The ``[params]`` table; gc ignores it (analysis uses fixed settings)."""

    temperature: float = 0.0
    max_tokens: int = 0


@frozen
class AgentConfig:
    """An agent as gc needs it: ``name`` is its file name without ``.toml`` (the ``name`` key
    inside is only a ``display_name``); ``source``, the path it was read from ("": unknown)."""

    name: str
    model: str
    display_name: str = ""
    memory: MemoryConfig = field(factory=MemoryConfig)
    sub_agents: SubAgentsConfig = field(factory=SubAgentsConfig)
    source: str = ""
    timeout: int = 0  # axe 1.10's run timeout in seconds: gc does not use it, only checks it
    budget: BudgetConfig = field(factory=BudgetConfig)


_MAX_SUB_AGENT_DEPTH = 5


def validate_agent(agent: AgentConfig) -> None:
    """Apply the validation rules of axe-formats.md, each broken one said like a value of the
    wrong type (``memory.last_n: expected an integer >= 0, got -1``).

    Raises:
        ConfigError: a rule is broken.
    """
    memory, sub = agent.memory, agent.sub_agents
    natural = "an integer >= 0"
    depth = ("sub_agents_config.max_depth", f"an integer from 0 to {_MAX_SUB_AGENT_DEPTH}")
    rules: tuple[tuple[bool, str, str, object], ...] = (
        (not agent.display_name.strip(), "name", "a non-empty string", agent.display_name),
        (not agent.model.strip(), "model", "a non-empty string", agent.model),
        (agent.timeout < 0, "timeout", natural, agent.timeout),
        (memory.last_n < 0, "memory.last_n", natural, memory.last_n),
        (memory.max_entries < 0, "memory.max_entries", natural, memory.max_entries),
        (agent.budget.max_tokens < 0, "budget.max_tokens", natural, agent.budget.max_tokens),
        (not 0 <= sub.max_depth <= _MAX_SUB_AGENT_DEPTH, *depth, sub.max_depth),
        (sub.timeout < 0, "sub_agents_config.timeout", natural, sub.timeout),
    )
    problems = [
        f"{key}: expected {expected}, got {quoted(value) if isinstance(value, str) else value}"
        for broken, key, expected, value in rules
        if broken
    ]
    if problems:
        where = agent.source or f"agent {quoted(agent.name)}"
        raise ConfigError(f"invalid config {where}: {'; '.join(problems)}")


def validate_agent_name(name: str) -> None:
    """Refuse names that could address a file outside the agents or memory directory (``axe
    gc ../victim`` must not read or trim someone else's file).

    Raises:
        ConfigError: the name is empty or could escape its directory (exit 2).
    """
    checks = (
        (not name.strip(), "it is blank"),
        (name in {".", ".."}, "it names a directory"),
        (any(c in name for c in ("/", "\\")), "it contains a path separator"),
        (any(ord(c) < 0x20 for c in name), "it contains a control character"),
        (name.startswith("~"), "it starts with ~, which a shell expands to a home directory"),
        (len(name) >= 2 and name[1] == ":", "it starts with a drive letter"),
    )
    if reason := next((reason for failed, reason in checks if failed), ""):
        raise ConfigError(
            f"invalid agent name {quoted(name)}: {reason}; use the file name of an agent in "
            "the agents directory"
        )
