"""What one row of the catalogue needs to be reached, from ``config.toml`` and the
environment: its :class:`ProviderSettings`, checked before any request, with every
sentence about a setting that is missing or cannot be sent.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import attrs
from attrs import field, frozen

from axe.adapters.llm.aws_credentials import (
    AwsCredentials,
    read_aws_credentials,
    required_aws_credentials,
)
from axe.adapters.llm.catalogue import Auth, Provider
from axe.adapters.llm.config import TomlGlobalConfig
from axe.domain.errors import ApiError, ConfigError
from axe.domain.model import quoted

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
    reasoning_models: frozenset[str] = frozenset()


def provider_settings(
    row: Provider,
    config: TomlGlobalConfig,
    environ: Mapping[str, str],
    max_input_tokens: int | None,
    *,
    keyless: bool = False,
) -> ProviderSettings:
    """What ``config`` and ``environ`` say about ``row``'s provider; ``keyless``, for a run
    that sends no analysis (``--estimate``), needs no key, and no region or AWS credentials:
    only a free count is signed, when they are there.

    Raises:
        ConfigError: config.toml is broken (whatever the row needs from it: the same
            file gives the same answer whichever model is asked), a SigV4 row that sends
            has no region (exit 2), or a value cannot be sent (see :func:`sendable`).
        ApiError: the row's key, or a SigV4 row's AWS credentials, are missing (exit 3).
    """
    config.check()  # broken even when the environment supplies everything it would give
    name = row.name
    # a row without a key variable sends no key: none is looked up, none is reported
    key, source = config.key_and_source(name, row.key_variable) if row.key_variable else ("", "")
    headers = {
        header: value
        for header, setting in row.optional_headers
        if (value := config.setting(name, setting))
    }
    settings = ProviderSettings(
        api_key=key,
        base_url=config.base_url(name),
        key_variable=row.key_variable,
        key_source=source,
        config_path=str(config.path),
        max_input_tokens=max_input_tokens,
        headers=headers,
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
    if row.auth.needs_key and not settings.api_key and not keyless:
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
