"""Amazon Bedrock Converse: ``POST {endpoint}/model/{model id}/converse``, signed with SigV4.

Errors are ``{"message"}`` with the kind in the ``x-amzn-ErrorType`` header
(``ValidationException:http://…`` at times, the part before ``:`` being the kind). A
prompt that does not fit is a ``ValidationException`` "Input is too long for requested
model." with no numbers. Throttling, unavailability and an unready model are transient
(docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html); a denial or a
signature mismatch is not.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from axe.adapters.llm.body import MEMORY, JsonBody
from axe.adapters.llm.wire.base import (
    Lookup,
    Refusal,
    Sent,
    WireError,
    WireFormat,
    at,
    decoded,
    field_of,
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

_TRANSIENT = {
    "ThrottlingException",
    "ServiceUnavailableException",
    "ModelNotReadyException",
    "InternalServerException",
    "ModelTimeoutException",
}
_PERMANENT = {
    "AccessDeniedException",
    "UnrecognizedClientException",
    "InvalidSignatureException",
    "IncompleteSignatureException",
    "ExpiredTokenException",
    "InvalidClientTokenId",
}
_TOO_LONG = ("input is too long", "too many input tokens", "too many total text bytes")


def _conversation(request: AnalysisRequest) -> dict[str, Any]:
    return {
        "system": [{"text": request.system_prompt}],
        "messages": [{"role": "user", "content": [{"text": MEMORY}]}],
    }


def _body(sent: Sent) -> JsonBody:
    request = sent.request
    settings = {"temperature": request.temperature, "maxTokens": request.max_tokens}
    return JsonBody({**_conversation(request), "inferenceConfig": settings}, request.content)


def _reply(document: Any, sent: Sent) -> tuple[str, Usage | None]:
    message = field_of(field_of(document, "output", dict), "message", dict)
    blocks = field_of(message, "content", list)
    texts = (block for block in blocks if isinstance(block, dict) and "text" in block)
    counts = usage(document.get("usage"), "inputTokens", "outputTokens")
    return joined(texts, "a content block whose text is not text"), counts


def _error(status: int, headers: Mapping[str, str], raw: bytes) -> WireError:
    kind = text_of(headers.get("x-amzn-errortype", "").partition(":")[0])
    document = decoded(raw)
    said = at(document, "message") or at(document, "Message")
    message = text_of(said) if said else plain(raw)
    lowered = message.lower()
    refusal = request_too_large(status)
    if kind == "ValidationException" and any(hint in lowered for hint in _TOO_LONG):
        refusal = Refusal()
    transient = None
    if kind in _TRANSIENT:
        transient = True
    elif kind in _PERMANENT or ("signature" in lowered and "match" in lowered):
        transient = False
    return WireError(message, kind=kind, refusal=refusal, transient=transient)


def _count_body(request: AnalysisRequest) -> JsonBody:
    """Converse's system and messages, signed as Converse is
    (docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_CountTokens.html)."""
    return JsonBody({"input": {"converse": _conversation(request)}}, request.content)


FORMAT = WireFormat(
    name="bedrock-converse",
    path="/model/{model}/converse",
    body=_body,
    reply=_reply,
    stop=("stopReason", "max_tokens"),
    own_error=_error,
    declined=lambda document: said(
        document, "stopReason", words=("guardrail_intervened", "content_filtered")
    ),
)
COUNTING = Lookup("/model/{model}/count-tokens", _count_body, number_at("inputTokens"))
