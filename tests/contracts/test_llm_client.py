"""One LLMClient contract, held by an HTTP provider client and by ScriptedLLM alike."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
import respx

from axe.adapters.http.settings import ProviderSettings
from axe.adapters.http.transport import HttpTransport
from axe.application.ports import AnalysisRequest, LLMClient
from axe.domain.errors import ApiError
from axe.domain.model import ModelRef
from axe.domain.results import Completion, Usage
from axe.testing import ScriptedLLM
from tests.http_clients import client as http_client

URL = "https://api.anthropic.com/v1/messages"
REQUEST = AnalysisRequest(
    model=ModelRef("anthropic", "claude-3"),
    system_prompt="prompt",
    content=b"## 2026-01-01T00:00:00Z\n**Task:** t\n\n",
    temperature=0.3,
    max_tokens=4096,
)

# Given a reply (text + usage) or a provider failure, build a client that meets it.
ClientFor = Callable[[str, Usage | None, str | None], LLMClient]


@pytest.fixture(params=["anthropic", "scripted"])
def client_for(request: pytest.FixtureRequest) -> Iterator[ClientFor]:
    if request.param == "scripted":

        def scripted(text: str, usage: Usage | None, failure: str | None) -> LLMClient:
            return ScriptedLLM(ApiError(failure) if failure else Completion(text, usage))

        yield scripted
        return
    transport = HttpTransport(sleep=lambda _: None)
    with respx.mock() as router:

        def real(text: str, usage: Usage | None, failure: str | None) -> LLMClient:
            if failure:
                router.post(URL).respond(400, json={"error": {"type": "x", "message": failure}})
            else:
                reply: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
                if usage:
                    reply["usage"] = {
                        "input_tokens": usage.input_tokens,
                        "output_tokens": usage.output_tokens,
                    }
                router.post(URL).respond(200, json=reply)
            settings = ProviderSettings(api_key="k", base_url="", key_variable="ANTHROPIC_API_KEY")
            return http_client("anthropic", transport, settings)

        yield real
    transport.close()


def test_the_reply_comes_back_as_text_and_usage(client_for: ClientFor) -> None:
    """The report text and the token counts reach the use case unchanged."""
    client = client_for("## Patterns Found\nx", Usage(12, 3), None)
    assert client.complete(REQUEST) == Completion("## Patterns Found\nx", Usage(12, 3))


def test_a_reply_without_usage_has_usage_none(client_for: ClientFor) -> None:
    """No usage reported means unknown, never zero."""
    assert client_for("r", None, None).complete(REQUEST).usage is None


def test_a_provider_failure_is_an_api_error(client_for: ClientFor) -> None:
    """Whatever goes wrong at the provider reaches the use case as an ApiError (exit 3)."""
    with pytest.raises(ApiError, match="quota"):
        client_for("", None, "quota").complete(REQUEST)
