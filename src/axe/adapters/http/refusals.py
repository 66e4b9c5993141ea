"""A provider's "your prompt is too long" answer, recognised and read for its numbers.

The analysis splits a log that does not fit, and sizes the parts from these numbers when
the provider gives them; without them it halves. Each provider words it differently:

- Anthropic, HTTP 400 ``invalid_request_error``: ``prompt is too long: 212230 tokens >
  200000 maximum``, or ``input length and `max_tokens` exceed context limit: 197626 +
  21333 > 204658`` (the window holds the reply too);
- OpenAI, HTTP 400 code ``context_length_exceeded``: ``maximum context length is 128000
  tokens. However, your messages resulted in 130000 tokens`` or ``... you requested 134096
  tokens (130000 in the messages, 4096 in the completion)`` (the window holds the reply);
- anyone, HTTP 413 (the body was too large for the server), with no numbers.
"""

from __future__ import annotations

import re

from attrs import frozen

_CODES = frozenset({"context_length_exceeded", "request_too_large", "string_above_max_length"})
_HINTS = (
    "prompt is too long",
    "too many tokens",
    "context length",
    "context_length",
    "context window",
    "context limit",
    "maximum context",
    "request too large",
)
_PROMPT_TOO_LONG = re.compile(r"prompt is too long: (\d+) tokens? > (\d+) maximum")
_CONTEXT_LIMIT = re.compile(r"exceed context limit: (\d+) \+ (\d+) > (\d+)")
_CONTEXT_LENGTH = re.compile(r"maximum context length is (\d+) tokens")
_MESSAGES = re.compile(r"(\d+) in the messages|resulted in (\d+) tokens")
_COMPLETION = re.compile(r"(\d+) in the completion")


@frozen
class Refusal:
    """The prompt's size in the provider's tokens and the most input it accepts, if said."""

    tokens: int | None = None
    limit: int | None = None


def too_long(status: int, code: str, message: str, *, reply_tokens: int) -> Refusal | None:
    """The refusal in an error reply, or None if the reply is about something else.

    ``reply_tokens`` is the request's ``max_tokens``: where the provider's window holds the
    reply as well as the prompt, the room left for input is the window less that.
    """
    lowered = message.lower()
    if status != 413 and not (
        status == 400 and (code in _CODES or any(hint in lowered for hint in _HINTS))
    ):
        return None
    if found := _PROMPT_TOO_LONG.search(lowered):
        return Refusal(int(found[1]), int(found[2]))
    if found := _CONTEXT_LIMIT.search(lowered):
        prompt, reply, window = (int(group) for group in found.groups())
        return Refusal(prompt, window - reply)
    if (window_found := _CONTEXT_LENGTH.search(lowered)) and (
        messages := _MESSAGES.search(lowered)
    ):
        completion = _COMPLETION.search(lowered)
        reply = int(completion[1]) if completion else reply_tokens
        return Refusal(int(messages[1] or messages[2]), int(window_found[1]) - reply)
    return Refusal()
