"""The one HTTP client built for a row of the catalogue, as the composition root builds it."""

from __future__ import annotations

from axe.adapters.http.catalogue import CATALOGUE
from axe.adapters.http.client import HttpLLMClient
from axe.adapters.http.settings import ProviderSettings
from axe.adapters.http.transport import HttpTransport


def client(provider: str, transport: HttpTransport, settings: ProviderSettings) -> HttpLLMClient:
    """``provider``'s client over ``transport``."""
    return HttpLLMClient(transport, CATALOGUE[provider], settings)
