"""Bounded worker threads, shared by the parts of one log and the agents of ``--all``.

Two rules hold wherever work runs concurrently. Output is ordered: each task's events are
kept until it and every task before it are done, then replayed whole, so what a listener
sees is exactly what a sequential run would show, whatever the timing. And a stop (Ctrl-C)
is prompt: nothing queued starts, nobody waits for requests in flight (the command line
ends the process without waiting for the threads that send them), and a task checks the
stop before it changes anything.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, TypeVar

from axe.application.ports import Output
from axe.domain.events import Event

if TYPE_CHECKING:  # concurrent.futures (and the logging it loads) only when work is shared
    from concurrent.futures import Future, ThreadPoolExecutor

T = TypeVar("T")
R = TypeVar("R")


class Stopped(Exception):  # noqa: N818  (a signal, not an error: the run was interrupted)
    """The run was asked to stop; nothing more is sent or trimmed."""


class StopSignal:
    """Set once by the coordinating thread, read by the workers between steps."""

    def __init__(self) -> None:
        self.requested = False

    def check(self) -> None:
        """Raise :class:`Stopped` if a stop was asked for."""
        if self.requested:
            raise Stopped


@contextlib.contextmanager
def worker_pool(size: int, name: str) -> Iterator[ThreadPoolExecutor]:
    """Up to ``size`` worker threads. On an exception (a failure, Ctrl-C) queued work is
    cancelled and running work is not waited for."""
    from concurrent.futures import ThreadPoolExecutor  # noqa: PLC0415

    pool = ThreadPoolExecutor(max_workers=size, thread_name_prefix=name)
    try:
        yield pool
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


class EventBuffer:
    """An ``Output`` that keeps one task's events until they can be replayed in order."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def emit(self, event: Event) -> None:
        self.events.append(event)


def run_in_order(
    items: Sequence[T],
    work: Callable[[T, Output, StopSignal], R],
    *,
    jobs: int,
    output: Output,
    progress: Callable[[int, list[T]], Event],
) -> list[R]:
    """``work(item, buffer, stop)`` for every item, up to ``jobs`` at once.

    Each item's events reach ``output`` whole and in item order, as soon as that item and
    every one before it are done; between replays, ``progress(done, running_items)``
    events report what is under way. Returns the results in item order.
    """
    from concurrent.futures import FIRST_COMPLETED, wait  # noqa: PLC0415

    stop = StopSignal()
    buffers = [EventBuffer() for _ in items]
    results: list[R] = []
    with worker_pool(jobs, "axe-agent") as pool:
        futures = [
            pool.submit(work, item, buffer, stop)
            for item, buffer in zip(items, buffers, strict=True)
        ]
        try:
            while len(results) < len(futures):
                output.emit(progress(len(results), _running(items, futures)))
                pending = [future for future in futures[len(results) :] if not future.done()]
                if pending:
                    wait(pending, return_when=FIRST_COMPLETED)
                while len(results) < len(futures) and futures[len(results)].done():
                    for event in buffers[len(results)].events:
                        output.emit(event)
                    results.append(futures[len(results)].result())
        except BaseException:
            stop.requested = True
            raise
    return results


def _running(items: Sequence[T], futures: list[Future[R]]) -> list[T]:
    return [item for item, future in zip(items, futures, strict=True) if future.running()]
