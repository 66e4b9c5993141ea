"""One LLMClient contract, held by the production adapter (LLMProviders) on every HTTP row of
the catalogue (each of OpenCode's routes too), configured from the environment as a run
configures it, and by ScriptedLLM alike: with a provider that counts (the rows whose
catalogue says so, a ScriptedLLM given ``counts``) and one that does not."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
import respx

from axe.adapters.llm import LLMProviders
from axe.adapters.llm.catalogue import CATALOGUE
from axe.adapters.llm.client import base_url, endpoint
from axe.adapters.llm.settings import ProviderSettings
from axe.application.ports import AnalysisRequest, LLMClient
from axe.domain.errors import ApiError, NoTokenCountError
from axe.domain.model import ModelRef
from axe.domain.results import Completion, Usage
from axe.domain.window import Window
from axe.testing import FakeClock, ScriptedLLM
from tests.e2e.loopback import count_reply, error_in_format, reply_in_format

CONTENT = b"## 2026-01-01T00:00:00Z\n**Task:** t\n\n"
# Every row, and a model of each route of a row that routes by model name.
ROWS = [(name, route.prefix + "model-1") for name, row in CATALOGUE.items() for route in row.routes]
ENVIRON = {
    **{row.key_variable: "k" for row in CATALOGUE.values() if row.key_variable},
    "AWS_REGION": "us-east-1",
    "AWS_ACCESS_KEY_ID": "AKID",
    "AWS_SECRET_ACCESS_KEY": "s" * 40,
}

# Given a reply (text + usage) or a provider failure, build a client that meets it.
ClientFor = Callable[[str, Usage | None, str | None], LLMClient]


def request(model: ModelRef) -> AnalysisRequest:
    return AnalysisRequest(
        model=model, system_prompt="prompt", content=CONTENT, temperature=0.3, max_tokens=4096
    )


COUNTED = 321  # what a provider that counts says of the request


@pytest.fixture(params=[*ROWS, ("scripted", "m"), ("scripted", "counting")], ids="/".join)
def model(request: pytest.FixtureRequest) -> ModelRef:
    provider, name = request.param
    return ModelRef(provider, name)


@pytest.fixture
def client_for(model: ModelRef, tmp_path: Path) -> Iterator[ClientFor]:
    if model.provider == "scripted":

        def scripted(text: str, usage: Usage | None, failure: str | None) -> LLMClient:
            said = ApiError(failure) if failure else Completion(text, usage)
            counts = (lambda _: COUNTED) if model.name == "counting" else None
            return ScriptedLLM(said, counts=counts)

        yield scripted
        return
    row = CATALOGUE[model.provider]
    route = row.route(model.name)
    base = base_url(row, ProviderSettings(region="us-east-1"))
    url = endpoint(base, (route.path or route.wire.path).format(model=quote(model.name, safe="")))
    llm = LLMProviders(ENVIRON, config_dir=tmp_path, clock=FakeClock())
    with respx.mock(assert_all_called=False) as router:

        def real(text: str, usage: Usage | None, failure: str | None) -> LLMClient:
            if failure:
                error, headers = error_in_format(url, 400, "ValidationException", failure)
                router.post(url).respond(400, json=error, headers=headers)
            else:
                counts = (usage.input_tokens, usage.output_tokens) if usage else None
                router.post(url).respond(200, json=reply_in_format(url, text, counts))
            if (counting := row.counting) is not None:
                path = counting.path.format(model=quote(model.name, safe=""))
                counted = endpoint(base, path)
                router.post(counted).respond(200, json=count_reply(counted, COUNTED))
            return llm

        yield real
    llm.close()


def test_the_reply_comes_back_as_text_and_usage(client_for: ClientFor, model: ModelRef) -> None:
    """The report text and the token counts reach the use case unchanged."""
    client = client_for("## Patterns Found\nx", Usage(12, 3), None)
    assert client.complete(request(model)) == Completion("## Patterns Found\nx", Usage(12, 3))


def test_a_reply_without_usage_has_usage_none(client_for: ClientFor, model: ModelRef) -> None:
    """No usage reported means unknown, never zero."""
    assert client_for("r", None, None).complete(request(model)).usage is None


def test_a_provider_failure_is_an_api_error(client_for: ClientFor, model: ModelRef) -> None:
    """Whatever goes wrong at the provider reaches the use case as an ApiError (exit 3)."""
    with pytest.raises(ApiError, match="quota"):
        client_for("", None, "quota").complete(request(model))


def test_a_small_request_has_a_limit_no_smaller_than_the_cap(
    client_for: ClientFor, model: ModelRef
) -> None:
    """input_limit is None or a positive number of tokens and where it was learnt, asked
    before any request."""
    limit = client_for("r", None, None).input_limit(request(model))
    assert limit is None or (isinstance(limit, Window) and limit.tokens > 0)


def counts(model: ModelRef) -> bool:
    """Whether ``model``'s provider counts a request before it is sent."""
    if model.provider == "scripted":
        return model.name == "counting"
    return CATALOGUE[model.provider].counting is not None


def test_a_provider_that_counts_says_its_count_and_one_that_does_not_says_so(
    client_for: ClientFor, model: ModelRef
) -> None:
    """count_tokens is the provider's own count of the request where it offers one, and
    NoTokenCountError (the use case then plans on its own estimate) where it does not."""
    client = client_for("r", None, None)
    if counts(model):
        assert client.count_tokens(request(model)) == COUNTED
    else:
        with pytest.raises(NoTokenCountError):
            client.count_tokens(request(model))
