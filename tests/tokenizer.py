"""What a provider counts, for the loopback servers and the tests of gc's estimate: OpenAI's
own byte-pair encoding, o200k_base (what gpt-4o counts with), from ``bpe-openai`` (a
test-only dependency that works offline).

A memory log is counted entry by entry, each entry once a process: the encoding's pieces
never span a newline followed by ``#`` (a piece holding a newline ends with it), so a
text's count is the sum of the counts of its parts split there. A loopback counts a whole
log, then each part of it; this way it counts each entry once, and answers as quickly as
a provider that refuses before any inference.
"""

from __future__ import annotations

import functools
import re

import bpe_openai

_ENCODING = bpe_openai.get_encoding("o200k_base")
_ENTRY_STARTS = re.compile(r"(?<=\n)(?=#)")


def count_tokens(text: str) -> int:
    return sum(map(_count_once, _ENTRY_STARTS.split(text)))


@functools.lru_cache(maxsize=1 << 17)
def _count_once(piece: str) -> int:
    return len(_ENCODING.encode(piece))
