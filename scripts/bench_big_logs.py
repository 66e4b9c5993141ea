"""Figures for logs larger than the model's window and for fleets (issue 9), for `make bench`.

Real `axe` processes against the loopback providers of the test suite, which have a context
window, count tokens like a byte-pair tokenizer, refuse (Anthropic, OpenAI) or report
their window (Ollama) as the real ones do, and can take a fixed time per answered request.
Refusals are answered at once, as real providers do before any inference.

    python scripts/bench_big_logs.py            # the full run (about half a minute)
    python scripts/bench_big_logs.py --smoke    # tiny sizes: proves the script still works
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.e2e.loopback import LoopbackLLM, loopback_llm
from tests.support import AxeHome
from tests.tokenizer import count_tokens

AXE = str(Path(sys.executable).with_name("axe"))
PART_BOUND = 4  # the default number of parts analysed at once
SENTENCES = [
    "Reviewed the handlers; the retry loop swallows context cancellation and logs bodies.",
    "CI green on main after the flaky cache test was quarantined; two reverts this week.",
    "Summarised 14 merged pull requests; most touch the billing service and its schema.",
    "Error: connection refused to ci.internal:443 while fetching the build artefacts.",
]
FORMATS = {
    "anthropic": ("anthropic/claude", {"ANTHROPIC_API_KEY": "bench"}),
    "openai": ("openai/gpt-4o", {"OPENAI_API_KEY": "bench"}),
    "ollama": ("ollama/llama3", {}),
}


def log_of(tokens: int) -> bytes:
    """A realistic log (timestamps, tasks, results) of about ``tokens`` tokens."""
    parts, total, index = [], 0, 0
    while total < tokens:
        day, minute = divmod(index, 1440)
        entry = (
            f"## 2026-{1 + day // 28 % 12:02d}-{1 + day % 28:02d}T{minute // 60:02d}:"
            f"{minute % 60:02d}:00Z\n**Task:** Review PR #{4000 + index}\n"
            f"**Result:** {SENTENCES[index % len(SENTENCES)]}\n\n"
        )
        parts.append(entry)
        total += count_tokens(entry)
        index += 1
    return "".join(parts).encode()


def run_axe(home: AxeHome, *args: str, **env: str) -> tuple[float, int]:
    environment = {"PATH": os.environ.get("PATH", ""), **home.env, **env}
    started = time.perf_counter()
    done = subprocess.run(
        [AXE, *args], env=environment, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        sys.exit(f"bench: axe {' '.join(args)} exited {done.returncode}: {done.stderr.strip()}")
    return time.perf_counter() - started, done.returncode


def big_log(
    root: Path, server: LoopbackLLM, provider: str, window: int, *, delay: float
) -> tuple[float, int, int, int]:
    """One gc of a log ten windows long: seconds, parts, requests, log tokens."""
    model, env = FORMATS[provider]
    home = AxeHome(root / f"{provider}-{window}-{delay}")
    memory = log_of(10 * window)
    home.add_agent("diary", model=model, last_n=0)
    home.write_memory("diary", memory)
    server.prompts.clear()
    server.requests.clear()
    server.window, server.delay = window, delay
    seconds, _ = run_axe(
        home,
        "gc",
        "diary",
        "--dry-run",
        **env,
        **{f"AXE_{provider.upper()}_BASE_URL": server.url},
    )
    parts = sum(not p.merge and not p.refused for p in server.prompts)
    return seconds, parts, len(server.prompts), count_tokens(memory.decode())


def fleet(root: Path, server: LoopbackLLM, agents: int, jobs: int, *, delay: float) -> float:
    home = AxeHome(root / f"fleet-{agents}-{jobs}")
    for index in range(agents):
        home.add_agent(f"agent-{index:03d}", model="openai/gpt-4o", last_n=5)
        home.write_memory(f"agent-{index:03d}", log_of(300))
    server.window, server.delay = None, delay
    seconds, _ = run_axe(
        home,
        "gc",
        "--all",
        "--dry-run",
        "--jobs",
        str(jobs),
        OPENAI_API_KEY="bench",
        AXE_OPENAI_BASE_URL=server.url,
    )
    return seconds


def report(root: Path, *, smoke: bool) -> None:
    window = 8_000 if smoke else 32_000
    delay = 0.02 if smoke else 1.0
    agents, jobs = (8, 4) if smoke else (100, 16)
    with loopback_llm() as server:
        print("\nlogs ten times the model's window (log tokens counted by the loopback)")
        print(f"  {'format':<10} {'window':>7} {'log tokens':>10} {'parts':>5} {'requests':>8}")
        for provider in FORMATS:
            _, parts, requests, tokens = big_log(root, server, provider, window, delay=0)
            ideal = math.ceil(tokens / window) + 1
            print(
                f"  {provider:<10} {window:>7,} {tokens:>10,} {parts:>5} {requests:>8}"
                f"   ideal ceil(tokens/window)+1 = {ideal} ({requests / ideal:.2f}x)"
            )

        seconds, parts, requests, _ = big_log(root, server, "anthropic", window, delay=delay)
        floor = (math.ceil(parts / PART_BOUND) + 1) * delay
        best = (math.ceil(10 / PART_BOUND) + 1) * delay
        print(f"\na ten-window log, {delay:g} s per answered request, {PART_BOUND} parts at once")
        print(
            f"  {seconds:6.2f} s wall for {parts} parts and {requests} requests; provider time "
            f"for those parts {floor:.2f} s; for the ideal 10 parts {best:.2f} s "
            f"(target <= {4 * delay:g} s)"
        )

        concurrent = fleet(root, server, agents, jobs, delay=delay)
        sequential_floor = agents * delay
        print(f"\n{agents} agents, {delay:g} s per request")
        share = concurrent / sequential_floor
        print(
            f"  --all --jobs {jobs}: {concurrent:6.2f} s wall; sequential needs at least "
            f"{sequential_floor:.0f} s ({agents} x {delay:g} s): {share:.3f} of it (target <= 0.1)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="tiny sizes")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="axe-bench-big-") as root:
        report(Path(root), smoke=options.smoke)


if __name__ == "__main__":
    main()
