"""``axe gc`` end to end in-process: click's CliRunner, real files, respx for HTTP.

One test per scenario of gc-spec §7.3 (same names, snake_case), then the edge cases of §5
and the exit-code table that §7.3 does not cover.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import respx
from click.testing import CliRunner, Result

from axe.cli.commands import cli
from axe.domain.prompt import PATTERN_DETECTION_PROMPT
from tests.support import CANNED_ANALYSIS, AxeHome, entries

ANTHROPIC_URL = "https://api.anthropic.com/v1/messages"
OLLAMA_URL = "http://localhost:11434/api/chat"
KEY = "sk-ant-test-key-0123456789"


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, ["gc", *args], catch_exceptions=False)


@pytest.fixture
def llm(monkeypatch: pytest.MonkeyPatch) -> Iterator[respx.MockRouter]:
    """A mock Anthropic and Ollama that answer with the canned analysis."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    with respx.mock(assert_all_called=False) as router:
        router.post(ANTHROPIC_URL, name="anthropic").respond(
            200, json={"content": [{"type": "text", "text": CANNED_ANALYSIS}]}
        )
        router.post(OLLAMA_URL, name="ollama").respond(
            200, json={"message": {"role": "assistant", "content": CANNED_ANALYSIS}}
        )
        yield router


def lines(text: str) -> list[str]:
    return text.splitlines()


# gc-spec §7.3


def test_gc_no_args_no_all(home: AxeHome) -> None:
    """`axe gc` with neither an agent nor --all is exit 1 with one line saying what is needed."""
    result = run()
    assert (result.exit_code, result.stdout, result.stderr) == (
        1,
        "",
        "agent name is required (or use --all)\n",
    )


def test_gc_all_with_agent_name(home: AxeHome) -> None:
    """An agent name together with --all is refused: exit 1, one line, nothing run."""
    result = run("myagent", "--all")
    assert (result.exit_code, result.stdout, result.stderr) == (
        1,
        "",
        "cannot specify both --all and an agent name\n",
    )


def test_gc_agent_not_found(home: AxeHome) -> None:
    """An unknown agent is exit 2, naming where axe looked and where an agent goes."""
    result = run("nonexistent")
    assert result.exit_code == 2
    assert result.stderr == (
        f'agent "nonexistent" not found (looked in {Path.cwd() / "axe" / "agents"} and '
        f"{home.config / 'agents'}); there are no agents yet: write one to "
        f"{home.config / 'agents' / 'nonexistent.toml'}\n"
    )


def test_gc_memory_disabled(home: AxeHome, llm: respx.MockRouter) -> None:
    """memory.enabled = false: the spec's skip warning on stderr, empty stdout, exit 0."""
    home.add_agent("quiet", enabled=False)
    result = run("quiet")
    assert (result.exit_code, result.stdout) == (0, "")
    assert result.stderr == 'Warning: agent "quiet" does not have memory enabled. Skipping.\n'


def test_gc_no_memory_file(home: AxeHome, llm: respx.MockRouter) -> None:
    """An agent with no memory file yet is 'Nothing to do', exit 0, and no request is made."""
    home.add_agent("helper", last_n=3)
    result = run("helper")
    assert (result.exit_code, result.stdout) == (
        0,
        'No memory entries for agent "helper". Nothing to do.\n',
    )
    assert not llm.calls


def test_gc_empty_memory_file(home: AxeHome, llm: respx.MockRouter) -> None:
    """An empty memory file is 'Nothing to do', exit 0, and no request is made."""
    home.add_agent("helper", last_n=3)
    home.write_memory("helper", b"")
    result = run("helper")
    assert (result.exit_code, result.stdout) == (
        0,
        'No memory entries for agent "helper". Nothing to do.\n',
    )
    assert not llm.calls


def test_gc_analyze_and_trim(home: AxeHome, llm: respx.MockRouter) -> None:
    """The main path prints the spec's lines exactly, nothing on stderr, and keeps the newest N."""
    home.add_agent("helper", last_n=3)
    home.write_memory("helper", entries(10))
    result = run("helper")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == (
        "Agent: helper\nEntries: 10\n--- Analysis ---\n"
        f"{CANNED_ANALYSIS}\nTrimmed: 7 entries removed, 3 entries kept.\n"
    )
    assert result.stderr == ""
    assert home.memory_path("helper").read_bytes() == entries(3, start=7)


def test_gc_dry_run(home: AxeHome, llm: respx.MockRouter) -> None:
    """--dry-run prints the analysis and the dry-run line and leaves the file untouched."""
    home.add_agent("helper", last_n=3)
    home.write_memory("helper", entries(10))
    result = run("helper", "--dry-run")
    assert result.exit_code == 0
    assert CANNED_ANALYSIS in result.stdout
    assert lines(result.stdout)[-1] == "Dry run: no entries trimmed."
    assert home.memory_path("helper").read_bytes() == entries(10)


def test_gc_no_trim_target(home: AxeHome, llm: respx.MockRouter) -> None:
    """last_n and max_entries both 0: the analysis, then the skip line; nothing is trimmed."""
    home.add_agent("helper", last_n=0, max_entries=0)
    home.write_memory("helper", entries(10))
    result = run("helper")
    assert result.exit_code == 0
    assert CANNED_ANALYSIS in result.stdout
    assert lines(result.stdout)[-1] == (
        "No trim target configured (last_n and max_entries are both 0). Skipping trim."
    )
    assert home.memory_path("helper").read_bytes() == entries(10)


def test_gc_fallback_to_max_entries(home: AxeHome, llm: respx.MockRouter) -> None:
    """With last_n = 0, max_entries decides how many entries are kept."""
    home.add_agent("helper", last_n=0, max_entries=5)
    home.write_memory("helper", entries(10))
    result = run("helper")
    assert lines(result.stdout)[-1] == "Trimmed: 5 entries removed, 5 entries kept."
    assert home.memory_path("helper").read_bytes() == entries(5, start=5)


def test_gc_model_override(home: AxeHome, llm: respx.MockRouter) -> None:
    """--model sends the analysis to the given provider and model instead of the agent's own."""
    home.add_agent("helper", model="anthropic/claude-3", last_n=3)
    home.write_memory("helper", entries(4))
    result = run("helper", "--model", "ollama/llama3")
    assert result.exit_code == 0
    assert not llm["anthropic"].called
    assert json.loads(llm["ollama"].calls.last.request.content)["model"] == "llama3"


def test_gc_llm_error(
    home: AxeHome, llm: respx.MockRouter, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A provider error is exit 3 with its message on stderr, and the memory file is untouched."""
    monkeypatch.setattr("time.sleep", lambda _: None)  # the retries' backoff
    llm["anthropic"].respond(
        500, json={"error": {"type": "api_error", "message": "Internal server error"}}
    )
    home.add_agent("helper", last_n=3)
    home.write_memory("helper", entries(10))
    result = run("helper")
    assert result.exit_code == 3
    assert result.stderr == (
        "anthropic API error (HTTP 500 api_error): Internal server error (after 2 retries)\n"
    )
    assert home.memory_path("helper").read_bytes() == entries(10)


def test_gc_nothing_to_trim(home: AxeHome, llm: respx.MockRouter) -> None:
    """A log within its limit ends with the 'No trimming needed' line giving count and limit."""
    home.add_agent("helper", last_n=10)
    home.write_memory("helper", entries(3))
    result = run("helper")
    assert lines(result.stdout)[-1] == "No trimming needed: 3 entries within limit (10)."


def test_gc_all_flag_no_memory_agents(home: AxeHome, llm: respx.MockRouter) -> None:
    """--all with no memory-enabled agent prints the spec's one line and exits 0."""
    home.add_agent("a", enabled=False)
    home.add_agent("b", enabled=False)
    result = run("--all")
    assert (result.exit_code, result.stdout, result.stderr) == (
        0,
        "No agents with memory enabled.\n",
        "",
    )


def test_gc_all_flag_multiple_agents(home: AxeHome, llm: respx.MockRouter) -> None:
    """--all runs each memory-enabled agent under its own header and leaves disabled ones alone."""
    home.add_agent("agent-a", last_n=3)
    home.add_agent("agent-b", enabled=False)
    home.add_agent("agent-c", last_n=3)
    home.write_memory("agent-a", entries(10))
    home.write_memory("agent-b", entries(10))
    home.write_memory("agent-c", entries(5))
    result = run("--all")
    assert result.exit_code == 0, result.stderr
    assert [line for line in lines(result.stdout) if line.startswith("===")] == [
        "=== GC: agent-a ===",
        "=== GC: agent-c ===",
    ]
    assert home.memory_path("agent-b").read_bytes() == entries(10)
    assert home.memory_path("agent-c").read_bytes() == entries(3, start=2)


def test_gc_all_flag_partial_failure(home: AxeHome, llm: respx.MockRouter) -> None:
    """Under --all a failing agent is named on stderr, the others are still trimmed, exit 1."""
    home.add_agent("agent-a", last_n=3)
    home.add_agent("agent-b", last_n=3)
    home.write_memory("agent-a", entries(10))
    home.memory_path("agent-b").mkdir()  # unreadable as a file, even for root
    result = run("--all")
    assert result.exit_code == 1
    assert "Trimmed: 7 entries removed, 3 entries kept." in result.stdout
    assert lines(result.stderr) == [
        f'Error: gc failed for agent "agent-b": cannot read memory file {home.memory_path("agent-b")}: a directory',
        "gc completed with errors: 1 of 2 agents failed",
    ]


def test_gc_all_flag_with_dry_run(home: AxeHome, llm: respx.MockRouter) -> None:
    """--all --dry-run prints every agent's analysis and trims none of them."""
    for name in ("a", "b"):
        home.add_agent(name, last_n=1)
        home.write_memory(name, entries(4))
    result = run("--all", "--dry-run")
    assert result.exit_code == 0
    assert result.stdout.count("--- Analysis ---") == 2
    assert result.stdout.count("Dry run: no entries trimmed.") == 2
    assert all(home.memory_path(n).read_bytes() == entries(4) for n in ("a", "b"))


def test_gc_pattern_detection_prompt(home: AxeHome, llm: respx.MockRouter) -> None:
    """The provider gets the spec's prompt and the whole log, pre-header text and odd bytes too."""
    home.add_agent("helper", last_n=3)
    memory = b"pre-header notes\n" + entries(4) + b"## odd \xff bytes\r\n"
    home.write_memory("helper", memory)
    run("helper")
    body = json.loads(llm["anthropic"].calls.last.request.content)
    assert body["system"] == PATTERN_DETECTION_PROMPT
    assert body["messages"] == [{"role": "user", "content": memory.decode("utf-8", "replace")}]
    assert (body["temperature"], body["max_tokens"]) == (0.3, 4096)


# §5 and the exit-code table, beyond §7.3


def test_invalid_model_is_exit_1_after_the_counts(home: AxeHome) -> None:
    """An agent's malformed model is exit 1 after Agent:/Entries:, with one stderr line."""
    home.add_agent("helper", model="nonsense", last_n=3)
    home.write_memory("helper", entries(2))
    result = run("helper")
    assert (result.exit_code, result.stdout) == (1, "Agent: helper\nEntries: 2\n")
    assert result.stderr == 'invalid model format "nonsense": expected provider/model-name\n'


def test_invalid_model_override_is_exit_1(home: AxeHome) -> None:
    """A --model without a provider/ prefix is exit 1."""
    home.add_agent("helper", last_n=3)
    home.write_memory("helper", entries(2))
    assert run("helper", "--model", "gpt4").exit_code == 1


def test_unknown_provider_is_exit_1(home: AxeHome) -> None:
    """An unknown provider is exit 1 with one line listing the supported ones."""
    home.add_agent("helper", model="mystery/m1", last_n=3)
    home.write_memory("helper", entries(2))
    result = run("helper")
    assert result.exit_code == 1
    assert (
        result.stderr
        == 'unsupported provider "mystery" (supported: anthropic, atlascloud, bedrock, builtin, edenai, google, minimax, ollama, openai, opencode, openrouter, requesty)\n'
    )


def test_missing_api_key_is_exit_3_and_trims_nothing(home: AxeHome) -> None:
    """A missing API key is exit 3 naming the variable to set, and nothing is trimmed."""
    home.add_agent("helper", model="openai/gpt-4o", last_n=1)
    home.write_memory("helper", entries(3))
    result = run("helper")
    assert result.exit_code == 3
    assert result.stderr == (
        'API key for provider "openai" is not configured (set OPENAI_API_KEY or add it to '
        f"{home.config / 'config.toml'})\n"
    )
    assert home.memory_path("helper").read_bytes() == entries(3)


def test_key_from_config_toml_is_used(home: AxeHome) -> None:
    """A key in config.toml is sent to the provider when no variable is set."""
    home.write_global_config('[providers.anthropic]\napi_key = "from-file"\n')
    home.add_agent("helper", last_n=3)
    home.write_memory("helper", entries(2))
    with respx.mock() as router:
        route = router.post(ANTHROPIC_URL).respond(200, json={"content": []})
        assert run("helper").exit_code == 0
    assert route.calls.last.request.headers["x-api-key"] == "from-file"


def test_malformed_global_config_is_exit_2(home: AxeHome) -> None:
    """A config.toml that does not parse is exit 2, naming the file."""
    home.write_global_config("[providers.anthropic\n")
    home.add_agent("helper", last_n=3)
    home.write_memory("helper", entries(2))
    result = run("helper")
    assert result.exit_code == 2
    assert result.stderr.startswith(f"cannot parse {home.config / 'config.toml'}: ")


@pytest.mark.parametrize("name", ["../victim", "/etc/passwd", "a/b"])
def test_hostile_agent_names_are_exit_2_and_touch_nothing(home: AxeHome, name: str) -> None:
    """Agent names with .., / or an absolute path are exit 2, refused before any file is read.

    The victim lies exactly where `../victim` would lead: its agent file one level above the
    agents directory, its memory one level above the memory directory."""
    victim = home.data / "victim.md"
    victim.write_bytes(entries(5))
    (home.config / "victim.toml").write_text(
        'name = "v"\nmodel = "builtin/heuristic"\n[memory]\nenabled = true\nlast_n = 1\n'
    )
    (home.config / "agents" / "a").mkdir()
    (home.config / "agents" / "a" / "b.toml").write_text(
        'name = "v"\nmodel = "builtin/heuristic"\n[memory]\nenabled = true\nlast_n = 1\n'
        f'path = "{victim}"\n'
    )
    result = run(name)
    assert result.exit_code == 2
    assert result.stderr.startswith("invalid agent name")
    assert victim.read_bytes() == entries(5)


def test_relative_memory_path_is_exit_2(home: AxeHome) -> None:
    """A relative memory.path is exit 2, asking for an absolute path."""
    home.add_agent("helper", last_n=1, path="relative/memory.md")
    result = run("helper")
    assert result.exit_code == 2
    assert "use an absolute path" in result.stderr


def test_custom_memory_path(home: AxeHome, llm: respx.MockRouter) -> None:
    """An agent's memory.path is the file gc analyses and trims."""
    custom = home.root / "custom.md"
    custom.write_bytes(entries(6))
    home.add_agent("helper", last_n=2, path=str(custom))
    assert run("helper").exit_code == 0
    assert custom.read_bytes() == entries(2, start=4)


def test_agent_identity_is_its_file_name(home: AxeHome, llm: respx.MockRouter) -> None:
    """An agent is its file name: reviewer.toml is gc'd as reviewer, whatever its name says."""
    (home.config / "agents" / "reviewer.toml").write_text(
        'name = "PR Reviewer"\nmodel = "anthropic/claude-3"\n[memory]\nenabled = true\nlast_n = 1\n'
    )
    home.write_memory("reviewer", entries(3))
    result = run("--all")
    assert "=== GC: reviewer ===" in result.stdout
    assert home.memory_path("reviewer").read_bytes() == entries(1, start=2)


def test_broken_agent_files_are_skipped_by_all(home: AxeHome, llm: respx.MockRouter) -> None:
    """Under --all a broken agent file is a warning naming it; the rest still run, exit 0."""
    (home.config / "agents" / "broken.toml").write_text("name = \n")
    home.add_agent("good", last_n=1)
    home.write_memory("good", entries(2))
    result = run("--all")
    assert result.exit_code == 0
    assert lines(result.stderr)[0].startswith('Warning: skipping agent "broken": cannot parse')


def test_no_agents_directory_with_all(home: AxeHome) -> None:
    """--all without an agents directory reads as no memory-enabled agents, exit 0."""
    (home.config / "agents").rmdir()
    result = run("--all")
    assert (result.exit_code, result.stdout) == (0, "No agents with memory enabled.\n")


def test_unknown_option_is_a_one_line_usage_error(home: AxeHome) -> None:
    """An unknown option is exit 1 with one line pointing at --help."""
    result = run("--bogus")
    assert result.exit_code == 1
    assert lines(result.stderr) == ["No such option '--bogus' (see 'axe gc --help')"]


def test_too_many_arguments_is_exit_1(home: AxeHome) -> None:
    """More than one agent name is exit 1 with one line, not a traceback."""
    result = run("a", "b")
    assert result.exit_code == 1
    assert len(lines(result.stderr)) == 1


def test_help_shows_usage_examples_and_exit_codes() -> None:
    """`axe gc --help` shows usage examples and the exit codes."""
    result = run("--help")
    assert result.exit_code == 0
    assert "axe gc pr-reviewer --dry-run" in result.stdout
    assert "Exit codes: 0 success" in result.stdout


def test_version() -> None:
    """`axe --version` and `axe gc --version` print the version and exit 0; `axe`'s then
    says where other commands go."""
    from axe import __version__

    result = CliRunner().invoke(cli, ["--version"])
    assert result.exit_code == 0
    assert result.stdout.startswith(f"axe {__version__}\nOther commands (run, ...) are handed")
    of_gc = run("--version")
    assert (of_gc.exit_code, of_gc.stdout) == (0, f"axe {__version__}\n")


def test_builtin_heuristic_needs_no_key_and_no_network(home: AxeHome) -> None:
    """--model builtin/heuristic analyses and trims with no API key and no request sent."""
    home.add_agent("helper", model="anthropic/claude-3", last_n=2)
    home.write_memory("helper", entries(5))
    with respx.mock() as router:  # any request would fail the test
        result = run("helper", "--model", "builtin/heuristic")
        assert not router.calls
    assert result.exit_code == 0, result.stderr
    assert "## Patterns Found" in result.stdout
    assert lines(result.stdout)[-1] == "Trimmed: 3 entries removed, 2 entries kept."


def test_archive_keeps_the_removed_entries(home: AxeHome) -> None:
    """--archive keeps the removed bytes in <memory file>.archive and trims the memory file."""
    home.add_agent("helper", model="builtin/heuristic", last_n=2)
    home.write_memory("helper", b"notes\n" + entries(5))
    assert run("helper", "--archive").exit_code == 0
    archive = home.memory_path("helper").with_name("helper.md.archive")
    assert archive.read_bytes() == b"notes\n" + entries(3)
    assert home.memory_path("helper").read_bytes() == entries(2, start=3)


def test_api_key_never_printed_even_when_the_server_echoes_it(
    home: AxeHome, llm: respx.MockRouter
) -> None:
    """A key the provider echoes back is never printed, on either stream, for any agent."""
    llm["anthropic"].respond(
        401, json={"error": {"type": "authentication_error", "message": f"bad key {KEY}"}}
    )
    for name in ("a", "b"):
        home.add_agent(name, last_n=1)
        home.write_memory(name, entries(2))
    result = run("--all")
    assert result.exit_code == 1
    assert KEY not in result.stdout + result.stderr
    assert result.stderr.count("[redacted]") == 2


def test_empty_agents_directory_with_all(home: AxeHome) -> None:
    """--all with an empty agents directory says no agent has memory enabled, exit 0."""
    result = run("--all")
    assert (result.exit_code, result.stdout, result.stderr) == (
        0,
        "No agents with memory enabled.\n",
        "",
    )


def test_agent_file_that_is_a_directory_is_exit_2(home: AxeHome) -> None:
    """An agent file that is a directory is exit 2 with one line saying so."""
    (home.config / "agents" / "odd.toml").mkdir()
    result = run("odd")
    assert result.exit_code == 2
    assert result.stderr == f"cannot read {home.config / 'agents' / 'odd.toml'}: a directory\n"


def test_wrong_types_in_toml_are_exit_2(home: AxeHome) -> None:
    """A wrongly typed value (last_n = "ten") is exit 2 naming the key and the value as written."""
    (home.config / "agents" / "typo.toml").write_text(
        'name = "t"\nmodel = "x/y"\n[memory]\nenabled = true\nlast_n = "ten"\n'
    )
    result = run("typo")
    assert result.exit_code == 2
    assert result.stderr.endswith('memory.last_n: expected an integer, got "ten"\n')


def test_truncated_json_from_the_provider_is_exit_3(home: AxeHome, llm: respx.MockRouter) -> None:
    """A reply cut off mid-JSON is exit 3 saying so, and nothing is trimmed."""
    llm["anthropic"].respond(200, text='{"content": [{"type": "text", "te')
    home.add_agent("helper", last_n=1)
    home.write_memory("helper", entries(3))
    result = run("helper")
    assert result.exit_code == 3
    assert result.stderr.startswith("anthropic returned a reply that is not JSON")
    assert home.memory_path("helper").read_bytes() == entries(3)


def test_top_level_help_lists_gc_with_examples() -> None:
    """`axe --help` lists the gc command and shows examples of it."""
    result = CliRunner().invoke(cli, ["--help"])
    assert result.exit_code == 0
    assert "  gc  Analyze and trim agent memory\n" in result.stdout
    assert "axe gc --all --dry-run" in result.stdout


def test_agent_without_memory_table_is_skipped(home: AxeHome) -> None:
    """An agent file with no [memory] table is skipped with the spec's warning, exit 0."""
    home.add_agent("plain", enabled=None)
    result = run("plain")
    assert (result.exit_code, result.stdout) == (0, "")
    assert result.stderr == 'Warning: agent "plain" does not have memory enabled. Skipping.\n'


def test_all_with_archive_archives_every_agent(home: AxeHome) -> None:
    """--all --archive gives every trimmed agent its own archive of what was removed."""
    for name in ("a", "b"):
        home.add_agent(name, model="builtin/heuristic", last_n=1)
        home.write_memory(name, entries(3))
    assert run("--all", "--archive").exit_code == 0
    for name in ("a", "b"):
        assert home.memory_path(name).with_name(f"{name}.md.archive").read_bytes() == entries(2)
        assert home.memory_path(name).read_bytes() == entries(1, start=2)


# the same answer for the same input


@pytest.mark.parametrize("model", ["builtin/heuristic", "anthropic/claude-3"])
def test_a_broken_config_toml_is_reported_whichever_model_is_asked(
    home: AxeHome, model: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A malformed config.toml is exit 2 with one line, for the offline analyst as for a
    provider, even one whose key and base URL both come from the environment: the same
    file gives the same answer."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("AXE_ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
    home.write_global_config("[providers.anthropic\n")
    home.add_agent("helper", last_n=1)
    home.write_memory("helper", entries(3))
    result = run("helper", "--model", model)
    assert (result.exit_code, result.stdout) == (2, "Agent: helper\nEntries: 3\n")
    assert result.stderr.startswith(f"cannot parse {home.config / 'config.toml'}: ")
    assert len(result.stderr.splitlines()) == 1
    assert home.memory_path("helper").read_bytes() == entries(3)


def test_an_invalid_model_for_all_is_one_line_before_any_agent_runs(home: AxeHome) -> None:
    """`--all --model nonsense` says so once, exit 1, and analyses nobody."""
    for name in ("a", "b", "c"):
        home.add_agent(name, last_n=1)
        home.write_memory(name, entries(3))
    result = run("--all", "--model", "nonsense")
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == 'invalid model format "nonsense": expected provider/model-name\n'
    assert all(home.memory_path(n).read_bytes() == entries(3) for n in ("a", "b", "c"))


def test_an_integer_beyond_64_bits_is_a_config_error(home: AxeHome) -> None:
    """TOML integers are 64-bit, as in the Go axe: a larger last_n is exit 2."""
    (home.config / "agents" / "big.toml").write_text(
        'name = "b"\nmodel = "x/y"\n[memory]\nenabled = true\nlast_n = 99999999999999999999\n'
    )
    result = run("big")
    assert result.exit_code == 2
    assert result.stderr.endswith(
        "memory.last_n: 99999999999999999999 is outside TOML's 64-bit integer range\n"
    )


def test_an_unknown_provider_for_all_is_one_line_before_any_agent_runs(home: AxeHome) -> None:
    """`--all --model mystery/x` is refused once, exit 1, like a malformed --model."""
    for name in ("a", "b"):
        home.add_agent(name, last_n=1)
        home.write_memory(name, entries(3))
    result = run("--all", "--model", "mystery/x")
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == (
        'unsupported provider "mystery" (supported: anthropic, atlascloud, bedrock, builtin, edenai, google, minimax, ollama, openai, opencode, openrouter, requesty)\n'
    )
    unknown_builtin = run("--all", "--model", "builtin/wizard")
    assert (unknown_builtin.exit_code, unknown_builtin.stdout) == (1, "")
    assert unknown_builtin.stderr == 'unknown builtin model "wizard" (available: heuristic)\n'


def test_an_agent_name_never_drives_the_terminal(home: AxeHome) -> None:
    """Control characters in a name typed on the command line are escaped or stripped in
    every line axe prints about it, C1 controls included."""
    result = run("ghost\x9b2J\x1b]0;owned\x07")
    assert result.exit_code == 2
    assert not any(0x80 <= ord(c) <= 0x9F or ord(c) < 0x20 for c in result.stderr.rstrip("\n"))


@pytest.mark.parametrize("variable", ["AXE_HTTP_TIMEOUT", "AXE_LOCK_TIMEOUT"])
@pytest.mark.parametrize("value", ["1e10", "nan", "0", "soon"])
def test_a_time_limit_beyond_a_day_or_not_a_number_is_exit_2(
    home: AxeHome, monkeypatch: pytest.MonkeyPatch, variable: str, value: str
) -> None:
    """A time limit in the environment must be a positive number of seconds up to a day:
    anything else is one line, exit 2, before any agent runs."""
    monkeypatch.setenv(variable, value)
    home.add_agent("helper", last_n=1)
    home.write_memory("helper", entries(3))
    result = run("helper", "--model", "builtin/heuristic")
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == (
        f"{variable} must be a positive number of seconds, at most 86400, not {value!r}\n"
    )
    assert home.memory_path("helper").read_bytes() == entries(3)


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("nan", "nan is not a number of seconds"),
        ("1e10", "10000000000.0 is not in the range 0<x<=86400"),
    ],
)
def test_a_lock_timeout_option_beyond_a_day_or_nan_is_a_usage_error(
    home: AxeHome, value: str, problem: str
) -> None:
    """--lock-timeout is checked like the variable: a usage error naming the option."""
    result = run("helper", "--lock-timeout", value)
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == (
        f"Invalid value for '--lock-timeout': {problem} (see 'axe gc --help')\n"
    )
