"""Counting a big log's blocks on two CPUs: the :class:`~axe.domain.entries.Spread` of a run.

Estimating tokens and counting entries are C loops that hold the interpreter's lock, so a
thread cannot share them; a forked child can. It sees the log through the parent's pages
(copy-on-write: nothing is copied), counts the later half of the blocks and sends its
results back through a pipe with ``marshal``, while the parent counts the earlier half. A
100 MiB log's estimate takes half the time it did (docs/benchmarks.md, round eleven).

Only where that is safe and pays: on Linux; with one thread in the process (see
``_may_fork``); with a second CPU to run on; and with blocks enough to outweigh the fork.
Whatever goes wrong in the child (it could not start, was killed, failed), the parent
counts those blocks itself: the results never depend on where they were counted.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import select
import signal
import sys
import threading
import time
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

    Ctrl-C and SIGTERM are held from the fork until the child is reaped: one arriving
    during the fork would be raised inside an at-fork hook (``logging`` has them), which
    prints and drops it, so the run would go on to trim; or in the child before it knows it
    is one; or in the middle of the reaping, which would leave a zombie. One that comes
    ends the wait for the child's results at once, and is raised when the child is gone
    (the parent's own half, some 70 ms for 100 MiB, is counted first). The child never
    sees them: the parent stops it. (Holding them works because the process has one
    thread: see ``_may_fork``.)
    """
    if len(blocks) < least or not _may_fork():
        return [count(block) for block in blocks]
    half = len(blocks) // 2
    earlier, later = blocks[:half], blocks[half:]
    held = signal.pthread_sigmask(signal.SIG_BLOCK, ())  # as it is; a stop come is raised
    reading, writing = os.pipe()
    try:
        signal.pthread_sigmask(signal.SIG_BLOCK, _STOPS)
        child = os.fork()
    except BaseException as failed:  # no child: a process limit (counted here), or a stop
        os.close(reading)
        os.close(writing)
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
        if not isinstance(failed, OSError):
            raise
        return [count(block) for block in blocks]
    if child == 0:
        os.close(reading)
        _count_and_send(count, later, writing)
    sent: list[T] | None = None
    try:  # stops held to the end: the child is always reaped, then one that came is raised
        os.close(writing)
        counted = [count(block) for block in earlier]
        sent = _received(_unless_stopped(reading), len(later))
    finally:
        os.close(reading)
        _reap(child)
        signal.pthread_sigmask(signal.SIG_SETMASK, held)  # a stop that came is raised here
    return counted + (sent if sent is not None else [count(block) for block in later])


def _unless_stopped(reading: int) -> bytes:
    """What the child sends, or nothing once a Ctrl-C or SIGTERM is waiting (the child may
    have been stopped itself: the run must not wait on it)."""
    sent = bytearray()
    while not _STOPS & signal.sigpending():
        if select.select([reading], [], [], 0.05)[0]:
            chunk = os.read(reading, 1 << 16)
            if not chunk:
                return bytes(sent)
            sent += chunk
    return b""


def _may_fork() -> bool:
    """Linux, two CPUs or more, and one thread as the kernel counts them, which sees a
    thread started by C code too. A signal sent to the process goes to any thread not
    holding it, so with a second thread the run could not hold Ctrl-C while it forks; and
    a child of a threaded process can inherit a lock some thread held mid-update."""
    return sys.platform == "linux" and len(os.sched_getaffinity(0)) > 1 and _one_thread()


def _one_thread(linger: float = 0.002) -> bool:
    """Whether the kernel counts one thread here, waiting ``linger`` seconds at most for
    threads ``threading`` has finished with to exit (a thread just joined, as the one
    that built the client while the log was read, is still there for a moment)."""
    deadline = time.monotonic() + linger
    while len(os.listdir("/proc/self/task")) > 1:
        if threading.active_count() > 1 or time.monotonic() > deadline:
            return False
        time.sleep(0.0001)
    return True


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
    """Stop the child and wait for it (stops are held: nothing cuts the wait short and
    leaves it a zombie). Stopping it costs nothing once it has sent everything, and ends it
    whatever it was doing: the parent failed or was interrupted, or the child was itself
    stopped."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(child, signal.SIGKILL)
    os.waitpid(child, 0)
