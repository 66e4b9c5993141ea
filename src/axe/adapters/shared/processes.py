"""Counting a big log's blocks on two CPUs: the :class:`~axe.domain.entries.Spread` of a run.

Estimating tokens and counting entries are C loops that hold the interpreter's lock, so a
thread cannot share them; a forked child can. It sees the log through the parent's pages
(copy-on-write: nothing is copied), counts the later half of the blocks and sends its
results back through a pipe with ``marshal``, while the parent counts the earlier half. A
100 MiB log's estimate takes half the time it did (docs/benchmarks.md, round eleven).

Only where that is safe and pays: on Linux; with no other thread running, since a child
of a threaded process can inherit a lock that some thread held mid-update; with a second
CPU to run on; and with blocks enough to outweigh the fork. Whatever goes wrong in the
child (it could not start, was killed, failed), the parent counts those blocks itself:
the results never depend on where they were counted.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

T = TypeVar("T")

_WORTH_FORKING = 512  # blocks (16 MiB): 40 ms of estimate, against 2 to 5 ms to fork a run
_STOPS = {signal.SIGINT, signal.SIGTERM}


def in_two_processes(
    count: Callable[[int], T], blocks: range, *, least: int = _WORTH_FORKING
) -> list[T]:
    """``count`` of each block, half of them in a child process when there are at least
    ``least`` and it may fork; in block order.

    Ctrl-C and SIGTERM wait while the process forks: one arriving during the fork would be
    raised inside an at-fork hook (``logging`` has them), which prints and drops it, so the
    run would go on to trim; or in the child before it knows it is one. They are raised in
    the parent once the child is under way, and the child never sees them: the parent
    stops it.
    """
    if len(blocks) < least or not _may_fork():
        return [count(block) for block in blocks]
    half = len(blocks) // 2
    earlier, later = blocks[:half], blocks[half:]
    reading, writing = os.pipe()
    held = signal.pthread_sigmask(signal.SIG_BLOCK, _STOPS)
    try:
        child = os.fork()
    except OSError:  # a process limit, or no memory for one more
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
        os.close(reading)
        os.close(writing)
        return [count(block) for block in blocks]
    if child == 0:
        os.close(reading)
        _count_and_send(count, later, writing)
    os.close(writing)
    sent: list[T] | None = None
    try:
        with os.fdopen(reading, "rb") as pipe:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)  # a stop that came is raised here
            counted = [count(block) for block in earlier]
            sent = _received(pipe.read(), len(later))
    finally:
        _reap(child)
    return counted + (sent if sent is not None else [count(block) for block in later])


def _may_fork() -> bool:
    """Linux, two CPUs or more, and no other Python thread (one started by C code is not
    seen: a program that embeds gc and runs such threads should hand its use case
    ``entries.in_turn``)."""
    return (
        sys.platform == "linux"
        and threading.active_count() == 1
        and len(os.sched_getaffinity(0)) > 1
    )


def _count_and_send(count: Callable[[int], T], blocks: range, writing: int) -> NoReturn:
    """The child's whole life, deaf to Ctrl-C and SIGTERM: it never returns into the
    parent's code, runs no exit handler and flushes none of the buffers it inherited."""
    status = 1
    try:
        with os.fdopen(writing, "wb") as pipe:
            pipe.write(marshal.dumps([count(block) for block in blocks]))
        status = 0
    finally:
        os._exit(status)


def _received(payload: bytes, expected: int) -> list[Any] | None:
    """The child's results, or None if it did not send them all (their type is whatever
    ``count`` gives: marshal keeps it)."""
    try:
        results = marshal.loads(payload)  # noqa: S302  (from our own child, by a private pipe)
    except (EOFError, ValueError, TypeError):
        return None
    return results if isinstance(results, list) and len(results) == expected else None


def _reap(child: int) -> None:
    """Stop the child and wait for it, with Ctrl-C and SIGTERM held until it is gone (an
    interrupted wait would leave it a zombie). Stopping it costs nothing once it has sent
    everything, and ends it whatever it was doing: the parent failed or was interrupted, or
    the child was itself stopped."""
    held = signal.pthread_sigmask(signal.SIG_BLOCK, _STOPS)
    try:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
