"""AWS credentials for Bedrock, found where the Go axe looks (axe-formats.md, bedrock row):
``AWS_ACCESS_KEY_ID`` + ``AWS_SECRET_ACCESS_KEY`` (+ ``AWS_SESSION_TOKEN``), else the
``AWS_PROFILE`` profile (``default``) of the shared credentials file
(``AWS_SHARED_CREDENTIALS_FILE``, ``~/.aws/credentials``); never a source that needs the
network. A key id without its secret, or a secret without its key id, is no credentials at
all, as for the Go axe and the AWS SDK for Go (botocore would raise instead).
"""

from __future__ import annotations

import configparser
from collections.abc import Mapping
from pathlib import Path

from attrs import field, frozen

from axe.adapters.shared.reading import describe_os_error, read_regular
from axe.domain.errors import ApiError, ConfigError
from axe.domain.model import quoted

_MAX_FILE_BYTES = 1024 * 1024  # a credentials file is a few lines; anything far larger is not one


@frozen(kw_only=True)
class AwsCredentials:
    """An access key pair (and session token) and where it was found, for messages
    (``AWS_ACCESS_KEY_ID``, ``profile "dev" in /home/u/.aws/credentials``). ``repr`` shows
    only the key id, which AWS sends in the clear in every ``Authorization`` header."""

    access_key_id: str
    secret_access_key: str = field(repr=False)
    session_token: str = field(default="", repr=False)
    source: str

    @property
    def secrets(self) -> tuple[str, ...]:
        return tuple(secret for secret in (self.secret_access_key, self.session_token) if secret)


SECRET_VARIABLES = ("AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")


def aws_profile(environ: Mapping[str, str]) -> str:
    return environ.get("AWS_PROFILE", "") or "default"


def shared_credentials_file(environ: Mapping[str, str]) -> Path | None:
    """``AWS_SHARED_CREDENTIALS_FILE`` (a leading ``~`` expanded), else ``~/.aws/credentials``;
    ``~`` is ``HOME`` (``USERPROFILE`` on Windows), and None when neither is set."""
    home = environ.get("HOME", "") or environ.get("USERPROFILE", "")
    if given := environ.get("AWS_SHARED_CREDENTIALS_FILE", ""):
        if home and (given == "~" or given.startswith(("~/", "~\\"))):
            return Path(home, given[2:])
        return Path(given)
    return Path(home, ".aws", "credentials") if home else None


def read_aws_credentials(environ: Mapping[str, str]) -> AwsCredentials | None:
    """The credentials to sign with, or None when neither place has a complete pair;
    ConfigError if the credentials file exists but cannot be read or parsed."""
    names = ("aws_access_key_id", *(variable.lower() for variable in SECRET_VARIABLES))
    values: Mapping[str, str] = {name: environ.get(name.upper(), "") for name in names}
    source = "AWS_ACCESS_KEY_ID"
    if not (values["aws_access_key_id"] and values["aws_secret_access_key"]):
        path, profile = shared_credentials_file(environ), aws_profile(environ)
        profiles = _read_profiles(path) if path else None
        if profiles is None or not profiles.has_section(profile):
            return None
        values, source = profiles[profile], f"profile {quoted(profile)} in {path}"
    key_id, secret, token = (values.get(name, "") for name in names)
    if not (key_id and secret):
        return None
    return AwsCredentials(
        access_key_id=key_id, secret_access_key=secret, session_token=token, source=source
    )


def required_aws_credentials(provider: str, environ: Mapping[str, str]) -> AwsCredentials:
    """Raises ApiError (exit 3, as a missing key) without credentials, and what
    :func:`read_aws_credentials` raises."""
    if (found := read_aws_credentials(environ)) is not None:
        return found
    path = shared_credentials_file(environ)
    profile = f"no profile {quoted(aws_profile(environ))} in {path}"
    raise ApiError(
        f"AWS credentials for provider {quoted(provider)} are not configured: none in the "
        f"environment and {profile if path and path.exists() else 'no shared credentials file'}"
        " (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE and "
        "AWS_SHARED_CREDENTIALS_FILE)"
    )


def _read_profiles(path: Path) -> configparser.ConfigParser | None:
    """The file's profiles, or None when there is no file. No interpolation (a ``%`` in a
    secret is a ``%``), the last of repeated sections and keys winning (as the Go axe reads
    them), no ``[DEFAULT]`` leaking into every profile; an error names a line by number
    only, since its text may hold a secret."""
    try:
        raw, _ = read_regular(path, limit=_MAX_FILE_BYTES)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise ConfigError(f"cannot read {path}: {describe_os_error(error)}") from None
    except ValueError:
        raise ConfigError(f"cannot read {path}: larger than {_MAX_FILE_BYTES} bytes") from None
    try:
        text = raw.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as error:
        raise ConfigError(
            f"cannot parse {path}: not UTF-8 text (invalid byte at offset {error.start})"
        ) from None
    parser = configparser.ConfigParser(interpolation=None, strict=False, default_section="")
    try:
        parser.read_string(text)
    except configparser.MissingSectionHeaderError as error:
        raise ConfigError(
            f"cannot parse {path}: line {error.lineno} comes before any [profile] line"
        ) from None
    except configparser.ParsingError as error:
        line = error.errors[0][0] if error.errors else "?"
        raise ConfigError(
            f"cannot parse {path}: line {line} is neither a [profile] nor a key = value line"
        ) from None
    except configparser.Error:
        raise ConfigError(f"cannot parse {path}: not an INI file") from None
    return parser
