"""The one HTTP :class:`LLMClient`: a catalogue row over the shared transport. The row says
where the provider is, how to authenticate, and what it tells for free (a model's window,
its count of a request); the model's route picks the wire format. A reply of the wrong
shape is an ``ApiError``, never a crash; an odd usage block only means the usage is unknown.
"""

from __future__ import annotations

import threading
from collections.abc import Generator
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

import httpx

from axe.adapters.llm.body import JsonBody
from axe.adapters.llm.catalogue import Auth, Provider
from axe.adapters.llm.redaction import SHORTEST_REAL_SECRET
from axe.adapters.llm.settings import ProviderSettings
from axe.adapters.llm.sigv4 import SigV4Auth
from axe.adapters.llm.transport import HttpTransport
from axe.adapters.llm.wire.base import (
    Explain,
    HttpStatusError,
    Lookup,
    Sent,
    ShapeError,
    one_line,
)
from axe.application.ports import AnalysisRequest
from axe.domain.errors import ApiError, ConfigError, NoTokenCountError, PromptTooLargeError
from axe.domain.results import Completion
from axe.domain.window import Window, WindowSource

_FITS_EVERY_MODEL = 2048  # tokens (so bytes, which are never fewer): fits any model's window


class HttpLLMClient:
    """Any row of the catalogue. Safe to share between threads: the window lookup asks each
    model once."""

    def __init__(
        self, transport: HttpTransport, provider: Provider, settings: ProviderSettings
    ) -> None:
        self._transport, self._provider, self._settings = transport, provider, settings
        self._base = base_url(provider, settings)
        aws = settings.aws.secrets if settings.aws else ()
        others = (key for key in settings.known_keys if len(key) >= SHORTEST_REAL_SECRET)
        self._secrets = tuple(secret for secret in (settings.api_key, *aws, *others) if secret)
        self._auth = authentication(provider, settings)
        # with no key (a run that sends nothing), nothing is asked: it would be refused
        self._can_ask = provider.auth is Auth.NONE or bool(settings.api_key or settings.aws)
        self._windows: dict[str, int | None] = {}
        self._asking: dict[str, threading.Lock] = {}  # per model: one question, one answer
        self._guard = threading.Lock()

    def input_limit(self, request: AnalysisRequest) -> Window | None:
        """The least of the cap, the model's window as the provider tells it, and the largest
        window any model of the provider accepts, with where it was learnt.

        Raises:
            ApiError: the provider could not be reached to ask for the model's window.
            ConfigError: the base URL, or a proxy or CA setting, cannot be used.
        """
        cap, largest = self._settings.max_input_tokens, self._provider.largest_window
        limits = [] if cap is None else [Window(cap, WindowSource.CAP)]
        if (told := self._told(request)) is not None:
            limits.append(told)
        if largest is not None:
            limits.append(Window(largest, WindowSource.PROVIDER))
        return min(limits, key=lambda window: window.tokens, default=None)

    def count_tokens(self, request: AnalysisRequest) -> int:
        """The provider's count of the request's input tokens, from its count endpoint,
        which bills nothing (so it is retried as any request may be).

        Raises:
            NoTokenCountError: no count endpoint, no key to ask with, or no count in answer.
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
        model, name = request.model.name, self._provider.name
        route = self._provider.route(model)
        sent = Sent(request, self._windows.get(model), model in self._settings.reasoning_models)
        document, requests_sent = self._exchange(
            route.path or route.wire.path,
            request,
            route.wire.body(sent),
            lambda status, headers, raw: route.wire.error(status, headers, raw, sent),
            retry_unanswered=request.retry_unanswered,
        )
        if (declined := route.wire.declined(document)) is not None:
            why = one_line(declined)[:300]  # a refusal in the model's words, kept to a line
            message = f"{name} declined to write the report ({why}); nothing was trimmed"
            raise ApiError(message, sent=requests_sent)
        try:
            text, usage = route.wire.reply(document, sent)
        except ShapeError as error:
            raise ApiError(
                f"{name} returned a reply that is not the expected JSON: {error}",
                sent=requests_sent,
            ) from None
        except PromptTooLargeError as error:
            error.sent = requests_sent
            raise
        if not text.strip() and route.wire.cut_short(document):
            raise ApiError(
                f"{name} returned no report: the model stopped at the "
                f"{request.max_tokens:,}-token output limit before writing any (a reasoning "
                "model can spend it all thinking); nothing was trimmed, try another model",
                sent=requests_sent,
            )
        return Completion(text, usage, sent=requests_sent)

    def _told(self, request: AnalysisRequest) -> Window | None:
        """The model's window as the provider tells it, less room for the reply where the
        window holds it; asked once per model per run, and only for a request that may not
        fit every model. An error status (a server or gateway without the lookup) or a
        reply without a window leaves it unknown, and the log is sent as without a lookup.

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
        body = None if lookup.body is None else lookup.body(request)
        return lookup.answer(self._exchange(lookup.path, request, body)[0], request.model.name)

    def _exchange(
        self,
        path: str,
        request: AnalysisRequest,
        body: JsonBody | None,
        explain: Explain | None = None,
        *,
        retry_unanswered: bool = True,
    ) -> tuple[Any, int]:
        """Send to ``path`` (``{model}`` the model's name); a rejected key's message says
        where the key came from."""
        model = request.model.name
        try:
            return self._transport.exchange(
                endpoint(self._base, path.format(model=quote(model, safe=""))),
                headers={**self._provider.route(model).wire.headers, **self._settings.headers},
                body=body,
                provider=self._provider.name,
                secrets=self._secrets,
                explain=explain,
                auth=self._auth,
                retry_unanswered=retry_unanswered,
            )
        except HttpStatusError as error:
            aws, key_source = self._settings.aws, self._settings.key_source
            source = f"credentials from {aws.source}" if aws else f"key from {key_source}"
            if error.rejected_key and (aws or key_source):
                error.args = (f"{error} ({source})",)
            raise


def base_url(provider: Provider, settings: ProviderSettings) -> str:
    """The configured base URL or the row's default (Bedrock's names the region), without a
    trailing slash; an OpenAI-style base that is only a server root gets ``/v1``."""
    base = settings.base_url or provider.base_url.format(region=settings.region)
    return endpoint(base, "", root="/v1" if provider.versioned_base else "")


def endpoint(base: str, path: str, *, root: str = "") -> str:
    """``path`` appended to the path of ``base``, before its query (a gateway's
    ``https://gw.example/v1?tenant=t``); ``root`` stands in for a base that names no path. A
    base that does not parse is joined as written, for the transport to refuse."""
    try:
        parts = urlsplit(base)
    except ValueError:
        return base.rstrip("/") + path
    return urlunsplit(parts._replace(path=(parts.path.rstrip("/") or root) + path))


class HeaderAuth(httpx.Auth):
    """The key in one header. The transport runs an ``Auth`` on every attempt, so a retry is
    authenticated (and, for SigV4, signed) afresh."""

    def __init__(self, header: str, value: str) -> None:
        self._header, self._value = header, value

    def __repr__(self) -> str:
        return f"HeaderAuth({self._header!r})"  # never the key

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers[self._header] = self._value
        yield request


def authentication(provider: Provider, settings: ProviderSettings) -> httpx.Auth | None:
    """The row's authentication with the settings' key or credentials; none for a row
    without (Ollama), or without credentials in a run that signs nothing."""
    if provider.auth is Auth.SIGV4:
        return SigV4Auth(settings.aws, settings.region) if settings.aws else None
    if provider.auth is Auth.BEARER:
        return HeaderAuth("authorization", f"Bearer {settings.api_key}")
    return None if provider.auth is Auth.NONE else HeaderAuth(provider.auth.value, settings.api_key)
