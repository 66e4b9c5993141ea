"""The one scheduler of parts and of ``--all --jobs``: bounded, in order, never idle for
the slowest."""

from __future__ import annotations

import threading
import time

from axe.application.stops import StopSignal
from axe.application.workers import ordered_map


def test_a_slow_first_item_holds_up_no_other_worker() -> None:
    """With two at once, items behind a slow first one start as soon as the other worker
    is free, not when the first ends (a wave of parts waits on no single answer); results
    still come back, and are settled, in item order, and never more than two run."""
    first_may_end = threading.Event()
    running, most = [0], [0]
    guard = threading.Lock()

    def work(item: int) -> int:
        with guard:
            running[0] += 1
            most[0] = max(most[0], running[0])
        if item == 0:
            assert first_may_end.wait(5), "the items after the first never started"
        elif item == 3:
            first_may_end.set()  # reached only if items 1, 2 and 3 ran while 0 was running
        with guard:
            running[0] -= 1
        return item * 10

    settled: list[int] = []
    results = ordered_map(
        list(range(5)),
        work,
        jobs=2,
        stop=StopSignal(),
        name="test",
        settled=lambda index, _result: settled.append(index),
    )
    assert results == [0, 10, 20, 30, 40]
    assert settled == [0, 1, 2, 3, 4]
    assert most[0] <= 2


def test_nothing_starts_after_a_result_that_halts() -> None:
    """A failure stops what has not started, whatever order results come in: what was
    under way is waited for and kept, the rest stays None."""
    started: list[int] = []
    guard = threading.Lock()

    def work(item: int) -> str:
        with guard:
            started.append(item)
        return "fail" if item == 1 else "ok"

    results = ordered_map(
        list(range(6)),
        work,
        jobs=1,
        stop=AfterEachStart(started),
        name="test",
        halts=lambda result: result == "fail",
    )
    assert results == ["ok", "fail", None, None, None, None]
    assert started == [0, 1]


class AfterEachStart(StopSignal):
    """A stop signal whose check, made before each start, first lets the item started
    before it finish: the scheduler then always sees a finished result it may have to
    halt on, as it does whenever a worker is faster than the scheduler's loop."""

    def __init__(self, started: list[int]) -> None:
        super().__init__()
        self.started = started
        self.checks = 0

    def check(self) -> None:
        deadline = time.monotonic() + 5
        while len(self.started) < self.checks and time.monotonic() < deadline:
            time.sleep(0.001)
        time.sleep(0.01)  # and its result is in
        self.checks += 1
        super().check()
