"""Freeing what a finished gc replaced, off the run's path."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import queue

_QUEUED_RELEASES = 4


class LaterReleases:
    """Frees on a thread what a finished gc no longer needs (the replaced file's last
    descriptor, the replaced record): freeing a file's blocks costs a millisecond, and 3 ms
    more a MiB, where ext4 is mounted with ``discard`` as cloud disks often are
    (docs/benchmarks.md), and nothing gc promises waits on it, so under ``--all`` it
    overlaps the next agent's work. One thread frees them in turn; a release waits only
    when a few are already queued, so a fleet never holds many old files' space at once;
    :meth:`wait` ends a run with none pending."""

    def __init__(self) -> None:
        self._starting = threading.Lock()
        self._queue: queue.Queue[Callable[[], object]] | None = None

    def release(self, free: Callable[[], object]) -> None:
        with self._starting:
            if self._queue is None:
                import queue  # noqa: PLC0415  (runs that trim only: start-up matters)

                self._queue = queue.Queue(maxsize=_QUEUED_RELEASES)
                threading.Thread(
                    target=self._free_in_turn, args=(self._queue,), daemon=True
                ).start()
        self._queue.put(free)

    def wait(self) -> None:
        if self._queue is not None:
            self._queue.join()

    @staticmethod
    def _free_in_turn(queued: queue.Queue[Callable[[], object]]) -> None:
        while True:
            free = queued.get()
            with contextlib.suppress(OSError):  # what is freed holds nothing a user needs
                free()
            queued.task_done()


def release(releases: LaterReleases | None, free: Callable[[], object]) -> None:
    """``free`` through ``releases``, or at once when None."""
    if releases is None:
        free()
    else:
        releases.release(free)
