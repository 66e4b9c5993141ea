"""What gc costs, end to end: the agent's token budget and ``--estimate``, with
click's CliRunner for exact lines and exit codes, and real ``axe`` processes against the
loopback providers, which count tokens with ``tests/tokenizer.py`` and refuse what exceeds
their window as the real ones do."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import respx
from click.testing import CliRunner, Result

from axe.cli.commands import cli
from axe.domain.entries import count_entries
from tests.e2e import test_big_logs, test_json
from tests.e2e.loopback import LoopbackLLM, Prompt
from tests.e2e.test_big_logs import ENTRIES, WINDOW
from tests.support import AxeHome, entries
from tests.support import run_installed as axe
from tests.tokenizer import count_tokens

server = test_big_logs.server  # a provider with a 12,000-token window
anthropic = test_json.anthropic  # Anthropic mocked with respx, usage 1500 in, 42 out


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, ["gc", *args], catch_exceptions=False)


def with_budget(path: Path, tokens: int) -> Path:
    """The agent file at ``path`` with ``[budget] max_tokens = tokens``."""
    path.write_text(f"{path.read_text()}[budget]\nmax_tokens = {tokens}\n")
    return path


def billed(server: LoopbackLLM) -> int:
    """Input and output of every request the provider answered, by its own count."""
    assert server.reply_for is not None
    return sum(p.tokens + count_tokens(server.reply_for(p)) for p in server.analyses)


def parts(server: LoopbackLLM) -> list[Prompt]:
    return [p for p in server.analyses if not p.merge]


# Where the budget comes from, and what a wrong one says.


def test_a_negative_max_tokens_is_a_usage_error(home: AxeHome) -> None:
    """--max-tokens -5: exit 1, one line, before anything is read."""
    result = run("helper", "--max-tokens", "-5")
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == (
        "Invalid value for '--max-tokens': -5 is not in the range x>=0 (see 'axe gc --help')\n"
    )


def test_a_max_tokens_beyond_64_bits_is_a_usage_error(home: AxeHome) -> None:
    """--max-tokens larger than an agent file's budget can be (a 64-bit integer, as in the
    Go axe): exit 1, one line; the largest one is taken."""
    result = run("helper", "--max-tokens", str(2**63))
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == (
        f"Invalid value for '--max-tokens': {2**63} is larger than a 64-bit integer "
        "(9,223,372,036,854,775,807) (see 'axe gc --help')\n"
    )
    home.add_agent("helper", last_n=3)
    assert run("helper", "--max-tokens", str(2**63 - 1), "--estimate").exit_code == 0


def test_a_negative_budget_in_the_agent_file_is_a_config_error(home: AxeHome) -> None:
    """[budget] max_tokens = -1: exit 2, the file and the key, like every rule of the file."""
    path = with_budget(home.add_agent("helper", last_n=3), -1)
    result = run("helper")
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == (
        f"invalid config {path}: budget.max_tokens: expected an integer >= 0, got -1\n"
    )


def test_the_flag_wins_over_the_agent_file_and_0_means_not_given(
    home: AxeHome, anthropic: respx.MockRouter
) -> None:
    """--json's budget fields: the flag's budget, else the file's, else null (unlimited);
    what was used is the usage the provider reported, input and output."""
    with_budget(home.add_agent("helper", last_n=30), 50_000)
    home.write_memory("helper", entries(10))
    found = [
        json.loads(run("helper", "--json", "--dry-run", *args).stdout)
        for args in ([], ["--max-tokens", "0"], ["--max-tokens", "40000"])
    ]
    assert [(f["budget_max_tokens"], f["budget_used_tokens"]) for f in found] == [
        (50_000, 1542),
        (50_000, 1542),
        (40_000, 1542),
    ]
    home.add_agent("helper", last_n=30)  # no [budget] table
    unlimited = json.loads(run("helper", "--json", "--dry-run").stdout)
    assert (unlimited["budget_max_tokens"], unlimited["budget_used_tokens"]) == (None, None)
    assert unlimited["analysed_entries"] == 10


def test_a_budget_too_small_is_exit_4_with_one_line_and_no_request(
    home: AxeHome, anthropic: respx.MockRouter
) -> None:
    """Not even the instructions, the newest entry and a reply fit: exit 4, one line naming
    the budget, its source and the smallest budget that would do; no request, no trim."""
    home.add_agent("helper", last_n=3)
    memory = home.write_memory("helper", entries(10)).read_bytes()
    result = run("helper", "--max-tokens", "3000")
    assert (result.exit_code, result.stdout) == (4, "Agent: helper\nEntries: 10\n")
    assert result.stderr == (
        "budget of 3,000 tokens (from --max-tokens) is too small: analysing even the newest "
        "entry needs a budget of 4,441 tokens; nothing was sent or trimmed\n"
    )
    assert not anthropic.routes["messages"].called
    assert home.memory_path("helper").read_bytes() == memory
    as_json = json.loads(run("helper", "--max-tokens", "3000", "--json").stdout)
    assert (as_json["status"], as_json["exit_code"]) == ("failed", 4)
    assert (as_json["budget_used_tokens"], as_json["analysed_entries"]) == (0, None)


def test_the_help_tells_the_budget_the_estimate_and_exit_4(home: AxeHome) -> None:
    """gc --help lists both options, an example of each, and exit code 4."""
    text = run("--help").stdout
    assert "--max-tokens N" in text
    assert "--estimate" in text
    assert "axe gc --all --estimate" in text
    assert "4 budget too small" in text


# --estimate

NO_KEY = (
    "Warning: anthropic could not count gc's requests (no key or credentials to ask with); "
    "the budget and the estimate rest on gc's own estimate, which errs high\n"
)


def test_an_estimate_needs_no_key_and_prints_the_plan(home: AxeHome) -> None:
    """--estimate with no API key anywhere: exit 0, the spec's Agent and Entries lines,
    then the model's window, the requests, the tokens and what the budget allows; one line
    says the provider could not count without a key."""
    home.add_agent("helper", last_n=3)
    home.write_memory("helper", entries(40))
    result = run("helper", "--estimate", "--max-tokens", "10000")
    assert (result.exit_code, result.stderr) == (0, NO_KEY)
    assert result.stdout == (
        "Agent: helper\n"
        "Entries: 40\n"
        "Model: anthropic/claude-3, input window at most 1,000,000 tokens, the provider's "
        "largest; the model's may be smaller\n"
        "Requests: 1\n"
        "Input tokens: 2,132 at most, likely about 1,590\n"
        "Output tokens: 4,096 at most\n"
        "Budget: 10,000 tokens (from --max-tokens): every entry (every entry needs 6,228 at "
        "most)\n"
    )
    assert home.memory_path("helper").read_bytes() == entries(40)


def test_an_estimate_in_json_is_one_object_per_agent(home: AxeHome) -> None:
    """--all --estimate --json: one object per agent, status estimated, the estimate's
    figures and the budget's; a budget too small is reported, not failed."""
    home.add_agent("big", last_n=3)
    with_budget(home.add_agent("small", last_n=3), 3000)
    home.write_memory("big", entries(40))
    home.write_memory("small", entries(40))
    result = run("--all", "--estimate", "--json")
    assert (result.exit_code, result.stderr) == (0, NO_KEY)
    big, small = (json.loads(line) for line in result.stdout.splitlines())
    assert {key: big[key] for key in list(big)[-12:]} == {
        "budget_max_tokens": None,
        "budget_used_tokens": None,
        "analysed_entries": 40,
        "estimated_requests": 1,
        "estimated_input_tokens": 2132,
        "estimated_output_tokens": 4096,
        "likely_input_tokens": 1590,
        "input_window_tokens": 1_000_000,
        "input_window_source": "provider",
        "input_tokens_counted": False,
        "budget_for_every_entry": 2132 + 4096,
        "budget_for_newest_entry": None,
    }
    assert (small["status"], small["exit_code"], small["analysed_entries"]) == (
        "estimated",
        0,
        None,
    )
    assert (small["budget_max_tokens"], small["budget_used_tokens"]) == (3000, 0)


# Real processes against the loopback providers.


def big_log(home: AxeHome, model: str) -> bytes:
    """The ten-window diary of tests/e2e/test_big_logs.py, for ``model``."""
    home.add_agent("diary", model=model, last_n=10)
    return home.write_memory("diary", entries(ENTRIES)).read_bytes()


def gc(home: AxeHome, server: LoopbackLLM, *args: str) -> subprocess.CompletedProcess[str]:
    return axe(
        home,
        "gc",
        "diary",
        *args,
        ANTHROPIC_API_KEY="k",
        AXE_ANTHROPIC_BASE_URL=server.url,
        AXE_OLLAMA_BASE_URL=server.url,
    )


@pytest.mark.parametrize("model", ["anthropic/claude-3", "ollama/llama3"])
def test_a_ten_window_log_under_a_two_window_budget_spends_at_most_the_budget(
    home: AxeHome, server: LoopbackLLM, model: str
) -> None:
    """A log about ten windows long, a budget of two: by the provider's own count gc
    spends no more than the budget (Anthropic refuses the first request, as the window is
    learnt only then; Ollama reports it up front), it analyses one run of the newest
    entries, says how many on stderr, and trims as configured."""
    memory = big_log(home, model)
    done = gc(home, server, "--max-tokens", str(2 * WINDOW))
    assert done.returncode == 0, done.stderr
    assert billed(server) <= 2 * WINDOW
    told = done.stderr.splitlines()
    assert told
    prefix = "Budget of 24,000 tokens (from --max-tokens): analysing the newest "
    assert all(line.startswith(prefix) for line in told)
    analysed = int(told[-1].removeprefix(prefix).split()[0])
    assert told[-1] == f'{prefix}{analysed:,} of {ENTRIES:,} entries of agent "diary"'
    sent = sorted((p.user.encode() for p in parts(server)), key=memory.find)
    answered = b"".join(sent)
    assert memory.endswith(answered)
    assert count_entries(answered) == analysed
    assert 0 < analysed < ENTRIES
    assert done.stdout.endswith(f"Trimmed: {ENTRIES - 10} entries removed, 10 entries kept.\n")
    assert home.memory_path("diary").read_bytes() == entries(10, start=ENTRIES - 10)


def test_a_budget_that_covers_everything_changes_nothing(
    home: AxeHome, server: LoopbackLLM, tmp_path: Path
) -> None:
    """The ten-window log with a budget far above its cost: the same requests and the same
    stdout bytes as without one."""
    big_log(home, "anthropic/claude-3")
    plain = gc(home, server, "--dry-run")
    plain_bodies = sorted(body for _, _, body in server.requests)
    server.requests.clear()
    budgeted = gc(home, server, "--dry-run", "--max-tokens", "1000000000")
    assert (budgeted.returncode, budgeted.stderr) == (plain.returncode, plain.stderr) == (0, "")
    assert budgeted.stdout == plain.stdout
    assert sorted(body for _, _, body in server.requests) == plain_bodies


def test_an_estimate_of_a_log_that_fits_sends_nothing_and_counts_the_one_request(
    home: AxeHome, server: LoopbackLLM
) -> None:
    """--estimate sends nothing (no key needed) and says one request; the real run then
    makes exactly one, whose input the estimate does not undercount."""
    home.add_agent("diary", last_n=10)
    home.write_memory("diary", entries(200))
    estimate = axe(home, "gc", "diary", "--estimate", "--json", AXE_ANTHROPIC_BASE_URL=server.url)
    assert (estimate.returncode, estimate.stderr, server.requests) == (0, NO_KEY, [])
    found = json.loads(estimate.stdout)
    assert gc(home, server).returncode == 0
    (prompt,) = server.prompts
    assert found["estimated_requests"] == 1
    assert found["estimated_input_tokens"] >= prompt.tokens
    assert found["likely_input_tokens"] >= prompt.tokens


@pytest.mark.parametrize("model", ["anthropic/claude-3", "ollama/llama3"])
def test_an_estimate_of_a_split_log_counts_no_fewer_requests_than_a_run_and_at_most_two_more(
    home: AxeHome, server: LoopbackLLM, model: str
) -> None:
    """A log split by --max-input-tokens: --estimate sends no analysis (only free
    requests: Ollama's window lookup, Anthropic's counts) and counts no fewer requests than
    the real run makes, at most two more; its input tokens are never below the provider's
    count."""
    big_log(home, model)
    estimate = gc(home, server, "--estimate", "--json", "--max-input-tokens", "9000")
    assert estimate.returncode == 0, estimate.stderr
    free = {"/api/show", "/v1/messages/count_tokens"}
    assert all(path in free for path, _, _ in server.requests)
    assert server.prompts == []
    found = json.loads(estimate.stdout)
    real = gc(home, server, "--dry-run", "--max-input-tokens", "9000")
    assert real.returncode == 0, real.stderr
    made = len(server.prompts)
    assert not any(p.refused for p in server.prompts)
    assert made <= found["estimated_requests"] <= made + 2
    assert found["estimated_input_tokens"] >= sum(p.tokens for p in server.prompts)
