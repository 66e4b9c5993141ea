"""Real ``axe gc --archive`` processes killed, terminated or out of disk during the append:
archive + memory file is the log, byte for byte, each entry exactly once."""

from __future__ import annotations

import functools
import os
import pty
import random
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from axe.domain.entries import plan_trim
from tests.e2e.archive_kills import (
    KILL_POINTS,
    kill_at_archive_size,
    kill_point,
    stop_when,
    temp_files,
)
from tests.e2e.loopback import LoopbackLLM, loopback_llm
from tests.e2e.racing import environment, kill_after
from tests.support import INSTALLED_AXE, AxeHome, entries, entry

AXE = str(INSTALLED_AXE)

RECORD = ".fragile.md.axe-gc.analysed"  # what the last analysis left (--skip-unchanged)


@pytest.fixture
def server() -> Iterator[LoopbackLLM]:
    with loopback_llm() as llm:
        yield llm


def archive_of(path: Path) -> Path:
    return path.with_name(path.name + ".archive")


def test_sigkill_during_the_append_then_a_rerun_archives_each_entry_once(
    home: AxeHome, server: LoopbackLLM
) -> None:
    """SIGKILL at points of a 13 MB append (as the archive grows, and at random instants of
    the run); after the rerun, archive + memory file == the log, byte for byte, and nothing
    else is left beside them."""
    original = entries(150_000)
    removed = plan_trim(original, 60_000).keep_from
    home.add_agent("fragile", model="ollama/m", last_n=60_000)
    path = home.memory_path("fragile")
    env = environment({**home.env, "AXE_OLLAMA_BASE_URL": server.url})
    command = [AXE, "gc", "fragile", "--archive"]
    chance = random.Random(20261124)
    points = []
    for fraction in (0.0, 0.3, 0.7, 1.0, None, None):
        path.write_bytes(original)
        archive_of(path).unlink(missing_ok=True)
        if fraction is None:
            kill_after(command, env, chance.uniform(0.0, 1.2))
        else:
            kill_at_archive_size(command, env, archive_of(path), int(removed * fraction))
        points.append(kill_point(path, original, removed, archived_before=0))
        rerun = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        assert (rerun.returncode, rerun.stderr) == (0, ""), points[-1]
        assert archive_of(path).read_bytes() + path.read_bytes() == original, points[-1]
        assert path.read_bytes() == original[removed:], points[-1]
        assert sorted(os.listdir(path.parent)) == [RECORD, "fragile.md", "fragile.md.archive"]
    assert set(points) <= set(KILL_POINTS)


def test_the_next_gc_settles_a_killed_append_even_without_archive(
    home: AxeHome, server: LoopbackLLM
) -> None:
    """A gc killed mid-append; the next gc of that agent, without --archive and with
    nothing to trim, still takes the cut append back: the archive is as it was before."""
    original = entries(150_000)
    home.add_agent("fragile", model="ollama/m", last_n=60_000)
    path = home.memory_path("fragile")
    env = environment({**home.env, "AXE_OLLAMA_BASE_URL": server.url})
    before = entries(3, start=900_000)
    for _ in range(5):  # a busy machine may let the run get past its append first
        path.write_bytes(original)
        archive_of(path).write_bytes(before)
        command = [AXE, "gc", "fragile", "--archive"]
        kill_at_archive_size(command, env, archive_of(path), len(before) + 1)
        removed = plan_trim(original, 60_000).keep_from
        if kill_point(path, original, removed, len(before)) in KILL_POINTS[2:4]:
            break
    else:
        pytest.fail("never killed during or just after the append")
    home.add_agent("fragile", model="ollama/m", last_n=200_000)  # nothing to trim now
    rerun = subprocess.run([AXE, "gc", "fragile"], env=env, capture_output=True, check=False)
    assert rerun.returncode == 0
    assert archive_of(path).read_bytes() == before
    assert path.read_bytes() == original
    assert sorted(os.listdir(path.parent)) == [
        RECORD,
        "fragile.md",
        "fragile.md.archive",
        *temp_files(path.parent),
    ]


def sigterm_when(
    command: list[str], env: dict[str, str], path: Path, original: bytes, seen: str
) -> subprocess.CompletedProcess[str]:
    """Run ``command`` on ``path`` (holding ``original``), stop it while a file whose name
    ends with ``seen`` is beside ``path``, send SIGTERM and let it go on. If the moment
    passed unseen (a loaded machine), the directory is put back as it was, without what the
    finished run left (its archive, its ``--skip-unchanged`` record), and gc runs again (at
    most 5 times)."""

    def ready() -> bool:  # the trim's own file, while the memory file is not yet replaced
        names = os.listdir(path.parent)  # (the record's temp file, later, also ends in .tmp)
        return any(name.endswith(seen) for name in names) and path.stat().st_size == len(original)

    for _ in range(5):
        process = subprocess.Popen(
            command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        caught = stop_when(process, ready)
        if caught:
            process.send_signal(signal.SIGTERM)
            process.send_signal(signal.SIGCONT)
        stdout, stderr = process.communicate(timeout=120)
        if caught:
            return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)
        for name in os.listdir(path.parent):
            (path.parent / name).unlink()
        path.write_bytes(original)
    pytest.fail(f"never caught a {seen} file under way")


@pytest.mark.parametrize(
    ("archive", "seen"),
    [(False, ".tmp"), (True, ".archive.axe-gc-intent")],
    ids=["trim", "archive append"],
)
def test_sigterm_during_a_trim_lets_it_finish(
    home: AxeHome, server: LoopbackLLM, archive: bool, seen: str
) -> None:
    """SIGTERM while a trim (its temp file, or its archive append) is under way: the trim
    finishes and is reported like any other (its Trimmed: line, its record), then gc ends
    with exit 143 and one line; the memory file is exactly trimmed, the archive holds
    exactly what was removed, and no temp file or lock is left."""
    original = entries(300_000)
    removed = plan_trim(original, 100).keep_from
    home.add_agent("fragile", model="ollama/m", last_n=100)
    path = home.write_memory("fragile", original)
    env = environment({**home.env, "AXE_OLLAMA_BASE_URL": server.url})
    command = [AXE, "gc", "fragile", *(["--archive"] if archive else [])]
    finished = sigterm_when(command, env, path, original, seen)
    assert (finished.returncode, finished.stderr) == (143, "terminated\n")
    assert finished.stdout.endswith("Trimmed: 299900 entries removed, 100 entries kept.\n")
    assert path.read_bytes() == original[removed:]
    if archive:
        assert archive_of(path).read_bytes() == original[:removed]
    names = ["fragile.md", "fragile.md.archive"] if archive else ["fragile.md"]
    assert sorted(os.listdir(path.parent)) == [".fragile.md.axe-gc.analysed", *names]


def waiting_gc(
    home: AxeHome, server: LoopbackLLM, delay: float = 30, **streams: Any
) -> subprocess.Popen[str]:
    """``axe gc fragile --archive`` (5 entries, keeping 2), once it waits for an analysis
    that takes ``delay`` seconds."""
    home.add_agent("fragile", model="ollama/m", last_n=2)
    home.write_memory("fragile", entries(5))
    server.delay = delay
    env = environment({**home.env, "AXE_OLLAMA_BASE_URL": server.url})
    process = subprocess.Popen([AXE, "gc", "fragile", "--archive"], env=env, text=True, **streams)
    while not server.prompts:  # the request has arrived: gc is waiting for its answer
        if process.poll() is not None:
            break
    return process


def assert_left_as_it_was(path: Path) -> None:
    """The memory file of :func:`waiting_gc` untouched, alone in its directory (no archive,
    no lock sidecar, no temp file)."""
    assert path.read_bytes() == entries(5)
    assert sorted(os.listdir(path.parent)) == ["fragile.md"]


NO_SIGHUP = pytest.mark.skipif(not hasattr(signal, "SIGHUP"), reason="no SIGHUP on Windows")


@pytest.mark.parametrize(
    ("stop", "code"),
    [("SIGTERM", 143), pytest.param("SIGHUP", 129, marks=NO_SIGHUP)],
    ids=["SIGTERM", "SIGHUP"],
)
def test_a_stop_signal_before_the_trim_trims_nothing(
    home: AxeHome, server: LoopbackLLM, stop: str, code: int
) -> None:
    """SIGTERM (or SIGHUP: the terminal or ssh session closed) while gc waits for the
    analysis: exit 143 (129) and one line, the memory file exactly as it was, no archive,
    and nothing left beside it, the lock's sidecar included."""
    process = waiting_gc(home, server, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    process.send_signal(getattr(signal, stop))
    _, stderr = process.communicate(timeout=60)
    server.delay = 0
    path = home.memory_path("fragile")
    assert (process.returncode, stderr) == (code, "terminated\n")
    assert_left_as_it_was(path)


@NO_SIGHUP
def test_sighup_after_the_terminal_hung_up_still_ends_with_129(
    home: AxeHome, server: LoopbackLLM
) -> None:
    """gc printed to a terminal (its status line on) that is gone when SIGHUP comes, an ssh
    session dropped: it still ends with 129, nothing trimmed, nothing left beside the file."""
    terminal, its_end = pty.openpty()
    process = waiting_gc(home, server, stdin=its_end, stdout=its_end, stderr=its_end)
    os.close(its_end)
    os.close(terminal)
    process.send_signal(signal.SIGHUP)
    process.wait(timeout=60)
    server.delay = 0
    path = home.memory_path("fragile")
    assert process.returncode == 129
    assert_left_as_it_was(path)


@NO_SIGHUP
def test_a_terminal_gone_while_sighup_is_ignored_ends_the_run_as_a_closed_pipe_does(
    home: AxeHome, server: LoopbackLLM
) -> None:
    """SIGHUP ignored (``gc & disown``) and the terminal gone: the first line gc cannot
    write ends the run, one line on stderr and exit 1, nothing trimmed, no internal error."""
    terminal, its_end = pty.openpty()
    ignore_sighup = functools.partial(signal.signal, signal.SIGHUP, signal.SIG_IGN)
    streams = {"stdin": its_end, "stdout": its_end, "stderr": subprocess.PIPE}
    process = waiting_gc(home, server, delay=1, preexec_fn=ignore_sighup, **streams)
    os.close(its_end)
    os.close(terminal)
    _, stderr = process.communicate(timeout=60)
    path = home.memory_path("fragile")
    assert (process.returncode, stderr) == (
        1,
        "stdout was closed by its reader; gc stopped at the first line it could not write\n",
    )
    assert_left_as_it_was(path)


@NO_SIGHUP
def test_a_run_started_under_nohup_goes_on_after_sighup(home: AxeHome, server: LoopbackLLM) -> None:
    """Under nohup (SIGHUP ignored by the parent) a closed terminal does not stop gc: it
    finishes its analysis and trim, exit 0."""
    ignore_sighup = functools.partial(signal.signal, signal.SIGHUP, signal.SIG_IGN)
    streams = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "preexec_fn": ignore_sighup}
    process = waiting_gc(home, server, delay=1, **streams)
    process.send_signal(signal.SIGHUP)
    stdout, stderr = process.communicate(timeout=90)
    assert (process.returncode, stderr) == (0, "")
    assert stdout.endswith("Trimmed: 3 entries removed, 2 entries kept.\n")
    assert home.memory_path("fragile").read_bytes() == entries(2, start=3)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 2 MiB tmpfs, where this machine lets the test mount one."""
    mount = tmp_path / "disk"
    mount.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root (ENOSPC is also injected in unit tests)")
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m,mode=0755", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
        check=False,
    )
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.strip() or made.returncode}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def free_bytes(directory: Path) -> int:
    status = os.statvfs(directory)
    return status.f_bavail * status.f_frsize


def test_a_full_disk_keeps_no_partial_archive(
    home: AxeHome, server: LoopbackLLM, small_disk: Path
) -> None:
    """On a filesystem that really fills during the append: exit 1 with one line, the memory
    file untouched, the partial archive gone and the space free again, so the next `axe run`
    can append; once there is room, a rerun archives each entry once."""
    path = small_disk / "log.md"
    original = entries(7_000)
    home.add_agent("full", model="ollama/m", last_n=100, path=str(path))
    path.write_bytes(original)
    filler = small_disk / "filler"
    filler.write_bytes(b"\0" * (1 << 20))
    free = free_bytes(small_disk)
    assert free < plan_trim(original, 100).keep_from  # the append cannot fit
    env = environment({**home.env, "AXE_OLLAMA_BASE_URL": server.url})
    failed = subprocess.run(
        [AXE, "gc", "full", "--archive"], env=env, capture_output=True, text=True, check=False
    )
    assert failed.returncode == 1
    assert failed.stderr.splitlines()[-1] == (
        f"cannot archive removed entries to {path}.archive: No space left on device; "
        "the memory file was not changed"
    )
    assert path.read_bytes() == original
    assert sorted(os.listdir(small_disk)) == ["filler", "log.md"]
    assert free_bytes(small_disk) == free
    with path.open("ab") as run:  # the next `axe run` appends its entry
        run.write(entry(7_000))
    filler.unlink()
    rerun = subprocess.run(
        [AXE, "gc", "full", "--archive"], env=env, capture_output=True, check=False
    )
    assert rerun.returncode == 0
    assert archive_of(path).read_bytes() + path.read_bytes() == entries(7_001)
    assert path.read_bytes() == entries(100, start=6_901)
