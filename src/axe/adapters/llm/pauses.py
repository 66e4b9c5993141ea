"""A provider's "slow down" shared by every worker that talks to it.

With ``--jobs`` or a log analysed in parts, several threads send to one provider at once.
When one of them gets a 429 with ``retry-after``, the provider means the client, not that
one request: every thread waits out the pause before its next request to that provider,
instead of each discovering the limit with a refused request of its own.
"""

from __future__ import annotations

import threading

from axe.application.ports import Clock


class SharedPauses:
    """Per-provider times before which no request may start, on the run's clock."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._until: dict[str, float] = {}
        self._lock = threading.Lock()

    def hold(self, provider: str, seconds: float) -> None:
        """No request to ``provider`` for ``seconds`` from now (a longer pause wins)."""
        with self._lock:
            until = self._clock.monotonic() + seconds
            self._until[provider] = max(self._until.get(provider, until), until)

    def wait(self, provider: str, *, deadline: float) -> bool:
        """Sleep out ``provider``'s pause; False (without sleeping) if it outlasts
        ``deadline``, so the caller can report a timeout instead of waiting for nothing."""
        with self._lock:
            remaining = self._until.get(provider, 0.0) - self._clock.monotonic()
        if remaining <= 0:
            return True
        if self._clock.monotonic() + remaining >= deadline:
            return False
        self._clock.sleep(remaining)
        return True
