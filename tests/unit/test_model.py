"""Model references, agent validation and agent-name safety."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from axe.domain.errors import AgentError, ConfigError
from axe.domain.model import (
    AgentConfig,
    BudgetConfig,
    MemoryConfig,
    ModelRef,
    SubAgentsConfig,
    quoted,
    validate_agent,
    validate_agent_name,
)
from axe.domain.safe_text import BIDI_CONTROLS


@pytest.mark.parametrize(
    ("text", "provider", "name"),
    [
        ("anthropic/claude-3", "anthropic", "claude-3"),
        ("ollama/library/qwen:7b", "ollama", "library/qwen:7b"),
        ("builtin/heuristic", "builtin", "heuristic"),
    ],
)
def test_model_splits_at_first_slash(text: str, provider: str, name: str) -> None:
    """A model splits at its first slash, so Ollama names with slashes and tags work."""
    assert ModelRef.parse(text) == ModelRef(provider, name)


@pytest.mark.parametrize("text", ["claude", "/claude", "anthropic/", "", "/"])
def test_malformed_model_is_an_agent_error(text: str) -> None:
    """A model without both a provider and a name is the spec's 'invalid model format' error."""
    with pytest.raises(AgentError) as caught:
        ModelRef.parse(text)
    assert str(caught.value) == f'invalid model format "{text}": expected provider/model-name'


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({"display_name": " "}, 'name: expected a non-empty string, got " "'),
        ({"model": ""}, 'model: expected a non-empty string, got ""'),
        ({"memory": MemoryConfig(last_n=-1)}, "memory.last_n: expected an integer >= 0, got -1"),
        (
            {"memory": MemoryConfig(max_entries=-2)},
            "memory.max_entries: expected an integer >= 0, got -2",
        ),
        (
            {"sub_agents": SubAgentsConfig(max_depth=6)},
            "max_depth: expected an integer from 0 to 5, got 6",
        ),
        ({"sub_agents": SubAgentsConfig(timeout=-1)}, "timeout: expected an integer >= 0, got -1"),
        (
            {"budget": BudgetConfig(max_tokens=-5)},
            "budget.max_tokens: expected an integer >= 0, got -5",
        ),
    ],
)
def test_invalid_agents_are_config_errors(changes: dict[str, object], problem: str) -> None:
    """An agent without a name or model, or with out-of-range settings, is a config error
    that names the key, what was expected and the value."""
    base = {"name": "a", "model": "x/y", "display_name": "A"}
    config = AgentConfig(**{**base, **changes})  # type: ignore[arg-type]
    with pytest.raises(ConfigError) as caught:
        validate_agent(config)
    assert str(caught.value).endswith(problem)
    assert str(caught.value).startswith('invalid config agent "a": ')


@pytest.mark.parametrize(
    "name",
    ["../victim", "a/b", "a\\b", "/etc/passwd", "..", ".", "a\0b", "", "~root", "C:x", "a\nb"],
)
def test_names_that_could_escape_their_directory_are_refused(name: str) -> None:
    """Agent names that could leave their directory (/, .., ~, C:, NUL, newline, ...) are refused."""
    with pytest.raises(ConfigError, match="invalid agent name"):
        validate_agent_name(name)


@pytest.mark.parametrize("name", ["pr-reviewer", "agent.v2", "日本語", "a b"])
def test_ordinary_names_are_accepted(name: str) -> None:
    """Ordinary names (dashes, dots, spaces, non-Latin letters) are accepted as agent names."""
    validate_agent_name(name)


@given(st.text())
def test_quoted_names_are_one_line_and_json_compatible(text: str) -> None:
    """Messages quote names like Go's %q: one line, parseable as JSON, and no control
    character (C0, DEL, C1) or bidirectional override left unescaped."""
    assert json.loads(quoted(text)) == text
    assert not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in quoted(text))
    assert not re.search(f"[{BIDI_CONTROLS}]", quoted(text))


def test_a_name_with_a_bidirectional_override_is_quoted_as_typed() -> None:
    """An agent file named ab<U+202E>gpj.exe is named in messages as it is typed, not as
    a terminal would show it (abexe.jpg) nor with the override silently dropped."""
    assert quoted("ab\u202egpj.exe") == '"ab\\u202egpj.exe"'
