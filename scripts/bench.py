"""`make bench`: wall time and peak memory of whole `axe` processes, beside floors.

Absolute times drift on a shared machine; a figure's ratio to a floor measured in the same
run does not. So each figure stands beside its floor: `python -c "import click, attrs,
cattrs"` (what any start-up of axe imports), the same plus httpx (what a run that sends a
request imports), and `cp` of the same big file. A guard rail is the most a figure may be:
the bench prints "within" or "OUTSIDE" beside it and never fails, because a figure on a
loaded machine is news for a person, not a verdict for CI.

Each figure is the median of N runs after one dropped warm-up run. The scenarios of a group
are taken in turns (one run of each, then the next round), so a machine whose speed drifts
while the bench runs slows a figure and its floor alike. Each process's peak RSS is its own,
from wait4. The LLM is a loopback endpoint that answers at once; the proxied runs reach it
through the test suite's loopback proxy under a name only that proxy resolves, so a run
that bypassed the proxy would fail.

    python scripts/bench.py              # the full run (several minutes)
    python scripts/bench.py --smoke      # tiny sizes, one run: proves the script still works
    python scripts/bench.py --runs 11    # more runs per figure: steadier medians
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
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
from typing import NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # for tests.*
sys.path.insert(0, str(Path(__file__).resolve().parent))  # for bench_big_logs

import bench_big_logs
from tests.e2e.loopback_proxy import LLM_HOST, loopback_proxy, unused_port
from tests.support import CANNED_ANALYSIS, AxeHome, entries, entry

PYTHON = sys.executable
AXE = str(Path(PYTHON).with_name("axe"))  # the console script installed beside this python
IMPORTS = "import click, attrs, cattrs"
MIB = 1024 * 1024
REPLY = json.dumps({"choices": [{"message": {"content": CANNED_ANALYSIS}}]}).encode()

# A child's ru_maxrss starts from the memory of the process that forked it, so commands are
# spawned by this small helper rather than by the bench (which is larger); the helper also
# does the timing, so its own start-up is not counted.
SPAWN_HELPER = """
import os, sys, time
devnull = os.open(os.devnull, os.O_RDWR)
started = time.perf_counter()
pid = os.posix_spawn(sys.argv[1], sys.argv[1:], os.environ, file_actions=[
    (os.POSIX_SPAWN_DUP2, devnull, 1), (os.POSIX_SPAWN_DUP2, devnull, 2)])
_, status, usage = os.wait4(pid, 0)
print(time.perf_counter() - started, usage.ru_maxrss, os.waitstatus_to_exitcode(status))
"""


class Run(NamedTuple):
    """A scenario: its command, its environment, what to restore before each run (gc trims
    what it measures) and the exit code it must end with."""

    label: str
    command: list[str]
    env: dict[str, str]
    before_each: Callable[[], object] = lambda: None
    exit_code: int = 0


class Figure(NamedTuple):
    label: str
    ms: float  # median wall time
    peak_kib: float  # median peak RSS

    def row(self) -> str:
        return f"  {self.label:<34} {self.ms:8.1f} ms {self.peak_kib / 1024:7.1f} MiB peak RSS"


def rail(name: str, value: float, unit: str, against: str, limit: float) -> str:
    """A figure beside what it is measured against and the most it may be."""
    verdict = "within" if value <= limit else "OUTSIDE"
    return f"  {name:<28} {value:7.2f} {unit:<2} {against:<32} rail <= {limit:.4g} {unit} {verdict}"


def ratio(name: str, figure: Figure, floor: Figure, floor_name: str, limit: float) -> str:
    return rail(name, figure.ms / floor.ms, "x", f"{floor_name}: {floor.ms:.1f} ms", limit)


def run_once(run: Run) -> tuple[float, int]:
    """One process, timed from spawn to reaped, and its peak RSS in KiB."""
    run.before_each()
    program = shutil.which(run.command[0], path=run.env.get("PATH")) or run.command[0]
    done = subprocess.run(
        [PYTHON, "-S", "-c", SPAWN_HELPER, program, *run.command[1:]],
        env=run.env,
        capture_output=True,
        text=True,
        check=True,
    )
    seconds, peak, code = done.stdout.split()
    if int(code) != run.exit_code:
        sys.exit(f"bench: {run.label}: exit code {code}, expected {run.exit_code}")
    return float(seconds), int(peak)


def measure(runs: int, *scenarios: Run, warm_up: bool = True) -> list[Figure]:
    """Each scenario's median over ``runs`` rounds, one run of each scenario a round; the
    warm-up round (caches, page cache) is dropped."""
    rounds = [[run_once(run) for run in scenarios] for _ in range(runs + warm_up)][warm_up:]
    median = statistics.median
    return [
        Figure(run.label, median(r[i][0] for r in rounds) * 1000, median(r[i][1] for r in rounds))
        for i, run in enumerate(scenarios)
    ]


@contextmanager
def instant_llm() -> Iterator[str]:
    """An OpenAI-shaped endpoint on loopback that reads each request, drops it and answers at
    once. (The test suite's loopback parses and keeps every body: on a 100 MiB log that work
    would be counted as gc's.)"""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # no reply waits for the client's delayed ACK

        def do_POST(self) -> None:
            left = int(self.headers.get("content-length", "0"))
            while left > 0 and (chunk := self.rfile.read(min(left, MIB))):
                left -= len(chunk)
            head = f"HTTP/1.1 200 OK\r\ncontent-length: {len(REPLY)}\r\n"
            self.wfile.write(f"{head}content-type: application/json\r\n\r\n".encode() + REPLY)

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


def compile_package() -> None:
    """Byte-compile the ``axe`` package measured, as ``pip install`` does: with
    PYTHONDONTWRITEBYTECODE set (as on this project's machines) an editable install would
    otherwise compile every module it imports anew on each run, most of a start-up's work."""
    where = "import axe, os; print(os.path.dirname(axe.__file__))"
    package = subprocess.run([PYTHON, "-c", where], capture_output=True, text=True, check=True)
    subprocess.run([PYTHON, "-m", "compileall", "-q", package.stdout.strip()], check=True)


class Fleet:
    """A home of agents on the instant LLM, each with the same log, which ``restore`` puts
    back after a run trimmed it."""

    def __init__(self, root: Path, url: str, agents: int, log: bytes, *, last_n: int) -> None:
        self.home, self.log = AxeHome(root), log
        self.names = [f"agent-{index:03d}" for index in range(agents)]
        for name in self.names:
            self.home.add_agent(name, model="openai/gpt-4o", last_n=last_n)
        self.restore()
        self.env = {"PATH": os.environ.get("PATH", ""), **self.home.env}
        self.env |= {"OPENAI_API_KEY": "bench", "AXE_OPENAI_BASE_URL": url}

    def restore(self) -> None:
        for name in self.names:
            self.home.write_memory(name, self.log)

    def via(self, proxy: str) -> dict[str, str]:
        """The environment with the LLM reached through ``proxy``, by a name only it resolves."""
        port = self.env["AXE_OPENAI_BASE_URL"].rsplit(":", 1)[1]
        return self.env | {"AXE_OPENAI_BASE_URL": f"http://{LLM_HOST}:{port}", "HTTP_PROXY": proxy}


def processes(root: Path, *, runs: int, big_bytes: int, agents: int) -> None:
    """Start-ups, a small gc, a big log and fleets, beside their floors: prints the figures
    and the guard rails."""
    startup, big_runs = 3 * runs, max(1, runs - 2)
    gc, gc_all = [AXE, "gc", "agent-000"], [AXE, "gc", "--all"]
    with instant_llm() as url, loopback_proxy() as proxy:
        small = Fleet(root / "small", url, 1, entries(10), last_n=5)
        one = Fleet(root / "one", url, 1, entries(50), last_n=10)
        many = Fleet(root / "many", url, agents, entries(50), last_n=10)
        quiet = Fleet(root / "quiet", url, agents, entries(50), last_n=10)
        quiet_one = Fleet(root / "quiet-one", url, 1, entries(50), last_n=10)
        quiet_run = [*gc_all, "--skip-unchanged"]
        for fleet in (quiet, quiet_one):
            subprocess.run(quiet_run, env=fleet.env, capture_output=True, check=True)
            # A provider that refuses every connection: a quiet run that sent a request fails.
            fleet.env["AXE_OPENAI_BASE_URL"] = f"http://127.0.0.1:{unused_port()}"
        filler = "x" * 390  # entries of about 450 bytes
        count = big_bytes // len(entry(99_999, None, filler))
        big_log = b"".join(entry(i, None, filler) for i in range(count))
        big = Fleet(root / "big", url, 1, big_log, last_n=100)
        pristine = root / "big.md"
        pristine.write_bytes(big_log)
        mib, env = f"{len(big_log) / MIB:.0f} MiB", small.env

        floors_and_start_ups = measure(
            startup,
            Run(IMPORTS, [PYTHON, "-c", IMPORTS], env),
            Run(f"{IMPORTS}, httpx", [PYTHON, "-c", f"{IMPORTS}, httpx"], env),
            Run("  and httpx.Client()", [PYTHON, "-c", f"{IMPORTS}, httpx; httpx.Client()"], env),
            Run("axe gc --help", [AXE, "gc", "--help"], env),
            Run("axe --version", [AXE, "--version"], env),
            Run("axe gc <missing agent>", [AXE, "gc", "missing"], env, exit_code=2),
            Run("axe gc, 10 entries", gc, env, small.restore),
        )
        big_file = measure(
            big_runs,
            Run(f"cp of a {mib} log", ["cp", str(pristine), str(root / "copy.md")], env),
            Run(f"axe gc, {mib} log", gc, big.env, big.restore),
        )
        fleets = measure(
            runs,
            Run("axe gc --all, 1 agent", gc_all, one.env, one.restore),
            Run(f"axe gc --all, {agents} agents", gc_all, many.env, many.restore),
            Run("--skip-unchanged, 1 quiet", quiet_run, quiet_one.env),
            Run(f"--skip-unchanged, {agents} quiet", quiet_run, quiet.env),
            Run("proxied gc, 10 entries", gc, small.via(proxy.url), small.restore),
            Run("proxied gc --all, 1 agent", gc_all, one.via(proxy.url), one.restore),
            Run(f"proxied gc --all, {agents}", gc_all, many.via(proxy.url), many.restore),
        )
    floor, http_floor, client_floor, help_page, version, missing, small_gc = floors_and_start_ups
    cp, big_gc = big_file
    all_one, all_many, quiet_one_run, all_quiet, small_via, one_via, many_via = fleets

    print(f"\nwhole processes: medians of {startup} runs, {big_runs} the big log, {runs} fleets")
    for figure in (*floors_and_start_ups, *big_file, *fleets):
        print(figure.row())
    per_agent = (all_many.ms - all_one.ms) / max(1, agents - 1)
    print("\nguard rails, each beside its floor measured in the same run")
    print(ratio("gc --help", help_page, floor, "import floor", 1.10))
    print(ratio("--version", version, floor, "import floor", 1.10))
    print(ratio("gc, 10 entries", small_gc, http_floor, "import floor + httpx", 1.25))
    print(ratio(f"gc, {mib} log", big_gc, cp, "cp", 12))
    print(rail("  peak RSS", big_gc.peak_kib * 1024 / len(big_log), "x", "the file's size", 2.5))
    print(rail("--all, per extra agent", per_agent, "ms", f"{agents} agents against 1", 2.5))
    quiet_limit, quiet_floor = floor.ms + 0.5 * agents, "import floor + 0.5 ms an agent"
    print(rail(f"--skip-unchanged, {agents} quiet", all_quiet.ms, "ms", quiet_floor, quiet_limit))
    print("\nfigures without rails")
    print(f"  gc <missing agent>              {missing.ms / floor.ms:6.2f} x the import floor")
    client, with_client = client_floor.ms / http_floor.ms, small_gc.ms / client_floor.ms
    print(f"  httpx.Client() alone            {client:6.2f} x the import floor + httpx")
    print(f"  gc, 10 entries                  {with_client:6.2f} x that and a client")
    quiet_start = quiet_one_run.ms / floor.ms
    quiet_each = (all_quiet.ms - quiet_one_run.ms) / max(1, agents - 1)
    print(f"  --skip-unchanged, 1 quiet       {quiet_start:6.2f} x the import floor")
    print(f"  --skip-unchanged, per agent     {quiet_each:6.2f} ms")
    print(f"  proxied gc, 10 entries          {small_via.ms / small_gc.ms:6.2f} x the direct run")
    per_agent_via = (many_via.ms - one_via.ms) / max(1, agents - 1)
    print(f"  proxied --all, per extra agent  {per_agent_via:6.2f} ms")


def repeated_tasks(count: int) -> Iterator[bytes]:
    """Tasks that repeat, some reworded; results with failures and long ones."""
    tasks = [f"Review PR #{n}" for n in range(3000)]
    tasks += ["Summarise the daily sales report", "summarize daily sales report"]
    tasks.append("Check CI status for main")
    results = ["Found 3 issues", "Error: timeout after 30s calling the API", "All good"]
    results.append("x" * 997 + "...")
    for i in range(count):
        yield entry(i, tasks[i * 7919 % len(tasks)], results[i * 31 % len(results)])


def one_task_many_ids(count: int) -> Iterator[bytes]:
    """Every run the same job on another id ("Review PR #4411"), with its own result."""
    for i in range(count):
        yield entry(i, f"Review PR #{i}", f"Reviewed change {i}: {i % 7} comments.")


POOL = 128  # words each slot of a task draws from


def made_up_words(count: int) -> list[str]:
    """Distinct pronounceable words ("vuzoli"), none of them an English stop word."""
    words: dict[str, None] = {}
    state = 1
    while len(words) < count:
        state = (state * 1103515245 + 12345) % 2**31
        letters = [
            ("bdfgklmnprstvz", "aeiou")[i % 2][(state >> shift) % (14, 5)[i % 2]]
            for i, shift in enumerate((3, 7, 10, 14, 17))
        ]
        words["".join(letters) + "ia"[state >> 21 & 1]] = None
    return list(words)


def distinct_tasks(count: int) -> Iterator[bytes]:
    """Tasks that all differ, as `axe run` leaves a log when every task is new (about 225
    bytes an entry). A task names a word of each of four pools, the fourth a checksum of the
    other three, so any two tasks differ in at least two words: none is a near-duplicate."""
    words = made_up_words(8 * POOL)
    w = [words[slot * POOL : (slot + 1) * POOL] for slot in range(8)]
    verbs = ["Summarise", "Review", "Draft", "Explain", "Compare", "Translate", "Check", "Plan"]
    for i in range(count):
        a, b, c = i % POOL, i // POOL % POOL, i // POOL**2 % POOL
        e, f, g = (a * 5 + 1) % POOL, (b * 3 + 2) % POOL, (c * 7 + 3) % POOL
        d, h = (a + b + c) % POOL, (e + f + g) % POOL
        minute = i * 7  # the entries of a million runs, spread over a year
        month, day, hour = 1 + minute // 40320 % 12, 1 + minute // 1440 % 28, minute // 60 % 24
        task = f"{verbs[i % 8]} the {w[0][a]} {w[1][b]} about {w[2][c]} for {w[3][d]}"
        result = (
            f"Error: {w[4][e]} failed while reading {w[5][f]} {w[6][g]} from {w[7][h]}; "
            f"nothing was written and the {w[4][f]} stays as it was."
            if i % 20 == 7
            else f"Wrote {w[4][e]} notes on {w[5][f]} and {w[6][g]}; the {w[7][h]} section "
            f"needs {w[4][g]} {w[5][h]} before it can go to {w[6][e]} and {w[7][f]} next week."
        )
        stamp = f"2026-{month:02d}-{day:02d}T{hour:02d}:{minute % 60:02d}:00Z"
        yield f"## {stamp}\n**Task:** {task}\n**Result:** {result}\n\n".encode()


def offline(root: Path, *, runs: int, smoke: bool) -> None:
    """The offline analyst (no request) on tasks that repeat, on tasks that all differ at
    three sizes (time and memory should grow linearly) and on one task run on many ids."""
    home = AxeHome(root)
    home.add_agent("diary", last_n=0)
    log = home.memory_path("diary")
    command = [AXE, "gc", "diary", "--dry-run", "--model", "builtin/heuristic"]
    env = {"PATH": os.environ.get("PATH", ""), **home.env}
    sizes = (100, 1_000, 10_000) if smoke else (10_000, 100_000, 1_000_000)
    logs = [(repeated_tasks, sizes[1]), *((distinct_tasks, n) for n in sizes)]
    print(f"\noffline analyst (gc --dry-run --model builtin/heuristic): medians of {runs} runs,")
    print("  the largest log one run; then the log's size, peak RSS over it, time per entry")
    per_entry = []
    for write, count in [*logs, (one_task_many_ids, sizes[1])]:
        with log.open("wb") as out:
            out.writelines(write(count))
        label = f"{write.__name__.replace('_', ' ')}, {count:,}"
        largest = count == sizes[-1]
        (figure,) = measure(1 if largest else runs, Run(label, command, env), warm_up=not largest)
        size = log.stat().st_size
        per_entry.append(figure.ms / 1000 / count)
        print(
            f"{figure.row()} {size / MIB:7.1f} MiB {figure.peak_kib * 1024 / size:6.2f}x "
            f"{per_entry[-1] * 1e6:6.1f} us"
        )
    print(f"  distinct tasks, 10x the entries: {per_entry[3] / per_entry[2]:.2f}x time an entry")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, one run")
    runs_help = "runs per figure (default 7; start-ups three times as many, the big log 2 fewer)"
    parser.add_argument("--runs", type=int, help=runs_help)
    options = parser.parse_args()
    runs = options.runs or (1 if options.smoke else 7)
    print(
        f"axe gc benchmark: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {platform.system()} "
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"load average {os.getloadavg()[0]:.1f}{', smoke' if options.smoke else ''}"
    )
    compile_package()
    with tempfile.TemporaryDirectory(prefix="axe-bench-") as temporary:
        root = Path(temporary)
        big_bytes, agents = (1 * MIB, 5) if options.smoke else (100 * MIB, 100)
        processes(root / "processes", runs=runs, big_bytes=big_bytes, agents=agents)
        offline(root / "offline", runs=runs, smoke=options.smoke)
        bench_big_logs.report(root / "big-logs", smoke=options.smoke)


if __name__ == "__main__":
    main()
