"""A loopback stand-in for the three providers, for runs of the real ``axe`` process.

It answers each provider's path with its wire format, records what it received, and can be
told to fail with a status, send garbage, accept a request and never answer, take its time,
or have a context window. With a window it answers as the real providers do: Anthropic and
OpenAI refuse a prompt that is too long with their own messages and numbers; Ollama reports
the window from ``/api/show`` and, like the real one, never refuses: it would drop text,
which is recorded so a test can assert it never happened. Given a TLS context it serves
https (the proxy tests use the test CA's certificate).
"""

from __future__ import annotations

import json
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from attrs import frozen

from axe.domain.prompt import MERGE_PROMPT
from tests.e2e.tls import accept_tls
from tests.support import CANNED_ANALYSIS
from tests.tokenizer import count_tokens

_FRAMING = 8  # tokens a provider adds around the system prompt and the message


@frozen
class Prompt:
    """One analysis request as the server saw it."""

    path: str
    tokens: int
    merge: bool
    user: str
    num_ctx: int | None = None
    refused: bool = False


def provider_reply(path: str, text: str, tokens: int | None = None) -> dict[str, Any]:
    """A reply in ``path``'s wire format; with ``tokens`` (input), a usage block too."""
    written = count_tokens(text) if tokens is not None else 0
    if path.endswith("/v1/messages"):
        reply: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
        usage: dict[str, Any] = {"usage": {"input_tokens": tokens, "output_tokens": written}}
    elif path.endswith("/v1/chat/completions"):
        reply = {"choices": [{"message": {"role": "assistant", "content": text}}]}
        usage = {"usage": {"prompt_tokens": tokens, "completion_tokens": written}}
    else:
        reply = {"message": {"role": "assistant", "content": text}}
        usage = {"prompt_eval_count": tokens, "eval_count": written}
    return reply if tokens is None else reply | usage


def _texts(path: str, body: dict[str, Any]) -> tuple[str, str, int]:
    """System prompt, user message and reply budget of a request in any wire format."""
    messages = body.get("messages") or [{}]
    if path.endswith("/v1/messages"):
        system = body.get("system", "")
    else:
        system = next((m.get("content", "") for m in messages if m.get("role") == "system"), "")
    user = messages[-1].get("content", "")
    budget = body.get("max_tokens") or body.get("options", {}).get("num_predict", 0)
    return system, user, budget


class LoopbackLLM:
    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, str], bytes]] = []
        self.prompts: list[Prompt] = []
        self.client_ports: list[int] = []
        self.reply_text = CANNED_ANALYSIS
        self.reply_for: Callable[[Prompt], str] | None = None
        self.status = 200
        self.raw_reply: bytes | None = None
        self.window: int | None = None
        self.delay = 0.0
        self.hang = threading.Event()
        self.release = threading.Event()
        self.server: ThreadingHTTPServer | None = None
        self.scheme = "http"
        self._lock = threading.Lock()

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

    @property
    def analyses(self) -> list[Prompt]:
        """Requests that were answered with a report (refusals left out)."""
        return [prompt for prompt in self.prompts if not prompt.refused]

    def truncated(self) -> list[Prompt]:
        """Ollama requests it would have cut: a prompt longer than ``num_ctx``, or a
        ``num_ctx`` beyond the model's window (which it cannot honour)."""
        return [
            prompt
            for prompt in self.prompts
            if prompt.num_ctx is not None
            and (
                prompt.tokens > prompt.num_ctx
                or (self.window is not None and prompt.num_ctx > self.window)
            )
        ]

    def answer(self, path: str, body: bytes) -> tuple[int, bytes]:
        """The status and body the provider at ``path`` would send for ``body``."""
        if path.endswith("/api/show"):
            info: dict[str, Any] = {"general.architecture": "llama"}
            if self.window is not None:
                info["llama.context_length"] = self.window
            return 200, json.dumps({"model_info": info}).encode()
        if self.raw_reply is not None:
            return self.status, self.raw_reply
        document = json.loads(body)
        system, user, budget = _texts(path, document)
        counting = self.window is not None or self.reply_for is not None  # slow on big logs
        tokens = count_tokens(system) + count_tokens(user) + _FRAMING if counting else 0
        num_ctx = document.get("options", {}).get("num_ctx") if path.endswith("/api/chat") else None
        refusal = self._refusal(path, tokens, budget)
        prompt = Prompt(path, tokens, system == MERGE_PROMPT, user, num_ctx, refused=bool(refusal))
        with self._lock:
            self.prompts.append(prompt)
        if refusal:
            return 400, json.dumps(refusal).encode()
        if self.delay:
            time.sleep(self.delay)
        text = self.reply_for(prompt) if self.reply_for else self.reply_text
        usage = tokens if counting else None
        return self.status, json.dumps(provider_reply(path, text, usage)).encode()

    def _refusal(self, path: str, tokens: int, budget: int) -> dict[str, Any] | None:
        if self.window is None:
            return None
        if path.endswith("/v1/messages") and tokens > self.window:
            message = f"prompt is too long: {tokens} tokens > {self.window} maximum"
            return {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
        if path.endswith("/v1/chat/completions") and tokens + budget > self.window:
            message = (
                f"This model's maximum context length is {self.window} tokens. However, you "
                f"requested {tokens + budget} tokens ({tokens} in the messages, {budget} in "
                "the completion). Please reduce the length of the messages or completion."
            )
            return {
                "error": {
                    "message": message,
                    "type": "invalid_request_error",
                    "param": "messages",
                    "code": "context_length_exceeded",
                }
            }
        return None


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
            with state._lock:
                state.requests.append((self.path, dict(self.headers.items()), body))
                state.client_ports.append(self.client_address[1])
            if state.hang.is_set():
                state.release.wait(30)
                return
            status, payload = state.answer(self.path, body)
            self.send_response(status)
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
