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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.e2e.loopback import LoopbackLLM, loopback_llm
from tests.support import AxeHome
from tests.tokenizer import count_tokens

from axe.domain.prompt import ANALYSIS_MAX_TOKENS, PATTERN_DETECTION_PROMPT

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


STYLES = {  # how the provider tells gc its window
    "anthropic numbers": "anthropic",
    "openai numbers": "openai",
    "ollama calibration": "ollama",
    "bare 413, then numbers": "anthropic",
}


@dataclass
class BigLog:
    seconds: float
    parts: int
    requests: int
    refused_merges: int
    merge_rounds: int
    tokens: int


def room(style: str, window: int) -> int:
    """What one part may hold: the window, less the reply where the provider counts it
    in (OpenAI, Ollama), less gc's instructions."""
    reply = ANALYSIS_MAX_TOKENS if STYLES[style] in ("openai", "ollama") else 0
    return window - reply - count_tokens(PATTERN_DETECTION_PROMPT) - 8


def bare_413_first(server: LoopbackLLM) -> None:
    """The first refusal is a bare 413 (Anthropic's answer to a body over its byte limit);
    later ones give their numbers."""
    answer = server.answer
    first = [True]

    def answering(path: str, body: bytes) -> Any:
        reply = answer(path, body)  # (status, body) or, with more wire formats, (..., headers)
        if reply[0] == 400 and first[0]:
            first[0] = False
            bare = b'{"type": "error", "error": {"type": "request_too_large"}}'
            return (413, bare, *reply[2:])
        return reply

    server.answer = answering  # type: ignore[method-assign]


def big_log(root: Path, server: LoopbackLLM, style: str, window: int, *, delay: float) -> BigLog:
    """One gc of a log ten windows long, the provider telling its window in ``style``."""
    provider = STYLES[style]
    model, env = FORMATS[provider]
    home = AxeHome(root / f"{style.replace(' ', '-').replace(',', '')}-{window}-{delay}")
    memory = log_of(10 * window)
    home.add_agent("diary", model=model, last_n=0)
    home.write_memory("diary", memory)
    server.prompts.clear()
    server.requests.clear()
    server.window, server.delay = window, delay
    plain = server.answer
    if style.startswith("bare"):
        bare_413_first(server)
    try:
        seconds, _ = run_axe(
            home,
            "gc",
            "diary",
            "--dry-run",
            **env,
            **{f"AXE_{provider.upper()}_BASE_URL": server.url},
        )
    finally:
        server.answer = plain  # type: ignore[method-assign]
    prompts = server.prompts
    merges = [p for p in prompts if p.merge]
    return BigLog(
        seconds=seconds,
        parts=sum(not p.merge and not p.refused for p in prompts),
        requests=len(server.requests),
        refused_merges=sum(p.refused for p in merges),
        merge_rounds=len({p.user.count("### Report ") for p in merges if not p.refused}),
        tokens=count_tokens(memory.decode()),
    )


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


def report(root: Path, *, smoke: bool) -> tuple[tuple[float, str], float]:
    """Prints the figures; returns the ten-window log's wall time over its critical path
    (and that path, said), and ``--all --jobs``' share of a sequential run's least time."""
    window = 8_000 if smoke else 32_000
    delay = 0.02 if smoke else 1.0
    agents, jobs = (8, 4) if smoke else (100, 16)
    with loopback_llm() as server:
        print(
            "\nlogs ten times the model's window (log tokens counted by the loopback; ideal: "
            "ceil(log tokens / room of a part) + 1 merge, the room being the window less the "
            "reply where the provider counts it in, less gc's instructions)"
        )
        print(
            f"  {'provider style':<24} {'window':>7} {'log tokens':>10} {'parts':>5} "
            f"{'requests':>8} {'refused merges':>14}"
        )
        for style in STYLES:
            run = big_log(root, server, style, window, delay=0)
            ideal = math.ceil(run.tokens / room(style, window)) + 1
            verdict = "met" if run.requests <= ideal + 2 and run.refused_merges <= 1 else "NOT MET"
            print(
                f"  {style:<24} {window:>7,} {run.tokens:>10,} {run.parts:>5} {run.requests:>8}"
                f" {run.refused_merges:>14}   ideal {ideal}: target "
                f"<= {ideal + 2} requests, <= 1 refused merge: {verdict}"
            )

        run = big_log(root, server, "anthropic numbers", window, delay=delay)
        waves = math.ceil(run.parts / PART_BOUND)
        critical = (waves + run.merge_rounds) * delay
        best = (math.ceil(10 / PART_BOUND) + 1) * delay
        share = run.seconds / critical
        path = f"{waves} waves of parts + {run.merge_rounds} merge: {critical:.2f} s"
        print(f"\na ten-window log, {delay:g} s per answered request, {PART_BOUND} parts at once")
        print(
            f"  {run.seconds:6.2f} s wall for {run.parts} parts and {run.requests} requests; "
            f"critical path (waves of parts + merge rounds) {critical:.2f} s: {share:.2f}x "
            f"(target <= 1.10: {'met' if share <= 1.10 else 'NOT MET'}); for the ideal 10 parts "
            f"{best:.2f} s"
        )

        concurrent = fleet(root, server, agents, jobs, delay=delay)
        sequential_floor = agents * delay
        print(f"\n{agents} agents, {delay:g} s per request")
        fleet_share = concurrent / sequential_floor
        print(
            f"  --all --jobs {jobs}: {concurrent:6.2f} s wall; sequential needs at least "
            f"{sequential_floor:g} s ({agents} x {delay:g} s): {fleet_share:.3f} of it "
            "(target <= 0.1)"
        )
    return (share, path), fleet_share


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="tiny sizes")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="axe-bench-big-") as root:
        report(Path(root), smoke=options.smoke)


if __name__ == "__main__":
    main()
