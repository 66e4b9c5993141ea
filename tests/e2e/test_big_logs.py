"""Logs larger than the model's window, end to end: real ``axe`` processes against
loopback providers that have a context window and answer as the real ones do."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest

from axe.domain.entries import count_entries
from axe.domain.planning import request_tokens
from axe.domain.token_estimate import estimate_tokens
from tests.e2e.loopback import LoopbackLLM, Prompt, loopback_llm
from tests.e2e.loopback import _texts as texts_of
from tests.support import AxeHome, entries
from tests.support import run_installed as axe

WINDOW = 12_000  # holds the 4,096-token reply too, as OpenAI and Ollama count it
ENTRIES = 3600  # about ten windows
MERGED = "## Patterns Found\nmerged\n\n## Repeated Work\nNone.\n\n## Recommendations\nNone."


@pytest.fixture
def server() -> Iterator[LoopbackLLM]:
    with loopback_llm() as llm:
        llm.window = WINDOW
        llm.reply_for = lambda prompt: MERGED if prompt.merge else "part report"
        yield llm


PROVIDERS = {
    "anthropic": {"ANTHROPIC_API_KEY": "k", "model": "anthropic/claude-3"},
    "openai": {"OPENAI_API_KEY": "k", "model": "openai/gpt-4o"},
    "ollama": {"model": "ollama/llama3"},
}


def run_big_log(home: AxeHome, server: LoopbackLLM, provider: str, *args: str):
    settings = dict(PROVIDERS[provider])
    model = settings.pop("model")
    home.add_agent("diary", model=model, last_n=10)
    memory = entries(ENTRIES)
    home.write_memory("diary", memory)
    done = axe(
        home,
        "gc",
        "diary",
        *args,
        environment={**settings, f"AXE_{provider.upper()}_BASE_URL": server.url},
    )
    return done, memory


def parts_of(server: LoopbackLLM) -> list[Prompt]:
    return [p for p in server.analyses if not p.merge]


@pytest.mark.parametrize("provider", ["anthropic", "openai", "ollama"])
def test_a_log_ten_times_the_window_is_analysed_and_trimmed(
    home: AxeHome, server: LoopbackLLM, provider: str
) -> None:
    """Whatever the wire format, a log far beyond the window is analysed in parts, merged,
    printed as one report, and trimmed; stdout has the usual shape."""
    done, _ = run_big_log(home, server, provider)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == (
        f"Agent: diary\nEntries: {ENTRIES}\n--- Analysis ---\n{MERGED}\n"
        f"Trimmed: {ENTRIES - 10} entries removed, 10 entries kept.\n"
    )
    assert home.memory_path("diary").read_bytes() == entries(10, start=ENTRIES - 10)
    parts = parts_of(server)
    assert len(parts) >= 10
    assert sum(count_entries(p.user.encode()) for p in parts) == ENTRIES
    assert any(p.merge for p in server.analyses)


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_after_the_refusal_every_request_fits(
    home: AxeHome, server: LoopbackLLM, provider: str
) -> None:
    """Providers that refuse: one refusal of the whole log, then parts sized from its
    numbers, none refused again."""
    done, _ = run_big_log(home, server, provider)
    assert done.returncode == 0, done.stderr
    refused = [p for p in server.prompts if p.refused]
    assert len(refused) == 1
    assert count_entries(refused[0].user.encode()) == ENTRIES


def test_ollama_is_asked_its_window_once_and_never_truncates(
    home: AxeHome, server: LoopbackLLM
) -> None:
    """Ollama never refuses, it drops text: gc asks /api/show once, splits up front, and
    no request's prompt exceeds num_ctx, nor num_ctx the window."""
    done, _ = run_big_log(home, server, "ollama")
    assert done.returncode == 0, done.stderr
    assert [path for path, _, _ in server.requests].count("/api/show") == 1
    assert server.truncated() == []
    assert all(p.num_ctx is not None and p.num_ctx <= WINDOW for p in server.prompts)


def test_a_small_log_goes_straight_to_ollama_chat(home: AxeHome, server: LoopbackLLM) -> None:
    """A log certainly inside every window is one /api/chat request, nothing else."""
    home.add_agent("small", model="ollama/llama3", last_n=2)
    home.write_memory("small", entries(5))
    done = axe(home, "gc", "small", AXE_OLLAMA_BASE_URL=server.url)
    assert done.returncode == 0, done.stderr
    assert [path for path, _, _ in server.requests] == ["/api/chat"]


def test_max_input_tokens_caps_every_request_so_none_is_refused(
    home: AxeHome, server: LoopbackLLM
) -> None:
    """--max-input-tokens below the window: split up front, not one refused request, and
    every prompt within the cap."""
    done, _ = run_big_log(home, server, "anthropic", "--max-input-tokens", "9000")
    assert done.returncode == 0, done.stderr
    assert not any(p.refused for p in server.prompts)
    assert max(p.tokens for p in server.prompts) <= 9000


def test_the_same_cap_comes_from_the_environment(home: AxeHome, server: LoopbackLLM) -> None:
    """AXE_MAX_INPUT_TOKENS works like the option, for cron lines and wrappers."""
    home.add_agent("diary", last_n=10)
    home.write_memory("diary", entries(ENTRIES))
    done = axe(
        home,
        "gc",
        "diary",
        ANTHROPIC_API_KEY="k",
        AXE_ANTHROPIC_BASE_URL=server.url,
        AXE_MAX_INPUT_TOKENS="9000",
    )
    assert done.returncode == 0, done.stderr
    assert not any(p.refused for p in server.prompts)


def test_json_reports_parts_requests_and_total_usage(home: AxeHome, server: LoopbackLLM) -> None:
    """--json carries how many parts and requests the analysis took, and the usage summed
    over every request."""
    done, _ = run_big_log(home, server, "anthropic", "--json")
    assert done.returncode == 0, done.stderr
    (report,) = [json.loads(line) for line in done.stdout.splitlines()]
    answered = server.analyses
    assert report["parts"] == len(parts_of(server))
    assert report["requests"] == len(server.prompts)
    assert report["usage"]["input_tokens"] == sum(p.tokens for p in answered)


def test_a_part_that_fails_fails_the_agent_and_trims_nothing(
    home: AxeHome, server: LoopbackLLM
) -> None:
    """A part failing after retries: exit 3, one stderr line naming the part, no trim."""
    server.reply_for = None
    server.status = 400  # every answered request fails; refusals still come first
    done, memory = run_big_log(home, server, "anthropic", "--max-input-tokens", "9000")
    assert done.returncode == 3
    (line,) = done.stderr.splitlines()
    assert line.startswith("analysis of part 1 of ")
    assert "anthropic API error (HTTP 400)" in line
    assert home.memory_path("diary").read_bytes() == memory


def test_a_404_inside_a_part_still_says_where_the_model_was_named(
    home: AxeHome, server: LoopbackLLM
) -> None:
    """A model the provider does not know, found by the first part of a
    split log: the line names the part and, as on a log that fits, the file that set it."""
    server.fail_with = (404, "not_found_error", "model: claude-nope")
    path = home.add_agent("diary", model="anthropic/claude-nope", last_n=10)
    home.write_memory("diary", entries(ENTRIES))
    done = axe(
        home,
        "gc",
        "diary",
        "--max-input-tokens",
        "9000",
        ANTHROPIC_API_KEY="k",
        AXE_ANTHROPIC_BASE_URL=server.url,
    )
    assert done.returncode == 3
    assert re.fullmatch(
        r"analysis of part 1 of \d+ failed: anthropic API error \(HTTP 404 not_found_error\): "
        r'model: claude-nope \(model "anthropic/claude-nope" is set in '
        + re.escape(str(path))
        + r"\)\n",
        done.stderr,
    ), done.stderr


# A too-long refusal that cannot be true of what gc sent: each
# provider's real body, answered to every request, for a log of 1.7 KB.

OPENAI_TOO_LONG = {
    "error": {
        "message": (
            "This model's maximum context length is 128000 tokens. However, your messages "
            "resulted in 250123 tokens. Please reduce the length of the messages."
        ),
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    }
}
UNTRUE_REFUSALS = {
    "anthropic": (
        "anthropic/claude-3",
        {"ANTHROPIC_API_KEY": "k"},
        (400, "invalid_request_error", "prompt is too long: 250123 tokens > 200000 maximum"),
        "anthropic API error (HTTP 400 invalid_request_error): prompt is too long: 250123 "
        "tokens > 200000 maximum",
    ),
    "openai": (
        "openai/gpt-4o",
        {"OPENAI_API_KEY": "k"},
        None,
        "openai API error (HTTP 400 context_length_exceeded): This model's maximum context "
        "length is 128000 tokens. However, your messages resulted in 250123 tokens. Please "
        "reduce the length of the messages.",
    ),
    "google": (
        "google/gemini-2.5-flash",
        {"GEMINI_API_KEY": "g-key-0123456789"},
        (
            400,
            "INVALID_ARGUMENT",
            "The input token count (1200293) exceeds the maximum number of tokens allowed "
            "(1048576).",
        ),
        "google API error (HTTP 400 INVALID_ARGUMENT): The input token count (1200293) "
        "exceeds the maximum number of tokens allowed (1048576).",
    ),
    "bedrock": (
        "bedrock/anthropic.claude-3-5-sonnet-20241022-v2:0",
        {
            "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
            "AWS_SECRET_ACCESS_KEY": "s" * 40,
            "AWS_REGION": "us-east-1",
        },
        (400, "ValidationException", "Input is too long for requested model."),
        "bedrock API error (HTTP 400 ValidationException): Input is too long for requested model.",
    ),
}


@pytest.mark.parametrize("provider", list(UNTRUE_REFUSALS))
def test_a_refusal_that_cannot_be_true_stops_early_quoting_the_provider(
    home: AxeHome, server: LoopbackLLM, provider: str
) -> None:
    """A provider answering every request of a 1.7 KB log with its real "too long" body
    (a gateway that counts differently, a misconfigured model): gc stops after at most two
    requests, exit 3, with one line that quotes the provider and says what gc sent; no
    false "window too small" after 11 shrinking requests, and nothing is trimmed."""
    model, environment, failure, said = UNTRUE_REFUSALS[provider]
    if failure is None:
        server.status, server.raw_reply = 400, json.dumps(OPENAI_TOO_LONG).encode()
    else:
        server.fail_with = failure
    memory = entries(22)
    home.add_agent("diary", model=model, last_n=10)
    home.write_memory("diary", memory)
    base = {f"AXE_{provider.upper()}_BASE_URL": server.url}
    done = axe(home, "gc", "diary", environment={**environment, **base})
    assert 1 <= len(server.requests) <= 2
    system, user = sent_texts(server)
    assert (done.returncode, done.stdout) == (3, "Agent: diary\nEntries: 22\n")
    assert done.stderr == (
        f"{said} (gc sent {len(user.encode()):,} bytes beside its instructions: about "
        f"{request_tokens(system, estimate_tokens(user.encode())).most:,} tokens by its own estimate, which errs high; "
        "sending less would not help, so gc stopped: check the model, its window and any "
        "gateway in between, or use --model builtin/heuristic)\n"
    )
    assert home.memory_path("diary").read_bytes() == memory


def sent_texts(server: LoopbackLLM) -> tuple[str, str]:
    """The system prompt and the user message of the last request, in any wire format."""
    path, _, body = server.requests[-1]
    system, user, _ = texts_of(path, json.loads(body))
    return system, user
