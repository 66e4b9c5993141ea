"""One AgentRepository contract, held by the TOML repository and by the fake alike."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

import pytest

from axe.adapters.agents.repository import TomlAgentRepository
from axe.application.ports import AgentRepository
from axe.domain.errors import ConfigError
from axe.domain.model import AgentConfig
from axe.testing import FakeAgentRepository, make_agent
from tests.support import agent_toml

AGENTS = [
    make_agent("zeta", last_n=3, model="openai/gpt-4o"),
    make_agent("alpha", enabled=False),
    make_agent("mid", max_entries=7, model="ollama/llama3"),
]


class RepositoryFactory(Protocol):
    def __call__(self, *agents: AgentConfig) -> AgentRepository: ...


def toml_repository(tmp_path: Path) -> RepositoryFactory:
    def build(*agents: AgentConfig) -> AgentRepository:
        directory = tmp_path / "agents"
        directory.mkdir(exist_ok=True)
        for agent in agents:
            text = agent_toml(
                name=agent.name,
                model=agent.model,
                enabled=agent.memory.enabled,
                last_n=agent.memory.last_n,
                max_entries=agent.memory.max_entries,
            )
            (directory / f"{agent.name}.toml").write_text(text)
        return TomlAgentRepository([directory])

    return build


@pytest.fixture(params=["toml", "fake"])
def repository(request: pytest.FixtureRequest, tmp_path: Path) -> RepositoryFactory:
    if request.param == "toml":
        return toml_repository(tmp_path)
    return FakeAgentRepository


def test_names_are_listed_in_name_order(repository: RepositoryFactory) -> None:
    """--all visits agents by name, whatever order they were written in."""
    assert repository(*AGENTS).list_names() == ["alpha", "mid", "zeta"]


def test_no_agents_lists_nothing(repository: RepositoryFactory) -> None:
    """An empty repository is an empty list, not an error."""
    assert repository().list_names() == []


def test_an_agent_loads_with_the_settings_gc_uses(repository: RepositoryFactory) -> None:
    """Name, model and memory settings come back as written."""
    loaded = repository(*AGENTS).load("mid")
    assert (loaded.name, loaded.model, loaded.memory) == ("mid", "ollama/llama3", AGENTS[2].memory)


def test_an_unknown_agent_is_a_config_error_naming_it(repository: RepositoryFactory) -> None:
    """Asking for an agent that does not exist is exit 2, and the message says which."""
    with pytest.raises(ConfigError, match='agent "ghost" not found'):
        repository(*AGENTS).load("ghost")
