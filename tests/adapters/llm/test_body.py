"""The streamed JSON body: same text as decoding the whole log, exact Content-Length."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from axe.adapters.llm.body import MEMORY, JsonBody

awkward_bytes = st.lists(
    st.sampled_from(
        [
            b"\n",
            b"\r\n",
            b'"',
            b"\\",
            b"\t",
            b"\x00",
            b"\x1f",
            b"\x7f",
            b"\xe2\x82\xac",
            b"\xf0\x9f\x98\x80",
            b"\xff",
            b"\xc3",
            b"a",
        ]
    )
    | st.binary(max_size=6),
    max_size=60,
).map(b"".join)


@given(awkward_bytes, st.integers(min_value=1, max_value=9))
def test_body_carries_the_log_decoded_with_replacement(memory: bytes, slice_size: int) -> None:
    """Any log, invalid UTF-8 and all, reaches the provider as text, with exact Content-Length."""
    body = JsonBody({"model": "m", "messages": [{"content": MEMORY}]}, memory, slice_size)
    raw = b"".join(body)
    assert json.loads(raw)["messages"][0]["content"] == memory.decode("utf-8", "replace")
    assert body.length == len(raw)


def test_non_ascii_travels_as_utf8_not_escapes() -> None:
    """Non-ASCII text travels as UTF-8 bytes, not as JSON escapes, so requests stay compact."""
    raw = b"".join(JsonBody({"c": MEMORY}, "café ✓".encode()))
    assert "café ✓".encode() in raw


def test_other_payload_fields_are_plain_json() -> None:
    """The prompt and settings beside the log arrive as plain JSON, quotes and newlines intact."""
    raw = b"".join(JsonBody({"system": 'say "hi"\n', "c": MEMORY, "t": 0.3}, b"x"))
    assert json.loads(raw) == {"system": 'say "hi"\n', "c": "x", "t": 0.3}
