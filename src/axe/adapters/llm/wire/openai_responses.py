"""OpenAI Responses: ``POST {base}/v1/responses`` (OpenCode's ``gpt-*`` models).

The request carries the prompt as ``instructions`` and the log as ``input``; the report is
the ``output_text`` parts of the ``message`` items of ``output``; usage is
``usage.input_tokens``/``output_tokens``. Errors and the "too long" refusal are OpenAI's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from axe.adapters.llm.body import MEMORY, JsonBody
from axe.adapters.llm.wire.base import (
    Lookup,
    Sent,
    ShapeError,
    WireError,
    WireFormat,
    field_of,
    items_of,
    number_at,
    said,
    typed_error,
)
from axe.adapters.llm.wire.openai_chat import is_reasoning_model, openai_refusal, priced
from axe.application.ports import AnalysisRequest
from axe.domain.results import Usage


class OpenAIResponses(WireFormat):
    name: str = "openai-responses"

    def path(self, model: str) -> str:
        return "/v1/responses"

    def body(self, sent: Sent) -> JsonBody:
        request = sent.request
        payload = {**_prompt(request), "max_output_tokens": request.max_tokens}
        if not is_reasoning_model(sent):
            payload["temperature"] = request.temperature
        return JsonBody(payload, request.content)

    def reply(self, document: Any, sent: Sent) -> tuple[str, Usage | None]:
        texts = []
        for item in field_of(document, "output", list):
            if not isinstance(item, dict) or item.get("type") != "message":
                continue
            for part in items_of(item, "content"):
                if isinstance(part, dict) and part.get("type") == "output_text":
                    text = part.get("text")
                    if not isinstance(text, str):
                        raise ShapeError("an output_text part without text")
                    texts.append(text)
        return "".join(texts), priced(document.get("usage"), "input_tokens", "output_tokens")

    def error(self, status: int, headers: Mapping[str, str], raw: bytes, sent: Sent) -> WireError:
        return typed_error(
            status, raw, refusal_in=openai_refusal, reply_tokens=sent.request.max_tokens
        )

    def cut_short(self, document: Any) -> bool:
        return said(document, "status", "incomplete")


def count_body(request: AnalysisRequest) -> JsonBody:
    """The Responses body without what is not counted, for OpenAI's count of a request to
    any of its models (developers.openai.com/api/reference, "Get input token counts")."""
    return JsonBody(_prompt(request), request.content)


def _prompt(request: AnalysisRequest) -> dict[str, Any]:
    return {"model": request.model.name, "instructions": request.system_prompt, "input": MEMORY}


FORMAT = OpenAIResponses()
COUNTING = Lookup("/responses/input_tokens", count_body, number_at("input_tokens"))
