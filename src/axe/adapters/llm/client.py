"""The one HTTP :class:`LLMClient`: a catalogue row and its wire formats over the shared
transport.

The row says where the provider is and how to authenticate; the model's route picks the
wire format, which builds the request and reads the reply. A reply of the wrong shape is an
``ApiError``, never a crash; a missing or odd usage block only means the usage is unknown.
"""

from __future__ import annotations

import re
import threading
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from axe.adapters.llm.catalogue import Auth, Provider, Route
from axe.adapters.llm.settings import ProviderSettings
from axe.adapters.llm.transport import HttpStatusError, HttpTransport, Reply
from axe.adapters.llm.wire.base import Sent, ShapeError
from axe.application.ports import AnalysisRequest
from axe.domain.errors import ApiError, ConfigError, PromptTooLargeError
from axe.domain.model import quoted
from axe.domain.results import Completion
from axe.domain.tokens import certainly_under

if TYPE_CHECKING:
    import httpx

_FITS_EVERY_MODEL = 2048  # tokens: a prompt estimated below this fits any model's window
_NO_SUCH_ENDPOINT = frozenset({404, 405, 501})  # answers of a server without /api/show
_REJECTED_KEY = frozenset({401, 403})
# The most bytes one estimated token can come to in a request body: a control character
# counts one token and is escaped as six bytes (\\u0001); everything else is less.
_BYTES_PER_TOKEN_AT_MOST = 6
_ENVELOPE_BYTES = 64 * 1024  # the prompt, the JSON around the log, headroom
# What an HTTP header value can carry: visible ASCII, spaces only inside.
_SENDABLE = re.compile(r"[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?")


def unsendable(provider: Provider, settings: ProviderSettings) -> ConfigError | None:
    """A key, credential or configured header value that no HTTP request can carry (a
    newline left by a CRLF ``.env`` file, a non-ASCII title), named by where it came from:
    sent anyway, the HTTP library's error would quote it, secret and all."""
    values = [(f"the API key from {settings.key_source}", settings.api_key)]
    name = provider.name
    values += [
        (
            f"the {header} header (from AXE_{name.upper()}_{setting.upper()} or "
            f"[providers.{name}] {setting})",
            settings.headers.get(header, ""),
        )
        for header, setting in provider.optional_headers
    ]
    if settings.aws is not None:
        aws = settings.aws
        values += [
            (f"the AWS credentials from {aws.source}", value)
            for value in (aws.access_key_id, aws.secret_access_key, aws.session_token)
        ]
    for what, value in values:
        if value and not _SENDABLE.fullmatch(value):
            return ConfigError(
                f"{what} for provider {quoted(name)} holds a character an HTTP header "
                "cannot carry (a control character such as a stray newline, a space at either "
                "end, or non-ASCII text); fix it there"
            )
    return None


def missing_key(provider: str, settings: ProviderSettings) -> ApiError:
    """The error the spec asks for, before any request, when a key is needed and missing."""
    return ApiError(
        f"API key for provider {quoted(provider)} is not configured "
        f"(set {settings.key_variable} or add it to {settings.config_path})"
    )


class HttpLLMClient:
    """Any provider of the catalogue (see the module docstring). Safe to share between
    threads: the window lookup asks each model once."""

    def __init__(
        self, transport: HttpTransport, provider: Provider, settings: ProviderSettings
    ) -> None:
        if provider.auth.needs_key and not settings.api_key:
            raise missing_key(provider.name, settings)
        if (refused := unsendable(provider, settings)) is not None:
            raise refused
        self._transport = transport
        self._provider = provider
        self._settings = settings
        self._base = base_url(provider, settings)
        self._secrets = _secrets(settings)
        self._auth: httpx.Auth | None = None
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
        small = len(system) + len(request.content) < 4 * _FITS_EVERY_MODEL  # no copy of a big log
        if wire.window_path is not None and not (
            small and certainly_under(system + request.content, _FITS_EVERY_MODEL)
        ):
            window = self._window(request.model.name)
            if window is not None:
                limits.append(window - min(request.max_tokens, window // 2))
        known = [limit for limit in limits if limit is not None]
        return min(known) if known else None

    def complete(self, request: AnalysisRequest) -> Completion:
        route = self._provider.route(request.model.name)
        sent = Sent(request, self._windows.get(request.model.name))
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
                self._base + (route.path or route.wire.path(model)),
                headers={**route.wire.headers, **self._settings.headers},
                body=route.wire.body(sent),
                provider=self._provider.name,
                secrets=self._secrets,
                explain=lambda status, headers, raw: route.wire.error(status, headers, raw, sent),
                auth=self._authentication(),
            )
        except HttpStatusError as error:
            source = self._key_source()
            if error.status in _REJECTED_KEY and source:
                error.args = (f"{error} ({source})",)
            raise

    def _key_source(self) -> str:
        if self._settings.aws is not None and self._settings.aws.source:
            return f"credentials from {self._settings.aws.source}"
        return f"key from {self._settings.key_source}" if self._settings.key_source else ""

    def _authentication(self) -> httpx.Auth | None:
        """The row's authentication, built on the first request (it imports httpx)."""
        if self._auth is None and self._provider.auth is not Auth.NONE:
            from axe.adapters.llm.auth import authentication  # noqa: PLC0415

            self._auth = authentication(self._provider, self._settings)
        return self._auth

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
                from axe.adapters.llm.body import JsonBody  # noqa: PLC0415

                try:
                    reply: Any = self._transport.exchange(
                        self._base + route.wire.window_path,
                        headers={**self._settings.headers},
                        body=JsonBody({"model": model}),
                        provider=self._provider.name,
                        secrets=self._secrets,
                        auth=self._authentication(),
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
    base = (settings.base_url or provider.base_url.format(region=settings.region)).rstrip("/")
    if provider.versioned_base and urlsplit(base).path in ("", "/"):
        base += "/v1"
    return base


def _secrets(settings: ProviderSettings) -> tuple[str, ...]:
    aws = settings.aws.secrets if settings.aws else ()
    return tuple(secret for secret in (settings.api_key, *aws) if secret)
