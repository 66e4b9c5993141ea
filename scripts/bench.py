"""`make bench`: wall time and peak memory of whole `axe` processes, next to floors.

Absolute times drift on a shared machine; ratios to floors measured in the same run do not.
So every goal is printed as a ratio: `axe` against `python -c "import click, attrs, cattrs"`
(with and without httpx) and against `cp` of the same big file. Scenarios are built in a
temporary directory and the LLM is a loopback endpoint that answers at once; the "via proxy"
runs reach it through the test suite's loopback proxy (HTTP_PROXY, plain forwarding) under a
name only that proxy resolves, so a run that bypassed the proxy would fail.

    python scripts/bench.py            # the full run (a few minutes)
    python scripts/bench.py --smoke    # tiny sizes, fewest runs: proves the script still works

The package is byte-compiled first, as an installed one is: with PYTHONDONTWRITEBYTECODE set
(as on this project's machines) an editable install would otherwise compile every module
it imports anew on each run, some 40 % of a start-up's instructions.
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
import time
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

from axe.adapters.llm.body import MEMORY, JsonBody
from axe.adapters.shared.reading import read_regular
from axe.domain.entries import count_entries
from axe.domain.log_index import LogIndex

PYTHON = sys.executable
IMPORTS = "import click, attrs, cattrs"  # what a start-up is measured against
WITHOUT_HTTPX_CLI = 'import sys; sys.modules["httpx._main"] = None; '  # as axe.adapters.llm
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


_SINK = memoryview(bytearray(MIB))  # what the loopback LLM reads bodies into, and drops


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


@frozen
class Goal:
    """A measured figure, the most it may be, and what it is measured against."""

    name: str
    value: float
    target: float
    unit: str
    against: str = ""  # the floor, as measured in the same run

    @classmethod
    def ratio(cls, name: str, figure: Figure, floor: Figure, target: float) -> Goal:
        """``figure``'s time over ``floor``'s, the floor said beside it."""
        against = f"{floor.label}: {floor.seconds * 1000:.1f} ms"
        return cls(name, figure.seconds / floor.seconds, target, "x", against)

    def line(self) -> str:
        met = self.value <= self.target
        verdict = "met" if met else "NOT MET"
        # A third decimal where two would show the goal itself beside NOT MET.
        close = f"{self.value:.2f}" == f"{self.target:.2f}"
        shown = f"{self.value:7.3f}" if close and not met else f"{self.value:7.2f}"
        return (
            f"  {self.name:<27} {shown} {self.unit:<14} {self.against:<44} "
            f"goal <= {self.target!s:<5} {verdict}"
        )


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


@frozen
class Run:
    """One scenario to time: its command, its environment, what to set up before each run
    and the exit code it must end with."""

    label: str
    command: list[str]
    env: dict[str, str]
    before_each: Callable[[], None] = lambda: None
    expect_exit: int = 0


def measure_in_turns(runs: int, *scenarios: Run, warm_up: bool = True) -> list[Figure]:
    """Each scenario ``runs`` times after a warm-up run (which warms caches and is dropped),
    taken in turns (one run of each, then the next round), so that a machine whose speed
    drifts while the bench runs (this project's moved by a third within minutes) slows a
    figure and its floor alike, and a ratio of the two stays the machine's, not the
    moment's."""
    samples: list[list[Sample]] = [[] for _ in scenarios]
    for _ in range(runs + warm_up):
        for scenario, taken in zip(scenarios, samples, strict=True):
            scenario.before_each()
            taken.append(run_once(scenario.command, scenario.env))
    figures = []
    for scenario, taken in zip(scenarios, samples, strict=True):
        if codes := {s.exit_code for s in taken} - {scenario.expect_exit}:
            sys.exit(
                f"bench: {scenario.label}: exit code {codes.pop()}, expected {scenario.expect_exit}"
            )
        kept = taken[1:] if warm_up else taken
        seconds = statistics.median(s.seconds for s in kept)
        figures.append(
            Figure(scenario.label, seconds, int(statistics.median(s.peak_kib for s in kept)))
        )
    return figures


@contextmanager
def instant_llm() -> Iterator[str]:
    """An OpenAI-shaped endpoint on loopback that reads the request and answers at once."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # no reply waits for the client's delayed ACK

        def do_POST(self) -> None:
            remaining = int(self.headers.get("content-length", "0"))
            sink = _SINK  # one scratch buffer: a new zeroed MiB per request cost ~0.1 ms each
            while remaining:
                got = self.rfile.readinto(sink[: min(remaining, MIB)])
                if not got:
                    break
                remaining -= got
            head = (
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                f"content-length: {len(REPLY)}\r\n\r\n"
            ).encode()
            self.wfile.write(head + REPLY)

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


_CONSONANTS = "bdfgklmnprstvz"
_VOWELS = "aeiou"
_VERBS = ["Summarise", "Review", "Draft", "Explain", "Compare", "Translate"]
_VERBS += ["Check", "Plan", "Find", "Outline", "Estimate", "List"]
_POOL = 128  # words per slot of a task; 128**3 tasks before any repeats


def _made_up_words(count: int) -> list[str]:
    """Distinct pronounceable words ("vuzoli"), none of them an English stop word."""
    words: list[str] = []
    seen: set[str] = set()
    state = 1
    while len(words) < count:
        state = (state * 1103515245 + 12345) % 2**31
        c = [_CONSONANTS[(state >> shift) % 14] for shift in (3, 10, 17)]
        v = [_VOWELS[(state >> shift) % 5] for shift in (7, 14)]
        word = c[0] + v[0] + c[1] + v[1] + c[2] + "ia"[state >> 21 & 1]
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


def distinct_entry(index: int, pools: list[list[str]]) -> bytes:
    """Entry ``index`` of a log whose tasks and results are all different.

    Each task names one word from each of four pools, the fourth a checksum of the other
    three, so any two tasks differ in at least two words: no two are even near-duplicates.
    """
    a, b, c = index % _POOL, index // _POOL % _POOL, index // _POOL**2 % _POOL
    d = (a + b + c) % _POOL
    e, f, g = (a * 5 + 1) % _POOL, (b * 3 + 2) % _POOL, (c * 7 + 3) % _POOL
    h = (e + f + g) % _POOL
    minute = index * 7
    stamp = (
        f"2026-{1 + minute // 40320 % 12:02d}-{1 + minute // 1440 % 28:02d}"
        f"T{minute // 60 % 24:02d}:{minute % 60:02d}:00Z"
    )
    task = f"{_VERBS[index % 12]} the {pools[0][a]} {pools[1][b]} about {pools[2][c]}"
    task += f" for {pools[3][d]}"
    if index % 20 == 7:
        result = (
            f"Error: {pools[4][e]} failed while reading {pools[5][f]} {pools[6][g]} from "
            f"{pools[7][h]}; nothing was written and the {pools[4][f]} stays as it was."
        )
    else:
        result = (
            f"Wrote {pools[4][e]} notes on {pools[5][f]} and {pools[6][g]}; the {pools[7][h]} "
            f"section needs {pools[4][g]} {pools[5][h]} before it can go to {pools[6][e]} and "
            f"{pools[7][f]} next week."
        )
    return f"## {stamp}\n**Task:** {task}\n**Result:** {result}\n\n".encode()


def write_distinct_log(path: Path, count: int) -> None:
    """A log as `axe run` leaves it when every task is new (about 225 bytes an entry)."""
    words = _made_up_words(8 * _POOL)
    pools = [words[i * _POOL : (i + 1) * _POOL] for i in range(8)]
    with path.open("wb") as out:
        for start in range(0, count, 10_000):
            out.write(
                b"".join(distinct_entry(i, pools) for i in range(start, min(count, start + 10_000)))
            )


def write_one_task_many_ids_log(path: Path, count: int) -> None:
    """Every run the same job on another id ("Review PR #4411"), with its own result."""
    with path.open("wb") as out:
        for index in range(count):
            day, minute = divmod(index, 1440)
            hour, minute = divmod(minute, 60)
            stamp = f"2026-{1 + day // 28 % 12:02d}-{1 + day % 28:02d}T{hour:02d}:{minute:02d}:00Z"
            out.write(
                f"## {stamp}\n**Task:** Review PR #{index}\n"
                f"**Result:** Reviewed change {index}: {index % 7} comments.\n\n".encode()
            )


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


def quiet_fleet(space: Workspace, fleet: int, log: bytes) -> dict[str, str]:
    """``fleet`` agents that one ``gc --all --skip-unchanged`` has analysed and recorded,
    and an environment whose provider refuses every connection: a run in it that sent any
    request would fail (exit 1), so a measured run proves it sent none."""
    for index in range(fleet):
        space.agent(f"agent-{index:03d}", log, last_n=10)
    subprocess.run(
        [AXE, "gc", "--all", "--skip-unchanged"], env=space.env, capture_output=True, check=True
    )
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return {**space.env, "AXE_OPENAI_BASE_URL": f"http://127.0.0.1:{port}"}


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
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, the fewest runs")
    parser.add_argument(
        "--runs",
        type=int,
        default=None,
        help="runs per scenario (default 7; start-ups take three times as many, big logs fewer)",
    )
    parser.add_argument("--passes", type=Path, help=argparse.SUPPRESS)  # see big_log_passes
    options = parser.parse_args()
    if options.passes is not None:
        print(json.dumps(timed_passes(options.passes)))
        return
    runs = options.runs or (1 if options.smoke else 7)
    big_bytes = 1 * MIB if options.smoke else 100 * MIB
    fleet = 5 if options.smoke else 100

    root = Path(tempfile.mkdtemp(prefix="axe-bench-"))
    try:
        compile_package()
        with instant_llm() as url, loopback_proxy() as proxy:
            goals, others, no_http = report(
                root, url, proxy, runs=runs, big_bytes=big_bytes, fleet=fleet, smoke=options.smoke
            )
        ten_window, fleet_share = bench_big_logs.report(root / "big-logs", smoke=options.smoke)
        goals.append(Goal("ten-window log, 4 at once", ten_window[0], 1.10, "x", ten_window[1]))
        others.append(
            Goal("--all --jobs, slow provider", fleet_share, 0.1, "x", "a sequential run")
        )
        print_goals(goals, others, no_http=no_http)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def big_log_passes(path: Path, cp_floor: Figure, imports: Figure) -> str:
    """The passes a run makes over a big log's bytes, each timed on its own: what the gc
    row's time is made of, beside `cp` of the same file."""
    timed = timed_passes(path)
    shown = ", ".join(f"{name} {seconds * 1000:.0f}" for name, seconds in timed.items())
    floor = sum(timed.values()) + imports.seconds
    return (
        f"  {f'{path.stat().st_size / MIB:.0f} MiB log, by pass':<26} {shown} ms (best of 3); "
        f"with the imports {imports.seconds * 1000:.0f} ms = {floor * 1000:.0f} ms, "
        f"{floor / cp_floor.seconds:.1f}x cp"
    )


def timed_passes(path: Path) -> dict[str, float]:
    """Each pass over ``path``'s bytes, the best of three, in seconds."""
    data, _ = read_regular(path)
    part = 3 * MIB  # about what the bench's provider takes a request

    def bodies() -> None:
        for start in range(0, len(data), part):
            for _ in JsonBody({"content": MEMORY}, data[start : start + part]):
                pass

    def estimate() -> None:
        index = LogIndex(data)
        index.cost(0, index.units)

    passes = {
        "read": lambda: read_regular(path),
        "entries": lambda: count_entries(data),
        "index": lambda: LogIndex(data),
        "index and estimate": estimate,
        "request bodies": bodies,
    }
    return {name: min(_seconds(run) for _ in range(3)) for name, run in passes.items()}


def _seconds(run: Callable[[], object]) -> float:
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


def compile_package() -> None:
    """Byte-compile the ``axe`` package being measured, as ``pip install`` does."""
    package = subprocess.run(
        [PYTHON, "-c", "import axe, os; print(os.path.dirname(axe.__file__))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    subprocess.run([PYTHON, "-m", "compileall", "-q", package], check=True, capture_output=True)


def via_proxy(env: dict[str, str], url: str, proxy: LoopbackProxy) -> dict[str, str]:
    """``env`` with the LLM reached through ``proxy`` by a name only the proxy resolves."""
    port = url.rsplit(":", 1)[1]
    return {**env, "AXE_OPENAI_BASE_URL": f"http://{LLM_HOST}:{port}", "HTTP_PROXY": proxy.url}


@frozen
class Scenario:
    """One offline analysis: how many entries, how big the log, what it cost."""

    entries: int
    log_bytes: int
    figure: Figure

    def line(self) -> str:
        return (
            f"{row(self.figure)} peak RSS {self.log_bytes / MIB:7.1f} MiB log "
            f"{self.figure.peak_kib * 1024 / self.log_bytes:5.2f}x log "
            f"{self.figure.seconds / self.entries * 1e6:6.1f} us/entry"
        )


def offline_analysis(space: Workspace, *, runs: int, smoke: bool) -> list[Goal]:
    """`--model builtin/heuristic` on a log whose tasks repeat, logs whose every task is
    different at three sizes (time and memory must grow linearly), and one job run on
    many ids. Prints the figures and returns the goals (issues 4 and 12)."""
    offline = [AXE, "gc", "--dry-run", "--model", "builtin/heuristic"]
    few = max(1, runs - 4)

    def scenario(name: str, label: str, entries: int, *, largest: bool = False) -> Scenario:
        (figure,) = measure_in_turns(
            1 if largest else few, Run(label, [*offline, name], space.env), warm_up=not largest
        )
        return Scenario(entries, (space.memory / f"{name}.md").stat().st_size, figure)

    repeated_entries = 2_000 if smoke else 100_000
    space.agent("diary", analyst_log(repeated_entries), last_n=0)
    repeated = scenario("diary", f"repeated tasks, {repeated_entries:,}", repeated_entries)
    sizes = (100, 1_000, 10_000) if smoke else (10_000, 100_000, 1_000_000)
    distinct = []
    for count in sizes:
        space.agent(f"distinct-{count}", None, last_n=0)
        write_distinct_log(space.memory / f"distinct-{count}.md", count)
        label = f"distinct tasks, {count:,}"
        distinct.append(scenario(f"distinct-{count}", label, count, largest=count == sizes[-1]))
        (space.memory / f"distinct-{count}.md").unlink()
    templated_entries = sizes[1]
    space.agent("one-task", None, last_n=0)
    write_one_task_many_ids_log(space.memory / "one-task.md", templated_entries)
    templated = scenario("one-task", f"one task, {templated_entries:,} ids", templated_entries)

    print(f"\noffline analysis (builtin/heuristic), medians of {few} runs (the largest: 1)")
    for figure in (repeated, *distinct, templated):
        print(figure.line())
    middle, largest = distinct[1], distinct[2]
    growth = (largest.figure.seconds / middle.figure.seconds) / (largest.entries / middle.entries)
    return [
        Goal("offline, repeated tasks", repeated.figure.seconds, 2.0, "s", f"{repeated.entries:,}"),
        Goal("offline, distinct tasks", middle.figure.seconds, 3.0, "s", f"{middle.entries:,}"),
        Goal("  peak RSS", middle.figure.peak_kib * 1024 / middle.log_bytes, 5.0, "x log size"),
        Goal("  10x entries", growth, 1.25, "x", "10 times the time of 1/10 the entries"),
    ]


def report(
    root: Path,
    url: str,
    proxy: LoopbackProxy,
    *,
    runs: int,
    big_bytes: int,
    fleet: int,
    smoke: bool,
) -> tuple[list[Goal], list[Goal], bool]:
    """Runs every scenario, prints the figures; the goals, the earlier goals, and whether no
    HTTP machinery loaded on the no-request paths."""
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

    fleet_space = Workspace(root / "fleet", url)
    one_space = Workspace(root / "one", url)
    fleet_log = b"".join(entry(i, 200) for i in range(50))
    for index in range(fleet):
        fleet_space.agent(f"agent-{index:03d}", fleet_log, last_n=10)
    one_space.agent("agent-000", fleet_log, last_n=10)
    quiet_env = quiet_fleet(Workspace(root / "quiet", url), fleet, fleet_log)

    def restore_big() -> None:
        shutil.copyfile(pristine_big, big_path)

    def restore_small() -> None:
        (space.memory / "small.md").write_bytes(small_pristine)

    def restore_fleet() -> None:
        for index in range(fleet):
            (fleet_space.memory / f"agent-{index:03d}.md").write_bytes(fleet_log)
        (one_space.memory / "agent-000.md").write_bytes(fleet_log)

    # A start-up takes a tenth to a quarter of a second, and its goal is a few percent from
    # its floor: three times the rounds, for a median that moves less than that margin.
    startup_runs, big_runs = 3 * runs, max(1, runs - 2)
    print(
        f"axe gc benchmark: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {platform.system()} "
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"medians of {runs} runs ({startup_runs} for the floors and gc's start-ups, {big_runs} "
        f"for the big log){' (smoke)' if smoke else ''}"
    )

    import_floor, http_floor, request_floor, missing, help_page, disabled, small = measure_in_turns(
        startup_runs,
        Run("import click, attrs, cattrs", [PYTHON, "-c", IMPORTS], env),
        Run("... and httpx", [PYTHON, "-c", f"{WITHOUT_HTTPX_CLI}{IMPORTS}, httpx"], env),
        Run(
            "... and httpx, httpcore",
            [PYTHON, "-c", f"{WITHOUT_HTTPX_CLI}{IMPORTS}, httpx, httpcore"],
            env,
        ),
        Run("gc <missing agent>", [AXE, "gc", "missing"], env, expect_exit=2),
        Run("gc --help", [AXE, "gc", "--help"], env),
        Run("gc <memory disabled>", [AXE, "gc", "quiet"], env),
        Run("gc, 10 entries", [AXE, "gc", "small"], env, restore_small),
    )
    copy_target = root / "copy.md"
    cp_floor, big_run = measure_in_turns(
        big_runs,
        Run("cp of the file", ["cp", str(pristine_big), str(copy_target)], env),
        # Split up front, as no OpenAI model takes it whole: the client knows the provider's
        # largest window from the catalogue.
        Run(f"gc, {big_size / MIB:.0f} MiB log", [AXE, "gc", "big"], env, restore_big),
    )
    proxied, proxied_one, proxied_fleet = (
        via_proxy(space_env, url, proxy) for space_env in (env, one_space.env, fleet_space.env)
    )
    one, many, quiet, small_proxied, one_proxied, many_proxied = measure_in_turns(
        runs,
        Run("gc --all, 1 agent", [AXE, "gc", "--all"], one_space.env, restore_fleet),
        Run(f"gc --all, {fleet} agents", [AXE, "gc", "--all"], fleet_space.env, restore_fleet),
        Run(
            f"--skip-unchanged, {fleet} quiet", [AXE, "gc", "--all", "--skip-unchanged"], quiet_env
        ),
        Run("proxied gc, 10 entries", [AXE, "gc", "small"], proxied, restore_small),
        Run("proxied --all, 1 agent", [AXE, "gc", "--all"], proxied_one, restore_fleet),
        Run(f"proxied --all, {fleet} agents", [AXE, "gc", "--all"], proxied_fleet, restore_fleet),
    )

    print("\nfloors")
    for figure in (import_floor, http_floor, request_floor, cp_floor):
        print(row(figure))
    print("\naxe")
    for figure in (missing, help_page, disabled, small, big_run, one, many):
        print(row(figure) + " peak RSS")
    for figure in (small_proxied, one_proxied, many_proxied):
        print(row(figure) + " peak RSS")
    print(row(quiet) + " peak RSS, 0 requests")
    print(big_log_passes(pristine_big, cp_floor, request_floor))  # the 10 x cp goal's floor
    offline_goals = offline_analysis(space, runs=runs, smoke=smoke)

    per_agent_ms = (many.seconds - one.seconds) / max(1, fleet - 1) * 1000
    per_agent_proxied_ms = (many_proxied.seconds - one_proxied.seconds) / max(1, fleet - 1) * 1000
    no_http = not any(
        httpx_imported(env, args) for args in (["gc", "missing"], ["gc", "--help"], ["gc", "quiet"])
    )

    ratio = Goal.ratio
    goals = [
        ratio("gc <missing agent>", missing, import_floor, 1.0),
        ratio("gc <memory disabled>", disabled, import_floor, 1.0),
        ratio("gc, 10 entries", small, http_floor, 1.25),
        ratio(f"gc, {big_size / MIB:.0f} MiB log, time", big_run, cp_floor, 10.0),
        Goal("  peak RSS", big_run.peak_kib * 1024 / big_size, 2.0, "x", "the file's size"),
        Goal("--all, per extra agent", per_agent_ms, 2.0, "ms", f"{fleet} agents against 1"),
    ]
    others = [
        ratio("gc --help", help_page, import_floor, 1.25),
        ratio("gc, 10 entries", small, request_floor, 1.25),
        Goal("--all, per agent, proxied", per_agent_proxied_ms, 2.0, "ms", "a loopback proxy"),
        Goal(
            f"--skip-unchanged, {fleet} quiet",
            quiet.seconds * 1000,
            round(import_floor.seconds * 1000 + 0.5 * fleet, 1),
            "ms",
            "the import floor + 0.5 ms an agent",
        ),
        *offline_goals,
    ]
    return goals, others, no_http


def print_goals(goals: list[Goal], others: list[Goal], *, no_http: bool) -> None:
    """The issue's goals (27) side by side with their floors, then the earlier ones."""
    print("\ngoals (issue 27), each beside its floor measured in the same run")
    for goal in goals:
        print(goal.line())
    print("\nearlier goals")
    for goal in others:
        print(goal.line())
    print(
        f"  {'httpx on no-HTTP paths':<27} {'never imported' if no_http else 'IMPORTED':<67} "
        f"goal: never  {'met' if no_http else 'NOT MET'}"
    )


if __name__ == "__main__":
    main()
