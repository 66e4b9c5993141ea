"""Freeing what a finished gc replaced: small files at once, the rest off the run's path."""

from __future__ import annotations

import collections
import contextlib
import threading
import time
from collections.abc import Callable

_QUEUED_RELEASES = 4  # behind the one being freed: a few old files' space held at most
_LINGER_SECONDS = 0.1
_SMALL_BYTES = 1 << 16  # a file this small may be freed at once ...
_QUICK_SECONDS = 0.0002  # ... while freeing one takes no longer than handing it over


class LaterReleases:
    """Frees what a finished gc no longer needs (the replaced file's last descriptor, the
    replaced record), on a thread unless it is small: freeing a file's blocks costs a
    millisecond, and 2 to 3 ms more a MiB, where ext4 is mounted with ``discard`` as cloud
    disks often are (docs/benchmarks.md), and nothing gc promises waits on it, so under
    ``--all`` it overlaps the next agent's work. One thread frees them in turn, and ends
    once nothing has come for a moment (a fleet's next agent comes sooner; a program that
    keeps many stores keeps no idle threads); :meth:`wait` ends a run with nothing pending.

    Handing a free to the thread costs about 0.1 ms of switching between the two, more
    than freeing a small file costs on most disks (3 to 80 µs), so small files are freed at
    once until one of them takes longer than that: from then on, every free goes to the
    thread (docs/benchmarks.md, round ten). Under ``--jobs`` a free may also wait for the
    interpreter's lock, which counts against it: the thread takes over, as before. The
    time is the process's own monotonic clock, not the run's ``Clock``: a duration of
    microseconds, which no test's clock needs to fake but this class's own tests."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self._changed = threading.Condition()
        self._pending: collections.deque[Callable[[], object]] = collections.deque()
        self._freeing = False  # a free under way
        self._thread = False  # a thread is taking them
        self._clock = clock
        self._quick = True  # no small free has been slow yet: they are freed at once

    def release(self, free: Callable[[], object], size: int | None = None) -> None:
        """Have ``free`` called on the thread, once fewer than four wait for it; called here
        when no thread can be started (a process limit), or when it frees ``size`` bytes,
        few enough, and frees are quick. Raises nothing ``free`` raises: a failure to free
        is no failure of the gc that finished."""
        if size is not None and size <= _SMALL_BYTES and self._quick:
            started = self._clock()
            try:
                _free_quietly(free)
            finally:
                if self._clock() - started > _QUICK_SECONDS:  # never back: threads race here
                    self._quick = False
            return
        with self._changed:
            self._changed.wait_for(lambda: len(self._pending) < _QUEUED_RELEASES)
            self._pending.append(free)
            self._changed.notify_all()
            if self._thread:
                return
            self._thread = True
        try:
            threading.Thread(target=self._free_in_turn, daemon=True).start()
        except RuntimeError:
            self._free_in_turn(linger=0.0)
        except BaseException:  # Ctrl-C before the thread ran: wait() frees what is left
            self._stopped()
            raise

    def wait(self) -> None:
        """Until everything released so far has been freed (a small file freed at once is
        freed before its release returns); freed here if no thread is taking them (one was
        stopped by Ctrl-C or SIGTERM), so the end of a run never waits for a thread that
        is not there."""
        with self._changed:
            orphaned = bool(self._pending) and not self._thread
            if orphaned:
                self._thread = True
        if orphaned:
            self._free_in_turn(linger=0.0)
        with self._changed:
            self._changed.wait_for(lambda: not self._pending and not self._freeing)

    def _free_in_turn(self, linger: float = _LINGER_SECONDS) -> None:
        try:
            while True:
                with self._changed:
                    if not self._changed.wait_for(lambda: self._pending, linger):
                        self._thread = False
                        return
                    free = self._pending.popleft()
                    self._freeing = True
                    self._changed.notify_all()
                try:
                    _free_quietly(free)
                finally:
                    with self._changed:
                        self._freeing = False
                        self._changed.notify_all()
        except BaseException:  # Ctrl-C while freeing on the caller's thread
            self._stopped()
            raise

    def _stopped(self) -> None:
        with self._changed:
            self._thread = False
            self._changed.notify_all()


def _free_quietly(free: Callable[[], object]) -> None:
    with contextlib.suppress(Exception):  # it holds nothing a user needs
        free()


def release(
    releases: LaterReleases | None, free: Callable[[], object], size: int | None = None
) -> None:
    """``free`` (of ``size`` bytes, when known) through ``releases``, or at once when None."""
    if releases is None:
        free()
    else:
        releases.release(free, size)
