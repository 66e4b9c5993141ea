"""A JSON request body whose big string (the memory log) is escaped from its bytes, a slice
at a time, as it is sent.

Made whole, a 100 MiB log would exist four times at once: the file's bytes, decoded to
``str``, serialised by ``json.dumps``, and encoded again. Here only the bytes and one
escaped slice do. The body's length is counted beforehand without escaping (for ASCII) so
the request still carries a ``Content-Length`` (some proxies refuse chunked uploads).

The text sent equals ``memory.decode("utf-8", "replace")``: slices end after a newline or
before a UTF-8 lead byte, where decoding in pieces and decoding whole cannot differ.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from json.encoder import encode_basestring
from typing import Any

SLICE_BYTES = 1 << 17  # in the CPU's caches while escaped; few enough writes to send
_UNESCAPED_ASCII = bytes(c for c in range(0x20, 0x80) if c not in b'"\\')
_SHORT_ESCAPES = b'"\\\n\r\t\b\f'  # two bytes each; other control characters six (\u0001)
MEMORY: Any = object()  # stands in a payload where the log goes


class JsonBody:
    """``payload`` as JSON, with ``memory`` (bytes) as the value where ``MEMORY`` stands;
    without ``memory``, just ``payload`` (a small request such as Ollama's ``/api/show``).
    ``length`` is the body's size in bytes; iterating gives the bytes, again each time."""

    def __init__(
        self, payload: dict[str, Any], memory: bytes | None = None, slice_size: int = SLICE_BYTES
    ) -> None:
        marker = f"@@axe-memory-{os.urandom(8).hex()}@@"
        text = json.dumps(payload, ensure_ascii=False, default=lambda _: marker)
        head, found, tail = text.partition(marker)
        if bool(found) != (memory is not None):
            raise ValueError("MEMORY must stand in the payload exactly when memory is given")
        self._head, self._tail = head.encode(), tail.encode()
        self._memory = memory or b""
        self._slices = list(_slice_bounds(self._memory, slice_size))
        escaped = sum(_escaped_length(self._memory[start:end]) for start, end in self._slices)
        self.length = len(self._head) + escaped + len(self._tail)

    def __iter__(self) -> Iterator[bytes]:
        yield self._head
        for start, end in self._slices:
            yield _escaped(self._memory[start:end])
        yield self._tail


def _escaped(data: bytes) -> bytes:
    """``data`` as the inside of a JSON string, UTF-8 encoded, invalid bytes replaced."""
    return encode_basestring(data.decode("utf-8", "replace"))[1:-1].encode()


def _escaped_length(data: bytes) -> int:
    """``len(_escaped(data))``; for ASCII, from the bytes that need escaping alone."""
    if not data.isascii():
        return len(_escaped(data))
    special = data.translate(None, _UNESCAPED_ASCII)
    return len(data) + len(special) + 4 * len(special.translate(None, _SHORT_ESCAPES))


def _slice_bounds(data: bytes, size: int) -> Iterator[tuple[int, int]]:
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
