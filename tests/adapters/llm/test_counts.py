"""What providers tell for free, against respx: each counting row's count request (path,
body, authentication, Bedrock's signature) and the count read back, every way a count fails
falling back to gc's own estimate, and the model windows Gemini, OpenRouter and Ollama
tell, asked once, with the catalogue's figure wherever a lookup fails."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx

from axe.adapters.llm import LLMProviders
from axe.adapters.llm.catalogue import CATALOGUE
from axe.adapters.llm.transport import HttpTransport
from axe.application.ports import AnalysisRequest
from axe.domain.errors import NoTokenCountError
from axe.domain.model import ModelRef
from axe.domain.window import Window, WindowSource
from axe.testing import FakeClock
from tests.adapters.llm.test_formats import AWS, BEDROCK_MODEL, KEY, client
from tests.adapters.llm.test_sigv4 import _botocore_signed

LOG = "## 2026-02-27T03:15:00Z\n**Task:** Review PR\n\n"
BIG_LOG = LOG * 100  # larger than any model's smallest window could be sure to hold
BEDROCK_COUNT = (
    "https://bedrock-runtime.eu-west-1.amazonaws.com/model/"
    "anthropic.claude-3-5-sonnet-20241022-v2%3A0/count-tokens"
)
GEMINI_MODEL = "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash"
OPENROUTER_MODELS = "https://openrouter.ai/api/v1/models"
PROMPT = "You are a memory analyst."
SHAPELESS = [{"tokens": 5}, {"input_tokens": "5"}, {"input_tokens": -1}, {"input_tokens": True}, []]


def request(provider: str, model: str, log: str = LOG, **fields: Any) -> AnalysisRequest:
    return AnalysisRequest(
        model=ModelRef(provider, model),
        system_prompt=PROMPT,
        content=log.encode(),
        temperature=0.3,
        max_tokens=4096,
        **fields,
    )


COUNTS = [
    (
        "anthropic",
        "claude-sonnet-4",
        "https://api.anthropic.com/v1/messages/count_tokens",
        {
            "model": "claude-sonnet-4",
            "system": PROMPT,
            "messages": [{"role": "user", "content": LOG}],
        },
        {"input_tokens": 1234},
    ),
    (
        "openai",
        "gpt-4o",
        "https://api.openai.com/v1/responses/input_tokens",
        {"model": "gpt-4o", "instructions": PROMPT, "input": LOG},
        {"object": "response.input_tokens", "input_tokens": 1234},
    ),
    (
        "google",
        "gemini-2.5-flash",
        f"{GEMINI_MODEL}:countTokens",
        {
            "generateContentRequest": {
                "model": "models/gemini-2.5-flash",
                "contents": [{"role": "user", "parts": [{"text": LOG}]}],
                "systemInstruction": {"parts": [{"text": PROMPT}]},
            }
        },
        {"totalTokens": 1234},
    ),
    (
        "bedrock",
        BEDROCK_MODEL,
        BEDROCK_COUNT,
        {
            "input": {
                "converse": {
                    "system": [{"text": PROMPT}],
                    "messages": [{"role": "user", "content": [{"text": LOG}]}],
                }
            }
        },
        {"inputTokens": 1234},
    ),
]


@pytest.mark.parametrize(("provider", "model", "url", "body", "reply"), COUNTS)
def test_a_counting_row_asks_its_count_endpoint_and_reads_the_count(
    mock: respx.MockRouter,
    transport: HttpTransport,
    provider: str,
    model: str,
    url: str,
    body: dict[str, Any],
    reply: dict[str, Any],
) -> None:
    """Anthropic, OpenAI, Gemini and Bedrock each count the request at their own endpoint,
    in their own body (the prompt and the log, nothing about the reply), authenticated as
    an analysis is; the count they answer is the count."""
    route = mock.post(url).respond(200, json=reply)
    assert client(transport, provider).count_tokens(request(provider, model)) == 1234
    sent = route.calls.last.request
    assert json.loads(sent.content) == body
    if provider == "anthropic":
        assert (sent.headers["x-api-key"], sent.headers["anthropic-version"]) == (KEY, "2023-06-01")
    elif provider == "bedrock":
        assert sent.headers["authorization"].startswith("AWS4-HMAC-SHA256 ")
    else:
        assert KEY in (
            sent.headers.get("authorization", "") + sent.headers.get("x-goog-api-key", "")
        )


def test_bedrocks_count_is_signed_as_botocore_signs_it(
    mock: respx.MockRouter, transport: HttpTransport
) -> None:
    """The count request to Bedrock carries the signature AWS's own SDK computes for the
    same request at the same time (its model id's ':' sent as %3A), session token too."""
    route = mock.post(BEDROCK_COUNT).respond(200, json={"inputTokens": 7})
    client(transport, "bedrock").count_tokens(request("bedrock", BEDROCK_MODEL))
    sent = route.calls.last.request
    assert sent.url.raw_path.endswith(b"-v2%3A0/count-tokens")
    when = datetime.strptime(sent.headers["x-amz-date"], "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
    expected = _botocore_signed(str(sent.url), sent.content, AWS, "eu-west-1", when)
    assert sent.headers["authorization"] == expected["Authorization"]
    assert sent.headers["x-amz-security-token"] == AWS.session_token


@pytest.mark.parametrize(
    "provider", [name for name, row in CATALOGUE.items() if row.counting is None]
)
def test_a_row_without_a_count_endpoint_says_so_and_sends_nothing(
    mock: respx.MockRouter, tmp_path: Path, provider: str
) -> None:
    """Gateways, MiniMax, OpenCode, Ollama and the offline analyst offer no count: the
    use case hears it at once, and nothing is sent."""
    environ = {row.key_variable: KEY for row in CATALOGUE.values() if row.key_variable}
    llm = LLMProviders(environ, config_dir=tmp_path, clock=FakeClock())
    model = "heuristic" if provider == "builtin" else "m"
    with pytest.raises(NoTokenCountError):
        llm.count_tokens(request(provider, model))
    llm.close()
    assert not mock.calls


@pytest.mark.parametrize("status", [404, 405, 501, 500, 401, 429])
def test_a_count_endpoint_answering_an_error_falls_back(
    mock: respx.MockRouter, transport: HttpTransport, status: int
) -> None:
    """A gateway or an old server without the endpoint (404, 405, 501), one failing (500,
    after the usual retries), or refusing: gc plans on its own estimate, told why in a
    line that holds no key (the 401 body here quotes it)."""
    route = mock.post("https://api.openai.com/v1/responses/input_tokens").respond(
        status, json={"error": {"message": f"Incorrect API key provided: {KEY}"}}
    )
    with pytest.raises(NoTokenCountError) as caught:
        client(transport, "openai").count_tokens(request("openai", "gpt-4o"))
    assert caught.value.reason == f"its count endpoint answered HTTP {status}"
    assert route.call_count == (3 if status in (500, 429) else 1)


@pytest.mark.parametrize("reply", SHAPELESS, ids=repr)
def test_a_count_reply_of_another_shape_falls_back(
    mock: respx.MockRouter, transport: HttpTransport, reply: Any
) -> None:
    """A reply without a positive integer where the count goes is no count."""
    mock.post("https://api.anthropic.com/v1/messages/count_tokens").respond(200, json=reply)
    with pytest.raises(NoTokenCountError, match="held no count"):
        client(transport, "anthropic").count_tokens(request("anthropic", "claude"))


def test_a_count_reply_that_is_not_json_falls_back_without_the_key(
    mock: respx.MockRouter, transport: HttpTransport
) -> None:
    """A proxy's page instead of JSON: no count, and the reason never shows the key."""
    mock.post("https://api.anthropic.com/v1/messages/count_tokens").respond(
        200, text=f"proxy says: your key {KEY} is fine"
    )
    with pytest.raises(NoTokenCountError) as caught:
        client(transport, "anthropic").count_tokens(request("anthropic", "claude"))
    assert "not JSON" in caught.value.reason
    assert KEY not in caught.value.reason


def test_an_unreachable_count_endpoint_falls_back(transport: HttpTransport) -> None:
    """No answer at all is no count either (the analysis then says what is wrong)."""
    with respx.mock() as mock:
        mock.post("http://127.0.0.1:9/v1/messages/count_tokens").mock(
            side_effect=httpx.ConnectError("refused")
        )
        llm = client(transport, "anthropic", base_url="http://127.0.0.1:9")
        with pytest.raises(NoTokenCountError, match="cannot reach anthropic"):
            llm.count_tokens(request("anthropic", "claude"))


def test_a_count_is_retried_even_when_the_budget_forbids_retrying_an_analysis(
    mock: respx.MockRouter, transport: HttpTransport
) -> None:
    """A count is free: a connection dropped after it went out is tried again, though the
    request it counts would not be (a budget pays for one bill a request)."""
    route = mock.post("https://api.anthropic.com/v1/messages/count_tokens").mock(
        side_effect=[httpx.ReadError("reset"), httpx.Response(200, json={"input_tokens": 9})]
    )
    counted = client(transport, "anthropic").count_tokens(
        request("anthropic", "claude", retry_unanswered=False)
    )
    assert (counted, route.call_count) == (9, 2)


@pytest.mark.parametrize("provider", ["anthropic", "bedrock"])
def test_a_run_without_a_key_counts_nothing_and_sends_nothing(
    mock: respx.MockRouter, tmp_path: Path, provider: str
) -> None:
    """--estimate needs no key: without one, no count is asked (it would be refused)."""
    llm = LLMProviders(
        {"AWS_REGION": "eu-west-1"}, config_dir=tmp_path, clock=FakeClock(), sending=False
    )
    model = BEDROCK_MODEL if provider == "bedrock" else "claude"
    with pytest.raises(NoTokenCountError, match="no key"):
        llm.count_tokens(request(provider, model))
    llm.close()
    assert not mock.calls


def test_an_estimate_with_aws_credentials_counts_on_bedrock(
    mock: respx.MockRouter, tmp_path: Path
) -> None:
    """--estimate with AWS credentials and a region: Bedrock's count is asked, signed."""
    environ = {
        "AWS_REGION": "eu-west-1",
        "AWS_ACCESS_KEY_ID": AWS.access_key_id,
        "AWS_SECRET_ACCESS_KEY": AWS.secret_access_key,
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"),
    }
    route = mock.post(BEDROCK_COUNT).respond(200, json={"inputTokens": 77})
    llm = LLMProviders(environ, config_dir=tmp_path, clock=FakeClock(), sending=False)
    assert llm.count_tokens(request("bedrock", BEDROCK_MODEL)) == 77
    llm.close()
    assert "/eu-west-1/bedrock/aws4_request" in route.calls.last.request.headers["authorization"]


# Windows


@pytest.mark.parametrize(
    ("provider", "model", "url", "reply", "window"),
    [
        (
            "google",
            "gemini-2.5-flash",
            GEMINI_MODEL,
            {"name": "models/gemini-2.5-flash", "inputTokenLimit": 1_048_576},
            1_048_576,  # input only: the reply has its own limit
        ),
        (
            "openrouter",
            "anthropic/claude-3.5-sonnet",
            OPENROUTER_MODELS,
            {
                "data": [
                    {"id": "openai/gpt-4o", "context_length": 128_000},
                    {"id": "anthropic/claude-3.5-sonnet", "context_length": 200_000},
                ]
            },
            200_000 - 4096,  # the window holds the reply too
        ),
        (
            "ollama",
            "llama3",
            "http://localhost:11434/api/show",
            {"model_info": {"general.architecture": "llama", "llama.context_length": 8192}},
            8192 - 4096,
        ),
    ],
)
def test_the_window_a_provider_tells_is_the_models_asked_once(
    mock: respx.MockRouter,
    transport: HttpTransport,
    provider: str,
    model: str,
    url: str,
    reply: dict[str, Any],
    window: int,
) -> None:
    """Gemini's models/{model} and OpenRouter's model list (a GET, with the key) and Ollama's
    /api/show (a POST naming the model) say the model's window, used as the model's
    (smaller than the provider's largest) and asked once a run."""
    route = mock.route(url=url).respond(200, json=reply)
    llm = client(transport, provider)
    limits = {llm.input_limit(request(provider, model, BIG_LOG)) for _ in range(3)}
    assert limits == {Window(window, WindowSource.MODEL)}
    assert route.call_count == 1
    sent = route.calls.last.request
    if provider == "ollama":
        assert (sent.method, json.loads(sent.content)) == ("POST", {"model": "llama3"})
    else:
        assert (sent.method, sent.content) == ("GET", b"")
        assert KEY in sent.headers.get("authorization", "") + sent.headers.get("x-goog-api-key", "")


@pytest.mark.parametrize("status", [404, 405, 501, 401, 500])
@pytest.mark.parametrize(
    ("provider", "model", "url", "catalogue"),
    [
        ("google", "gemini-2.5-flash", GEMINI_MODEL, Window(2_097_152, WindowSource.PROVIDER)),
        ("openrouter", "x/y", OPENROUTER_MODELS, None),
    ],
)
def test_a_window_lookup_answering_an_error_leaves_the_catalogues_figure(
    mock: respx.MockRouter,
    transport: HttpTransport,
    status: int,
    provider: str,
    model: str,
    url: str,
    catalogue: Window | None,
) -> None:
    """A gateway or a server without the lookup, or one that refuses it, changes nothing:
    the provider's largest window (or none), silently; the analysis says any error."""
    mock.get(url).respond(status, json={"error": {"message": "no"}})
    limit = client(transport, provider).input_limit(request(provider, model, BIG_LOG))
    assert limit == catalogue


@pytest.mark.parametrize(
    "reply",
    [
        {"data": [{"id": "other/model", "context_length": 8192}]},
        {"data": [{"id": "x/y", "context_length": "8192"}]},
        {"data": {"id": "x/y"}},
        {"models": []},
    ],
)
def test_a_model_list_without_the_models_window_leaves_it_unknown(
    mock: respx.MockRouter, transport: HttpTransport, reply: dict[str, Any]
) -> None:
    """A list that does not name the model, or names no number for it, tells nothing."""
    mock.get(OPENROUTER_MODELS).respond(200, json=reply)
    assert (
        client(transport, "openrouter").input_limit(request("openrouter", "x/y", BIG_LOG)) is None
    )


def test_a_cap_below_the_told_window_wins_and_says_so(
    mock: respx.MockRouter, transport: HttpTransport
) -> None:
    """--max-input-tokens below the model's window: the cap, with its source."""
    mock.get(GEMINI_MODEL).respond(200, json={"inputTokenLimit": 1_048_576})
    llm = client(transport, "google", max_input_tokens=9000)
    assert llm.input_limit(request("google", "gemini-2.5-flash", BIG_LOG)) == Window(
        9000, WindowSource.CAP
    )


def test_a_small_request_or_a_keyless_run_asks_no_window(
    mock: respx.MockRouter, transport: HttpTransport, tmp_path: Path
) -> None:
    """A request smaller than any model's window asks nothing (the spec's path sends one
    request), nor does a run without a key (it would be refused): the catalogue's figure."""
    route = mock.get(GEMINI_MODEL).respond(200, json={"inputTokenLimit": 8192})
    largest = Window(2_097_152, WindowSource.PROVIDER)
    assert client(transport, "google").input_limit(request("google", "gemini-2.5-flash")) == largest
    keyless = LLMProviders({}, config_dir=tmp_path, clock=FakeClock(), sending=False)
    assert keyless.input_limit(request("google", "gemini-2.5-flash", BIG_LOG)) == largest
    keyless.close()
    assert not route.called
