"""Counting a big log's blocks on two CPUs: the :class:`~axe.domain.blocks.Spread` of a run.

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


def in_two_processes(
    count: Callable[[int], T], blocks: range, *, least: int = _WORTH_FORKING
) -> list[T]:
    """``count`` of each block, half of them in a child process when there are at least
    ``least`` and it may fork; in block order."""
    if len(blocks) < least or not _may_fork():
        return [count(block) for block in blocks]
    half = len(blocks) // 2
    earlier, later = blocks[:half], blocks[half:]
    reading, writing = os.pipe()
    try:
        child = os.fork()
    except OSError:  # a process limit, or no memory for one more
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
            counted = [count(block) for block in earlier]
            sent = _received(pipe.read(), len(later))
    finally:
        _reap(child, ended=sent is not None)
    return counted + (sent if sent is not None else [count(block) for block in later])


def _may_fork() -> bool:
    return (
        sys.platform == "linux"
        and threading.active_count() == 1
        and len(os.sched_getaffinity(0)) > 1
    )


def _count_and_send(count: Callable[[int], T], blocks: range, writing: int) -> NoReturn:
    """The child's whole life: it never returns into the parent's code, runs no exit
    handler and flushes none of the buffers it inherited."""
    status = 1
    try:
        with os.fdopen(writing, "wb") as pipe:
            pipe.write(marshal.dumps([count(block) for block in blocks]))
        status = 0
    finally:
        os._exit(status)


def _received(payload: bytes, expected: int) -> list[Any] | None:
    """The child's results, or None if it did not send them all."""
    try:
        results = marshal.loads(payload)  # noqa: S302  (from our own child, by a private pipe)
    except (EOFError, ValueError, TypeError):
        return None
    return results if isinstance(results, list) and len(results) == expected else None


def _reap(child: int, *, ended: bool) -> None:
    """Wait for the child to exit, stopping it first unless it sent everything: the parent
    failed or was interrupted, or the child did not finish its work."""
    if not ended:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signal.SIGKILL)
    os.waitpid(child, 0)
