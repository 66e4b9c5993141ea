"""Bounded worker threads: the one scheduler of both ``--all --jobs`` and the parts of a log.

A stop (Ctrl-C) is prompt: nothing queued starts, nobody waits for requests in flight (the
process ends without waiting for their threads); a task checks it before any change."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

from axe.application.ports import Output
from axe.domain.events import Event

if TYPE_CHECKING:  # concurrent.futures (and the logging it loads) only when work is shared
    from concurrent.futures import Future, ThreadPoolExecutor

T = TypeVar("T")
R = TypeVar("R")
E = TypeVar("E")


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


class RecordingOutput:
    """An ``Output`` that keeps every event, in order: the buffer of one agent under
    ``--jobs`` until it can be replayed, and the recorder of ``axe.testing``."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def emit(self, event: Event) -> None:
        self.events.append(event)

    def of_type(self, kind: type[E]) -> list[E]:
        """The recorded events of one kind, in order."""
        return [event for event in self.events if isinstance(event, kind)]


def ordered_map(
    items: Sequence[T],
    work: Callable[[T], R],
    *,
    jobs: int,
    stop: StopSignal,
    name: str,
    settled: Callable[[int, R], None] | None = None,
    halts: Callable[[R], bool] | None = None,
    waiting: Callable[[int, list[T]], None] | None = None,
) -> list[R | None]:
    """``work(item)`` for every item, up to ``jobs`` at once, started in item order: the
    next starts as soon as any under way is done, so one slow item holds up no other.

    ``settled(index, result)`` is called in item order, each as soon as that result and
    every one before it are in; ``waiting(done, running_items)`` before each wait. An item
    starts only once the coordinating thread has seen every result before it that was in:
    after a result ``halts`` the map nothing more starts (its place stays None), and what
    is under way is still waited for, so every result that exists is returned. An
    exception from ``work`` is raised when its turn comes; on any exception (Ctrl-C
    included) ``stop`` is set, queued work is cancelled and nothing is waited for.
    """
    from concurrent.futures import ThreadPoolExecutor  # noqa: PLC0415

    results: list[R | None] = [None] * len(items)
    pool = ThreadPoolExecutor(max(1, min(jobs, len(items))), thread_name_prefix=name)
    futures: list[Future[R]] = []
    done = 0
    halted = False
    try:
        while done < len(items):
            halted = halted or _start_more(
                pool, work, items, futures, done=done, jobs=jobs, stop=stop, halts=halts
            )
            if waiting is not None:
                waiting(done, _running(items, futures))
            _wait_for_one(futures[done:])
            halted = halted or any(_halting(future, halts) for future in futures[done:])
            done = _settle(futures, done, results, settled)
            if halted and done == len(futures):
                break
            stop.check()
    except BaseException:
        stop.requested = True
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    return results


def _start_more(
    pool: ThreadPoolExecutor,
    work: Callable[[T], R],
    items: Sequence[T],
    futures: list[Future[R]],
    *,
    done: int,
    jobs: int,
    stop: StopSignal,
    halts: Callable[[R], bool] | None,
) -> bool:
    """Starts the next items while fewer than ``jobs`` are under way; returns whether a
    finished one halts, after which nothing starts (nor after a stop)."""
    while len(futures) < len(items):
        stop.check()
        unsettled = futures[done:]
        if any(_halting(future, halts) for future in unsettled):
            return True
        if sum(not future.done() for future in unsettled) >= jobs:
            return False
        futures.append(pool.submit(work, items[len(futures)]))
    return False


def _wait_for_one(futures: list[Future[R]]) -> None:
    """Until one of ``futures`` is done, if none is."""
    from concurrent.futures import FIRST_COMPLETED, wait  # noqa: PLC0415

    if pending := [future for future in futures if not future.done()]:
        wait(pending, return_when=FIRST_COMPLETED)


def _settle(
    futures: list[Future[R]],
    done: int,
    results: list[R | None],
    settled: Callable[[int, R], None] | None,
) -> int:
    """Takes in the finished results from ``done`` on, in order; returns how many are in."""
    while done < len(futures) and futures[done].done():
        result = results[done] = futures[done].result()
        if settled is not None:
            settled(done, result)
        done += 1
    return done


def _halting(future: Future[R], halts: Callable[[R], bool] | None) -> bool:
    if not future.done():
        return False
    return future.exception() is not None or (halts is not None and halts(future.result()))


def run_in_order(
    items: Sequence[T],
    work: Callable[[T, Output, StopSignal], R],
    *,
    jobs: int,
    output: Output,
    progress: Callable[[int, list[T]], Event],
) -> list[R]:
    """``work(item, buffer, stop)`` for every item, up to ``jobs`` at once (``--all``), the
    results in item order; each item's events reach ``output`` whole and in item order, as
    soon as it and every one before it are done, and ``progress(done, running_items)``
    events between replays say what is under way."""
    stop = StopSignal()
    buffers = [RecordingOutput() for _ in items]

    def replay(index: int, _result: R) -> None:
        for event in buffers[index].events:
            output.emit(event)

    results = ordered_map(
        range(len(items)),
        lambda index: work(items[index], buffers[index], stop),
        jobs=jobs,
        stop=stop,
        name="axe-agent",
        settled=replay,
        waiting=lambda done, running: output.emit(progress(done, [items[i] for i in running])),
    )
    return [result for result in results if result is not None]


def _running(items: Sequence[T], futures: list[Future[R]]) -> list[T]:
    return [item for item, future in zip(items, futures, strict=False) if future.running()]
