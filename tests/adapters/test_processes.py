"""Counting blocks in two processes: the same results, in order, whatever the child does.

A fork needs a process with one thread, which pytest's may not be once other tests have
left a server's threads behind: the tests that need one run their body in a fresh
interpreter (``in_a_fresh_process``), which also checks that no child is left.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from axe.adapters.shared.processes import in_two_processes
from axe.composition import production_ports
from axe.testing import RecordingOutput

pytestmark = pytest.mark.skipif(
    sys.platform != "linux" or len(os.sched_getaffinity(0)) < 2,
    reason="a second process is used on Linux with two CPUs or more",
)

_ROOT = Path(__file__).resolve().parents[2]
_RUN = """
import os, sys
from tests.adapters import test_processes
getattr(test_processes, sys.argv[1])(*sys.argv[2:])
try:
    os.waitpid(-1, os.WNOHANG)
except ChildProcessError:
    pass
else:
    sys.exit("a child was left")
"""


def in_a_fresh_process(body: Callable[..., None], *args: str) -> str:
    """Run ``body`` (a function of this module) in a new interpreter; its stdout."""
    done = subprocess.run(
        [sys.executable, "-c", _RUN, body.__name__, *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=_ROOT,
    )
    assert (done.returncode, done.stderr) == (0, "")
    return done.stdout


def block_and_process(block: int) -> tuple[int, int, int]:
    return block, block * block, os.getpid()


def test_the_later_half_is_counted_in_a_child_and_all_come_back_in_order() -> None:
    """A big log's later blocks are counted by a second process; every block's count
    comes back, in block order, as one process would have counted them."""
    in_a_fresh_process(later_half_in_a_child)


def later_half_in_a_child() -> None:
    counted = in_two_processes(block_and_process, range(3, 12), least=2)
    assert [(block, square) for block, square, _ in counted] == [(b, b * b) for b in range(3, 12)]
    pids = [pid for _, _, pid in counted]
    assert pids[:4] == [os.getpid()] * 4
    assert len(set(pids[4:])) == 1
    assert pids[4] != os.getpid()


def test_too_few_blocks_are_counted_here() -> None:
    """A log too small to pay for a fork is counted in the run's own process."""
    counted = in_two_processes(block_and_process, range(5), least=6)
    assert {pid for _, _, pid in counted} == {os.getpid()}
    assert [block for block, _, _ in counted] == list(range(5))


def test_nothing_forks_while_another_thread_runs() -> None:
    """A child of a threaded process could inherit a lock held mid-update: no fork."""
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        counted = in_two_processes(block_and_process, range(8), least=2)
    finally:
        release.set()
        other.join()
    assert {pid for _, _, pid in counted} == {os.getpid()}


def test_nothing_forks_while_a_thread_unknown_to_threading_runs() -> None:
    """A thread started by C code (here ``_thread``, which ``threading`` does not count)
    could take a Ctrl-C the run holds while it forks: no fork."""
    import _thread

    release, ended = threading.Lock(), threading.Lock()
    release.acquire()
    ended.acquire()

    def wait() -> None:
        release.acquire()
        ended.release()

    _thread.start_new_thread(wait, ())
    try:
        counted = in_two_processes(block_and_process, range(8), least=2)
    finally:
        release.release()
        ended.acquire()
    assert {pid for _, _, pid in counted} == {os.getpid()}


def test_blocks_a_failed_child_did_not_send_are_counted_here() -> None:
    """A child that fails costs the run time, never a count: the run counts its blocks."""
    in_a_fresh_process(failed_child)


def failed_child() -> None:
    parent = os.getpid()

    def fails_in_the_child(block: int) -> tuple[int, int]:
        if os.getpid() != parent:
            raise RuntimeError("the child fails")
        return block, os.getpid()

    counted = in_two_processes(fails_in_the_child, range(6), least=2)
    assert counted == [(block, parent) for block in range(6)]


def test_blocks_a_killed_child_did_not_send_are_counted_here() -> None:
    """A child killed mid-count (the OOM killer, a stray signal) sends nothing usable:
    the run counts its blocks itself."""
    in_a_fresh_process(killed_child)


def killed_child() -> None:
    parent = os.getpid()

    def killed_in_the_child(block: int) -> tuple[int, int]:
        if os.getpid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)
        return block, os.getpid()

    counted = in_two_processes(killed_in_the_child, range(6), least=2)
    assert counted == [(block, parent) for block in range(6)]


def test_a_failure_here_is_raised_and_the_child_is_stopped(tmp_path: Path) -> None:
    """The child is stopped (it would otherwise count on) and waited for before the error
    reaches the caller."""
    in_a_fresh_process(failure_here, str(tmp_path / "counted on"))
    assert not (tmp_path / "counted on").exists()


def failure_here(marker: str) -> None:
    parent = os.getpid()

    def fails_here_child_counts_on(block: int) -> int:
        if os.getpid() == parent:
            raise ValueError("here")
        import time

        time.sleep(1)
        Path(marker).touch()
        return block

    with pytest.raises(ValueError, match="here"):
        in_two_processes(fails_here_child_counts_on, range(4), least=2)


def test_no_process_to_fork_counts_everything_here() -> None:
    """At the process limit, the run counts every block itself and leaks no descriptor."""
    in_a_fresh_process(no_process_to_fork)


def no_process_to_fork() -> None:
    def no_more_processes() -> int:
        raise BlockingIOError("Resource temporarily unavailable")

    os.fork = no_more_processes
    descriptors = len(os.listdir("/proc/self/fd"))
    counted = in_two_processes(block_and_process, range(6), least=2)
    assert {pid for _, _, pid in counted} == {os.getpid()}
    assert len(os.listdir("/proc/self/fd")) == descriptors  # the pipe was closed


def test_the_child_is_deaf_to_ctrl_c_and_sigterm() -> None:
    """A Ctrl-C at a terminal reaches the child too: it counts on and sends its blocks (the
    run, interrupted, stops it), never running the parent's code."""
    in_a_fresh_process(deaf_child)


def deaf_child() -> None:
    parent = os.getpid()

    def interrupted_in_the_child(block: int) -> tuple[int, int]:
        if os.getpid() != parent:
            os.kill(os.getpid(), signal.SIGINT)
            os.kill(os.getpid(), signal.SIGTERM)
        return block, os.getpid()

    counted = in_two_processes(interrupted_in_the_child, range(6), least=2)
    assert [block for block, _ in counted] == list(range(6))
    assert {pid for _, pid in counted[3:]} - {parent}


@pytest.mark.parametrize("when", ["before", "after"])
def test_ctrl_c_as_the_process_forks_stops_the_run(when: str) -> None:
    """A Ctrl-C that comes while the run forks (a hook of ``logging`` runs then) is not
    lost: the run is interrupted, with nothing printed, and the child is stopped and waited
    for."""
    assert in_a_fresh_process(stop_during_fork, when) == "interrupted\n"


def stop_during_fork(when: str) -> None:
    """``when``: "before", the stop comes as the fork begins; "after", as it ends."""
    send = lambda: os.kill(os.getpid(), signal.SIGINT)  # noqa: E731
    os.register_at_fork(**{"before" if when == "before" else "after_in_parent": send})
    try:
        in_two_processes(lambda block: block, range(8), least=2)
    except KeyboardInterrupt:
        print("interrupted")


def test_a_stop_that_comes_while_the_run_fails_is_raised_once_the_child_is_gone() -> None:
    """Ctrl-C and SIGTERM are held while the child is reaped, so a zombie is never left;
    one that came meanwhile is raised after, and they are not held any longer."""
    assert in_a_fresh_process(stop_while_failing) == "interrupted\nFalse\n"


def stop_while_failing() -> None:
    parent = os.getpid()

    def fails_with_a_stop_pending(block: int) -> int:
        if os.getpid() == parent:
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
            os.kill(parent, signal.SIGINT)  # pending until the run lets stops through again
            raise ValueError("here")
        return block

    try:
        in_two_processes(fails_with_a_stop_pending, range(8), least=2)
    except KeyboardInterrupt:
        print("interrupted")
    print(signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, ()))


def test_a_run_counts_its_blocks_in_two_processes(tmp_path: Path) -> None:
    """The composition root hands the use case this spread."""
    environ = {"XDG_CONFIG_HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path)}
    with production_ports(environ, RecordingOutput()) as ports:
        assert ports.spread is in_two_processes
