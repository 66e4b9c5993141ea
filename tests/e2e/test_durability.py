"""Real ``axe gc`` processes under stress: a racing ``axe run`` and SIGKILL at any moment."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from tests.e2e.loopback import LoopbackLLM, loopback_llm
from tests.e2e.racing import appended_numbers, appender_command, environment, kill_after
from tests.support import INSTALLED_AXE, AxeHome, entries

AXE = str(INSTALLED_AXE)
KEEP = 100


@pytest.fixture
def server() -> Iterator[LoopbackLLM]:
    with loopback_llm() as llm:
        yield llm


def test_no_entry_appended_during_gc_is_lost(home: AxeHome, server: LoopbackLLM) -> None:
    """An appender in a tight loop (as `axe run` writes: O_APPEND, one write, close) runs
    while gc trims a 300,000-entry file three times over. Every entry it wrote after the
    first snapshot must be in the result exactly once: the surviving appended numbers are
    one unbroken run ending with the last one written."""
    initial = 300_000
    home.add_agent("busy", model="ollama/m", last_n=KEEP)
    path = home.write_memory("busy", entries(initial))
    stop = home.root / "stop-appending"
    env = environment({**home.env, "AXE_OLLAMA_BASE_URL": server.url})
    appender = subprocess.Popen(appender_command(path, stop), stdout=subprocess.PIPE, text=True)
    try:
        time.sleep(0.2)
        runs = [
            subprocess.run(
                [AXE, "gc", "busy"], capture_output=True, text=True, env=env, check=False
            )
            for _ in range(3)
        ]
        time.sleep(0.2)
    finally:
        stop.write_text("")
        written = int(appender.communicate(timeout=30)[0])
    for run in runs:
        assert (run.returncode, run.stderr) == (0, "")
    numbers = appended_numbers(path.read_bytes())
    assert len(numbers) == len(set(numbers)), "an entry was duplicated"
    assert sorted(numbers) == list(range(min(numbers), written)), "an entry was lost"
    first_removed = int(runs[0].stdout.splitlines()[-1].split()[1])
    assert written > len(numbers) > KEEP
    assert first_removed >= initial


def test_sigkill_at_any_moment_leaves_the_file_whole(home: AxeHome, server: LoopbackLLM) -> None:
    """Kill gc at random instants: the file is always exactly as before or exactly trimmed,
    and a later gc removes any temp file the killed ones left behind."""
    original = entries(150_000)
    trimmed = entries(60_000, start=90_000)
    home.add_agent("fragile", model="ollama/m", last_n=60_000)
    path = home.memory_path("fragile")
    env = environment({**home.env, "AXE_OLLAMA_BASE_URL": server.url})

    path.write_bytes(original)
    started = time.monotonic()
    subprocess.run([AXE, "gc", "fragile"], env=env, capture_output=True, check=True)
    full_run = time.monotonic() - started

    chance = random.Random(20261122)
    for _ in range(25):
        path.write_bytes(original)
        kill_after([AXE, "gc", "fragile"], env, chance.uniform(0.0, full_run * 1.1))
        content = path.read_bytes()
        assert content in (original, trimmed), "memory file left half-written"

    path.write_bytes(original)
    finished = subprocess.run(
        [AXE, "gc", "fragile"], env=env, capture_output=True, text=True, check=False
    )
    assert finished.returncode == 0, finished.stderr
    assert path.read_bytes() == trimmed
    assert sorted(os.listdir(path.parent)) == [".fragile.md.axe-gc.analysed", "fragile.md"]


_HOLDER = """
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)
print("open", flush=True)
sys.stdin.readline()  # until the test lets go
"""


@pytest.mark.parametrize("json_output", [False, True], ids=["text", "--json"])
def test_a_writer_holding_the_file_past_the_wait_is_named_on_stderr(
    home: AxeHome, server: LoopbackLLM, json_output: bool
) -> None:
    """A program holding the memory file open for appending (`long_job >> memory.md`) past
    gc's 2-second wait: the trim is done, exit 0, and one warning line names the file and
    what becomes of its later writes (in --json, the object's `warnings` too)."""
    home.add_agent("held", model="ollama/m", last_n=2)
    path = home.write_memory("held", entries(5))
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == "open\n"
        env = environment({**home.env, "AXE_OLLAMA_BASE_URL": server.url})
        command = [AXE, "gc", "held", *(["--json"] if json_output else [])]
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    finally:
        holder.communicate("go\n", timeout=10)
    clause = (
        f"a program still had {path} open for writing after gc waited 2s for it; what it "
        "writes there from now on goes to the replaced file, not to the trimmed one"
    )
    assert (done.returncode, done.stderr) == (0, f'Warning: agent "held": {clause}\n')
    assert path.read_bytes() == entries(2, start=3)
    if json_output:
        assert json.loads(done.stdout)["warnings"] == [clause]
    else:
        assert done.stdout.splitlines()[-1] == "Trimmed: 3 entries removed, 2 entries kept."
