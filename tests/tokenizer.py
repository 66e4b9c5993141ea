"""A stand-in for a provider's tokenizer, for loopback servers and the estimate's tests.

Shaped like the byte-pair tokenizers providers use (cl100k-style pre-tokenization: words
with their leading space, digits in threes, runs of punctuation, whitespace runs), with
a word costing one token per four letters. Real counts for English are a little lower.
"""

from __future__ import annotations

import math
import re

_PIECES = re.compile(
    r" ?[A-Za-z]+| ?[0-9]{1,3}| ?[^\sA-Za-z0-9\x80-\U0010ffff]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+|[\x80-\U0010ffff]"
)


def count_tokens(text: str) -> int:
    return sum(
        math.ceil(len(piece.strip()) / 4) if piece.strip().isalpha() and piece.isascii() else 1
        for piece in _PIECES.findall(text)
    )
