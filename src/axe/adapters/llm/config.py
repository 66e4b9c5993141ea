"""What ``config.toml`` and the environment say about each provider (axe-formats.md): the
:class:`ProviderSettings` its client is built with, and the sentences for a setting that is
broken or missing before any request is made.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import attrs
from attrs import Factory, define, field, frozen

from axe.adapters.shared.toml_values import load_toml, string_at, structure
from axe.domain.errors import ApiError, ConfigError
from axe.domain.model import quoted

if TYPE_CHECKING:
    from axe.adapters.llm.aws_credentials import AwsCredentials
    from axe.adapters.llm.catalogue import Provider

# What an HTTP header value can carry: visible ASCII, spaces only inside.
_SENDABLE = re.compile(r"[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?")


@frozen(kw_only=True)
class ProviderSettings:
    """How to reach one provider; ``repr`` leaves out every secret.

    ``key_variable`` names the environment variable the key may come from and
    ``config_path`` the ``config.toml`` it may be written in, for the message that says
    where to put a missing key; ``key_source`` is where the key in use came from (the
    variable or the file), for the message about a rejected one. ``max_input_tokens``
    caps every request (``--max-input-tokens``). ``headers`` are extra headers the user
    configured (OpenRouter's attribution); ``region`` and ``aws`` are Bedrock's.
    """

    api_key: str = field(default="", repr=False)
    base_url: str = ""
    key_variable: str = ""
    key_source: str = ""
    config_path: str = "config.toml"
    max_input_tokens: int | None = None
    headers: Mapping[str, str] = field(factory=dict)
    region: str = ""
    aws: AwsCredentials | None = None


@define
class _ProviderTable:
    """The two keys every provider has, checked as soon as the file is read; a row's other
    settings (Bedrock's ``region``, OpenRouter's ``title``) are read by name."""

    api_key: str = ""
    base_url: str = ""


@define
class _GlobalFile:
    providers: dict[str, _ProviderTable] = Factory(dict)


def key_variable(provider: str) -> str:
    """The variable that holds ``provider``'s key unless its row names another:
    ``<PROVIDER>_API_KEY`` upper-cased."""
    return f"{provider.upper()}_API_KEY"


def sendable(row: Provider, settings: ProviderSettings) -> ProviderSettings:
    """``settings``, once sure that a request to ``row`` can carry them: both checked
    before any request, so a run that cannot send says why without sending.

    Raises:
        ApiError: a key is needed and missing (exit 3, the spec's line).
        ConfigError: a key, credential or configured header value that no HTTP request can
            carry (a newline left by a CRLF ``.env`` file, a non-ASCII title), named by
            where it came from: sent anyway, the HTTP library's error would quote it,
            secret and all.
    """
    name = row.name
    if row.auth.needs_key and not settings.api_key:
        raise ApiError(
            f"API key for provider {quoted(name)} is not configured "
            f"(set {settings.key_variable} or add it to {settings.config_path})"
        )
    values = [(f"the API key from {settings.key_source}", settings.api_key)]
    values += [
        (
            f"the {header} header (from AXE_{name.upper()}_{setting.upper()} or "
            f"[providers.{name}] {setting})",
            settings.headers.get(header, ""),
        )
        for header, setting in row.optional_headers
    ]
    if (aws := settings.aws) is not None:
        values += [
            (f"the AWS credentials from {aws.source}", value)
            for value in (aws.access_key_id, aws.secret_access_key, aws.session_token)
        ]
    for what, value in values:
        if value and not _SENDABLE.fullmatch(value):
            raise ConfigError(
                f"{what} for provider {quoted(name)} holds a character an HTTP header "
                "cannot carry (a control character such as a stray newline, a space at either "
                "end, or non-ASCII text); fix it there"
            )
    return settings


class TomlGlobalConfig:
    """``config.toml``, read once on first use; environment variables win over the file.

    Every method raises ``ConfigError`` when ``config.toml`` exists but is unreadable or
    malformed; a missing file means nothing is configured.
    """

    def __init__(self, path: Path, environ: Mapping[str, str]) -> None:
        self._path = path
        self._environ = environ
        self._file: _GlobalFile | None = None
        self._document: dict[str, object] = {}

    @property
    def path(self) -> Path:
        """Where ``config.toml`` is (or would be), for messages that say where to write."""
        return self._path

    def check(self) -> None:
        """Read the file now, so a broken one is reported whatever the run needs from it."""
        self._load()

    def api_key(self, provider: str, variable: str | None = None) -> str:
        """``provider``'s key from ``variable`` (default :func:`key_variable`), else the
        file; "" when neither has one."""
        return self.key_and_source(provider, variable)[0]

    def key_and_source(self, provider: str, variable: str | None = None) -> tuple[str, str]:
        """``provider``'s key and where it came from (the variable's name or the file's
        path); ``("", "")`` when neither has one. The environment wins over the file."""
        variable = variable or key_variable(provider)
        if key := self._environ.get(variable, ""):
            return key, variable
        if key := self._table(provider).api_key:
            return key, str(self._path)
        return "", ""

    def base_url(self, provider: str) -> str:
        """``provider``'s base URL, or "" for the provider's default."""
        variable = f"AXE_{provider.upper()}_BASE_URL"
        return self._environ.get(variable, "") or self._table(provider).base_url

    def setting(self, provider: str, name: str, variables: Sequence[str] | None = None) -> str:
        """One of ``[providers.<provider>]``'s other settings (``region``, ``referer``,
        ``title``, ``categories``): the first of ``variables`` set (default
        ``AXE_<PROVIDER>_<NAME>``), else the file; "" when none is."""
        for variable in variables or (f"AXE_{provider.upper()}_{name.upper()}",):
            if value := self._environ.get(variable, ""):
                return value
        self._load()
        return string_at(self._document, ("providers", provider, name), source=str(self._path))

    def provider_settings(self, row: Provider, max_input_tokens: int | None) -> ProviderSettings:
        """What the file and the environment say about ``row``'s provider.

        Raises:
            ConfigError: config.toml is broken (whatever the row needs from it: the same
                file gives the same answer whichever model is asked), a SigV4 row has no
                region (exit 2), or a value cannot be sent (see :func:`sendable`).
            ApiError: the row's key, or a SigV4 row's AWS credentials, are missing (exit 3).
        """
        self.check()  # broken even when the environment supplies everything it would give
        name = row.name
        # a row without a key variable sends no key: none is looked up, none is reported
        key, source = self.key_and_source(name, row.key_variable) if row.key_variable else ("", "")
        headers = {
            header: value
            for header, setting in row.optional_headers
            if (value := self.setting(name, setting))
        }
        settings = ProviderSettings(
            api_key=key,
            base_url=self.base_url(name),
            key_variable=row.key_variable,
            key_source=source,
            config_path=str(self._path),
            max_input_tokens=max_input_tokens,
            headers=headers,
        )
        from axe.adapters.llm.catalogue import Auth  # noqa: PLC0415  (loaded with the row)

        if row.auth is not Auth.SIGV4:
            return sendable(row, settings)
        from axe.adapters.llm.aws_credentials import required_aws_credentials  # noqa: PLC0415

        region = self.setting(name, "region", row.region_variables)
        if not region:
            raise ConfigError(
                f"AWS region for provider {quoted(name)} is not configured (set "
                f"{', '.join(row.region_variables)}, or add region to [providers.{name}] in "
                f"{self._path})"
            )
        aws = required_aws_credentials(name, self._environ)
        return sendable(row, attrs.evolve(settings, region=region, aws=aws))

    def _table(self, provider: str) -> _ProviderTable:
        return self._load().providers.get(provider, _ProviderTable())

    def _load(self) -> _GlobalFile:
        if self._file is None:
            try:
                document = load_toml(self._path)
            except FileNotFoundError:
                document = {}
            self._file = structure(document, _GlobalFile, source=str(self._path))
            self._document = document
        return self._file
