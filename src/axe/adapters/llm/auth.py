"""How a request proves who sends it, as an ``httpx.Auth``: httpx runs it on every attempt,
so a retry is authenticated (and, for SigV4, signed) afresh.

Imported only when a request is made (it imports httpx).
"""

from __future__ import annotations

from collections.abc import Generator

import httpx

from axe.adapters.llm.catalogue import Auth, Provider
from axe.adapters.llm.settings import ProviderSettings


class HeaderAuth(httpx.Auth):
    """The key in one header: ``x-api-key``, ``Authorization: Bearer`` or ``x-goog-api-key``."""

    def __init__(self, header: str, value: str) -> None:
        self._header = header
        self._value = value

    def __repr__(self) -> str:
        return f"HeaderAuth({self._header!r})"  # never the key

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers[self._header] = self._value
        yield request


def authentication(provider: Provider, settings: ProviderSettings) -> httpx.Auth:
    """The row's kind of authentication, holding the settings' key or credentials."""
    if provider.auth is Auth.SIGV4:
        from axe.adapters.llm.sigv4 import SigV4Auth  # noqa: PLC0415

        assert settings.aws is not None  # the composition root checked before building
        return SigV4Auth(settings.aws, settings.region)
    header, value = {
        Auth.X_API_KEY: ("x-api-key", settings.api_key),
        Auth.BEARER: ("authorization", f"Bearer {settings.api_key}"),
        Auth.GOOG_API_KEY: ("x-goog-api-key", settings.api_key),
    }[provider.auth]
    return HeaderAuth(header, value)
