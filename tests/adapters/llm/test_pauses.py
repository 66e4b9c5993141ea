"""A provider's 429 retry-after slows every worker talking to it, not only the one told."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest
import respx

from axe.adapters.llm.client import HttpLLMClient
from axe.adapters.llm.retry import SharedPauses
from axe.adapters.llm.settings import ProviderSettings
from axe.adapters.llm.transport import HttpTransport
from axe.application.ports import AnalysisRequest
from axe.domain.errors import ApiError
from axe.domain.model import ModelRef
from axe.testing import FakeClock
from tests.adapters.llm.http_clients import client as http_client

ANTHROPIC = "https://api.anthropic.com/v1/messages"
OPENAI = "https://api.openai.com/v1/chat/completions"
OK = {"content": [{"type": "text", "text": "r"}]}
OPENAI_OK = {"choices": [{"message": {"content": "r"}}]}
SETTINGS = ProviderSettings(api_key="k", base_url="", key_variable="K")


def request(provider: str) -> AnalysisRequest:
    return AnalysisRequest(
        model=ModelRef(provider, "m"),
        system_prompt="p",
        content=b"## x\n",
        temperature=0.3,
        max_tokens=10,
    )


def when_first_waiting(clock: FakeClock, other: Callable[[], None]) -> None:
    """Run ``other`` once, at the moment the first sleeper starts waiting: another worker's
    turn. A FakeClock has moved on when it calls back, so it is set back first."""

    def turn(_: float) -> None:
        clock.on_sleep = None
        clock.time -= clock.slept[-1]
        other()

    clock.on_sleep = turn


def send(client: HttpLLMClient, provider: str) -> None:
    client.complete(request(provider))


def recording(
    clock: FakeClock, times: list[float], replies: list[httpx.Response]
) -> Callable[[httpx.Request], httpx.Response]:
    def answer(_: httpx.Request) -> httpx.Response:
        times.append(clock.time)
        return replies.pop(0)

    return answer


def test_a_retry_after_holds_back_the_other_workers_of_that_provider(
    clock: FakeClock, transport: HttpTransport
) -> None:
    """Worker B, starting while worker A waits out a 429's retry-after, waits too instead
    of spending a request on a limit the provider has already announced."""
    times: list[float] = []
    replies = [httpx.Response(429, headers={"retry-after": "2"}), httpx.Response(200, json=OK)]
    replies.append(httpx.Response(200, json=OK))
    client = http_client("anthropic", transport, SETTINGS)
    when_first_waiting(clock, lambda: send(client, "anthropic"))
    with respx.mock() as mock:
        mock.post(ANTHROPIC).mock(side_effect=recording(clock, times, replies))
        client.complete(request("anthropic"))
    assert times == [0.0, 2.0, 2.0]  # A refused; B after the pause; A's own retry
    assert clock.slept == [2.0, 2.0]  # A's wait, and B's for the same pause


def test_another_provider_is_not_held_back(clock: FakeClock, transport: HttpTransport) -> None:
    """One provider's rate limit does not delay requests to another."""
    times: list[float] = []
    openai_times: list[float] = []
    replies = [httpx.Response(429, headers={"retry-after": "2"}), httpx.Response(200, json=OK)]
    other = http_client("openai", transport, SETTINGS)
    when_first_waiting(clock, lambda: send(other, "openai"))
    with respx.mock() as mock:
        mock.post(ANTHROPIC).mock(side_effect=recording(clock, times, replies))
        mock.post(OPENAI).mock(
            side_effect=recording(clock, openai_times, [httpx.Response(200, json=OPENAI_OK)])
        )
        http_client("anthropic", transport, SETTINGS).complete(request("anthropic"))
    assert openai_times == [0.0]


def test_a_pause_longer_than_the_deadline_is_reported_not_slept() -> None:
    """A pause that outlasts the request's time limit fails at once, saying why."""
    clock = FakeClock()
    pauses = SharedPauses(clock)
    pauses.hold("anthropic api.anthropic.com", 50)
    assert not pauses.wait("anthropic api.anthropic.com", deadline=30)
    assert clock.slept == []
    assert pauses.wait("openai api.openai.com", deadline=30)


def test_a_closed_transport_sends_nothing_more(transport: HttpTransport) -> None:
    """After an interrupted run closes the client, stragglers neither send nor retry."""
    transport.close()
    client = http_client("anthropic", transport, SETTINGS)
    with respx.mock(assert_all_called=False) as mock:
        route = mock.post(ANTHROPIC).respond(200, json=OK)
        with pytest.raises(ApiError, match="run is over"):
            client.complete(request("anthropic"))
    assert not route.called
