"""The three wire formats of axe-formats.md: Anthropic, OpenAI and Ollama.

Each client builds its provider's request from an :class:`AnalysisRequest`, posts it through
the shared :class:`HttpTransport`, and pulls the report text and the token usage out of the
reply. A reply of the wrong shape is an ``ApiError``, never a crash; a missing or odd usage
block only means the usage is unknown.
"""

from __future__ import annotations

import re
import threading
from typing import Any

from axe.adapters.http.body import MEMORY, JsonBody
from axe.adapters.http.settings import ProviderSettings
from axe.adapters.http.transport import HttpStatusError, HttpTransport
from axe.application.ports import AnalysisRequest
from axe.domain.errors import ApiError
from axe.domain.model import quoted
from axe.domain.results import Completion, Usage
from axe.domain.tokens import certainly_under

ANTHROPIC_VERSION = "2023-06-01"
_REASONING_MODEL = re.compile(r"^(o1|o3|o4)(-|$)|^gpt-5")
_BYTES_PER_TOKEN_LOWER_BOUND = 3
_OLLAMA_MIN_CONTEXT = 8192
_FITS_EVERY_MODEL = 2048  # tokens: a prompt estimated below this fits any model's window
_NO_SUCH_ENDPOINT = frozenset({404, 405, 501})  # answers of a server without /api/show


def _base(settings: ProviderSettings, default: str) -> str:
    return (settings.base_url or default).rstrip("/")


def require_key(provider: str, settings: ProviderSettings) -> str:
    """The key, or the error the spec asks for before any request is made."""
    if not settings.api_key:
        raise ApiError(
            f"API key for provider {quoted(provider)} is not configured "
            f"(set {settings.key_variable} or add it to config.toml)"
        )
    return settings.api_key


class AnthropicClient:
    """``POST /v1/messages``; the reply text is every ``text`` block joined."""

    def __init__(self, transport: HttpTransport, settings: ProviderSettings) -> None:
        self._transport = transport
        self._key = require_key("anthropic", settings)
        self._url = _base(settings, "https://api.anthropic.com") + "/v1/messages"
        self._cap = settings.max_input_tokens

    def input_limit(self, request: AnalysisRequest) -> int | None:
        """The cap, if any: the window is learnt from a refusal, which gives its size."""
        return self._cap

    def complete(self, request: AnalysisRequest) -> Completion:
        payload = {
            "model": request.model.name,
            "max_tokens": request.max_tokens,
            "system": request.system_prompt,
            "messages": [{"role": "user", "content": MEMORY}],
            "temperature": request.temperature,
        }
        reply = self._transport.post_json(
            self._url,
            headers={"x-api-key": self._key, "anthropic-version": ANTHROPIC_VERSION},
            body=JsonBody(payload, request.content),
            provider="anthropic",
            secret=self._key,
        )
        blocks = _field(reply, "content", list, "anthropic")
        texts = []
        for block in blocks:
            if isinstance(block, dict) and block.get("type") == "text":
                text = block.get("text")
                if not isinstance(text, str):
                    raise _shape_error("anthropic", "a text block without text")
                texts.append(text)
        usage = reply.get("usage")
        return Completion(
            "".join(texts),
            _usage(usage, "input_tokens", "output_tokens", extra_input=_ANTHROPIC_CACHE_INPUT),
        )


def is_reasoning_model(name: str) -> bool:
    """OpenAI reasoning models reject ``max_tokens`` and any non-default temperature."""
    return bool(_REASONING_MODEL.search(name))


class OpenAIClient:
    """``POST /v1/chat/completions``; the reply text is ``choices[0].message.content``."""

    def __init__(self, transport: HttpTransport, settings: ProviderSettings) -> None:
        self._transport = transport
        self._key = require_key("openai", settings)
        self._url = _base(settings, "https://api.openai.com") + "/v1/chat/completions"
        self._cap = settings.max_input_tokens

    def input_limit(self, request: AnalysisRequest) -> int | None:
        """The cap, if any: the window is learnt from a refusal, which gives its size."""
        return self._cap

    def complete(self, request: AnalysisRequest) -> Completion:
        payload: dict[str, Any] = {
            "model": request.model.name,
            "messages": [
                {"role": "system", "content": request.system_prompt},
                {"role": "user", "content": MEMORY},
            ],
        }
        if is_reasoning_model(request.model.name):
            payload["max_completion_tokens"] = request.max_tokens
        else:
            payload["temperature"] = request.temperature
            payload["max_tokens"] = request.max_tokens
        reply = self._transport.post_json(
            self._url,
            headers={"authorization": f"Bearer {self._key}"},
            body=JsonBody(payload, request.content),
            provider="openai",
            secret=self._key,
            reply_tokens=request.max_tokens,
        )
        choices = _field(reply, "choices", list, "openai")
        if not choices or not isinstance(choices[0], dict):
            raise _shape_error("openai", "no choices")
        message = _field(choices[0], "message", dict, "openai")
        content = message.get("content")
        if content is not None and not isinstance(content, str):
            raise _shape_error("openai", "message content is not text")
        usage = _usage(reply.get("usage"), "prompt_tokens", "completion_tokens")
        return Completion(content or "", usage)


def ollama_context_size(request: AnalysisRequest) -> int:
    """A context window that holds the whole prompt and the reply.

    Ollama silently cuts prompts to its small default context, which would make the
    analysis see only the newest part of the log; a byte count over-estimates tokens.
    """
    prompt_bytes = len(request.content) + len(request.system_prompt.encode("utf-8"))
    needed = prompt_bytes // _BYTES_PER_TOKEN_LOWER_BOUND + request.max_tokens + 256
    rounded = -(-needed // 1024) * 1024
    return max(_OLLAMA_MIN_CONTEXT, rounded)


class OllamaClient:
    """``POST /api/chat`` with ``stream: false``; no key; the reply is ``message.content``.

    Ollama never refuses a prompt that is too long: it drops its oldest part. So a log that
    might not fit (estimated at 2,048 tokens or more) is measured against the model's own
    window first, asked once per model with ``POST /api/show``, and ``num_ctx`` never
    exceeds that window. A smaller log goes straight to ``/api/chat``, as it always did.
    """

    def __init__(self, transport: HttpTransport, settings: ProviderSettings) -> None:
        self._transport = transport
        base = _base(settings, "http://localhost:11434")
        self._url = base + "/api/chat"
        self._show_url = base + "/api/show"
        self._cap = settings.max_input_tokens
        self._windows: dict[str, int | None] = {}
        self._asking: dict[str, threading.Lock] = {}  # per model: one question, one answer
        self._guard = threading.Lock()

    def input_limit(self, request: AnalysisRequest) -> int | None:
        if certainly_under(request.system_prompt.encode() + request.content, _FITS_EVERY_MODEL):
            return self._cap
        window = self._window(request.model.name)
        if window is None:
            return self._cap
        room = window - min(request.max_tokens, window // 2)
        return room if self._cap is None else min(room, self._cap)

    def complete(self, request: AnalysisRequest) -> Completion:
        context = ollama_context_size(request)
        window = self._windows.get(request.model.name)
        payload = {
            "model": request.model.name,
            "messages": [
                {"role": "system", "content": request.system_prompt},
                {"role": "user", "content": MEMORY},
            ],
            "stream": False,
            "options": {
                "temperature": request.temperature,
                "num_predict": request.max_tokens,
                "num_ctx": context if window is None else min(context, window),
            },
        }
        reply = self._transport.post_json(
            self._url, headers={}, body=JsonBody(payload, request.content), provider="ollama"
        )
        message = _field(reply, "message", dict, "ollama")
        content = message.get("content")
        if not isinstance(content, str):
            raise _shape_error("ollama", "message content is missing")
        return Completion(content, _usage(reply, "prompt_eval_count", "eval_count"))

    def _window(self, model: str) -> int | None:
        """The model's context length from ``/api/show``, asked once per model per run.

        A server that has no ``/api/show`` (an Ollama-compatible one) leaves the window
        unknown, as it was before gc asked: the log is then sent as it always was.
        """
        with self._guard:
            asking = self._asking.setdefault(model, threading.Lock())
        with asking:  # workers measuring another model are not held up by this one
            if model not in self._windows:
                try:
                    reply = self._transport.post_json(
                        self._show_url,
                        headers={},
                        body=JsonBody({"model": model}),
                        provider="ollama",
                    )
                except HttpStatusError as error:
                    if error.status not in _NO_SUCH_ENDPOINT:
                        raise
                    reply = None
                self._windows[model] = context_length(reply)
            return self._windows[model]


def context_length(show: Any) -> int | None:
    """``model_info["<architecture>.context_length"]`` from an ``/api/show`` reply."""
    info = show.get("model_info") if isinstance(show, dict) else None
    if not isinstance(info, dict):
        return None
    architecture = info.get("general.architecture")
    length = info.get(f"{architecture}.context_length")
    if type(length) is not int:
        found = [v for k, v in info.items() if k.endswith(".context_length") and type(v) is int]
        length = found[0] if found else None
    return length if length and length > 0 else None


_ANTHROPIC_CACHE_INPUT = ("cache_creation_input_tokens", "cache_read_input_tokens")


def _usage(
    block: Any, input_key: str, output_key: str, *, extra_input: tuple[str, ...] = ()
) -> Usage | None:
    """Token counts from a reply's usage block; None unless both counts are integers.

    Anthropic reports prompt-cache reads and writes apart from ``input_tokens``; they were
    read all the same, so they count as input.
    """
    if not isinstance(block, dict):
        return None
    read, written = block.get(input_key), block.get(output_key)
    if type(read) is not int or type(written) is not int:
        return None
    read += sum(value for key in extra_input if type(value := block.get(key)) is int)
    return Usage(input_tokens=read, output_tokens=written)


def _field(document: Any, key: str, kind: type[Any], provider: str) -> Any:
    value = document.get(key) if isinstance(document, dict) else None
    if not isinstance(value, kind):
        raise _shape_error(provider, f"no {key!r} in the reply")
    return value


def _shape_error(provider: str, what: str) -> ApiError:
    return ApiError(f"{provider} returned a reply that is not the expected JSON: {what}")
