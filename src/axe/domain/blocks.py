"""A log's 32 KiB blocks, and who counts them.

Counting entries and estimating tokens are the only work gc does over every byte of a
log, and both are done a block at a time, each block on its own: the counts of a block
depend on its bytes (and its neighbours' edges) alone. So the blocks may be counted in any
order, anywhere, with the same result. Where is not the domain's business: the use case is
handed a :class:`Spread` (the composition root's may count half of a big log in a second
process); :func:`in_turn`, the default, counts them here, one after another.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

BLOCK = 1 << 15  # bytes counted at once, and whose counts are kept

if TYPE_CHECKING:  # a protocol class costs every start-up its definition: for typing only
    from collections.abc import Callable
    from typing import Protocol, TypeVar

    T = TypeVar("T")

    class Spread(Protocol):
        """Calls ``count`` once for each block of ``blocks`` and gives the results in block
        order. ``count`` is pure, and its results are plain values (integers, floats and
        tuples of them): they may be worked out in another process and sent back."""

        def __call__(self, count: Callable[[int], T], blocks: range) -> list[T]: ...


def in_turn(count: Callable[[int], T], blocks: range) -> list[T]:
    """The default spread: in this process, one block after another (what a program that
    embeds the use case gets unless it hands over another)."""
    return [count(block) for block in blocks]
