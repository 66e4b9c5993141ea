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
text unlike what was counted.

Counting costs about what reading costs: one ``translate`` of the bytes to their kinds
(letter, digit, space, other), a second that drops the letters (in prose and logs the most
frequent kind: letters are the bytes dropped, the other kinds are counted in the few left),
and for the runs (words, numbers) the kinds read two bytes at a time as UTF-16 (a copy at
memory speed) and a ``str.count`` of the code unit "this kind twice", in both alignments:
a slice holds as many runs of a kind as bytes of it less neighbours of it. 64 KiB slices,
so a 100 MiB log is never copied whole.
"""

from __future__ import annotations

import codecs
import math
import string

from attrs import frozen

_SLICE = 1 << 16  # bytes counted at once: small enough to stay in the CPU's caches
_LETTER, _DIGIT, _SPACE = 1, 2, 3  # kinds of byte; 0: any other, a whole token each
_KINDS = bytes(  # the ``translate`` table: each byte to its kind
    _LETTER * (char in string.ascii_letters)
    + _DIGIT * (char in string.digits)
    + _SPACE * (char in " \t")
    for char in map(chr, range(256))
)
_TWICE = {kind: chr(kind * 0x101) for kind in (_LETTER, _DIGIT, _SPACE)}  # as one UTF-16 unit
_as_units = codecs.utf_16_le_decode
_LETTERS = bytes([_LETTER])


def _runs(windows: tuple[str, str], kind: int, count: int, first: bool) -> int:
    """How many runs of ``kind`` start in a slice holding ``count`` bytes of it (not one
    continuing from the byte before, when ``first``, the slice's first byte, is of it and
    so was that byte): a run of n bytes has n - 1 neighbours, and ``windows`` hold every
    two neighbouring bytes once."""
    if not count:
        return 0
    twice = _TWICE[kind]
    return count - windows[0].count(twice) - windows[1].count(twice) - first


Classes = tuple[float, ...]  # the estimate by kind of text: see _slice_counts


def _slice_counts(data: bytes, previous: int, unpaired: bool) -> tuple[list[int], bool]:
    """What one slice holds of each kind of text (word starts, letters, number starts,
    digits, spaces, pairs of spaces, one-token bytes), and whether its last run of spaces
    leaves one unpaired; counted as in one piece with the text before it: ``previous`` is
    the byte before (a word crossing the boundary counts once), ``unpaired`` whether the
    run of spaces reaching the slice left one to pair with its first."""
    kinds = data.translate(_KINDS)
    # Every two neighbouring bytes as one UTF-16 code unit, from even and from odd offsets.
    # (The odd offsets copied first: decoding an unaligned buffer takes five times as long.)
    windows = _as_units(kinds, None, False)[0], _as_units(kinds[1:], None, False)[0]
    # Newlines, punctuation, controls and non-ASCII bytes: one token each at most. Counted
    # with digits and spaces among the bytes left once the letters are dropped (one pass,
    # where a count of each kind over every byte took three).
    rest = kinds.translate(None, _LETTERS)
    digits, spaces = rest.count(_DIGIT), rest.count(_SPACE)
    whole_tokens, letters = len(rest) - digits - spaces, len(data) - len(rest)
    before = _KINDS[previous]
    words = _runs(windows, _LETTER, letters, kinds[0] == _LETTER == before)
    numbers = _runs(windows, _DIGIT, digits, kinds[0] == _DIGIT == before)
    joined = unpaired and kinds[0] == _SPACE  # that space pairs with the slice's first
    neighbours = spaces > 1 and (_TWICE[_SPACE] in windows[0] or _TWICE[_SPACE] in windows[1])
    pairs = joined + (kinds.count(b"\3\3", joined) if neighbours else 0)
    trailing = len(kinds) - len(kinds.rstrip(b"\3"))  # the run of spaces the slice ends in
    counts = [words, letters, numbers, digits, spaces, pairs, whole_tokens]
    return counts, (trailing - (joined and trailing == len(data))) % 2 == 1


Tally = tuple[tuple[int, ...], int, bool, int]
"""What some bytes counted to (see :func:`_slice_counts`), with what counting on needs:
``(counts, last byte, whether their last run of spaces left one unpaired, length)``. A
plain tuple: a ``NamedTuple`` class costs every start-up 1.6 M instructions."""
_NOTHING: Tally = ((0,) * 7, ord("\n"), False, 0)  # counted as a text's start is


def tally(data: bytes | memoryview, after: Tally | None = None) -> Tally:
    """``data`` counted on from ``after`` (from nothing: the start of a text): the same as
    counting what ``after`` counted and ``data`` in one piece, so a span known to fit is not
    counted again to try a longer one (however a log is sliced, its counts are those of one
    pass)."""
    view = memoryview(data)
    total, previous, unpaired, length = after or _NOTHING
    for start in range(0, len(view), _SLICE):
        piece = bytes(view[start : start + _SLICE])
        counts, unpaired = _slice_counts(piece, previous, unpaired)
        total = tuple(a + b for a, b in zip(total, counts, strict=True))
        previous = piece[-1]
    return total, previous, unpaired, length + len(view)


def tally_classes(counted: Tally) -> Classes:
    """The estimate by kind of text of what ``counted`` counted."""
    counts, _, _, length = counted
    words, letters, numbers, digits, spaces, pairs, whole_tokens = map(float, counts)
    whole_tokens += length > 0  # a lone space at the very end is a token
    return (words, letters / 4, numbers, digits / 3, spaces / 4, pairs, whole_tokens)


def token_classes(data: bytes | memoryview) -> Classes:
    """:func:`estimate_tokens` by kind of text, each an upper estimate of its own share;
    slicing changes nothing: the same as counting the bytes in one piece."""
    return tally_classes(tally(data))


def classes_sum(*parts: Classes) -> Classes:
    return tuple(map(sum, zip(*parts, strict=True)))


def estimate_tokens(data: bytes | memoryview) -> int:
    """An upper estimate of the tokens ``data`` becomes (see the module docstring)."""
    return math.ceil(sum(token_classes(data)))


def certainly_under(data: bytes, tokens: int) -> bool:
    """Whether ``data`` is estimated below ``tokens``, deciding without a pass over a large
    ``data``: every byte costs the estimate at least a quarter token, so anything of
    ``4 * tokens`` bytes or more is not under."""
    return len(data) < 4 * tokens and estimate_tokens(data) < tokens


def most_tokens(size: int) -> float:
    """The most ``size`` bytes can be estimated at, deciding without a pass over them: a
    digit alone is a number, a token and a third, and no byte costs more; and the token
    any text ends in."""
    return size * 4 / 3 + 1


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
