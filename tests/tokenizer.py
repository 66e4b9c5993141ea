"""A stand-in for a provider's tokenizer, for loopback servers and the estimate's tests.

Shaped like the byte-pair tokenizers providers use (cl100k-style pre-tokenization: words
with their leading space, digits in threes, runs of punctuation, whitespace runs), with
a word costing one token per four letters. Real counts for English are a little lower.

A memory log is counted entry by entry, each entry once a process: no piece spans a
newline followed by ``#`` (a piece holding a newline ends with it), so a text's count is
the sum of the counts of its parts split there. A loopback counts a whole log, then each
part of it; this way it counts each entry once, and answers nearly as quickly as a
provider that refuses before any inference (the bench's ten-window log spent 0.12 s of
its critical path counting the log it was about to refuse).
"""

from __future__ import annotations

import functools
import math
import re

_PIECES = re.compile(
    r" ?[A-Za-z]+| ?[0-9]{1,3}| ?[^\sA-Za-z0-9\x80-\U0010ffff]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+|[\x80-\U0010ffff]"
)
_ENTRY_STARTS = re.compile(r"(?<=\n)(?=#)")


def count_tokens(text: str) -> int:
    return sum(map(_count_once, _ENTRY_STARTS.split(text)))


def count_pieces(text: str) -> int:
    """The count, straight from the pieces: what :func:`count_tokens` must equal."""
    return sum(
        math.ceil(len(piece.strip()) / 4) if piece.strip().isalpha() and piece.isascii() else 1
        for piece in _PIECES.findall(text)
    )


_count_once = functools.lru_cache(maxsize=1 << 17)(count_pieces)
