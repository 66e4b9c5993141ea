"""`make demo`: axe gc on a sample agent, offline, in a throw-away directory.

Creates an agent and a realistic two-week memory log under `.demo/` (its own
XDG_CONFIG_HOME and XDG_DATA_HOME: your ~/.config and ~/.local/share are never touched),
then runs the installed `axe gc` with the built-in analyst: first as a dry run, then for
real, showing the memory file before and after. No API key, no network. The demo's home is
kept, so the commands it suggests at the end work as printed.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import textwrap
from datetime import UTC, datetime, timedelta
from pathlib import Path

AXE = str(Path(sys.executable).with_name("axe"))
AGENT = "pr-reviewer"
KEEP = 10

AGENT_TOML = f"""\
name = "PR Reviewer"
model = "anthropic/claude-sonnet-4-20250514"
description = "Reviews pull requests and keeps the team's CI honest"

[memory]
enabled = true
last_n = {KEEP}
max_entries = 100
"""

FAILURE = "Error: connection refused to ci.internal:443 (is the VPN up?)"
LONG_REVIEW = (
    "Reviewed 14 files. The retry loop in fetcher.go swallows context cancellation; the new "
    "cache has no eviction; three handlers log request bodies that may contain tokens. "
) * 8


def sample_log() -> bytes:
    """A deterministic log with the shapes real logs have: repeats, rewordings, a failure
    that keeps coming back, results cut at the 1000-character limit, a hand-written note."""
    rng = random.Random(7)
    when = datetime(2026, 11, 1, 8, 30, tzinfo=UTC)
    parts = ["# Notes\nMemory of the PR reviewer. Older entries are safe to drop.\n\n"]
    standups = ["Summarise yesterday's merged PRs", "summarize yesterdays merged PRs"]
    for day in range(14):
        day_start = when + timedelta(days=day)
        runs = [
            (rng.choice(standups), "3 PRs merged: #311, #314, #316. No reverts."),
            (f"Review PR #{320 + day}", "Looks good; one nit about naming in handlers.go."),
            ("Check CI status for main", FAILURE if day % 3 else "CI green on main."),
        ]
        if day % 4 == 0:
            runs.append((f"Deep review of PR #{300 + day}", LONG_REVIEW[:1000] + "..."))
        for offset, (task, result) in enumerate(runs):
            stamp = (day_start + timedelta(minutes=47 * offset)).strftime("%Y-%m-%dT%H:%M:%SZ")
            parts.append(f"## {stamp}\n**Task:** {task}\n**Result:** {result}\n\n")
    return "".join(parts).encode()


def banner(text: str) -> None:
    print(f"\n\033[1m== {text}\033[0m" if sys.stdout.isatty() else f"\n== {text}", flush=True)


def show_file(path: Path) -> None:
    data = path.read_bytes()
    entries = data.count(b"\n## ") + data.startswith(b"## ")
    print(f"{path}  ({len(data):,} bytes, {entries} entries)")
    lines = data.decode("utf-8", "replace").splitlines()
    shown = lines[:7] + (["   ..."] if len(lines) > 7 else [])
    print(textwrap.indent("\n".join(shown), "   | ", lambda _: True), flush=True)


def run(args: list[str], env: dict[str, str]) -> None:
    print(f"$ axe {' '.join(args)}", flush=True)
    done = subprocess.run([AXE, *args], env=env, check=False)
    print(f"(exit code {done.returncode})", flush=True)
    if done.returncode != 0:
        sys.exit(done.returncode)


def demo_home() -> Path:
    """Where the demo keeps its agent: ``.demo/`` in the checkout (``AXE_DEMO_HOME``
    elsewhere), kept after the run so the closing commands work as printed."""
    override = os.environ.get("AXE_DEMO_HOME")
    return Path(override) if override else Path(__file__).resolve().parent.parent / ".demo"


def closing_hint(root: Path) -> str:
    """Commands to try next, each runnable exactly as printed from the checkout."""
    env = f"XDG_CONFIG_HOME={root / 'config'} XDG_DATA_HOME={root / 'data'}"
    axe = os.path.relpath(AXE) if AXE.startswith(os.getcwd()) else AXE
    return (
        "\nThe demo's agent is kept in "
        f"{root}. To analyse it with its own model (an API key needed):\n"
        f"  {env} ANTHROPIC_API_KEY=sk-ant-... {axe} gc {AGENT} --dry-run\n"
        "Your own agents, offline, changing nothing:\n"
        f"  {axe} gc --all --dry-run --model builtin/heuristic"
    )


def main() -> None:
    root = demo_home()
    shutil.rmtree(root, ignore_errors=True)
    env = {
        **os.environ,
        "XDG_CONFIG_HOME": str(root / "config"),
        "XDG_DATA_HOME": str(root / "data"),
    }
    agents = root / "config" / "axe" / "agents"
    memory = root / "data" / "axe" / "memory" / f"{AGENT}.md"
    agents.mkdir(parents=True)
    memory.parent.mkdir(parents=True)
    (agents / f"{AGENT}.toml").write_text(AGENT_TOML)
    memory.write_bytes(sample_log())

    banner(f"A sample agent in {root} (your own ~/.config and ~/.local/share are untouched)")
    print(textwrap.indent(AGENT_TOML, "   | ", lambda _: True))
    banner("Its memory log: two weeks of runs")
    show_file(memory)

    banner("1. Dry run: analyse with the built-in analyst, change nothing")
    run(["gc", AGENT, "--dry-run", "--model", "builtin/heuristic"], env)

    banner(f"2. For real: analyse, then keep the newest {KEEP} entries")
    run(["gc", AGENT, "--model", "builtin/heuristic"], env)

    banner("The memory log after gc")
    show_file(memory)
    print(closing_hint(root))


if __name__ == "__main__":
    main()
