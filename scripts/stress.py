"""`make stress`: durability figures for real `axe gc` processes (numbers, not assertions).

1. Racing appends: a process appends entries the way `axe run` does (O_APPEND, one write,
   close, no lock) in a tight loop while `axe gc` trims a large file, several times over.
   Reports how many entries were appended and how many of those are missing or doubled.
2. Racing appends under Windows' rule, substituted on Linux: the same appender against
   trims run in this process by the Windows branch, with a shim that refuses to rename or
   link while gc or the appender has the file open (tests/platform_substitutes.py).
3. Kills: SIGKILL at random instants of `axe gc` runs; reports what the file looked like
   afterwards (as before / exactly trimmed / anything else) and the temp files left behind.
4. Archive kills: SIGKILL of `axe gc --archive` at random points of a large append (as the
   archive grows to a random size, at a random instant of the run, or a random moment after
   the append, during the trim), each followed by a
   rerun; reports where the kills landed and in how many rounds archive + memory file was
   the log byte for byte, with nothing else left beside them.
5. Overlaps: rounds of two `axe gc` runs started together on one agent, and on two agents
   sharing one `memory.path`, while the appender races; reports exit codes, and appended
   entries missing or doubled.

The same helpers drive tests/e2e/test_durability.py, which asserts the invariants.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.e2e.archive_kills import KILL_POINTS, kill_at_archive_size, kill_point
from tests.e2e.loopback import LoopbackLLM, loopback_llm
from tests.e2e.racing import appended_numbers, appender_command, environment, kill_after
from tests.platform_substitutes import WindowsRules
from tests.support import AxeHome, entries

from axe.adapters.memory.store import MemoryFile
from axe.domain.entries import plan_trim
from axe.domain.errors import AgentError

AXE = str(Path(sys.executable).with_name("axe"))


def racing(home: AxeHome, url: str, *, size: int, runs: int) -> None:
    home.add_agent("busy", model="ollama/m", last_n=100)
    path = home.write_memory("busy", entries(size))
    stop = home.root / "stop"
    env = environment({**home.env, "AXE_OLLAMA_BASE_URL": url})
    appender = subprocess.Popen(appender_command(path, stop), stdout=subprocess.PIPE, text=True)
    time.sleep(0.2)
    codes = [
        subprocess.run([AXE, "gc", "busy"], env=env, capture_output=True, check=False).returncode
        for _ in range(runs)
    ]
    print(f"racing appends: {runs} gc runs on {size:,} entries (exit codes {codes})")
    report_appends(path, appender, stop)


def racing_under_windows_rules(root: Path, *, size: int, runs: int) -> None:
    root.mkdir()
    path, stop = root / "busy.md", root / "stop"
    path.write_bytes(entries(size))
    appender = subprocess.Popen(appender_command(path, stop), stdout=subprocess.PIPE, text=True)
    time.sleep(0.2)
    rules = WindowsRules(watched=[appender.pid])
    file = MemoryFile(path, platform=rules.platform())
    failures = []
    for _ in range(runs):
        snapshot = file.read()
        plan = plan_trim(snapshot.content, 100)
        try:
            file.trim(snapshot, plan, archive=False)
        except AgentError as error:
            failures.append(str(error))
        time.sleep(0.05)
    print(f"racing appends under Windows' rule (substituted): {runs} trims on {size:,} entries")
    print(f"  renamed: {rules.replaced}, refused while in use: {rules.refusals} times", end="")
    print(f", failed: {len(failures)}" + (f" (first: {failures[0]})" if failures else ""))
    report_appends(path, appender, stop)


def report_appends(path: Path, appender: subprocess.Popen[str], stop: Path) -> None:
    """Stop the appender and say how many of its entries the trims lost or doubled."""
    time.sleep(0.2)
    stop.write_text("")
    written = int(appender.communicate(timeout=60)[0])
    numbers = appended_numbers(path.read_bytes())
    first_kept = min(numbers)
    expected = set(range(first_kept, written))
    missing = len(expected - set(numbers))
    doubled = len(numbers) - len(set(numbers))
    print(f"  entries appended: {written:,}; after the oldest kept one: {len(expected):,}")
    print(f"  missing: {missing}, doubled: {doubled}")


def kills(home: AxeHome, url: str, *, size: int, count: int, seed: int) -> None:
    keep = size * 2 // 5
    home.add_agent("fragile", model="ollama/m", last_n=keep)
    path = home.memory_path("fragile")
    original, trimmed = entries(size), entries(keep, start=size - keep)
    env = environment({**home.env, "AXE_OLLAMA_BASE_URL": url})
    path.write_bytes(original)
    started = time.monotonic()
    subprocess.run([AXE, "gc", "fragile"], env=env, capture_output=True, check=True)
    full = time.monotonic() - started
    chance = random.Random(seed)
    outcome = {"as before": 0, "exactly trimmed": 0, "anything else": 0}
    leftovers = 0
    for _ in range(count):
        path.write_bytes(original)
        kill_after([AXE, "gc", "fragile"], env, chance.uniform(0, full * 1.1))
        content = path.read_bytes()
        key = (
            "as before"
            if content == original
            else "exactly trimmed"
            if content == trimmed
            else "anything else"
        )
        outcome[key] += 1
        leftovers = max(leftovers, len(os.listdir(path.parent)) - 1)
    path.write_bytes(original)
    subprocess.run([AXE, "gc", "fragile"], env=env, capture_output=True, check=True)
    remaining = len(os.listdir(path.parent)) - 1
    print(f"kills: {count} SIGKILLs at random instants of a {full * 1000:.0f} ms gc", end="")
    print(f" of {size:,} entries")
    print("  file afterwards: " + ", ".join(f"{k} {v}" for k, v in outcome.items()))
    print(f"  files left beside it by killed runs (temp, lock; most at once): {leftovers};", end="")
    print(f" after one more gc: {remaining} (its --skip-unchanged record)")


def archive_kills(home: AxeHome, url: str, *, size: int, count: int, seed: int) -> None:
    keep = size * 2 // 5
    home.add_agent("fragile", model="ollama/m", last_n=keep)
    path = home.memory_path("fragile")
    archive = path.with_name(path.name + ".archive")
    record = f".{path.name}.axe-gc.analysed"  # what every analysis leaves (--skip-unchanged)
    original = entries(size)
    removed = plan_trim(original, keep).keep_from
    env = environment({**home.env, "AXE_OLLAMA_BASE_URL": url})
    command = [AXE, "gc", "fragile", "--archive"]
    path.write_bytes(original)
    started = time.monotonic()
    subprocess.run(command, env=env, capture_output=True, check=True)
    full = time.monotonic() - started
    chance = random.Random(seed)
    points = dict.fromkeys(KILL_POINTS, 0)
    identical = failed_reruns = 0
    for round_ in range(count):
        path.write_bytes(original)
        archive.unlink(missing_ok=True)
        if round_ % 3 == 0:
            kill_after(command, env, chance.uniform(0, full * 1.1))
        else:  # as the archive grows, or a moment after the append (the trim)
            grown = chance.randrange(removed + 1) if round_ % 3 == 1 else removed
            delay = 0.0 if round_ % 3 == 1 else chance.uniform(0, full / 3)
            kill_at_archive_size(command, env, archive, grown, delay)
        points[kill_point(path, original, removed, archived_before=0)] += 1
        rerun = subprocess.run(command, env=env, capture_output=True, check=False)
        failed_reruns += rerun.returncode != 0
        identical += (
            archive.read_bytes() == original[:removed]
            and path.read_bytes() == original[removed:]
            and sorted(os.listdir(path.parent)) == [record, path.name, archive.name]
        )
    print(f"archive kills: {count} SIGKILLs of a {full * 1000:.0f} ms gc --archive of", end="")
    print(f" {size:,} entries ({removed / 1e6:.1f} MB to archive), each followed by a rerun")
    print("  killed: " + ", ".join(f"{point} {n}" for point, n in points.items()))
    print(f"  archive + memory file == the log, nothing else left: {identical} of {count}", end="")
    print(f"; reruns that failed: {failed_reruns}")


def overlaps(home: AxeHome, server: LoopbackLLM, *, size: int, rounds: int) -> None:
    server.delay = 0.2  # each gc sits in its analysis long enough for the other to start
    shared = home.root / "shared.md"
    home.add_agent("busy", model="ollama/m", last_n=100)
    for name in ("one", "two"):
        home.add_agent(name, model="ollama/m", last_n=100, path=str(shared))
    env = environment({**home.env, "AXE_OLLAMA_BASE_URL": server.url})
    for label, path, agents in (
        ("one agent", home.memory_path("busy"), ("busy", "busy")),
        ("two agents, one file", shared, ("one", "two")),
    ):
        path.write_bytes(entries(size))
        stop = home.root / f"stop-{agents[1]}"
        appender = subprocess.Popen(appender_command(path, stop), stdout=subprocess.PIPE, text=True)
        time.sleep(0.2)
        codes = []
        for _ in range(rounds):
            runs = [
                subprocess.Popen([AXE, "gc", agent], env=env, stdout=subprocess.DEVNULL)
                for agent in agents
            ]
            codes += [run.wait() for run in runs]
        stop.write_text("")
        written = int(appender.communicate(timeout=60)[0])
        numbers = appended_numbers(path.read_bytes())
        expected = set(range(min(numbers), written))
        print(
            f"overlaps, {label}: {rounds} rounds of 2 gc runs started together on {size:,} entries"
        )
        print(f"  exit codes: {codes.count(0)} of {len(codes)} were 0")
        print(f"  entries appended: {written:,}; after the oldest kept one: {len(expected):,}")
        print(
            f"  missing: {len(expected - set(numbers))}, "
            f"doubled: {len(numbers) - len(set(numbers))}"
        )
    server.delay = 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=300_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--kills", type=int, default=100)
    parser.add_argument("--archive-kills", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=20, help="overlap rounds per scene")
    options = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="axe-stress-"))
    try:
        with loopback_llm() as server:
            racing(AxeHome(root / "race"), server.url, size=options.entries, runs=options.runs)
            racing_under_windows_rules(
                root / "windows", size=options.entries // 3, runs=options.runs * 6
            )
            kills(
                AxeHome(root / "kill"),
                server.url,
                size=options.entries // 2,
                count=options.kills,
                seed=options.seed,
            )
            archive_kills(
                AxeHome(root / "archive-kill"),
                server.url,
                size=options.entries,
                count=options.archive_kills,
                seed=options.seed,
            )
            overlaps(
                AxeHome(root / "overlap"), server, size=options.entries // 3, rounds=options.rounds
            )
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
