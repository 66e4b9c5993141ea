"""A loopback HTTP proxy for the proxy tests.

The proxy forwards ``http://`` requests (absolute-form, keep-alive on both sides) and
tunnels ``CONNECT host:port`` for ``https://``. It resolves names through its own table
first, so a test can give axe a provider URL that only the proxy can reach, as behind a
corporate proxy: ``llm.axe.test`` is 127.0.0.1 here and nowhere else. It records what it
was asked and on which client connections, can demand credentials (407), can refuse
tunnels with a status of the test's choosing, and can itself be reached over TLS.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import socket
import socketserver
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit

from attrs import frozen

from tests.e2e.tls import accept_tls

LLM_HOST = "llm.axe.test"  # in the server certificate; resolved by the proxy only
OTHER_HOST = "other.axe.test"  # resolved by the proxy to the same server; not in the certificate
_TIMEOUT = 30


def unused_port() -> int:
    """A loopback port nothing listens on: connecting to it is refused."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def basic_token(user: str, password: str) -> str:
    """The ``Proxy-Authorization`` value for these credentials."""
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


@frozen
class ProxiedRequest:
    method: str
    target: str
    proxy_authorization: str | None


class LoopbackProxy:
    def __init__(self) -> None:
        self.hosts = {LLM_HOST: "127.0.0.1", OTHER_HOST: "127.0.0.1"}
        self.requests: list[ProxiedRequest] = []
        self.client_ports: list[int] = []  # one per connection a client opened to the proxy
        self.credentials: tuple[str, str] | None = None  # demanded when set (else 407)
        # "{received}" in it is replaced by the Proxy-Authorization value the client sent, and
        # "{decoded}" by its user:password, as a careless proxy might echo them back
        self.reason_407 = "Proxy Authentication Required"
        self.connect_status: int | None = None  # answer CONNECT with this instead of tunnelling
        self.scheme = "http"
        self.server: socketserver.ThreadingTCPServer | None = None

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}"

    @property
    def port(self) -> int:
        assert self.server is not None
        return int(self.server.server_address[1])

    def url_with(self, user: str, password: str) -> str:
        return f"{self.scheme}://{user}:{password}@127.0.0.1:{self.port}"


@contextmanager
def loopback_proxy(tls: ssl.SSLContext | None = None) -> Iterator[LoopbackProxy]:
    state = LoopbackProxy()
    if tls is not None:
        state.scheme = "https"

    class Handler(socketserver.StreamRequestHandler):
        def handle(self) -> None:
            state.client_ports.append(self.client_address[1])
            upstreams: dict[tuple[str, int], http.client.HTTPConnection] = {}
            try:
                while self._one_request(upstreams):
                    pass
            finally:
                for upstream in upstreams.values():
                    upstream.close()

        def _one_request(
            self, upstreams: dict[tuple[str, int], http.client.HTTPConnection]
        ) -> bool:
            """Serve one request; False when the client connection is finished."""
            line = self.rfile.readline(65537).decode("latin-1").strip()
            if not line:
                return False
            method, target, _ = line.split(" ", 2)
            headers = http.client.parse_headers(self.rfile)
            body = self.rfile.read(int(headers.get("content-length", "0")))
            authorization = headers.get("proxy-authorization")
            state.requests.append(ProxiedRequest(method, target, authorization))
            if state.credentials and authorization != basic_token(*state.credentials):
                reason = state.reason_407.format(
                    received=authorization, decoded=_decoded(authorization)
                )
                self._answer(407, reason, {"proxy-authenticate": 'Basic realm="axe"'})
                return False
            if method == "CONNECT":
                self._tunnel(target)
                return False
            return self._forward(method, target, headers, body, upstreams)

        def _forward(
            self,
            method: str,
            target: str,
            headers: http.client.HTTPMessage,
            body: bytes,
            upstreams: dict[tuple[str, int], http.client.HTTPConnection],
        ) -> bool:
            url = urlsplit(target)
            host, port = url.hostname or "", url.port or 80
            upstream = upstreams.get((host, port))
            if upstream is None:
                upstream = http.client.HTTPConnection(state.hosts.get(host, host), port, _TIMEOUT)
                upstreams[host, port] = upstream
            hop_by_hop = {"proxy-authorization", "proxy-connection", "connection"}
            sent = {
                name: value for name, value in headers.items() if name.lower() not in hop_by_hop
            }
            try:
                upstream.request(
                    method, url.path + (f"?{url.query}" if url.query else ""), body, sent
                )
                reply = upstream.getresponse()
                payload = reply.read()
            except OSError:
                self._answer(502, "Bad Gateway", {})
                return False
            kept = {
                name: value
                for name, value in reply.getheaders()
                if name.lower() not in {"content-length", "transfer-encoding", "connection"}
            }
            self._answer(reply.status, reply.reason, kept, payload)
            return True

        def _tunnel(self, target: str) -> None:
            if state.connect_status is not None:
                reason = http.client.responses.get(state.connect_status, "")
                self._answer(state.connect_status, reason, {})
                return
            host, _, port = target.rpartition(":")
            try:
                upstream = socket.create_connection((state.hosts.get(host, host), int(port)))
            except OSError:
                self._answer(502, "Bad Gateway", {})
                return
            self.wfile.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            with upstream:
                _relay(self.connection, upstream)

        def _answer(
            self, status: int, reason: str, headers: dict[str, str], payload: bytes = b""
        ) -> None:
            lines = [f"HTTP/1.1 {status} {reason}"]
            lines += [f"{name}: {value}" for name, value in headers.items()]
            lines.append(f"content-length: {len(payload)}")
            self.wfile.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + payload)

    class Server(socketserver.ThreadingTCPServer):
        daemon_threads = True
        allow_reuse_address = True

        def handle_error(self, request: object, client_address: object) -> None:
            """A client that goes away mid-request is not news."""

        def get_request(self) -> tuple[socket.socket, object]:
            connection, address = super().get_request()
            connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return accept_tls(connection, tls), address

    server = Server(("127.0.0.1", 0), Handler)
    state.server = server
    threading.Thread(
        target=server.serve_forever, args=(0.05,), daemon=True
    ).start()  # quick shutdown
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


def _decoded(authorization: str | None) -> str:
    if not authorization or not authorization.startswith("Basic "):
        return ""
    return base64.b64decode(authorization.removeprefix("Basic ")).decode()


def _relay(client: socket.socket, upstream: socket.socket) -> None:
    """Copy bytes both ways until either side closes; then close both, ending the other copy."""

    def copy(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for end in (client, upstream):
                # shutdown wakes the other copy's recv (the plain socket's: TLS's would unwrap)
                with contextlib.suppress(OSError):
                    socket.socket.shutdown(end, socket.SHUT_RDWR)

    other = threading.Thread(target=copy, args=(upstream, client), daemon=True)
    other.start()
    copy(client, upstream)
    other.join(_TIMEOUT)
