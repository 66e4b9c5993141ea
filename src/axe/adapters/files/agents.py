"""Agent definitions from ``<config dir>/agents/<name>.toml``."""

from __future__ import annotations

import os
from pathlib import Path

from attrs import Factory, define

from axe.adapters.files.toml_values import load_toml, structure
from axe.domain.errors import ConfigError
from axe.domain.model import (
    AgentConfig,
    MemoryConfig,
    Params,
    SubAgentsConfig,
    quoted,
    validate_agent,
    validate_agent_name,
)


@define
class _AgentFile:
    """The agent file's layout; every key the Go axe knows, so their types are checked."""

    name: str = ""
    model: str = ""
    description: str = ""
    system_prompt: str = ""
    skill: str = ""
    files: list[str] = Factory(list)
    workdir: str = ""
    sub_agents: list[str] = Factory(list)
    sub_agents_config: SubAgentsConfig = Factory(SubAgentsConfig)
    memory: MemoryConfig = Factory(MemoryConfig)
    params: Params = Factory(Params)


class TomlAgentRepository:
    """Reads agents from a directory of TOML files; the file name is the agent's name."""

    def __init__(self, agents_dir: Path) -> None:
        self._dir = agents_dir

    def load(self, name: str) -> AgentConfig:
        validate_agent_name(name)
        path = self._dir / f"{name}.toml"
        try:
            document = load_toml(path)
        except FileNotFoundError:
            raise ConfigError(f"agent {quoted(name)} not found (no file {path})") from None
        layout = structure(document, _AgentFile, source=str(path))
        agent = AgentConfig(
            name=name,
            model=layout.model,
            display_name=layout.name,
            memory=layout.memory,
            sub_agents=layout.sub_agents_config,
            source=str(path),
        )
        validate_agent(agent, source=str(path))  # the user fixes a file: name it
        return agent

    def list_names(self) -> list[str]:
        try:
            entries = sorted(os.scandir(self._dir), key=lambda entry: entry.name)
        except FileNotFoundError:
            return []
        except OSError as error:
            raise ConfigError(
                f"cannot list agents in {self._dir}: {error.strerror or error}"
            ) from None
        return [
            entry.name.removesuffix(".toml")
            for entry in entries
            if entry.name.endswith(".toml") and len(entry.name) > len(".toml")
        ]
