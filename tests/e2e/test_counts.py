"""What providers tell for free, end to end: the installed ``axe`` against loopback providers
that count with a real tokenizer (o200k_base) at their own count endpoints, refuse those
endpoints as a gateway or an old server does, and tell (or keep) the model's window."""

from __future__ import annotations

import json
from collections.abc import Iterator
from subprocess import CompletedProcess

import pytest

from tests.e2e.loopback import LoopbackLLM, loopback_llm
from tests.support import AxeHome, entries
from tests.support import run_installed as axe

AWS = {"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "s" * 40}
COUNTING = {
    "anthropic/claude-3": {"ANTHROPIC_API_KEY": "k"},
    "openai/gpt-4o": {"OPENAI_API_KEY": "k"},
    "google/gemini-2.5-flash": {"GEMINI_API_KEY": "k"},
    "bedrock/anthropic.claude-3-haiku-20240307-v1:0": {**AWS, "AWS_REGION": "eu-west-1"},
}
NOT_COUNTING = {
    "openrouter/openai/gpt-4o": {"OPENROUTER_API_KEY": "k"},
    "ollama/llama3": {},
    "minimax/MiniMax-M2": {"MINIMAX_API_KEY": "k"},
}


@pytest.fixture
def server() -> Iterator[LoopbackLLM]:
    with loopback_llm() as llm:
        llm.reply_for = lambda _prompt: "## Patterns Found\nnone"  # usage counted too
        yield llm


def gc(
    home: AxeHome, server: LoopbackLLM, model: str, *args: str, log: int = 300
) -> CompletedProcess[str]:
    """``axe gc diary`` on a log of ``log`` entries with ``model``, at the loopback."""
    home.add_agent("diary", model=model, last_n=10)
    home.write_memory("diary", entries(log))
    provider = model.split("/", maxsplit=1)[0]
    environment = {**COUNTING, **NOT_COUNTING}[model]
    base = {f"AXE_{provider.upper()}_BASE_URL": server.url}
    return axe(home, "gc", "diary", *args, environment={**environment, **base})


def estimate(home: AxeHome, server: LoopbackLLM, model: str, *args: str) -> dict[str, object]:
    done = gc(home, server, model, "--estimate", "--json", *args)
    assert done.returncode == 0, done.stderr
    found: dict[str, object] = json.loads(done.stdout)
    return found


@pytest.mark.parametrize("model", COUNTING)
def test_an_estimate_is_the_providers_own_count(
    home: AxeHome, server: LoopbackLLM, model: str
) -> None:
    """--estimate asks the provider to count the request, sends no analysis, and says the
    tokens the real run is then billed for (within 2 %), as the provider's own count."""
    found = estimate(home, server, model)
    assert (server.prompts, found["input_tokens_counted"]) == ([], True)
    (counted,) = server.counts
    assert found["estimated_input_tokens"] == counted.tokens
    real = gc(home, server, model, "--dry-run")
    assert (real.returncode, real.stderr) == (0, "")
    (billed,) = server.prompts
    assert abs(counted.tokens - billed.tokens) <= 0.02 * billed.tokens


@pytest.mark.parametrize("model", [*COUNTING, *NOT_COUNTING])
def test_the_specs_path_asks_for_no_count(home: AxeHome, server: LoopbackLLM, model: str) -> None:
    """No budget and no --estimate: no count is asked; a small log is exactly the one
    request it always was (no window lookup either)."""
    done = gc(home, server, model, log=10)
    assert (done.returncode, done.stderr) == (0, "")
    assert len(server.requests) == len(server.prompts) == 1
    server.requests.clear()
    assert gc(home, server, model, "--dry-run").returncode == 0
    assert server.counts == []


@pytest.mark.parametrize("status", [404, 405, 501, 500])
def test_a_refused_count_endpoint_leaves_gcs_estimate_said_once(
    home: AxeHome, server: LoopbackLLM, status: int
) -> None:
    """A gateway or an old server without the count endpoint (404, 405, 501), or one that
    fails (500): the estimate is gc's own, never below the provider's count, said in one
    line; exit 0."""
    server.count_status = status
    found = estimate(home, server, "anthropic/claude-3")
    assert found["input_tokens_counted"] is False
    assert server.prompts == []
    assert gc(home, server, "anthropic/claude-3", "--dry-run").returncode == 0
    (billed,) = server.prompts
    assert isinstance(found["estimated_input_tokens"], int)
    assert found["estimated_input_tokens"] >= billed.tokens
    done = gc(home, server, "anthropic/claude-3", "--estimate")
    assert done.stderr == (
        f"Warning: anthropic could not count gc's requests (its count "
        f"endpoint answered HTTP {status}); the budget and the estimate rest on gc's own "
        "estimate, which errs high\n"
    )


@pytest.mark.parametrize("model", NOT_COUNTING)
def test_a_provider_without_a_count_is_never_asked(
    home: AxeHome, server: LoopbackLLM, model: str
) -> None:
    """Gateways, Ollama and MiniMax offer no count: --estimate asks none and, as that is
    how those providers always are, says nothing of it (its input line says "at most")."""
    done = gc(home, server, model, "--estimate")
    assert (done.returncode, done.stderr) == (0, "")
    assert "Input tokens: " in done.stdout
    assert "the provider's own count" not in done.stdout
    assert (server.counts, server.prompts) == ([], [])


def test_a_budget_is_planned_on_counts_that_it_does_not_pay_for(
    home: AxeHome, server: LoopbackLLM
) -> None:
    """Under a budget the provider counts what gc may send; the counts are free, so what
    the budget used is the analysis' own usage, within the budget, and `requests` counts
    the analysis alone."""
    done = gc(home, server, "anthropic/claude-3", "--dry-run", "--json", "--max-tokens", "12000")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert server.counts
    (billed,) = server.prompts
    assert result["requests"] == 1  # the counts are not requests of the analysis
    assert result["usage"]["input_tokens"] == billed.tokens
    assert result["budget_used_tokens"] == billed.tokens + result["usage"]["output_tokens"]
    assert result["budget_used_tokens"] <= 12000


def test_bedrocks_count_is_signed(home: AxeHome, server: LoopbackLLM) -> None:
    """Bedrock's count goes to /model/{id}/count-tokens, the id's ':' as %3A, signed for
    bedrock in the region."""
    estimate(home, server, "bedrock/anthropic.claude-3-haiku-20240307-v1:0")
    path, headers, _ = server.requests[0]
    assert path == "/model/anthropic.claude-3-haiku-20240307-v1%3A0/count-tokens"
    assert "/eu-west-1/bedrock/aws4_request" in headers["authorization"]


@pytest.mark.parametrize(
    ("model", "told", "catalogue"),
    [
        ("google/gemini-2.5-flash", 12_000, (2_097_152, "provider")),
        ("openrouter/openai/gpt-4o", 12_000 - 4096, (None, None)),  # the window holds the reply
        ("ollama/llama3", 12_000 - 4096, (None, None)),
    ],
)
def test_a_window_the_provider_tells_is_the_models(
    home: AxeHome,
    server: LoopbackLLM,
    model: str,
    told: int,
    catalogue: tuple[int | None, str | None],
) -> None:
    """Gemini, OpenRouter and Ollama tell the model's window, asked once: the estimate
    gives it as the model's; where the lookup is missing, the catalogue's figure stands."""
    server.window, server.listed = 12_000, ("openai/gpt-4o",)
    found = estimate(home, server, model)
    assert (found["input_window_tokens"], found["input_window_source"]) == (told, "model")
    assert len([path for path, _, _ in server.requests if "count" not in path.lower()]) == 1
    server.tells_window = False
    found = estimate(home, server, model)
    assert (found["input_window_tokens"], found["input_window_source"]) == catalogue
