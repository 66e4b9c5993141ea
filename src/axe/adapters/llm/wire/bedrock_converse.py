"""Amazon Bedrock Converse: ``POST {endpoint}/model/{model id}/converse``, signed with SigV4.

The model id travels URL-encoded (a ``:`` as ``%3A``). Errors are ``{"message"}`` with
the kind in the ``x-amzn-ErrorType`` header (``ValidationException:http://…`` at times,
the part before ``:`` being the kind). A prompt that does not fit is a
``ValidationException`` "Input is too long for requested model." with no numbers.
``ThrottlingException`` (429), ``ServiceUnavailableException`` (503) and
``ModelNotReadyException`` are transient (docs.aws.amazon.com/bedrock/latest/APIReference/
API_runtime_Converse.html); ``AccessDeniedException``, ``UnrecognizedClientException``
and a signature mismatch are not.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from axe.adapters.llm.body import MEMORY, JsonBody
from axe.adapters.llm.wire.base import (
    Lookup,
    Refusal,
    Sent,
    ShapeError,
    WireError,
    WireFormat,
    decoded,
    field_of,
    number_at,
    plain,
    request_too_large,
    said,
    text_of,
    usage,
)
from axe.application.ports import AnalysisRequest
from axe.domain.results import Usage

_TRANSIENT = frozenset(
    {
        "ThrottlingException",
        "ServiceUnavailableException",
        "ModelNotReadyException",
        "InternalServerException",
        "ModelTimeoutException",
    }
)
_PERMANENT = frozenset(
    {
        "AccessDeniedException",
        "UnrecognizedClientException",
        "InvalidSignatureException",
        "IncompleteSignatureException",
        "ExpiredTokenException",
        "InvalidClientTokenId",
    }
)
_TOO_LONG = ("input is too long", "too many input tokens", "too many total text bytes")


class BedrockConverse(WireFormat):
    name: str = "bedrock-converse"

    def path(self, model: str) -> str:
        return f"/model/{quote(model, safe='')}/converse"

    def body(self, sent: Sent) -> JsonBody:
        request = sent.request
        payload = {
            **_conversation(request),
            "inferenceConfig": {
                "temperature": request.temperature,
                "maxTokens": request.max_tokens,
            },
        }
        return JsonBody(payload, request.content)

    def reply(self, document: Any, sent: Sent) -> tuple[str, Usage | None]:
        """``output.message.content[].text`` joined."""
        message = field_of(field_of(document, "output", dict), "message", dict)
        texts = []
        for block in field_of(message, "content", list):
            if isinstance(block, dict) and "text" in block:
                if not isinstance(block["text"], str):
                    raise ShapeError("a content block whose text is not text")
                texts.append(block["text"])
        return "".join(texts), usage(document.get("usage"), "inputTokens", "outputTokens")

    def error(self, status: int, headers: Mapping[str, str], raw: bytes, sent: Sent) -> WireError:
        kind = text_of(headers.get("x-amzn-errortype", "").partition(":")[0])
        document = decoded(raw)
        said = None
        if isinstance(document, dict):
            said = document.get("message") or document.get("Message")
        message = text_of(said) if said else plain(raw)
        refusal = request_too_large(status)
        if kind == "ValidationException" and any(hint in message.lower() for hint in _TOO_LONG):
            refusal = Refusal()
        transient = None
        if kind in _TRANSIENT:
            transient = True
        elif kind in _PERMANENT or ("signature" in message.lower() and "match" in message.lower()):
            transient = False
        return WireError(message, kind=kind, refusal=refusal, transient=transient)

    def cut_short(self, document: Any) -> bool:
        return said(document, "stopReason", "max_tokens")


def count_body(request: AnalysisRequest) -> JsonBody:
    """The Converse request's system and messages, for the count endpoint, signed as Converse
    is (docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_CountTokens.html)."""
    return JsonBody({"input": {"converse": _conversation(request)}}, request.content)


def _conversation(request: AnalysisRequest) -> dict[str, Any]:
    return {
        "system": [{"text": request.system_prompt}],
        "messages": [{"role": "user", "content": [{"text": MEMORY}]}],
    }


FORMAT = BedrockConverse()
COUNTING = Lookup("/model/{model}/count-tokens", count_body, number_at("inputTokens"))
