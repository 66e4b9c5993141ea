"""Figures for logs larger than the model's window, and for a fleet on a slow provider.

Real `axe` processes against the test suite's loopback provider, which has a context window,
counts tokens as OpenAI's byte-pair encoding does, and refuses a prompt that is too long
(Anthropic, OpenAI) or tells its window (Ollama) as the real ones do; it can take a fixed
time over each answered request. Refusals are answered at once, as real providers do before
any inference. `make bench` prints these after bench.py's own figures.

    python scripts/bench_big_logs.py [--smoke]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any, NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # for tests.*

from tests.e2e.loopback import LoopbackLLM, loopback_llm
from tests.support import AxeHome, entry

AXE = str(Path(sys.executable).with_name("axe"))
AT_ONCE = 4  # parts gc analyses at once unless told otherwise
SENTENCES = [
    "Reviewed the handlers; the retry loop swallows context cancellation and logs bodies.",
    "CI green on main after the flaky cache test was quarantined; two reverts this week.",
    "Summarised 14 merged pull requests; most touch the billing service and its schema.",
    "Error: connection refused to ci.internal:443 while fetching the build artefacts.",
]
PROVIDERS = {  # model, and the environment it needs beside its base URL
    "anthropic": ("anthropic/claude", {"ANTHROPIC_API_KEY": "bench"}),
    "openai": ("openai/gpt-4o", {"OPENAI_API_KEY": "bench"}),
    "ollama": ("ollama/llama3", {}),
}
STYLES = {  # how the provider tells gc its window
    "anthropic numbers": "anthropic",
    "openai numbers": "openai",
    "ollama calibration": "ollama",
    "bare 413, then numbers": "anthropic",
}
ANALYSES = ("/v1/messages", "/chat/completions", "/api/chat")  # paths of an analysis request


def log(count: int) -> bytes:
    """``count`` realistic entries: a pull request reviewed each, one of four results."""
    return b"".join(entry(i, f"Review PR #{4000 + i}", SENTENCES[i % 4]) for i in range(count))


def counted(server: LoopbackLLM, system: str, user: str) -> int:
    """The tokens the loopback bills a prompt, asked at its Anthropic count endpoint."""
    body = {"model": "claude", "system": system, "messages": [{"role": "user", "content": user}]}
    request = urllib.request.Request(
        f"{server.url}/v1/messages/count_tokens", json.dumps(body).encode()
    )
    with urllib.request.urlopen(request) as reply:
        return int(json.load(reply)["input_tokens"])


def tokens(server: LoopbackLLM, text: str) -> int:
    return counted(server, "", text) - counted(server, "", "")


def room(server: LoopbackLLM, provider: str, window: int) -> int:
    """What one part's log may hold: the window, less gc's instructions as the provider
    counts them, less the reply's budget where the provider counts it in (OpenAI, Ollama);
    read from the first analysis request gc sent."""
    body: dict[str, Any] = next(
        json.loads(b) for p, _, b in server.requests if p.endswith(ANALYSES)
    )
    system = body.get("system") or body["messages"][0]["content"]
    reply = body.get("max_tokens") or body.get("max_completion_tokens")
    reply = reply or body.get("options", {}).get("num_predict", 0)
    return window - counted(server, system, "") - (0 if provider == "anthropic" else reply)


def gc(home: AxeHome, *args: str, **env: str) -> float:
    """The wall time of one `axe gc`, which must succeed."""
    started = time.perf_counter()
    environment = {"PATH": os.environ.get("PATH", ""), **home.env, **env}
    done = subprocess.run([AXE, "gc", *args], env=environment, capture_output=True, check=False)
    if done.returncode != 0:
        sys.exit(f"bench: axe gc {' '.join(args)} exited {done.returncode}: {done.stderr.decode()}")
    return time.perf_counter() - started


def bare_413_first(server: LoopbackLLM) -> None:
    """The first refusal is a bare 413 (Anthropic's answer to a body over its byte limit);
    later ones give their numbers."""
    answer, first = server.answer, True

    def answering(path: str, body: bytes) -> tuple[int, bytes, dict[str, str]]:
        nonlocal first
        status, reply, headers = answer(path, body)
        if status == 400 and first:
            first = False
            return 413, b'{"type": "error", "error": {"type": "request_too_large"}}', headers
        return status, reply, headers

    server.answer = answering  # type: ignore[method-assign]


class BigLog(NamedTuple):
    seconds: float
    parts: int  # answered, merges aside
    merges: int  # answered
    refused: int
    other: int  # token counts and window look-ups
    ideal: int  # parts at full room, and one merge


def big_log(root: Path, server: LoopbackLLM, style: str, window: int, delay: float) -> BigLog:
    """One gc of a log ten windows long, the provider telling its window in ``style``."""
    provider = STYLES[style]
    model, env = PROVIDERS[provider]
    home = AxeHome(root / f"{style.replace(' ', '-').replace(',', '')}-{delay}")
    home.add_agent("diary", model=model, last_n=0)
    sample = tokens(server, log(100).decode()) / 100
    memory = log(math.ceil(10 * window / sample))
    home.write_memory("diary", memory)
    server.window, server.delay = window, delay
    server.requests.clear()
    server.prompts.clear()
    answer = server.answer
    if style.startswith("bare"):
        bare_413_first(server)
    try:
        seconds = gc(
            home, "diary", "--dry-run", **env, **{f"AXE_{provider.upper()}_BASE_URL": server.url}
        )
    finally:
        server.answer = answer  # type: ignore[method-assign]
    prompts, sent = list(server.prompts), len(server.requests)
    ideal = math.ceil(tokens(server, memory.decode()) / room(server, provider, window)) + 1
    return BigLog(
        seconds,
        parts=sum(not p.merge and not p.refused for p in prompts),
        merges=sum(p.merge and not p.refused for p in prompts),
        refused=sum(p.refused for p in prompts),
        other=sent - len(prompts),
        ideal=ideal,
    )


def fleet(root: Path, server: LoopbackLLM, agents: int, jobs: int, delay: float) -> float:
    """The wall time of `gc --all --jobs` over ``agents`` agents, ``delay`` a request."""
    home = AxeHome(root / f"fleet-{agents}-{jobs}")
    for index in range(agents):
        home.add_agent(f"agent-{index:03d}", model="openai/gpt-4o", last_n=5)
        home.write_memory(f"agent-{index:03d}", log(10))
    server.window, server.delay = None, delay
    options = ["--all", "--dry-run", "--jobs", str(jobs)]
    return gc(home, *options, OPENAI_API_KEY="bench", AXE_OPENAI_BASE_URL=server.url)


def report(root: Path, *, smoke: bool) -> None:
    """Prints the figures."""
    window, delay = (8_000, 0.02) if smoke else (32_000, 1.0)
    agents, jobs = (8, 4) if smoke else (100, 16)
    with loopback_llm() as server:
        print(f"\nlogs ten {window:,}-token windows long: requests against the ideal (the log's")
        print("  tokens over a part's room, the window less gc's instructions and the reply where")
        print("  the provider counts it in, plus one merge); other = token counts, window look-ups")
        print("  provider style            parts merges refused requests ideal  ratio other")
        for style in STYLES:
            run = big_log(root, server, style, window, delay=0)
            sent = run.parts + run.merges + run.refused
            print(
                f"  {style:<24} {run.parts:6} {run.merges:6} {run.refused:7} {sent:8} "
                f"{run.ideal:5} {sent / run.ideal:6.2f} {run.other:5}"
            )
        run = big_log(root, server, "anthropic numbers", window, delay)
        waves = (math.ceil(run.parts / AT_ONCE) + run.merges) * delay
        print(f"\na ten-window log, {delay:g} s an answered request, {AT_ONCE} parts at once")
        print(
            f"  {run.seconds:.2f} s for {run.parts} parts and {run.merges} merge: "
            f"{run.seconds / waves:.2f}x its waves of parts then merges ({waves:.2f} s)"
        )
        seconds = fleet(root, server, agents, jobs, delay)
        print(f"\n{agents} agents, {delay:g} s a request")
        print(
            f"  gc --all --jobs {jobs}: {seconds:.2f} s, {seconds / (agents * delay):.3f} of the "
            f"{agents * delay:g} s one agent after another needs at least"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="tiny sizes")
    with tempfile.TemporaryDirectory(prefix="axe-bench-big-") as root:
        report(Path(root), smoke=parser.parse_args().smoke)


if __name__ == "__main__":
    main()
