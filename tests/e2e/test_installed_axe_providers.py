"""The installed ``axe`` as a real process against loopback Gemini, Bedrock, OpenCode (its
three routes), Requesty and Eden AI: the spec's stdout, each wire format on the wire,
Bedrock's checks before any request, refusals split, transient errors retried, and every
row's rejected key named by where it came from."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from axe import __version__
from axe.adapters.llm.catalogue import CATALOGUE
from axe.domain.entries import count_entries
from tests.e2e.loopback import LoopbackLLM, loopback_llm
from tests.support import CANNED_ANALYSIS, AxeHome, entries
from tests.support import run_installed as axe

SECRET = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
TOKEN = "FwoGZXIvYXdzEXAMPLESESSIONTOKEN0123"
AWS = {"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": SECRET}
BEDROCK_MODEL = "bedrock/anthropic.claude-3-5-sonnet-20241022-v2:0"
SPEC_STDOUT = (
    "Agent: helper\nEntries: 10\n--- Analysis ---\n"
    f"{CANNED_ANALYSIS}\nTrimmed: 7 entries removed, 3 entries kept.\n"
)


@pytest.fixture
def server() -> Iterator[LoopbackLLM]:
    with loopback_llm() as llm:
        yield llm


def test_gemini_end_to_end(home: AxeHome, server: LoopbackLLM) -> None:
    """google/gemini-2.5-flash: generateContent with x-goog-api-key (and axe/<version> as the
    user agent), the spec's stdout, a trim."""
    home.add_agent("helper", model="google/gemini-2.5-flash", last_n=3)
    home.write_memory("helper", entries(10))
    done = axe(
        home, "gc", "helper", GEMINI_API_KEY="g-key-0123456789", AXE_GOOGLE_BASE_URL=server.url
    )
    assert (done.returncode, done.stderr, done.stdout) == (0, "", SPEC_STDOUT)
    path, headers, body = server.requests[0]
    assert path == "/v1beta/models/gemini-2.5-flash:generateContent"
    assert headers["x-goog-api-key"] == "g-key-0123456789"
    sent = {name.lower(): value for name, value in headers.items()}
    assert sent["user-agent"] == f"axe/{__version__}"
    assert json.loads(body)["generationConfig"] == {"temperature": 0.3, "maxOutputTokens": 4096}
    assert home.memory_path("helper").read_bytes() == entries(3, start=7)


def test_bedrock_end_to_end_signed_at_the_configured_endpoint(
    home: AxeHome, server: LoopbackLLM
) -> None:
    """bedrock/…-v2:0 with env credentials and a session token: Converse at the configured
    endpoint, the model id's ':' sent as %3A, signed for bedrock in the region."""
    home.add_agent("helper", model=BEDROCK_MODEL, last_n=3)
    home.write_memory("helper", entries(10))
    done = axe(
        home,
        "gc",
        "helper",
        environment=AWS,
        AWS_SESSION_TOKEN=TOKEN,
        AWS_REGION="eu-west-1",
        AXE_BEDROCK_BASE_URL=server.url,
    )
    assert (done.returncode, done.stderr, done.stdout) == (0, "", SPEC_STDOUT)
    path, headers, _ = server.requests[0]
    assert path == "/model/anthropic.claude-3-5-sonnet-20241022-v2%3A0/converse"
    assert headers["authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
    assert "/eu-west-1/bedrock/aws4_request" in headers["authorization"]
    assert headers["x-amz-security-token"] == TOKEN


def test_bedrock_region_from_config_toml(home: AxeHome, server: LoopbackLLM) -> None:
    """[providers.bedrock] region is used when no region variable is set."""
    home.write_global_config(
        f'[providers.bedrock]\nregion = "ap-south-1"\nbase_url = "{server.url}"\n'
    )
    home.add_agent("helper", model=BEDROCK_MODEL, last_n=3)
    home.write_memory("helper", entries(10))
    done = axe(home, "gc", "helper", environment=AWS)
    assert done.returncode == 0, done.stderr
    assert "/ap-south-1/bedrock/" in server.requests[0][1]["authorization"]


def test_bedrock_without_a_region_is_exit_2_before_any_request(
    home: AxeHome, server: LoopbackLLM
) -> None:
    """No region anywhere is a config error (exit 2), one line, nothing sent, nothing trimmed."""
    home.add_agent("helper", model=BEDROCK_MODEL, last_n=3)
    home.write_memory("helper", entries(10))
    done = axe(home, "gc", "helper", environment=AWS, AXE_BEDROCK_BASE_URL=server.url)
    assert done.returncode == 2
    assert done.stderr == (
        'AWS region for provider "bedrock" is not configured (set AWS_REGION, '
        "AWS_DEFAULT_REGION, AXE_BEDROCK_REGION, or add region to [providers.bedrock] in "
        f"{home.config / 'config.toml'})\n"
    )
    assert server.requests == []
    assert home.memory_path("helper").read_bytes() == entries(10)


@pytest.mark.parametrize("has_file", [False, True], ids=["no file", "file without it"])
def test_bedrock_without_credentials_is_exit_3_before_any_request(
    home: AxeHome, server: LoopbackLLM, has_file: bool
) -> None:
    """No credentials (no variables, and no such profile) is exit 3 like a missing key: one
    line naming the profile and the credentials file it read, if there is one, and what to
    set; nothing sent."""
    home.add_agent("helper", model=BEDROCK_MODEL, last_n=3)
    home.write_memory("helper", entries(10))
    credentials = home.root / ("credentials" if has_file else "nowhere/credentials")
    if has_file:
        credentials.write_text("[other]\naws_access_key_id = AKIDEXAMPLE\n")
    done = axe(
        home,
        "gc",
        "helper",
        AWS_REGION="us-east-1",
        AXE_BEDROCK_BASE_URL=server.url,
        AWS_PROFILE="nosuch",
        AWS_SHARED_CREDENTIALS_FILE=str(credentials),
    )
    looked = f'no profile "nosuch" in {credentials}' if has_file else "no shared credentials file"
    assert done.returncode == 3
    assert done.stderr == (
        'AWS credentials for provider "bedrock" are not configured: none in the environment '
        f"and {looked} (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE and "
        "AWS_SHARED_CREDENTIALS_FILE)\n"
    )
    assert server.requests == []


def test_a_bedrock_estimate_needs_no_region_and_no_credentials(home: AxeHome) -> None:
    """--estimate sends no analysis, so a Bedrock agent without a region or AWS
    credentials (and a credentials file that does not parse) is estimated: exit 0, with
    one line saying Bedrock could not count without them."""
    home.add_agent("helper", model=BEDROCK_MODEL, last_n=3)
    home.write_memory("helper", entries(10))
    broken = home.root / "credentials"
    broken.write_text("not an ini file\n")
    done = axe(home, "gc", "helper", "--estimate", AWS_SHARED_CREDENTIALS_FILE=str(broken))
    assert (done.returncode, done.stderr) == (
        0,
        "Warning: bedrock could not count gc's requests (no key or "
        "credentials to ask with); the budget and the estimate rest on gc's own estimate, "
        "which errs high\n",
    )
    assert done.stdout.splitlines()[:4] == [
        "Agent: helper",
        "Entries: 10",
        f"Model: {BEDROCK_MODEL}, input window unknown until a request is refused",
        "Requests: 1",
    ]


def test_bedrock_denial_is_one_line_without_the_secrets(home: AxeHome, server: LoopbackLLM) -> None:
    """A denial echoing the secret key and the token is exit 3, sent once, secrets redacted,
    the credentials' source named."""
    server.fail_with = (403, "AccessDeniedException", f"denied for {SECRET} with {TOKEN}")
    home.add_agent("helper", model=BEDROCK_MODEL, last_n=3)
    home.write_memory("helper", entries(10))
    done = axe(
        home,
        "gc",
        "helper",
        environment=AWS,
        AWS_SESSION_TOKEN=TOKEN,
        AWS_REGION="eu-west-1",
        AXE_BEDROCK_BASE_URL=server.url,
    )
    assert done.returncode == 3
    assert done.stderr == (
        "bedrock API error (HTTP 403 AccessDeniedException): denied for [redacted] with "
        "[redacted] (credentials from AWS_ACCESS_KEY_ID)\n"
    )
    assert len(server.requests) == 1


def test_opencode_takes_three_routes_by_model_name(home: AxeHome, server: LoopbackLLM) -> None:
    """OpenCode Zen: claude-* goes to Anthropic Messages (with anthropic-version), gpt-* to
    the Responses API, anything else to Chat Completions; Bearer on all three."""
    for name, model in (
        ("a-claude", "opencode/claude-sonnet-4"),
        ("b-gpt", "opencode/gpt-5"),
        ("c-other", "opencode/minimax-m2.5"),
    ):
        home.add_agent(name, model=model, last_n=3)
        home.write_memory(name, entries(10))
    done = axe(
        home,
        "gc",
        "--all",
        OPENCODE_API_KEY="oc-key-0123456789",
        AXE_OPENCODE_BASE_URL=f"{server.url}/zen",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.count(CANNED_ANALYSIS) == 3
    paths = [path for path, _, _ in server.requests]
    assert paths == ["/zen/v1/messages", "/zen/v1/responses", "/zen/v1/chat/completions"]
    for _, headers, _ in server.requests:
        assert headers["authorization"] == "Bearer oc-key-0123456789"
    assert [headers.get("anthropic-version") for _, headers, _ in server.requests] == [
        "2023-06-01",
        None,
        None,
    ]
    assert "temperature" not in json.loads(server.requests[1][2])  # gpt-5 rejects it


@pytest.mark.parametrize(
    ("model", "env"),
    [
        ("google/gemini-2.5-flash", {"GEMINI_API_KEY": "g"}),
        (BEDROCK_MODEL, {**AWS, "AWS_REGION": "us-east-1"}),
    ],
    ids=["gemini", "bedrock"],
)
def test_a_log_beyond_the_window_is_split_on_each_providers_refusal(
    home: AxeHome, server: LoopbackLLM, model: str, env: dict[str, str]
) -> None:
    """Gemini's INVALID_ARGUMENT and Bedrock's "Input is too long" are refusals: the log is
    analysed in parts and merged, every entry in one part, and trimmed (Gemini here does
    not tell the model's window beforehand)."""
    server.window, server.tells_window = 12_000, False
    merged = "## Patterns Found\nmerged\n\n## Repeated Work\nNone.\n\n## Recommendations\nNone."
    server.reply_for = lambda prompt: merged if prompt.merge else "part report"
    home.add_agent("diary", model=model, last_n=10)
    home.write_memory("diary", entries(1200))
    provider = model.split("/", maxsplit=1)[0]
    done = axe(
        home, "gc", "diary", environment={**env, f"AXE_{provider.upper()}_BASE_URL": server.url}
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert f"--- Analysis ---\n{merged}\n" in done.stdout
    parts = [p for p in server.analyses if not p.merge]
    assert len(parts) >= 2
    assert sum(count_entries(p.user.encode()) for p in parts) == 1200
    assert [p for p in server.prompts if p.refused]


def test_gemini_unavailable_is_retried_and_said(home: AxeHome, server: LoopbackLLM) -> None:
    """Gemini's 503 UNAVAILABLE is retried twice, then one line says so; exit 3, no trim."""
    server.fail_with = (503, "UNAVAILABLE", "The model is overloaded. Please try again later.")
    home.add_agent("helper", model="google/gemini-2.5-flash", last_n=3)
    home.write_memory("helper", entries(10))
    done = axe(home, "gc", "helper", GEMINI_API_KEY="g", AXE_GOOGLE_BASE_URL=server.url)
    assert done.returncode == 3
    assert done.stderr == (
        "google API error (HTTP 503 UNAVAILABLE): The model is overloaded. Please try again "
        "later. (after 2 retries)\n"
    )
    assert len(server.requests) == 3
    assert home.memory_path("helper").read_bytes() == entries(10)


def test_a_rejected_gemini_key_is_exit_3_naming_its_variable(
    home: AxeHome, server: LoopbackLLM
) -> None:
    """A wrong GEMINI_API_KEY, refused as Gemini refuses it (HTTP 400 INVALID_ARGUMENT, its
    ErrorInfo saying API_KEY_INVALID), is exit 3 with one line naming GEMINI_API_KEY as
    every provider's rejected key does; sent once, the key never shown, nothing trimmed."""
    server.key = "g-right-key-0123456789"
    home.add_agent("helper", model="google/gemini-2.5-flash", last_n=3)
    home.write_memory("helper", entries(10))
    wrong = "g-wrong-key-0123456789"
    done = axe(home, "gc", "helper", GEMINI_API_KEY=wrong, AXE_GOOGLE_BASE_URL=server.url)
    assert (done.returncode, done.stdout) == (3, "Agent: helper\nEntries: 10\n")
    assert done.stderr == (
        "google API error (HTTP 400 INVALID_ARGUMENT): API key not valid. Please pass a valid "
        "API key. (key from GEMINI_API_KEY)\n"
    )
    assert len(server.requests) == 1
    assert home.memory_path("helper").read_bytes() == entries(10)


def test_geminis_retry_delay_beyond_what_gc_waits_ends_at_once(
    home: AxeHome, server: LoopbackLLM
) -> None:
    """A 429 whose RetryInfo asks for an hour (a daily quota) is one request, not three into
    a limit Gemini said will last; exit 3, the line says what was asked, nothing trimmed."""
    message = "You exceeded your current quota, please check your plan and billing details."
    server.fail_with = (429, "RESOURCE_EXHAUSTED", message)
    server.fail_details = [
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "3600s"}
    ]
    home.add_agent("helper", model="google/gemini-2.5-flash", last_n=3)
    home.write_memory("helper", entries(10))
    done = axe(home, "gc", "helper", GEMINI_API_KEY="g", AXE_GOOGLE_BASE_URL=server.url)
    assert done.returncode == 3
    assert done.stderr == (
        f"google API error (HTTP 429 RESOURCE_EXHAUSTED): {message} (the provider asked to "
        "wait 3600s before trying again; gc waits at most 60s)\n"
    )
    assert len(server.requests) == 1
    assert home.memory_path("helper").read_bytes() == entries(10)


def test_requesty_and_edenai_end_to_end_with_attribution_and_cost(
    home: AxeHome, server: LoopbackLLM
) -> None:
    """The Go axe's two newest rows: Chat Completions at {base}/chat/completions with a
    Bearer key; Requesty's HTTP-Referer and X-Title from config.toml and AXE_REQUESTY_TITLE;
    the usage.cost each states (US dollars) reaches --json as OpenRouter's does."""
    server.cost = 0.00123
    home.write_global_config('[providers.requesty]\nreferer = "https://me.example"\n')
    home.add_agent("a-requesty", model="requesty/openai/gpt-4o-mini", last_n=3)
    home.add_agent("b-edenai", model="edenai/openai/gpt-4o-mini", last_n=3)
    for name in ("a-requesty", "b-edenai"):
        home.write_memory(name, entries(10))
    done = axe(
        home,
        "gc",
        "--all",
        "--json",
        REQUESTY_API_KEY="rq-key-0123456789",
        EDENAI_API_KEY="eden-key-0123456789",
        AXE_REQUESTY_BASE_URL=server.url,
        AXE_REQUESTY_TITLE="nightly gc",
        AXE_EDENAI_BASE_URL=f"{server.url}/v3",
    )
    assert (done.returncode, done.stderr) == (0, "")
    reports = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(r["agent"], r["status"], r["usage"]["cost"]) for r in reports] == [
        ("a-requesty", "trimmed", 0.00123),
        ("b-edenai", "trimmed", 0.00123),
    ]
    (requesty_path, sent, body), (edenai_path, sent_too, _) = server.requests
    requesty, edenai = ({k.lower(): v for k, v in one.items()} for one in (sent, sent_too))
    assert (requesty_path, edenai_path) == ("/chat/completions", "/v3/chat/completions")
    assert requesty["authorization"] == "Bearer rq-key-0123456789"
    assert (requesty["http-referer"], requesty["x-title"]) == ("https://me.example", "nightly gc")
    assert json.loads(body)["model"] == "openai/gpt-4o-mini"
    assert edenai["authorization"] == "Bearer eden-key-0123456789"
    assert "http-referer" not in edenai
    assert "x-title" not in edenai
    assert home.memory_path("b-edenai").read_bytes() == entries(3, start=7)


REFUSED_KEY = {  # each wire format's refusal of a wrong key, as the loopback words it
    "anthropic-messages": "HTTP 401 authentication_error): invalid x-api-key",
    "gemini": "HTTP 400 INVALID_ARGUMENT): API key not valid. Please pass a valid API key.",
    "openai-chat": "HTTP 401 invalid_api_key): Incorrect API key provided: [redacted].",
}
REFUSED_KEY["openai-responses"] = REFUSED_KEY["openai-chat"]


def test_every_providers_rejected_key_names_where_it_came_from(
    home: AxeHome, server: LoopbackLLM
) -> None:
    """Every row that sends a key, each refusing a wrong one in its own words (Gemini with
    a 400): one line per agent naming the key's variable, never the key; exit 1 (--all)."""
    server.key = "the-right-key-0123456789"
    environment = {}
    expected = []
    for name, row in sorted(CATALOGUE.items()):
        if not row.key_variable:
            continue
        model = "gpt-5" if name == "opencode" else "m-1"
        home.add_agent(name, model=f"{name}/{model}", last_n=3)
        home.write_memory(name, entries(2))
        environment[row.key_variable] = f"wrong-{name}-key-0123456789"
        environment[f"AXE_{name.upper()}_BASE_URL"] = server.url
        said = REFUSED_KEY[row.route(model).wire.name]
        expected.append(
            f'Error: gc failed for agent "{name}": {name} API error ({said} '
            f"(key from {row.key_variable})"
        )
    done = axe(home, "gc", "--all", environment=environment)
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        *expected,
        f"gc completed with errors: {len(expected)} of {len(expected)} agents failed",
    ]
    assert len(server.requests) == len(expected) == 9


# A 429 from OpenAI, as its API words it: the code says more than the type.
OPENAI_RATE_LIMIT = {
    "error": {
        "message": "Rate limit reached for gpt-4o in organization org-abc on requests per min "
        "(RPM): Limit 500, Used 500, Requested 1. Please try again in 120ms.",
        "type": "requests",
        "param": None,
        "code": "rate_limit_exceeded",
    }
}


def test_a_rate_limit_says_the_providers_code_not_its_type(
    home: AxeHome, server: LoopbackLLM
) -> None:
    """OpenAI's 429 names ``rate_limit_exceeded`` (its code), not ``requests`` (its type):
    exit 3 after the retries, nothing trimmed."""
    server.status, server.raw_reply = 429, json.dumps(OPENAI_RATE_LIMIT).encode()
    home.add_agent("helper", model="openai/gpt-4o", last_n=3)
    home.write_memory("helper", entries(10))
    done = axe(home, "gc", "helper", OPENAI_API_KEY="sk-o", AXE_OPENAI_BASE_URL=server.url)
    assert done.returncode == 3
    assert done.stderr == (
        "openai API error (HTTP 429 rate_limit_exceeded): Rate limit reached for gpt-4o in "
        "organization org-abc on requests per min (RPM): Limit 500, Used 500, Requested 1. "
        "Please try again in 120ms. (after 2 retries)\n"
    )
    assert home.memory_path("helper").read_bytes() == entries(10)


# A key refused by the provider behind a gateway, as each gateway relays it: LiteLLM's proxy
# (BerriAI/litellm: its exception's name before the upstream's words, the status as code)
# and OpenRouter (OpenRouterTeam/ai-sdk-provider#24: metadata naming the provider).
LITELLM_UPSTREAM_REFUSED = {
    "error": {
        "message": "litellm.AuthenticationError: AuthenticationError: OpenAIException - "
        "Incorrect API key provided: sk-proj-****1234. You can find your API key at "
        "https://platform.openai.com/account/api-keys.. Received Model Group=gpt-4o\n"
        "Available Model Group Fallbacks=None",
        "type": "authentication_error",
        "param": None,
        "code": "401",
    }
}
OPENROUTER_UPSTREAM_REFUSED = {
    "error": {
        "message": "Provider returned error",
        "code": 401,
        "metadata": {
            "raw": '{"type":"error","error":{"type":"authentication_error",'
            '"message":"invalid x-api-key"}}',
            "provider_name": "Anthropic",
            "isDownstreamPipeClean": True,
            "isErrorUpstreamFault": True,
        },
    }
}


@pytest.mark.parametrize(
    ("provider", "reply", "said"),
    [
        (
            "openai",
            LITELLM_UPSTREAM_REFUSED,
            "openai API error (HTTP 401 authentication_error): litellm.AuthenticationError: "
            "AuthenticationError: OpenAIException - Incorrect API key provided: "
            "sk-proj-****1234. You can find your API key at "
            "https://platform.openai.com/account/api-keys.. Received Model Group=gpt-4o "
            "Available Model Group Fallbacks=None",
        ),
        (
            "openrouter",
            OPENROUTER_UPSTREAM_REFUSED,
            "openrouter API error (HTTP 401): Provider returned error",
        ),
    ],
    ids=["litellm", "openrouter"],
)
def test_a_key_refused_behind_a_gateway_is_not_blamed_on_ours(
    home: AxeHome, server: LoopbackLLM, provider: str, reply: dict[str, Any], said: str
) -> None:
    """A 401 the gateway passes on from its upstream says the provider behind it refused
    the gateway's key, and does not name the variable of the key the gateway accepted."""
    server.status, server.raw_reply = 401, json.dumps(reply).encode()
    home.add_agent("helper", model=f"{provider}/openai/gpt-4o", last_n=3)
    home.write_memory("helper", entries(10))
    environment = {
        f"{provider.upper()}_API_KEY": "sk-gateway-0123456789",
        f"AXE_{provider.upper()}_BASE_URL": server.url,
    }
    done = axe(home, "gc", "helper", environment=environment)
    assert done.returncode == 3
    assert done.stderr == (
        f"{said} (the provider behind the gateway refused the gateway's key, not gc's)\n"
    )
    assert home.memory_path("helper").read_bytes() == entries(10)
