"""AWS Signature Version 4 as an ``httpx.Auth``, for Bedrock (axe-formats.md, bedrock row).

The transport runs it on every attempt, so a retry is signed afresh with the clock's time,
as AWS requires: a signature older than five minutes is refused. Only what AWS needs and no
proxy may change is signed: ``host``, ``content-type`` and every ``x-amz-*`` header.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable, Generator
from datetime import UTC, datetime
from urllib.parse import quote, unquote

import httpx

from axe.adapters.llm.aws_credentials import AwsCredentials

_ALGORITHM = "AWS4-HMAC-SHA256"
_UNRESERVED = "-_.~"  # with letters and digits, the only bytes AWS leaves unencoded


class SigV4Auth(httpx.Auth):
    """Signs each request for ``service`` in ``region``; ``clock`` gives an aware datetime."""

    requires_request_body = True  # the payload's hash is part of the signature

    def __init__(
        self,
        credentials: AwsCredentials,
        region: str,
        *,
        service: str = "bedrock",
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._credentials, self._region, self._service = credentials, region, service
        self._clock = clock

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        """Sets ``x-amz-date``, ``x-amz-security-token`` (with a token) and
        ``authorization``, replacing any earlier signature."""
        keys = self._credentials
        stamp = self._clock().astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
        request.headers.pop("authorization", None)
        request.headers["x-amz-date"] = stamp
        if keys.session_token:
            request.headers["x-amz-security-token"] = keys.session_token
        names = sorted(  # httpx gives each header name once, lower-cased
            name
            for name in request.headers
            if name in ("host", "content-type") or name.startswith("x-amz-")
        )
        signed_headers = ";".join(names)
        canonical_request = "\n".join(
            [
                request.method.upper(),
                _canonical_uri(request.url),
                _canonical_query(request.url),
                "".join(f"{name}:{_header_value(request, name)}\n" for name in names),
                signed_headers,
                hashlib.sha256(request.content).hexdigest(),
            ]
        )
        scope = f"{stamp[:8]}/{self._region}/{self._service}/aws4_request"
        string_to_sign = "\n".join(
            [_ALGORITHM, stamp, scope, hashlib.sha256(canonical_request.encode()).hexdigest()]
        )
        key = f"AWS4{keys.secret_access_key}".encode()
        for part in (stamp[:8], self._region, self._service, "aws4_request", string_to_sign):
            key = hmac.new(key, part.encode(), hashlib.sha256).digest()
        request.headers["authorization"] = (
            f"{_ALGORITHM} Credential={keys.access_key_id}/{scope}, "
            f"SignedHeaders={signed_headers}, Signature={key.hex()}"
        )
        yield request


def _canonical_uri(url: httpx.URL) -> str:
    """The path as it goes on the wire, each segment encoded once more (every service but
    S3): a model id ``…-v2:0`` travels as ``…-v2%3A0`` and is signed as ``…-v2%253A0``."""
    wire_path = url.raw_path.split(b"?", 1)[0].decode("ascii")
    return quote(wire_path or "/", safe="/" + _UNRESERVED)


def _canonical_query(url: httpx.URL) -> str:
    """Each name and value decoded, then strictly encoded; sorted by name, then value."""
    pairs = (pair.partition("=") for pair in url.query.decode("ascii").split("&") if pair)
    encoded = sorted(
        (quote(unquote(name), safe=_UNRESERVED), quote(unquote(value), safe=_UNRESERVED))
        for name, _, value in pairs
    )
    return "&".join(f"{name}={value}" for name, value in encoded)


def _header_value(request: httpx.Request, name: str) -> str:
    """Every value of the header, spaces trimmed and runs of spaces made one, comma-joined."""
    return ",".join(" ".join(value.split()) for value in request.headers.get_list(name))
