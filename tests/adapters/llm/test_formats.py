"""Every row of the catalogue against respx: where its request goes, how it is
authenticated, the body in its wire format, the reply and usage read back, its "too long"
refusal and its transient errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx

from axe.adapters.llm import wire
from axe.adapters.llm.aws_credentials import AwsCredentials
from axe.adapters.llm.catalogue import CATALOGUE
from axe.adapters.llm.client import HttpLLMClient
from axe.adapters.llm.settings import ProviderSettings, sendable
from axe.adapters.llm.transport import HttpTransport
from axe.application.ports import AnalysisRequest
from axe.domain.errors import ApiError, ConfigError, PromptTooLargeError
from axe.domain.model import ModelRef
from axe.domain.prompt import PATTERN_DETECTION_PROMPT
from axe.domain.results import Completion, Usage
from axe.domain.window import Window, WindowSource
from axe.testing import FakeClock
from tests.e2e.loopback import bad_key_in_format

KEY = "sk-test-0123456789abcdef"
MEMORY = b"## 2026-02-27T03:15:00Z\n**Task:** Review PR\n\n"
LOG = MEMORY.decode()
AWS = AwsCredentials(
    access_key_id="AKIDEXAMPLE",
    secret_access_key="wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
    session_token="FwoGZXIvYXdzEXAMPLESESSIONTOKEN",
    source="AWS_ACCESS_KEY_ID",
)
BEDROCK_MODEL = "anthropic.claude-3-5-sonnet-20241022-v2:0"
BEDROCK_URL = (
    "https://bedrock-runtime.eu-west-1.amazonaws.com/model/"
    "anthropic.claude-3-5-sonnet-20241022-v2%3A0/converse"
)
GEMINI_URL = (
    "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent"
)


def request(provider: str, model: str) -> AnalysisRequest:
    return AnalysisRequest(
        model=ModelRef(provider, model),
        system_prompt=PATTERN_DETECTION_PROMPT,
        content=MEMORY,
        temperature=0.3,
        max_tokens=4096,
    )


def client(
    transport: HttpTransport, provider: str, base_url: str = "", **settings: Any
) -> HttpLLMClient:
    defaults: dict[str, Any] = {"api_key": KEY, "key_variable": "K", "key_source": "K"}
    if provider == "bedrock":
        defaults = {"region": "eu-west-1", "aws": AWS}
    row = CATALOGUE[provider]
    given = ProviderSettings(base_url=base_url, **(defaults | settings))
    return HttpLLMClient(transport, row, sendable(row, given))


def sent(route: respx.Route, call: int = -1) -> Any:
    return json.loads(route.calls[call].request.content)


ANTHROPIC_BODY = {
    "model": "claude-sonnet-4",
    "max_tokens": 4096,
    "system": PATTERN_DETECTION_PROMPT,
    "messages": [{"role": "user", "content": LOG}],
    "temperature": 0.3,
}
CHAT_BODY = {
    "model": "m",
    "messages": [
        {"role": "system", "content": PATTERN_DETECTION_PROMPT},
        {"role": "user", "content": LOG},
    ],
    "temperature": 0.3,
    "max_tokens": 4096,
}
ANTHROPIC_REPLY = {
    "content": [{"type": "text", "text": "report"}],
    "usage": {"input_tokens": 10, "output_tokens": 2},
}
CHAT_REPLY = {
    "choices": [{"message": {"content": "report"}}],
    "usage": {"prompt_tokens": 10, "completion_tokens": 2},
}
RESPONSES_REPLY = {
    "output": [
        {"type": "reasoning", "summary": []},
        {
            "type": "message",
            "role": "assistant",
            "content": [
                {"type": "output_text", "text": "rep"},
                {"type": "output_text", "text": "ort"},
            ],
        },
    ],
    "usage": {"input_tokens": 10, "output_tokens": 2},
}
GEMINI_REPLY = {
    "candidates": [{"content": {"role": "model", "parts": [{"text": "rep"}, {"text": "ort"}]}}],
    "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 2},
}
BEDROCK_REPLY = {
    "output": {"message": {"role": "assistant", "content": [{"text": "rep"}, {"text": "ort"}]}},
    "usage": {"inputTokens": 10, "outputTokens": 2, "totalTokens": 12},
    "stopReason": "end_turn",
}


@pytest.mark.parametrize(
    ("provider", "model", "url", "auth", "body", "reply"),
    [
        (
            "anthropic",
            "claude-sonnet-4",
            "https://api.anthropic.com/v1/messages",
            ("x-api-key", KEY),
            ANTHROPIC_BODY,
            ANTHROPIC_REPLY,
        ),
        (
            "minimax",
            "claude-sonnet-4",
            "https://api.minimax.io/anthropic/v1/messages",
            ("x-api-key", KEY),
            ANTHROPIC_BODY,
            ANTHROPIC_REPLY,
        ),
        (
            "openai",
            "m",
            "https://api.openai.com/v1/chat/completions",
            ("authorization", f"Bearer {KEY}"),
            CHAT_BODY,
            CHAT_REPLY,
        ),
        (
            "openrouter",
            "m",
            "https://openrouter.ai/api/v1/chat/completions",
            ("authorization", f"Bearer {KEY}"),
            CHAT_BODY,
            CHAT_REPLY,
        ),
        (
            "atlascloud",
            "m",
            "https://api.atlascloud.ai/v1/chat/completions",
            ("authorization", f"Bearer {KEY}"),
            CHAT_BODY,
            CHAT_REPLY,
        ),
        (
            "requesty",
            "m",
            "https://router.requesty.ai/v1/chat/completions",
            ("authorization", f"Bearer {KEY}"),
            CHAT_BODY,
            CHAT_REPLY,
        ),
        (
            "edenai",
            "m",
            "https://api.edenai.run/v3/chat/completions",
            ("authorization", f"Bearer {KEY}"),
            CHAT_BODY,
            CHAT_REPLY,
        ),
        (
            "opencode",
            "claude-sonnet-4",
            "https://opencode.ai/zen/v1/messages",
            ("authorization", f"Bearer {KEY}"),
            ANTHROPIC_BODY,
            ANTHROPIC_REPLY,
        ),
        (
            "opencode",
            "gpt-4.1",
            "https://opencode.ai/zen/v1/responses",
            ("authorization", f"Bearer {KEY}"),
            {
                "model": "gpt-4.1",
                "instructions": PATTERN_DETECTION_PROMPT,
                "input": LOG,
                "max_output_tokens": 4096,
                "temperature": 0.3,
            },
            RESPONSES_REPLY,
        ),
        (
            "opencode",
            "m",
            "https://opencode.ai/zen/v1/chat/completions",
            ("authorization", f"Bearer {KEY}"),
            CHAT_BODY,
            CHAT_REPLY,
        ),
        (
            "google",
            "gemini-2.5-flash",
            GEMINI_URL,
            ("x-goog-api-key", KEY),
            {
                "system_instruction": {"parts": [{"text": PATTERN_DETECTION_PROMPT}]},
                "contents": [{"role": "user", "parts": [{"text": LOG}]}],
                "generationConfig": {"temperature": 0.3, "maxOutputTokens": 4096},
            },
            GEMINI_REPLY,
        ),
        (
            "bedrock",
            BEDROCK_MODEL,
            BEDROCK_URL,
            ("x-amz-security-token", AWS.session_token),
            {
                "system": [{"text": PATTERN_DETECTION_PROMPT}],
                "messages": [{"role": "user", "content": [{"text": LOG}]}],
                "inferenceConfig": {"temperature": 0.3, "maxTokens": 4096},
            },
            BEDROCK_REPLY,
        ),
    ],
    ids=[
        "anthropic",
        "minimax",
        "openai",
        "openrouter",
        "atlascloud",
        "requesty",
        "edenai",
        "opencode-claude",
        "opencode-gpt",
        "opencode-other",
        "google",
        "bedrock",
    ],
)
def test_each_row_sends_its_wire_format_and_reads_its_reply(
    mock: respx.MockRouter,
    transport: HttpTransport,
    provider: str,
    model: str,
    url: str,
    auth: tuple[str, str],
    body: dict[str, Any],
    reply: dict[str, Any],
) -> None:
    """The fixed prompt, the whole log, 0.3 and 4096 reach each provider in its own shape,
    at its own path, authenticated its own way; the report and usage come back."""
    route = mock.post(url).respond(200, json=reply)
    completion = client(transport, provider).complete(request(provider, model))
    assert completion == Completion("report", Usage(10, 2))
    headers = route.calls.last.request.headers
    assert headers[auth[0]] == auth[1]
    assert sent(route) == body
    wants_version = url.endswith("/v1/messages")
    assert (headers.get("anthropic-version") == "2023-06-01") == wants_version


def test_bedrock_signs_every_attempt_with_sigv4_for_its_region(
    mock: respx.MockRouter, transport: HttpTransport
) -> None:
    """Each attempt (a retry too) carries its own SigV4 signature for bedrock in the
    region, with the model id's ``:`` sent as %3A."""
    route = mock.post(BEDROCK_URL).mock(
        side_effect=[
            httpx.Response(
                429,
                headers={"x-amzn-ErrorType": "ThrottlingException"},
                json={"message": "Too many requests, please wait before trying again."},
            ),
            httpx.Response(200, json=BEDROCK_REPLY),
        ]
    )
    completion = client(transport, "bedrock").complete(request("bedrock", BEDROCK_MODEL))
    assert completion.sent == 2
    for call in route.calls:
        assert call.request.url.raw_path == (
            b"/model/anthropic.claude-3-5-sonnet-20241022-v2%3A0/converse"
        )
        authorization = call.request.headers["authorization"]
        assert authorization.startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
        assert "/eu-west-1/bedrock/aws4_request" in authorization
        assert "x-amz-date" in call.request.headers


def test_bedrock_honours_a_configured_endpoint(
    mock: respx.MockRouter, transport: HttpTransport
) -> None:
    """AXE_BEDROCK_BASE_URL (a VPC or FIPS endpoint) is where the request goes, still
    signed for bedrock in the region."""
    route = mock.post(
        "https://vpce-1.bedrock-runtime.eu-west-1.vpce.amazonaws.com/model/m/converse"
    ).respond(200, json=BEDROCK_REPLY)
    client(
        transport, "bedrock", "https://vpce-1.bedrock-runtime.eu-west-1.vpce.amazonaws.com/"
    ).complete(request("bedrock", "m"))
    assert "/eu-west-1/bedrock/" in route.calls.last.request.headers["authorization"]


@pytest.mark.parametrize(
    ("base", "url"),
    [
        ("https://gateway.example/v1", "https://gateway.example/v1/chat/completions"),
        (
            "https://gateway.example/openai/v1/",
            "https://gateway.example/openai/v1/chat/completions",
        ),
        ("http://localhost:8080", "http://localhost:8080/v1/chat/completions"),
        ("http://localhost:8080/", "http://localhost:8080/v1/chat/completions"),
    ],
)
def test_openai_style_bases_include_their_version_or_get_v1(
    mock: respx.MockRouter, transport: HttpTransport, base: str, url: str
) -> None:
    """A base with its version path gets /chat/completions; a server root gets /v1 too, so
    configs of either age reach .../v1/chat/completions."""
    route = mock.post(url).respond(200, json=CHAT_REPLY)
    client(transport, "openai", base).complete(request("openai", "m"))
    assert route.called


OLLAMA_REPLY = {"message": {"content": "report"}, "prompt_eval_count": 10, "eval_count": 2}


@pytest.mark.parametrize(
    ("provider", "model", "base", "url", "reply"),
    [
        (
            "anthropic",
            "claude-sonnet-4",
            "https://gw.example/anthropic/?tenant=t&x=1",
            "https://gw.example/anthropic/v1/messages?tenant=t&x=1",
            ANTHROPIC_REPLY,
        ),
        (
            "openai",
            "m",
            "https://gw.example/v1?x=1",
            "https://gw.example/v1/chat/completions?x=1",
            CHAT_REPLY,
        ),
        (
            "openai",
            "m",
            "http://localhost:8080?x=1",
            "http://localhost:8080/v1/chat/completions?x=1",
            CHAT_REPLY,
        ),
        (
            "opencode",
            "gpt-4.1",
            "https://gw.example/zen?x=1",
            "https://gw.example/zen/v1/responses?x=1",
            RESPONSES_REPLY,
        ),
        (
            "ollama",
            "llama3",
            "http://gw.example:11434?x=1",
            "http://gw.example:11434/api/chat?x=1",
            OLLAMA_REPLY,
        ),
        (
            "google",
            "gemini-2.5-flash",
            "https://gw.example/gemini?key_id=7",
            "https://gw.example/gemini/v1beta/models/gemini-2.5-flash:generateContent?key_id=7",
            GEMINI_REPLY,
        ),
        (
            "bedrock",
            BEDROCK_MODEL,
            "https://vpce.example?x=1",
            "https://vpce.example/model/anthropic.claude-3-5-sonnet-20241022-v2%3A0/converse?x=1",
            BEDROCK_REPLY,
        ),
    ],
    ids=["anthropic", "openai-chat", "openai-root", "responses", "ollama", "gemini", "bedrock"],
)
def test_a_base_url_with_a_query_gets_its_path_before_the_query(
    mock: respx.MockRouter,
    transport: HttpTransport,
    provider: str,
    model: str,
    base: str,
    url: str,
    reply: dict[str, Any],
) -> None:
    """A gateway's base URL with a query string (…/v1?x=1) gets each wire format's path
    inserted before the query, not appended after it; the query goes out as written."""
    route = mock.route(host=httpx.URL(url).host).respond(200, json=reply)
    completion = client(transport, provider, base).complete(request(provider, model))
    assert completion.text == "report"
    assert str(route.calls.last.request.url) == url


@pytest.mark.parametrize(
    ("provider", "url", "title"),
    [
        ("openrouter", "https://openrouter.ai/api/v1/chat/completions", "X-OpenRouter-Title"),
        ("requesty", "https://router.requesty.ai/v1/chat/completions", "X-Title"),
    ],
)
def test_a_gateway_sends_its_attribution_headers_and_reads_the_cost(
    mock: respx.MockRouter, transport: HttpTransport, provider: str, url: str, title: str
) -> None:
    """Configured referer and title go out as OpenRouter's and Requesty's own headers, and
    their usage.cost (US dollars) comes back as the Usage's cost."""
    reply = {
        "choices": [{"message": {"content": "r"}}],
        "usage": {"prompt_tokens": 194, "completion_tokens": 2, "cost": 0.00095},
    }
    route = mock.post(url).respond(200, json=reply)
    headers = {"HTTP-Referer": "https://me.example", title: "gc"}
    completion = client(transport, provider, headers=headers).complete(
        request(provider, "anthropic/claude-sonnet-4")
    )
    assert completion.usage == Usage(194, 2, 0.00095)
    sent_headers = route.calls.last.request.headers
    assert (sent_headers["http-referer"], sent_headers[title]) == ("https://me.example", "gc")


def test_a_title_in_any_language_goes_out_as_utf_8(
    mock: respx.MockRouter, transport: HttpTransport
) -> None:
    """A non-ASCII title ("Mön bot") is sent as its UTF-8 bytes, as the Go axe sends it,
    not refused: every OpenRouter agent the Go axe runs is analysed."""
    reply = {"choices": [{"message": {"content": "r"}}]}
    route = mock.post("https://openrouter.ai/api/v1/chat/completions").respond(200, json=reply)
    headers = {"X-OpenRouter-Title": "Mön bot"}
    client(transport, "openrouter", headers=headers).complete(request("openrouter", "a/b"))
    sent = dict(route.calls.last.request.headers.raw)
    assert sent[b"X-OpenRouter-Title"] == "Mön bot".encode()


def test_the_rows_the_go_axe_added_after_m7_take_their_base_as_written(
    mock: respx.MockRouter, transport: HttpTransport
) -> None:
    """requesty and edenai append /chat/completions to a server root as the Go axe does
    (no M7 config ever wrote theirs, so no /v1 is added)."""
    route = mock.post("http://localhost:8080/chat/completions").respond(200, json=CHAT_REPLY)
    for provider in ("requesty", "edenai"):
        client(transport, provider, "http://localhost:8080").complete(request(provider, "m"))
    assert route.call_count == 2


def test_gpt5_on_the_responses_route_gets_no_temperature(
    mock: respx.MockRouter, transport: HttpTransport
) -> None:
    """A reasoning model on OpenCode's Responses route is sent no temperature, which it
    would reject."""
    route = mock.post("https://opencode.ai/zen/v1/responses").respond(200, json=RESPONSES_REPLY)
    client(transport, "opencode").complete(request("opencode", "gpt-5"))
    assert "temperature" not in sent(route)


# refusals


OPENAI_TOO_LONG = {
    "error": {
        "message": "This model's maximum context length is 128000 tokens. However, your "
        "messages resulted in 130000 tokens. Please reduce the length of the messages.",
        "type": "invalid_request_error",
        "code": "context_length_exceeded",
    }
}
ANTHROPIC_TOO_LONG = {
    "type": "error",
    "error": {
        "type": "invalid_request_error",
        "message": "prompt is too long: 212230 tokens > 200000 maximum",
    },
}


@pytest.mark.parametrize(
    ("provider", "model", "url", "reply", "numbers"),
    [
        (
            "google",
            "gemini-2.5-flash",
            GEMINI_URL,
            httpx.Response(
                400,
                json={
                    "error": {
                        "code": 400,
                        "message": "The input token count (1200293) exceeds the maximum "
                        "number of tokens allowed (1048576).",
                        "status": "INVALID_ARGUMENT",
                    }
                },
            ),
            (1200293, 1048576),
        ),
        (
            "bedrock",
            BEDROCK_MODEL,
            BEDROCK_URL,
            httpx.Response(
                400,
                headers={"x-amzn-ErrorType": "ValidationException:http://internal.amazon.com/"},
                json={"message": "Input is too long for requested model."},
            ),
            (None, None),
        ),
        (
            "openrouter",
            "openai/gpt-4o",
            "https://openrouter.ai/api/v1/chat/completions",
            httpx.Response(400, json=OPENAI_TOO_LONG),
            (130000, 128000 - 4096),
        ),
        (
            "atlascloud",
            "m",
            "https://api.atlascloud.ai/v1/chat/completions",
            httpx.Response(400, json=OPENAI_TOO_LONG),
            (130000, 128000 - 4096),
        ),
        (
            "requesty",
            "openai/gpt-4o",
            "https://router.requesty.ai/v1/chat/completions",
            httpx.Response(400, json=OPENAI_TOO_LONG),
            (130000, 128000 - 4096),
        ),
        (
            "edenai",
            "openai/gpt-4o",
            "https://api.edenai.run/v3/chat/completions",
            httpx.Response(400, json=OPENAI_TOO_LONG),
            (130000, 128000 - 4096),
        ),
        (
            "opencode",
            "gpt-4.1",
            "https://opencode.ai/zen/v1/responses",
            httpx.Response(400, json=OPENAI_TOO_LONG),
            (130000, 128000 - 4096),
        ),
        (
            "minimax",
            "MiniMax-M2",
            "https://api.minimax.io/anthropic/v1/messages",
            httpx.Response(400, json=ANTHROPIC_TOO_LONG),
            (212230, 200000),
        ),
        ("google", "gemini-2.5-flash", GEMINI_URL, httpx.Response(413, text=""), (None, None)),
    ],
    ids=[
        "gemini",
        "bedrock",
        "openrouter",
        "atlascloud",
        "requesty",
        "edenai",
        "opencode-gpt",
        "minimax",
        "413",
    ],
)
def test_each_providers_too_long_refusal_is_recognised_with_its_numbers(
    mock: respx.MockRouter,
    transport: HttpTransport,
    provider: str,
    model: str,
    url: str,
    reply: httpx.Response,
    numbers: tuple[int | None, int | None],
) -> None:
    """Each provider's "too long" is a refusal the analysis splits on, with the prompt's
    size and the room for input when it says them, sent once."""
    route = mock.post(url).mock(return_value=reply)
    with pytest.raises(PromptTooLargeError) as caught:
        client(transport, provider).complete(request(provider, model))
    assert (caught.value.tokens, caught.value.limit) == numbers
    assert caught.value.sent == 1
    assert route.call_count == 1


def test_gemini_error_is_one_line_with_its_status(
    mock: respx.MockRouter, transport: HttpTransport
) -> None:
    """A Gemini error reads as its status and message, not as raw JSON."""
    mock.post(GEMINI_URL).respond(
        404,
        json={
            "error": {
                "code": 404,
                "message": "models/gemini-9 is not found for API version v1beta",
                "status": "NOT_FOUND",
            }
        },
    )
    with pytest.raises(ApiError) as caught:
        client(transport, "google").complete(request("google", "gemini-2.5-flash"))
    assert str(caught.value) == (
        "google API error (HTTP 404 NOT_FOUND): models/gemini-9 is not found for API version v1beta"
    )


@pytest.mark.parametrize(
    ("status", "kind", "message"),
    [
        (
            429,
            "RESOURCE_EXHAUSTED",
            "You exceeded your current quota, please check your plan and billing details.",
        ),
        (503, "UNAVAILABLE", "The model is overloaded. Please try again later."),
    ],
)
def test_gemini_transient_errors_are_retried(
    mock: respx.MockRouter, transport: HttpTransport, status: int, kind: str, message: str
) -> None:
    """Gemini's RESOURCE_EXHAUSTED (even worded as quota) and UNAVAILABLE are retried, and
    the final line says how many retries were made."""
    body = {"error": {"code": status, "message": message, "status": kind}}
    route = mock.post(GEMINI_URL).respond(status, json=body)
    with pytest.raises(ApiError) as caught:
        client(transport, "google").complete(request("google", "gemini-2.5-flash"))
    assert route.call_count == 3
    assert caught.value.sent == 3
    assert (
        str(caught.value) == f"google API error (HTTP {status} {kind}): {message} (after 2 retries)"
    )


GEMINI_BAD_KEY = bad_key_in_format(GEMINI_URL, KEY)[1]  # Gemini's own 400, details and all
GEMINI_BAD_REQUEST = {
    "error": {
        "code": 400,
        "message": "* GenerateContentRequest.generation_config.max_output_tokens: "
        "max_output_tokens must be positive.",
        "status": "INVALID_ARGUMENT",
    }
}


@pytest.mark.parametrize(
    ("reply", "line"),
    [
        (
            GEMINI_BAD_KEY,
            "google API error (HTTP 400 INVALID_ARGUMENT): API key not valid. Please pass a "
            "valid API key. (key from GEMINI_API_KEY)",
        ),
        (
            GEMINI_BAD_REQUEST,
            "google API error (HTTP 400 INVALID_ARGUMENT): * GenerateContentRequest."
            "generation_config.max_output_tokens: max_output_tokens must be positive.",
        ),
    ],
    ids=["bad-key", "other-400"],
)
def test_geminis_rejected_key_says_where_the_key_came_from_though_it_is_a_400(
    mock: respx.MockRouter, transport: HttpTransport, reply: dict[str, Any], line: str
) -> None:
    """Gemini refuses a wrong or expired key with HTTP 400 INVALID_ARGUMENT, not 401: its
    ErrorInfo reason API_KEY_INVALID makes the line name the key's source, as every other
    provider's does, sent once and without the key; any other 400 names none."""
    route = mock.post(GEMINI_URL).respond(400, json=reply)
    with pytest.raises(ApiError) as caught:
        client(transport, "google", key_source="GEMINI_API_KEY").complete(
            request("google", "gemini-2.5-flash")
        )
    assert str(caught.value) == line
    assert not isinstance(caught.value, PromptTooLargeError)
    assert (route.call_count, caught.value.sent) == (1, 1)
    assert KEY not in str(caught.value)


def gemini_rate_limit(delay: str) -> httpx.Response:
    """Gemini's 429 for a per-minute quota, its wait in a RetryInfo detail, as it sends it."""
    message = (
        "You exceeded your current quota, please check your plan and billing details. For "
        "more information on this error, head to: https://ai.google.dev/gemini-api/docs/"
        "rate-limits."
    )
    details = [
        {
            "@type": "type.googleapis.com/google.rpc.QuotaFailure",
            "violations": [
                {
                    "quotaMetric": "generativelanguage.googleapis.com/"
                    "generate_content_free_tier_requests",
                    "quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier",
                    "quotaValue": "10",
                }
            ],
        },
        {
            "@type": "type.googleapis.com/google.rpc.Help",
            "links": [{"description": "Learn more", "url": "https://ai.google.dev/"}],
        },
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay},
    ]
    error = {"code": 429, "message": message, "status": "RESOURCE_EXHAUSTED", "details": details}
    return httpx.Response(429, json={"error": error})


@pytest.mark.parametrize(
    ("delay", "slept"),
    [("37s", 37.0), ("45.837906927s", 45.837906927), ("soon", 0.5)],
)
def test_geminis_retry_delay_is_waited_as_a_retry_after_is(
    mock: respx.MockRouter, transport: HttpTransport, clock: FakeClock, delay: str, slept: float
) -> None:
    """A 429 whose RetryInfo says retryDelay "37s" is retried after 37 s, not after gc's own
    backoff; a delay that is not a duration leaves the backoff (0.5 s) to decide."""
    route = mock.post(GEMINI_URL).mock(
        side_effect=[gemini_rate_limit(delay), httpx.Response(200, json=GEMINI_REPLY)]
    )
    completion = client(transport, "google").complete(request("google", "gemini-2.5-flash"))
    assert (completion.text, completion.sent, route.call_count) == ("report", 2, 2)
    assert clock.slept == [slept]


def test_a_retry_delay_longer_than_gc_waits_ends_the_tries_at_once(
    mock: respx.MockRouter, transport: HttpTransport, clock: FakeClock
) -> None:
    """A RetryInfo asking for an hour is given up at once, as a retry-after of an hour is,
    and the line says what Gemini asked for."""
    route = mock.post(GEMINI_URL).mock(return_value=gemini_rate_limit("3600s"))
    with pytest.raises(ApiError) as caught:
        client(transport, "google").complete(request("google", "gemini-2.5-flash"))
    assert str(caught.value).startswith(
        "google API error (HTTP 429 RESOURCE_EXHAUSTED): You exceeded your current quota"
    )
    assert str(caught.value).endswith(
        "(the provider asked to wait 3600s before trying again; gc waits at most 60s)"
    )
    assert (route.call_count, clock.slept) == (1, [])


@pytest.mark.parametrize(
    ("status", "kind", "calls"),
    [
        (429, "ThrottlingException", 3),
        (503, "ServiceUnavailableException", 3),
        (429, "ModelNotReadyException", 3),
        (403, "AccessDeniedException", 1),
        (403, "UnrecognizedClientException", 1),
        (403, "InvalidSignatureException", 1),
    ],
)
def test_bedrock_retries_throttling_and_unavailability_but_not_denials(
    mock: respx.MockRouter, transport: HttpTransport, status: int, kind: str, calls: int
) -> None:
    """Throttling, 503 and a model not ready are retried; a denied or unsigned request is
    reported at once, naming where the credentials came from; no secret is ever shown."""
    echoed = f"The request signature we calculated does not match; {AWS.secret_access_key}"
    route = mock.post(BEDROCK_URL).respond(
        status, headers={"x-amzn-ErrorType": kind}, json={"message": echoed}
    )
    with pytest.raises(ApiError) as caught:
        client(transport, "bedrock").complete(request("bedrock", BEDROCK_MODEL))
    assert route.call_count == calls
    text = str(caught.value)
    assert text.startswith(f"bedrock API error (HTTP {status} {kind}): The request signature")
    assert AWS.secret_access_key not in text
    assert (text.endswith("(credentials from AWS_ACCESS_KEY_ID)")) == (calls == 1)


# keys


def test_a_rejected_key_names_its_source_without_the_key(
    mock: respx.MockRouter, transport: HttpTransport
) -> None:
    """A 401 says where the key came from (the variable or config.toml's path), never the key."""
    mock.post("https://api.anthropic.com/v1/messages").respond(
        401, json={"error": {"type": "authentication_error", "message": "invalid x-api-key"}}
    )
    with pytest.raises(ApiError) as caught:
        client(transport, "anthropic", key_source="/home/u/.config/axe/config.toml").complete(
            request("anthropic", "claude-sonnet-4")
        )
    assert str(caught.value) == (
        "anthropic API error (HTTP 401 authentication_error): invalid x-api-key "
        "(key from /home/u/.config/axe/config.toml)"
    )


def test_a_missing_key_names_the_variable_and_the_full_config_path() -> None:
    """A missing key's line names the row's variable and config.toml's full path."""
    settings = ProviderSettings(
        key_variable="GEMINI_API_KEY", config_path="/home/u/.config/axe/config.toml"
    )
    with pytest.raises(ApiError) as caught:
        sendable(CATALOGUE["google"], settings)
    assert str(caught.value) == (
        'API key for provider "google" is not configured (set GEMINI_API_KEY or add it to '
        "/home/u/.config/axe/config.toml)"
    )
    assert caught.value.sent == 0


# Ollama and windows


def test_ollama_cutting_the_prompt_is_a_refusal_not_a_report(
    mock: respx.MockRouter, transport: HttpTransport
) -> None:
    """A reply whose prompt_eval_count equals the num_ctx sent means Ollama cut the log:
    a too-long refusal with room for num_ctx less the reply, never a report."""
    mock.post("http://localhost:11434/api/chat").respond(
        200, json={"message": {"content": "partial"}, "prompt_eval_count": 8192, "eval_count": 5}
    )
    with pytest.raises(PromptTooLargeError) as caught:
        client(transport, "ollama").complete(request("ollama", "llama3"))
    assert (caught.value.tokens, caught.value.limit, caught.value.sent) == (None, 8192 - 4096, 1)


@pytest.mark.parametrize(
    ("provider", "cap", "limit"),
    [
        ("anthropic", None, Window(1_000_000, WindowSource.PROVIDER)),
        ("anthropic", 50_000, Window(50_000, WindowSource.CAP)),
        ("openai", None, Window(1_047_576, WindowSource.PROVIDER)),
        ("google", None, Window(2_097_152, WindowSource.PROVIDER)),
        ("openrouter", None, None),
        ("openrouter", 9_000, Window(9_000, WindowSource.CAP)),
        ("bedrock", None, None),
    ],
)
def test_input_limit_is_the_least_of_the_cap_and_the_providers_largest_window(
    transport: HttpTransport, provider: str, cap: int | None, limit: Window | None
) -> None:
    """A request above what any model of the provider accepts is split before sending;
    the user's cap wins when smaller; a gateway with no known bound leaves it unknown;
    each figure says where it was learnt (a small request asks the provider nothing)."""
    llm = client(transport, provider, max_input_tokens=cap)
    assert llm.input_limit(request(provider, "m")) == limit


def test_settings_never_show_a_secret() -> None:
    """The key, the AWS secret key and the session token never reach a repr."""
    settings = ProviderSettings(api_key=KEY, aws=AWS)
    shown = repr(settings)
    for secret in (KEY, AWS.secret_access_key, AWS.session_token):
        assert secret not in shown


def test_every_attempt_carries_the_key(mock: respx.MockRouter, transport: HttpTransport) -> None:
    """The key is set by an httpx.Auth on each attempt, so a retry is authenticated too."""
    route = mock.post(GEMINI_URL).mock(
        side_effect=[httpx.Response(503), httpx.Response(200, json=GEMINI_REPLY)]
    )
    completion = client(transport, "google").complete(request("google", "gemini-2.5-flash"))
    assert completion.sent == 2
    assert [call.request.headers["x-goog-api-key"] for call in route.calls] == [KEY, KEY]


@pytest.mark.parametrize(
    ("provider", "settings", "said"),
    [
        ("anthropic", {"api_key": KEY + "\r"}, "the API key from K"),
        ("openai", {"api_key": KEY + "é"}, "the API key from K"),
        (
            "openrouter",
            {"headers": {"X-OpenRouter-Title": "Café\nbot"}},
            "the X-OpenRouter-Title header (from AXE_OPENROUTER_TITLE or "
            "[providers.openrouter] title)",
        ),
        (
            "bedrock",
            {
                "aws": AwsCredentials(
                    access_key_id="AKIDEXAMPLE",
                    secret_access_key="wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY\n",
                    source="AWS_ACCESS_KEY_ID",
                )
            },
            "the AWS credentials from AWS_ACCESS_KEY_ID",
        ),
    ],
)
def test_a_value_no_header_can_carry_is_a_config_error_naming_its_source_not_its_value(
    mock: respx.MockRouter,
    transport: HttpTransport,
    provider: str,
    settings: dict[str, Any],
    said: str,
) -> None:
    """A stray newline from a CRLF .env file in a key, credential or configured header, or
    non-ASCII text in a key, is refused before any request, naming where it came from; the
    HTTP library's own error would have quoted the secret."""
    with pytest.raises(ConfigError) as caught:
        client(transport, provider, **settings)
    assert str(caught.value) == (
        f'{said} for provider "{provider}" holds a character an HTTP header cannot carry (a '
        "control character such as a stray newline, or non-ASCII text in a key); fix it there"
    )
    assert KEY not in str(caught.value)
    assert "EXAMPLEKEY" not in str(caught.value)
    assert not mock.calls


@pytest.mark.parametrize(
    ("provider", "model", "url", "reply"),
    [
        ("google", "gemini-2.5-flash", GEMINI_URL, {"candidates": [{"content": {"parts": 5}}]}),
        (
            "opencode",
            "gpt-5",
            "https://opencode.ai/zen/v1/responses",
            {"output": [{"type": "message", "content": 7}]},
        ),
    ],
)
def test_a_list_that_is_not_a_list_is_an_api_error_not_a_crash(
    mock: respx.MockRouter,
    transport: HttpTransport,
    provider: str,
    model: str,
    url: str,
    reply: Any,
) -> None:
    """A reply whose parts or content is some other JSON value is an unusable reply (exit 3)."""
    mock.post(url).respond(200, json=reply)
    with pytest.raises(
        ApiError, match=r"returned a reply that is not the expected JSON: .* is not a list"
    ):
        client(transport, provider).complete(request(provider, model))


CUT_SHORT = [
    (
        "anthropic",
        "claude-sonnet-4",
        "https://api.anthropic.com/v1/messages",
        {"content": [], "stop_reason": "max_tokens"},
    ),
    (
        "openai",
        "gpt-5",
        "https://api.openai.com/v1/chat/completions",
        {"choices": [{"message": {"content": ""}, "finish_reason": "length"}]},
    ),
    (
        "opencode",
        "gpt-5",
        "https://opencode.ai/zen/v1/responses",
        {"status": "incomplete", "output": [{"type": "reasoning", "summary": []}]},
    ),
    (
        "google",
        "gemini-2.5-flash",
        GEMINI_URL,
        {"candidates": [{"content": {"parts": []}, "finishReason": "MAX_TOKENS"}]},
    ),
    (
        "bedrock",
        BEDROCK_MODEL,
        BEDROCK_URL,
        {"output": {"message": {"content": []}}, "stopReason": "max_tokens"},
    ),
]


@pytest.mark.parametrize(("provider", "model", "url", "reply"), CUT_SHORT)
def test_a_reply_cut_at_the_output_limit_before_any_text_is_no_report(
    mock: respx.MockRouter,
    transport: HttpTransport,
    provider: str,
    model: str,
    url: str,
    reply: Any,
) -> None:
    """A reasoning model that spent all 4,096 output tokens thinking wrote no report: that
    is an unusable reply (exit 3, nothing trimmed), not the spec's empty analysis."""
    mock.post(url).respond(200, json=reply)
    with pytest.raises(ApiError) as caught:
        client(transport, provider).complete(request(provider, model))
    assert str(caught.value) == (
        f"{provider} returned no report: the model stopped at the 4,096-token output limit "
        "before writing any (a reasoning model can spend it all thinking); nothing was "
        "trimmed, try another model"
    )
    assert caught.value.sent == 1


def test_a_report_cut_at_the_limit_is_still_the_report_and_an_empty_one_is_the_specs(
    mock: respx.MockRouter, transport: HttpTransport
) -> None:
    """A report that reached the output limit after some text is printed as it came; a
    complete reply with no text is gc-spec's "empty response" (printed empty, trimmed)."""
    url = "https://api.anthropic.com/v1/messages"
    mock.post(url).respond(
        200,
        json={"content": [{"type": "text", "text": "## Patterns"}], "stop_reason": "max_tokens"},
    )
    assert client(transport, "anthropic").complete(request("anthropic", "c")).text == "## Patterns"
    mock.post(url).respond(200, json={"content": [], "stop_reason": "end_turn"})
    assert client(transport, "anthropic").complete(request("anthropic", "c")).text == ""


def test_a_secret_echoed_url_encoded_or_escaped_is_still_never_shown(
    mock: respx.MockRouter, transport: HttpTransport
) -> None:
    """A server that echoes the AWS secret key URL-encoded (its / and + as %2F, %2B) or the
    session token in a JSON escape does not get them printed."""
    encoded = "wJalrXUtnFEMI%2FK7MDENG%2BbPxRfiCYEXAMPLEKEY"
    mock.post(BEDROCK_URL).respond(
        403,
        headers={"x-amzn-ErrorType": "AccessDeniedException"},
        json={"message": f"secret {encoded} and token {AWS.session_token} refused"},
    )
    with pytest.raises(ApiError) as caught:
        client(transport, "bedrock").complete(request("bedrock", BEDROCK_MODEL))
    text = str(caught.value)
    assert encoded not in text
    assert AWS.session_token not in text
    assert "secret [redacted] and token [redacted] refused" in text


def test_a_gateways_error_says_its_message_once_whatever_its_shape(
    mock: respx.MockRouter, transport: HttpTransport
) -> None:
    """OpenRouter's numeric error code is not shown twice beside the status, and an error it
    sends with HTTP 200 keeps the upstream provider's message."""
    url = "https://openrouter.ai/api/v1/chat/completions"
    mock.post(url).respond(402, json={"error": {"code": 402, "message": "Insufficient credits"}})
    with pytest.raises(ApiError) as caught:
        client(transport, "openrouter").complete(request("openrouter", "anthropic/claude"))
    assert str(caught.value) == "openrouter API error (HTTP 402): Insufficient credits"
    mock.post(url).respond(200, json={"error": {"message": "Upstream provider error"}})
    with pytest.raises(ApiError) as caught:
        client(transport, "openrouter").complete(request("openrouter", "anthropic/claude"))
    assert str(caught.value) == (
        "openrouter returned a reply that is not the expected JSON: an error instead of a "
        "report: Upstream provider error"
    )


def test_every_format_in_wire_is_spoken_by_a_row() -> None:
    """Each module of ``wire/`` holds a format that some row of the catalogue speaks."""
    modules = {path.stem for path in Path(wire.__file__).parent.glob("*.py")} - {"__init__", "base"}
    spoken = {
        route.wire.reply.__module__.rpartition(".")[2]
        for row in CATALOGUE.values()
        for route in row.routes
    }
    assert spoken == modules


@pytest.mark.parametrize(
    ("provider", "model", "url", "reply", "why"),
    [
        (
            "anthropic",
            "c",
            "https://api.anthropic.com/v1/messages",
            {"content": [], "stop_reason": "refusal"},
            "stop_reason refusal",
        ),
        (
            "openai",
            "gpt-4o",
            "https://api.openai.com/v1/chat/completions",
            {"choices": [{"message": {"content": None, "refusal": "I can't help with that."}}]},
            "refusal I can't help with that.",
        ),
        (
            "openai",
            "gpt-4o",
            "https://api.openai.com/v1/chat/completions",
            {"choices": [{"message": {"content": ""}, "finish_reason": "content_filter"}]},
            "finish_reason content_filter",
        ),
        (
            "opencode",
            "gpt-5",
            "https://opencode.ai/zen/v1/responses",
            {"output": [{"type": "message", "content": [{"type": "refusal", "refusal": "No."}]}]},
            "refusal No.",
        ),
        (
            "google",
            "gemini-2.5-flash",
            GEMINI_URL,
            {"candidates": [{"finishReason": "SAFETY", "content": {"parts": []}}]},
            "finishReason SAFETY",
        ),
        (
            "google",
            "gemini-2.5-flash",
            GEMINI_URL,
            {"candidates": [], "promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}},
            "blockReason PROHIBITED_CONTENT",
        ),
        (
            "bedrock",
            BEDROCK_MODEL,
            BEDROCK_URL,
            {"output": {"message": {"content": []}}, "stopReason": "guardrail_intervened"},
            "stopReason guardrail_intervened",
        ),
    ],
    ids=[
        "anthropic",
        "openai",
        "openai filter",
        "responses",
        "gemini",
        "gemini blocked",
        "bedrock",
    ],
)
def test_a_model_or_filter_that_declines_is_a_failure_not_the_specs_empty_report(
    mock: respx.MockRouter,
    transport: HttpTransport,
    provider: str,
    model: str,
    url: str,
    reply: Any,
    why: str,
) -> None:
    """A refusal or a safety block is no report: one line in the provider's words (exit 3,
    nothing trimmed), never an empty analysis after which the entries would be cut."""
    mock.post(url).respond(200, json=reply)
    with pytest.raises(ApiError) as caught:
        client(transport, provider).complete(request(provider, model))
    assert str(caught.value) == (
        f"{provider} declined to write the report ({why}); nothing was trimmed"
    )
    assert caught.value.sent == 1


def test_a_stop_reason_gc_does_not_know_is_no_refusal(
    mock: respx.MockRouter, transport: HttpTransport
) -> None:
    """Servers that speak a format have their own stop words (TGI's "eos_token", MiniMax's
    own): only the known refusal and filter words stop a report, never an unknown word."""
    url = "https://api.openai.com/v1/chat/completions"
    reply = {"choices": [{"message": {"content": "report"}, "finish_reason": "eos_token"}]}
    mock.post(url).respond(200, json=reply)
    assert client(transport, "openai").complete(request("openai", "m")).text == "report"
    anthropic = {"content": [{"type": "text", "text": "report"}], "stop_reason": "end"}
    mock.post("https://api.anthropic.com/v1/messages").respond(200, json=anthropic)
    assert client(transport, "anthropic").complete(request("anthropic", "c")).text == "report"
