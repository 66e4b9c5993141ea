"""Google Gemini: ``POST {base}/v1beta/models/{model}:generateContent``.

Errors are ``{"error": {"code", "message", "status", "details"}}``, each detail a
``google.rpc`` message named by its ``@type``. A prompt that does not fit is HTTP 400
``INVALID_ARGUMENT`` worded "The input token count (1200293) exceeds the maximum number of
tokens allowed (1048576)." (as gemini-cli users report it, e.g.
github.com/google-gemini/gemini-cli/issues/6678); ``RESOURCE_EXHAUSTED`` (429) and
``UNAVAILABLE`` (503) are transient, the former even when it speaks of quota.

A wrong or expired key is no 401 but HTTP 400 ``INVALID_ARGUMENT`` ("API key not valid.
Please pass a valid API key." or "API key expired. Please renew the API key.") with an
``ErrorInfo`` detail whose ``reason`` is ``API_KEY_INVALID`` (the bodies quoted in
github.com/cequence-io/openai-scala-client/issues/109 and continuedev/continue#11336). A 429
says how long to wait in a ``RetryInfo`` detail, ``"retryDelay": "37s"`` (a protobuf
Duration: seconds, fractions allowed), never in ``retry-after``.
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
    error_object,
    field_of,
    items_of,
    joined,
    number_at,
    plain,
    request_too_large,
    said,
    text_of,
    usage,
)
from axe.application.ports import AnalysisRequest
from axe.domain.results import Usage

_TOO_LONG = re.compile(
    r"input token count \((\d+)\) exceeds the maximum number of tokens allowed \((\d+)\)"
)
_TRANSIENT = frozenset({"RESOURCE_EXHAUSTED", "UNAVAILABLE"})
_DURATION = re.compile(r"(\d+(?:\.\d+)?)s")


def _parts(text: Any) -> dict[str, Any]:
    return {"parts": [{"text": text}]}


def _body(sent: Sent) -> JsonBody:
    request = sent.request
    payload = {
        "system_instruction": _parts(request.system_prompt),
        "contents": [{"role": "user", **_parts(MEMORY)}],
        "generationConfig": {
            "temperature": request.temperature,
            "maxOutputTokens": request.max_tokens,
        },
    }
    return JsonBody(payload, request.content)


def _reply(document: Any, sent: Sent) -> tuple[str, Usage | None]:
    """``candidates[0].content.parts[].text`` joined, thoughts left out; a candidate without
    content (a safety stop) is an empty report."""
    candidates = field_of(document, "candidates", list)
    if not candidates or not isinstance(candidates[0], dict):
        raise ShapeError("no candidates")
    parts = items_of(candidates[0].get("content"), "parts")
    texts = [part for part in parts if isinstance(part, dict) and "text" in part]
    joined(texts, "a part whose text is not text")  # a thought's too
    text = "".join(part["text"] for part in texts if not part.get("thought"))
    return text, usage(document.get("usageMetadata"), "promptTokenCount", "candidatesTokenCount")


def _error(status: int, headers: Mapping[str, str], raw: bytes) -> WireError:
    refusal = request_too_large(status)
    if not isinstance(inner := error_object(raw), dict):
        return WireError(plain(raw), refusal=refusal)
    kind = text_of(inner.get("status"))
    message = text_of(inner.get("message")) or "no message"
    if found := _TOO_LONG.search(message.lower()):
        refusal = Refusal(int(found[1]), int(found[2]))
    items = inner.get("details")
    details = {  # by the last word of each ``@type`` (``...google.rpc.ErrorInfo``: ``ErrorInfo``)
        item["@type"].rpartition(".")[2]: item
        for item in (items if isinstance(items, list) else [])
        if isinstance(item, dict) and isinstance(item.get("@type"), str)
    }
    delay = details.get("RetryInfo", {}).get("retryDelay")  # a Duration: "37s", "1.5s"
    found = _DURATION.fullmatch(delay) if isinstance(delay, str) else None
    return WireError(
        message,
        kind=kind,
        refusal=refusal,
        transient=True if kind in _TRANSIENT else None,
        rejected_key=details.get("ErrorInfo", {}).get("reason") == "API_KEY_INVALID",
        retry_delay=float(found[1]) if found else None,
    )


def _count_body(request: AnalysisRequest) -> JsonBody:
    """A ``generateContentRequest``, which names its model, so that the system instruction
    is counted too (ai.google.dev/api/tokens)."""
    counted = {
        "model": f"models/{request.model.name}",
        "contents": [{"role": "user", **_parts(MEMORY)}],
        "systemInstruction": _parts(request.system_prompt),
    }
    return JsonBody({"generateContentRequest": counted}, request.content)


_BLOCKED = ("SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII")  # filters
FORMAT = WireFormat(
    name="gemini",
    path="/v1beta/models/{model}:generateContent",
    body=_body,
    reply=_reply,
    stop=("candidates", "finishReason", "MAX_TOKENS"),
    own_error=_error,
    declined=lambda document: (
        said(document, "promptFeedback", "blockReason")
        or said(document, "candidates", "finishReason", words=_BLOCKED)
    ),
)
COUNTING = Lookup("/v1beta/models/{model}:countTokens", _count_body, number_at("totalTokens"))
WINDOW = Lookup("/v1beta/models/{model}", None, number_at("inputTokenLimit"))  # input only
