"""What every wire format gives the one HTTP client, and the helpers they share.

A format says where a request goes (``path``), what it carries (``body``), how the report
and the token usage come back (``reply``), and what an error reply means (``error``): its
kind and message for the one line the user reads, whether it is the provider's "prompt too
long" refusal (with the numbers it gives), and whether another try may pass when the status
alone does not say.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from attrs import frozen

from axe.adapters.llm.body import JsonBody
from axe.application.ports import AnalysisRequest
from axe.domain.errors import ApiError, ModelNotFoundError, PromptTooLargeError
from axe.domain.results import Usage

_MAX_MESSAGE_CHARS = 300
_LITELLM_RELAY = re.compile(r"litellm\.\w+: \w+: \w+Exception - ")
# Hints that a 400 is about the prompt's size, in Anthropic's and OpenAI's words alike.
TOO_LONG_HINTS = (
    "prompt is too long",
    "too many tokens",
    "context length",
    "context_length",
    "context window",
    "context limit",
    "maximum context",
    "request too large",
)
TOO_LONG_CODES = frozenset(
    {"context_length_exceeded", "request_too_large", "string_above_max_length"}
)


@frozen
class Refusal:
    """The prompt's size in the provider's tokens and the most input it accepts, if said."""

    tokens: int | None = None
    limit: int | None = None


@frozen
class WireError:
    """An HTTP error reply as its format reads it.

    ``kind`` is the provider's name for the error (``authentication_error``,
    ``INVALID_ARGUMENT``, ``ThrottlingException``), shown beside the status; ``refusal`` is
    set when the prompt did not fit; ``transient`` overrides the status-based retry rule
    when the format knows better (None: the status decides). ``rejected_key``: the body
    says the key was refused where the status does not (401 and 403 say it for every
    format); ``retry_delay``: seconds the body asks to wait before trying again, for a
    provider that says so there rather than in ``retry-after``; ``relayed``: a gateway
    passes on its upstream provider's error (a 401 is then about the gateway's key).
    """

    message: str
    kind: str = ""
    refusal: Refusal | None = None
    transient: bool | None = None
    rejected_key: bool = False
    retry_delay: float | None = None
    relayed: bool = False


class HttpStatusError(ApiError):
    """The server answered, with an HTTP error status: a caller may decide by ``status``
    (an Ollama-compatible server without ``/api/show`` answers 404 or 405), and say where
    the key came from when ``rejected_key`` (a 401 or 403, or a body that says so)."""

    def __init__(self, message: str, *, status: int, rejected_key: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.rejected_key = rejected_key


class NotFoundError(HttpStatusError, ModelNotFoundError):
    """A 404: to a provider's chat endpoint, the model (or the endpoint) does not exist."""


def http_error(provider: str, status: int, said: WireError) -> ApiError:
    """The error an HTTP error reply is, in its format's reading (``said``). A key refused
    by the provider behind a gateway is not blamed on the key gc sent."""
    named = said.kind and said.kind != str(status)  # OpenRouter's code is the status again
    text = f"{provider} API error (HTTP {status}{f' {said.kind}' if named else ''}): {said.message}"
    if (refusal := said.refusal) is not None:
        return PromptTooLargeError(text, tokens=refusal.tokens, limit=refusal.limit)
    rejected_key = status in (401, 403) or said.rejected_key
    if rejected_key and said.relayed:
        text += " (the provider behind the gateway refused the gateway's key, not gc's)"
    kind = NotFoundError if status == 404 else HttpStatusError
    return kind(text, status=status, rejected_key=rejected_key and not said.relayed)


class ShapeError(Exception):
    """A reply that is JSON but not the format's shape; the client says which provider."""


@frozen
class Sent:
    """What the client sends, for building the request and reading its reply: the request;
    for Ollama, the model's window as the server reported it; whether the provider's
    settings name the model a reasoning model (a gateway's alias)."""

    request: AnalysisRequest
    window: int | None = None
    reasoning: bool = False


class WireFormat(Protocol):
    """One request/reply format (see the module docstring). A format subclasses it for its
    default: no extra headers."""

    name: str
    headers: Mapping[str, str] = {}

    def path(self, model: str) -> str:
        """Where the request goes, relative to the base URL."""
        ...

    def body(self, sent: Sent) -> JsonBody:
        """The request body, the log streamed in where the format puts the user message."""
        ...

    def reply(self, document: Any, sent: Sent) -> tuple[str, Usage | None]:
        """The report and the usage. Raises ShapeError, or PromptTooLargeError where a
        reply shows the prompt was cut (Ollama)."""
        ...

    def error(self, status: int, headers: Mapping[str, str], raw: bytes, sent: Sent) -> WireError:
        """What an error reply says."""
        ...

    def cut_short(self, document: Any) -> bool:
        """Whether a successful reply says it stopped at the output limit (4,096 tokens).
        One that did so before writing any text holds no report: a reasoning model can
        spend the whole budget thinking."""
        ...


@frozen
class Lookup:
    """A free request whose answer is one number: the tokens a provider counts in a request,
    or a model's window (a catalogue row's ``counting`` and ``window``). ``path``, relative
    to the base URL, names the model as ``{model}``; ``body`` is the POST body for the
    request (None: a GET); ``answer`` reads the number from the reply, given the model's
    name (None: the reply holds none); ``holds_reply``: the window holds the reply too.
    """

    path: str
    body: Callable[[AnalysisRequest], JsonBody] | None
    answer: Callable[[Any, str], int | None]
    holds_reply: bool = False


def number_at(key: str) -> Callable[[Any, str], int | None]:
    """A reader of the positive integer at ``document[key]``."""
    return lambda document, _model: positive(
        document.get(key) if isinstance(document, dict) else None
    )


def positive(value: Any) -> int | None:
    """``value`` when it is a positive integer (JSON's ``true`` is not one), else None."""
    return value if type(value) is int and value > 0 else None


def field_of(document: Any, key: str, kind: type[Any]) -> Any:
    """``document[key]`` when it is a ``kind``; otherwise a ShapeError naming the key."""
    value = document.get(key) if isinstance(document, dict) else None
    if not isinstance(value, kind):
        raise ShapeError(f"no {key!r} in the reply")
    return value


def first_of(document: Any, key: str) -> Any:
    """``document[key][0]`` when it is a non-empty list, else None (for optional fields)."""
    items = document.get(key) if isinstance(document, dict) else None
    return items[0] if isinstance(items, list) and items else None


def said(document: Any, key: str, value: str) -> bool:
    """Whether ``document[key]`` is ``value`` (a stop reason, a status)."""
    return isinstance(document, dict) and document.get(key) == value


def items_of(document: Any, key: str) -> list[Any]:
    """``document[key]`` as a list: missing or null is none (a safety stop, an empty
    message); anything else that is not a list is a ShapeError naming the key."""
    value = document.get(key) if isinstance(document, dict) else None
    if value is None:
        return []
    if not isinstance(value, list):
        raise ShapeError(f"{key!r} in the reply is not a list")
    return value


def usage(
    block: Any, input_key: str, output_key: str, *, extra_input: tuple[str, ...] = ()
) -> Usage | None:
    """Token counts from a reply's usage block; None unless both counts are integers.
    ``extra_input`` are counts of input reported apart (Anthropic's prompt cache)."""
    if not isinstance(block, dict):
        return None
    read, written = block.get(input_key), block.get(output_key)
    if type(read) is not int or type(written) is not int:
        return None
    read += sum(value for key in extra_input if type(value := block.get(key)) is int)
    return Usage(input_tokens=read, output_tokens=written)


def decoded(raw: bytes) -> Any:
    """The JSON of an error body, or None when it is not JSON."""
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return None


def error_object(raw: bytes) -> tuple[Any, dict[str, Any] | str | None]:
    """The decoded body and its ``error`` member (an object or a string), if any."""
    document = decoded(raw)
    inner = document.get("error") if isinstance(document, dict) else None
    return document, inner if isinstance(inner, dict | str) else None


def plain(raw: bytes) -> str:
    """What a body that is not the format's error JSON says, fit for one line."""
    if not raw.strip():
        return "empty reply body"
    return snippet(raw)


def snippet(raw: bytes) -> str:
    text = one_line(raw.decode("utf-8", "replace"))
    if text.lstrip().lower().startswith(("<!doctype", "<html")):
        return "an HTML page"
    return repr(text) if text else "an empty body"


def one_line(text: str) -> str:
    """``text`` on one line, at most 300 characters."""
    text = re.sub(r"\s+", " ", text).strip()
    if len(text) > _MAX_MESSAGE_CHARS:
        text = text[: _MAX_MESSAGE_CHARS - 3] + "..."
    return text


def text_of(value: Any) -> str:
    return one_line(str(value or ""))


def request_too_large(status: int) -> Refusal | None:
    """HTTP 413 from anyone: the body was too large for the server; no numbers."""
    return Refusal() if status == 413 else None


# (status, code, message, reply tokens) -> the refusal in a format's words, if it is one
RefusalReader = Callable[[int, str, str, int], "Refusal | None"]


def is_too_long(status: int, code: str, message: str) -> bool:
    """A 413, or a 400 whose code or words are about the prompt's size."""
    lowered = message.lower()
    return status == 413 or (
        status == 400
        and (code in TOO_LONG_CODES or any(hint in lowered for hint in TOO_LONG_HINTS))
    )


def typed_error(
    status: int, raw: bytes, *, refusal_in: RefusalReader, reply_tokens: int = 0
) -> WireError:
    """``{"error": {"type", "code", "message"}}`` (Anthropic's and OpenAI's shape) or
    ``{"error": "..."}``, with the format's refusal reader applied. The kind shown is the
    code where there is one (OpenAI's 429: ``rate_limit_exceeded``, not ``requests``), else
    the type. A gateway relaying its upstream's error says so: OpenRouter with a
    ``metadata.provider_name``, LiteLLM's proxy with its exception's name
    (``litellm.AuthenticationError: AuthenticationError: OpenAIException - ...``)."""
    _, inner = error_object(raw)
    kind = code = ""
    if isinstance(inner, dict):
        kind, code = text_of(inner.get("type")), text_of(inner.get("code"))
        message = text_of(inner.get("message")) or "no message"
    else:
        message = (text_of(inner) or "no message") if isinstance(inner, str) else plain(raw)
    refusal = refusal_in(status, code, message, reply_tokens) or request_too_large(status)
    metadata = inner.get("metadata") if isinstance(inner, dict) else None
    relayed = isinstance(metadata, dict) and "provider_name" in metadata
    relayed = relayed or bool(_LITELLM_RELAY.match(message))
    code = "" if code == str(status) else code  # OpenRouter's and LiteLLM's code is the status
    return WireError(message, kind=code or kind, refusal=refusal, relayed=relayed)
