"""Ollama's ``/api/chat`` with ``stream: false``; no key; errors ``{"error": "..."}``.

Ollama never refuses a prompt that is too long: it keeps the newest part that fits
``num_ctx`` and drops the rest. So ``num_ctx`` is sized to hold the whole prompt and the
reply, never beyond the model's window (asked with ``POST /api/show``), and a reply whose
``prompt_eval_count`` equals the ``num_ctx`` sent shows the prompt was cut: that is a
"too long" refusal, never a report on part of the log.
"""

from __future__ import annotations

from typing import Any

from axe.adapters.llm.body import MEMORY, JsonBody
from axe.adapters.llm.wire.base import (
    Lookup,
    Sent,
    ShapeError,
    WireFormat,
    field_of,
    positive,
    usage,
)
from axe.application.ports import AnalysisRequest
from axe.domain.errors import PromptTooLargeError
from axe.domain.results import Usage

_BYTES_PER_TOKEN_LOWER_BOUND = 3
_MIN_CONTEXT = 8192


def context_size(request: AnalysisRequest) -> int:
    """A context that holds the whole prompt and the reply: a byte count over-estimates
    tokens."""
    prompt_bytes = len(request.content) + len(request.system_prompt.encode("utf-8"))
    needed = prompt_bytes // _BYTES_PER_TOKEN_LOWER_BOUND + request.max_tokens + 256
    return max(_MIN_CONTEXT, -(-needed // 1024) * 1024)


def _num_ctx(sent: Sent) -> int:
    context = context_size(sent.request)
    return context if sent.window is None else min(context, sent.window)


def _body(sent: Sent) -> JsonBody:
    request = sent.request
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
            "num_ctx": _num_ctx(sent),
        },
    }
    return JsonBody(payload, request.content)


def _reply(document: Any, sent: Sent) -> tuple[str, Usage | None]:
    content = field_of(document, "message", dict).get("content")
    if not isinstance(content, str):
        raise ShapeError("message content is missing")
    if document.get("prompt_eval_count") == (context := _num_ctx(sent)):
        raise PromptTooLargeError(
            f"ollama cut the prompt to its context of {context} tokens",
            limit=context - sent.request.max_tokens,
        )
    return content, usage(document, "prompt_eval_count", "eval_count")


def _context_length(document: Any, model: str) -> int | None:
    """``model_info["<architecture>.context_length"]`` from an ``/api/show`` reply."""
    info = document.get("model_info") if isinstance(document, dict) else None
    if not isinstance(info, dict):
        return None
    length = info.get(f"{info.get('general.architecture')}.context_length")
    if type(length) is not int:
        found = [v for k, v in info.items() if k.endswith(".context_length") and type(v) is int]
        length = found[0] if found else None
    return positive(length)


FORMAT = WireFormat(
    name="ollama-chat", path="/api/chat", body=_body, reply=_reply, stop=("done_reason", "length")
)
WINDOW = Lookup(
    "/api/show", lambda request: JsonBody({"model": request.model.name}), _context_length, True
)
