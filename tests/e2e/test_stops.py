"""Ctrl-C and SIGTERM against the installed ``axe``: a stop never costs a report.

Real processes against loopback providers: whatever instant the stop comes, every agent
whose memory file changed is reported on stdout (its text section with its ``Trimmed:``
line, or its ``--json`` object), no agent without a report has a record, and the run ends
with one line and 130 (143 for SIGTERM).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from tests.e2e.loopback import LoopbackLLM, loopback_llm
from tests.support import INSTALLED_AXE, AxeHome, entries

AGENTS = [f"a{index}" for index in range(8)]


@pytest.fixture
def slow() -> Iterator[LoopbackLLM]:
    with loopback_llm() as llm:
        llm.delay = 5.0
        yield llm


@pytest.fixture
def fast() -> Iterator[LoopbackLLM]:
    with loopback_llm() as llm:
        llm.delay = 0.2
        yield llm


def record_of(home: AxeHome, name: str) -> bool:
    path = home.memory_path(name)
    return path.with_name(f".{path.name}.axe-gc.analysed").exists()


def reported(stdout: str, *, json_lines: bool) -> dict[str, str]:
    """Each reported agent and how its report ends (its last line, or its JSON status)."""
    if json_lines:
        objects = [json.loads(line) for line in stdout.splitlines()]
        return {item["agent"]: item["status"] for item in objects}
    sections = stdout.split("=== GC: ")[1:]
    return {section.split(" ===")[0]: section.strip().splitlines()[-1] for section in sections}


@pytest.mark.parametrize("json_lines", [False, True], ids=["text", "json"])
@pytest.mark.parametrize("after", [0.3, 0.9, 1.5, 2.4])
def test_a_stop_under_jobs_at_any_instant_costs_no_report(
    home: AxeHome, slow: LoopbackLLM, fast: LoopbackLLM, after: float, json_lines: bool
) -> None:
    """`axe gc --all --jobs 4` over 8 agents, one slow provider (5 s) and seven fast ones
    (0.2 s), Ctrl-C at an instant: exit 130 and one line; every agent whose file changed is
    reported in name order (text or JSON), and only reported agents have a record."""
    for name in AGENTS:
        model = "anthropic/claude-3" if name == "a0" else "openai/gpt-4o"
        home.add_agent(name, model=model, last_n=2)
        home.write_memory(name, entries(5))
    env = {
        **os.environ,
        **home.env,
        "ANTHROPIC_API_KEY": "k",
        "OPENAI_API_KEY": "k",
        "AXE_ANTHROPIC_BASE_URL": slow.url,
        "AXE_OPENAI_BASE_URL": fast.url,
    }
    command = [str(INSTALLED_AXE), "gc", "--all", "--jobs", "4", *(["--json"] * json_lines)]
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(after)
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=60)
    assert (process.returncode, stderr) == (130, b"interrupted\n")
    reports = reported(stdout.decode(), json_lines=json_lines)
    assert list(reports) == sorted(reports)
    changed = {name for name in AGENTS if home.memory_path(name).read_bytes() != entries(5)}
    recorded = {name for name in AGENTS if record_of(home, name)}
    assert changed <= set(reports)
    assert recorded <= set(reports)
    done = "trimmed" if json_lines else "Trimmed: 3 entries removed, 2 entries kept."
    assert {name for name, end in reports.items() if end == done} == changed
    assert "a0" not in changed  # its provider answers after the stop: nothing changes


def test_a_stop_while_the_command_line_loads_is_one_line(home: AxeHome) -> None:
    """Ctrl-C while Python is still loading click and the commands: one line and exit 130,
    no traceback, for both console scripts."""
    program = (
        "import sys\n"
        "class CtrlC:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'click':\n"
        "            raise KeyboardInterrupt\n"
        "sys.meta_path.insert(0, CtrlC())\n"
        "import axe.cli\n"
        "getattr(axe.cli, sys.argv.pop(1))()\n"
    )
    for script in (["main", "gc", "x"], ["gc_main", "x"]):
        done = subprocess.run(
            [sys.executable, "-c", program, *script],
            capture_output=True,
            text=True,
            env={**os.environ, **home.env},
            check=False,
        )
        assert (done.returncode, done.stdout, done.stderr) == (130, "", "interrupted\n")
