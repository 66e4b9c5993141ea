"""One request to a provider over the run's one ``httpx.Client``, which owns connections,
timeouts, proxies and CA certificates, follows no redirect (one could carry the key
elsewhere) and keeps no cookie (one agent's must never go with another's key). Added here:
retries under one deadline, a cap on the reply's size, the budget's rule for an attempt
that went out unanswered, and messages that name the hop and hold no secret.
"""

from __future__ import annotations

import functools
import os
import re
import threading
from collections.abc import Mapping
from http.cookiejar import CookieJar, DefaultCookiePolicy
from typing import Any

import httpx
from attrs import define

from axe.adapters.llm.body import JsonBody
from axe.adapters.llm.proxies import EnvironmentProxy, environment_proxies, no_proxy_problem
from axe.adapters.llm.redaction import display_url, scrubbed
from axe.adapters.llm.retry import Failed, RetryPolicy, SharedPauses, no_answer, obeyed
from axe.adapters.llm.wire.base import Explain, http_error, one_line, reply_json, unexplained
from axe.application.ports import Clock
from axe.domain.errors import ApiError, ConfigError

RUN_IS_OVER = "request not sent: the run is over"
_MAX_REPLY_BYTES = 32 * 1024 * 1024
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout, httpx.ProxyError)


@define(eq=False)
class _Call:  # one exchange: what it sends, and the requests that went out so far
    url: str
    headers: Mapping[str, str]
    body: JsonBody | None
    provider: str
    explain: Explain
    auth: httpx.Auth | None
    retry_unanswered: bool
    sent: int = 0
    origin: object = None  # (scheme, host, port), once the URL has parsed


class HttpTransport:
    """Sends over the run's one ``httpx.Client``, shared by every worker thread and made on
    the first request (a run that sends nothing reads no proxy or CA setting)."""

    def __init__(
        self,
        *,
        clock: Clock,
        timeout: float | None = None,
        retry: RetryPolicy | None = None,
        user_agent: str = "axe",
    ) -> None:
        self._timeout, self._retry = timeout or 120.0, retry or RetryPolicy()
        self._clock, self._pauses, self._user_agent = clock, SharedPauses(clock), user_agent
        self._client: httpx.Client | None = None
        self._proxies: tuple[EnvironmentProxy, ...] = ()
        self._hops: dict[object, EnvironmentProxy | None] = {}  # by origin: the proxy between
        self._lock, self._closed = threading.Lock(), False

    def close(self) -> None:
        """No request starts after this; one awaiting its reply on another thread goes on."""
        with self._lock:
            self._closed = True
            if self._client is not None:
                self._client.close()

    def exchange(
        self,
        url: str,
        *,
        headers: Mapping[str, str],
        body: JsonBody | None,
        provider: str,
        secrets: tuple[str, ...] = (),
        explain: Explain | None = None,
        auth: httpx.Auth | None = None,
        retry_unanswered: bool = True,
    ) -> tuple[Any, int]:
        """The decoded JSON reply to ``body`` (a GET without one) and the requests it took.
        ``auth`` runs on every attempt (without it, credentials in ``url`` go as Basic auth);
        ``secrets`` never appear in a message; without ``retry_unanswered``, an attempt that
        went out unanswered (it may have been billed) is not retried. Raises ApiError (with
        ``sent``) or ConfigError (a base URL, proxy or CA setting httpx cannot use)."""
        call = _Call(url, headers, body, provider, explain or unexplained, auth, retry_unanswered)
        deadline = self._clock.monotonic() + self._timeout
        attempt = functools.partial(self._try_once, call, deadline)
        try:
            document = self._retry.retried(
                attempt, clock=self._clock, deadline=deadline, stop=lambda: self._closed
            )
        except (ApiError, ConfigError) as error:
            proxies = (secret for proxy in self._proxies for secret in proxy.secrets)
            error.args = (scrubbed(str(error), url, (*secrets, *proxies)),)
            if isinstance(error, ApiError):
                error.sent = call.sent
            raise
        return document, call.sent

    def _try_once(self, call: _Call, deadline: float) -> Any:
        """One attempt: the decoded reply, or a :class:`Failed` saying whether to retry."""
        counted = call.sent
        try:
            response, raw = self._attempt(call, deadline)
        except (httpx.InvalidURL, httpx.UnsupportedProtocol) as error:
            url, reason = display_url(call.url), one_line(str(error))
            raise ConfigError(f"invalid base URL for {call.provider} ({url}): {reason}") from None
        except _RedirectError as stopped:  # answered; not retried: it would say the same
            call.sent += 1
            redirect = "{} answered HTTP {} (redirect to {})".format(call.provider, *stopped.args)
            return Failed(ApiError(f"{redirect}; redirects are not followed, check the base URL"))
        except httpx.TransportError as error:  # a timeout too
            # broken before an answer, it may have gone out; during one, it was counted
            went_out = call.sent > counted or not isinstance(error, _NOT_SENT)
            call.sent = counted + went_out
            reason, may_pass = no_answer(error, proxied=self._hops.get(call.origin) is not None)
            failure = f"cannot reach {self._where(call)}: {reason}"
            if isinstance(error, httpx.TimeoutException):
                failure = f"request to {self._where(call)} timed out after {self._timeout:g}s"
            return Failed(ApiError(failure), may_pass and (call.retry_unanswered or not went_out))
        status = response.status_code
        if 200 <= status < 300:
            return reply_json(raw, call.provider)
        if status == 407:  # only a proxy says it; not retried: it would refuse again
            reason = f"the proxy answered {status} {response.reason_phrase}".rstrip()
            return Failed(ApiError(f"cannot reach {self._where(call)}: {reason}"))
        said = call.explain(status, response.headers, raw)
        now = self._clock.now()
        retryable, asked = self._retry.after_error(status, response.headers, raw, said, now=now)
        if status == 429 and (pause := obeyed(asked)) is not None:  # holds every worker
            self._pauses.hold(call.provider, pause)
        return Failed(http_error(call.provider, status, said), retryable, asked)

    def _attempt(self, call: _Call, deadline: float) -> tuple[httpx.Response, bytes]:
        """Send once, after any pause the provider asked of every worker; the reply and its
        body, read up to its size cap and the deadline."""
        if not self._pauses.wait(call.provider, deadline=deadline):
            where = self._where(call)
            raise ApiError(f"{where} asked to slow down past the {self._timeout:g}s limit")
        client, url = self._shared_client(), httpx.URL(call.url)
        call.origin = (url.scheme, url.host, url.port)
        # httpx keeps a reply and its request in a cycle that only the cycle collector frees:
        # the request must not hold the log (a used-up generator holds nothing)
        body, sending = call.body, {}
        too_big = f"reply from {display_url(call.url)} is larger than {_MAX_REPLY_BYTES} bytes"
        if body is not None:  # a length, not chunks: some proxies refuse a chunked upload
            sending = {"content-type": "application/json", "content-length": str(body.length)}
        try:
            with client.stream(
                "GET" if body is None else "POST",
                url,
                content=None if body is None else iter(body),
                # a title of the user's ("Mön App") goes as UTF-8, as the Go axe sends it
                headers=httpx.Headers({**call.headers, **sending}, encoding="utf-8"),
                auth=call.auth,
                timeout=deadline - self._clock.monotonic(),
                extensions={"trace": functools.partial(self._trace, call.origin)},
            ) as response:
                call.sent += 1  # answered: billed, whatever becomes of the reply
                raw = bytearray()
                for chunk in response.iter_bytes():
                    raw += chunk
                    if len(raw) > _MAX_REPLY_BYTES:
                        raise ApiError(too_big)
                    if self._clock.monotonic() > deadline:
                        raise httpx.ReadTimeout("the deadline passed", request=response.request)
        except httpx.DecodingError:
            raise ApiError(f"reply from {display_url(call.url)} could not be decoded") from None
        except RuntimeError:  # httpx's word for a client the run closed meanwhile
            raise ApiError(RUN_IS_OVER) from None
        return response, bytes(raw)

    def _shared_client(self) -> httpx.Client:
        """Raises ConfigError for a proxy, NO_PROXY or CA setting httpx cannot use."""
        with self._lock:
            if self._closed:
                raise ApiError(RUN_IS_OVER)
            if self._client is None:
                self._proxies = environment_proxies()
                try:
                    self._client = httpx.Client(
                        headers={"user-agent": self._user_agent},
                        cookies=CookieJar(DefaultCookiePolicy(allowed_domains=[])),  # keeps none
                        event_hooks={"request": [self._unless_closed], "response": [_no_redirect]},
                    )
                except httpx.InvalidURL as error:
                    raise no_proxy_problem(error) from None
                except OSError as error:  # ssl.SSLError included
                    reason = re.sub(r"\s*\(_ssl\.c:\d+\)$", "", error.strerror or str(error))
                    path = os.environ.get("SSL_CERT_FILE")
                    where = f"in SSL_CERT_FILE ({path})" if path else "to verify TLS with"
                    raise ConfigError(
                        f"cannot load the CA certificates {where}: {reason}"
                    ) from None
            return self._client

    def _unless_closed(self, request: httpx.Request) -> None:
        """Nothing goes out once the run is over, however long signing took."""
        if self._closed:
            raise ApiError(RUN_IS_OVER)

    def _trace(self, origin: object, event: str, info: Mapping[str, Any]) -> None:
        """httpcore's ``trace``: where a new connection goes says if a proxy is in the way."""
        if event == "connection.connect_tcp.started":
            host, port = info["host"], info["port"]
            hop = (p for p in self._proxies if p.host == host and p.port in (port, None))
            self._hops[origin] = next(hop, None)

    def _where(self, call: _Call) -> str:
        proxy = self._hops.get(call.origin)
        through = f" through proxy {proxy.shown}" if proxy else ""
        return f"{call.provider} at {display_url(call.url)}{through}"


class _RedirectError(Exception):
    """A redirect (status, location), stopped before httpx reads a ``Location`` (it does
    even when not following) that may be no URL, so that gc can say what happened."""


def _no_redirect(response: httpx.Response) -> None:
    if 300 <= response.status_code < 400:
        location = display_url(response.headers.get("location", "")) or "nowhere"
        raise _RedirectError(response.status_code, location)
