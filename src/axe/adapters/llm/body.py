"""A JSON request body whose big string (the memory log) is streamed from bytes.

A 100 MiB memory log would otherwise exist three more times at once: decoded to ``str``,
serialised by ``json.dumps``, and encoded again. Here the log is escaped in slices, straight
from its bytes, and the body's length is worked out by a first pass, so the request still
carries a ``Content-Length`` (some proxies refuse chunked uploads) and the peak memory is
the file plus one slice.

The text sent equals ``memory.decode("utf-8", "replace")``: slices end after a newline or
before a UTF-8 lead byte, where decoding in pieces and decoding whole cannot differ.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from json.encoder import encode_basestring
from typing import Any

from attrs import frozen

SLICE_BYTES = 1 << 17  # in the CPU's caches while escaped; few enough writes to send
_SIMPLE_ESCAPES = (
    (b"\\", b"\\\\"),
    (b'"', b'\\"'),
    (b"\n", b"\\n"),
    (b"\r", b"\\r"),
    (b"\t", b"\\t"),
)
_OTHER_CONTROLS = bytes(c for c in range(0x20) if c not in b"\n\r\t")
_SIMPLY_ESCAPED = b'\\"\n\r\t'
_NEEDS_NO_ESCAPE = bytes(c for c in range(0x80) if c >= 0x20 and c not in b'\\"') + bytes(
    range(0x80, 0x100)
)


def is_plain_ascii(data: bytes) -> bool:
    """ASCII with no control characters but newline, return and tab: the common case,
    which :func:`escape_slice` can escape with a few ``bytes.replace`` calls."""
    return data.isascii() and len(data.translate(None, _OTHER_CONTROLS)) == len(data)


def escape_slice(data: bytes, *, plain: bool) -> bytes:
    """``data`` as the inside of a JSON string, UTF-8 encoded, invalid bytes replaced.

    ``plain`` is :func:`is_plain_ascii` of ``data``, worked out once by the caller.
    """
    if plain:
        for raw, escaped in _SIMPLE_ESCAPES:
            if raw in data:
                data = data.replace(raw, escaped)
        return data
    text: str = encode_basestring(data.decode("utf-8", "replace"))
    return text[1:-1].encode("utf-8")


def slice_bounds(data: bytes, size: int = SLICE_BYTES) -> Iterator[tuple[int, int]]:
    """Consecutive ``(start, end)`` ranges of about ``size`` bytes that decode independently."""
    start, total = 0, len(data)
    while start < total:
        end = min(start + size, total)
        if end < total:
            newline = data.rfind(b"\n", start, end)
            end = newline + 1 if newline != -1 else _character_boundary(data, start, end)
        yield start, end
        start = end


def _is_continuation(byte: int) -> bool:
    return 0x80 <= byte < 0xC0


def _character_boundary(data: bytes, start: int, end: int) -> int:
    """``end`` moved off the middle of a UTF-8 sequence: back to its lead byte if that is
    inside the slice, else forward past its continuation bytes (at most three)."""
    back = end
    while back > start and back > end - 3 and _is_continuation(data[back]):
        back -= 1
    if back > start and not _is_continuation(data[back]):
        return back
    limit = min(end + 3, len(data))
    while end < limit and _is_continuation(data[end]):
        end += 1
    return end


@frozen
class _Slice:
    start: int
    end: int
    plain: bool


def plan_slices(data: bytes, size: int = SLICE_BYTES) -> tuple[list[_Slice], int]:
    """The slices to send and the total length they escape to, without building the text.

    In the common case (ASCII with no control characters but newline, return and tab) each
    byte that needs escaping grows by exactly one, so deleting every other byte leaves a
    short string whose length is the growth, from one C-speed pass. Otherwise each slice is
    escaped once and measured.
    """
    if data.isascii():
        special = data.translate(None, _NEEDS_NO_ESCAPE)
        if not special.translate(None, _SIMPLY_ESCAPED):
            slices = [_Slice(start, end, plain=True) for start, end in slice_bounds(data, size)]
            return slices, len(data) + len(special)
    view = memoryview(data)
    slices, total = [], 0
    for start, end in slice_bounds(data, size):
        piece = bytes(view[start:end])
        plain = is_plain_ascii(piece)
        slices.append(_Slice(start, end, plain))
        total += len(escape_slice(piece, plain=plain))
    return slices, total


def escaped_slices(data: bytes, slices: list[_Slice]) -> Iterator[bytes]:
    view = memoryview(data)
    for piece in slices:
        yield escape_slice(bytes(view[piece.start : piece.end]), plain=piece.plain)


class JsonBody:
    """``payload`` as JSON, with ``memory`` (bytes) as the value where ``MEMORY`` stands;
    without ``memory``, just ``payload`` (a small request such as Ollama's ``/api/show``)."""

    def __init__(
        self, payload: dict[str, Any], memory: bytes | None = None, slice_size: int = SLICE_BYTES
    ):
        self.marker = f"@@axe-memory-{os.urandom(8).hex()}@@"
        text = json.dumps(_substitute(payload, self.marker), ensure_ascii=False)
        head, found, tail = text.partition(self.marker)
        if bool(found) != (memory is not None):
            raise ValueError("MEMORY must stand in the payload exactly when memory is given")
        self._head = head.encode("utf-8")
        self._tail = tail.encode("utf-8")
        self._memory = memory or b""
        self._slices, escaped_length = plan_slices(self._memory, slice_size)
        self.length = len(self._head) + escaped_length + len(self._tail)

    def __iter__(self) -> Iterator[bytes]:
        if self.length <= SLICE_BYTES:  # one write for a small body, not three or more
            yield b"".join((self._head, *escaped_slices(self._memory, self._slices), self._tail))
            return
        yield self._head
        yield from escaped_slices(self._memory, self._slices)
        yield self._tail


class _Memory:
    """Placeholder type so a payload can say where the memory text goes."""


MEMORY: Any = _Memory()


def _substitute(value: Any, marker: str) -> Any:
    if value is MEMORY:
        return marker
    if isinstance(value, dict):
        return {k: _substitute(v, marker) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(v, marker) for v in value]
    return value
