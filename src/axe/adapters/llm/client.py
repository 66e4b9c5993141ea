"""The one HTTP :class:`LLMClient`: a catalogue row and its wire formats over the shared
transport, authenticated as the row says.

The row says where the provider is and how to authenticate; the model's route picks the
wire format, which builds the request and reads the reply. A reply of the wrong shape is an
``ApiError``, never a crash; a missing or odd usage block only means the usage is unknown.
"""

from __future__ import annotations

import threading
from collections.abc import Generator
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from axe.adapters.llm.body import JsonBody
from axe.adapters.llm.catalogue import Auth, Provider, Route
from axe.adapters.llm.settings import ProviderSettings
from axe.adapters.llm.sigv4 import SigV4Auth
from axe.adapters.llm.transport import HttpTransport, Reply
from axe.adapters.llm.wire.base import HttpStatusError, Sent, ShapeError
from axe.application.ports import AnalysisRequest
from axe.domain.errors import ApiError, PromptTooLargeError
from axe.domain.results import Completion

_FITS_EVERY_MODEL = 2048  # tokens (so bytes, which are never fewer): fits any model's window
_NO_SUCH_ENDPOINT = frozenset({404, 405, 501})  # answers of a server without /api/show
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
        self._windows: dict[str, int | None] = {}
        self._asking: dict[str, threading.Lock] = {}  # per model: one question, one answer
        self._guard = threading.Lock()

    def input_limit(self, request: AnalysisRequest) -> int | None:
        """The least of: the cap, the window the server reports (Ollama), the largest
        window any model of the provider accepts, and the tokens its request-size limit
        surely allows. None when none of them is known."""
        limits = [self._settings.max_input_tokens, self._provider.largest_window]
        if self._provider.max_request_bytes is not None:
            room = self._provider.max_request_bytes - _ENVELOPE_BYTES
            limits.append(room // _BYTES_PER_TOKEN_AT_MOST)
        wire = self._provider.route(request.model.name).wire
        system = request.system_prompt.encode()
        small = len(system) + len(request.content) < _FITS_EVERY_MODEL
        if wire.window_path is not None and not small:
            window = self._window(request.model.name)
            if window is not None:
                limits.append(window - min(request.max_tokens, window // 2))
        known = [limit for limit in limits if limit is not None]
        return min(known) if known else None

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

    def _window(self, model: str) -> int | None:
        """The model's context length from the format's window path, asked once per model
        per run. A server without it (an Ollama-compatible one) leaves the window unknown,
        as it was before gc asked: the log is then sent as it always was."""
        route = self._provider.route(model)
        assert route.wire.window_path is not None
        with self._guard:
            asking = self._asking.setdefault(model, threading.Lock())
        with asking:  # workers measuring another model are not held up by this one
            if model not in self._windows:
                try:
                    reply: Any = self._transport.exchange(
                        endpoint(self._base, route.wire.window_path),
                        headers={**self._settings.headers},
                        body=JsonBody({"model": model}),
                        provider=self._provider.name,
                        secrets=self._secrets,
                        auth=self._auth,
                    ).document
                except HttpStatusError as error:
                    if error.status not in _NO_SUCH_ENDPOINT:
                        raise
                    reply = None
                self._windows[model] = route.wire.window(reply)
            return self._windows[model]


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
