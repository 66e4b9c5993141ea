"""The test CA and the loopback server certificate (tests/fixtures/tls), for https test servers."""

from __future__ import annotations

import socket
import ssl
from pathlib import Path

TLS_FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "tls"
CA_FILE = TLS_FIXTURES / "ca.pem"
CA_DIR = TLS_FIXTURES / "ca-dir"


def server_tls() -> ssl.SSLContext:
    """The server side of the test certificate (localhost, 127.0.0.1, llm.axe.test)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(TLS_FIXTURES / "server.pem", TLS_FIXTURES / "server-key.pem")
    return context


def accept_tls(connection: socket.socket, tls: ssl.SSLContext | None) -> socket.socket:
    """An accepted connection, as TLS when ``tls`` is given.

    The handshake is left to the first read, in the handler's thread, so a client that
    never completes it cannot stall the server's accept loop.
    """
    if tls is None:
        return connection
    return tls.wrap_socket(connection, server_side=True, do_handshake_on_connect=False)
