"""Which proxy, if any, a request goes through: the environment as httpx itself reads it.

The official Anthropic and OpenAI SDKs use httpx with its defaults, so people's proxy settings
already work with httpx's rules: ``HTTP_PROXY``, ``HTTPS_PROXY`` and ``ALL_PROXY`` (either
case, lower case winning, as ``urllib.request.getproxies`` reads them; on macOS and Windows the
system settings when the environment names none) and ``NO_PROXY`` entries that are host
names, domains (``.example.com``), IP addresses, ``localhost``, ``host:port``, URLs or ``*``.

httpx's client applies them only when it builds its own transports, which load CA
certificates for plain-http endpoints too (see ``pools.py``). So httpx's own reading of the
environment and its own URL patterns (``httpx._utils.get_environment_proxies`` and
``URLPattern``, what ``httpx.Client(trust_env=True)`` runs, in 0.27 and 0.28) decide here,
and only the pools are ours: every request goes where the SDKs' httpx would send it
(``tests/adapters/llm/test_proxies.py`` checks that against the client's own choice). What
is added is what a message needs: the proxy without its credentials, the forms of its
password to scrub, and one line naming the variable that holds an unusable setting.
"""

from __future__ import annotations

import base64

import httpx
from attrs import field, frozen
from httpx._utils import URLPattern, get_environment_proxies

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
class ProxyRoutes:
    """The environment's proxy rules, in the order httpx tries them (most specific first):
    each URL pattern with its proxy, or None to go direct."""

    rules: tuple[tuple[URLPattern, EnvironmentProxy | None], ...]

    @classmethod
    def from_environment(cls) -> ProxyRoutes:
        """The rules httpx would follow in this process (read when the first request is made).

        Raises:
            ConfigError: a proxy URL or ``NO_PROXY`` entry that httpx could not use either.
        """
        proxies: dict[str, EnvironmentProxy] = {}
        rules = []
        for pattern, url in get_environment_proxies().items():
            source = _source(pattern)
            proxy = None
            if url is not None:
                proxy = proxies[url] = proxies.get(url) or _usable_proxy(url, source)
            try:
                rules.append((URLPattern(pattern), proxy))
            except httpx.InvalidURL as error:
                raise ConfigError(f"cannot use {source}: {error}") from None
        return cls(tuple(sorted(rules, key=lambda rule: rule[0])))

    def proxy_for(self, url: httpx.URL | str) -> EnvironmentProxy | None:
        """The proxy a request to ``url`` goes through, or None to connect directly."""
        if isinstance(url, str):
            try:
                url = httpx.URL(url)
            except httpx.InvalidURL:
                return None  # sending it fails too, and says why
        for pattern, proxy in self.rules:
            if pattern.matches(url):
                return proxy
        return None

    @property
    def secrets(self) -> tuple[str, ...]:
        """Every proxy password form to take out of printed text."""
        found = (secret for _, proxy in self.rules if proxy for secret in proxy.secrets)
        return tuple(dict.fromkeys(found))


def _source(pattern: str) -> str:
    """The setting a pattern of httpx's table came from, for a message about it."""
    scheme, _, host = pattern.partition("://")
    if not host and scheme in _VARIABLES:
        return _VARIABLES[scheme]
    entry = pattern if not pattern.startswith("all://") else host.removeprefix("*")
    return f"NO_PROXY entry {entry!r}"


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
    return EnvironmentProxy(url=url, shown=shown, secrets=password_forms(address))


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


def password_forms(address: httpx.URL) -> tuple[str, ...]:
    """The forms in which a URL's password can come back in a reply: as written in the URL,
    decoded, and inside the Basic header built from it; none without a password."""
    if not address.password:
        return ()
    as_written = address.userinfo.decode("ascii").partition(":")[2]
    credentials = f"{address.username}:{address.password}".encode()
    header_token = base64.b64encode(credentials).decode("ascii")
    return tuple(dict.fromkeys((address.password, as_written, header_token)))
