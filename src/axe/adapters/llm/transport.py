"""One POST of a JSON body to a provider, with every failure turned into an ApiError.

All providers share one routing transport (``pools.py``; so ``--all`` reuses connections),
created on the first request. Requests go through the proxies the environment names, as
httpx's defaults read them (``proxies.py``). One deadline (120 s by default) bounds the
whole exchange including retries; redirects are never followed (a redirect could carry the
key elsewhere); replies are size-capped; and no message that leaves here can contain the
API key, a proxy's password or a base URL's.

Requests go to the routing transport without ``httpx.Client``, whose redirects, cookie jar
and event hooks gc has no use for, and which are work on every request (docs/benchmarks.md,
round nine). Without its jar, no cookie a provider sets goes back with a later request, as
the Go axe's ``http.Client`` (which has none) sends none: under ``--all``, a cookie set for
one agent's key is never sent with another's.
"""

from __future__ import annotations

import functools
import json
import re
import socket
import ssl
import threading
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

import httpx
from attrs import define, frozen

from axe.adapters.llm.body import JsonBody
from axe.adapters.llm.pauses import SharedPauses
from axe.adapters.llm.pools import RUN_IS_OVER, RoutingTransport
from axe.adapters.llm.proxies import EnvironmentProxy, ProxyRoutes, password_forms
from axe.adapters.llm.retry import MAX_SERVER_DELAY, RetryPolicy, obeyed, requested_delay
from axe.adapters.llm.wire.base import WireError, one_line, plain, snippet
from axe.application.ports import Clock
from axe.domain.errors import ApiError, ConfigError, ModelNotFoundError, PromptTooLargeError

Explain = Callable[[int, Mapping[str, str], bytes], WireError]

DEFAULT_TIMEOUT_SECONDS = 120.0
_MAX_REPLY_BYTES = 32 * 1024 * 1024
_RATE_LIMITED = 429
_REJECTED_KEY = frozenset({401, 403})
# OpenSSL's "unable to get issuer certificate" (2), "self-signed certificate" (18),
# "self-signed certificate in certificate chain" (19), "unable to get local issuer
# certificate" (20) and "unable to verify the first certificate" (21).
_UNKNOWN_ISSUER = frozenset({2, 18, 19, 20, 21})
# What httpx.Client sends by default (without brotli or zstandard installed), kept so that
# providers and proxies see the requests they always saw: any reply type, compressed
# replies welcome (httpx decodes both), and the connection kept for the next agent.
_DEFAULT_HEADERS = {"accept": "*/*", "accept-encoding": "gzip, deflate", "connection": "keep-alive"}
# httpx's words for a URL it cannot send to, scheme or host missing, as gc always said them
_NOT_ABSOLUTE = "Request URL is missing an 'http://' or 'https://' protocol."


class HttpStatusError(ApiError):
    """The server answered, with an HTTP error status: a caller may decide by ``status``
    (an Ollama-compatible server without ``/api/show`` answers 404 or 405), and say where
    the key came from when ``rejected_key`` (a 401 or 403, or a body that says so)."""

    def __init__(self, message: str, *, status: int, rejected_key: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.rejected_key = rejected_key


class _NotFoundError(HttpStatusError, ModelNotFoundError):
    """A 404: to a provider's chat endpoint, the model (or the endpoint) does not exist."""


class HttpTransport:
    """Posts JSON to providers over a lazily created, shared routing transport.

    Safe to share between threads: the routing transport and the proxy routes are built
    once, under a lock, however many workers send their first request at the same moment.
    Deadlines, retry pauses and a rate limit's shared pause all go by the run's one
    ``clock``.
    """

    def __init__(
        self,
        *,
        clock: Clock,
        timeout: float | None = None,
        retry: RetryPolicy | None = None,
        user_agent: str = "axe",
    ) -> None:
        self._timeout = timeout or DEFAULT_TIMEOUT_SECONDS
        self._retry = retry or RetryPolicy()
        self._clock = clock
        self._user_agent = user_agent
        self._routing: RoutingTransport | None = None
        self._pauses = SharedPauses(clock)
        self._closed = False
        self._proxies: ProxyRoutes | None = None
        self._building = threading.RLock()

    def close(self) -> None:
        """Close the routing transport: no request is started or retried after this. One
        already waiting for a reply on another thread is not cut short by it (httpx does
        not interrupt a blocked read); an interrupted run ends without waiting for those
        (``cli/running.py``)."""
        with self._building:
            self._closed = True
            if self._routing is not None:
                self._routing.close()
                self._routing = None

    def exchange(
        self,
        url: str,
        *,
        headers: Mapping[str, str],
        body: JsonBody,
        provider: str,
        secrets: tuple[str, ...] = (),
        explain: Explain | None = None,
        auth: httpx.Auth | None = None,
        retry_unanswered: bool = True,
    ) -> Reply:
        """POST ``body`` to ``url``: the decoded JSON reply and how many requests it took.

        ``explain`` is the wire format's reading of an error reply (its kind, message,
        "too long" refusal, whether it is transient); ``auth``, a one-step ``httpx.Auth``
        (its first request is sent), authenticates every attempt afresh (a retry is signed
        again); without one, a user and password in ``url`` are sent as Basic auth, as
        httpx's client and Go's send them; ``secrets`` never appear in a message; without
        ``retry_unanswered``, an attempt that went out and got no answer, which may have
        been billed, is not tried again.

        Raises:
            ApiError: any failure, with ``sent``; ``PromptTooLargeError`` when the prompt
                does not fit; ``HttpStatusError`` for any other HTTP error status.
            ConfigError: the base URL is not a usable http(s) URL.
        """
        call = _Call(url, provider, "", None, explain or _unexplained, auth, retry_unanswered)
        try:
            return self._post_with_retries(call, headers, body)
        except (ApiError, ConfigError) as error:
            text = str(error)
            parsed = _parsed(url)
            in_url = password_forms(parsed) if parsed else ()
            for secret in (*secrets, *in_url, *(self._proxies.secrets if self._proxies else ())):
                # as written, as a library's repr() shows it ('sk-…\\r'), and URL-encoded as
                # a server may echo it (an AWS secret's '/' and '+' as %2F and %2B)
                for form in {secret, repr(secret)[1:-1], quote(secret, safe=""), quote(secret)}:
                    text = redact(text, form)
            error.args = (text,)  # the same error, numbers and kind kept, scrubbed of secrets
            if isinstance(error, ApiError):
                error.sent = call.sent
            raise

    def _post_with_retries(self, call: _Call, headers: Mapping[str, str], body: JsonBody) -> Reply:
        deadline = self._clock.monotonic() + self._timeout
        call.proxy = self._proxy_routes().proxy_for(_parsed(call.url) or call.url)
        call.where = _where(call.provider, call.url, call.proxy)
        retry = 0
        while True:  # a retry starts only while time remains (checked before sleeping)
            if not self._pauses.wait(call.paused_as, deadline=deadline):
                raise ApiError(f"{call.where} asked to slow down past the {self._timeout:g}s limit")
            outcome = self._try_once(call, headers, body, deadline)
            if not isinstance(outcome, _Failed):
                return Reply(outcome, call.sent)
            if not outcome.retryable or retry >= self._retry.max_retries or self._closed:
                raise _given_up(outcome, retry)
            pause = self._retry.delay(retry, outcome.asked)
            if self._clock.monotonic() + pause >= deadline:
                raise _given_up(outcome, retry)
            self._clock.sleep(pause)
            retry += 1

    def _try_once(
        self, call: _Call, headers: Mapping[str, str], body: JsonBody, deadline: float
    ) -> Any:
        """One attempt: the decoded reply, or a :class:`_Failed` saying whether to retry."""
        remaining = deadline - self._clock.monotonic()
        counted = call.sent
        try:
            status, reply_headers, raw = self._attempt(call, headers, body, remaining, deadline)
        except (httpx.InvalidURL, httpx.UnsupportedProtocol) as error:
            raise ConfigError(
                f"invalid base URL for {call.provider} ({display_url(call.url)}): "
                f"{one_line(str(error))}"
            ) from None
        except httpx.LocalProtocolError:  # h11 refused to write it: nothing left this host
            raise ApiError(
                f"request to {call.where} not sent: a header is not valid HTTP (a control "
                "character or non-ASCII text in a key or a configured header)"
            ) from None
        except _DeadlineError as error:
            call.sent += error.sent
            failure = ApiError(f"request to {call.where} timed out after {self._timeout:g}s")
            return _Failed(failure, call.may_retry_unanswered(error.sent))
        except httpx.TransportError as error:
            # a connection never made sent nothing; one that broke before an answer may have
            # (one that broke during the answer was counted when the answer began)
            if call.sent == counted:
                call.sent += not isinstance(error, httpx.ConnectError | httpx.ProxyError)
            reason = _transport_reason(error, call.proxy)
            retryable = _may_pass_on_retry(error) and call.may_retry_unanswered(call.sent > counted)
            return _Failed(ApiError(f"cannot reach {call.where}: {reason}"), retryable)
        if 200 <= status < 300:
            return _decode_reply(raw, call.provider)
        return self._refused(call, status, reply_headers, raw)

    def _refused(self, call: _Call, status: int, headers: Mapping[str, str], raw: bytes) -> _Failed:
        """An error reply as a failure: retried when the wire format or the status says it
        may pass, never when it is a "too long" refusal or the server asked for a wait
        longer than gc waits. The wait asked for is the headers' (``retry-after``), else the
        body's as the wire format reads it (Gemini's ``RetryInfo``); a 429's holds every
        worker of the provider."""
        failure, said = _http_failure(status, headers, raw, call)
        asked = requested_delay(headers, now=self._clock.now())
        asked = said.retry_delay if asked is None else asked
        if status == _RATE_LIMITED and (pause := obeyed(asked)) is not None:
            self._pauses.hold(call.paused_as, pause)
        retryable = said.transient
        if retryable is None or "x-should-retry" in headers:
            retryable = self._retry.should_retry(status, headers, raw.decode("utf-8", "replace"))
        longer_than_waited = asked is not None and obeyed(asked) is None  # given up at once
        retryable = retryable and not longer_than_waited and said.refusal is None
        return _Failed(failure, status >= 400 and retryable, asked)

    def _attempt(
        self,
        call: _Call,
        headers: Mapping[str, str],
        body: JsonBody,
        remaining: float,
        deadline: float,
    ) -> tuple[int, dict[str, str], bytes]:
        routing = self._shared_routing()
        url = call.url
        request = self._request(call, headers, body, remaining)
        try:
            response = routing.handle_request(request)
        except httpx.TimeoutException as error:
            raise _DeadlineError(sent=not isinstance(error, httpx.ConnectTimeout)) from error
        call.sent += 1  # answered: billed, whatever becomes of the reply
        try:
            chunks: list[bytes] = []
            size = 0
            for chunk in response.iter_bytes():
                size += len(chunk)
                if size > _MAX_REPLY_BYTES:
                    raise ApiError(
                        f"reply from {display_url(url)} is larger than {_MAX_REPLY_BYTES} bytes"
                    )
                chunks.append(chunk)
                if self._clock.monotonic() > deadline:
                    raise _DeadlineError(sent=False)  # counted above
            raw = b"".join(chunks)
        except httpx.TimeoutException as error:
            raise _DeadlineError(sent=False) from error  # counted above
        except httpx.DecodingError:
            raise ApiError(f"reply from {display_url(url)} could not be decoded") from None
        finally:
            response.close()
        return response.status_code, {k.lower(): v for k, v in response.headers.items()}, raw

    def _request(
        self, call: _Call, headers: Mapping[str, str], body: JsonBody, remaining: float
    ) -> httpx.Request:
        """The attempt's request, authenticated.

        Raises:
            httpx.InvalidURL, httpx.UnsupportedProtocol: the URL is no absolute http(s) URL.
        """
        target = _parsed(call.url) or call.url  # a string that does not parse: InvalidURL
        if isinstance(target, httpx.URL) and not target.is_absolute_url:  # `localhost:1`, `http://`
            raise httpx.UnsupportedProtocol(_NOT_ABSOLUTE)
        sent = httpx.Headers(_DEFAULT_HEADERS)
        sent.update(headers)  # as the client merged them: a row's `Accept` replaces the default
        sent.update(
            {
                "content-type": "application/json",
                "content-length": str(body.length),
                "user-agent": self._user_agent,
            }
        )
        request = httpx.Request(
            "POST",
            target,
            content=iter(body),
            headers=sent,
            extensions={"timeout": httpx.Timeout(remaining).as_dict()},
        )
        if auth := call.auth or _url_credentials(request.url):
            request = next(auth.sync_auth_flow(request))
        return request

    def _shared_routing(self) -> RoutingTransport:
        with self._building:
            if self._closed:
                raise ApiError(RUN_IS_OVER)
            if self._routing is None:
                self._routing = RoutingTransport(self._proxy_routes())
            return self._routing

    def _proxy_routes(self) -> ProxyRoutes:
        """The environment's proxies, read once, on the first request, as httpx would.

        Raises:
            ConfigError: a proxy variable that names no usable proxy.
        """
        with self._building:
            if self._proxies is None:
                self._proxies = ProxyRoutes.from_environment()
            return self._proxies


@define(repr=False, eq=False)  # one exchange's working state, used by identity
class _Call:
    """What one ``exchange`` is about, for its messages and its shared pause, and how many
    requests it has sent so far."""

    url: str
    provider: str
    where: str
    proxy: EnvironmentProxy | None
    explain: Explain
    auth: httpx.Auth | None
    retry_unanswered: bool = True
    sent: int = 0

    def may_retry_unanswered(self, sent: bool) -> bool:
        """Whether an attempt that got no answer may be tried again: always when it never
        went out; when it did (it may have been billed), only if ``retry_unanswered``."""
        return self.retry_unanswered or not sent

    @property
    def paused_as(self) -> str:
        try:
            host = urlsplit(self.url).netloc
        except ValueError:  # no URL at all ("http://[::1"): sending it says so, exit 2
            host = self.url
        return f"{self.provider} {host}"


@frozen
class Reply:
    """A provider's decoded JSON reply and the requests it took (retries included)."""

    document: Any
    sent: int


@frozen
class _Failed:
    """An attempt that failed: the error to raise, whether another try may pass, and the
    wait the provider asked for (however long), if it named one."""

    error: ApiError
    retryable: bool = True
    asked: float | None = None


def _given_up(failed: _Failed, retries: int) -> ApiError:
    """The error given up on, saying how many retries were made and how long the server
    asked to be left alone when that is why more tries were pointless (a rate limit's
    ``retry-after: 3600``)."""
    notes = []
    if retries:
        notes.append(f"after {retries} {'retry' if retries == 1 else 'retries'}")
    asked = failed.asked
    if asked is not None and asked >= 1:
        notes.append(f"the provider asked to wait {asked:.0f}s before trying again")
        if asked > MAX_SERVER_DELAY:
            notes.append(f"gc waits at most {MAX_SERVER_DELAY:.0f}s")
    if notes:
        failed.error.args = (f"{failed.error} ({'; '.join(notes)})",)
    return failed.error


class _DeadlineError(Exception):
    """The deadline passed or a read timed out; retried like a transport timeout.
    ``sent``: whether the request had gone out (not so for a connection timeout)."""

    def __init__(self, *, sent: bool = True) -> None:
        super().__init__()
        self.sent = sent


def _url_credentials(url: httpx.URL) -> httpx.BasicAuth | None:
    """Basic auth from the URL's user and password (an Ollama behind a proxy that asks
    for them), if it has any."""
    if url.username or url.password:
        return httpx.BasicAuth(url.username, url.password)
    return None


@functools.lru_cache(maxsize=64)
def _parsed(url: str) -> httpx.URL | None:
    """``url`` parsed once for all the requests to it (httpx parses a string anew on each
    use, at about a tenth of a request's own time); None when it does not parse."""
    try:
        return httpx.URL(url)
    except httpx.InvalidURL:
        return None


def _where(provider: str, url: str, proxy: EnvironmentProxy | None) -> str:
    """The provider and URL a message is about, and the proxy when the request goes through one."""
    return f"{provider} at {display_url(url)}" + (f" through proxy {proxy.shown}" if proxy else "")


def _transport_reason(error: Exception, proxy: EnvironmentProxy | None = None) -> str:
    """Why a request failed, naming the hop that failed when a proxy is in the way.

    Through a proxy every TCP connection goes to the proxy, so a refused or unresolvable
    connection is the proxy's; a status line is the proxy's answer (to CONNECT, or a 407).
    """
    cause = _root_cause(error)
    if isinstance(cause, ssl.SSLCertVerificationError):
        return _certificate_reason(cause)
    text = str(error) or type(error).__name__
    if proxy is not None and isinstance(error, httpx.ProxyError):
        return f"the proxy answered {one_line(text)}"
    reason = "connection refused" if "refused" in text.lower() else one_line(text)
    if proxy is not None and isinstance(cause, ConnectionRefusedError | socket.gaierror):
        return f"no connection to the proxy ({reason})"
    return reason


def _may_pass_on_retry(error: Exception) -> bool:
    """A dropped connection or a timeout may pass; a certificate that does not verify, or a
    proxy that refused us (403, 407), will be the same a second later."""
    if isinstance(_root_cause(error), ssl.SSLCertVerificationError):
        return False
    return not isinstance(error, httpx.ProxyError)


def _root_cause(error: BaseException) -> BaseException:
    """The OS or TLS error under httpx's wrapper and httpcore's (both raise ``from`` it, so
    it is a cause; a context is followed too)."""
    while (inner := error.__cause__ or error.__context__) is not None:
        error = inner
    return error


def _certificate_reason(error: ssl.SSLCertVerificationError) -> str:
    """OpenSSL's reason without the build-specific ``(_ssl.c:NNNN)``, and what to do about it.

    An unknown issuer is what a TLS-inspecting proxy (or a private CA) looks like when its
    root certificate is not among the trusted ones.
    """
    reason = f"certificate verify failed: {error.verify_message}"
    if error.verify_code in _UNKNOWN_ISSUER:
        reason += (
            "; if a proxy inspects TLS, set SSL_CERT_FILE to a bundle with its root certificate"
        )
    return reason


def _decode_reply(raw: bytes, provider: str) -> Any:
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        raise ApiError(f"{provider} returned a reply that is not JSON: {snippet(raw)}") from None


def _http_failure(
    status: int, headers: Mapping[str, str], raw: bytes, call: _Call
) -> tuple[ApiError, WireError]:
    """The error for an HTTP error reply, in the wire format's reading of it."""
    if 300 <= status < 400:
        location = display_url(headers.get("location", "")) or "nowhere"
        message = (
            f"{call.provider} answered HTTP {status} (redirect to {location}); redirects are "
            "not followed, check the base URL"
        )
        return ApiError(message), WireError(message, transient=False)
    said = call.explain(status, headers, raw)
    named = said.kind and said.kind != str(status)  # OpenRouter's code is the status again
    label = f"HTTP {status}" + (f" {said.kind}" if named else "")
    text = f"{call.provider} API error ({label}): {said.message}"
    if said.refusal is not None:
        refusal = said.refusal
        return PromptTooLargeError(text, tokens=refusal.tokens, limit=refusal.limit), said
    rejected_key = status in _REJECTED_KEY or said.rejected_key
    error = (_NotFoundError if status == 404 else HttpStatusError)(
        text, status=status, rejected_key=rejected_key
    )
    return error, said


def _unexplained(status: int, headers: Mapping[str, str], raw: bytes) -> WireError:
    """An error reply read without a wire format (a small request such as a probe)."""
    return WireError(plain(raw))


def display_url(url: str) -> str:
    """``url`` without user name, password, query or fragment, fit to print; the host and
    port as written (an IPv6 address keeps its brackets, a malformed port is shown, not
    parsed)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "an invalid URL"
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


_TOKEN_CHARACTER = re.compile(r"[\w-]")
_SHORTEST_REAL_SECRET = 8  # characters; shorter ones are placeholders such as "e" or "none"


def redact(text: str, secret: str) -> str:
    """``text`` with ``secret`` replaced wherever it appears.

    Keys never reach output, however a server echoes them, glued to other words included
    (``key_sk-…``, ``Bearersk-…``). Only a secret too short to be a real key (a placeholder
    such as ``e``, common with local servers) is replaced where it stands as a token of its
    own, so it does not turn "answered" into "answ[redacted]r[redacted]d": where it begins
    or ends with a letter, digit, ``_`` or ``-``, the character beyond must not be one.
    """
    if not secret:
        return text
    if len(secret) >= _SHORTEST_REAL_SECRET:
        return text.replace(secret, "[redacted]")
    before = r"(?<![\w-])" if _TOKEN_CHARACTER.match(secret[0]) else ""
    after = r"(?![\w-])" if _TOKEN_CHARACTER.match(secret[-1]) else ""
    return re.sub(before + re.escape(secret) + after, "[redacted]", text)
