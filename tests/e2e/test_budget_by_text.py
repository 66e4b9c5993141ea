"""A token budget on every kind of text a log may hold, end to end: the installed ``axe``
against a loopback Anthropic that counts with a real tokenizer (o200k_base) and offers its
count endpoint, or refuses it as a gateway does. Never crossed, whatever the text; used,
not wasted; and the estimate honest both ways."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from subprocess import CompletedProcess

import pytest

from axe.domain.prompt import ANALYSIS_MAX_TOKENS, PATTERN_DETECTION_PROMPT
from tests.corpus import KINDS, text_bytes
from tests.e2e.loopback import LoopbackLLM, loopback_llm
from tests.support import AxeHome, entry
from tests.support import run_installed as axe
from tests.tokenizer import count_tokens

BUDGET = 20_000
FRAMING = 8  # what the loopback adds to a request's count, as tests/e2e/loopback.py does
REPLY = "## Patterns Found\nnone"
HARD = ["hex", "base64", "cjk", "emoji"]  # text a byte-pair tokenizer counts densest
TYPICAL = ["prose", "code", "json"]


@pytest.fixture
def server() -> Iterator[LoopbackLLM]:
    with loopback_llm() as llm:
        llm.reply_for = lambda _prompt: REPLY
        yield llm


def log_of(kind: str, count: int = 400) -> bytes:
    """``count`` entries whose results are text of ``kind`` (on one line each, as a tool's
    output pasted into a result is), from a fixed seed."""
    rng = random.Random(f"{kind}-log")
    make = KINDS[kind]
    results = (text_bytes(make(rng)).decode(errors="replace") for _ in range(count))
    return b"".join(
        entry(index, result=" ".join(result.split())) for index, result in enumerate(results)
    )


def gc(
    home: AxeHome, server: LoopbackLLM, log: bytes, *args: str, counting: bool = True
) -> CompletedProcess[str]:
    home.add_agent("diary", model="anthropic/claude-3", last_n=10)
    home.write_memory("diary", log)
    server.count_status = 200 if counting else 404
    environment = {"ANTHROPIC_API_KEY": "k", "AXE_ANTHROPIC_BASE_URL": server.url}
    return axe(home, "gc", "diary", "--json", *args, environment=environment)


def billed(server: LoopbackLLM) -> int:
    """Input and output of every analysis the provider answered, by its own count."""
    return sum(p.tokens + count_tokens(REPLY) for p in server.analyses)


def newest_one_request_carries(log: bytes) -> int:
    """The most of the newest entries one request can carry within the budget by the
    provider's count, its reply allowance reserved: what a perfect planner analyses."""
    pieces = log.split(b"\n## ")
    entries = [pieces[0], *(b"## " + piece for piece in pieces[1:])]
    entries = [piece if piece.endswith(b"\n") else piece + b"\n" for piece in entries]
    room = BUDGET - ANALYSIS_MAX_TOKENS - count_tokens(PATTERN_DETECTION_PROMPT) - FRAMING
    carried, used = 0, 0
    for piece in reversed(entries):
        used += count_tokens(piece.decode(errors="replace"))
        if used > room:
            break
        carried += 1
    return carried


@pytest.mark.parametrize("counting", [True, False], ids=["counted", "not counted"])
@pytest.mark.parametrize("kind", [*HARD, *TYPICAL])
def test_a_budget_of_20000_is_never_crossed_whatever_the_text(
    home: AxeHome, server: LoopbackLLM, kind: str, counting: bool
) -> None:
    """Hex, base64, CJK, emoji, prose, code, JSON: with the provider's count or without
    it, what the provider bills stays within the budget, and the newest entries are
    analysed."""
    done = gc(
        home, server, log_of(kind), "--dry-run", "--max-tokens", str(BUDGET), counting=counting
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert 0 < result["analysed_entries"] < 400
    assert billed(server) <= BUDGET
    assert result["budget_used_tokens"] <= BUDGET


@pytest.mark.parametrize(
    ("counting", "share"), [(True, 0.85), (False, 0.60)], ids=["counted", "not counted"]
)
@pytest.mark.parametrize("kind", TYPICAL)
def test_a_budget_is_used_not_wasted(
    home: AxeHome, server: LoopbackLLM, kind: str, counting: bool, share: float
) -> None:
    """Of the newest entries one request could carry within the budget by the provider's
    count, gc analyses at least 85 % when the provider counts, 60 % when it does not."""
    log = log_of(kind)
    done = gc(home, server, log, "--dry-run", "--max-tokens", str(BUDGET), counting=counting)
    assert done.returncode == 0, done.stderr
    analysed = json.loads(done.stdout)["analysed_entries"]
    assert analysed >= share * newest_one_request_carries(log)


@pytest.mark.parametrize("kind", [*TYPICAL, *HARD])
def test_an_estimate_without_a_count_is_never_below_the_providers_and_near_it(
    home: AxeHome, server: LoopbackLLM, kind: str
) -> None:
    """Where the provider does not count, --estimate's input is never below what the run
    is then billed, and (prose, code, JSON) at most 1.6 times it; with the count it is
    the provider's own figure, within 2 %."""
    log = log_of(kind, count=60)
    estimate = gc(home, server, log, "--estimate", counting=False)
    assert estimate.returncode == 0, estimate.stderr
    uncounted = json.loads(estimate.stdout)["estimated_input_tokens"]
    counted = json.loads(gc(home, server, log, "--estimate").stdout)
    assert server.prompts == []
    assert gc(home, server, log, "--dry-run").returncode == 0
    (run,) = server.prompts
    assert run.tokens <= uncounted
    if kind in TYPICAL:
        assert uncounted <= 1.6 * run.tokens
    assert counted["input_tokens_counted"] is True
    assert abs(counted["estimated_input_tokens"] - run.tokens) <= 0.02 * run.tokens


def test_an_unchanged_agent_a_budget_narrowed_is_skipped_under_that_budget(
    home: AxeHome, server: LoopbackLLM
) -> None:
    """--skip-unchanged after a budget-narrowed analysis of an untrimmed log: the same
    budget skips it (no request, not even a count), another budget analyses it again."""
    home.add_agent("diary", model="anthropic/claude-3")
    home.write_memory("diary", log_of("prose"))
    environment = {"ANTHROPIC_API_KEY": "k", "AXE_ANTHROPIC_BASE_URL": server.url}
    args = ("gc", "diary", "--skip-unchanged", "--max-tokens", str(BUDGET))
    first = axe(home, *args, environment=environment)
    assert first.returncode == 0, first.stderr
    assert first.stderr.startswith("Budget of 20,000 tokens (from --max-tokens): analysing")
    server.requests.clear()
    second = axe(home, *args, environment=environment)
    assert (second.returncode, second.stderr, server.requests) == (0, "", [])
    assert second.stdout.splitlines()[-1].startswith("Unchanged since gc analysed its newest ")
    wider = axe(home, *args[:-1], str(2 * BUDGET), environment=environment)
    assert wider.returncode == 0, wider.stderr
    assert server.analyses
