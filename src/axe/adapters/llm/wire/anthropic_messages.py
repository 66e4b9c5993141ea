"""Anthropic Messages: ``POST {base}/v1/messages`` (Anthropic, MiniMax, OpenCode's Claude route).

Errors are ``{"type": "error", "error": {"type", "message"}}``. A prompt that does not
fit is HTTP 400 ``invalid_request_error`` worded ``prompt is too long: 212230 tokens >
200000 maximum``, or ``input length and `max_tokens` exceed context limit: 197626 + 21333 >
204658`` (the window holds the reply too); MiniMax's Anthropic endpoint relays the same
wording.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from axe.adapters.llm.body import MEMORY, JsonBody
from axe.adapters.llm.wire.base import (
    Lookup,
    Refusal,
    Sent,
    ShapeError,
    WireError,
    WireFormat,
    field_of,
    is_too_long,
    number_at,
    said,
    typed_error,
    usage,
)
from axe.application.ports import AnalysisRequest
from axe.domain.results import Usage

ANTHROPIC_VERSION = "2023-06-01"
_PROMPT_TOO_LONG = re.compile(r"prompt is too long: (\d+) tokens? > (\d+) maximum")
_CONTEXT_LIMIT = re.compile(r"exceed context limit: (\d+) \+ (\d+) > (\d+)")
_CACHE_INPUT = ("cache_creation_input_tokens", "cache_read_input_tokens")


class AnthropicMessages(WireFormat):
    name: str = "anthropic-messages"
    headers: Mapping[str, str] = {"anthropic-version": ANTHROPIC_VERSION}

    def path(self, model: str) -> str:
        return "/v1/messages"

    def body(self, sent: Sent) -> JsonBody:
        request = sent.request
        payload = {
            "model": request.model.name,
            "max_tokens": request.max_tokens,
            **_prompt(request),
            "temperature": request.temperature,
        }
        return JsonBody(payload, request.content)

    def reply(self, document: Any, sent: Sent) -> tuple[str, Usage | None]:
        """Every ``text`` block joined; prompt-cache reads and writes count as input."""
        texts = []
        for block in field_of(document, "content", list):
            if isinstance(block, dict) and block.get("type") == "text":
                text = block.get("text")
                if not isinstance(text, str):
                    raise ShapeError("a text block without text")
                texts.append(text)
        counts = usage(
            document.get("usage"), "input_tokens", "output_tokens", extra_input=_CACHE_INPUT
        )
        return "".join(texts), counts

    def error(self, status: int, headers: Mapping[str, str], raw: bytes, sent: Sent) -> WireError:
        return typed_error(status, raw, refusal_in=anthropic_refusal)

    def cut_short(self, document: Any) -> bool:
        return said(document, "stop_reason", "max_tokens")


def anthropic_refusal(status: int, code: str, message: str, reply_tokens: int) -> Refusal | None:
    """Anthropic's "too long" refusal and its numbers (see the module docstring)."""
    if not is_too_long(status, code, message):
        return None
    lowered = message.lower()
    if found := _PROMPT_TOO_LONG.search(lowered):
        return Refusal(int(found[1]), int(found[2]))
    if found := _CONTEXT_LIMIT.search(lowered):
        prompt, reply, window = (int(group) for group in found.groups())
        return Refusal(prompt, window - reply)
    return Refusal()


def count_body(request: AnalysisRequest) -> JsonBody:
    """The Messages body without ``max_tokens`` and ``temperature``, which the count endpoint
    does not take (platform.claude.com/docs/api/messages/count_tokens)."""
    return JsonBody({"model": request.model.name, **_prompt(request)}, request.content)


def _prompt(request: AnalysisRequest) -> dict[str, Any]:
    return {"system": request.system_prompt, "messages": [{"role": "user", "content": MEMORY}]}


FORMAT = AnthropicMessages()
COUNTING = Lookup("/v1/messages/count_tokens", count_body, number_at("input_tokens"))
