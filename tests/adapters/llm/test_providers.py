"""Each provider adapter against respx: request shape, headers, replies, every error class."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest
import respx

from axe.adapters.llm import LLMProviders
from axe.adapters.llm.redaction import display_url, redact
from axe.adapters.llm.settings import ProviderSettings
from axe.adapters.llm.transport import HttpTransport
from axe.adapters.llm.wire.ollama_chat import context_size as ollama_context_size
from axe.application.ports import AnalysisRequest
from axe.domain.errors import ApiError, ConfigError, PromptTooLargeError
from axe.domain.model import ModelRef
from axe.domain.prompt import PATTERN_DETECTION_PROMPT
from axe.domain.results import Completion, Usage
from axe.testing import FakeClock
from tests.adapters.llm.http_clients import client as http_client

KEY = "sk-test-0123456789abcdef"
MEMORY = b"## 2026-02-27T03:15:00Z\n**Task:** Review \xff PR\n\n"
ANTHROPIC_URL = "https://api.anthropic.com/v1/messages"
OPENAI_URL = "https://api.openai.com/v1/chat/completions"
OLLAMA_URL = "http://localhost:11434/api/chat"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(start=1000.0)


def request(model: str = "claude-3", provider: str = "anthropic") -> AnalysisRequest:
    return AnalysisRequest(
        model=ModelRef(provider, model),
        system_prompt=PATTERN_DETECTION_PROMPT,
        content=MEMORY,
        temperature=0.3,
        max_tokens=4096,
    )


def settings(
    key: str = KEY, base_url: str = "", variable: str = "ANTHROPIC_API_KEY"
) -> ProviderSettings:
    return ProviderSettings(api_key=key, base_url=base_url, key_variable=variable)


def sent_json(route: respx.Route, call: int = -1) -> Any:
    return json.loads(route.calls[call].request.content)


ANTHROPIC_OK = {
    "content": [
        {"type": "text", "text": "Part one. "},
        {"type": "tool_use", "id": "x"},
        {"type": "text", "text": "Part two."},
    ]
}


# Anthropic


def test_anthropic_request_shape(mock: respx.MockRouter, transport: HttpTransport) -> None:
    """Anthropic gets the spec's request: key, API version, prompt, whole log, 0.3 and 4096."""
    route = mock.post(ANTHROPIC_URL).respond(200, json=ANTHROPIC_OK)
    http_client("anthropic", transport, settings()).complete(request())
    sent = route.calls.last.request
    assert sent.headers["x-api-key"] == KEY
    assert sent.headers["anthropic-version"] == "2023-06-01"
    assert sent.headers["content-type"] == "application/json"
    assert int(sent.headers["content-length"]) == len(sent.content)
    assert sent_json(route) == {
        "model": "claude-3",
        "max_tokens": 4096,
        "system": PATTERN_DETECTION_PROMPT,
        "messages": [{"role": "user", "content": MEMORY.decode("utf-8", "replace")}],
        "temperature": 0.3,
    }


def test_anthropic_reply_joins_text_blocks(
    mock: respx.MockRouter, transport: HttpTransport
) -> None:
    """An Anthropic reply in several text blocks is one analysis; non-text blocks are left out."""
    mock.post(ANTHROPIC_URL).respond(200, json=ANTHROPIC_OK)
    reply = http_client("anthropic", transport, settings()).complete(request())
    assert reply == Completion("Part one. Part two.")


def test_base_url_override_is_used(mock: respx.MockRouter, transport: HttpTransport) -> None:
    """A configured base URL with a path (a gateway) gets the request; a trailing slash is fine."""
    route = mock.post("http://127.0.0.1:8080/proxy/v1/messages").respond(200, json=ANTHROPIC_OK)
    http_client("anthropic", transport, settings(base_url="http://127.0.0.1:8080/proxy/")).complete(
        request()
    )
    assert route.called


def test_missing_key_fails_before_any_request(
    mock: respx.MockRouter, transport: HttpTransport
) -> None:
    """A missing key fails before anything is sent, naming the variable to set."""
    route = mock.post(ANTHROPIC_URL).respond(200, json=ANTHROPIC_OK)
    with pytest.raises(ApiError) as caught:
        http_client("anthropic", transport, settings(key=""))
    assert str(caught.value) == (
        'API key for provider "anthropic" is not configured '
        "(set ANTHROPIC_API_KEY or add it to config.toml)"
    )
    assert not route.called


# OpenAI


def test_openai_request_shape(mock: respx.MockRouter, transport: HttpTransport) -> None:
    """OpenAI gets a bearer key, the fixed prompt as system message, the log, 0.3 and 4096."""
    route = mock.post(OPENAI_URL).respond(
        200, json={"choices": [{"message": {"content": "report"}}]}
    )
    reply = http_client("openai", transport, settings()).complete(request("gpt-4o", "openai"))
    assert reply == Completion("report")
    assert route.calls.last.request.headers["authorization"] == f"Bearer {KEY}"
    assert sent_json(route) == {
        "model": "gpt-4o",
        "messages": [
            {"role": "system", "content": PATTERN_DETECTION_PROMPT},
            {"role": "user", "content": MEMORY.decode("utf-8", "replace")},
        ],
        "temperature": 0.3,
        "max_tokens": 4096,
    }


@pytest.mark.parametrize(
    "model",
    [
        "o1",
        "o1-mini",
        "o3",
        "o3-mini",
        "o4-mini",
        "gpt-5",
        "gpt-5-mini",
        "openai/gpt-5",
        "openrouter/openai/gpt-5",
        "requesty/openai/o3-mini",
    ],
)
def test_openai_reasoning_models_get_max_completion_tokens_and_no_temperature(
    mock: respx.MockRouter, transport: HttpTransport, model: str
) -> None:
    """o1, o3, o4 and gpt-5 models get max_completion_tokens and no temperature, as they
    need, also when a gateway names them behind its router's prefixes (the last part of the
    name is what counts)."""
    route = mock.post(OPENAI_URL).respond(200, json={"choices": [{"message": {"content": "r"}}]})
    http_client("openai", transport, settings()).complete(request(model, "openai"))
    body = sent_json(route)
    assert body["max_completion_tokens"] == 4096
    assert "max_tokens" not in body
    assert "temperature" not in body


@pytest.mark.parametrize("model", ["gpt-4o", "gpt-4.1-mini", "o1x", "claude-o3", "gpt-5/gpt-4o"])
def test_other_openai_models_are_not_reasoning_models(
    mock: respx.MockRouter, transport: HttpTransport, model: str
) -> None:
    """Only reasoning models are treated so: gpt-4o, o1x or claude-o3 get temperature 0.3
    and max_tokens."""
    route = mock.post(OPENAI_URL).respond(200, json={"choices": [{"message": {"content": "r"}}]})
    http_client("openai", transport, settings()).complete(request(model, "openai"))
    body = sent_json(route)
    assert (body["temperature"], body["max_tokens"]) == (0.3, 4096)
    assert "max_completion_tokens" not in body


@pytest.mark.parametrize(
    ("environ", "config"),
    [
        ({"AXE_OPENAI_REASONING_MODELS": "fast, my-alias"}, ""),
        ({}, '[providers.openai]\nreasoning_models = "my-alias,other"\n'),
    ],
    ids=["variable", "config.toml"],
)
def test_a_gateway_alias_is_a_reasoning_model_when_the_settings_say_so(
    mock: respx.MockRouter, tmp_path: Path, environ: dict[str, str], config: str
) -> None:
    """A reasoning model behind an alias the name cannot tell (a gateway's ``my-alias``) is
    sent as one when AXE_OPENAI_REASONING_MODELS or config.toml's ``reasoning_models``
    (comma-separated) names it; other models are not."""
    (tmp_path / "config.toml").write_text(config)
    route = mock.post(OPENAI_URL).respond(200, json={"choices": [{"message": {"content": "r"}}]})
    llm = LLMProviders({"OPENAI_API_KEY": KEY, **environ}, config_dir=tmp_path, clock=FakeClock())
    llm.complete(request("my-alias", "openai"))
    llm.complete(request("my-alias-2", "openai"))
    llm.close()
    aliased, other = sent_json(route, 0), sent_json(route, 1)
    assert (aliased["max_completion_tokens"], "temperature" in aliased) == (4096, False)
    assert (other["max_tokens"], other["temperature"]) == (4096, 0.3)


def test_openai_null_content_is_an_empty_analysis(
    mock: respx.MockRouter, transport: HttpTransport
) -> None:
    """An OpenAI reply with null content is an empty analysis, not an error (gc-spec §5.3)."""
    mock.post(OPENAI_URL).respond(200, json={"choices": [{"message": {"content": None}}]})
    reply = http_client("openai", transport, settings()).complete(request("gpt-4o", "openai"))
    assert reply == Completion("")


# Ollama


def test_ollama_request_shape_without_key(mock: respx.MockRouter, transport: HttpTransport) -> None:
    """Ollama needs no key: no Authorization header, no streaming, the spec's settings."""
    route = mock.post(OLLAMA_URL).respond(
        200, json={"message": {"role": "assistant", "content": "ok"}}
    )
    reply = http_client("ollama", transport, settings(key="")).complete(request("llama3", "ollama"))
    assert reply == Completion("ok")
    assert "authorization" not in route.calls.last.request.headers
    assert sent_json(route) == {
        "model": "llama3",
        "messages": [
            {"role": "system", "content": PATTERN_DETECTION_PROMPT},
            {"role": "user", "content": MEMORY.decode("utf-8", "replace")},
        ],
        "stream": False,
        "options": {"temperature": 0.3, "num_predict": 4096, "num_ctx": 8192},
    }


def test_ollama_context_grows_with_the_log() -> None:
    """Ollama's context is sized to the whole log, so it never quietly drops the oldest part."""
    big = AnalysisRequest(
        model=ModelRef("ollama", "m"),
        system_prompt="s",
        content=b"x" * 300_000,
        temperature=0.3,
        max_tokens=4096,
    )
    size = ollama_context_size(big)
    assert size % 1024 == 0
    assert size >= 300_000 // 3 + 4096


# token usage


@pytest.mark.parametrize(
    ("provider", "url", "reply", "usage"),
    [
        (
            "anthropic",
            ANTHROPIC_URL,
            {
                "content": [{"type": "text", "text": "r"}],
                "usage": {
                    "input_tokens": 100,
                    "cache_read_input_tokens": 20,
                    "output_tokens": 7,
                },
            },
            Usage(120, 7),
        ),
        (
            "openai",
            OPENAI_URL,
            {
                "choices": [{"message": {"content": "r"}}],
                "usage": {"prompt_tokens": 90, "completion_tokens": 9, "total_tokens": 99},
            },
            Usage(90, 9),
        ),
        (
            "ollama",
            OLLAMA_URL,
            {"message": {"content": "r"}, "prompt_eval_count": 80, "eval_count": 8},
            Usage(80, 8),
        ),
        ("ollama", OLLAMA_URL, {"message": {"content": "r"}, "eval_count": "8"}, None),
    ],
)
def test_usage_is_read_from_each_providers_reply(
    mock: respx.MockRouter,
    transport: HttpTransport,
    provider: str,
    url: str,
    reply: dict[str, Any],
    usage: Usage | None,
) -> None:
    """Each wire format's token counts become the same Usage; odd or missing ones, None."""
    mock.post(url).respond(200, json=reply)
    completion = http_client(provider, transport, settings()).complete(request("m", provider))
    assert completion == Completion("r", usage)


# replies that are not what they should be


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (
            httpx.Response(200, text="<html><body>Gateway</body></html>"),
            "anthropic returned a reply that is not JSON: an HTML page",
        ),
        (
            httpx.Response(200, text='{"content": [{"type": "te'),
            "anthropic returned a reply that is not JSON",
        ),
        (
            httpx.Response(200, json={"content": "text"}),
            "anthropic returned a reply that is not the expected JSON: 'content' is not a list",
        ),
        (
            httpx.Response(200, json=[1, 2]),
            "anthropic returned a reply that is not the expected JSON",
        ),
        (
            httpx.Response(200, json={"content": [{"type": "text"}]}),
            "anthropic returned a reply that is not the expected JSON: a text block without text",
        ),
    ],
)
def test_garbage_replies_are_api_errors(
    mock: respx.MockRouter, transport: HttpTransport, reply: httpx.Response, message: str
) -> None:
    """HTML, truncated or misshapen replies are API errors (exit 3) saying what is wrong."""
    mock.post(ANTHROPIC_URL).mock(return_value=reply)
    with pytest.raises(ApiError) as caught:
        http_client("anthropic", transport, settings()).complete(request())
    assert str(caught.value).startswith(message)


def test_openai_without_choices_is_an_api_error(
    mock: respx.MockRouter, transport: HttpTransport
) -> None:
    """An OpenAI reply without choices is an API error, not an empty analysis."""
    mock.post(OPENAI_URL).respond(200, json={"choices": []})
    with pytest.raises(ApiError, match="no choices"):
        http_client("openai", transport, settings()).complete(request("gpt-4o", "openai"))


def test_ollama_error_body(mock: respx.MockRouter, transport: HttpTransport) -> None:
    """Ollama's own error message (such as model not found) is shown with the HTTP status."""
    mock.post(OLLAMA_URL).respond(404, json={"error": "model 'nope' not found"})
    with pytest.raises(ApiError) as caught:
        http_client("ollama", transport, settings(key="")).complete(request("nope", "ollama"))
    assert str(caught.value) == "ollama API error (HTTP 404): model 'nope' not found"


# HTTP errors, retries, time


def test_auth_error_is_not_retried(
    mock: respx.MockRouter, transport: HttpTransport, clock: FakeClock
) -> None:
    """A rejected key is reported at once in the provider's words: no retries, no waiting."""
    route = mock.post(ANTHROPIC_URL).respond(
        401,
        json={
            "type": "error",
            "error": {"type": "authentication_error", "message": "invalid x-api-key"},
        },
    )
    with pytest.raises(ApiError) as caught:
        http_client("anthropic", transport, settings()).complete(request())
    assert (
        str(caught.value)
        == "anthropic API error (HTTP 401 authentication_error): invalid x-api-key"
    )
    assert route.call_count == 1
    assert clock.slept == []


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_client_errors_are_never_retried(
    mock: respx.MockRouter, transport: HttpTransport, status: int
) -> None:
    """400, 401, 403, 404 and 422 are sent once: repeating the same request could not succeed."""
    route = mock.post(ANTHROPIC_URL).respond(status, json={"error": {"type": "x", "message": "no"}})
    with pytest.raises(ApiError):
        http_client("anthropic", transport, settings()).complete(request())
    assert route.call_count == 1


@pytest.mark.parametrize("status", [408, 409, 429, 500, 502, 503, 529])
def test_transient_errors_are_retried_twice_with_backoff(
    mock: respx.MockRouter, transport: HttpTransport, clock: FakeClock, status: int
) -> None:
    """Busy or failing servers (408, 409, 429, 5xx, 529) get two retries, 0.5 s then 1 s apart."""
    route = mock.post(ANTHROPIC_URL).respond(
        status, json={"error": {"type": "overloaded_error", "message": "busy"}}
    )
    with pytest.raises(ApiError, match=f"HTTP {status} overloaded_error"):
        http_client("anthropic", transport, settings()).complete(request())
    assert route.call_count == 3
    assert clock.slept == [0.5, 1.0]


def test_retry_succeeds_after_a_transient_error(
    mock: respx.MockRouter, transport: HttpTransport
) -> None:
    """One 503 does not fail the run: the retry's reply is the analysis."""
    mock.post(ANTHROPIC_URL).mock(
        side_effect=[httpx.Response(503), httpx.Response(200, json=ANTHROPIC_OK)]
    )
    reply = http_client("anthropic", transport, settings()).complete(request())
    assert reply == Completion("Part one. Part two.", sent=2)


@pytest.mark.parametrize("budgeted", [False, True])
def test_under_a_budget_an_unanswered_attempt_is_not_tried_again(
    mock: respx.MockRouter, transport: HttpTransport, budgeted: bool
) -> None:
    """A connection that broke after the request went out may have been billed: under a
    token budget (retry_unanswered False) it is not sent again, so the spending cannot pass
    the budget; without one it is retried. An error reply (503), which is not billed, is
    retried either way."""
    disconnected = httpx.RemoteProtocolError("Server disconnected without sending a response.")
    route = mock.post(ANTHROPIC_URL).mock(
        side_effect=[httpx.Response(503), disconnected, httpx.Response(200, json=ANTHROPIC_OK)]
    )
    client = http_client("anthropic", transport, settings())
    asked = attrs.evolve(request(), retry_unanswered=not budgeted)
    if budgeted:
        with pytest.raises(ApiError, match="Server disconnected") as caught:
            client.complete(asked)
        assert (route.call_count, caught.value.sent) == (2, 2)
    else:
        assert client.complete(asked) == Completion("Part one. Part two.", sent=3)


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after": "3"}, 3.0),
        ({"retry-after-ms": "1500"}, 1.5),
        ({"retry-after": "60"}, 60.0),
        ({"retry-after": "Thu, 01 Jan 1970 00:16:43 GMT"}, 3.0),  # the clock says 1000 s
    ],
)
def test_server_retry_delays_are_honoured_up_to_a_minute(
    mock: respx.MockRouter,
    transport: HttpTransport,
    clock: FakeClock,
    headers: dict[str, str],
    expected: float,
) -> None:
    """retry-after (seconds, or an HTTP date on the run's clock) and retry-after-ms are
    obeyed up to a minute (a longer wait is given up at once: see the next test)."""
    mock.post(ANTHROPIC_URL).mock(
        side_effect=[httpx.Response(429, headers=headers), httpx.Response(200, json=ANTHROPIC_OK)]
    )
    http_client("anthropic", transport, settings()).complete(request())
    assert clock.slept == [expected]


def test_giving_up_on_a_long_retry_after_says_how_long_was_asked(
    mock: respx.MockRouter, transport: HttpTransport, clock: FakeClock
) -> None:
    """A rate limit asking for an hour is given up at once, without more requests into the
    limit, and the error says the provider asked for an hour, longer than gc waits, so the
    user knows why gc gave up and to come back later."""
    route = mock.post(ANTHROPIC_URL).respond(
        429,
        headers={"retry-after": "3600"},
        json={"error": {"type": "rate_limit_error", "message": "slow down"}},
    )
    with pytest.raises(ApiError) as caught:
        http_client("anthropic", transport, settings()).complete(request())
    assert str(caught.value) == (
        "anthropic API error (HTTP 429 rate_limit_error): slow down (the provider asked to "
        "wait 3600s before trying again; gc waits at most 60s)"
    )
    assert (clock.slept, route.call_count, caught.value.sent) == ([], 1, 1)


def test_a_wait_asked_beside_an_error_no_wait_mends_is_not_mentioned(
    mock: respx.MockRouter, transport: HttpTransport
) -> None:
    """A rejected key (401) that also says retry-after is not retried, and its line does not
    speak of a wait gc will never make."""
    mock.post(ANTHROPIC_URL).respond(
        401, headers={"retry-after": "1"}, json={"error": {"message": "invalid x-api-key"}}
    )
    with pytest.raises(ApiError) as caught:
        http_client("anthropic", transport, settings()).complete(request())
    assert str(caught.value) == "anthropic API error (HTTP 401): invalid x-api-key"


def test_a_refusal_with_a_retry_after_is_still_a_refusal(
    mock: respx.MockRouter, transport: HttpTransport
) -> None:
    """A 413 that also says retry-after stays a "too large" refusal, so the log is split
    rather than the agent failed; no wait is mentioned, as none would mend it."""
    mock.post(ANTHROPIC_URL).respond(
        413, headers={"retry-after": "30"}, json={"error": {"message": "Request too large"}}
    )
    with pytest.raises(PromptTooLargeError) as caught:
        http_client("anthropic", transport, settings()).complete(request())
    assert str(caught.value) == "anthropic API error (HTTP 413): Request too large"


def test_x_should_retry_false_stops_retries(
    mock: respx.MockRouter, transport: HttpTransport
) -> None:
    """A server that answers x-should-retry: false is believed: the request is sent once."""
    route = mock.post(ANTHROPIC_URL).respond(500, headers={"x-should-retry": "false"})
    with pytest.raises(ApiError):
        http_client("anthropic", transport, settings()).complete(request())
    assert route.call_count == 1


def test_spend_limit_429_is_not_retried(mock: respx.MockRouter, transport: HttpTransport) -> None:
    """A 429 for an exhausted quota is reported at once: retrying cannot refill it."""
    route = mock.post(OPENAI_URL).respond(
        429,
        json={
            "error": {"type": "insufficient_quota", "message": "You exceeded your current quota"}
        },
    )
    with pytest.raises(ApiError, match="insufficient_quota"):
        http_client("openai", transport, settings()).complete(request("gpt-4o", "openai"))
    assert route.call_count == 1


def test_connection_refused(mock: respx.MockRouter, transport: HttpTransport) -> None:
    """A provider that is not running is one line naming it and its URL, after two retries."""
    route = mock.post(OLLAMA_URL).mock(
        side_effect=httpx.ConnectError("[Errno 111] Connection refused")
    )
    with pytest.raises(ApiError) as caught:
        http_client("ollama", transport, settings(key="")).complete(request("m", "ollama"))
    assert (
        str(caught.value)
        == "cannot reach ollama at http://localhost:11434/api/chat: connection refused "
        "(after 2 retries)"
    )
    assert route.call_count == 3


def test_timeout(mock: respx.MockRouter, transport: HttpTransport) -> None:
    """A request that times out says so, with the provider, its URL and the time limit."""
    mock.post(ANTHROPIC_URL).mock(side_effect=httpx.ReadTimeout("timed out"))
    with pytest.raises(ApiError) as caught:
        http_client("anthropic", transport, settings()).complete(request())
    assert (
        str(caught.value)
        == f"request to anthropic at {ANTHROPIC_URL} timed out after 120s (after 2 retries)"
    )


def test_no_retry_once_the_deadline_would_pass(
    mock: respx.MockRouter, transport: HttpTransport, clock: FakeClock
) -> None:
    """No retry starts that the 120 s deadline would cut short; the last error is reported."""

    def slow_failure(_: httpx.Request) -> httpx.Response:
        clock.time += 119.8
        return httpx.Response(503)

    route = mock.post(ANTHROPIC_URL).mock(side_effect=slow_failure)
    with pytest.raises(ApiError, match="HTTP 503"):
        http_client("anthropic", transport, settings()).complete(request())
    assert route.call_count == 1
    assert clock.slept == []


def test_redirects_are_not_followed(mock: respx.MockRouter, transport: HttpTransport) -> None:
    """A redirect is never followed, so the key and the log never go to another host."""
    route = mock.post(ANTHROPIC_URL).respond(
        307, headers={"location": "https://evil.example/steal"}
    )
    other = mock.post("https://evil.example/steal").respond(200, json=ANTHROPIC_OK)
    with pytest.raises(ApiError) as caught:
        http_client("anthropic", transport, settings()).complete(request())
    assert "redirect to https://evil.example/steal" in str(caught.value)
    assert route.call_count == 1
    assert not other.called


def test_a_redirect_to_no_url_is_said_once_and_not_retried(
    mock: respx.MockRouter, transport: HttpTransport
) -> None:
    """A redirect whose location is no URL is the provider's answer, given up at once."""
    route = mock.post(ANTHROPIC_URL).respond(302, headers={"location": "http://[::1"})
    with pytest.raises(ApiError) as caught:
        http_client("anthropic", transport, settings()).complete(request())
    assert str(caught.value) == (
        "anthropic answered HTTP 302 (redirect to an invalid URL); redirects are not followed, "
        "check the base URL"
    )
    assert route.call_count == 1


@pytest.mark.parametrize(
    ("url", "provider", "reply", "tokens", "limit"),
    [
        (
            ANTHROPIC_URL,
            "anthropic",
            httpx.Response(
                400,
                json={
                    "type": "error",
                    "error": {
                        "type": "invalid_request_error",
                        "message": "prompt is too long: 212230 tokens > 200000 maximum",
                    },
                },
            ),
            212230,
            200000,
        ),
        (
            ANTHROPIC_URL,
            "anthropic",
            httpx.Response(
                400,
                json={
                    "error": {
                        "type": "invalid_request_error",
                        "message": "input length and `max_tokens` exceed context limit: "
                        "197626 + 4096 > 200000, decrease input length or `max_tokens` and "
                        "try again",
                    }
                },
            ),
            197626,
            195904,
        ),
        (
            OPENAI_URL,
            "openai",
            httpx.Response(
                400,
                json={
                    "error": {
                        "message": "This model's maximum context length is 128000 tokens. "
                        "However, your messages resulted in 130000 tokens. Please reduce the "
                        "length of the messages.",
                        "type": "invalid_request_error",
                        "param": "messages",
                        "code": "context_length_exceeded",
                    }
                },
            ),
            130000,
            128000 - 4096,
        ),
        (
            OPENAI_URL,
            "openai",
            httpx.Response(
                400,
                json={
                    "error": {
                        "message": "This model's maximum context length is 8192 tokens. "
                        "However, you requested 9100 tokens (9000 in the messages, 100 in the "
                        "completion). Please reduce the length of the messages or completion.",
                        "type": "invalid_request_error",
                        "code": "context_length_exceeded",
                    }
                },
            ),
            9000,
            8092,
        ),
        (
            OPENAI_URL,
            "openai",
            httpx.Response(
                400,
                json={
                    "error": {
                        "message": "Your input exceeds the context window of this model.",
                        "type": "invalid_request_error",
                        "code": "context_length_exceeded",
                    }
                },
            ),
            None,
            None,
        ),
        (
            ANTHROPIC_URL,
            "anthropic",
            httpx.Response(
                413,
                json={"error": {"type": "request_too_large", "message": "Request exceeds size"}},
            ),
            None,
            None,
        ),
    ],
    ids=["anthropic", "anthropic-window", "openai", "openai-completion", "openai-bare", "413"],
)
def test_a_prompt_too_long_is_recognised_with_its_numbers(
    mock: respx.MockRouter,
    transport: HttpTransport,
    url: str,
    provider: str,
    reply: httpx.Response,
    tokens: int | None,
    limit: int | None,
) -> None:
    """Each provider's "too long" refusal is told apart from other errors, with the prompt's
    size and the room for input when the provider says them, and is not retried."""
    route = mock.post(url).mock(return_value=reply)
    with pytest.raises(PromptTooLargeError) as caught:
        http_client(provider, transport, settings()).complete(request("m", provider))
    assert (caught.value.tokens, caught.value.limit) == (tokens, limit)
    assert str(caught.value).startswith(f"{provider} API error (HTTP {reply.status_code} ")
    assert route.call_count == 1


def test_other_bad_requests_are_not_taken_for_too_long(
    mock: respx.MockRouter, transport: HttpTransport
) -> None:
    """A 400 about something else stays an ordinary API error: nothing gets split for it."""
    mock.post(ANTHROPIC_URL).respond(
        400, json={"error": {"type": "invalid_request_error", "message": "temperature: 9 > 1"}}
    )
    with pytest.raises(ApiError) as caught:
        http_client("anthropic", transport, settings()).complete(request())
    assert not isinstance(caught.value, PromptTooLargeError)


def test_the_key_never_appears_in_an_error(
    mock: respx.MockRouter, transport: HttpTransport
) -> None:
    """A key the provider echoes in its error is printed as [redacted], never as itself."""
    mock.post(OPENAI_URL).respond(
        401,
        json={
            "error": {"type": "invalid_api_key", "message": f"Incorrect API key provided: {KEY}"}
        },
    )
    with pytest.raises(ApiError) as caught:
        http_client("openai", transport, settings()).complete(request("gpt-4o", "openai"))
    assert KEY not in str(caught.value)
    assert "[redacted]" in str(caught.value)


def test_credentials_in_the_base_url_are_not_printed(
    mock: respx.MockRouter, transport: HttpTransport
) -> None:
    """A password in the base URL is never printed; the URL is still shown without it."""
    mock.post("http://proxy.example/api/chat").mock(side_effect=httpx.ConnectError("refused"))
    with pytest.raises(ApiError) as caught:
        http_client(
            "ollama", transport, settings(key="", base_url="http://user:hunter2@proxy.example")
        ).complete(request("m", "ollama"))
    assert "hunter2" not in str(caught.value)
    assert "http://proxy.example/api/chat" in str(caught.value)


def test_credentials_in_the_base_url_are_sent_as_basic_auth_and_never_echoed(
    mock: respx.MockRouter, transport: HttpTransport
) -> None:
    """An Ollama behind a proxy that asks for a password gets it, from the base URL, as
    httpx's client and the Go axe send it; a refusal that echoes it shows neither the
    password nor the header made of it."""
    token = "dXNlcjpodW50ZXIy"  # base64 of user:hunter2
    route = mock.post("http://proxy.example/api/chat").mock(
        side_effect=[
            httpx.Response(200, json={"message": {"content": "ok"}}),
            httpx.Response(401, json={"error": f"wrong password hunter2 (Basic {token})"}),
        ]
    )
    client = http_client(
        "ollama", transport, settings(key="", base_url="http://user:hunter2@proxy.example")
    )
    assert client.complete(request("m", "ollama")).text == "ok"
    with pytest.raises(ApiError) as caught:
        client.complete(request("m", "ollama"))
    assert route.calls[0].request.headers["authorization"] == f"Basic {token}"
    assert str(caught.value) == (
        "ollama API error (HTTP 401): wrong password [redacted] (Basic [redacted])"
    )


def test_any_key_the_run_can_see_is_never_echoed_nor_a_key_in_the_base_urls_query(
    mock: respx.MockRouter, tmp_path: Path
) -> None:
    """A gateway that echoes another provider's key (from the environment or config.toml)
    or the key its base URL carries as a query value does not get any of them printed."""
    (tmp_path / "config.toml").write_text('[providers.groq]\napi_key = "gsk-file-0123456789"\n')
    url = "https://gw.example/v1/chat/completions?api-key=QSECRET123"
    said = f"keys {KEY} gsk-file-0123456789 QSECRET123 (bad) {KEY[:6]}"
    mock.post(url).respond(401, json={"error": {"message": said}})
    environ = {"OPENAI_API_KEY": "sk-own-9876543210", "ANTHROPIC_API_KEY": KEY}
    environ["AXE_OPENAI_BASE_URL"] = "https://gw.example/v1?api-key=QSECRET123"
    llm = LLMProviders(environ, config_dir=tmp_path, clock=FakeClock())
    with pytest.raises(ApiError) as caught:
        llm.complete(request("gpt-4o", "openai"))
    llm.close()
    assert str(caught.value) == (
        "openai API error (HTTP 401): keys [redacted] [redacted] [redacted] (bad) sk-tes (key from "
        "OPENAI_API_KEY)"
    )


def test_a_placeholder_key_and_a_query_that_is_no_credential_stay_in_messages(
    mock: respx.MockRouter, tmp_path: Path
) -> None:
    """Another provider's placeholder key (OPENAI_API_KEY=ollama, as Ollama's docs show) and
    a query value that is no credential (?api-version=) are not hidden: hiding them would
    garble the words of the message."""
    mock.post(OLLAMA_URL).respond(404, json={"error": "model 'm' not found"})
    url = "https://gw.example/v1/chat/completions?api-version=2024-10-21"
    mock.post(url).respond(400, json={"error": {"message": "unsupported api-version 2024-10-21"}})
    environ = {"OPENAI_API_KEY": "ollama", "AXE_ANTHROPIC_BASE_URL": "http://x"}
    llm = LLMProviders(environ, config_dir=tmp_path, clock=FakeClock())
    with pytest.raises(ApiError) as caught:
        llm.complete(request("m", "ollama"))
    assert str(caught.value) == "ollama API error (HTTP 404): model 'm' not found"
    environ = {
        "OPENAI_API_KEY": KEY,
        "AXE_OPENAI_BASE_URL": "https://gw.example/v1?api-version=2024-10-21",
    }
    llm = LLMProviders(environ, config_dir=tmp_path, clock=FakeClock())
    with pytest.raises(ApiError) as caught:
        llm.complete(request("gpt-4o", "openai"))
    llm.close()
    assert str(caught.value) == "openai API error (HTTP 400): unsupported api-version 2024-10-21"


@pytest.mark.parametrize(
    ("provider", "base_url"),
    [
        ("ollama", "ftp://proxy.example"),
        ("ollama", "localhost:11434"),
        ("ollama", "http://[::1"),
        ("openai", "http://[::1"),
        ("ollama", "http://"),  # AXE_OLLAMA_BASE_URL="http://$HOST" with HOST unset
        ("openai", "https:///v1"),
    ],
)
@pytest.mark.parametrize("proxy", [None, "http://127.0.0.1:9"])
def test_unusable_base_url_is_a_config_error_without_retries(
    transport: HttpTransport,
    clock: FakeClock,
    monkeypatch: pytest.MonkeyPatch,
    provider: str,
    base_url: str,
    proxy: str | None,
) -> None:
    """A base URL without an http(s) scheme or a host, or that is no URL at all (an
    unclosed IPv6 bracket), is a config error at once, with no retries, never an internal
    error nor a request to a proxy."""
    if proxy:
        monkeypatch.setenv("ALL_PROXY", proxy)
    with pytest.raises(ConfigError, match=f"invalid base URL for {provider}"):
        http_client(provider, transport, settings(base_url=base_url)).complete(
            request("m", provider)
        )
    assert clock.slept == []


# what can be a secret, where it stands as a token


@pytest.mark.parametrize(
    ("secret", "text", "shown"),
    [
        ("e", "ollama answered HTTP 302 (redirect)", "ollama answered HTTP 302 (redirect)"),
        ("k", "bad key k.", "bad key [redacted]."),
        (
            "sk-test-1",
            "Incorrect API key provided: sk-test-1.",
            "Incorrect API key provided: [redacted].",
        ),
        ("sk-test-1", '{"key": "sk-test-1"}', '{"key": "[redacted]"}'),
        ("sk-test-1", "GET /v1?key=sk-test-1&x=2", "GET /v1?key=[redacted]&x=2"),
        ("sk-test-1", "key_sk-test-1 was refused", "key_[redacted] was refused"),
        ("sk-test-1", "Bearersk-test-1", "Bearer[redacted]"),
        ("sk-test-1", "sk-test-1_suffix", "[redacted]_suffix"),
        ("sk-test-1", "sk-test-10 holds the key", "[redacted]0 holds the key"),
        ("none", "nonetheless none", "nonetheless [redacted]"),
        ("p@ss!", "proxy said p@ss!word", "proxy said [redacted]word"),
    ],
)
def test_a_secret_is_hidden_as_a_token_and_words_are_left_whole(
    secret: str, text: str, shown: str
) -> None:
    """A key is never printed, glued to other words included; only a placeholder too
    short to be a real key (under 8 characters) is matched as a token of its own, so it
    never eats ordinary words."""
    assert redact(text, secret) == shown


def test_a_placeholder_key_leaves_error_messages_readable(
    mock: respx.MockRouter, transport: HttpTransport
) -> None:
    """With a key such as 'e' (common with local OpenAI-compatible servers) every error
    still reads as written."""
    mock.post(OPENAI_URL).respond(
        401, json={"error": {"type": "invalid_request_error", "message": "key e was rejected"}}
    )
    with pytest.raises(ApiError) as caught:
        http_client("openai", transport, settings(key="e")).complete(request("gpt-4o", "openai"))
    assert str(caught.value) == (
        "openai API error (HTTP 401 invalid_request_error): key [redacted] was rejected"
    )


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (
            "http://user:hunter2@proxy.example:8080/api/chat?x=1",
            "http://proxy.example:8080/api/chat",
        ),
        ("http://[::1]:11434/api/chat", "http://[::1]:11434/api/chat"),
        ("http://localhost:abc/api/chat", "http://localhost:abc/api/chat"),
    ],
)
def test_urls_are_shown_without_credentials_and_as_written(url: str, shown: str) -> None:
    """Printed URLs drop credentials and queries, keep IPv6 brackets, and never crash on a
    malformed port."""
    assert display_url(url) == shown


def test_a_malformed_port_in_a_base_url_is_a_config_error(transport: HttpTransport) -> None:
    """AXE_OLLAMA_BASE_URL=http://localhost:abc is exit 2 with one line, not a traceback."""
    with pytest.raises(ConfigError) as caught:
        http_client(
            "ollama", transport, settings(key="", base_url="http://localhost:abc")
        ).complete(request("m", "ollama"))
    assert str(caught.value).startswith(
        "invalid base URL for ollama (http://localhost:abc/api/chat): "
    )


def test_a_reply_larger_than_32_mib_is_refused_once(
    mock: respx.MockRouter, transport: HttpTransport
) -> None:
    """A reply over 32 MiB (a misrouted download) is one API error line, not read whole
    and not asked for again."""
    route = mock.post(ANTHROPIC_URL).respond(200, content=b" " * (32 * 1024 * 1024 + 1))
    with pytest.raises(ApiError) as caught:
        http_client("anthropic", transport, settings()).complete(request())
    assert str(caught.value) == f"reply from {ANTHROPIC_URL} is larger than 33554432 bytes"
    assert route.call_count == 1
