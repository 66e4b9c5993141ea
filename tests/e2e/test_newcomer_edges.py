"""What a newcomer trips over: broken agent files under --json, a broken
config.toml under --all, headings missing from a memory file, a model that does not exist,
help and error lines that name the right places and commands."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import respx
from click.testing import CliRunner, Result

from axe.cli.commands import cli, gc
from tests.support import (
    CANNED_ANALYSIS,
    INSTALLED_BIN,
    AxeHome,
    agent_toml,
    entries,
    run_installed,
)

ANTHROPIC_URL = "https://api.anthropic.com/v1/messages"


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, ["gc", *args], catch_exceptions=False)


@pytest.fixture
def anthropic(monkeypatch: pytest.MonkeyPatch) -> Iterator[respx.MockRouter]:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    with respx.mock(assert_all_called=False) as router:
        router.post(ANTHROPIC_URL, name="messages").respond(
            200, json={"content": [{"type": "text", "text": CANNED_ANALYSIS}]}
        )
        yield router


def broken_agents(home: AxeHome) -> tuple[str, str]:
    """Two agent files that do not load: a rule broken, a value of the wrong type."""
    agents = home.config / "agents"
    (agents / "a.toml").write_text(
        'name = "a"\nmodel = "x/y"\n[memory]\nenabled = true\nlast_n = -1\n'
    )
    (agents / "b.toml").write_text('name = "b"\nmodel = "x/y"\n[memory]\nenabled = "yes"\n')
    return (
        f"invalid config {agents / 'a.toml'}: memory.last_n: expected an integer >= 0, got -1",
        f'invalid config {agents / "b.toml"}: memory.enabled: expected true or false, got "yes"',
    )


# --all with agent files that do not load


def test_broken_agent_files_under_all_keep_the_spec_text_and_exit_code(home: AxeHome) -> None:
    """Text output: a warning per file, the spec's line, exit 0 (the Go axe skips them)."""
    a, b = broken_agents(home)
    result = run("--all")
    assert (result.exit_code, result.stdout) == (0, "No agents with memory enabled.\n")
    assert result.stderr == (
        f'Warning: skipping agent "a": {a}\nWarning: skipping agent "b": {b}\n'
    )


def test_broken_agent_files_under_all_json_are_one_failed_object_each(
    home: AxeHome, anthropic: respx.MockRouter
) -> None:
    """--json: each file that does not load is its own object (failed, its one line, exit
    code 2), before the agents that ran; stderr and the exit code stay those of the text."""
    a, b = broken_agents(home)
    home.add_agent("c", last_n=1)
    home.write_memory("c", entries(2))
    result = run("--all", "--json")
    assert result.exit_code == 0
    assert result.stderr == (
        f'Warning: skipping agent "a": {a}\nWarning: skipping agent "b": {b}\n'
    )
    objects = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(o["agent"], o["status"], o["error"], o["exit_code"]) for o in objects] == [
        ("a", "failed", a, 2),
        ("b", "failed", b, 2),
        ("c", "trimmed", None, 0),
    ]
    assert objects[0] == {
        "agent": "a",
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
        "error": a,
        "exit_code": 2,
        "budget_max_tokens": None,
        "budget_used_tokens": None,
        "analysed_entries": None,
    }


def test_agent_file_errors_have_one_shape_with_the_value(home: AxeHome) -> None:
    """A broken rule and a wrong type read alike: the file, the key, what was expected, and
    the value as written."""
    a, b = broken_agents(home)
    assert (run("a").exit_code, run("a").stderr) == (2, a + "\n")
    assert (run("b").exit_code, run("b").stderr) == (2, b + "\n")


# a broken config.toml


def test_a_broken_config_toml_under_all_is_one_line_before_any_agent_runs(
    home: AxeHome, anthropic: respx.MockRouter
) -> None:
    """--all with a config.toml that does not parse: one line, exit 2, nobody analysed."""
    home.write_global_config("[providers.anthropic\n")
    for name in ("a", "b", "c"):
        home.add_agent(name, last_n=1)
        home.write_memory(name, entries(3))
    result = run("--all")
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr.startswith(f"cannot parse {home.config / 'config.toml'}: ")
    assert len(result.stderr.splitlines()) == 1
    assert not anthropic.calls
    assert all(home.memory_path(n).read_bytes() == entries(3) for n in ("a", "b", "c"))


# a memory file without entry headings


@pytest.mark.parametrize("content", [b"notes without any heading\n", b"  \n\n"])
def test_memory_without_a_heading_says_so_on_stderr(
    home: AxeHome, anthropic: respx.MockRouter, content: bytes
) -> None:
    """Text but no line starting with "## ": stdout as the spec says (analysed, 0 entries),
    and one stderr line saying why there are no entries; the file is not changed."""
    home.add_agent("helper", last_n=3)
    home.write_memory("helper", content)
    result = run("helper")
    assert result.exit_code == 0
    assert result.stdout == (
        f"Agent: helper\nEntries: 0\n--- Analysis ---\n{CANNED_ANALYSIS}\n"
        "No trimming needed: 0 entries within limit (3).\n"
    )
    assert result.stderr == (
        'Warning: no line in the memory file of agent "helper" starts with "## ", so it '
        "holds no entries; its text is analysed as it is and nothing is trimmed\n"
    )
    assert len(anthropic.calls) == 1
    assert home.memory_path("helper").read_bytes() == content


# a model that does not exist


def _not_found(router: respx.MockRouter) -> None:
    router.post(ANTHROPIC_URL).respond(
        404, json={"error": {"type": "not_found_error", "message": "model: claude-nope"}}
    )


def test_a_404_names_the_agent_file_that_set_the_model(
    home: AxeHome, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model the provider does not know: the error says which file named it."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    path = home.add_agent("helper", model="anthropic/claude-nope", last_n=1)
    home.write_memory("helper", entries(2))
    with respx.mock() as router:
        _not_found(router)
        result = run("helper")
    assert result.exit_code == 3
    assert result.stderr == (
        "anthropic API error (HTTP 404 not_found_error): model: claude-nope "
        f'(model "anthropic/claude-nope" is set in {path})\n'
    )


def test_a_404_for_a_model_given_with_model_names_the_option(
    home: AxeHome, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With --model the error points at the option, in text and in --json alike."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    home.add_agent("helper", last_n=1)
    home.write_memory("helper", entries(2))
    with respx.mock() as router:
        _not_found(router)
        result = run("helper", "--model", "anthropic/claude-nope")
        as_json = run("helper", "--model", "anthropic/claude-nope", "--json")
    line = (
        "anthropic API error (HTTP 404 not_found_error): model: claude-nope "
        '(model "anthropic/claude-nope" is given by --model)'
    )
    assert (result.exit_code, result.stderr) == (3, line + "\n")
    assert (as_json.exit_code, as_json.stderr) == (3, line + "\n")
    assert json.loads(as_json.stdout)["error"] == line


# help and usage errors


def test_gc_help_says_how_big_logs_go_and_where_things_live(home: AxeHome) -> None:
    """`axe gc --help` no longer claims one request, and names the places and variables."""
    text = run("--help").stdout
    assert "whole memory log to its model in one request" not in text
    assert "None]" not in text  # an unbounded range shown as "[x<=None]"
    assert "a larger one is analysed in parts" in " ".join(text.split())
    for place in (
        "--agents-dir",
        "./axe/agents",
        "<config dir>/agents",
        "<data dir>/memory/<agent>.md",
        "<config dir>/config.toml",
        "<PROVIDER>_API_KEY",
        "GEMINI_API_KEY",
        "AWS_*",
        "XDG_CONFIG_HOME",
        "XDG_DATA_HOME",
    ):
        assert place in text, place


def test_axe_gc_help_shows_its_own_name_in_the_examples(home: AxeHome) -> None:
    """`axe-gc --help` shows `axe-gc ...` examples, `axe gc --help` shows `axe gc ...`."""
    own = CliRunner().invoke(gc, ["--help"], prog_name="axe-gc").stdout
    assert "  axe-gc pr-reviewer --dry-run" in own
    assert "axe gc " not in own
    assert "  axe gc pr-reviewer --dry-run" in run("--help").stdout


def test_a_missing_option_value_points_at_gc_help(home: AxeHome) -> None:
    """`axe gc --model` (no value) points at `axe gc --help`, as every other gc error does."""
    result = run("helper", "--model")
    assert (result.exit_code, result.stderr) == (
        1,
        "Option '--model' requires an argument (see 'axe gc --help')\n",
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--jobs", "abc"], "Invalid value for '--jobs' / '-j': 'abc' is not a valid whole number"),
        (
            ["--max-input-tokens", "lots"],
            "Invalid value for '--max-input-tokens': 'lots' is not a valid whole number",
        ),
        (
            ["--lock-timeout", "soon"],
            "Invalid value for '--lock-timeout': 'soon' is not a valid number of seconds",
        ),
    ],
)
def test_a_number_that_is_not_one_says_what_was_expected(
    home: AxeHome, args: list[str], message: str
) -> None:
    """Not "not a valid integer range": what kind of number the option takes."""
    result = run("--all", *args)
    assert (result.exit_code, result.stderr) == (1, f"{message} (see 'axe gc --help')\n")


def test_jobs_below_one_is_the_core_s_fact_in_the_cli_s_words(home: AxeHome) -> None:
    """`--jobs 0`: the use case's options refuse it; the CLI says it in its own terms."""
    result = run("--all", "--jobs", "0")
    assert (result.exit_code, result.stdout, result.stderr) == (
        1,
        "",
        "--jobs must be at least 1, not 0\n",
    )


def test_axe_help_and_version_say_what_is_handed_to_the_go_axe(home: AxeHome) -> None:
    """`axe --help` and `axe --version` say that other commands go to the Go axe."""
    text = CliRunner().invoke(cli, ["--help"]).stdout
    assert "Other commands (run, ...) are handed to the next `axe` on PATH" in (
        " ".join(text.split())
    )
    version = CliRunner().invoke(cli, ["--version"]).stdout
    assert version.startswith("axe ")
    assert "the Go axe" in version


def test_with_the_go_axe_on_path_help_and_version_name_it(home: AxeHome, tmp_path: Path) -> None:
    """The installed `axe --help` and `axe --version` name the program other commands go to."""
    go = tmp_path / "go-bin"
    go.mkdir()
    (go / "axe").write_text("#!/bin/sh\necho go axe\n")
    (go / "axe").chmod(0o755)
    sentence = (
        "Other commands (run, ...) are handed to the next `axe` on PATH that is not this one: "
        f"{go / 'axe'}"
    )
    helped = run_installed(home, "--help", path=[INSTALLED_BIN, go])
    assert sentence in " ".join(helped.stdout.split())
    version = run_installed(home, "--version", path=[INSTALLED_BIN, go])
    assert (version.returncode, version.stdout.splitlines()[1]) == (0, sentence)


# A path where an agent name belongs

REFUSED_PATH = (
    'invalid agent name "{written}": it contains a path separator; use the file name of an '
    "agent in the agents directory{command}\n"
)


@pytest.mark.parametrize(
    "written", ["./axe/agents/good.toml", "./axe/agents/good", "axe/agents/good.toml"]
)
def test_a_path_to_an_agent_file_is_refused_naming_the_command_that_works(
    home: AxeHome, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, written: str
) -> None:
    """`axe gc ./axe/agents/good.toml`, with or without .toml, is still exit 2, and its one
    line says that `axe gc good` would work."""
    agents = tmp_path / "work" / "axe" / "agents"
    agents.mkdir(parents=True)
    (agents / "good.toml").write_text(agent_toml(name="good", model="builtin/heuristic"))
    monkeypatch.chdir(tmp_path / "work")
    result = run(written, "--dry-run")
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == REFUSED_PATH.format(written=written, command=": axe gc good")


def test_a_path_anywhere_is_refused_naming_the_command_for_that_file(
    home: AxeHome, tmp_path: Path
) -> None:
    """Whatever the directory: an agent gc finds gets `axe gc good`; a file in a directory gc
    does not search gets `--agents-dir` too; a path to no agent file, no command at all."""
    found = home.add_agent("good")
    elsewhere = tmp_path / "team agents" / "other.toml"
    elsewhere.parent.mkdir()
    elsewhere.write_text(agent_toml(name="other"))
    cases = [
        (str(found), ": axe gc good"),
        (str(elsewhere), f": axe gc other --agents-dir '{elsewhere.parent}'"),
        (str(tmp_path / "nowhere" / "good.toml"), ": axe gc good"),
        (str(tmp_path / "nowhere" / "missing.toml"), ""),
    ]
    for written, command in cases:
        result = run(written)
        assert (result.exit_code, result.stdout) == (2, "")
        assert result.stderr == REFUSED_PATH.format(written=written, command=command)


def test_the_installed_axe_names_the_command_for_a_path(home: AxeHome) -> None:
    """The real `axe gc <path to good.toml>` process: exit 2, one line naming `axe gc good`."""
    found = home.add_agent("good")
    done = run_installed(home, "gc", str(found))
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == REFUSED_PATH.format(written=found, command=": axe gc good")


@pytest.mark.parametrize(("text", "key"), [('model = "x/y"\n', "name"), ('name = "n"\n', "model")])
def test_the_installed_axe_says_a_required_key_left_out_is_missing(
    home: AxeHome, text: str, key: str
) -> None:
    """The real `axe gc noname` with no name (or no model) in its file: exit 2, one line
    saying the key is missing, not that the user wrote an empty string."""
    path = home.config / "agents" / "noname.toml"
    path.write_text(text + "[memory]\nenabled = true\n")
    done = run_installed(home, "gc", "noname")
    assert (done.returncode, done.stdout, done.stderr) == (
        2,
        "",
        f"invalid config {path}: missing required field: {key}\n",
    )
