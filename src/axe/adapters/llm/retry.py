"""When to try a provider request again, and how long to wait first.

Follows what the official Anthropic and OpenAI SDKs do, so axe is neither more nor less
persistent than the tools people already know: connection errors, timeouts, 408, 409, 429
and 5xx are retried at most twice with capped exponential backoff and jitter; the server's
``retry-after-ms`` / ``retry-after`` (or the wait its error body names, as Gemini's
``RetryInfo`` does; up to 60 s) and ``x-should-retry`` are obeyed. Unlike the SDKs, a longer
wait ends the tries at once (the transport's rule), rather than sending more requests into
a limit the provider said will last.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from datetime import datetime

from attrs import frozen

_RETRYABLE_STATUS = frozenset({408, 409, 429})
_SPEND_LIMIT_HINTS = ("insufficient_quota", "spend limit", "billing", "credit balance")
MAX_SERVER_DELAY = 60.0  # seconds of retry-after obeyed; a longer wait is not waited for


@frozen
class RetryPolicy:
    max_retries: int = 2
    initial_delay: float = 0.5
    max_delay: float = 8.0
    jitter: Callable[[], float] = random.random

    def should_retry(self, status: int, headers: Mapping[str, str], body: str) -> bool:
        """Whether an HTTP error reply is worth another try."""
        verdict = headers.get("x-should-retry", "").strip().lower()
        if verdict in {"true", "false"}:
            return verdict == "true"
        if status == 429 and any(hint in body.lower() for hint in _SPEND_LIMIT_HINTS):
            return False
        return status in _RETRYABLE_STATUS or status >= 500

    def delay(self, retry: int, asked: float | None) -> float:
        """Seconds to wait before retry number ``retry`` (0-based): the wait the provider
        ``asked`` for when it is one worth obeying, else capped exponential backoff."""
        if (server := obeyed(asked)) is not None:
            return server
        base = min(self.initial_delay * 2.0**retry, self.max_delay)
        return base * (1 - 0.25 * self.jitter())


def obeyed(asked: float | None) -> float | None:
    """The wait a provider asked for if gc waits that long (up to a minute), else None."""
    return asked if asked is not None and asked <= MAX_SERVER_DELAY else None


def requested_delay(headers: Mapping[str, str], *, now: float) -> float | None:
    """The wait the headers ask for (``retry-after-ms``, ``retry-after`` in seconds or as
    an HTTP date, measured from ``now``, the wall clock), however long, or None if they
    name none."""
    server = _server_delay(headers, now)
    return server if server is not None and server >= 0 else None


def _server_delay(headers: Mapping[str, str], now: float) -> float | None:
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return float(millis) / 1000.0
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    import email.utils  # noqa: PLC0415  (rare: only for HTTP-date Retry-After values)

    try:
        when: datetime = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return when.timestamp() - now
