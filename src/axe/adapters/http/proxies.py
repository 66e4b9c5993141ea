"""Which proxy, if any, a request goes through: the environment read exactly as httpx reads it.

The official Anthropic and OpenAI SDKs use httpx with its defaults, so people's proxy settings
already work with httpx's rules: ``HTTP_PROXY``, ``HTTPS_PROXY`` and ``ALL_PROXY`` (either
case, lower case winning, as ``urllib.request.getproxies`` reads them; on macOS and Windows the
system settings when the environment names none) and ``NO_PROXY`` entries that are host
names, domains (``.example.com``), IP addresses, ``localhost``, ``host:port``, URLs or ``*``.

httpx applies those rules only when it builds its own transports, which would load CA
certificates for plain-http endpoints too (see ``pools.py``), and its functions for them
(``httpx._utils.get_environment_proxies`` and ``URLPattern``) are private. So the same
steps are restated here over public APIs (``urllib.request.getproxies`` and ``httpx.URL``,
which normalises hosts as httpx's matching does), and ``tests/adapters/test_http_proxies.py``
checks them against the installed httpx's own choice of proxy for generated environments
and URLs.

Imported only when a request is made (it imports httpx).
"""

from __future__ import annotations

import base64
import ipaddress
import re
import urllib.request
from collections.abc import Mapping

import httpx
from attrs import field, frozen

from axe.domain.errors import ConfigError

_VARIABLES = {"http": "HTTP_PROXY", "https": "HTTPS_PROXY", "all": "ALL_PROXY"}
_PROXY_SCHEMES = ("http", "https", "socks5", "socks5h")


@frozen
class EnvironmentProxy:
    """A proxy named by the environment.

    ``url`` may carry credentials and is used only to connect; ``shown`` is the same proxy
    without them, the only form that may appear in a message; ``secrets`` are the forms of
    the password (as written, decoded, and inside the ``Proxy-Authorization`` header) that
    must be taken out of any text before it is printed.
    """

    url: str = field(repr=False)
    shown: str
    secrets: tuple[str, ...] = field(repr=False)


@frozen
class _Rule:
    """One URL pattern of httpx's proxy table, and where matching requests go (None: direct)."""

    scheme: str  # "" matches any scheme
    host: str  # "" matches any host
    host_pattern: re.Pattern[str] | None
    port: int | None
    proxy: EnvironmentProxy | None

    def matches(self, url: httpx.URL) -> bool:
        if self.scheme and self.scheme != url.scheme:
            return False
        if self.host_pattern is not None and not self.host_pattern.match(url.host):
            return False
        return self.port is None or self.port == url.port

    def precedence(self) -> tuple[int, int, int]:
        """httpx tries patterns with a port first, then longer hosts, then longer schemes."""
        return (0 if self.port is not None else 1, -len(self.host), -len(self.scheme))


@frozen
class ProxyRoutes:
    """The environment's proxy rules, most specific first."""

    rules: tuple[_Rule, ...]

    @classmethod
    def from_environment(cls) -> ProxyRoutes:
        """The rules httpx would follow in this process (read when the first request is made).

        Raises:
            ConfigError: a proxy URL or ``NO_PROXY`` entry that httpx could not use either.
        """
        return cls.from_settings(urllib.request.getproxies())

    @classmethod
    def from_settings(cls, found: Mapping[str, str]) -> ProxyRoutes:
        """The rules for settings shaped like ``urllib.request.getproxies()``'s result.

        Raises:
            ConfigError: as :meth:`from_environment`.
        """
        proxies: dict[str, EnvironmentProxy] = {}
        rules = []
        for pattern, (url, source) in environment_rules(found).items():
            proxy = None
            if url is not None:
                proxy = proxies[url] = proxies.get(url) or _usable_proxy(url, source)
            rules.append(_rule(pattern, proxy, source))
        return cls(tuple(sorted(rules, key=_Rule.precedence)))

    def proxy_for(self, url: httpx.URL | str) -> EnvironmentProxy | None:
        """The proxy a request to ``url`` goes through, or None to connect directly."""
        if isinstance(url, str):
            try:
                url = httpx.URL(url)
            except httpx.InvalidURL:
                return None  # sending it fails too, and says why
        for rule in self.rules:
            if rule.matches(url):
                return rule.proxy
        return None

    @property
    def secrets(self) -> tuple[str, ...]:
        """Every proxy password form to take out of printed text."""
        found = (secret for rule in self.rules if rule.proxy for secret in rule.proxy.secrets)
        return tuple(dict.fromkeys(found))


def environment_rules(found: Mapping[str, str]) -> dict[str, tuple[str | None, str]]:
    """URL pattern -> (proxy URL, or None to go direct; the setting it came from).

    The steps of httpx 0.28's ``get_environment_proxies``, in the same order, so the table
    has the same keys in the same insertion order (which breaks ties between patterns):
    scheme proxies get ``http://`` when they name no scheme; ``NO_PROXY=*`` turns every
    proxy off; an IP address or ``localhost`` matches exactly, a URL as written, and any
    other entry the host and its subdomains (``.example.com``: the subdomains only).
    """
    rules: dict[str, tuple[str | None, str]] = {}
    for scheme, variable in _VARIABLES.items():
        proxy = found.get(scheme)
        if proxy:
            rules[f"{scheme}://"] = (proxy if "://" in proxy else f"http://{proxy}", variable)
    for entry in (part.strip() for part in found.get("no", "").split(",")):
        if entry == "*":
            return {}
        if entry:
            rules[_bypass_pattern(entry)] = (None, f"NO_PROXY entry {entry!r}")
    return rules


def _bypass_pattern(entry: str) -> str:
    if "://" in entry:
        return entry
    if _is_address(entry, ipaddress.IPv4Address):
        return f"all://{entry}"
    if _is_address(entry, ipaddress.IPv6Address):
        return f"all://[{entry}]"
    if entry.lower() == "localhost":
        return f"all://{entry}"
    return f"all://*{entry}"


def _is_address(entry: str, kind: type[ipaddress.IPv4Address | ipaddress.IPv6Address]) -> bool:
    try:
        kind(entry.split("/", maxsplit=1)[0])
    except ValueError:
        return False
    return True


def _rule(pattern: str, proxy: EnvironmentProxy | None, source: str) -> _Rule:
    """httpx's ``URLPattern``: ``*.d`` matches subdomains of d, ``*d`` also d itself."""
    try:
        url = httpx.URL(pattern)
    except httpx.InvalidURL as error:
        raise ConfigError(f"cannot use {source}: {error}") from None
    host = "" if url.host == "*" else url.host
    if not host:
        host_pattern = None
    elif host.startswith("*."):
        host_pattern = re.compile(f"^.+\\.{re.escape(host[2:])}$")
    elif host.startswith("*"):
        host_pattern = re.compile(f"^(.+\\.)?{re.escape(host[1:])}$")
    else:
        host_pattern = re.compile(f"^{re.escape(host)}$")
    scheme = "" if url.scheme == "all" else url.scheme
    return _Rule(scheme, host, host_pattern, url.port, proxy)


def _usable_proxy(url: str, source: str) -> EnvironmentProxy:
    """The proxy, checked now as httpx checks it when its client is built.

    Raises:
        ConfigError: not a URL, a scheme no transport speaks, or SOCKS without ``socksio``
            (which axe does not install; httpx would fail with an ImportError).
    """
    written_credentials = "@" in url.partition("://")[2]
    try:
        address = httpx.URL(url)
    except httpx.InvalidURL as error:
        raise _not_a_url(source, error, written_credentials) from None
    if written_credentials and not address.userinfo:  # a # / or ? in them moved the host
        raise _not_a_url(source, None, written_credentials)
    shown = str(address.copy_with(username=None, password=None))
    if address.scheme not in _PROXY_SCHEMES:
        raise ConfigError(
            f"the proxy in {source} ({shown}) is not an http://, https:// or socks5:// URL"
        )
    if address.scheme.startswith("socks") and not _socksio_installed():
        raise ConfigError(
            f"the proxy in {source} ({shown}) is a SOCKS proxy, which needs the socksio "
            "package installed next to axe (pip install socksio)"
        )
    return EnvironmentProxy(url=url, shown=shown, secrets=_password_forms(address))


def _not_a_url(source: str, error: Exception | None, written_credentials: bool) -> ConfigError:
    """httpx's reason is shown only for a URL without credentials: with them, any part of
    the reason could be a piece of the password."""
    if written_credentials:
        return ConfigError(
            f"the proxy in {source} is not a valid URL (in a user name or password, write "
            "@ : / ? # and % percent-encoded, such as %23 for #)"
        )
    return ConfigError(f"the proxy in {source} is not a valid URL: {error}")


def _socksio_installed() -> bool:
    from importlib.util import find_spec  # noqa: PLC0415  (0.4 ms, for SOCKS users only)

    return find_spec("socksio") is not None


def _password_forms(address: httpx.URL) -> tuple[str, ...]:
    if not address.password:
        return ()
    as_written = address.userinfo.decode("ascii").partition(":")[2]
    credentials = f"{address.username}:{address.password}".encode()
    header_token = base64.b64encode(credentials).decode("ascii")
    return tuple(dict.fromkeys((address.password, as_written, header_token)))
