"""Anthropic Messages (Anthropic, MiniMax, OpenCode's Claude route).

Errors are ``{"type": "error", "error": {"type", "message"}}``. A prompt that does not
fit is HTTP 400 ``invalid_request_error`` worded ``prompt is too long: 212230 tokens >
200000 maximum``, or ``input length and `max_tokens` exceed context limit: 197626 + 21333 >
204658`` (the window holds the reply too); MiniMax's endpoint relays the same wording.
"""

from __future__ import annotations

import re
from typing import Any

from axe.adapters.llm.body import MEMORY, JsonBody
from axe.adapters.llm.wire.base import (
    Lookup,
    Refusal,
    Sent,
    WireFormat,
    field_of,
    joined,
    number_at,
    of_type,
    said,
    usage,
)
from axe.application.ports import AnalysisRequest
from axe.domain.results import Usage

_PROMPT_TOO_LONG = re.compile(r"prompt is too long: (\d+) tokens? > (\d+) maximum")
_CONTEXT_LIMIT = re.compile(r"exceed context limit: (\d+) \+ (\d+) > (\d+)")
_CACHE_INPUT = ("cache_creation_input_tokens", "cache_read_input_tokens")


def _prompt(request: AnalysisRequest) -> dict[str, Any]:
    return {"system": request.system_prompt, "messages": [{"role": "user", "content": MEMORY}]}


def _body(sent: Sent) -> JsonBody:
    request = sent.request
    payload = {
        "model": request.model.name,
        "max_tokens": request.max_tokens,
        **_prompt(request),
        "temperature": request.temperature,
    }
    return JsonBody(payload, request.content)


def _reply(document: Any, sent: Sent) -> tuple[str, Usage | None]:
    """Every ``text`` block joined; prompt-cache reads and writes count as input."""
    blocks = field_of(document, "content", list)
    texts = (block for block in blocks if of_type(block, "text"))
    counts = usage(document.get("usage"), "input_tokens", "output_tokens", extra_input=_CACHE_INPUT)
    return joined(texts, "a text block without text"), counts


def _refusal(message: str, reply_tokens: int) -> Refusal | None:
    if found := _PROMPT_TOO_LONG.search(message):
        return Refusal(int(found[1]), int(found[2]))
    if found := _CONTEXT_LIMIT.search(message):
        prompt, reply, window = (int(group) for group in found.groups())
        return Refusal(prompt, window - reply)
    return None


def _count_body(request: AnalysisRequest) -> JsonBody:
    """Without ``max_tokens`` and ``temperature``, which the count endpoint does not take
    (platform.claude.com/docs/api/messages/count_tokens)."""
    return JsonBody({"model": request.model.name, **_prompt(request)}, request.content)


FORMAT = WireFormat(
    name="anthropic-messages",
    path="/v1/messages",
    body=_body,
    reply=_reply,
    stop=("stop_reason", "max_tokens"),
    headers={"anthropic-version": "2023-06-01"},
    refusal=_refusal,
    declined=lambda document: said(document, "stop_reason", words=("refusal",)),
)
COUNTING = Lookup("/v1/messages/count_tokens", _count_body, number_at("input_tokens"))
