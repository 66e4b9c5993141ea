"""How many tokens some bytes will cost a model: at most, and likely, from the bytes alone.

Byte-pair tokenizers (o200k_base, cl100k_base) cut text into pieces (a word with the space
before it, up to three digits, a run of punctuation or of spaces), then merge each piece's
bytes into tokens. So each byte is charged by its kind and the next byte's, in eighths of a
token (a whole one for a byte that ends a piece or is not ASCII text), the charges fitted (a
linear program) to stay 3 % above both tokenizers on every kind of text in the corpus of
tests/unit/test_token_estimate.py: prose, code and JSON come out at about 1.35 times their
real count, CJK and emoji at two. What pairs cannot see costs more than it is charged: runs
of random lower-case letters up to 1.75 times, words two spaces apart 1.3 times, a letter
or a syllable repeated (``rrrr``, ``hahaha``) up to four times. A byte
whose next is not in view is charged the most, so splitting never lowers the estimate.

The pass is C loops: ``translate`` to a hex digit per kind, ``unhexlify`` into pairs (from
even and odd offsets), ``translate`` to charges, and ``adler32``, whose low half sums them.
"""

from __future__ import annotations

import binascii
import math
import string
import zlib
from typing import NamedTuple


class TokenEstimate(NamedTuple):
    """Tokens some bytes will cost: ``most`` never below what a byte-pair tokenizer counts
    (o200k_base, cl100k_base); ``likely`` about what it counts on prose, code and JSON."""

    most: int
    likely: int


_ROOM = 3  # tokens added to each estimate: a handful of bytes can be rare words entirely
_LIKELY = 1.34  # the charges of English prose, code and JSON over their real count
_SLICE = 16_000  # bytes charged at once; their 8,000 pairs of each parity, at most 8
# eighths each, sum to less than Adler-32's modulus, 65,521

_PUNCTUATION = "".join(sorted(set(string.punctuation) - set("\"'`([{<)]}>.,;:!?_")))
_KINDS = {  # each kind of byte (named by a hex digit, its index), its bytes, its groups
    "other": ("", ()),  # not ASCII text, and the end of the bytes: a token a byte
    "vowel": ("aeiou", ("lower", "letter")),
    "common": ("tnshrdlc", ("lower", "letter")),  # English's commonest consonants
    "rare": ("bfgjkmpqvwxyz", ("lower", "letter")),
    "upper": (string.ascii_uppercase, ("letter",)),
    "digit": (string.digits, ()),
    "space": (" ", ("blank",)),
    "tab": ("\t\v\f", ("blank",)),
    "newline": ("\n", ("break",)),
    "return": ("\r", ("break",)),
    "quote": ("\"'`", ("mark",)),
    "open": ("([{<", ("mark",)),
    "close": (")]}>", ("mark",)),
    "stop": (".,;:!?", ("mark",)),
    "underscore": ("_", ("mark",)),
    "symbol": (_PUNCTUATION, ("mark",)),
}

_WHOLE = 8  # a byte that ends a piece (any pair not below): a token
_CHARGES = {  # eighths of a token for a byte of a kind (or group) followed by another
    # Letters inside a word: pairs frequent in English cheap, in random strings dear.
    # A lower-case letter followed by a capital ends a piece (o200k_base), as does a
    # letter followed by anything else but a quote.
    ("vowel", "vowel"): 1,
    ("vowel", "common"): 1,
    ("vowel", "rare"): 0,
    ("common", "vowel"): 1,
    ("common", "common"): 1,
    ("common", "rare"): 2,
    ("rare", "vowel"): 1,
    ("rare", "common"): 4,
    ("rare", "rare"): 8,
    ("upper", "vowel"): 1,
    ("upper", "common"): 8,
    ("upper", "rare"): 8,
    ("upper", "upper"): 8,
    ("lower", "quote"): 1,  # "don't", a word ending a string
    ("digit", "digit"): 3,  # a token per three digits at most
    ("blank", "letter"): 0,  # a space starts the word's piece
    ("blank", "mark"): 1,
    ("space", "space"): 2,  # indentation: one piece, however long
    ("tab", "tab"): 2,
    ("return", "return"): 8,  # a bare CR is a token of its own, however many follow
    ("break", "break"): 1,  # blank lines: "\r\n" repeated costs a token each four bytes
    ("mark", "break"): 4,  # ".\n" is one piece
    ("mark", "letter"): 8,
    ("underscore", "letter"): 2,  # snake_case
    ("open", "letter"): 6,
    ("mark", "mark"): 7,
    ("stop", "stop"): 2,  # "...", ".,"
    ("open", "open"): 4,  # "]]]]": a token each two
    ("close", "close"): 4,
    ("quote", "quote"): 4,
    ("underscore", "underscore"): 8,
}


def _charge(first: str, then: str) -> int:
    """The charge of the most particular pair of their names or groups."""
    for one in (first, *_KINDS[first][1]):
        for other in (then, *_KINDS[then][1]):
            if (one, other) in _CHARGES:
                return _CHARGES[one, other]
    return _WHOLE


def _kind(byte: int) -> int:
    kinds = enumerate(chars for chars, _ in _KINDS.values())
    return next((index for index, chars in kinds if chr(byte) in chars), 0)


_NAMES = list(_KINDS)
_HEX_DIGITS = b"0123456789abcdef"
_HEX = bytes(_HEX_DIGITS[_kind(byte)] for byte in range(256))  # a byte to its kind's digit
_PAIR_CHARGES = bytes(_charge(_NAMES[pair >> 4], _NAMES[pair & 15]) for pair in range(256))
_END = _HEX_DIGITS[:1]  # what follows the last byte: a kind that ends every piece


def _eighths(data: bytes, after: bytes) -> int:
    digits = data.translate(_HEX) + (after.translate(_HEX) or _END)
    even = binascii.unhexlify(memoryview(digits)[: len(digits) // 2 * 2])
    odd = binascii.unhexlify(memoryview(digits)[1 : 1 + len(data) // 2 * 2])
    sums = (zlib.adler32(pairs.translate(_PAIR_CHARGES)) & 0xFFFF for pairs in (even, odd))
    return sum(sums) - 2  # each Adler-32 sum starts at one


def estimate_tokens(data: bytes | memoryview) -> TokenEstimate:
    """Splittable: the ``most`` of any slices of ``data`` sum to at least the whole's."""
    view = memoryview(data).cast("B")
    if not view:
        return TokenEstimate(0, 0)
    eighths = sum(
        _eighths(bytes(view[start : start + _SLICE]), bytes(view[start + _SLICE :][:1]))
        for start in range(0, len(view), _SLICE)
    )
    return TokenEstimate(math.ceil(eighths / 8) + _ROOM, round(eighths / 8 / _LIKELY))
