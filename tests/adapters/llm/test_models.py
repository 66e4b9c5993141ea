"""Which models gc can analyse with is decided in one place, the catalogue, the offline
analyst's row included: the same check refuses a ``--model`` up front and an agent's model
when it is used, in the same words."""

from __future__ import annotations

from pathlib import Path

import pytest

from axe.adapters.llm import LLMProviders
from axe.application.ports import AnalysisRequest
from axe.domain.errors import AgentError, ConfigError
from axe.domain.model import ModelRef
from axe.domain.window import Window, WindowSource
from axe.testing import FakeClock

UNSUPPORTED = (
    'unsupported provider "mystery" (supported: anthropic, atlascloud, bedrock, builtin, '
    "edenai, google, minimax, ollama, openai, opencode, openrouter, requesty)"
)
UNKNOWN_BUILTIN = 'unknown builtin model "wizard" (available: heuristic)'


def request(provider: str, name: str) -> AnalysisRequest:
    return AnalysisRequest(
        model=ModelRef(provider, name),
        system_prompt="prompt",
        content=b"## 2026-01-01T00:00:00Z\n**Task:** t\n\n",
        temperature=0.3,
        max_tokens=4096,
    )


@pytest.mark.parametrize(
    ("provider", "name", "message"),
    [("mystery", "x", UNSUPPORTED), ("builtin", "wizard", UNKNOWN_BUILTIN)],
)
def test_a_model_no_row_serves_is_refused_alike_up_front_and_when_used(
    tmp_path: Path, provider: str, name: str, message: str
) -> None:
    """An unknown provider, or a model the offline analyst does not have, is exit 1 in the
    same words whether it is checked before any agent runs or met in an agent's file."""
    llm = LLMProviders({}, config_dir=tmp_path, clock=FakeClock())
    with pytest.raises(AgentError) as checked:
        llm.check(ModelRef(provider, name))
    with pytest.raises(AgentError) as used:
        llm.complete(request(provider, name))
    assert str(checked.value) == str(used.value) == message


def test_checking_a_model_reads_no_configuration(tmp_path: Path) -> None:
    """A --model is checked before config.toml is read: a broken file is said by the run
    that needs it, not by the check."""
    (tmp_path / "config.toml").write_text("[providers.anthropic\n")
    llm = LLMProviders({}, config_dir=tmp_path, clock=FakeClock())
    llm.check(ModelRef("builtin", "heuristic"))
    llm.check(ModelRef("openai", "gpt-4o"))


def test_a_broken_config_toml_is_said_before_an_unknown_builtin_model(tmp_path: Path) -> None:
    """An agent whose model is builtin/wizard, with a config.toml that does not parse, hears
    about the file first (exit 2), as for every other row."""
    (tmp_path / "config.toml").write_text("[providers.anthropic\n")
    with pytest.raises(ConfigError, match=r"config\.toml"):
        LLMProviders({}, config_dir=tmp_path, clock=FakeClock()).complete(
            request("builtin", "wizard")
        )


def test_the_offline_row_answers_without_a_request_or_a_window(tmp_path: Path) -> None:
    """builtin/heuristic writes its report without a request, counts none (--json says
    0) and has no window, so no log is split for it."""
    llm = LLMProviders({}, config_dir=tmp_path, clock=FakeClock())
    completion = llm.complete(request("builtin", "heuristic"))
    assert completion.text.startswith("## Patterns Found")
    assert (completion.sent, completion.usage) == (0, None)
    assert llm.input_limit(request("builtin", "heuristic")) is None


def test_a_run_that_sends_nothing_needs_no_key_and_refuses_an_analysis(tmp_path: Path) -> None:
    """--estimate: the window a keyed provider allows, and Bedrock's with no AWS
    credentials, is known without a key; an analysis is refused, never sent unsigned."""
    environ = {"AWS_REGION": "us-east-1"}
    llm = LLMProviders(environ, config_dir=tmp_path, clock=FakeClock(), sending=False)
    limit = Window(1_000_000, WindowSource.PROVIDER)
    assert llm.input_limit(request("anthropic", "claude-3")) == limit
    assert llm.input_limit(request("bedrock", "anthropic.claude-3")) is None  # none published
    with pytest.raises(AgentError, match="sends nothing"):
        llm.complete(request("anthropic", "claude-3"))


def test_only_the_offline_analyst_spends_no_tokens(tmp_path: Path) -> None:
    """What a budget counts: requests to every provider but the offline analyst, known
    from the catalogue alone (no key, no client built)."""
    llm = LLMProviders({}, config_dir=tmp_path, clock=FakeClock())
    assert llm.charges_tokens(ModelRef("anthropic", "claude-3"))
    assert llm.charges_tokens(ModelRef("ollama", "llama3"))
    assert not llm.charges_tokens(ModelRef("builtin", "heuristic"))
