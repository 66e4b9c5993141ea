"""OpenAI Responses (OpenCode's ``gpt-*`` models): the prompt as ``instructions``, the log
as ``input``; the report is the ``output_text`` parts of the ``message`` items of
``output``. Errors and the "too long" refusal are OpenAI's.
"""

from __future__ import annotations

from typing import Any

from axe.adapters.llm.body import MEMORY, JsonBody
from axe.adapters.llm.wire.base import (
    Lookup,
    Sent,
    WireFormat,
    at,
    field_of,
    items_of,
    joined,
    number_at,
    of_type,
)
from axe.adapters.llm.wire.openai_chat import is_reasoning_model, priced, refusal
from axe.application.ports import AnalysisRequest
from axe.domain.results import Usage


def _prompt(request: AnalysisRequest) -> dict[str, Any]:
    return {"model": request.model.name, "instructions": request.system_prompt, "input": MEMORY}


def _body(sent: Sent) -> JsonBody:
    payload = {**_prompt(sent.request), "max_output_tokens": sent.request.max_tokens}
    if not is_reasoning_model(sent):
        payload["temperature"] = sent.request.temperature
    return JsonBody(payload, sent.request.content)


def _reply(document: Any, sent: Sent) -> tuple[str, Usage | None]:
    messages = [item for item in field_of(document, "output", list) if of_type(item, "message")]
    parts = (part for item in messages for part in items_of(item, "content"))
    text = joined(
        (part for part in parts if of_type(part, "output_text")), "an output_text part without text"
    )
    return text, priced(document.get("usage"), "input_tokens", "output_tokens")


def _count_body(request: AnalysisRequest) -> JsonBody:
    """OpenAI's count of a request to any of its models (developers.openai.com/api/reference,
    "Get input token counts")."""
    return JsonBody(_prompt(request), request.content)


def _declined(document: Any) -> str | None:
    """A ``refusal`` part in place of the text (platform.openai.com/docs/guides/refusals)."""
    output = at(document, "output")
    for item in output if isinstance(output, list) else []:
        content = at(item, "content")
        for part in content if isinstance(content, list) else []:
            if of_type(part, "refusal") and isinstance(text := part.get("refusal"), str):
                return f"refusal {text}"
    return None


FORMAT = WireFormat(
    name="openai-responses",
    path="/v1/responses",
    body=_body,
    reply=_reply,
    stop=("status", "incomplete"),
    refusal=refusal,
    declined=_declined,
)
COUNTING = Lookup("/responses/input_tokens", _count_body, number_at("input_tokens"))
