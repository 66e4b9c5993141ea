"""`make demo`: the main job on an embedded default, and its closing hint works as printed."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.loopback import LoopbackLLM, loopback_llm

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def server() -> Iterator[LoopbackLLM]:
    with loopback_llm() as llm:
        yield llm


def test_the_demo_runs_offline_and_its_hint_runs_as_printed(
    tmp_path: Path, server: LoopbackLLM
) -> None:
    """The demo needs no key and no network; the command it suggests for the agent's own
    model works when pasted (here with a stand-in key and provider)."""
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "AXE_DEMO_HOME": str(tmp_path / "demo"),
    }
    done = subprocess.run(
        [sys.executable, "scripts/demo.py"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert "Trimmed: 36 entries removed, 10 entries kept." in done.stdout
    (hint,) = [line.strip() for line in done.stdout.splitlines() if "ANTHROPIC_API_KEY=" in line]
    pasted = hint.replace("sk-ant-...", "sk-ant-demo")
    rerun = subprocess.run(
        ["sh", "-c", pasted],
        cwd=ROOT,
        env={**env, "AXE_ANTHROPIC_BASE_URL": server.url},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (rerun.returncode, rerun.stderr) == (0, "")
    assert rerun.stdout.splitlines()[-1] == "Dry run: no entries trimmed."
