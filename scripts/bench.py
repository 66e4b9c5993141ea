"""`make bench`: wall time and peak memory of whole `axe` processes, next to floors.

Absolute times drift on a shared machine; ratios to floors measured in the same run do not.
So every goal is printed as a ratio: `axe` against `python -c "import click, attrs, cattrs"`
(with and without httpx) and against `cp` of the same big file. Scenarios are built in a
temporary directory and the LLM is a loopback endpoint that answers at once; the "via proxy"
runs reach it through the test suite's loopback proxy (HTTP_PROXY, plain forwarding) under a
name only that proxy resolves, so a run that bypassed the proxy would fail.

    python scripts/bench.py            # the full run (about a minute)
    python scripts/bench.py --smoke    # tiny sizes, one run: proves the script still works
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from attrs import frozen

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_big_logs
from tests.e2e.loopback_proxy import LLM_HOST, LoopbackProxy, loopback_proxy

PYTHON = sys.executable
AXE = str(Path(sys.executable).with_name("axe"))
MIB = 1024 * 1024
REPLY = json.dumps(
    {
        "choices": [
            {
                "message": {
                    "content": "## Patterns Found\nNone.\n\n## Repeated Work\n"
                    "No repeated work detected.\n\n## Recommendations\nNo specific recommendations."
                }
            }
        ]
    }
).encode()


@frozen
class Sample:
    seconds: float
    peak_kib: int
    exit_code: int


@frozen
class Figure:
    label: str
    seconds: float
    peak_kib: int


# A child's ru_maxrss starts from the memory of the process that forked it, so commands
# are spawned by this small helper rather than by the bench (which is larger); the helper
# also does the timing, so its own start-up is not counted.
SPAWN_HELPER = """
import os, sys, time
devnull = os.open(os.devnull, os.O_RDWR)
started = time.perf_counter()
pid = os.posix_spawn(sys.argv[1], sys.argv[1:], os.environ, file_actions=[
    (os.POSIX_SPAWN_DUP2, devnull, 1), (os.POSIX_SPAWN_DUP2, devnull, 2)])
_, status, usage = os.wait4(pid, 0)
print(time.perf_counter() - started, usage.ru_maxrss, os.waitstatus_to_exitcode(status))
"""


def run_once(command: list[str], env: dict[str, str]) -> Sample:
    """One process, timed from spawn to reaped, with its own peak RSS (KiB, from wait4)."""
    program = shutil.which(command[0], path=env.get("PATH")) or command[0]
    done = subprocess.run(
        [PYTHON, "-S", "-c", SPAWN_HELPER, program, *command[1:]],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    seconds, peak, code = done.stdout.split()
    return Sample(float(seconds), int(peak), int(code))


def measure(
    label: str,
    command: list[str],
    env: dict[str, str],
    runs: int,
    *,
    before_each: Callable[[], None] = lambda: None,
    expect_exit: int = 0,
) -> Figure:
    samples = []
    for _ in range(runs + 1):  # the first run warms caches and is discarded
        before_each()
        samples.append(run_once(command, env))
    for sample in samples:
        if sample.exit_code != expect_exit:
            sys.exit(f"bench: {label}: exit code {sample.exit_code}, expected {expect_exit}")
    kept = samples[1:] if runs > 1 else samples
    return Figure(
        label,
        statistics.median(s.seconds for s in kept),
        int(statistics.median(s.peak_kib for s in kept)),
    )


@contextmanager
def instant_llm() -> Iterator[str]:
    """An OpenAI-shaped endpoint on loopback that reads the request and answers at once."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            remaining = int(self.headers.get("content-length", "0"))
            sink = memoryview(bytearray(MIB))
            while remaining:
                got = self.rfile.readinto(sink[: min(remaining, MIB)])
                if not got:
                    break
                remaining -= got
            head = (
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                f"content-length: {len(REPLY)}\r\n\r\n"
            ).encode()
            self.wfile.write(head + REPLY)  # one write: no Nagle stall on the reply

        def setup(self) -> None:
            super().setup()
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def entry(index: int, size: int) -> bytes:
    head = f"## 2026-01-01T00:00:00Z #{index}\n**Task:** Review PR #{index % 500}\n**Result:** "
    filler = "x" * max(1, size - len(head) - 2)
    return (head + filler + "\n\n").encode()


def memory_log(total_bytes: int, entry_size: int) -> bytes:
    count = max(1, total_bytes // entry_size)
    return b"".join(entry(i, entry_size) for i in range(count))


def analyst_log(count: int) -> bytes:
    """A varied log for the built-in analyst: repeats, rewordings, failures, long results."""
    tasks = [f"Review PR #{n}" for n in range(3000)] + [
        "Summarise the daily sales report",
        "summarize daily sales report",
        "Check CI status for main",
    ]
    results = [
        "Found 3 issues",
        "Error: timeout after 30s calling the API",
        "All good",
        "x" * 997 + "...",
    ]
    parts = []
    for index in range(count):
        day, minute = divmod(index, 1440)
        month = 1 + day // 28 % 12
        stamp = f"2026-{month:02d}-{1 + day % 28:02d}T{minute // 60:02d}:{minute % 60:02d}:00Z"
        task = tasks[(index * 7919) % len(tasks)]
        result = results[(index * 31) % len(results)]
        parts.append(f"## {stamp}\n**Task:** {task}\n**Result:** {result}\n\n")
    return "".join(parts).encode()


def agent_toml(name: str, *, last_n: int, enabled: bool = True) -> str:
    return (
        f'name = "{name}"\nmodel = "openai/gpt-4o"\n[memory]\n'
        f"enabled = {'true' if enabled else 'false'}\nlast_n = {last_n}\n"
    )


class Workspace:
    def __init__(self, root: Path, llm_url: str) -> None:
        self.root = root
        self.agents = root / "config" / "axe" / "agents"
        self.memory = root / "data" / "axe" / "memory"
        self.agents.mkdir(parents=True)
        self.memory.mkdir(parents=True)
        self.env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(root),
            "XDG_CONFIG_HOME": str(root / "config"),
            "XDG_DATA_HOME": str(root / "data"),
            "OPENAI_API_KEY": "bench-key",
            "AXE_OPENAI_BASE_URL": llm_url,
        }

    def agent(self, name: str, memory: bytes | None, *, last_n: int, enabled: bool = True) -> None:
        (self.agents / f"{name}.toml").write_text(agent_toml(name, last_n=last_n, enabled=enabled))
        if memory is not None:
            (self.memory / f"{name}.md").write_bytes(memory)


def row(figure: Figure) -> str:
    return (
        f"  {figure.label:<26} {figure.seconds * 1000:8.1f} ms  {figure.peak_kib / 1024:7.1f} MiB"
    )


def httpx_imported(env: dict[str, str], args: list[str]) -> bool:
    done = subprocess.run(
        [PYTHON, "-X", "importtime", "-m", "axe", *args],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    return any(line.rsplit("|", 1)[-1].strip() == "httpx" for line in done.stderr.splitlines())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, one run each")
    parser.add_argument("--runs", type=int, default=None, help="runs per scenario (default 7)")
    options = parser.parse_args()
    runs = options.runs or (1 if options.smoke else 7)
    big_bytes = 1 * MIB if options.smoke else 100 * MIB
    fleet = 5 if options.smoke else 100

    root = Path(tempfile.mkdtemp(prefix="axe-bench-"))
    try:
        with instant_llm() as url, loopback_proxy() as proxy:
            report(
                root, url, proxy, runs=runs, big_bytes=big_bytes, fleet=fleet, smoke=options.smoke
            )
        bench_big_logs.report(root / "big-logs", smoke=options.smoke)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def via_proxy(env: dict[str, str], url: str, proxy: LoopbackProxy) -> dict[str, str]:
    """``env`` with the LLM reached through ``proxy`` by a name only the proxy resolves."""
    port = url.rsplit(":", 1)[1]
    return {**env, "AXE_OPENAI_BASE_URL": f"http://{LLM_HOST}:{port}", "HTTP_PROXY": proxy.url}


def report(
    root: Path,
    url: str,
    proxy: LoopbackProxy,
    *,
    runs: int,
    big_bytes: int,
    fleet: int,
    smoke: bool,
) -> None:
    space = Workspace(root / "home", url)
    env = space.env
    space.agent("small", b"".join(entry(i, 200) for i in range(10)), last_n=5)
    space.agent("quiet", None, last_n=5, enabled=False)
    pristine_big = root / "big.pristine"
    pristine_big.write_bytes(memory_log(big_bytes, 450))
    big_size = pristine_big.stat().st_size  # the bench itself does not keep the log in memory
    space.agent("big", None, last_n=100)
    big_path = space.memory / "big.md"
    small_pristine = (space.memory / "small.md").read_bytes()

    analyst_entries = 2_000 if smoke else 100_000
    space.agent("diary", analyst_log(analyst_entries), last_n=0)

    fleet_space = Workspace(root / "fleet", url)
    one_space = Workspace(root / "one", url)
    fleet_log = b"".join(entry(i, 200) for i in range(50))
    for index in range(fleet):
        fleet_space.agent(f"agent-{index:03d}", fleet_log, last_n=10)
    one_space.agent("agent-000", fleet_log, last_n=10)

    def restore_big() -> None:
        shutil.copyfile(pristine_big, big_path)

    def restore_small() -> None:
        (space.memory / "small.md").write_bytes(small_pristine)

    def restore_fleet() -> None:
        for index in range(fleet):
            (fleet_space.memory / f"agent-{index:03d}.md").write_bytes(fleet_log)
        (one_space.memory / "agent-000.md").write_bytes(fleet_log)

    print(
        f"axe gc benchmark: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {platform.system()} "
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"median of {runs} run{'s' * (runs != 1)}{' (smoke)' if smoke else ''}"
    )

    import_floor = measure("import floor", [PYTHON, "-c", "import click, attrs, cattrs"], env, runs)
    http_floor = measure(
        "import+httpx floor", [PYTHON, "-c", "import click, attrs, cattrs, httpx"], env, runs
    )
    request_floor = measure(
        "import+httpx+httpcore",
        [PYTHON, "-c", "import click, attrs, cattrs, httpx, httpcore"],
        env,
        runs,
    )
    copy_target = root / "copy.md"
    cp_floor = measure("cp floor", ["cp", str(pristine_big), str(copy_target)], env, runs)

    missing = measure("gc <missing agent>", [AXE, "gc", "missing"], env, runs, expect_exit=2)
    help_page = measure("gc --help", [AXE, "gc", "--help"], env, runs)
    disabled = measure("gc <memory disabled>", [AXE, "gc", "quiet"], env, runs)
    small = measure("gc, 10 entries", [AXE, "gc", "small"], env, runs, before_each=restore_small)
    big_run = measure(
        f"gc, {big_size / MIB:.0f} MiB log",
        [AXE, "gc", "big"],
        env,
        max(1, runs - 2),
        before_each=restore_big,
    )
    analyst = measure(
        f"offline analysis, {analyst_entries:,}",
        [AXE, "gc", "diary", "--dry-run", "--model", "builtin/heuristic"],
        env,
        max(1, runs - 4),
    )
    one = measure(
        "gc --all, 1 agent", [AXE, "gc", "--all"], one_space.env, runs, before_each=restore_fleet
    )
    many = measure(
        f"gc --all, {fleet} agents",
        [AXE, "gc", "--all"],
        fleet_space.env,
        runs,
        before_each=restore_fleet,
    )
    small_proxied = measure(
        "proxied gc, 10 entries",
        [AXE, "gc", "small"],
        via_proxy(env, url, proxy),
        runs,
        before_each=restore_small,
    )
    one_proxied = measure(
        "proxied --all, 1 agent",
        [AXE, "gc", "--all"],
        via_proxy(one_space.env, url, proxy),
        runs,
        before_each=restore_fleet,
    )
    many_proxied = measure(
        f"proxied --all, {fleet} agents",
        [AXE, "gc", "--all"],
        via_proxy(fleet_space.env, url, proxy),
        runs,
        before_each=restore_fleet,
    )

    print("\nfloors")
    for figure in (import_floor, http_floor, request_floor, cp_floor):
        print(row(figure))
    print("\naxe")
    for figure in (missing, help_page, disabled, small, big_run, analyst, one, many):
        print(row(figure) + " peak RSS")
    for figure in (small_proxied, one_proxied, many_proxied):
        print(row(figure) + " peak RSS")

    per_agent_ms = (many.seconds - one.seconds) / max(1, fleet - 1) * 1000
    per_agent_proxied_ms = (many_proxied.seconds - one_proxied.seconds) / max(1, fleet - 1) * 1000
    no_http = not any(
        httpx_imported(env, args) for args in (["gc", "missing"], ["gc", "--help"], ["gc", "quiet"])
    )
    goals = [
        ("missing agent", missing.seconds / import_floor.seconds, 1.25, "x import floor"),
        ("gc --help", help_page.seconds / import_floor.seconds, 1.25, "x import floor"),
        ("memory disabled", disabled.seconds / import_floor.seconds, 1.25, "x import floor"),
        ("gc of a small log", small.seconds / http_floor.seconds, 1.25, "x import+httpx floor"),
        ("  (for reference)", small.seconds / request_floor.seconds, 1.25, "x ...+httpcore floor"),
        ("big log, time", big_run.seconds / cp_floor.seconds, 8.0, "x cp of the file"),
        ("big log, peak RSS", big_run.peak_kib * 1024 / big_size, 2.5, "x file size"),
        ("--all, per extra agent", per_agent_ms, 2.0, "ms"),
        ("  (via a loopback proxy)", per_agent_proxied_ms, 2.0, "ms"),
        ("offline analysis", analyst.seconds, 2.0, f"s, {analyst_entries:,} entries"),
    ]
    print("\ngoals")
    for name, value, target, unit in goals:
        verdict = "met" if value <= target else "NOT MET"
        print(f"  {name:<24} {value:7.2f} {unit:<22} target <= {target:<5} {verdict}")
    print(
        f"  {'httpx on no-HTTP paths':<24} {'never imported' if no_http else 'IMPORTED':<30} "
        f"target: never  {'met' if no_http else 'NOT MET'}"
    )


if __name__ == "__main__":
    main()
