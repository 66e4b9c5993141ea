"""Bounded worker threads, the one scheduler of both ``--all --jobs`` and the parts of a log.

Daemon threads: after a stop nobody waits for a request in flight, which may take minutes."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from typing import Generic, TypeVar

from attrs import define, field

from axe.application.ports import Output
from axe.application.stops import StopSignal
from axe.domain.events import AgentFinished, Event

T = TypeVar("T")
R = TypeVar("R")
E = TypeVar("E")


@define(eq=False)
class RecordingOutput:
    """An ``Output`` that keeps every event, in order (an agent's buffer under ``--jobs``)."""

    events: list[Event] = field(factory=list)

    def emit(self, event: Event) -> None:
        self.events.append(event)

    def of_type(self, kind: type[E]) -> list[E]:
        return [event for event in self.events if isinstance(event, kind)]


def ordered_map(
    items: Sequence[T],
    work: Callable[[T], R],
    *,
    jobs: int,
    stop: StopSignal,
    name: str = "axe-worker",
    settled: Callable[[int, R], None] | None = None,
    halts: Callable[[R], bool] | None = None,
    waiting: Callable[[int, list[T]], None] | None = None,
) -> list[R | None]:
    """``work(item)`` for every item, up to ``jobs`` at once, started in item order.

    ``settled(index, result)`` is called in item order; ``waiting(done, running_items)``
    before each wait. After a result ``halts`` nothing more starts (its place stays None).
    An exception from ``work`` is raised in its turn, and sets ``stop``.
    """
    results: list[R | None] = [None] * len(items)
    runs = _Runs(items, work, jobs, name, halts)
    try:
        while runs.done < len(items):
            runs.start_more(stop)
            if waiting is not None:
                waiting(runs.done, runs.running())
            runs.wait_for_one()
            for index, result in runs.settle():
                results[index] = result
                if settled is not None:
                    settled(index, result)
            if runs.over():
                break
            stop.check()
    except BaseException:
        stop.requested = True
        raise
    return results


@define
class _Runs(Generic[T, R]):
    """The items started so far, each on a daemon thread, and how many are settled."""

    items: Sequence[T]
    work: Callable[[T], R]
    jobs: int
    name: str
    halts: Callable[[R], bool] | None
    futures: list[Future[R]] = field(factory=list)
    done: int = 0
    halted: bool = False

    def start_more(self, stop: StopSignal) -> None:
        while not self.halted and len(self.futures) < len(self.items):
            unsettled = self.futures[self.done :]
            if sum(not future.done() for future in unsettled) >= self.jobs:
                return
            stop.check()
            self.halted = any(map(self._halting, unsettled))
            if not self.halted:
                self.futures.append(self._started(self.items[len(self.futures)]))

    def running(self) -> list[T]:
        return [item for item, f in zip(self.items, self.futures, strict=False) if f.running()]

    def wait_for_one(self) -> None:
        if pending := [future for future in self.futures[self.done :] if not future.done()]:
            wait(pending, return_when=FIRST_COMPLETED)

    def settle(self) -> list[tuple[int, R]]:
        self.halted = self.halted or any(map(self._halting, self.futures[self.done :]))
        settled = []
        while self.done < len(self.futures) and self.futures[self.done].done():
            settled.append((self.done, self.futures[self.done].result()))
            self.done += 1
        return settled

    def over(self) -> bool:
        return self.halted and self.done == len(self.futures)

    def _halting(self, future: Future[R]) -> bool:
        if not future.done():
            return False
        return future.exception() is not None or (
            self.halts is not None and self.halts(future.result())
        )

    def _started(self, item: T) -> Future[R]:
        future: Future[R] = Future()

        def run() -> None:
            future.set_running_or_notify_cancel()
            try:
                future.set_result(self.work(item))
            except BaseException as error:  # noqa: BLE001  (handed to the coordinating thread)
                future.set_exception(error)

        threading.Thread(target=run, name=self.name, daemon=True).start()
        return future


def run_in_order(
    items: Sequence[T],
    work: Callable[[T, Output, StopSignal], R],
    *,
    jobs: int,
    output: Output,
    stop: StopSignal,
    progress: Callable[[int, list[T]], Event],
) -> list[R]:
    """``work(item, buffer, stop)`` for every item, up to ``jobs`` at once; each item's
    events reach ``output`` whole and in item order, ``progress`` events between them.

    On a stop, the changes under way are finished, then every item whose ``AgentFinished``
    was recorded is replayed: no agent whose memory file changed goes unreported.
    """
    buffers = [RecordingOutput() for _ in items]

    def replay(index: int, _result: object = None) -> None:
        stop.begin_change()  # a stop that comes while an item's events are written waits
        recorded, buffers[index].events = buffers[index].events, []  # replayed once
        for event in recorded:
            output.emit(event)
        stop.end_change()

    try:
        results = ordered_map(
            range(len(items)),
            lambda index: work(items[index], buffers[index], stop),
            jobs=jobs,
            stop=stop,
            name="axe-agent",
            settled=replay,
            waiting=lambda done, running: output.emit(progress(done, [items[i] for i in running])),
        )
    except BaseException:
        stop.halt()
        for index, buffer in enumerate(buffers):
            if buffer.of_type(AgentFinished):
                replay(index)
        raise
    return [result for result in results if result is not None]
