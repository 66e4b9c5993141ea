"""OpenAI Chat Completions (OpenAI, OpenRouter, Atlas Cloud, OpenCode's other models).

Errors are ``{"error": {"message", "type", "code"}}``; OpenRouter and Atlas Cloud relay
the upstream model's words in the same shape. A prompt that does not fit is HTTP 400
``context_length_exceeded`` worded ``maximum context length is 128000 tokens. However, your
messages resulted in 130000 tokens`` or ``... you requested 134096 tokens (130000 in the
messages, 4096 in the completion)``: the window holds the reply too. OpenRouter adds the
price of the request as ``usage.cost`` (US dollars).
"""

from __future__ import annotations

import re
from typing import Any

from axe.adapters.llm.body import MEMORY, JsonBody
from axe.adapters.llm.wire.base import (
    Lookup,
    Refusal,
    Sent,
    ShapeError,
    WireFormat,
    field_of,
    positive,
    said,
    text_of,
    usage,
)
from axe.domain.results import Usage

_REASONING_MODEL = re.compile(r"^(o1|o3|o4)(-|$)|^gpt-5")
_CONTEXT_LENGTH = re.compile(r"maximum context length is (\d+) tokens")
_MESSAGES = re.compile(r"(\d+) in the messages|resulted in (\d+) tokens")
_COMPLETION = re.compile(r"(\d+) in the completion")


def is_reasoning_model(sent: Sent) -> bool:
    """OpenAI reasoning models reject ``max_tokens`` and any non-default temperature. A
    router names them behind its prefixes (``openrouter/openai/gpt-5``), so the name's last
    part is judged; a gateway's alias, only by the provider's settings."""
    return sent.reasoning or bool(
        _REASONING_MODEL.search(sent.request.model.name.rpartition("/")[2])
    )


def _body(sent: Sent) -> JsonBody:
    request = sent.request
    payload: dict[str, Any] = {
        "model": request.model.name,
        "messages": [
            {"role": "system", "content": request.system_prompt},
            {"role": "user", "content": MEMORY},
        ],
    }
    if is_reasoning_model(sent):
        payload["max_completion_tokens"] = request.max_tokens
    else:
        payload["temperature"] = request.temperature
        payload["max_tokens"] = request.max_tokens
    return JsonBody(payload, request.content)


def _reply(document: Any, sent: Sent) -> tuple[str, Usage | None]:
    """``choices[0].message.content``; null content is an empty report (gc-spec §5.3).
    A gateway (OpenRouter) may answer 200 with an error body instead: its message."""
    if isinstance(document, dict) and "choices" not in document and "error" in document:
        error = document["error"]
        said = error.get("message") if isinstance(error, dict) else error
        raise ShapeError(f"an error instead of a report: {text_of(said) or 'no message'}")
    choices = field_of(document, "choices", list)
    if not choices or not isinstance(choices[0], dict):
        raise ShapeError("no choices")
    content = field_of(choices[0], "message", dict).get("content")
    if content is not None and not isinstance(content, str):
        raise ShapeError("message content is not text")
    return content or "", priced(document.get("usage"), "prompt_tokens", "completion_tokens")


def priced(block: Any, input_key: str, output_key: str) -> Usage | None:
    """The usage, with the price a gateway states as ``usage.cost`` (OpenRouter, Requesty)."""
    counts = usage(block, input_key, output_key)
    cost: Any = block.get("cost") if isinstance(block, dict) else None
    if counts is None or type(cost) not in (int, float):
        return counts
    return Usage(counts.input_tokens, counts.output_tokens, float(cost))


def refusal(message: str, reply_tokens: int) -> Refusal | None:
    """The room for input is the window less the reply: the one the message names, else
    the request's."""
    if (window := _CONTEXT_LENGTH.search(message)) and (messages := _MESSAGES.search(message)):
        completion = _COMPLETION.search(message)
        reply = int(completion[1]) if completion else reply_tokens
        return Refusal(int(messages[1] or messages[2]), int(window[1]) - reply)
    return None


def _listed_window(document: Any, model: str) -> int | None:
    """``context_length`` of ``model``'s entry in OpenRouter's model list (``GET /models``:
    ``{"data": [{"id", "context_length"}]}``, openrouter.ai/docs/api-reference/list-models)."""
    entries = document.get("data") if isinstance(document, dict) else None
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and entry.get("id") == model:
            return positive(entry.get("context_length"))
    return None


FORMAT = WireFormat(
    name="openai-chat",
    path="/chat/completions",
    body=_body,
    reply=_reply,
    stop=("choices", "finish_reason", "length"),
    refusal=refusal,
    declined=lambda document: (
        said(document, "choices", "message", "refusal")
        or said(document, "choices", "finish_reason", words=("content_filter",))
    ),
)
OPENROUTER_WINDOW = Lookup("/models", None, _listed_window, holds_reply=True)
