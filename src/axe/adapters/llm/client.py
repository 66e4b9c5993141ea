"""The one HTTP :class:`LLMClient`: a catalogue row and its wire formats over the shared
transport, authenticated as the row says.

The row says where the provider is, how to authenticate, and what the provider tells for
free (a model's window, its count of a request); the model's route picks the wire format,
which builds the request and reads the reply. A reply of the wrong shape is an
``ApiError``, never a crash; a missing or odd usage block only means the usage is unknown.
"""

from __future__ import annotations

import threading
from collections.abc import Generator
from urllib.parse import quote, urlsplit, urlunsplit

import httpx

from axe.adapters.llm.catalogue import Auth, Provider, Route
from axe.adapters.llm.settings import ProviderSettings
from axe.adapters.llm.sigv4 import SigV4Auth
from axe.adapters.llm.transport import HttpTransport, Reply
from axe.adapters.llm.wire.base import HttpStatusError, Lookup, Sent, ShapeError
from axe.application.ports import AnalysisRequest
from axe.domain.errors import ApiError, ConfigError, NoTokenCountError, PromptTooLargeError
from axe.domain.results import Completion
from axe.domain.window import Window, WindowSource

_FITS_EVERY_MODEL = 2048  # tokens (so bytes, which are never fewer): fits any model's window
# The most bytes one estimated token can come to in a request body: a control character
# counts one token and is escaped as six bytes (\\u0001); everything else is less.
_BYTES_PER_TOKEN_AT_MOST = 6
_ENVELOPE_BYTES = 64 * 1024  # the prompt, the JSON around the log, headroom


class HttpLLMClient:
    """Any provider of the catalogue (see the module docstring). Safe to share between
    threads: the window lookup asks each model once."""

    def __init__(
        self, transport: HttpTransport, provider: Provider, settings: ProviderSettings
    ) -> None:
        self._transport = transport
        self._provider = provider
        self._settings = settings
        self._base = base_url(provider, settings)
        self._secrets = _secrets(settings)
        self._auth = authentication(provider, settings)
        # with no key (a run that sends nothing), nothing is asked: it would be refused
        self._can_ask = provider.auth is Auth.NONE or bool(settings.api_key or settings.aws)
        self._windows: dict[str, int | None] = {}
        self._asking: dict[str, threading.Lock] = {}  # per model: one question, one answer
        self._guard = threading.Lock()

    def input_limit(self, request: AnalysisRequest) -> Window | None:
        """The least of: the cap, the model's window as the provider tells it, the largest
        window any model of the provider accepts, and the tokens its request-size limit
        surely allows, with where it was learnt. None when none of them is known.

        Raises:
            ApiError: the provider could not be reached to ask for the model's window.
            ConfigError: the base URL, or a proxy or CA setting, cannot be used.
        """
        row, cap = self._provider, self._settings.max_input_tokens
        limits = [] if cap is None else [Window(cap, WindowSource.CAP)]
        if (told := self._told(request)) is not None:
            limits.append(told)
        if row.largest_window is not None:
            limits.append(Window(row.largest_window, WindowSource.PROVIDER))
        if row.max_request_bytes is not None:
            room = (row.max_request_bytes - _ENVELOPE_BYTES) // _BYTES_PER_TOKEN_AT_MOST
            limits.append(Window(room, WindowSource.PROVIDER))
        return min(limits, key=lambda window: window.tokens, default=None)

    def count_tokens(self, request: AnalysisRequest) -> int:
        """The provider's count of ``request``'s input tokens, asked of its count endpoint,
        which bills nothing (so it is retried as any request may be, and never charged).

        Raises:
            NoTokenCountError: the row has no count endpoint, there is no key to ask with, or
                the endpoint did not answer with a count (an error status, a gateway or an
                old server without it, another shape, no answer).
        """
        lookup = self._provider.counting
        if lookup is None:
            raise NoTokenCountError("it has no count endpoint", offered=False)
        if not self._can_ask:
            raise NoTokenCountError("no key or credentials to ask with")
        try:
            counted = self._ask(lookup, request)
        except HttpStatusError as error:
            raise NoTokenCountError(f"its count endpoint answered HTTP {error.status}") from None
        except (ApiError, ConfigError) as error:
            raise NoTokenCountError(str(error)) from None
        if counted is None:
            raise NoTokenCountError("its count endpoint's reply held no count")
        return counted

    def complete(self, request: AnalysisRequest) -> Completion:
        route = self._provider.route(request.model.name)
        model = request.model.name
        sent = Sent(request, self._windows.get(model), model in self._settings.reasoning_models)
        reply = self._send(route, sent)
        try:
            text, usage = route.wire.reply(reply.document, sent)
        except ShapeError as error:
            raise ApiError(
                f"{self._provider.name} returned a reply that is not the expected JSON: {error}",
                sent=reply.sent,
            ) from None
        except PromptTooLargeError as error:
            error.sent = reply.sent
            raise
        if not text.strip() and route.wire.cut_short(reply.document):
            raise ApiError(
                f"{self._provider.name} returned no report: the model stopped at the "
                f"{request.max_tokens:,}-token output limit before writing any (a reasoning "
                "model can spend it all thinking); nothing was trimmed, try another model",
                sent=reply.sent,
            )
        return Completion(text, usage, sent=reply.sent)

    def _send(self, route: Route, sent: Sent) -> Reply:
        """POST the request; a rejected key's message says where the key came from."""
        model = sent.request.model.name
        try:
            return self._transport.exchange(
                endpoint(self._base, route.path or route.wire.path(model)),
                headers={**route.wire.headers, **self._settings.headers},
                body=route.wire.body(sent),
                provider=self._provider.name,
                secrets=self._secrets,
                explain=lambda status, headers, raw: route.wire.error(status, headers, raw, sent),
                auth=self._auth,
                retry_unanswered=sent.request.retry_unanswered,
            )
        except HttpStatusError as error:
            aws, key_source = self._settings.aws, self._settings.key_source
            source = f"credentials from {aws.source}" if aws else f"key from {key_source}"
            if error.rejected_key and (aws or key_source):
                error.args = (f"{error} ({source})",)
            raise

    def _told(self, request: AnalysisRequest) -> Window | None:
        """The model's window as the provider tells it, less room for the reply where the
        window holds it; asked once per model per run, and only for a request that may not
        fit every model. A lookup answered with an error status (a server or a gateway
        without it: 404, 405, 501) or a reply without a window leaves it unknown: the
        analysis then says any error in its own words, and the log is sent as it would be
        with no lookup.

        Raises:
            ApiError: no answer at all (the provider cannot be reached).
        """
        lookup, model = self._provider.window, request.model.name
        size = len(request.system_prompt.encode()) + len(request.content)
        if lookup is None or size < _FITS_EVERY_MODEL or not self._can_ask:
            return None
        with self._guard:
            asking = self._asking.setdefault(model, threading.Lock())
        with asking:  # workers measuring another model are not held up by this one
            if model not in self._windows:
                try:
                    self._windows[model] = self._ask(lookup, request)
                except HttpStatusError:
                    self._windows[model] = None
            window = self._windows[model]
        if window is None:
            return None
        room = min(request.max_tokens, window // 2) if lookup.holds_reply else 0
        return Window(window - room, WindowSource.MODEL)

    def _ask(self, lookup: Lookup, request: AnalysisRequest) -> int | None:
        """The number ``lookup`` asks the provider for, about ``request``."""
        model = request.model.name
        reply = self._transport.exchange(
            endpoint(self._base, lookup.path.format(model=quote(model, safe=""))),
            headers={**self._provider.route(model).wire.headers, **self._settings.headers},
            body=None if lookup.body is None else lookup.body(request),
            provider=self._provider.name,
            secrets=self._secrets,
            auth=self._auth,
        )
        return lookup.answer(reply.document, model)


def base_url(provider: Provider, settings: ProviderSettings) -> str:
    """The configured base URL or the row's default, without a trailing slash; an
    OpenAI-style base that is only a server root gets ``/v1``; Bedrock's default names
    the region."""
    base = settings.base_url or provider.base_url.format(region=settings.region)
    return endpoint(base, "", root="/v1" if provider.versioned_base else "")


def endpoint(base: str, path: str, *, root: str = "") -> str:
    """``path`` appended to the path of ``base``, before its query (a gateway's
    ``https://gw.example/v1?tenant=t``), its trailing slash dropped; ``root`` stands in for
    a base that names no path. A base that does not parse is joined as written, for the
    request to refuse as an invalid base URL."""
    try:
        parts = urlsplit(base)
    except ValueError:
        return base.rstrip("/") + path
    return urlunsplit(parts._replace(path=(parts.path.rstrip("/") or root) + path))


class HeaderAuth(httpx.Auth):
    """The key in one header: ``x-api-key``, ``Authorization: Bearer`` or ``x-goog-api-key``.
    The transport runs an ``Auth`` on every attempt, so a retry is authenticated (and, for
    SigV4, signed) afresh."""

    def __init__(self, header: str, value: str) -> None:
        self._header = header
        self._value = value

    def __repr__(self) -> str:
        return f"HeaderAuth({self._header!r})"  # never the key

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers[self._header] = self._value
        yield request


def authentication(provider: Provider, settings: ProviderSettings) -> httpx.Auth | None:
    """The row's kind of authentication, holding the settings' key or credentials; none
    for a row without (Ollama), or without credentials in a run that signs nothing."""
    if provider.auth is Auth.NONE:
        return None
    if provider.auth is Auth.SIGV4:
        return SigV4Auth(settings.aws, settings.region) if settings.aws else None
    header, value = {
        Auth.X_API_KEY: ("x-api-key", settings.api_key),
        Auth.BEARER: ("authorization", f"Bearer {settings.api_key}"),
        Auth.GOOG_API_KEY: ("x-goog-api-key", settings.api_key),
    }[provider.auth]
    return HeaderAuth(header, value)


def _secrets(settings: ProviderSettings) -> tuple[str, ...]:
    aws = settings.aws.secrets if settings.aws else ()
    return tuple(secret for secret in (settings.api_key, *aws) if secret)
