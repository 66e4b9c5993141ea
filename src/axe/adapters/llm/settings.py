"""What a row of the catalogue needs to be reached, from ``config.toml`` and the
environment (axe-formats.md): its :class:`ProviderSettings`, checked before any request,
with every sentence about a setting that is missing or cannot be sent.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
from attrs import Factory, define, field, frozen

from axe.adapters.llm.aws_credentials import (
    SECRET_VARIABLES,
    AwsCredentials,
    read_aws_credentials,
    required_aws_credentials,
)
from axe.adapters.llm.catalogue import CATALOGUE, Auth, Provider
from axe.adapters.shared.toml import load_toml, structure
from axe.domain.errors import ApiError, ConfigError
from axe.domain.model import quoted

# What a key can be (visible ASCII, spaces inside), and what a header may carry (no control
# but tab; other text as UTF-8, as the Go axe sends it); spaces at either end are dropped.
_KEY = re.compile(r"[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?")
_HEADER = re.compile(r"[^\x00-\x08\x0a-\x1f\x7f]*")
_ENDS = " \t"  # what Go's net/http trims from either end of a header value


@define(repr=False, eq=False)  # read once, never shown or compared
class _ProviderTable:
    """The two keys every provider has, checked as soon as the file is read; a row's other
    settings (Bedrock's ``region``, OpenRouter's ``title``) are read by name."""

    api_key: str = ""
    base_url: str = ""


@define(repr=False, eq=False)
class _GlobalFile:
    providers: dict[str, _ProviderTable] = Factory(dict)


class TomlGlobalConfig:
    """``config.toml``, read once on first use; environment variables win over the file.
    Every method raises ``ConfigError`` when it exists but is unreadable or malformed; a
    missing file means nothing is configured."""

    def __init__(self, path: Path, environ: Mapping[str, str]) -> None:
        self._path = path
        self._environ = environ
        self._file: _GlobalFile | None = None
        self._document: dict[str, Any] = {}

    @property
    def path(self) -> Path:
        return self._path

    def check(self) -> None:
        """Read the file now, so a broken one is reported whatever the run needs from it."""
        self._load()

    def key_and_source(self, provider: str, variable: str) -> tuple[str, str]:
        """``provider``'s key from ``variable`` (its row's) or the file, and where it came
        from (the variable's name or the file's path); ``("", "")`` when neither has one."""
        if key := self._environ.get(variable, "").strip(_ENDS):
            return key, variable
        if key := self._load().providers.get(provider, _ProviderTable()).api_key.strip(_ENDS):
            return key, str(self._path)
        return "", ""

    def every_key(self) -> tuple[str, ...]:
        """Each provider's key the run can see: a gateway may echo one it was not sent."""
        variables = [*(row.key_variable for row in CATALOGUE.values()), *SECRET_VARIABLES]
        keys = [self._environ.get(variable, "") for variable in variables]
        keys += [table.api_key for table in self._load().providers.values()]
        return tuple(key.strip(_ENDS) for key in keys if key)

    def setting(self, provider: str, name: str, variables: Sequence[str] | None = None) -> str:
        """One of ``[providers.<provider>]``'s settings but the key (``base_url``,
        ``region``, ``title``): the first of ``variables`` set (default
        ``AXE_<PROVIDER>_<NAME>``), else the file; "" when none is."""
        for variable in variables or (f"AXE_{provider.upper()}_{name.upper()}",):
            if value := self._environ.get(variable, ""):
                return value
        self._load()  # so [providers] and each of its tables are known to be tables
        written = self._document.get("providers", {}).get(provider, {}).get(name, "")
        where = ("providers", provider, name)
        return structure(written, str, source=str(self._path), key=where)

    def _load(self) -> _GlobalFile:
        if self._file is None:
            try:
                document = load_toml(self._path)
            except FileNotFoundError:
                document = {}
            self._file = structure(document, _GlobalFile, source=str(self._path))
            self._document = document
        return self._file


@frozen(kw_only=True)
class ProviderSettings:
    """How to reach one provider; ``repr`` leaves out every secret. ``key_variable`` and
    ``config_path`` say where a missing key may be put, ``key_source`` where the key in use
    came from (for a rejected one); ``headers`` are the user's optional headers."""

    api_key: str = field(default="", repr=False)
    base_url: str = ""
    key_variable: str = ""
    key_source: str = ""
    config_path: str = "config.toml"
    max_input_tokens: int | None = None
    headers: Mapping[str, str] = field(factory=dict)
    region: str = ""
    aws: AwsCredentials | None = None
    reasoning_models: frozenset[str] = frozenset()
    known_keys: tuple[str, ...] = field(default=(), repr=False)  # kept out of messages, but
    # not a placeholder ("ollama"): too short to be a key, it would garble words it matches


def provider_settings(
    row: Provider,
    config: TomlGlobalConfig,
    environ: Mapping[str, str],
    max_input_tokens: int | None,
    *,
    keyless: bool = False,
) -> ProviderSettings:
    """What ``config`` and ``environ`` say about ``row``'s provider; ``keyless`` (a run
    that sends no analysis, ``--estimate``) needs no key, region or AWS credentials: only a
    free count is signed, when they are there.

    Raises:
        ConfigError: config.toml is broken (whatever the row needs from it), a SigV4 row
            that sends has no region (exit 2), or a value cannot be sent.
        ApiError: the row's key, or a SigV4 row's AWS credentials, are missing (exit 3).
    """
    config.check()  # broken even when the environment supplies everything it would give
    name = row.name
    # a row without a key variable sends no key: none is looked up, none is reported
    key, source = config.key_and_source(name, row.key_variable) if row.key_variable else ("", "")
    headers = {
        header: value
        for header, setting in row.optional_headers
        if (value := config.setting(name, setting).strip(_ENDS))
    }
    settings = ProviderSettings(
        api_key=key,
        base_url=config.setting(name, "base_url"),
        key_variable=row.key_variable,
        key_source=source,
        config_path=str(config.path),
        max_input_tokens=max_input_tokens,
        headers=headers,
        known_keys=config.every_key(),
        reasoning_models=frozenset(
            alias.strip() for alias in config.setting(name, "reasoning_models").split(",")
        )
        - {""},
    )
    if row.auth is not Auth.SIGV4:
        return sendable(row, settings, keyless=keyless)
    region = config.setting(name, "region", row.region_variables)
    if keyless:  # signs a free count, when the credentials can be read and sent
        try:
            aws = read_aws_credentials(environ) if region else None
            return sendable(row, attrs.evolve(settings, region=region, aws=aws), keyless=True)
        except ConfigError:
            return sendable(row, settings, keyless=True)
    if not region:
        raise ConfigError(
            f"AWS region for provider {quoted(name)} is not configured (set "
            f"{', '.join(row.region_variables)}, or add region to [providers.{name}] in "
            f"{config.path})"
        )
    aws = required_aws_credentials(name, environ)
    return sendable(row, attrs.evolve(settings, region=region, aws=aws))


def sendable(
    row: Provider, settings: ProviderSettings, *, keyless: bool = False
) -> ProviderSettings:
    """``settings``, once sure before any request that one to ``row`` can carry them.

    Raises:
        ApiError: a key is needed and missing (exit 3, the spec's line).
        ConfigError: a key, credential or header value no HTTP request can carry (a newline
            left by a CRLF ``.env`` file), named by where it came from: sent, httpx's error
            would quote it, secret and all.
    """
    name = row.name
    if row.auth.needs_key and not settings.api_key and not keyless:
        raise ApiError(
            f"API key for provider {quoted(name)} is not configured "
            f"(set {settings.key_variable} or add it to {settings.config_path})"
        )
    values = [(f"the API key from {settings.key_source}", settings.api_key, _KEY)]
    for header, setting in row.optional_headers:
        where = f"AXE_{name.upper()}_{setting.upper()} or [providers.{name}] {setting}"
        value = settings.headers.get(header, "")
        values.append((f"the {header} header (from {where})", value, _HEADER))
    if (aws := settings.aws) is not None:
        values += [
            (f"the AWS credentials from {aws.source}", value, _KEY)
            for value in (aws.access_key_id, aws.secret_access_key, aws.session_token)
        ]
    for what, value, allowed in values:
        if value and not allowed.fullmatch(value):
            raise ConfigError(
                f"{what} for provider {quoted(name)} holds a character an HTTP header "
                "cannot carry (a control character such as a stray newline, or non-ASCII text "
                "in a key); fix it there"
            )
    return settings
