"""The token estimate against real byte-pair tokenizers (o200k_base and cl100k_base, offline
through bpe-openai), over generated text of every kind a memory log holds: ``most`` never
below either count, at most 1.6 times it on English prose, code and JSON, ``likely`` within
20 % of it there, and estimates of slices cut anywhere summing to at least the whole's count.

The ratios hold for documents, not for a word: "a" and "zq" are one and two tokens whatever
the estimate says, so the 1.6 and 20 % bounds are asserted on documents of at least a
kibibyte (the few tokens every estimate adds are then a few per cent); the lower bound holds
on everything, down to a single byte.
"""

from __future__ import annotations

import itertools
import random

import bpe_openai
from hypothesis import given
from hypothesis import strategies as st

from axe.domain.token_estimate import TokenEstimate, estimate_tokens
from tests.corpus import COMMON_WORDS, EMOJI, KINDS, RARE_WORDS, text_bytes

_ENCODINGS = [bpe_openai.get_encoding(name) for name in ("o200k_base", "cl100k_base")]
_DENSE = ["prose", "code", "json"]  # the kinds the estimate must also be close on


def real_counts(data: bytes) -> list[int]:
    """What each tokenizer counts for ``data`` sent as a provider gets it: decoded as
    UTF-8 with each bad byte replaced, special-token text counted as text."""
    text = data.decode("utf-8", "replace")
    return [len(encoding.encode_ordinary(text)) for encoding in _ENCODINGS]


def document(kind: str, seed: int, least: int = 0) -> bytes:
    """Generated text of ``kind``: one document, or as many as make ``least`` bytes, a
    line apart."""
    rng = random.Random(seed)
    parts = [text_bytes(KINDS[kind](rng))]
    while sum(map(len, parts)) < least:
        parts.append(text_bytes(KINDS[kind](rng)))
    return b"\n".join(parts)


seeds = st.integers(0, 2**32 - 1)


@given(st.sampled_from(sorted(KINDS)), seeds, st.data())
def test_most_is_never_below_what_a_tokenizer_counts(
    kind: str, seed: int, data: st.DataObject
) -> None:
    """A request sized by the estimate's ``most`` never holds more tokens than it says,
    whatever the log holds: hex, base64, CJK, emoji, numbers, code, JSON, prose, memory
    logs, mixtures, invalid UTF-8, whole or any piece of it."""
    text = document(kind, seed)
    start = data.draw(st.integers(0, len(text)))
    piece = text[start : data.draw(st.integers(start, len(text)))]
    for sample in (text, piece):
        assert estimate_tokens(sample).most >= max(real_counts(sample)), (kind, sample[:200])


@given(st.sampled_from(_DENSE), seeds)
def test_most_is_at_most_1_6_times_the_count_on_prose_code_and_json(kind: str, seed: int) -> None:
    """The estimate does not waste a budget: on English prose, code and JSON ``most`` is at
    most 1.6 times what either tokenizer counts."""
    text = document(kind, seed, least=1024)
    assert estimate_tokens(text).most <= 1.6 * min(real_counts(text)), kind


@given(st.sampled_from(_DENSE), seeds)
def test_likely_is_within_a_fifth_of_the_count_on_prose_code_and_json(kind: str, seed: int) -> None:
    """What gc tells a person a log will likely cost is within 20 % of what either
    tokenizer counts, on English prose, code and JSON."""
    text = document(kind, seed, least=1024)
    likely = estimate_tokens(text).likely
    for count in real_counts(text):
        assert 0.8 * count <= likely <= 1.2 * count, (kind, likely, count)


@given(st.sampled_from(sorted(KINDS)), seeds, st.lists(st.floats(0, 1), max_size=8))
def test_slices_cut_anywhere_sum_to_at_least_the_whole_count(
    kind: str, seed: int, cuts: list[float]
) -> None:
    """A log estimated block by block or entry by entry is never under-counted: for slices
    cut at any bytes (inside a UTF-8 sequence too), the sum of their ``most`` is at least
    what a tokenizer counts for the whole."""
    text = document(kind, seed)
    offsets = sorted({0, len(text), *(round(cut * len(text)) for cut in cuts)})
    pieces = [text[start:end] for start, end in itertools.pairwise(offsets)]
    assert sum(estimate_tokens(piece).most for piece in pieces) >= max(real_counts(text))


def test_long_logs_are_counted_across_the_estimates_own_slices() -> None:
    """A log longer than the bytes counted at once (megabytes, mixed kinds) is estimated
    above both counts and a view of its bytes as the bytes."""
    rng = random.Random(41)
    text = b"".join(document(rng.choice(sorted(KINDS)), rng.randrange(2**32)) for _ in range(60))
    estimate = estimate_tokens(text)
    assert len(text) > 100_000
    assert estimate.most >= max(real_counts(text))
    assert estimate_tokens(memoryview(text)) == estimate


def test_a_word_alone_is_never_under_counted() -> None:
    """An entry of one word is estimated above its count however rare the word: the
    English words of the corpus, capitalised, in capitals, quoted, and its emoji."""
    words = [*COMMON_WORDS, *RARE_WORDS, *(word.upper() for word in RARE_WORDS), *EMOJI]
    for word in words:
        for text in (word, f" {word}", f"{word.capitalize()}.", f'"{word}"'):
            assert estimate_tokens(text.encode()).most >= max(real_counts(text.encode())), text


def test_nothing_costs_nothing() -> None:
    """An empty log costs no tokens."""
    assert estimate_tokens(b"") == TokenEstimate(most=0, likely=0)


def test_runs_of_line_ends_brackets_and_quotes_are_never_under_counted() -> None:
    """Blank lines (LF, CRLF, or bare CRs), closing brackets of deep JSON and runs of
    quotes: each is a token every few bytes to a tokenizer, and never more than gc says."""
    for piece in ["\n", "\r\n", "\r", "\n\n", "]", "}", ")", "[", "{", "(", "'", '"', "`"]:
        for repeats in (2, 7, 50, 300):
            data = (piece * repeats).encode()
            assert estimate_tokens(data).most >= max(real_counts(data)), (piece, repeats)
