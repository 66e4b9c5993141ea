"""The machine's clock, behind the :class:`axe.application.ports.Clock` port."""

from __future__ import annotations

import time


class SystemClock:
    """``time.time``, ``time.monotonic`` and ``time.sleep``; composition builds one per run."""

    def now(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)
