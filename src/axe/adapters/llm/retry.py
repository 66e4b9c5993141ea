"""When to try a provider request again, how long to wait first, and what to say when gc
gives up: as the official Anthropic and OpenAI SDKs do, so axe is neither more nor less
persistent than the tools people know. Connection errors, timeouts, 408, 409, 429 and 5xx
are retried at most twice with capped exponential backoff and jitter; ``retry-after-ms``,
``retry-after`` (or the wait an error body names; up to 60 s) and ``x-should-retry`` are
obeyed. Unlike the SDKs, a longer wait ends the tries at once, rather than sending more
requests into a limit the provider said will last, and a 501 is not retried: a server
without the endpoint (a gateway asked for a count) will not have it a second later.
"""

from __future__ import annotations

import email.utils
import random
import socket
import ssl
import threading
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import httpx
from attrs import frozen

from axe.adapters.llm.wire.base import WireError, one_line
from axe.application.ports import Clock
from axe.domain.errors import ApiError

# OpenSSL's verify codes for an issuer it does not know: a TLS-inspecting proxy or a private CA
_UNKNOWN_ISSUER = frozenset({2, 18, 19, 20, 21})
_RETRYABLE_STATUS = frozenset({408, 409, 429})
_SPEND_LIMIT_HINTS = ("insufficient_quota", "spend limit", "billing", "credit balance")
MAX_SERVER_DELAY = 60.0  # seconds of retry-after obeyed; a longer wait is not waited for


class Failed(NamedTuple):
    """A failed attempt: the error, whether another may pass, the wait the provider asked."""

    error: ApiError
    retryable: bool = False
    asked: float | None = None


@frozen
class RetryPolicy:
    max_retries: int = 2
    initial_delay: float = 0.5
    max_delay: float = 8.0
    jitter: Callable[[], float] = random.random

    def after_error(
        self, status: int, headers: Mapping[str, str], raw: bytes, said: WireError, *, now: float
    ) -> tuple[bool, float | None]:
        """Whether an HTTP error reply may pass on another try, and the wait the provider
        asked for, however long: its headers' (at ``now``, the wall clock), else its body's
        as the wire format ``said`` (None for an error no wait mends, a 401 or 413). Never a
        "too long" refusal, nor after asking for a wait longer than gc waits."""
        asked = requested_delay(headers, now=now)
        asked = said.retry_delay if asked is None else asked
        retryable = said.transient
        if retryable is None or "x-should-retry" in headers:
            retryable = self.should_retry(status, headers, raw.decode("utf-8", "replace"))
        longer_than_waited = asked is not None and obeyed(asked) is None
        mended_by_a_wait = retryable and said.refusal is None
        return mended_by_a_wait and not longer_than_waited, asked if mended_by_a_wait else None

    def should_retry(self, status: int, headers: Mapping[str, str], body: str) -> bool:
        verdict = headers.get("x-should-retry", "").strip().lower()
        if verdict in {"true", "false"}:
            return verdict == "true"
        if status == 429 and any(hint in body.lower() for hint in _SPEND_LIMIT_HINTS):
            return False
        return status in _RETRYABLE_STATUS or (status >= 500 and status != 501)

    def retried(
        self, attempt: Callable[[], Any], *, clock: Clock, deadline: float, stop: Callable[[], bool]
    ) -> Any:
        """What ``attempt`` gives once it gives no :class:`Failed`; a retry starts only while
        one may pass, before ``deadline`` and unless ``stop`` says the run is over; when
        none is left, ApiError: the last failure's error, saying how many retries were made."""
        retry = 0
        while isinstance(outcome := attempt(), Failed):
            pause = self.delay(retry, outcome.asked)
            last = retry >= self.max_retries or not outcome.retryable or stop()
            if last or clock.monotonic() + pause >= deadline:
                raise given_up(outcome.error, retry, outcome.asked)
            clock.sleep(pause)
            retry += 1
        return outcome

    def delay(self, retry: int, asked: float | None) -> float:
        """Seconds before retry number ``retry`` (0-based): the wait the provider asked for
        when gc obeys it, else capped exponential backoff."""
        if (server := obeyed(asked)) is not None:
            return server
        base = min(self.initial_delay * 2.0**retry, self.max_delay)
        return base * (1 - 0.25 * self.jitter())


class SharedPauses:
    """A provider's 429 ``retry-after`` means the client, not one request: every worker
    thread waits it out before its next request to that provider, instead of each finding
    the limit with a refused request of its own."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._until: dict[str, float] = {}
        self._lock = threading.Lock()

    def hold(self, provider: str, seconds: float) -> None:
        """No request to ``provider`` for ``seconds`` from now (a longer pause wins)."""
        with self._lock:
            until = self._clock.monotonic() + seconds
            self._until[provider] = max(self._until.get(provider, until), until)

    def wait(self, provider: str, *, deadline: float) -> bool:
        """Sleep out ``provider``'s pause; False, without sleeping, if it outlasts
        ``deadline``, so the caller reports a timeout instead of waiting for nothing."""
        with self._lock:
            remaining = self._until.get(provider, 0.0) - self._clock.monotonic()
        if remaining > 0 and self._clock.monotonic() + remaining >= deadline:
            return False
        if remaining > 0:
            self._clock.sleep(remaining)
        return True


def no_answer(error: httpx.TransportError, *, proxied: bool) -> tuple[str, bool]:
    """Why no answer came, and whether another try may bring one: a dropped connection or a
    timeout may; a certificate that does not verify, or a proxy that refused us, will not.
    Through a proxy every TCP connection goes to the proxy, so a refused or unresolvable
    one is the proxy's, as is a status line (to CONNECT)."""
    cause: BaseException = error  # the OS or TLS error under httpx's and httpcore's
    while (inner := cause.__cause__ or cause.__context__) is not None:
        cause = inner
    if isinstance(cause, ssl.SSLCertVerificationError):
        hint = "; if a proxy inspects TLS, set SSL_CERT_FILE to a bundle with its root certificate"
        unknown = cause.verify_code in _UNKNOWN_ISSUER
        return f"certificate verify failed: {cause.verify_message}{hint if unknown else ''}", False
    text = one_line(str(error) or type(error).__name__)
    if isinstance(error, httpx.ProxyError):
        return f"the proxy answered {text}", False
    reason = "connection refused" if "refused" in text.lower() else text
    if proxied and isinstance(cause, ConnectionRefusedError | socket.gaierror):
        return f"no connection to the proxy ({reason})", True
    return reason, True


def given_up(error: ApiError, retries: int, asked: float | None) -> ApiError:
    """``error``, saying how many retries were made, and how long the provider asked to be
    left alone when that made more tries pointless (``retry-after: 3600``)."""
    notes = [f"after {retries} {'retry' if retries == 1 else 'retries'}"] if retries else []
    if asked is not None and asked >= 1:
        notes.append(f"the provider asked to wait {asked:.0f}s before trying again")
        if asked > MAX_SERVER_DELAY:
            notes.append(f"gc waits at most {MAX_SERVER_DELAY:.0f}s")
    if notes:
        error.args = (f"{error} ({'; '.join(notes)})",)
    return error


def obeyed(asked: float | None) -> float | None:
    """The wait a provider asked for if gc waits that long, else None."""
    return asked if asked is not None and asked <= MAX_SERVER_DELAY else None


def requested_delay(headers: Mapping[str, str], *, now: float) -> float | None:
    """The wait ``retry-after-ms`` or ``retry-after`` (seconds, or an HTTP date measured
    from ``now``) asks for, however long; None if they name none."""
    server = _server_delay(headers, now)
    return server if server is not None and server >= 0 else None


def _server_delay(headers: Mapping[str, str], now: float) -> float | None:
    for name, unit in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        try:
            return float(headers.get(name) or "-") * unit
        except ValueError:
            pass
    try:
        return email.utils.parsedate_to_datetime(headers.get("retry-after", "")).timestamp() - now
    except (TypeError, ValueError):
        return None
