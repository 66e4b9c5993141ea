"""AWS Signature V4 for Bedrock: AWS's own vectors, botocore's signer, retries, secrets.

No request leaves the process: requests are signed as they are, or sent to respx through
the transport.
"""

from __future__ import annotations

import string
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta, timezone
from urllib.parse import quote

import httpx
import pytest
import respx
from botocore.auth import SigV4Auth as BotocoreSigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from hypothesis import given
from hypothesis import strategies as st

from axe.adapters.llm.aws_credentials import AwsCredentials
from axe.adapters.llm.body import JsonBody
from axe.adapters.llm.sigv4 import SigV4Auth
from axe.adapters.llm.transport import HttpTransport
from axe.testing import FakeClock

# AWS's published SigV4 test suite (aws-sig-v4-test-suite; aws-c-auth's
# tests/aws-signing-test-suite/v4): its credentials, time, region and service.
SUITE_KEYS = AwsCredentials(
    access_key_id="AKIDEXAMPLE",
    secret_access_key="wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
    source="the AWS test suite",
)
SUITE_TOKEN = "6e86291e8372ff2a2260956d9b8aae1d763fbf315fa00fa31553b73ebf194267"
SUITE_TIME = datetime(2015, 8, 30, 12, 36, tzinfo=UTC)
SUITE_SCOPE = "Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request"

MODEL = "anthropic.claude-3-5-sonnet-20241022-v2:0"


JSON = {"content-type": "application/json"}


def _sent(
    auth: httpx.Auth,
    method: str,
    url: str,
    *,
    content: bytes = b"",
    headers: dict[str, str] | None = None,
) -> httpx.Request:
    """The request as ``auth`` signed it, the one step the transport runs (``transport.py``)."""
    return next(auth.sync_auth_flow(httpx.Request(method, url, content=content, headers=headers)))


def _suite_auth(credentials: AwsCredentials = SUITE_KEYS) -> SigV4Auth:
    return SigV4Auth(credentials, "us-east-1", service="service", clock=lambda: SUITE_TIME)


@pytest.mark.parametrize(
    ("vector", "method", "url", "signed", "signature"),
    [
        (
            "get-vanilla",
            "GET",
            "https://example.amazonaws.com/",
            "host;x-amz-date",
            "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31",
        ),
        (
            "get-vanilla-query-order-key-case",
            "GET",
            "https://example.amazonaws.com/?Param2=value2&Param1=value1",
            "host;x-amz-date",
            "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500",
        ),
        (
            "post-vanilla",
            "POST",
            "https://example.amazonaws.com/",
            "host;x-amz-date",
            "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b",
        ),
    ],
)
def test_aws_published_vectors_are_signed_as_aws_publishes_them(
    vector: str, method: str, url: str, signed: str, signature: str
) -> None:
    """AWS's own SigV4 test-suite requests get exactly the Authorization AWS publishes."""
    request = _sent(_suite_auth(), method, url)
    assert request.headers["x-amz-date"] == "20150830T123600Z", vector
    assert request.headers["authorization"] == (
        f"AWS4-HMAC-SHA256 {SUITE_SCOPE}, SignedHeaders={signed}, Signature={signature}"
    )


def test_aws_published_session_token_vector_sends_and_signs_the_token() -> None:
    """get-vanilla-with-session-token: the token is sent as x-amz-security-token and signed."""
    keys = AwsCredentials(
        access_key_id=SUITE_KEYS.access_key_id,
        secret_access_key=SUITE_KEYS.secret_access_key,
        session_token=SUITE_TOKEN,
        source="the AWS test suite",
    )
    request = _sent(_suite_auth(keys), "GET", "https://example.amazonaws.com/")
    assert request.headers["x-amz-security-token"] == SUITE_TOKEN
    assert request.headers["authorization"] == (
        f"AWS4-HMAC-SHA256 {SUITE_SCOPE}, SignedHeaders=host;x-amz-date;x-amz-security-token, "
        "Signature=07ec1639c89043aa0e3e2de82b96708f198cceab042d4a97044c66dd9f74e7f8"
    )


@st.composite
def _model_ids(draw: st.DrawFn) -> str:
    """Bedrock model ids as people write them, and odder ones (ARNs, spaces, non-ASCII)."""
    realistic = st.from_regex(
        r"(us\.|eu\.)?[a-z]{2,10}\.[a-z0-9]{1,8}(-[a-z0-9]{1,8}){0,5}(-v[0-9]:[0-9]{1,3})?",
        fullmatch=True,
    )
    odd = st.text(alphabet=string.ascii_letters + string.digits + ".-_:~/+ %é", min_size=1)
    model = draw(st.one_of(realistic, odd))
    return model if model.strip(".") else f"x{model}"  # "." and ".." are path segments


_ENDPOINTS = st.sampled_from(
    [
        "https://bedrock-runtime.{region}.amazonaws.com",
        "https://bedrock-runtime-fips.{region}.amazonaws.com",
        "http://127.0.0.1:8080",
        "https://gateway.example:8443/aws/bedrock",
    ]
)
_KEY_CHARACTERS = string.ascii_letters + string.digits + "/+="


@given(
    model=_model_ids(),
    region=st.from_regex(r"[a-z]{2}(-gov)?-[a-z]{4,9}-[1-9]", fullmatch=True),
    endpoint=_ENDPOINTS,
    body=st.binary(max_size=2048),
    key_id=st.from_regex(r"(AKIA|ASIA)[A-Z0-9]{16}", fullmatch=True),
    secret=st.text(alphabet=_KEY_CHARACTERS, min_size=1, max_size=40),
    token=st.one_of(st.just(""), st.text(alphabet=_KEY_CHARACTERS, min_size=1, max_size=300)),
    note=st.one_of(st.none(), st.text(alphabet=string.ascii_letters + "  \t-", max_size=30)),
    when=st.datetimes(
        min_value=datetime(2000, 1, 1),
        max_value=datetime(2099, 12, 31),
        timezones=st.builds(timezone, st.timedeltas(timedelta(hours=-14), timedelta(hours=14))),
    ),
)
def test_signature_matches_botocore_for_any_converse_request(
    model: str,
    region: str,
    endpoint: str,
    body: bytes,
    key_id: str,
    secret: str,
    token: str,
    note: str | None,
    when: datetime,
) -> None:
    """Any Converse request is signed exactly as botocore (AWS's Python SDK) signs it.

    ``note`` is an extra ``x-amz-*`` header (runs of spaces and tabs in it): signed as well.
    """
    keys = AwsCredentials(
        access_key_id=key_id, secret_access_key=secret, session_token=token, source="test"
    )
    url = f"{endpoint.format(region=region)}/model/{quote(model, safe='')}/converse"
    sent = _sent(
        SigV4Auth(keys, region, clock=lambda: when),
        "POST",
        url,
        content=body,
        headers=JSON if note is None else {**JSON, "x-amz-meta-note": note},
    )

    expected = _botocore_signed(str(sent.url), body, keys, region, when, note=note)
    assert sent.headers["authorization"] == expected["Authorization"]
    assert sent.headers["x-amz-date"] == expected["X-Amz-Date"]
    assert sent.headers.get("x-amz-security-token") == expected.get("X-Amz-Security-Token")


def _botocore_signed(
    url: str,
    body: bytes,
    keys: AwsCredentials,
    region: str,
    when: datetime,
    *,
    note: str | None = None,
) -> dict[str, str]:
    """The headers botocore's SigV4 signer sets on the same request at the same time."""
    headers = {"Content-Type": "application/json"}
    if note is not None:
        headers["X-Amz-Meta-Note"] = note
    request = AWSRequest(method="POST", url=url, data=body, headers=headers)
    signer = BotocoreSigV4Auth(
        Credentials(keys.access_key_id, keys.secret_access_key, keys.session_token or None),
        "bedrock",
        region,
    )
    with pytest.MonkeyPatch.context() as patch:  # botocore reads the clock itself
        patch.setattr(
            "botocore.auth.get_current_datetime",
            lambda *_, **__: when.astimezone(UTC).replace(tzinfo=None),
        )
        signer.add_auth(request)
    return dict(request.headers.items())


def test_a_model_id_with_a_colon_travels_once_encoded() -> None:
    """The ':' of a model id goes on the wire as %3A (and botocore agrees with the signature)."""
    keys = AwsCredentials(access_key_id="AKIDEXAMPLE", secret_access_key="s", source="test")
    url = f"https://bedrock-runtime.us-east-1.amazonaws.com/model/{quote(MODEL, safe='')}/converse"
    sent = _sent(SigV4Auth(keys, "us-east-1", clock=lambda: SUITE_TIME), "POST", url, headers=JSON)
    assert sent.url.raw_path == b"/model/anthropic.claude-3-5-sonnet-20241022-v2%3A0/converse"
    expected = _botocore_signed(str(sent.url), b"", keys, "us-east-1", SUITE_TIME)
    assert sent.headers["authorization"] == expected["Authorization"]


def _stepping_clock(start: datetime, step: timedelta) -> Callable[[], datetime]:
    times: Iterator[datetime] = (start + n * step for n in range(1_000_000))
    return lambda: next(times)


def test_a_retry_is_signed_afresh() -> None:
    """The transport's retry after a 503 goes out with a new date and signature."""
    keys = AwsCredentials(
        access_key_id="AKIDEXAMPLE", secret_access_key="s", session_token="t", source="test"
    )
    clock = _stepping_clock(SUITE_TIME, timedelta(seconds=2))
    auth = SigV4Auth(keys, "us-east-1", clock=clock)
    transport = HttpTransport(clock=FakeClock())
    url = "https://bedrock.example/model/m/converse"
    with respx.mock() as mock:
        route = mock.post(url).mock(side_effect=[httpx.Response(503), httpx.Response(200, json={})])
        _, sent = transport.exchange(
            url, headers={}, body=JsonBody({"m": 1}), provider="bedrock", auth=auth
        )
    transport.close()

    assert (sent, route.call_count) == (2, 2)
    seen = [
        (
            call.request.headers.get_list("x-amz-date"),
            call.request.headers.get_list("authorization"),
        )
        for call in route.calls
    ]
    (first_date, first_auth), (second_date, second_auth) = seen
    assert (first_date, second_date) == (["20150830T123600Z"], ["20150830T123602Z"])
    assert len(first_auth) == len(second_auth) == 1
    assert first_auth != second_auth


def test_secrets_never_appear_in_repr_or_str() -> None:
    """Neither the secret key nor the session token shows in repr/str of the values that hold them."""
    keys = AwsCredentials(
        access_key_id="AKIDEXAMPLE",
        secret_access_key="SECRET-KEY-VALUE",
        session_token="SESSION-TOKEN-VALUE",
        source="AWS_ACCESS_KEY_ID",
    )
    auth = SigV4Auth(keys, "eu-west-1")
    for shown in (repr(keys), str(keys), repr(auth), str(auth)):
        assert "SECRET-KEY-VALUE" not in shown
        assert "SESSION-TOKEN-VALUE" not in shown
    assert "AKIDEXAMPLE" in repr(keys)
    assert keys.secrets == ("SECRET-KEY-VALUE", "SESSION-TOKEN-VALUE")


def test_without_a_token_only_the_secret_key_is_a_secret() -> None:
    """Credentials without a session token list only the secret key to redact."""
    keys = AwsCredentials(access_key_id="AKID", secret_access_key="s3cr3t", source="test")
    assert keys.secrets == ("s3cr3t",)
