"""Agent TOML files: loading, validation, strict types, listing."""

from __future__ import annotations

from pathlib import Path

import pytest
from attrs import define

from axe.adapters.agents.repository import TomlAgentRepository
from axe.adapters.shared.toml import structure
from axe.domain.errors import ConfigError
from axe.domain.model import BudgetConfig, MemoryConfig


@pytest.fixture
def agents_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "agents"
    directory.mkdir()
    return directory


def write(agents_dir: Path, name: str, text: str | bytes) -> Path:
    path = agents_dir / f"{name}.toml"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


FULL = """
name = "PR Reviewer"
model = "anthropic/claude-sonnet-4-20250514"
description = "Reviews pull requests"
system_prompt = "Be thorough"
skill = "skills/code-review/SKILL.md"
files = ["src/**/*.go"]
workdir = "/work"
sub_agents = ["helper"]
future_key = "ignored"

[sub_agents_config]
max_depth = 3
parallel = true
timeout = 120

[memory]
enabled = true
path = "/var/mem.md"
last_n = 10
max_entries = 100

[params]
temperature = 0.3
max_tokens = 4096

[some_new_table]
x = 1
"""


def test_loads_every_documented_key_and_ignores_unknown_ones(agents_dir: Path) -> None:
    """A Go axe agent file loads: its file name is the agent, and unknown keys are ignored."""
    write(agents_dir, "reviewer", FULL)
    agent = TomlAgentRepository([agents_dir]).load("reviewer")
    assert agent.name == "reviewer"  # the file name is the identity
    assert agent.display_name == "PR Reviewer"
    assert agent.model == "anthropic/claude-sonnet-4-20250514"
    assert agent.memory == MemoryConfig(
        enabled=True, path="/var/mem.md", last_n=10, max_entries=100
    )


def test_the_budget_table_is_read_and_its_absence_is_no_budget(agents_dir: Path) -> None:
    """[budget] max_tokens, the Go axe's setting, is the agent's budget; no table is 0
    (unlimited); a value of the wrong type is a config error naming the key."""
    write(agents_dir, "a", 'name = "a"\nmodel = "x/y"\n[budget]\nmax_tokens = 50000\n')
    write(agents_dir, "b", 'name = "b"\nmodel = "x/y"\n')
    write(agents_dir, "c", 'name = "c"\nmodel = "x/y"\n[budget]\nmax_tokens = "50k"\n')
    repository = TomlAgentRepository([agents_dir])
    assert repository.load("a").budget == BudgetConfig(50_000)
    assert repository.load("b").budget == BudgetConfig(0)
    with pytest.raises(ConfigError) as caught:
        repository.load("c")
    assert str(caught.value).endswith('budget.max_tokens: expected an integer, got "50k"')


def test_no_memory_table_means_disabled(agents_dir: Path) -> None:
    """An agent file without a [memory] table has memory disabled, so gc skips it."""
    write(agents_dir, "a", 'name = "a"\nmodel = "x/y"\n')
    assert TomlAgentRepository([agents_dir]).load("a").memory.enabled is False


def test_missing_agent_is_a_config_error_naming_the_file(agents_dir: Path) -> None:
    """An agent that does not exist is a config error naming where axe looked and, with no
    agents at all, the file to write."""
    with pytest.raises(ConfigError) as caught:
        TomlAgentRepository([agents_dir]).load("ghost")
    assert str(caught.value) == (
        f'agent "ghost" not found (looked in {agents_dir}); there are no agents yet: write '
        f"one to {agents_dir / 'ghost.toml'}"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('name = "a"\nmodel = ', "cannot parse"),
        (b"\x00\xff\xfe binary", "not UTF-8 text"),
        (
            'name = "a"\nmodel = "x/y"\n[memory]\nlast_n = "ten"\n',
            'memory.last_n: expected an integer, got "ten"',
        ),
        (
            'name = "a"\nmodel = "x/y"\n[memory]\nenabled = "yes"\n',
            "memory.enabled: expected true or false",
        ),
        (
            'name = "a"\nmodel = "x/y"\n[memory]\nlast_n = 2.5\n',
            "memory.last_n: expected an integer",
        ),
        ('name = "a"\nmodel = "x/y"\nmemory = "on"\n', 'memory: expected a table, got "on"'),
        (
            'name = "a"\nmodel = "x/y"\n[memory]\nlast_n = true\n',
            "memory.last_n: expected an integer, got true",
        ),
        (
            'name = "a"\nmodel = "x/y"\n[memory]\nlast_n = 99999999999999999999\n',
            "memory.last_n: 99999999999999999999 is outside TOML's 64-bit integer range",
        ),
        (
            'name = "a"\nmodel = "x/y"\n[memory]\nenabled = 1979-05-27\n',
            "memory.enabled: expected true or false, got 1979-05-27",
        ),
        ('name = "a"\nmodel = "x/y"\nfiles = ["a", 2]\n', "files[1]: expected a string, got 2"),
        ('name = 7\nmodel = "x/y"\n', "name: expected a string, got 7"),
        ('name = "a"\nmodel = "x/y"\nfiles = "src"\n', "files"),
        ('model = "x/y"\n', ": missing required field: name"),
        ('name = "a"\n', ": missing required field: model"),
        (
            'name = "a"\nmodel = "x/y"\n[memory]\nlast_n = -1\n',
            "memory.last_n: expected an integer >= 0, got -1",
        ),
        (
            'name = "a"\nmodel = "x/y"\n[sub_agents_config]\nmax_depth = 9\n',
            "max_depth: expected an integer from 0 to 5, got 9",
        ),
        (
            'name = "a"\nmodel = "x/y"\ntimeout = -1\n',
            ": timeout: expected an integer >= 0, got -1",
        ),
        (
            'name = "a"\nmodel = "x/y"\ntimeout = "30s"\n',
            ': timeout: expected an integer, got "30s"',
        ),
        (
            'name = "a"\nmodel = "x/y"\n[params]\ntemperature = 1' + "0" * 400 + "\n",
            ": params.temperature: int too large to convert to float",
        ),
        (
            'name = "a"\nmodel = "x/y"\ntimeout = 1' + "0" * 4300 + "\n",
            ": a number or a nesting too large",
        ),
        ('name = "a"\nmodel = "x/y"\nfiles = ' + "[" * 2000 + "]" * 2000 + "\n", "nesting"),
    ],
)
def test_bad_agent_files_are_config_errors(
    agents_dir: Path, text: str | bytes, message: str
) -> None:
    """Unparsable, binary, mistyped or out-of-range agent files are one-line config errors."""
    write(agents_dir, "a", text)
    with pytest.raises(ConfigError) as caught:
        TomlAgentRepository([agents_dir]).load("a")
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_agent_file_that_is_a_directory(agents_dir: Path) -> None:
    """An agent file that is a directory is a config error saying so, not a crash."""
    (agents_dir / "a.toml").mkdir()
    with pytest.raises(ConfigError) as caught:
        TomlAgentRepository([agents_dir]).load("a")
    assert str(caught.value) == f"cannot read {agents_dir / 'a.toml'}: a directory"


def test_hostile_names_never_reach_the_filesystem(tmp_path: Path, agents_dir: Path) -> None:
    """A name like ../victim is refused before a file outside the agents directory is read."""
    (tmp_path / "victim.toml").write_text('name = "v"\nmodel = "x/y"\n')
    with pytest.raises(ConfigError, match="invalid agent name"):
        TomlAgentRepository([agents_dir]).load("../victim")


def test_lists_toml_files_in_name_order(agents_dir: Path) -> None:
    """--all sees every <name>.toml in name order, and nothing else in the agents directory."""
    for name in ("b", "a", "c"):
        write(agents_dir, name, "")
    (agents_dir / "notes.txt").write_text("")
    (agents_dir / ".toml").write_text("")
    assert TomlAgentRepository([agents_dir]).list_names() == ["a", "b", "c"]


def test_missing_agents_directory_lists_nothing(tmp_path: Path) -> None:
    """No agents directory yet means no agents, not an error."""
    assert TomlAgentRepository([tmp_path / "nope"]).list_names() == []


def test_agents_path_that_is_a_file_is_a_config_error(tmp_path: Path) -> None:
    """An agents directory that is really a file is a config error, not a crash."""
    (tmp_path / "agents").write_text("")
    with pytest.raises(ConfigError, match="cannot list agents"):
        TomlAgentRepository([tmp_path / "agents"]).list_names()


def test_a_broken_rule_names_the_file_to_fix(agents_dir: Path) -> None:
    """A file that parses but breaks a rule reads as a wrong type does: the file, the key,
    what was expected, the value."""
    path = write(agents_dir, "a", 'name = " "\nmodel = "x/y"\n')
    with pytest.raises(ConfigError) as caught:
        TomlAgentRepository([agents_dir]).load("a")
    assert str(caught.value) == (
        f'invalid config {path}: name: expected a non-empty string, got " "'
    )


def test_a_byte_order_mark_is_allowed(agents_dir: Path) -> None:
    """Editors on Windows save UTF-8 with a byte-order mark; the Go axe's TOML decoder
    skips it, so the same file loads here."""
    write(agents_dir, "a", b'\xef\xbb\xbfname = "A"\nmodel = "x/y"\n[memory]\nlast_n = 3\n')
    agent = TomlAgentRepository([agents_dir]).load("a")
    assert (agent.display_name, agent.memory.last_n) == ("A", 3)


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("", "it is blank"),
        ("..", "it names a directory"),
        ("a/b", "it contains a path separator"),
        ("a\\b", "it contains a path separator"),
        ("a\x00b", "it contains a control character"),
        ("a\tb", "it contains a control character"),
        ("~root", "it starts with ~, which a shell expands to a home directory"),
        ("C:evil", "it starts with a drive letter"),
    ],
)
def test_a_refused_name_says_why(agents_dir: Path, name: str, reason: str) -> None:
    """The refusal names what is wrong with the name, so the user knows what to change."""
    with pytest.raises(ConfigError) as caught:
        TomlAgentRepository([agents_dir]).load(name)
    message = str(caught.value)
    assert message.startswith("invalid agent name ")
    assert message.endswith(f": {reason}; use the file name of an agent in the agents directory")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('model = "x/y"\n', "missing required field: name"),
        ('name = "a"\n', "missing required field: model"),
        ("[memory]\nenabled = true\n", "missing required field: name"),
        ('model = "x/y"\n[memory]\nlast_n = "ten"\n', "missing required field: name"),
        ('name = ""\nmodel = "x/y"\n', 'name: expected a non-empty string, got ""'),
        ('name = "a"\nmodel = ""\n', 'model: expected a non-empty string, got ""'),
    ],
)
def test_a_required_key_left_out_is_said_to_be_missing(
    agents_dir: Path, text: str, problem: str
) -> None:
    """An agent file without a name or a model says the key is missing, as the Go axe does,
    not that the user wrote an empty string; a key that is there but blank says so."""
    path = write(agents_dir, "noname", text)
    with pytest.raises(ConfigError) as caught:
        TomlAgentRepository([agents_dir]).load("noname")
    assert str(caught.value) == f"invalid config {path}: {problem}"


def test_the_first_wrong_value_in_the_order_of_the_keys_is_named(agents_dir: Path) -> None:
    """With several wrong values, the message names the first in the file's layout, so it
    does not change from run to run."""
    path = write(
        agents_dir,
        "a",
        'name = "a"\nmodel = "x/y"\nfiles = ["a", 2, 3]\ntimeout = "30s"\n'
        '[memory]\nenabled = "yes"\nlast_n = "ten"\n',
    )
    with pytest.raises(ConfigError) as caught:
        TomlAgentRepository([agents_dir]).load("a")
    assert str(caught.value) == f"invalid config {path}: files[1]: expected a string, got 2"


def test_control_characters_in_a_wrong_value_are_shown_escaped(agents_dir: Path) -> None:
    """A wrong value holding a terminal control (C1's CSI, DEL) or a bidirectional override
    is shown escaped in the one-line error, so a hostile file cannot drive the terminal."""
    text = 'name = "a"\nmodel = "x/y"\n[memory]\nlast_n = "\\u009b2J\\u007f\\u202e"\n'
    path = write(agents_dir, "a", text)
    with pytest.raises(ConfigError) as caught:
        TomlAgentRepository([agents_dir]).load("a")
    assert str(caught.value) == (
        f'invalid config {path}: memory.last_n: expected an integer, got "\\u009b2J\\u007f\\u202e"'
    )


@define
class Inner:
    required: str


@define
class Outer:
    tables: dict[str, Inner]


def test_a_key_left_out_of_a_table_is_named_by_its_whole_key() -> None:
    """A key a table's layout requires, left out of the file, is said to be missing under
    its dotted key, as TOML writes it."""
    assert structure({"tables": {"a.b": {"required": "x"}}}, Outer, source="f") == Outer(
        {"a.b": Inner("x")}
    )
    with pytest.raises(ConfigError) as caught:
        structure({"tables": {"a.b": {}}}, Outer, source="f")
    assert str(caught.value) == 'invalid config f: missing required field: tables."a.b".required'
