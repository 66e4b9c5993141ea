"""The one HTTP client built for a row of the catalogue, as the composition root builds it."""

from __future__ import annotations

from axe.adapters.llm.catalogue import CATALOGUE
from axe.adapters.llm.client import HttpLLMClient
from axe.adapters.llm.settings import ProviderSettings
from axe.adapters.llm.transport import HttpTransport


def client(provider: str, transport: HttpTransport, settings: ProviderSettings) -> HttpLLMClient:
    """``provider``'s client over ``transport``."""
    return HttpLLMClient(transport, CATALOGUE[provider], settings)
