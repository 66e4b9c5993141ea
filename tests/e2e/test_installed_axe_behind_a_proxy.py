"""The installed ``axe`` as a real process behind a loopback proxy.

The provider is at ``llm.axe.test``, a name only the proxy resolves, as for the user who
reported it: the request can only succeed through the proxy. The whole environment of each
run is given explicitly, so the machine's own proxy settings play no part.
"""

from __future__ import annotations

import pytest

from tests.e2e.loopback import LoopbackLLM
from tests.e2e.loopback_proxy import LLM_HOST, LoopbackProxy, unused_port
from tests.e2e.tls import CA_FILE
from tests.support import CANNED_ANALYSIS, AxeHome, entries
from tests.support import run_installed as axe

TRIMMED = (
    f"Agent: helper\nEntries: 3\n--- Analysis ---\n{CANNED_ANALYSIS}\n"
    "Trimmed: 2 entries removed, 1 entries kept.\n"
)


@pytest.fixture
def helper(home: AxeHome) -> AxeHome:
    """An Ollama agent with three entries that keeps one."""
    home.add_agent("helper", model="ollama/m", last_n=1)
    home.write_memory("helper", entries(3))
    return home


def test_gc_through_a_forwarding_proxy(
    helper: AxeHome, plain_llm: LoopbackLLM, proxy: LoopbackProxy
) -> None:
    """HTTP_PROXY reaches an http:// provider that only the proxy can resolve."""
    url = f"http://{LLM_HOST}:{plain_llm.port}"
    done = axe(helper, "gc", "helper", AXE_OLLAMA_BASE_URL=url, HTTP_PROXY=proxy.url)
    assert (done.returncode, done.stderr, done.stdout) == (0, "", TRIMMED)
    assert [(r.method, r.target) for r in proxy.requests] == [("POST", f"{url}/api/chat")]
    assert helper.memory_path("helper").read_bytes() == entries(1, start=2)


def test_gc_through_a_connect_tunnel_to_a_provider_signed_by_a_company_ca(
    helper: AxeHome, tls_llm: LoopbackLLM, proxy: LoopbackProxy
) -> None:
    """https_proxy tunnels with CONNECT and SSL_CERT_FILE's CA vouches for the provider."""
    done = axe(
        helper,
        "gc",
        "helper",
        AXE_OLLAMA_BASE_URL=f"https://{LLM_HOST}:{tls_llm.port}",
        https_proxy=proxy.url,
        SSL_CERT_FILE=str(CA_FILE),
    )
    assert (done.returncode, done.stderr, done.stdout) == (0, "", TRIMMED)
    assert [(r.method, r.target) for r in proxy.requests] == [
        ("CONNECT", f"{LLM_HOST}:{tls_llm.port}")
    ]
    assert tls_llm.requests[0][0] == "/api/chat"


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_all_through_a_proxy_reuses_one_connection(
    home: AxeHome, plain_llm: LoopbackLLM, tls_llm: LoopbackLLM, proxy: LoopbackProxy, scheme: str
) -> None:
    """--all opens one connection to the proxy (and one tunnel) for every agent."""
    for name in ("a", "b", "c"):
        home.add_agent(name, model="ollama/m", last_n=1)
        home.write_memory(name, entries(3))
    server = plain_llm if scheme == "http" else tls_llm
    done = axe(
        home,
        "gc",
        "--all",
        AXE_OLLAMA_BASE_URL=f"{scheme}://{LLM_HOST}:{server.port}",
        ALL_PROXY=proxy.url,
        SSL_CERT_FILE=str(CA_FILE),
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.count("Trimmed: 2 entries removed, 1 entries kept.") == 3
    assert len(proxy.client_ports) == 1
    assert len(proxy.requests) == (3 if scheme == "http" else 1)
    assert len(server.requests) == 3


def test_a_dead_proxy_is_exit_3_naming_it_without_credentials(helper: AxeHome) -> None:
    """Nothing listening at HTTP_PROXY: exit 3, one line naming the proxy, nothing trimmed."""
    port = unused_port()
    url = f"http://{LLM_HOST}:11434"
    done = axe(
        helper,
        "gc",
        "helper",
        AXE_OLLAMA_BASE_URL=url,
        HTTP_PROXY=f"http://user:hunter2@127.0.0.1:{port}",
    )
    assert (done.returncode, done.stdout) == (3, "Agent: helper\nEntries: 3\n")
    assert done.stderr == (
        f"cannot reach ollama at {url}/api/chat through proxy http://127.0.0.1:{port}: "
        "no connection to the proxy (connection refused) (after 2 retries)\n"
    )
    assert helper.memory_path("helper").read_bytes() == entries(3)


def test_refused_proxy_credentials_are_exit_3_and_never_printed(
    helper: AxeHome, proxy: LoopbackProxy
) -> None:
    """A 407 names the proxy; the password it echoes back is redacted."""
    proxy.credentials = ("user", "right")
    proxy.reason_407 = "Proxy Authentication Required for {decoded}"
    url = f"https://{LLM_HOST}:11434"
    done = axe(
        helper,
        "gc",
        "helper",
        AXE_OLLAMA_BASE_URL=url,
        HTTPS_PROXY=proxy.url_with("user", "s3cr%2Ft"),
    )
    assert done.returncode == 3
    assert done.stderr == (
        f"cannot reach ollama at {url}/api/chat through proxy {proxy.url}: "
        "the proxy answered 407 Proxy Authentication Required for user:[redacted]\n"
    )
    assert "s3cr" not in done.stdout + done.stderr


def test_no_proxy_sends_a_local_model_directly(helper: AxeHome, plain_llm: LoopbackLLM) -> None:
    """NO_PROXY=127.0.0.1 keeps a local Ollama off a proxy that would fail."""
    done = axe(
        helper,
        "gc",
        "helper",
        AXE_OLLAMA_BASE_URL=plain_llm.url,
        HTTP_PROXY=f"http://127.0.0.1:{unused_port()}",
        NO_PROXY="localhost,127.0.0.1",
    )
    assert (done.returncode, done.stderr, done.stdout) == (0, "", TRIMMED)


def test_a_tls_inspecting_proxy_without_its_root_points_at_ssl_cert_file(
    helper: AxeHome, tls_llm: LoopbackLLM, proxy: LoopbackProxy
) -> None:
    """A certificate from an unknown CA behind a proxy says how to trust the proxy's root."""
    url = f"https://{LLM_HOST}:{tls_llm.port}"
    done = axe(helper, "gc", "helper", AXE_OLLAMA_BASE_URL=url, HTTPS_PROXY=proxy.url)
    assert done.returncode == 3
    assert done.stderr == (
        f"cannot reach ollama at {url}/api/chat through proxy {proxy.url}: certificate verify "
        "failed: unable to get local issuer certificate; if a proxy inspects TLS, set "
        "SSL_CERT_FILE to a bundle with its root certificate\n"
    )
    assert helper.memory_path("helper").read_bytes() == entries(3)


def test_an_unusable_proxy_setting_is_exit_2(helper: AxeHome) -> None:
    """A proxy URL axe cannot speak to is a config error, before any request."""
    done = axe(
        helper,
        "gc",
        "helper",
        AXE_OLLAMA_BASE_URL=f"http://{LLM_HOST}:11434",
        HTTP_PROXY="ftp://user:hunter2@proxy.test:2121",
    )
    assert done.returncode == 2
    assert done.stderr == (
        "the proxy in HTTP_PROXY (ftp://proxy.test:2121) is not an http://, https:// or "
        "socks5:// URL\n"
    )


def test_proxy_settings_are_not_read_on_paths_that_make_no_request(home: AxeHome) -> None:
    """An unusable proxy variable fails no run that makes no request."""
    home.add_agent("quiet", enabled=False)
    done = axe(home, "gc", "quiet", HTTPS_PROXY="ftp://proxy.test:2121")
    assert (done.returncode, done.stdout) == (0, "")
    assert done.stderr == 'Warning: agent "quiet" does not have memory enabled. Skipping.\n'
