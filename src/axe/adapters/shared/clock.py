"""The machine's clock, behind the :class:`axe.application.ports.Clock` port."""

from __future__ import annotations

import time


class SystemClock:
    """The system's time; composition builds one per run."""

    now = staticmethod(time.time)
    monotonic = staticmethod(time.monotonic)
    sleep = staticmethod(time.sleep)
