"""A loopback stand-in for every wire format of the catalogue, for runs of the real ``axe``.

It answers each format's path (Anthropic Messages, OpenAI Chat Completions and Responses,
Ollama, Gemini ``generateContent``, Bedrock Converse) with that format's reply, records what
it received, and can be told to fail with a status, send garbage, accept a request and
never answer, take its time, or have a context window. With a window it answers as the
real providers do: Anthropic, OpenAI, Gemini and Bedrock refuse a prompt that is too long
with their own messages, numbers and headers; Ollama reports the window from ``/api/show``
and, like the real one, never refuses: it would drop text, which is recorded so a test can
assert it never happened. ``fail_with`` answers every analysis with one of the format's
error bodies (a transient one, a denial), as the real API words it; ``fail_details`` adds
Gemini's ``error.details`` to it (a ``RetryInfo``). Given a ``key``, a request carrying
another key is refused as each provider refuses a wrong key (Gemini: HTTP 400, not 401).
Given a ``cost``, an OpenAI-style reply's usage states it in US dollars, as OpenRouter's
and Requesty's do. Given a TLS context it serves https (the proxy tests use the test CA's
certificate).

It counts as the providers do, for free: Anthropic's ``/v1/messages/count_tokens``, OpenAI's
``/responses/input_tokens``, Gemini's ``:countTokens`` and Bedrock's ``/count-tokens`` answer
the tokens the request would be billed (the same count as a reply's usage), each recorded
in ``counts``; ``count_status`` refuses them instead (404, 405, 501 as a server without the
endpoint, 500 as a failing one). It tells the model's ``window`` as Ollama's ``/api/show``,
Gemini's ``GET /v1beta/models/{model}`` and OpenRouter's ``GET /models`` (for the ids in
``listed``) do; without ``tells_window`` those answer 404.
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


_COUNT_PATHS = {
    "/v1/messages/count_tokens": "anthropic",
    "/responses/input_tokens": "responses",
    ":countTokens": "gemini",
    "/count-tokens": "bedrock",
}


def counted_by(path: str) -> str | None:
    """The wire format whose count endpoint ``path`` is, if it is one."""
    return next((wire for end, wire in _COUNT_PATHS.items() if path.endswith(end)), None)


def count_reply(path: str, tokens: int) -> dict[str, Any]:
    """A count endpoint's answer, in ``path``'s provider's shape."""
    wire = counted_by(path)
    if wire == "gemini":
        return {"totalTokens": tokens}
    if wire == "bedrock":
        return {"inputTokens": tokens}
    if wire == "responses":
        return {"object": "response.input_tokens", "input_tokens": tokens}
    return {"input_tokens": tokens}


def wire_of(path: str) -> str:
    """Which wire format a request path (or its count endpoint's) belongs to."""
    if wire := counted_by(path):
        return wire
    if path.endswith("/v1/messages"):
        return "anthropic"
    if path.endswith("/chat/completions"):
        return "openai"
    if path.endswith("/v1/responses"):
        return "responses"
    if path.endswith(":generateContent"):
        return "gemini"
    if path.endswith("/converse"):
        return "bedrock"
    return "ollama"


def reply_in_format(path: str, text: str, usage: tuple[int, int] | None) -> dict[str, Any]:
    """A successful reply in ``path``'s wire format; with ``usage`` (read, written), its
    usage block too."""
    wire = wire_of(path)
    read, written = usage or (0, 0)
    if wire == "anthropic":
        reply: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
        counts: dict[str, Any] = {"usage": {"input_tokens": read, "output_tokens": written}}
    elif wire == "openai":
        reply = {"choices": [{"message": {"role": "assistant", "content": text}}]}
        counts = {"usage": {"prompt_tokens": read, "completion_tokens": written}}
    elif wire == "responses":
        item = {"type": "message", "content": [{"type": "output_text", "text": text}]}
        reply = {"output": [{"type": "reasoning", "summary": []}, item]}
        counts = {"usage": {"input_tokens": read, "output_tokens": written}}
    elif wire == "gemini":
        reply = {"candidates": [{"content": {"role": "model", "parts": [{"text": text}]}}]}
        counts = {"usageMetadata": {"promptTokenCount": read, "candidatesTokenCount": written}}
    elif wire == "bedrock":
        reply = {"output": {"message": {"role": "assistant", "content": [{"text": text}]}}}
        counts = {"usage": {"inputTokens": read, "outputTokens": written}}
    else:
        reply = {"message": {"role": "assistant", "content": text}}
        counts = {"prompt_eval_count": read, "eval_count": written}
    return reply if usage is None else reply | counts


def error_in_format(
    path: str, status: int, kind: str, message: str
) -> tuple[dict[str, Any], dict[str, str]]:
    """An error body (and headers) in ``path``'s wire format, as the real API sends it."""
    wire = wire_of(path)
    if wire == "gemini":
        return {"error": {"code": status, "message": message, "status": kind}}, {}
    if wire == "bedrock":
        return {"message": message}, {"x-amzn-ErrorType": f"{kind}:http://internal.amazon.com/"}
    if wire == "ollama":
        return {"error": message}, {}
    if wire == "anthropic":
        return {"type": "error", "error": {"type": kind, "message": message}}, {}
    return {"error": {"message": message, "type": kind, "code": None}}, {}


def bad_key_in_format(path: str, key: str) -> tuple[int, dict[str, Any]]:
    """The status and body with which ``path``'s provider refuses a wrong ``key``: Anthropic's
    401, OpenAI's 401 quoting the key, Gemini's 400 whose ``ErrorInfo`` says
    ``API_KEY_INVALID``."""
    wire = wire_of(path)
    if wire == "gemini":
        message = "API key not valid. Please pass a valid API key."
        details = [
            {
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": "API_KEY_INVALID",
                "domain": "googleapis.com",
                "metadata": {"service": "generativelanguage.googleapis.com"},
            },
            {
                "@type": "type.googleapis.com/google.rpc.LocalizedMessage",
                "locale": "en-US",
                "message": message,
            },
        ]
        error = {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}
        return 400, {"error": error | {"details": details}}
    if wire == "anthropic":
        return 401, error_in_format(path, 401, "authentication_error", "invalid x-api-key")[0]
    message = f"Incorrect API key provided: {key}."
    return 401, {
        "error": {
            "message": message,
            "type": "invalid_request_error",
            "param": None,
            "code": "invalid_api_key",
        }
    }


def _key_in(headers: dict[str, str]) -> str | None:
    """The API key a request carries in its provider's header, if it carries one."""
    authorization = headers.get("authorization", "")
    if authorization.startswith("Bearer "):
        return authorization.removeprefix("Bearer ")
    return headers.get("x-api-key") or headers.get("x-goog-api-key")


def provider_reply(path: str, text: str, tokens: int | None = None) -> dict[str, Any]:
    """A reply in ``path``'s wire format; with ``tokens`` (input), a usage block too."""
    written = count_tokens(text) if tokens is not None else 0
    return reply_in_format(path, text, None if tokens is None else (tokens, written))


def _texts(path: str, body: dict[str, Any]) -> tuple[str, str, int]:
    """System prompt, user message and reply budget of a request in any wire format."""
    wire = wire_of(path)
    if wire == "gemini":
        system = body["system_instruction"]["parts"][0]["text"]
        user = body["contents"][-1]["parts"][0]["text"]
        return system, user, body["generationConfig"]["maxOutputTokens"]
    if wire == "bedrock":
        system = body["system"][0]["text"]
        user = body["messages"][-1]["content"][0]["text"]
        return system, user, body["inferenceConfig"]["maxTokens"]
    if wire == "responses":
        return body.get("instructions", ""), body.get("input", ""), body["max_output_tokens"]
    messages = body.get("messages") or [{}]
    if wire == "anthropic":
        system = body.get("system", "")
    else:
        system = next((m.get("content", "") for m in messages if m.get("role") == "system"), "")
    user = messages[-1].get("content", "")
    budget = (
        body.get("max_tokens")
        or body.get("max_completion_tokens")
        or body.get("options", {}).get("num_predict", 0)
    )
    return system, user, budget


def _counted_texts(path: str, body: dict[str, Any]) -> tuple[str, str]:
    """System prompt and user message of a count request, in its provider's shape."""
    wire = counted_by(path)
    if wire == "gemini":
        request = body["generateContentRequest"]
        system = request.get("systemInstruction") or request["system_instruction"]
        return system["parts"][0]["text"], request["contents"][-1]["parts"][0]["text"]
    if wire == "bedrock":
        converse = body["input"]["converse"]
        return converse["system"][0]["text"], converse["messages"][-1]["content"][0]["text"]
    if wire == "responses":
        return body["instructions"], body["input"]
    return body["system"], body["messages"][-1]["content"]


def _told_window(path: str, window: int | None, listed: tuple[str, ...]) -> dict[str, Any]:
    """A window lookup's answer: Ollama's /api/show, Gemini's model, OpenRouter's list."""
    if path.endswith("/api/show"):
        info: dict[str, Any] = {"general.architecture": "llama"}
        return {"model_info": info | ({} if window is None else {"llama.context_length": window})}
    if path.endswith("/models"):
        return {"data": [{"id": model, "context_length": window} for model in listed]}
    name = path.rpartition("/v1beta/")[2]
    return {"name": name} | ({} if window is None else {"inputTokenLimit": window})


class LoopbackLLM:
    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, str], bytes]] = []
        self.prompts: list[Prompt] = []
        self.client_ports: list[int] = []
        self.reply_text = CANNED_ANALYSIS
        self.reply_for: Callable[[Prompt], str] | None = None
        self.status = 200
        self.raw_reply: bytes | None = None
        self.fail_with: tuple[int, str, str] | None = None  # status, kind, message
        self.fail_headers: dict[str, str] = {}
        self.reply_headers: dict[str, str] = {}  # sent with every successful reply
        self.fail_details: list[dict[str, Any]] = []
        self.key: str | None = None
        self.cost: float | None = None
        self.window: int | None = None
        self.counts: list[Prompt] = []  # the count requests it answered
        self.count_status = 200
        self.tells_window = True
        self.listed: tuple[str, ...] = ()
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

    def wait_for_requests(self, count: int, timeout: float = 30.0) -> None:
        """Return once ``count`` requests have arrived: a gc (not a dry run) that sent one
        holds its lock, so a test that needs one inside its analysis waits for that, not for
        a guessed time."""
        deadline = time.monotonic() + timeout
        while len(self.requests) < count:
            if time.monotonic() > deadline:
                arrived = [path for path, _, _ in self.requests]
                raise AssertionError(f"{count} requests awaited, {timeout} s: only {arrived}")
            time.sleep(0.01)

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

    def refused_key(
        self, path: str, headers: dict[str, str]
    ) -> tuple[int, bytes, dict[str, str]] | None:
        """The provider's refusal of a request whose (lower-cased) ``headers`` carry a key
        other than ``key``; None for one that may be answered."""
        given = _key_in(headers)
        if self.key is None or given is None or given == self.key:
            return None
        with self._lock:
            self.prompts.append(Prompt(path, 0, False, "", refused=True))
        status, document = bad_key_in_format(path, given)
        return status, json.dumps(document).encode(), {}

    def answer(self, path: str, body: bytes) -> tuple[int, bytes, dict[str, str]]:
        """The status, body and extra headers the provider at ``path`` would send."""
        if not body or path.endswith("/api/show"):  # a GET, or Ollama's POST, for a window
            if not self.tells_window:
                return 404, json.dumps({"error": "not found"}).encode(), {}
            return 200, json.dumps(_told_window(path, self.window, self.listed)).encode(), {}
        if counted_by(path):
            return self._count(path, body)
        if self.raw_reply is not None:
            return self.status, self.raw_reply, {}
        if self.fail_with is not None:
            status, kind, message = self.fail_with
            error, headers = error_in_format(path, status, kind, message)
            if self.fail_details:
                error["error"]["details"] = self.fail_details
            with self._lock:
                self.prompts.append(Prompt(path, 0, False, "", refused=True))
            return status, json.dumps(error).encode(), headers | self.fail_headers
        document = json.loads(body)
        system, user, budget = _texts(path, document)
        # slow on big logs: only when a test needs the numbers
        counting = self.window is not None or self.reply_for is not None or self.cost is not None
        tokens = count_tokens(system) + count_tokens(user) + _FRAMING if counting else 0
        num_ctx = document.get("options", {}).get("num_ctx") if path.endswith("/api/chat") else None
        refusal = self._refusal(path, tokens, budget)
        prompt = Prompt(path, tokens, system == MERGE_PROMPT, user, num_ctx, refused=bool(refusal))
        with self._lock:
            self.prompts.append(prompt)
        if refusal:
            error, headers = refusal
            return 400, json.dumps(error).encode(), headers
        if self.delay:
            time.sleep(self.delay)
        text = self.reply_for(prompt) if self.reply_for else self.reply_text
        usage = tokens if counting else None
        if usage is not None and num_ctx is not None:
            usage = min(usage, num_ctx)  # Ollama reads no more than num_ctx: it cuts the rest
        reply = provider_reply(path, text, usage)
        if self.cost is not None and wire_of(path) == "openai":
            reply["usage"]["cost"] = self.cost
        return self.status, json.dumps(reply).encode(), self.reply_headers

    def _count(self, path: str, body: bytes) -> tuple[int, bytes, dict[str, str]]:
        """The tokens the request would be billed, or ``count_status``'s refusal."""
        if self.count_status != 200:
            status = self.count_status
            error, headers = error_in_format(path, status, "not_found_error", "no such endpoint")
            return status, json.dumps(error).encode(), headers
        system, user = _counted_texts(path, json.loads(body))
        tokens = count_tokens(system) + count_tokens(user) + _FRAMING
        with self._lock:
            self.counts.append(Prompt(path, tokens, system == MERGE_PROMPT, user))
        return 200, json.dumps(count_reply(path, tokens)).encode(), {}

    def _refusal(
        self, path: str, tokens: int, budget: int
    ) -> tuple[dict[str, Any], dict[str, str]] | None:
        """The format's "too long" refusal, in its own words and numbers."""
        if self.window is None:
            return None
        wire = wire_of(path)
        if wire == "anthropic" and tokens > self.window:
            message = f"prompt is too long: {tokens} tokens > {self.window} maximum"
            return error_in_format(path, 400, "invalid_request_error", message)
        if wire in ("openai", "responses") and tokens + budget > self.window:
            message = (
                f"This model's maximum context length is {self.window} tokens. However, you "
                f"requested {tokens + budget} tokens ({tokens} in the messages, {budget} in "
                "the completion). Please reduce the length of the messages or completion."
            )
            error = {
                "error": {
                    "message": message,
                    "type": "invalid_request_error",
                    "param": "messages",
                    "code": "context_length_exceeded",
                }
            }
            return error, {}
        if wire == "gemini" and tokens > self.window:
            message = (
                f"The input token count ({tokens}) exceeds the maximum number of tokens "
                f"allowed ({self.window})."
            )
            return error_in_format(path, 400, "INVALID_ARGUMENT", message)
        if wire == "bedrock" and tokens + budget > self.window:
            message = "Input is too long for requested model."
            return error_in_format(path, 400, "ValidationException", message)
        return None


@contextmanager
def loopback_llm(tls: ssl.SSLContext | None = None) -> Iterator[LoopbackLLM]:
    state = LoopbackLLM()
    if tls is not None:
        state.scheme = "https"

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # The head and the body go out in two writes; with Nagle's algorithm the body waited
        # for the client's delayed ACK of the head, 40 ms a reply that no provider adds.
        disable_nagle_algorithm = True

        def do_GET(self) -> None:
            self.do_POST()

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            body = self.rfile.read(length)
            with state._lock:
                state.requests.append((self.path, dict(self.headers.items()), body))
                state.client_ports.append(self.client_address[1])
            if state.hang.is_set():
                state.release.wait(30)
                return
            sent = {name.lower(): value for name, value in self.headers.items()}
            refused = state.refused_key(self.path, sent)
            status, payload, headers = refused or state.answer(self.path, body)
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
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
