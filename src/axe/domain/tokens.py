"""How many tokens some bytes can cost a model, estimated from the bytes alone.

Tokenizers differ by model and none can be shipped here, so the estimate is built to stay
above what byte-pair tokenizers produce (the budget is a hard cap, not a hope): every word
costs at least one token plus one per four letters, every run of digits one plus one per
three digits (tokenizers group at most three), every punctuation mark, newline, control
and non-ASCII byte a whole token, a space a quarter (it usually joins the next word) and a
run of spaces one more per pair. English prose comes out at roughly 1.5-2 times its real
count; a provider that reports its own count (a "prompt is too long: N tokens" refusal, or
the prompt size of a reply) lets the analysis bring the estimate down towards the truth
(:class:`Calibration`), kind of text by kind of text, so that it stays an upper bound for
text unlike what was counted. Counting is a handful of C-speed passes (``translate``,
``count``) over 1 MiB slices, so a 100 MiB log takes a fraction of a second, no larger copy.
"""

from __future__ import annotations

import math
import string

from attrs import frozen

_LETTER, _DIGIT, _SPACE, _NEWLINE, _HIGH, _OTHER = b"a0 nhp"
_SLICE = 1 << 20


_KINDS = (
    (string.ascii_letters, _LETTER),
    (string.digits, _DIGIT),
    (" \t", _SPACE),
    ("\r\n", _NEWLINE),
)
_CLASSES = bytes(  # a byte is an ASCII letter, digit, space or newline, above ASCII, or other
    next((kind for chars, kind in _KINDS if chr(byte) in chars), _HIGH if byte >= 0x80 else _OTHER)
    for byte in range(256)
)
# Second mappings that keep one class and flatten the rest, so the starts of words (or of
# numbers) are the occurrences of one two-byte pattern.
_ONLY_LETTERS = bytes(c if c == _LETTER else _OTHER for c in range(256))
_ONLY_DIGITS = bytes(c if c == _DIGIT else _OTHER for c in range(256))


def _starts(classes: bytes, keep: bytes, kind: int, previous: int) -> int:
    """Runs of ``kind`` in ``classes``: a run crossing in from the previous slice is not new."""
    flat = classes.translate(keep)
    runs = flat.count(bytes([_OTHER, kind]))
    return runs + (flat[:1] == bytes([kind]) and previous != kind)


Classes = tuple[float, ...]  # the estimate by kind of text: see _slice_classes


def _slice_classes(classes: bytes, previous: int) -> Classes:
    """Tokens for one slice already mapped to byte classes, by kind of text (word starts,
    letters, number starts, digits, spaces, runs of spaces, one-token bytes); ``previous``
    is the class of the byte before the slice, so a word crossing the boundary counts once."""
    letters, digits, spaces = classes.count(b"a"), classes.count(b"0"), classes.count(b" ")
    # Newlines, punctuation, controls and non-ASCII bytes: one token each at most.
    whole_tokens = len(classes) - letters - digits - spaces
    return (
        _starts(classes, _ONLY_LETTERS, _LETTER, previous),
        letters / 4,
        _starts(classes, _ONLY_DIGITS, _DIGIT, previous),
        digits / 3,
        spaces / 4,
        classes.count(b"  "),
        whole_tokens,
    )


def token_classes(data: bytes | memoryview) -> Classes:
    """:func:`estimate_tokens` by kind of text, each an upper estimate of its own share."""
    view = memoryview(data)
    total = [0.0] * 7
    previous = _OTHER
    for start in range(0, len(view), _SLICE):
        classes = bytes(view[start : start + _SLICE]).translate(_CLASSES)
        for index, share in enumerate(_slice_classes(classes, previous)):
            total[index] += share
        previous = classes[-1]
    total[-1] += len(view) > 0  # a lone space at the very end is a token
    return tuple(total)


def classes_sum(*parts: Classes) -> Classes:
    return tuple(sum(shares) for shares in zip(*parts, strict=True))


def estimate_tokens(data: bytes | memoryview) -> int:
    """An upper estimate of the tokens ``data`` becomes (see the module docstring)."""
    return math.ceil(sum(token_classes(data)))


def certainly_under(data: bytes, tokens: int) -> bool:
    """Whether ``data`` is estimated below ``tokens``, deciding without a pass over a large
    ``data``: every byte costs the estimate at least a quarter token, so anything of
    ``4 * tokens`` bytes or more is not under."""
    return len(data) < 4 * tokens and estimate_tokens(data) < tokens


@frozen
class Calibration:
    """Upper bounds of a provider's count, learnt from requests it counted.

    Each kind of text costs the provider at most what the estimate gives it (the estimate's
    design), so a request of ``tokens`` real tokens and estimated classes ``c`` bounds the
    real cost of any other text ``d``: the most that d could cost with per-kind ratios in
    [0, 1] that fit c within ``tokens`` (a fractional knapsack). Prose calibrated on prose
    comes out at the truth; text of another kind keeps its full estimate. The bound is the
    smallest any sample gives; without samples it is the estimate.
    """

    samples: tuple[tuple[Classes, int], ...] = ()

    def bound(self, classes: Classes) -> float:
        raw = sum(classes)
        return min([raw, *(_most(classes, sample, tokens) for sample, tokens in self.samples)])

    def typical(self, classes: Classes) -> float:
        """What ``classes`` likely cost, at the ratio of the last request counted (for
        telling a person; :meth:`bound` is what sizes requests)."""
        if not self.samples:
            return sum(classes)
        sample, tokens = self.samples[-1]
        return sum(classes) * tokens / max(sum(sample), 1e-9)

    def least(self, classes: Classes) -> float:
        """What ``classes`` would cost at the lowest ratio of count to estimate among the
        requests counted (for a verdict that must not come early: :meth:`bound` may
        still fall as requests are counted)."""
        ratios = [tokens / max(sum(sample), 1e-9) for sample, tokens in self.samples]
        return sum(classes) * min([1.0, *ratios])

    def learnt(self, classes: Classes, tokens: int) -> Calibration:
        """With one more counted request (the last few are kept: the bound is their min)."""
        return Calibration((*self.samples, (classes, tokens))[-8:])


def _most(text: Classes, sample: Classes, tokens: int) -> float:
    """The most ``text`` can cost if ``sample`` cost ``tokens``: ratios (at most 1, or the
    sample's own when the estimate fell short of it) spent on the kinds that weigh most in
    ``text`` for the least in ``sample``."""
    ceiling = max(1.0, tokens / max(sum(sample), 1e-9))
    left = float(tokens)
    most = 0.0
    order = sorted(range(len(text)), key=lambda k: -text[k] / sample[k] if sample[k] else -math.inf)
    for kind in order:
        if sample[kind] <= 0:
            most += text[kind] * ceiling
            continue
        ratio = min(ceiling, left / sample[kind])
        most += text[kind] * ratio
        left -= sample[kind] * ratio
        if left <= 0:
            break
    return most
