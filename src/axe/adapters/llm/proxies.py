"""The proxies the environment names, for what httpx's client cannot say about them.

httpx chooses a request's proxy itself (``trust_env``), reading ``HTTP_PROXY``,
``HTTPS_PROXY`` and ``ALL_PROXY`` through ``urllib.request.getproxies`` (lower case winning;
on macOS and Windows the system settings), a proxy without a scheme being ``http://``, and
``NO_PROXY``. Read the same way here, they give the messages: a setting httpx could not use,
named by its variable (httpx would raise a bare ``ValueError`` or ``ImportError``, or take a
password's ``#`` for the end of the host); a proxy shown without its credentials; the forms
of its password never to print.
"""

from __future__ import annotations

import urllib.request
from importlib.util import find_spec

import httpx
from attrs import field, frozen

from axe.adapters.llm.redaction import password_forms
from axe.domain.errors import ConfigError

_SCHEMES = ("http", "https", "socks5", "socks5h")


@frozen
class EnvironmentProxy:
    """A proxy: ``shown`` without credentials, the only form a message may hold; ``host``
    and ``port``, where a connection through it goes; ``secrets``, its password's forms."""

    shown: str
    host: str
    port: int | None
    secrets: tuple[str, ...] = field(repr=False)

    def is_at(self, host: str, port: int) -> bool:
        return host == self.host and self.port in (port, None)


def environment_proxies() -> tuple[EnvironmentProxy, ...]:
    """Every proxy the environment names, checked as httpx's client will use it.

    Raises:
        ConfigError: a proxy variable that names no usable proxy.
    """
    named = urllib.request.getproxies()
    return tuple(
        _usable_proxy(url if "://" in url else f"http://{url}", f"{scheme.upper()}_PROXY")
        for scheme in ("http", "https", "all")
        if (url := named.get(scheme))
    )


def no_proxy_problem(error: httpx.InvalidURL) -> ConfigError:
    """The ``NO_PROXY`` entry httpx's client could not read (once the proxies are checked,
    the one setting left that it reads as a URL)."""
    for entry in (entry.strip() for entry in urllib.request.getproxies().get("no", "").split(",")):
        try:
            httpx.URL(entry if "://" in entry else f"http://{entry}")
        except httpx.InvalidURL as reason:
            return ConfigError(f"cannot use NO_PROXY entry {entry!r}: {reason}")
    return ConfigError(f"cannot use NO_PROXY: {error}")


def _usable_proxy(url: str, variable: str) -> EnvironmentProxy:
    """Raises ConfigError: not a URL, a scheme httpx has no proxy for, or SOCKS without
    ``socksio`` (which axe does not install)."""
    written_credentials = "@" in url.partition("://")[2]
    try:
        address = httpx.URL(url)
    except httpx.InvalidURL as error:
        raise _not_a_url(variable, error, written_credentials) from None
    if written_credentials and not address.userinfo:  # a # / or ? in them moved the host
        raise _not_a_url(variable, None, written_credentials)
    shown = str(address.copy_with(username=None, password=None))
    if address.scheme not in _SCHEMES:
        raise ConfigError(
            f"the proxy in {variable} ({shown}) is not an http://, https:// or socks5:// URL"
        )
    if address.scheme.startswith("socks") and find_spec("socksio") is None:
        raise ConfigError(
            f"the proxy in {variable} ({shown}) is a SOCKS proxy, which needs the socksio "
            "package installed next to axe (pip install socksio)"
        )
    return EnvironmentProxy(shown, address.host, address.port, password_forms(address))


def _not_a_url(variable: str, error: Exception | None, written_credentials: bool) -> ConfigError:
    """httpx's reason is shown only for a URL without credentials: with them, any part of
    the reason could be a piece of the password."""
    if written_credentials:
        return ConfigError(
            f"the proxy in {variable} is not a valid URL (in a user name or password, write "
            "@ : / ? # and % percent-encoded, such as %23 for #)"
        )
    return ConfigError(f"the proxy in {variable} is not a valid URL: {error}")
