"""What a message may show of a URL, and the secrets it may never show: API keys, AWS
secrets and tokens, proxy passwords and a base URL's, in every form a server may echo them.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable
from urllib.parse import quote, urlsplit, urlunsplit

import httpx

_TOKEN_CHARACTER = re.compile(r"[\w-]")
SHORTEST_REAL_SECRET = 8  # characters; shorter ones are placeholders such as "e" or "none"
_CREDENTIAL = re.compile("key|token|secret|sig|auth|pass|code|credential", re.IGNORECASE)


def scrubbed(text: str, url: str, secrets: Iterable[str]) -> str:
    """``text`` without ``secrets``, the password in ``url`` or a credential in its query
    (``?api-key=``, not ``?api-version=``): each as written, as a library's repr() shows it
    ('sk-…\\r'), and URL-encoded as a server may echo it (an AWS secret's '/' as %2F)."""
    try:
        address = httpx.URL(url)
        query = address.params.multi_items()
        in_url = (*password_forms(address), *(v for k, v in query if _CREDENTIAL.search(k)))
    except httpx.InvalidURL:
        in_url = ()
    for secret in (*secrets, *in_url):
        for form in {secret, repr(secret)[1:-1], quote(secret, safe=""), quote(secret)}:
            text = redact(text, form)
    return text


def redact(text: str, secret: str) -> str:
    """``text`` with ``secret`` replaced wherever it appears.

    Keys never reach output, however a server echoes them, glued to other words included
    (``key_sk-…``, ``Bearersk-…``). Only a secret too short to be a real key (a placeholder
    such as ``e``, common with local servers) is replaced where it stands as a token of its
    own, so it does not turn "answered" into "answ[redacted]r[redacted]d": where it begins
    or ends with a letter, digit, ``_`` or ``-``, the character beyond must not be one.
    """
    if not secret:
        return text
    if len(secret) >= SHORTEST_REAL_SECRET:
        return text.replace(secret, "[redacted]")
    before = r"(?<![\w-])" if _TOKEN_CHARACTER.match(secret[0]) else ""
    after = r"(?![\w-])" if _TOKEN_CHARACTER.match(secret[-1]) else ""
    return re.sub(before + re.escape(secret) + after, "[redacted]", text)


def password_forms(address: httpx.URL) -> tuple[str, ...]:
    """The forms in which a URL's password can come back in a reply: as written in the URL,
    decoded, and inside the Basic header built from it; none without a password."""
    if not address.password:
        return ()
    as_written = address.userinfo.decode("ascii").partition(":")[2]
    credentials = f"{address.username}:{address.password}".encode()
    header_token = base64.b64encode(credentials).decode("ascii")
    return tuple(dict.fromkeys((address.password, as_written, header_token)))


def display_url(url: str) -> str:
    """``url`` without user name, password, query or fragment, fit to print; the host and
    port as written (an IPv6 address keeps its brackets, a malformed port is shown, not
    parsed)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "an invalid URL"
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, host, parts.path, "", ""))
