"""Proxies and CA bundles from the environment, at the transport: ``HttpTransport.exchange``.

httpx's client chooses the proxy; these tests check what a user sees, over loopback: a
forwarding and CONNECT proxy (``tests/e2e/loopback_proxy.py``), a TLS provider signed by
the test CA, ``NO_PROXY`` going around the proxy, every way the hop to the proxy can fail,
and each line for a setting that cannot be used.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from importlib.util import find_spec
from typing import Any

import pytest

from axe.adapters.llm.body import MEMORY, JsonBody
from axe.adapters.llm.transport import HttpTransport
from axe.adapters.shared.clock import SystemClock
from axe.domain.errors import ApiError, ConfigError
from axe.testing import FakeClock
from tests.e2e.loopback import LoopbackLLM
from tests.e2e.loopback_proxy import (
    LLM_HOST,
    OTHER_HOST,
    LoopbackProxy,
    basic_token,
    loopback_proxy,
    unused_port,
)
from tests.e2e.tls import CA_DIR, CA_FILE, TLS_FIXTURES, server_tls
from tests.support import CANNED_ANALYSIS

REPLY = {"message": {"role": "assistant", "content": CANNED_ANALYSIS}}
UNKNOWN_ISSUER = (
    "certificate verify failed: unable to get local issuer certificate; "
    "if a proxy inspects TLS, set SSL_CERT_FILE to a bundle with its root certificate"
)


@pytest.fixture
def transport() -> Iterator[HttpTransport]:
    http = HttpTransport(clock=FakeClock(), timeout=10)
    yield http
    http.close()


def post(transport: HttpTransport, url: str) -> Any:
    body = JsonBody({"model": "m", "messages": [{"role": "user", "content": MEMORY}]}, b"log")
    return transport.exchange(url, headers={}, body=body, provider="ollama")[0]


def failure(transport: HttpTransport, url: str, kind: type[Exception] = ApiError) -> str:
    with pytest.raises(kind) as caught:
        post(transport, url)
    return str(caught.value)


# Settings axe cannot use


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        (
            "HTTPS_PROXY",
            "ftp://proxy.test:2121",
            "the proxy in HTTPS_PROXY (ftp://proxy.test:2121) is not an http://, https:// or "
            "socks5:// URL",
        ),
        (
            "HTTP_PROXY",
            "http://proxy.test:port",
            "the proxy in HTTP_PROXY is not a valid URL: Invalid port: 'port'",
        ),
        *(
            (
                "HTTPS_PROXY",
                written,
                "the proxy in HTTPS_PROXY is not a valid URL (in a user name or password, "
                "write @ : / ? # and % percent-encoded, such as %23 for #)",
            )
            for written in (
                "http://user:hunter2@proxy.test:port",
                "http://user:12#hunter2@127.0.0.1:3128",
                "http://user:hun#ter2@127.0.0.1:3128",
                "http://us/er:hunter?2@127.0.0.1:3128",
            )
        ),
        ("NO_PROXY", "a:b:c", "cannot use NO_PROXY entry 'a:b:c': Invalid port: 'b:c'"),
    ],
)
def test_unusable_proxy_settings_are_config_errors_before_any_request(
    monkeypatch: pytest.MonkeyPatch,
    transport: HttpTransport,
    plain_llm: LoopbackLLM,
    variable: str,
    value: str,
    message: str,
) -> None:
    """A proxy variable axe cannot follow is one config-error line, and nothing is sent."""
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.test:3128")
    monkeypatch.setenv(variable, value)
    assert failure(transport, f"{plain_llm.url}/api/chat", ConfigError) == message
    assert plain_llm.requests == []


def test_a_socks_proxy_without_socksio_is_a_config_error(
    monkeypatch: pytest.MonkeyPatch, transport: HttpTransport
) -> None:
    """ALL_PROXY=socks5://... says what to install instead of crashing (httpx: ImportError)."""
    if find_spec("socksio") is not None:
        pytest.skip("socksio is installed here, so SOCKS proxies work")
    monkeypatch.setenv("ALL_PROXY", "socks5://user:hunter2@127.0.0.1:1080")
    assert failure(transport, "http://127.0.0.1:9/api/chat", ConfigError) == (
        "the proxy in ALL_PROXY (socks5://127.0.0.1:1080) is a SOCKS proxy, which needs the "
        "socksio package installed next to axe (pip install socksio)"
    )


# Through a loopback proxy


def test_plain_http_is_forwarded_through_the_proxy(
    monkeypatch: pytest.MonkeyPatch,
    transport: HttpTransport,
    plain_llm: LoopbackLLM,
    proxy: LoopbackProxy,
) -> None:
    """HTTP_PROXY carries http:// requests to a provider only the proxy can resolve."""
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    url = f"http://{LLM_HOST}:{plain_llm.port}/api/chat"
    assert post(transport, url) == REPLY
    assert [(r.method, r.target) for r in proxy.requests] == [("POST", url)]
    path, headers, _ = plain_llm.requests[0]
    assert path == "/api/chat"
    assert headers["Host"] == f"{LLM_HOST}:{plain_llm.port}"


@pytest.mark.parametrize("trust", ["SSL_CERT_FILE", "SSL_CERT_DIR"])
def test_https_goes_through_a_connect_tunnel_to_a_provider_signed_by_a_custom_ca(
    monkeypatch: pytest.MonkeyPatch,
    transport: HttpTransport,
    tls_llm: LoopbackLLM,
    proxy: LoopbackProxy,
    trust: str,
) -> None:
    """HTTPS_PROXY tunnels https:// with CONNECT; SSL_CERT_FILE or SSL_CERT_DIR is trusted."""
    monkeypatch.setenv("HTTPS_PROXY", proxy.url)
    monkeypatch.setenv(trust, str(CA_FILE if trust == "SSL_CERT_FILE" else CA_DIR))
    assert post(transport, f"https://{LLM_HOST}:{tls_llm.port}/api/chat") == REPLY
    assert [(r.method, r.target) for r in proxy.requests] == [
        ("CONNECT", f"{LLM_HOST}:{tls_llm.port}")
    ]
    assert tls_llm.requests[0][0] == "/api/chat"


@pytest.mark.parametrize("trust", ["SSL_CERT_FILE", "SSL_CERT_DIR"])
def test_a_provider_signed_by_a_custom_ca_is_trusted_without_a_proxy(
    monkeypatch: pytest.MonkeyPatch, transport: HttpTransport, tls_llm: LoopbackLLM, trust: str
) -> None:
    """SSL_CERT_FILE and SSL_CERT_DIR still apply to direct https requests."""
    monkeypatch.setenv(trust, str(CA_FILE if trust == "SSL_CERT_FILE" else CA_DIR))
    assert post(transport, f"{tls_llm.url}/api/chat") == REPLY


def test_an_untrusted_provider_certificate_says_what_to_trust(
    transport: HttpTransport, tls_llm: LoopbackLLM
) -> None:
    """Without the CA, the one line has OpenSSL's reason (no build noise) and the fix."""
    url = f"{tls_llm.url}/api/chat"
    assert failure(transport, url) == f"cannot reach ollama at {url}: {UNKNOWN_ISSUER}"


def test_the_tunnel_checks_the_certificate_against_the_provider_name(
    monkeypatch: pytest.MonkeyPatch,
    transport: HttpTransport,
    tls_llm: LoopbackLLM,
    proxy: LoopbackProxy,
) -> None:
    """Through CONNECT, TLS is verified for the provider's host name, not the proxy's."""
    monkeypatch.setenv("HTTPS_PROXY", proxy.url)
    monkeypatch.setenv("SSL_CERT_FILE", str(CA_FILE))
    url = f"https://{OTHER_HOST}:{tls_llm.port}/api/chat"
    assert failure(transport, url) == (
        f"cannot reach ollama at {url} through proxy {proxy.url}: certificate verify failed: "
        f"Hostname mismatch, certificate is not valid for '{OTHER_HOST}'."
    )
    assert tls_llm.requests == []


def test_a_tls_inspecting_proxy_without_its_root_certificate_is_explained(
    monkeypatch: pytest.MonkeyPatch,
    transport: HttpTransport,
    tls_llm: LoopbackLLM,
    proxy: LoopbackProxy,
) -> None:
    """A certificate from an unknown CA through a proxy points at SSL_CERT_FILE, at once:
    it is not retried, since it would fail the same way."""
    monkeypatch.setenv("HTTPS_PROXY", proxy.url)
    url = f"https://{LLM_HOST}:{tls_llm.port}/api/chat"
    assert failure(transport, url) == (
        f"cannot reach ollama at {url} through proxy {proxy.url}: {UNKNOWN_ISSUER}"
    )
    assert [r.method for r in proxy.requests] == ["CONNECT"]


@pytest.mark.parametrize(
    ("variable", "no_proxy", "host"),
    [
        ("NO_PROXY", "127.0.0.1", "127.0.0.1"),
        ("no_proxy", "localhost", "localhost"),
        ("NO_PROXY", "example.test,*", "127.0.0.1"),
    ],
)
def test_no_proxy_hosts_are_reached_directly(
    monkeypatch: pytest.MonkeyPatch,
    transport: HttpTransport,
    plain_llm: LoopbackLLM,
    variable: str,
    no_proxy: str,
    host: str,
) -> None:
    """With NO_PROXY matching, a dead HTTP_PROXY is never contacted."""
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{unused_port()}")
    monkeypatch.setenv(variable, no_proxy)
    assert post(transport, f"http://{host}:{plain_llm.port}/api/chat") == REPLY


def test_a_dead_proxy_is_named_with_the_hop_that_failed(
    monkeypatch: pytest.MonkeyPatch, transport: HttpTransport
) -> None:
    """Nothing listening at the proxy: one line naming the proxy, without its credentials."""
    port = unused_port()
    monkeypatch.setenv("HTTP_PROXY", f"http://user:hunter2@127.0.0.1:{port}")
    url = f"http://{LLM_HOST}:11434/api/chat"
    assert failure(transport, url) == (
        f"cannot reach ollama at {url} through proxy http://127.0.0.1:{port}: "
        "no connection to the proxy (connection refused) (after 2 retries)"
    )


def test_a_proxy_whose_name_does_not_resolve_is_named(
    monkeypatch: pytest.MonkeyPatch, transport: HttpTransport
) -> None:
    """A misspelt proxy host is reported as the proxy's problem, not the provider's."""
    with pytest.raises(socket.gaierror) as lookup:
        socket.getaddrinfo("proxy.axe.invalid", 3128)
    monkeypatch.setenv("HTTPS_PROXY", "proxy.axe.invalid:3128")
    url = "https://api.anthropic.com/v1/messages"
    assert failure(transport, url) == (
        f"cannot reach ollama at {url} through proxy http://proxy.axe.invalid:3128: "
        f"no connection to the proxy ({lookup.value}) (after 2 retries)"
    )


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_proxy_credentials_go_to_the_proxy_and_not_to_the_provider(
    monkeypatch: pytest.MonkeyPatch,
    transport: HttpTransport,
    plain_llm: LoopbackLLM,
    tls_llm: LoopbackLLM,
    proxy: LoopbackProxy,
    scheme: str,
) -> None:
    """user:password in the proxy URL (percent-encoded) become the proxy's Basic credentials."""
    proxy.credentials = ("user", "p@ss word")
    monkeypatch.setenv(f"{scheme.upper()}_PROXY", proxy.url_with("user", "p%40ss%20word"))
    monkeypatch.setenv("SSL_CERT_FILE", str(CA_FILE))
    server = plain_llm if scheme == "http" else tls_llm
    assert post(transport, f"{scheme}://{LLM_HOST}:{server.port}/api/chat") == REPLY
    assert proxy.requests[0].proxy_authorization == basic_token("user", "p@ss word")
    _, headers, _ = server.requests[0]
    assert "proxy-authorization" not in {name.lower() for name in headers}


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_refused_proxy_credentials_never_reach_the_message(
    monkeypatch: pytest.MonkeyPatch,
    transport: HttpTransport,
    proxy: LoopbackProxy,
    scheme: str,
) -> None:
    """A 407 is the proxy's answer, not retried (the same credentials would be refused
    again); a password it echoes back is redacted like an API key."""
    proxy.credentials = ("user", "right")
    proxy.reason_407 = "Proxy Authentication Required for {decoded} ({received})"
    monkeypatch.setenv(f"{scheme.upper()}_PROXY", proxy.url_with("user", "wr%40ng"))
    url = f"{scheme}://{LLM_HOST}:11434/api/chat"
    message = failure(transport, url)
    assert message == (
        f"cannot reach ollama at {url} through proxy {proxy.url}: the proxy answered "
        "407 Proxy Authentication Required for user:[redacted] (Basic [redacted])"
    )
    assert [r.method for r in proxy.requests] == ["CONNECT" if scheme == "https" else "POST"]


def test_a_refused_tunnel_names_the_proxy_and_its_answer(
    monkeypatch: pytest.MonkeyPatch, transport: HttpTransport, proxy: LoopbackProxy
) -> None:
    """A proxy that will not CONNECT (403) is named with its status line."""
    proxy.connect_status = 403
    monkeypatch.setenv("HTTPS_PROXY", proxy.url)
    url = "https://api.anthropic.com/v1/messages"
    assert failure(transport, url) == (
        f"cannot reach ollama at {url} through proxy {proxy.url}: the proxy answered 403 Forbidden"
    )


def test_a_provider_that_never_answers_behind_a_proxy_times_out_naming_both(
    monkeypatch: pytest.MonkeyPatch, plain_llm: LoopbackLLM, proxy: LoopbackProxy
) -> None:
    """The timeout line says the request went through the proxy."""
    plain_llm.hang.set()
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    transport = HttpTransport(clock=SystemClock(), timeout=1)  # the deadline must pass
    url = f"http://{LLM_HOST}:{plain_llm.port}/api/chat"
    try:
        assert failure(transport, url) == (
            f"request to ollama at {url} through proxy {proxy.url} timed out after 1s"
        )
    finally:
        transport.close()


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_requests_through_a_proxy_share_one_connection(
    monkeypatch: pytest.MonkeyPatch,
    transport: HttpTransport,
    plain_llm: LoopbackLLM,
    tls_llm: LoopbackLLM,
    proxy: LoopbackProxy,
    scheme: str,
) -> None:
    """Keep-alive survives the proxy: one connection to it, and one tunnel for https."""
    monkeypatch.setenv("ALL_PROXY", proxy.url)
    monkeypatch.setenv("SSL_CERT_FILE", str(CA_FILE))
    server = plain_llm if scheme == "http" else tls_llm
    for _ in range(3):
        assert post(transport, f"{scheme}://{LLM_HOST}:{server.port}/api/chat") == REPLY
    assert len(proxy.client_ports) == 1
    assert len(proxy.requests) == (3 if scheme == "http" else 1)
    assert len(set(server.client_ports)) == 1


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_an_https_proxy_is_verified_with_the_same_ca_bundle(
    monkeypatch: pytest.MonkeyPatch,
    transport: HttpTransport,
    plain_llm: LoopbackLLM,
    tls_llm: LoopbackLLM,
    scheme: str,
) -> None:
    """TLS to an https:// proxy trusts SSL_CERT_FILE too, so a company root can vouch for it."""
    monkeypatch.setenv("SSL_CERT_FILE", str(CA_FILE))
    server = plain_llm if scheme == "http" else tls_llm
    with loopback_proxy(server_tls()) as proxy:
        monkeypatch.setenv("ALL_PROXY", proxy.url)
        assert post(transport, f"{scheme}://{LLM_HOST}:{server.port}/api/chat") == REPLY
        assert proxy.url.startswith("https://")
        assert len(proxy.requests) == 1


def test_an_https_proxy_with_an_unknown_certificate_is_refused(
    monkeypatch: pytest.MonkeyPatch, transport: HttpTransport, plain_llm: LoopbackLLM
) -> None:
    """The hop to an https:// proxy is verified: without its CA, nothing is sent through it."""
    with loopback_proxy(server_tls()) as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        url = f"http://{LLM_HOST}:{plain_llm.port}/api/chat"
        assert failure(transport, url) == (
            f"cannot reach ollama at {url} through proxy {proxy.url}: {UNKNOWN_ISSUER}"
        )
        assert proxy.requests == []


@pytest.mark.parametrize(
    ("bundle", "reason"),
    [
        ("/nonexistent/ca.pem", "No such file or directory"),
        (
            str(TLS_FIXTURES / "regenerate.sh"),
            "[X509: NO_CERTIFICATE_OR_CRL_FOUND] no certificate or crl found",
        ),
    ],
)
def test_an_unusable_ssl_cert_file_is_a_config_error(
    monkeypatch: pytest.MonkeyPatch, transport: HttpTransport, bundle: str, reason: str
) -> None:
    """SSL_CERT_FILE naming no CA bundle is one config-error line, not an internal error."""
    monkeypatch.setenv("SSL_CERT_FILE", bundle)
    assert failure(transport, "https://127.0.0.1:9/api/chat", ConfigError) == (
        f"cannot load the CA certificates in SSL_CERT_FILE ({bundle}): {reason}"
    )
