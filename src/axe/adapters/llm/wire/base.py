"""What every wire format gives the one HTTP client, and the helpers the formats share."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from attrs import field, frozen

from axe.adapters.llm.body import JsonBody
from axe.application.ports import AnalysisRequest
from axe.domain.errors import ApiError, ModelNotFoundError, PromptTooLargeError
from axe.domain.results import Usage

_MAX_MESSAGE_CHARS = 300
_LITELLM_RELAY = re.compile(r"litellm\.\w+: \w+: \w+Exception - ")
# A 400 about the prompt's size, in Anthropic's and OpenAI's words alike.
_TOO_LONG = re.compile(
    r"prompt is too long|too many tokens|context[ _]length|context (window|limit)"
    r"|maximum context|request too large"
)
_TOO_LONG_CODES = {"context_length_exceeded", "request_too_large", "string_above_max_length"}
# (lowered message, reply tokens) -> the numbers a "too long" refusal gives, if it gives any
RefusalReader = Callable[[str, int], "Refusal | None"]
# (status, headers, body) -> what an error reply says
Explain = Callable[[int, Mapping[str, str], bytes], "WireError"]


@frozen
class Refusal:
    """The prompt's size in the provider's tokens and the most input it accepts, if said."""

    tokens: int | None = None
    limit: int | None = None


@frozen
class WireError:
    """An HTTP error reply as its format reads it: ``kind``, the provider's name for the
    error (``INVALID_ARGUMENT``); ``transient``, when the format knows better than the
    status; ``rejected_key``, when the body says so where the status does not; ``relayed``,
    a gateway passing on its upstream's error (a 401 is then about the gateway's key)."""

    message: str
    kind: str = ""
    refusal: Refusal | None = None
    transient: bool | None = None
    rejected_key: bool = False
    retry_delay: float | None = None
    relayed: bool = False


class HttpStatusError(ApiError):
    """The server answered with an HTTP error status: a caller may decide by ``status`` (a
    server without ``/api/show`` answers 404 or 405), and say where the key came from when
    ``rejected_key``."""

    def __init__(self, message: str, *, status: int, rejected_key: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.rejected_key = rejected_key


class NotFoundError(HttpStatusError, ModelNotFoundError):
    """A 404: to a provider's chat endpoint, the model (or the endpoint) does not exist."""


def http_error(provider: str, status: int, said: WireError) -> ApiError:
    """The error an HTTP error reply is. A key refused by the provider behind a gateway is
    not blamed on the key gc sent."""
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
    """The request, the model's window if known (Ollama sizes its context by it), and
    whether the provider's settings name the model a reasoning model."""

    request: AnalysisRequest
    window: int | None = None
    reasoning: bool = False


@frozen(kw_only=True)
class WireFormat:
    """One request/reply format: ``path`` (``{model}`` the model's name), ``body`` (the log
    streamed in as the user message), ``reply`` (the report and usage; raises ShapeError, or
    PromptTooLargeError where a reply shows the prompt was cut), ``stop`` (the keys down to
    where a reply says it stopped at the output limit, and the word it says then),
    ``declined`` (why a reply holds no report because the model or a filter refused to
    write one, in the provider's words; None when it did not). An error reply is read as
    Anthropic's and OpenAI's are, unless the format reads its own."""

    name: str
    path: str
    body: Callable[[Sent], JsonBody]
    reply: Callable[[Any, Sent], tuple[str, Usage | None]]
    stop: tuple[str, ...]
    headers: Mapping[str, str] = field(factory=dict)
    refusal: RefusalReader | None = None
    own_error: Explain | None = None
    declined: Callable[[Any], str | None] = lambda _document: None

    def error(self, status: int, headers: Mapping[str, str], raw: bytes, sent: Sent) -> WireError:
        if self.own_error is not None:
            return self.own_error(status, headers, raw)
        return typed_error(
            status, raw, refusal_in=self.refusal, reply_tokens=sent.request.max_tokens
        )

    def cut_short(self, document: Any) -> bool:
        """Whether a successful reply stopped at the output limit: one that did so before
        writing any text holds no report (a reasoning model can spend it all thinking)."""
        *keys, word = self.stop
        return bool(down(document, *keys) == word)


@frozen
class Lookup:
    """A free request whose answer is one number (a count of a request's tokens, a model's
    window): ``body`` None is a GET; ``holds_reply``: the window holds the reply too."""

    path: str
    body: Callable[[AnalysisRequest], JsonBody] | None
    answer: Callable[[Any, str], int | None]
    holds_reply: bool = False


def number_at(key: str) -> Callable[[Any, str], int | None]:
    return lambda document, _model: positive(at(document, key))


def down(document: Any, *keys: str) -> Any:
    """The value at ``keys`` down ``document``, a list on the way standing for its first item."""
    for key in keys:
        document = at(document[0] if isinstance(document, list) and document else document, key)
    return document


def said(document: Any, *keys: str, words: tuple[str, ...] | None = None) -> str | None:
    """``last-key text`` where ``keys`` lead to a text (one of ``words``, if given)."""
    value = down(document, *keys)
    known = isinstance(value, str) and (words is None or value in words)
    return f"{keys[-1]} {value}" if known else None


def positive(value: Any) -> int | None:
    """``value`` when it is a positive integer (JSON's ``true`` is not one), else None."""
    return value if type(value) is int and value > 0 else None


def at(document: Any, key: str) -> Any:
    """``document[key]``, or None when ``document`` is no object."""
    return document.get(key) if isinstance(document, dict) else None


def of_type(item: Any, kind: str) -> bool:
    """Whether ``item`` is an object whose ``type`` is ``kind``."""
    return isinstance(item, dict) and item.get("type") == kind


def field_of(document: Any, key: str, kind: type[Any]) -> Any:
    """``document[key]`` when it is a ``kind``; otherwise a ShapeError naming the key."""
    if not isinstance(value := at(document, key), kind):
        what = f"no {key!r} in the reply" if value is None else f"{key!r} is not a {kind.__name__}"
        raise ShapeError(what)
    return value


def items_of(document: Any, key: str) -> list[Any]:
    """``document[key]`` as a list: missing or null is none (a safety stop, an empty
    message); anything else that is not a list is a ShapeError naming the key."""
    if (value := at(document, key)) is None:
        return []
    if not isinstance(value, list):
        raise ShapeError(f"{key!r} in the reply is not a list")
    return value


def joined(blocks: Iterable[dict[str, Any]], problem: str) -> str:
    """Each block's ``text`` joined; ShapeError(``problem``) at the first that is not text."""
    texts = []
    for block in blocks:
        if not isinstance(text := block.get("text"), str):
            raise ShapeError(problem)
        texts.append(text)
    return "".join(texts)


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


def reply_json(raw: bytes, provider: str) -> Any:
    """Raises ApiError for a reply that is not JSON."""
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        raise ApiError(f"{provider} returned a reply that is not JSON: {snippet(raw)}") from None


def unexplained(status: int, headers: Mapping[str, str], raw: bytes) -> WireError:
    """An error reply read without a wire format (a lookup's)."""
    return WireError(plain(raw))


def error_object(raw: bytes) -> dict[str, Any] | str | None:
    """The ``error`` member (an object or a string) of an error body, if any."""
    inner = at(decoded(raw), "error")
    return inner if isinstance(inner, dict | str) else None


def plain(raw: bytes) -> str:
    """What a body that is not the format's error JSON says, fit for one line."""
    return snippet(raw) if raw.strip() else "empty reply body"


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


def typed_error(
    status: int, raw: bytes, *, refusal_in: RefusalReader | None = None, reply_tokens: int = 0
) -> WireError:
    """``{"error": {"type", "code", "message"}}`` (Anthropic's and OpenAI's shape) or
    ``{"error": "..."}``. The kind shown is the code where there is one (OpenAI's 429:
    ``rate_limit_exceeded``), else the type. A gateway relaying its upstream's error says
    so: OpenRouter with a ``metadata.provider_name``, LiteLLM's proxy with its exception's
    name (``litellm.AuthenticationError: AuthenticationError: OpenAIException - ...``)."""
    inner = error_object(raw)
    kind = code = ""
    if isinstance(inner, dict):
        kind, code = text_of(inner.get("type")), text_of(inner.get("code"))
        message = text_of(inner.get("message")) or "no message"
    else:
        message = (text_of(inner) or "no message") if isinstance(inner, str) else plain(raw)
    refusal = _refused(status, code, message, refusal_in, reply_tokens)
    metadata = at(inner, "metadata")
    relayed = isinstance(metadata, dict) and "provider_name" in metadata
    relayed = relayed or bool(_LITELLM_RELAY.match(message))
    code = "" if code == str(status) else code  # OpenRouter's and LiteLLM's code is the status
    return WireError(message, kind=code or kind, refusal=refusal, relayed=relayed)


def _refused(
    status: int, code: str, message: str, refusal_in: RefusalReader | None, reply_tokens: int
) -> Refusal | None:
    """A 413, or a 400 whose code or words are about the prompt's size, with the numbers
    ``refusal_in`` reads (without it, the format refuses only with a 413)."""
    lowered = message.lower()
    about_size = code in _TOO_LONG_CODES or _TOO_LONG.search(lowered) is not None
    if refusal_in is None or not (status == 413 or (status == 400 and about_size)):
        return request_too_large(status)
    return refusal_in(lowered, reply_tokens) or Refusal()
