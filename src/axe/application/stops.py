"""The stop signal every worker of a run shares."""

from __future__ import annotations

import threading

HALT_SECONDS = 30.0  # how long a stop waits for changes under way (trims take milliseconds)


class Stopped(Exception):  # noqa: N818  (a signal, not an error: the run was interrupted)
    """The run was asked to stop; nothing more is sent or trimmed."""


class StopSignal:
    """A stop the frontend asks for (Ctrl-C, SIGTERM, SIGHUP), seen by every worker of the run.

    A change to a memory file (a trim, the record, the report that says so) once begun is
    finished and reported; a stop that comes meanwhile waits for it.
    """

    def __init__(self) -> None:
        self.requested = False
        self._under_way = 0  # changes begun on worker threads and not yet ended
        self._ended = threading.Condition()
        self._main_changing = False
        self._deferred: BaseException | None = None
        self._halting = False

    def check(self) -> None:
        if self.requested:
            raise Stopped

    def begin_change(self) -> None:
        """Mark the start of a change that must be finished and reported.

        Raises:
            Stopped: a stop was asked for (the stop itself, on the main thread), unless it is
                being carried out (the main thread reports what finished).
        """
        if threading.current_thread() is threading.main_thread():
            self._main_changing = True  # first: a stop arriving from here on waits
            if self.requested and not self._halting:
                self._main_changing = False
                raise self._deferred or Stopped()
            return
        with self._ended:
            self.check()
            self._under_way += 1

    def end_change(self) -> None:
        """On the main thread, a stop that arrived during the change is raised now."""
        if threading.current_thread() is threading.main_thread():
            self._main_changing = False
            stop, self._deferred = self._deferred, None
            if stop is not None:
                raise stop
            return
        with self._ended:
            self._under_way -= 1
            self._ended.notify_all()

    def interrupt(self, stop: BaseException) -> None:
        """Raise ``stop`` from a signal handler now, or when the main thread's change ends;
        no lock (the main thread may hold one). Once :meth:`halt` runs, another stop is
        ignored: a second Ctrl-C cannot cut the report of finished work short."""
        self.requested = True
        if self._halting:
            return
        if not self._main_changing:
            raise stop
        self._deferred = self._deferred or stop

    def halt(self, timeout: float = HALT_SECONDS) -> None:
        self._halting = True
        with self._ended:
            self.requested = True
            self._ended.wait_for(lambda: self._under_way == 0, timeout)
