"""``axe gc --json``: one JSON object per agent on stdout; stderr and exit codes as in text."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx
from click.testing import CliRunner, Result

from axe.adapters.console.json_lines import result_line
from axe.cli.commands import cli
from axe.domain.errors import ApiError
from axe.domain.results import AgentResult, AgentStatus, Analysis, Spent, Usage
from tests.e2e.loopback import LoopbackLLM, loopback_llm
from tests.support import CANNED_ANALYSIS, AxeHome, entries, run_installed

ANTHROPIC_URL = "https://api.anthropic.com/v1/messages"


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, ["gc", *args], catch_exceptions=False)


def objects(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines()]


@pytest.fixture
def anthropic(monkeypatch: pytest.MonkeyPatch) -> Iterator[respx.MockRouter]:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    with respx.mock(assert_all_called=False) as router:
        router.post(ANTHROPIC_URL, name="messages").respond(
            200,
            json={
                "content": [{"type": "text", "text": CANNED_ANALYSIS}],
                "usage": {"input_tokens": 1500, "output_tokens": 42},
            },
        )
        yield router


def test_a_trimmed_agent_is_one_object_with_every_documented_key(
    home: AxeHome, anthropic: respx.MockRouter
) -> None:
    """--json prints exactly one line of JSON, with the schema the README documents."""
    home.add_agent("helper", last_n=3)
    home.write_memory("helper", entries(10))
    result = run("helper", "--json")
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout.count("\n") == 1
    assert objects(result.stdout) == [
        {
            "agent": "helper",
            "status": "trimmed",
            "entries": 10,
            "removed": 7,
            "kept": 3,
            "limit": 3,
            "model": "anthropic/claude-3",
            "analysis": CANNED_ANALYSIS,
            "usage": {"input_tokens": 1500, "output_tokens": 42},
            "parts": 1,
            "requests": 1,
            "error": None,
            "exit_code": 0,
            "budget_max_tokens": None,
            "budget_used_tokens": None,
            "analysed_entries": 10,
        }
    ]
    assert home.memory_path("helper").read_bytes() == entries(3, start=7)


@pytest.mark.parametrize(
    ("settings", "memory", "args", "expected"),
    [
        ({"last_n": 10}, entries(3), [], {"status": "within_limit", "entries": 3, "kept": 3}),
        ({}, entries(3), [], {"status": "no_target", "entries": 3, "removed": 0}),
        ({"last_n": 1}, entries(3), ["--dry-run"], {"status": "dry_run", "kept": 3, "limit": 1}),
        ({"last_n": 1}, b"", [], {"status": "empty", "entries": 0, "model": None}),
    ],
    ids=["within_limit", "no_target", "dry_run", "empty"],
)
def test_each_way_of_succeeding_has_its_status(
    home: AxeHome,
    anthropic: respx.MockRouter,
    settings: dict[str, int],
    memory: bytes,
    args: list[str],
    expected: dict[str, Any],
) -> None:
    """Every successful outcome is told apart by status, exit code 0, no stderr."""
    home.add_agent("helper", **settings)
    home.write_memory("helper", memory)
    result = run("helper", "--json", *args)
    (found,) = objects(result.stdout)
    assert (result.exit_code, result.stderr, found["exit_code"]) == (0, "", 0)
    assert {key: found[key] for key in expected} == expected


def test_a_disabled_agent_is_an_object_and_keeps_its_warning(home: AxeHome) -> None:
    """Memory disabled: status disabled, nothing counted, and the usual stderr warning."""
    home.add_agent("quiet", enabled=False)
    result = run("quiet", "--json")
    (found,) = objects(result.stdout)
    assert (found["status"], found["entries"], found["exit_code"]) == ("disabled", None, 0)
    assert result.stderr == 'Warning: agent "quiet" does not have memory enabled. Skipping.\n'
    assert result.exit_code == 0


def test_a_missing_agent_fails_with_its_exit_code_in_the_object(home: AxeHome) -> None:
    """A failure is an object with status failed, the error line and exit code 2, and the
    process still exits 2 with the same stderr line as text mode."""
    result = run("ghost", "--json")
    (found,) = objects(result.stdout)
    message = (
        f'agent "ghost" not found (looked in {Path.cwd() / "axe" / "agents"} and '
        f"{home.config / 'agents'}); there are no agents yet: write one to "
        f"{home.config / 'agents' / 'ghost.toml'}"
    )
    assert found == {
        "agent": "ghost",
        "status": "failed",
        "entries": None,
        "removed": 0,
        "kept": None,
        "limit": None,
        "model": None,
        "analysis": None,
        "usage": None,
        "parts": None,
        "requests": None,
        "error": message,
        "exit_code": 2,
        "budget_max_tokens": None,
        "budget_used_tokens": None,
        "analysed_entries": None,
    }
    assert (result.exit_code, result.stderr) == (2, message + "\n")


def test_a_provider_failure_keeps_every_entry_and_says_the_limit(
    home: AxeHome, anthropic: respx.MockRouter
) -> None:
    """After the provider fails, the object says what the file still holds (every entry:
    nothing was trimmed) and the limit a successful run would have trimmed to."""
    anthropic.routes["messages"].respond(400, json={"error": {"message": "bad request"}})
    home.add_agent("helper", last_n=2)
    home.write_memory("helper", entries(5))
    result = run("helper", "--json")
    (found,) = objects(result.stdout)
    assert (found["status"], found["entries"], found["kept"], found["limit"]) == (
        "failed",
        5,
        5,
        2,
    )
    assert (result.exit_code, found["exit_code"]) == (3, 3)
    assert home.memory_path("helper").read_bytes() == entries(5)


def test_all_lists_only_memory_enabled_agents_in_name_order(
    home: AxeHome, anthropic: respx.MockRouter
) -> None:
    """--all --json: one object per agent file that does not load (first, failed, exit code
    2), then one per memory-enabled agent, by name; failures keep their own exit code;
    stderr and the overall exit code are those of text mode."""
    home.add_agent("c-agent", last_n=1)
    home.add_agent("b-quiet", enabled=False)
    home.add_agent("a-agent", last_n=1)
    home.write_memory("a-agent", entries(3))
    home.memory_path("c-agent").mkdir()
    (home.config / "agents" / "broken.toml").write_text("name = \n")
    json_run, text_run = run("--all", "--json"), run("--all", "--dry-run")
    found = objects(json_run.stdout)
    assert [(o["agent"], o["status"], o["exit_code"]) for o in found] == [
        ("broken", "failed", 2),
        ("a-agent", "trimmed", 0),
        ("c-agent", "failed", 1),
    ]
    assert json_run.exit_code == text_run.exit_code == 1
    assert json_run.stderr == text_run.stderr
    assert json_run.stderr.splitlines()[-1] == "gc completed with errors: 1 of 2 agents failed"


def test_all_with_no_memory_enabled_agent_prints_no_object(home: AxeHome) -> None:
    """Nothing to report is an empty stdout, which `jq` reads as no agents."""
    home.add_agent("quiet", enabled=False)
    result = run("--all", "--json")
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", "")


def test_an_invalid_model_prints_no_object(home: AxeHome) -> None:
    """A bad --model stops the run before any agent: one stderr line, exit 1, no JSON."""
    home.add_agent("helper", last_n=1)
    result = run("--all", "--json", "--model", "nonsense")
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == 'invalid model format "nonsense": expected provider/model-name\n'


@pytest.fixture
def server() -> Iterator[LoopbackLLM]:
    with loopback_llm() as llm:
        yield llm


def test_the_installed_axe_prints_json_lines(home: AxeHome, server: LoopbackLLM) -> None:
    """A real `axe gc --all --json` process writes parseable lines a cron job can pipe to jq."""
    for name in ("a", "b"):
        home.add_agent(name, model="ollama/llama3", last_n=1)
        home.write_memory(name, entries(2))
    done = run_installed(home, "gc", "--all", "--json", AXE_OLLAMA_BASE_URL=server.url)
    assert (done.returncode, done.stderr) == (0, "")
    found = objects(done.stdout)
    assert [(o["agent"], o["status"], o["removed"]) for o in found] == [
        ("a", "trimmed", 1),
        ("b", "trimmed", 1),
    ]


def test_a_split_analysis_that_fails_still_says_what_it_sent(
    home: AxeHome, anthropic: respx.MockRouter
) -> None:
    """A big log whose last part fails after the others were billed: the object still
    counts every request sent (the refused whole log, each part, the failed one) and the
    tokens the replies reported, and how many parts were analysed."""
    memory = entries(300)
    last = memory[memory.rfind(b"## ") :].split(b"\n")[0].decode()

    def provider(request: httpx.Request) -> httpx.Response:
        text = json.loads(request.content)["messages"][-1]["content"]
        if len(text) > 6_000:
            too_long = f"prompt is too long: {len(text) // 3} tokens > 1500 maximum"
            return httpx.Response(400, json={"error": {"message": too_long}})
        if last in text:
            return httpx.Response(400, json={"error": {"message": "bad request"}})
        usage = {"input_tokens": 1000, "output_tokens": 10}
        return httpx.Response(
            200, json={"content": [{"type": "text", "text": "r"}], "usage": usage}
        )

    anthropic.routes["messages"].side_effect = provider
    home.add_agent("helper", last_n=3)
    home.write_memory("helper", memory)
    result = run("helper", "--json")
    calls = [json.loads(call.request.content) for call in anthropic.routes["messages"].calls]
    texts = [body["messages"][-1]["content"] for body in calls]
    answered = sum(len(text) <= 6_000 and last not in text for text in texts)
    assert answered >= 2
    (found,) = objects(result.stdout)
    assert found == {
        "agent": "helper",
        "status": "failed",
        "entries": 300,
        "removed": 0,
        "kept": 300,
        "limit": 3,
        "model": "anthropic/claude-3",
        "analysis": None,
        "usage": {"input_tokens": 1000 * answered, "output_tokens": 10 * answered},
        "parts": answered,
        "requests": len(calls),
        "error": found["error"],
        "exit_code": 3,
        "budget_max_tokens": None,
        "budget_used_tokens": None,
        "analysed_entries": None,
    }
    assert found["error"].startswith(f"analysis of part {answered + 1} of ")
    assert home.memory_path("helper").read_bytes() == memory


def test_a_stated_cost_is_in_the_usage_object_and_only_then() -> None:
    """``usage`` gains ``cost`` (US dollars, as OpenRouter states it) only when the provider
    stated one; a failed analysis that was billed still says its usage."""
    spent = Spent(usage=Usage(120, 30, cost=0.0042), requests=2, parts=None)
    failed = AgentResult(agent="a", status=AgentStatus.FAILED, error=ApiError("boom"), spent=spent)
    ok = AgentResult(
        agent="b",
        status=AgentStatus.DRY_RUN,
        analysis=Analysis(text="r", spent=Spent(usage=Usage(1, 2), requests=1)),
    )
    assert json.loads(result_line(failed)) == {
        "agent": "a",
        "status": "failed",
        "entries": None,
        "removed": 0,
        "kept": None,
        "limit": None,
        "model": None,
        "analysis": None,
        "usage": {"input_tokens": 120, "output_tokens": 30, "cost": 0.0042},
        "parts": None,
        "requests": 2,
        "error": "boom",
        "exit_code": 3,
        "budget_max_tokens": None,
        "budget_used_tokens": None,
        "analysed_entries": None,
    }
    assert json.loads(result_line(ok))["usage"] == {"input_tokens": 1, "output_tokens": 2}


def test_the_offline_analyst_sends_no_request_and_reports_no_usage(home: AxeHome) -> None:
    """builtin/heuristic makes no HTTP request: "requests" is 0 and "usage" null, so a
    monitor summing requests or tokens counts nothing for it."""
    home.add_agent("a", last_n=1)
    home.write_memory("a", entries(3))
    result = run("a", "--json", "--model", "builtin/heuristic")
    found = json.loads(result.stdout)
    assert (result.exit_code, found["requests"], found["usage"], found["parts"]) == (0, 0, None, 1)
