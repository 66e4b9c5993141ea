"""``RoutingTransport``, the one httpx transport every request goes to, and its connection
pools: one per route, each built on first use.

A route is where a request's TCP connection goes (to the provider, or to the proxy that
``proxies.py`` picks for its URL) and which scheme the request has. Building each route's
pool on its first request keeps what the single per-scheme transport bought before proxies:

- plain-http requests never load CA certificates (about 40 ms), directly or through an
  ``http://`` proxy; for https they are loaded once per process, on the first request;
- one pool per route serves every request of the process, so ``--all`` reuses one
  keep-alive connection (or one CONNECT tunnel) for all agents.

Every socket has TCP_NODELAY, the proxy's too, without our asking: httpcore's sync backend
sets it on each connection it opens (``httpcore/_backends/sync.py``, ``connect_tcp``).

httpx's own client, when it reads proxies itself (``trust_env``), builds an
``HTTPTransport`` per proxy variable and one for direct requests when the client is made,
and each loads CA certificates in its constructor (``httpx/_transports/default.py``), plain
http or not; which is why gc routes requests itself, through this transport.
"""

from __future__ import annotations

import os
import re
import ssl
import threading

import httpx

from axe.adapters.llm.proxies import EnvironmentProxy, ProxyRoutes
from axe.domain.errors import ApiError, ConfigError

_PROXY_AUTHENTICATION_REQUIRED = 407
RUN_IS_OVER = "request not sent: the run is over"


class RoutingTransport(httpx.BaseTransport):
    """Sends each request through the pool of its route, creating the pool when first needed."""

    def __init__(self, routes: ProxyRoutes) -> None:
        self._routes = routes
        self._pools: dict[tuple[str | None, str], httpx.HTTPTransport] = {}
        self._certificates: ssl.SSLContext | None = None
        self._lock = threading.Lock()
        self._closed = False

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """Raises ``httpx.ProxyError`` for a proxy's 407, as httpcore does for CONNECT."""
        proxy = self._routes.proxy_for(request.url)
        response = self._pool(proxy, request.url.scheme).handle_request(request)
        if proxy is not None and response.status_code == _PROXY_AUTHENTICATION_REQUIRED:
            # Only a proxy answers 407; said as the proxy's answer, not as the provider's.
            reason = response.extensions.get("reason_phrase", b"").decode("ascii", "replace")
            response.close()
            raise httpx.ProxyError(f"{response.status_code} {reason}".rstrip())
        return response

    def close(self) -> None:
        """Close every pool; a request that reaches this transport afterwards is not sent."""
        with self._lock:
            self._closed = True
            pools = list(self._pools.values())
            self._pools.clear()
        for pool in pools:
            pool.close()

    def _pool(self, proxy: EnvironmentProxy | None, scheme: str) -> httpx.HTTPTransport:
        key = (None if proxy is None else proxy.url, scheme)
        with self._lock:
            if self._closed:  # closed while the request was being built and signed
                raise ApiError(RUN_IS_OVER)
            pool = self._pools.get(key)
            if pool is None:
                pool = self._pools[key] = self._new_pool(proxy, scheme)
        return pool

    def _new_pool(self, proxy: EnvironmentProxy | None, scheme: str) -> httpx.HTTPTransport:
        # Plain http performs no TLS with the provider, so it needs no certificates to verify;
        # through a proxy the provider's certificate is still checked against its own name.
        verify: ssl.SSLContext | bool = self._verifying_context() if scheme == "https" else False
        # An https:// proxy's own certificate is checked as httpcore does by default
        # (httpcore._ssl.default_ssl_context): the system's CAs, which OpenSSL reads from
        # SSL_CERT_FILE/SSL_CERT_DIR when set, and certifi's.
        proxy_url = None if proxy is None else proxy.url
        return httpx.HTTPTransport(verify=verify, proxy=proxy_url)

    def _verifying_context(self) -> ssl.SSLContext:
        """certifi's CAs, or ``SSL_CERT_FILE``/``SSL_CERT_DIR`` as httpx reads them; loaded once.

        Raises:
            ConfigError: the CA file cannot be loaded (httpx would raise a bare OSError).
        """
        if self._certificates is None:
            try:
                self._certificates = httpx.create_ssl_context()
            except OSError as error:  # ssl.SSLError included
                raise ConfigError(_unloadable_certificates(error)) from None
        return self._certificates


def _unloadable_certificates(error: OSError) -> str:
    reason = re.sub(r"\s*\(_ssl\.c:\d+\)$", "", error.strerror or str(error))
    path = os.environ.get("SSL_CERT_FILE")
    where = f"in SSL_CERT_FILE ({path})" if path else "to verify TLS with"
    return f"cannot load the CA certificates {where}: {reason}"
