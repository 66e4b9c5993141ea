"""A memory log read once for planning, in units: its entries and, when it does not start
with one, the text before the first (unit 0, the *preamble*). Running sums of the token
estimate every 32 KiB make any run of units cost two short estimates and a subtraction."""

from __future__ import annotations

import bisect

from axe.domain.entries import ENTRY_START, HEADER
from axe.domain.token_estimate import TokenEstimate, estimate_tokens

BLOCK = 1 << 15  # bytes between two running sums


class LogIndex:
    """The units of ``log``: ``bounds[i]`` is where unit ``i`` begins, ``bounds[-1]`` the
    log's end; ``preamble`` is whether unit 0 is text before the first entry."""

    def __init__(self, log: bytes) -> None:
        self.log = log
        self.preamble = bool(log) and not log.startswith(HEADER)
        starts = [found.end() for found in ENTRY_START.finditer(log)]
        self.bounds = [0, *starts, len(log)] if log else [0]
        self._view = memoryview(log)
        self._sums: list[TokenEstimate] | None = None  # the estimate up to each block's start
        self._heads: dict[int, TokenEstimate] = {}  # from an offset to the next block's start

    @property
    def units(self) -> int:
        return len(self.bounds) - 1

    def entries_in(self, first: int, last: int) -> int:
        return last - first - (self.preamble and first == 0 < last)

    def unit_at(self, offset: int) -> int:
        return min(bisect.bisect_right(self.bounds, offset), self.units) - 1

    def cost(self, first: int, last: int) -> TokenEstimate:
        return self.span_cost(self.bounds[first], self.bounds[last])

    def span_cost(self, start: int, end: int) -> TokenEstimate:
        """Never below the estimate in one piece (a split's is at least the whole's)."""
        if end - start <= 2 * BLOCK:
            return estimate_tokens(self._view[start:end])
        inner, outer = -(-start // BLOCK), end // BLOCK
        sums = self._running_sums()
        if (head := self._heads.get(start)) is None:
            head = self._heads[start] = estimate_tokens(self._view[start : inner * BLOCK])
        tail = estimate_tokens(self._view[outer * BLOCK : end])
        return TokenEstimate(
            head.most + sums[outer].most - sums[inner].most + tail.most,
            head.likely + sums[outer].likely - sums[inner].likely + tail.likely,
        )

    def _running_sums(self) -> list[TokenEstimate]:
        if self._sums is None:
            most = likely = 0
            self._sums = [TokenEstimate(0, 0)]
            for start in range(0, len(self.log) - BLOCK + 1, BLOCK):
                block = estimate_tokens(self._view[start : start + BLOCK])
                most, likely = most + block.most, likely + block.likely
                self._sums.append(TokenEstimate(most, likely))
        return self._sums
