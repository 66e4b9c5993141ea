"""The proxies the environment names, read as httpx reads them (``getproxies``, no scheme
meaning ``http://``), for what httpx cannot say: a setting it cannot use, named by its
variable (httpx would raise a bare ``ValueError``, or take a password's ``#`` for the end
of the host); a proxy shown without its credentials; its password's forms, never to print.
"""

from __future__ import annotations

import urllib.request
from importlib.util import find_spec

import httpx
from attrs import field, frozen

from axe.adapters.llm.redaction import password_forms
from axe.domain.errors import ConfigError

_ENCODE = "in a user name or password, write @ : / ? # and % percent-encoded, such as %23 for #"


@frozen
class EnvironmentProxy:
    """``shown`` without credentials; ``host`` and ``port``, where connections to it go."""

    shown: str
    host: str
    port: int | None
    secrets: tuple[str, ...] = field(repr=False)


def environment_proxies() -> tuple[EnvironmentProxy, ...]:
    """Raises ConfigError: a proxy variable that names no proxy httpx's client can use."""
    named = urllib.request.getproxies()
    return tuple(
        _proxy(url if "://" in url else f"http://{url}", f"{scheme.upper()}_PROXY")
        for scheme in ("http", "https", "all")
        if (url := named.get(scheme))
    )


def no_proxy_problem(error: httpx.InvalidURL) -> ConfigError:
    """The ``NO_PROXY`` entry httpx could not read: past the proxies, its one URL setting."""
    for entry in (entry.strip() for entry in urllib.request.getproxies().get("no", "").split(",")):
        try:
            httpx.URL(entry if "://" in entry else f"http://{entry}")
        except httpx.InvalidURL as reason:
            return ConfigError(f"cannot use NO_PROXY entry {entry!r}: {reason}")
    return ConfigError(f"cannot use NO_PROXY: {error}")


def _proxy(url: str, variable: str) -> EnvironmentProxy:
    """Raises ConfigError: not a URL (httpx's reason shown only without credentials: any
    part of it could be a piece of the password), a scheme httpx has no proxy for, or
    SOCKS without ``socksio`` (which axe does not install)."""
    credentials = "@" in url.partition("://")[2]
    try:
        address = httpx.URL(url)
    except httpx.InvalidURL as error:
        reason = f" ({_ENCODE})" if credentials else f": {error}"
        raise ConfigError(f"the proxy in {variable} is not a valid URL{reason}") from None
    if credentials and not address.userinfo:  # a # / or ? in them moved the host
        raise ConfigError(f"the proxy in {variable} is not a valid URL ({_ENCODE})")
    shown = str(address.copy_with(username=None, password=None))
    if address.scheme not in ("http", "https", "socks5", "socks5h"):
        raise ConfigError(
            f"the proxy in {variable} ({shown}) is not an http://, https:// or socks5:// URL"
        )
    if address.scheme.startswith("socks") and find_spec("socksio") is None:
        raise ConfigError(
            f"the proxy in {variable} ({shown}) is a SOCKS proxy, which needs the socksio "
            "package installed next to axe (pip install socksio)"
        )
    return EnvironmentProxy(shown, address.host, address.port, password_forms(address))
