"""Two gc runs on one memory file at once: real ``axe`` processes.

A slow loopback provider keeps the first run inside its analysis while the second starts,
so the two certainly overlap; the lock must make them come out as one after the other.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator

import pytest

from tests.e2e.loopback import LoopbackLLM, loopback_llm
from tests.e2e.racing import appended_numbers, appender_command, environment
from tests.support import INSTALLED_AXE, AxeHome, entries

AXE = str(INSTALLED_AXE)
KEEP = 5


@pytest.fixture
def server() -> Iterator[LoopbackLLM]:
    with loopback_llm() as llm:
        llm.delay = 0.4
        yield llm


def start(home: AxeHome, server: LoopbackLLM, *args: str, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [AXE, "gc", *args],
        env=environment({**home.env, "AXE_OLLAMA_BASE_URL": server.url, **env}),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    stdout, stderr = process.communicate(timeout=60)
    return process.returncode, stdout, stderr


def last_lines(*runs: tuple[int, str, str]) -> list[str]:
    return sorted(stdout.splitlines()[-1] for _, stdout, _ in runs)


def test_two_runs_on_one_agent_come_out_as_one_after_the_other(
    home: AxeHome, server: LoopbackLLM
) -> None:
    """Both exit 0; one trims, the other finds the file as the first left it."""
    home.add_agent("busy", model="ollama/m", last_n=KEEP)
    home.write_memory("busy", entries(15))
    server.delay = 1.5  # the time a second gc has to start and reach the lock, loaded or not
    first = start(home, server, "busy")
    server.wait_for_requests(1)  # the first is inside its analysis, holding the lock
    second = start(home, server, "busy")
    runs = [finish(first), finish(second)]
    assert [(code, err) for code, _, err in runs] == [(0, ""), (0, "")]
    assert last_lines(*runs) == [
        f"No trimming needed: {KEEP} entries within limit ({KEEP}).",
        f"Trimmed: 10 entries removed, {KEEP} entries kept.",
    ]
    assert home.memory_path("busy").read_bytes() == entries(KEEP, start=10)
    assert sorted(os.listdir(home.memory_path("busy").parent)) == [
        ".busy.md.axe-gc.analysed",  # what the second run analysed and left
        "busy.md",
    ]


def test_two_agents_sharing_a_memory_path_share_the_lock(
    home: AxeHome, server: LoopbackLLM
) -> None:
    """Two agents whose memory.path names one file are serialised like one agent."""
    shared = home.root / "shared.md"
    shared.write_bytes(entries(15))
    for name in ("one", "two"):
        home.add_agent(name, model="ollama/m", last_n=KEEP, path=str(shared))
    server.delay = 1.5
    first = start(home, server, "one")
    server.wait_for_requests(1)
    second = start(home, server, "two")
    runs = [finish(first), finish(second)]
    assert [code for code, _, _ in runs] == [0, 0]
    assert last_lines(*runs) == [
        f"No trimming needed: {KEEP} entries within limit ({KEEP}).",
        f"Trimmed: 10 entries removed, {KEEP} entries kept.",
    ]
    assert shared.read_bytes() == entries(KEEP, start=10)


def test_overlapping_runs_with_a_racing_appender_lose_and_double_nothing(
    home: AxeHome, server: LoopbackLLM
) -> None:
    """Round after round, two gc runs overlap while `axe run`-style appends continue: both
    exit 0, and every appended entry after the oldest kept one is there exactly once."""
    server.delay = 0.15
    home.add_agent("busy", model="ollama/m", last_n=50)
    path = home.write_memory("busy", entries(20_000))
    stop = home.root / "stop-appending"
    appender = subprocess.Popen(appender_command(path, stop), stdout=subprocess.PIPE, text=True)
    try:
        codes = []
        for _ in range(4):
            first = start(home, server, "busy")
            time.sleep(0.05)
            second = start(home, server, "busy")
            codes += [finish(first)[0], finish(second)[0]]
    finally:
        stop.write_text("")
        written = int(appender.communicate(timeout=30)[0])
    assert codes == [0] * 8
    numbers = appended_numbers(path.read_bytes())
    assert len(numbers) == len(set(numbers)), "an entry was doubled"
    assert sorted(numbers) == list(range(min(numbers), written)), "an entry was lost"


def test_a_holder_killed_with_sigkill_frees_the_file_at_once(
    home: AxeHome, server: LoopbackLLM
) -> None:
    """A crashed gc releases the lock by dying: the next one proceeds without waiting out
    its (here ten-minute) limit."""
    server.hang.set()
    home.add_agent("busy", model="ollama/m", last_n=KEEP)
    home.write_memory("busy", entries(15))
    holder = start(home, server, "busy")
    server.wait_for_requests(1)  # inside its analysis, holding the lock
    holder.send_signal(signal.SIGKILL)
    holder.communicate()
    server.hang.clear()
    server.delay = 0
    next_run = start(home, server, "busy", AXE_LOCK_TIMEOUT="600")
    code, stdout, stderr = finish(next_run)
    assert (code, stderr) == (0, "")
    assert stdout.splitlines()[-1] == f"Trimmed: 10 entries removed, {KEEP} entries kept."


def test_past_the_wait_limit_it_is_exit_1_naming_agent_and_holder(
    home: AxeHome, server: LoopbackLLM
) -> None:
    """A gc that waits longer than --lock-timeout gives up: exit 1, one line with the agent
    and the holder's pid, the file untouched."""
    server.hang.set()
    home.add_agent("busy", model="ollama/m", last_n=KEEP)
    home.write_memory("busy", entries(15))
    holder = start(home, server, "busy")
    try:
        server.wait_for_requests(1)
        code, stdout, stderr = finish(start(home, server, "busy", "--lock-timeout", "0.5"))
    finally:
        holder.kill()
        holder.communicate()
    assert code == 1
    (line,) = stderr.splitlines()
    assert line.startswith(
        f'memory file of agent "busy" is locked by another gc (pid {holder.pid}) ('
    )
    assert line.endswith("); gave up after 0.5s (raise it with --lock-timeout or AXE_LOCK_TIMEOUT)")
    assert stdout == ""
    assert home.memory_path("busy").read_bytes() == entries(15)


def test_a_dry_run_is_not_held_up_by_a_running_gc(home: AxeHome, server: LoopbackLLM) -> None:
    """--dry-run changes nothing, so it neither waits for nor blocks a running gc."""
    home.add_agent("busy", model="ollama/m", last_n=KEEP)
    home.write_memory("busy", entries(15))
    server.delay = 3
    holder = start(home, server, "busy")
    try:
        server.wait_for_requests(1)  # the holder's request is answered in 3 s, the dry run's too
        code, stdout, _ = finish(start(home, server, "busy", "--dry-run", AXE_LOCK_TIMEOUT="0.2"))
    finally:
        assert finish(holder)[0] == 0
    assert code == 0
    assert stdout.splitlines()[-1] == "Dry run: no entries trimmed."


def test_ctrl_c_stops_every_worker_at_once_and_leaves_every_file_whole(
    home: AxeHome, server: LoopbackLLM
) -> None:
    """Ctrl-C during `--all --jobs 4` against a provider that never answers: the process
    ends at once with exit 130 and one line, every memory file is exactly as it was, and no
    temp file or lock is left behind."""
    server.hang.set()
    for index in range(6):
        home.add_agent(f"agent-{index}", model="ollama/m", last_n=2)
        home.write_memory(f"agent-{index}", entries(5))
    process = start(home, server, "--all", "--jobs", "4")
    server.wait_for_requests(4)  # four analyses in flight (one request each), two queued
    process.send_signal(signal.SIGINT)
    code, _, stderr = finish(process)  # finish() allows 60 s; the requests would hang 30
    assert code == 130
    assert stderr.strip() == "interrupted"  # after click's newline, which ends the echoed ^C
    for index in range(6):
        assert home.memory_path(f"agent-{index}").read_bytes() == entries(5)
    assert sorted(os.listdir(home.data / "memory")) == [f"agent-{i}.md" for i in range(6)]
