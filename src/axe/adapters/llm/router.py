"""Choose the LLM client by the provider part of the model reference.

The use case sees one :class:`LLMClient`; this router keeps it ignorant of which providers
exist. Clients, and even the list of providers, are built on first use, so a run that never
reaches the analysis step never reads ``config.toml`` or imports an HTTP adapter.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from axe.application.ports import AnalysisRequest, LLMClient
from axe.domain.errors import AgentError
from axe.domain.model import quoted
from axe.domain.results import Completion


class ProviderRouter:
    """An :class:`LLMClient` that delegates to one client per provider name."""

    def __init__(
        self, build: Callable[[str], LLMClient], providers: Callable[[], Iterable[str]]
    ) -> None:
        """``build(name)`` makes ``name``'s client; ``providers()`` names every provider there
        is, asked once, when a provider is first checked."""
        self._build = build
        self._providers = providers
        self._known: frozenset[str] | None = None
        self._clients: dict[str, LLMClient] = {}

    def complete(self, request: AnalysisRequest) -> Completion:
        return self._client(request.model.provider).complete(request)

    def input_limit(self, request: AnalysisRequest) -> int | None:
        return self._client(request.model.provider).input_limit(request)

    def check(self, provider: str) -> None:
        """Raises AgentError for a provider no client is known for (exit 1)."""
        if self._known is None:
            self._known = frozenset(self._providers())
        if provider not in self._known:
            known = ", ".join(sorted(self._known))
            raise AgentError(f"unsupported provider {quoted(provider)} (supported: {known})")

    def _client(self, provider: str) -> LLMClient:
        client = self._clients.get(provider)
        if client is None:
            self.check(provider)
            client = self._clients[provider] = self._build(provider)
        return client
