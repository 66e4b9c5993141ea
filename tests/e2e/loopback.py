"""A loopback stand-in for the three providers, for runs of the real ``axe`` process.

It answers each provider's path with its wire format, records what it received, and can be
told to fail with a status, send garbage, or accept a request and never answer. Given a TLS
context it serves https (the proxy tests use the test CA's certificate).
"""

from __future__ import annotations

import json
import socket
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.e2e.tls import accept_tls
from tests.support import CANNED_ANALYSIS


def provider_reply(path: str, text: str) -> dict[str, Any]:
    if path.endswith("/v1/messages"):
        return {"content": [{"type": "text", "text": text}]}
    if path.endswith("/v1/chat/completions"):
        return {"choices": [{"message": {"role": "assistant", "content": text}}]}
    return {"message": {"role": "assistant", "content": text}}


class LoopbackLLM:
    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, str], bytes]] = []
        self.client_ports: list[int] = []
        self.reply_text = CANNED_ANALYSIS
        self.status = 200
        self.raw_reply: bytes | None = None
        self.hang = threading.Event()
        self.release = threading.Event()
        self.server: ThreadingHTTPServer | None = None
        self.scheme = "http"

    @property
    def url(self) -> str:
        assert self.server is not None
        host, port = self.server.server_address[:2]
        assert isinstance(host, str)
        return f"{self.scheme}://{host}:{port}"

    @property
    def port(self) -> int:
        assert self.server is not None
        return int(self.server.server_address[1])

    def bodies(self) -> list[Any]:
        return [json.loads(body) for _, _, body in self.requests]


@contextmanager
def loopback_llm(tls: ssl.SSLContext | None = None) -> Iterator[LoopbackLLM]:
    state = LoopbackLLM()
    if tls is not None:
        state.scheme = "https"

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            body = self.rfile.read(length)
            state.requests.append((self.path, dict(self.headers.items()), body))
            state.client_ports.append(self.client_address[1])
            if state.hang.is_set():
                state.release.wait(30)
                return
            payload = state.raw_reply
            if payload is None:
                payload = json.dumps(provider_reply(self.path, state.reply_text)).encode()
            self.send_response(state.status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: object) -> None:
            pass

    class QuietServer(ThreadingHTTPServer):
        daemon_threads = True

        def handle_error(self, request: object, client_address: object) -> None:
            """A client killed mid-request (the durability tests do that) is not news."""

        def get_request(self) -> tuple[socket.socket, object]:
            connection, address = super().get_request()
            return accept_tls(connection, tls), address

    server = QuietServer(("127.0.0.1", 0), Handler)
    state.server = server
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield state
    finally:
        state.release.set()
        server.shutdown()
        server.server_close()
