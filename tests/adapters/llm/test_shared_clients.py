"""One client per provider and one HTTP transport per run, however many workers start at
once: under ``--jobs`` every worker asks for its provider's client at the same moment, and
they must share one, with its connections and its pauses for a rate limit."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any, cast

import httpx
import pytest
import respx

from axe.adapters.llm import LLMProviders
from axe.adapters.llm.body import JsonBody
from axe.adapters.llm.settings import ProviderSettings
from axe.adapters.llm.transport import HttpTransport
from axe.application.ports import AnalysisRequest
from axe.composition import production_ports
from axe.domain.errors import ApiError
from axe.domain.model import ModelRef
from axe.domain.prompt import PATTERN_DETECTION_PROMPT
from axe.domain.window import Window, WindowSource
from axe.testing import FakeClock, RecordingOutput
from tests.adapters.llm.http_clients import client as http_client

WORKERS = 8


@pytest.fixture(autouse=True)
def frequent_thread_switches() -> Iterator[None]:
    """Switch threads every microsecond, so a check-then-act race shows in every run."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(before)


def at_once(call: Callable[[], object]) -> list[object]:
    """``call`` from WORKERS threads released together; what each got, in any order."""
    start = threading.Barrier(WORKERS)
    got: list[object] = []

    def worker() -> None:
        start.wait()
        got.append(call())

    threads = [threading.Thread(target=worker) for _ in range(WORKERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return got


def big_request(model: str = "llama3") -> AnalysisRequest:
    return AnalysisRequest(
        model=ModelRef("ollama", model),
        system_prompt=PATTERN_DETECTION_PROMPT,
        content=b"## 2026-01-01T00:00:00Z\n**Task:** x\n" * 2000,
        temperature=0.3,
        max_tokens=4096,
    )


@pytest.mark.parametrize("round_", range(10))
def test_workers_asking_at_once_get_one_client_over_one_transport(
    tmp_path: Path, round_: int
) -> None:
    """Eight workers asking for the same provider's client at once all get the same one,
    and every provider's client sends over the same transport."""
    environ = {
        "XDG_CONFIG_HOME": str(tmp_path),
        "XDG_DATA_HOME": str(tmp_path),
        "ANTHROPIC_API_KEY": "sk-test",
    }
    with production_ports(environ, RecordingOutput()) as ports:
        llm = ports.llm
        assert isinstance(llm, LLMProviders)
        clients = at_once(lambda: llm._client(ModelRef("ollama", "llama3")))
        others = at_once(lambda: llm._client(ModelRef("anthropic", "claude")))
    assert len({id(client) for client in clients}) == 1
    transports = {id(cast(Any, client)._transport) for client in [*clients, *others]}
    assert len(transports) == 1


def test_ollama_asks_for_a_models_window_once_however_many_ask_at_once() -> None:
    """Eight parts measuring the same model at once: /api/show is asked once."""
    transport = HttpTransport(clock=FakeClock())
    client = http_client(
        "ollama", transport, ProviderSettings(api_key="", base_url="", key_variable="")
    )
    with respx.mock() as mock:
        show = mock.post("http://localhost:11434/api/show").respond(
            200,
            json={"model_info": {"general.architecture": "llama", "llama.context_length": 8192}},
        )
        limits = at_once(lambda: client.input_limit(big_request()))
    transport.close()
    assert show.call_count == 1
    assert set(limits) == {Window(8192 - 4096, WindowSource.MODEL)}


@pytest.mark.parametrize("status", [404, 405, 501])
def test_an_ollama_compatible_server_without_api_show_is_sent_the_log_as_before(
    status: int,
) -> None:
    """A server that has no /api/show leaves the window unknown (no cap), rather than
    failing a gc that worked before gc asked."""
    transport = HttpTransport(clock=FakeClock())
    client = http_client(
        "ollama", transport, ProviderSettings(api_key="", base_url="", key_variable="")
    )
    with respx.mock() as mock:
        mock.post("http://localhost:11434/api/show").respond(status, json={"error": "no"})
        chat = mock.post("http://localhost:11434/api/chat").respond(
            200, json={"message": {"content": "## Patterns Found\nok"}}
        )
        limit = client.input_limit(big_request())
        completion = client.complete(big_request())
    transport.close()
    assert (limit, completion.text, chat.call_count) == (None, "## Patterns Found\nok", 1)


def test_first_requests_at_once_share_one_client() -> None:
    """Workers whose first requests start together make one httpx client between them,
    so none is left unclosed and connections are reused."""
    transport = HttpTransport(clock=FakeClock())
    built = at_once(transport._shared_client)
    transport.close()
    assert len({id(client) for client in built}) == 1


def test_a_request_after_the_run_closed_the_transport_is_not_sent() -> None:
    """Once the run is over (Ctrl-C under ``--all``), a worker's next request is not sent:
    one line says so."""
    transport = HttpTransport(clock=FakeClock())
    transport.close()
    with respx.mock(assert_all_called=False) as mock:
        route = mock.post("http://127.0.0.1:9/api/chat").respond(200, json={})
        with pytest.raises(ApiError, match=r"^request not sent: the run is over$"):
            transport.exchange(
                "http://127.0.0.1:9/api/chat", headers={}, body=JsonBody({}), provider="ollama"
            )
    assert not route.called


class ClosingAuth(httpx.Auth):
    """Closes the run while it signs, as Ctrl-C under ``--all`` may while a big body is
    signed for Bedrock."""

    def __init__(self, transport: HttpTransport) -> None:
        self.transport = transport

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        self.transport.close()
        yield request


def test_a_request_the_run_closed_while_it_was_signed_is_not_sent() -> None:
    """A request still being built or signed when the run ends is not sent afterwards."""
    transport = HttpTransport(clock=FakeClock())
    with respx.mock(assert_all_called=False) as mock:
        route = mock.post("http://127.0.0.1:9/api/chat").respond(200, json={})
        with pytest.raises(ApiError, match=r"^request not sent: the run is over$"):
            transport.exchange(
                "http://127.0.0.1:9/api/chat",
                headers={},
                body=JsonBody({}),
                provider="ollama",
                auth=ClosingAuth(transport),
            )
    assert not route.called


def test_a_slow_answer_about_one_model_holds_up_no_other_model() -> None:
    """While /api/show is slow for one model, agents on another model are measured at
    once: each model has its own question."""
    release = threading.Event()
    info = {"general.architecture": "llama", "llama.context_length": 8192}

    def show(request: httpx.Request) -> httpx.Response:
        if json.loads(request.content)["model"] == "slow":
            release.wait(10)
        return httpx.Response(200, json={"model_info": info})

    transport = HttpTransport(clock=FakeClock())
    client = http_client(
        "ollama", transport, ProviderSettings(api_key="", base_url="", key_variable="")
    )
    with respx.mock() as mock:
        mock.post("http://localhost:11434/api/show").mock(side_effect=show)
        slow = threading.Thread(target=client.input_limit, args=(big_request("slow"),))
        slow.start()
        try:
            assert client.input_limit(big_request("fast")) == Window(
                8192 - 4096, WindowSource.MODEL
            )
            assert slow.is_alive()  # still waiting for its own answer
        finally:
            release.set()
            slow.join()
    transport.close()
