"""Every LLM provider gc can analyse with, end to end, behind one ``LLMClient``: the
catalogue, wire formats, auth, the HTTP transport, config.toml and AWS credentials, and the
offline analyst.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from axe.adapters.llm.catalogue import Provider, provider
from axe.adapters.llm.offline import HeuristicAnalyst
from axe.adapters.llm.settings import TomlGlobalConfig, provider_settings
from axe.application.ports import AnalysisRequest, Clock
from axe.domain.errors import AgentError, NoTokenCountError
from axe.domain.model import ModelRef
from axe.domain.results import Completion
from axe.domain.window import Window

if TYPE_CHECKING:
    from axe.adapters.llm.client import HttpLLMClient
    from axe.adapters.llm.transport import HttpTransport


class LLMProviders:
    """The ``LLMClient`` of every row of the catalogue, chosen by the model's provider: one
    client per row, built on first use under one lock (under ``--jobs`` workers ask at the
    same moment), all over one transport, whose connections and rate-limit pauses they
    share."""

    def __init__(
        self,
        environ: Mapping[str, str],
        *,
        config_dir: Path,
        clock: Clock,
        http_timeout: float | None = None,
        max_input_tokens: int | None = None,
        user_agent: str = "axe",
        sending: bool = True,
    ) -> None:
        """``http_timeout``: seconds for one request, retries included; not ``sending``
        (``--estimate``): only windows and counts are asked for, so no key is needed
        (without one nothing is counted), and an analysis is refused."""
        self._environ = environ
        self._config = TomlGlobalConfig(config_dir / "config.toml", environ)
        self._max_input_tokens = max_input_tokens
        self._sending = sending
        self._clock, self._timeout, self._user_agent = clock, http_timeout, user_agent
        self._transport: HttpTransport | None = None
        self._building = threading.Lock()
        self._clients: dict[str, HttpLLMClient | HeuristicAnalyst] = {}

    def check(self, model: ModelRef) -> None:
        """Raises AgentError (exit 1) for a model no row serves, before any agent runs."""
        provider(model.provider).check_model(model.name)

    def read_config(self) -> None:
        """Read config.toml now, if there is one, so that ``--all`` says a broken one once
        rather than once per agent. Raises ConfigError: it does not load."""
        if self._config.path.exists():
            self._config.check()

    def input_limit(self, request: AnalysisRequest) -> Window | None:
        """None for the offline analyst: it reads a log of any size whole."""
        client = self._client(request.model)
        return None if isinstance(client, HeuristicAnalyst) else client.input_limit(request)

    def count_tokens(self, request: AnalysisRequest) -> int:
        client = self._client(request.model)
        if isinstance(client, HeuristicAnalyst):
            raise NoTokenCountError("it sends no request", offered=False)
        return client.count_tokens(request)

    def charges_tokens(self, model: ModelRef) -> bool:
        return not provider(model.provider).offline

    def complete(self, request: AnalysisRequest) -> Completion:
        if not self._sending:
            raise AgentError("internal: a run that sends nothing asked for an analysis")
        return self._client(request.model).complete(request)

    def close(self) -> None:
        """No request is started or retried after."""
        with self._building:
            if self._transport is not None:
                self._transport.close()

    def _client(self, model: ModelRef) -> HttpLLMClient | HeuristicAnalyst:
        """The client of ``model``'s row, built once; the model is checked after the
        provider's configuration, so a broken config.toml is said first for every row."""
        row = provider(model.provider)
        with self._building:
            if row.name not in self._clients:
                self._clients[row.name] = self._build(row)
            client = self._clients[row.name]
        row.check_model(model.name)
        return client

    def _build(self, row: Provider) -> HttpLLMClient | HeuristicAnalyst:
        """Raises what :func:`~axe.adapters.llm.settings.provider_settings` raises."""
        self._config.check()
        if row.offline:
            return HeuristicAnalyst()
        settings = provider_settings(
            row, self._config, self._environ, self._max_input_tokens, keyless=not self._sending
        )
        # httpx, the largest import, is loaded only by a run that may send: never for a
        # missing agent, memory disabled, --help or the offline analyst
        from axe.adapters.llm.client import HttpLLMClient  # noqa: PLC0415
        from axe.adapters.llm.transport import HttpTransport  # noqa: PLC0415

        if self._transport is None:
            self._transport = HttpTransport(
                clock=self._clock, timeout=self._timeout, user_agent=self._user_agent
            )
        return HttpLLMClient(self._transport, row, settings)
