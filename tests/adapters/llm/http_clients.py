"""The HTTP client of one row of the catalogue, as `LLMProviders` builds it."""

from __future__ import annotations

from axe.adapters.llm.catalogue import CATALOGUE
from axe.adapters.llm.client import HttpLLMClient
from axe.adapters.llm.settings import ProviderSettings, sendable
from axe.adapters.llm.transport import HttpTransport


def client(provider: str, transport: HttpTransport, settings: ProviderSettings) -> HttpLLMClient:
    """``provider``'s client over ``transport``, once its settings are known to be sendable."""
    row = CATALOGUE[provider]
    return HttpLLMClient(transport, row, sendable(row, settings))
