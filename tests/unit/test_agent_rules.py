"""The exact words of each broken agent rule and refused agent name, and the edges of
each range (``tests/unit/test_model.py`` has the rules themselves)."""

from __future__ import annotations

import pytest

from axe.domain.errors import ConfigError
from axe.domain.model import (
    AgentConfig,
    MemoryConfig,
    SubAgentsConfig,
    quoted,
    validate_agent,
    validate_agent_name,
)


def _agent(**changes: object) -> AgentConfig:
    return AgentConfig(**{"name": "a", "model": "x/y", "display_name": "A", **changes})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"timeout": -3}, 'invalid config agent "a": timeout: expected an integer >= 0, got -3'),
        (
            {"sub_agents": SubAgentsConfig(max_depth=-1)},
            'invalid config agent "a": sub_agents_config.max_depth: expected an integer from 0 '
            "to 5, got -1",
        ),
        (
            {"model": " ", "memory": MemoryConfig(last_n=-1, max_entries=-1)},
            'invalid config agent "a": model: expected a non-empty string, got " "; '
            "memory.last_n: expected an integer >= 0, got -1; "
            "memory.max_entries: expected an integer >= 0, got -1",
        ),
        (
            {"source": "/home/u/agents/a.toml", "sub_agents": SubAgentsConfig(timeout=-1)},
            "invalid config /home/u/agents/a.toml: sub_agents_config.timeout: expected an "
            "integer >= 0, got -1",
        ),
    ],
)
def test_a_broken_agent_is_named_with_every_rule_it_breaks(
    changes: dict[str, object], message: str
) -> None:
    """The whole message: the agent's file (else its name), then each broken rule with its
    key, what was expected and the value, joined in one line."""
    with pytest.raises(ConfigError) as caught:
        validate_agent(_agent(**changes))
    assert str(caught.value) == message


def test_values_at_the_edge_of_their_range_are_accepted() -> None:
    """0 everywhere and the deepest nesting allowed are valid settings."""
    validate_agent(
        _agent(
            timeout=0,
            memory=MemoryConfig(last_n=0, max_entries=0),
            sub_agents=SubAgentsConfig(max_depth=5, timeout=0),
        )
    )


_FIX = "; use the file name of an agent in the agents directory"


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("../victim", "it contains a path separator"),
        ("a/b", "it contains a path separator"),
        ("a\\b", "it contains a path separator"),
        ("..", "it names a directory"),
        (".", "it names a directory"),
        ("a\0b", "it contains a control character"),
        ("a\x1fb", "it contains a control character"),
        ("a\nb", "it contains a control character"),
        ("", "it is blank"),
        (" \t", "it is blank"),
        ("~root", "it starts with ~, which a shell expands to a home directory"),
        ("C:x", "it starts with a drive letter"),
        ("C:", "it starts with a drive letter"),
    ],
)
def test_a_refused_name_says_why_in_the_users_terms(name: str, reason: str) -> None:
    """Each way a name could leave its directory has its own reason in the message."""
    with pytest.raises(ConfigError) as caught:
        validate_agent_name(name)
    assert str(caught.value) == f"invalid agent name {quoted(name)}: {reason}{_FIX}"


@pytest.mark.parametrize("name", ["x", "a ", "a~:", "a.", "..a", " a"])
def test_names_near_a_refused_one_are_accepted(name: str) -> None:
    """One character, a space, ~ or : past the start, dots beside a name: all are names."""
    validate_agent_name(name)
