"""Where `axe gc` finds agents and memory, in-process and as the installed
program: --agents-dir, ./axe/agents (only when yours alone), the config dir; memory.path
with ~ and variables; saying where it looked."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from axe.cli.commands import cli
from tests.support import AxeHome, agent_toml, entries, run_installed

OFFLINE = ("--model", "builtin/heuristic")
ME = os.geteuid() if hasattr(os, "geteuid") else 1000
as_root = pytest.mark.skipif(ME != 0, reason="giving a file to another user needs root")


def run(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(cli, ["gc", *args], env=env, catch_exceptions=False)


class Project:
    """A working directory with ./axe/agents, an --agents-dir, and the home's config dir;
    each agent keeps its memory where its own file says, so the entry count tells which
    file gc used."""

    def __init__(self, home: AxeHome) -> None:
        self.home = home
        self.work = home.root / "work"
        self.working = self.work / "axe" / "agents"
        self.chosen = home.root / "chosen"
        self.config = home.config / "agents"
        for directory in (self.working, self.chosen):
            directory.mkdir(parents=True)
        for directory in (self.work / "axe", self.working, self.chosen, self.config):
            directory.chmod(0o755)  # whatever the umask: writable by no one else

    def add(self, directory: Path, name: str, count: int, **settings: object) -> Path:
        """Agent ``name`` in ``directory`` whose memory holds ``count`` entries."""
        memory = self.home.root / "memories" / f"{name}-{count}.md"
        memory.parent.mkdir(exist_ok=True)
        memory.write_bytes(entries(count))
        path = directory / f"{name}.toml"
        path.write_text(agent_toml(name=name, path=str(memory), **settings))  # type: ignore[arg-type]
        path.chmod(0o644)
        return path


@pytest.fixture
def project(home: AxeHome, monkeypatch: pytest.MonkeyPatch) -> Project:
    """A project directory that is the working directory of in-process runs."""
    made = Project(home)
    monkeypatch.chdir(made.work)
    return made


def entries_seen(result: Result | str) -> list[str]:
    text = result if isinstance(result, str) else result.stdout
    return [line for line in text.splitlines() if line.startswith(("Entries:", "=== GC:"))]


def test_agents_dir_then_working_directory_then_config_dir(project: Project) -> None:
    """One name in all three places: --agents-dir wins, then ./axe/agents, then the config dir."""
    project.add(project.chosen, "a", 1)
    project.add(project.working, "a", 2)
    project.add(project.config, "a", 3)
    chosen = run("a", "--dry-run", *OFFLINE, "--agents-dir", str(project.chosen))
    assert (chosen.exit_code, entries_seen(chosen), chosen.stderr) == (0, ["Entries: 1"], "")
    assert chosen.stdout.endswith("Dry run: no entries trimmed.\n")
    assert entries_seen(run("a", "--dry-run", *OFFLINE)) == ["Entries: 2"]
    (project.working / "a.toml").unlink()
    assert entries_seen(run("a", "--dry-run", *OFFLINE)) == ["Entries: 3"]


def test_all_runs_every_place_once_per_name_in_name_order(project: Project) -> None:
    """--all: the union of the three places in name order; a name found twice is the
    first place's agent, run once."""
    project.add(project.chosen, "zeta", 1)
    project.add(project.chosen, "mid", 1)
    project.add(project.working, "mid", 2)
    project.add(project.working, "alpha", 2)
    project.add(project.config, "zeta", 3)
    project.add(project.config, "beta", 3)
    result = run("--all", "--dry-run", *OFFLINE, "--agents-dir", str(project.chosen))
    assert (result.exit_code, result.stderr) == (0, "")
    assert entries_seen(result) == [
        "=== GC: alpha ===",
        "Entries: 2",
        "=== GC: beta ===",
        "Entries: 3",
        "=== GC: mid ===",
        "Entries: 1",
        "=== GC: zeta ===",
        "Entries: 1",
    ]


@pytest.mark.parametrize("json_mode", [False, True])
def test_a_working_directory_others_can_write_is_skipped_with_one_warning(
    project: Project, json_mode: bool
) -> None:
    """./axe/agents writable by others: one warning line saying why (the same with
    --json), its agents unused, the config dir's used instead."""
    project.add(project.working, "a", 2)
    project.add(project.working, "b", 2)
    project.add(project.config, "a", 3)
    project.working.chmod(0o777)
    result = run("--all", "--dry-run", *OFFLINE, *(["--json"] if json_mode else []))
    assert result.exit_code == 0
    assert result.stderr == (
        f"Warning: ignoring {project.working}: other users can write to it (mode 0777); run "
        "chmod go-w on it, or name it with --agents-dir\n"
    )
    if not json_mode:
        assert entries_seen(result) == ["=== GC: a ===", "Entries: 3"]


def test_an_agent_not_found_does_not_claim_gc_looked_where_it_refused_to(
    project: Project,
) -> None:
    """After the warning that ./axe/agents is ignored, "not found" names only the places
    gc really searched."""
    project.add(project.working, "local", 2)
    project.working.chmod(0o777)
    result = run("local", "--dry-run", *OFFLINE)
    assert result.exit_code == 2
    assert result.stderr.splitlines()[1].startswith(
        f'agent "local" not found (looked in {project.config});'
    )


def test_an_explicit_agents_dir_is_used_as_given(project: Project) -> None:
    """The same unsafe directory named with --agents-dir is the user's choice: no warning."""
    project.add(project.working, "a", 2)
    project.working.chmod(0o777)
    result = run("a", "--dry-run", *OFFLINE, "--agents-dir", "axe/agents")
    assert (result.exit_code, entries_seen(result), result.stderr) == (0, ["Entries: 2"], "")


@as_root
def test_a_file_of_another_user_is_skipped_with_one_warning(project: Project) -> None:
    """An agent file in ./axe/agents that someone else owns is not used, said once."""
    theirs = project.add(project.working, "a", 2)
    os.chown(theirs, 4242, -1)
    project.add(project.config, "a", 3)
    result = run("a", "--dry-run", *OFFLINE)
    assert (result.exit_code, entries_seen(result)) == (0, ["Entries: 3"])
    assert result.stderr == (
        f"Warning: ignoring {theirs}: it belongs to another user (uid 4242), not to you\n"
    )


@pytest.mark.parametrize("json_mode", [False, True])
def test_no_agents_directory_anywhere_says_where_gc_looked(
    project: Project, json_mode: bool
) -> None:
    """--all with no agents directory: stdout exactly as the spec says, and one stderr
    line naming every place searched (the same with --json)."""
    project.working.rmdir()
    project.config.rmdir()
    result = run("--all", *(["--json"] if json_mode else []))
    assert (result.exit_code, result.stdout) == (
        0,
        "" if json_mode else "No agents with memory enabled.\n",
    )
    assert result.stderr == (
        f"No agents directory found (looked in {project.working} and {project.config})\n"
    )


def test_a_missing_agent_lists_the_agents_there_are(project: Project) -> None:
    """`axe gc ghost`: exit 2, where gc looked, and the agents that do exist."""
    project.add(project.working, "zeta", 1)
    project.add(project.config, "alpha", 1)
    result = run("ghost")
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == (
        f'agent "ghost" not found (looked in {project.working} and {project.config}); '
        "existing agents: alpha, zeta\n"
    )


def test_an_agent_named_by_its_file_name_suggests_its_name(project: Project) -> None:
    """`axe gc good.toml`: exit 2, did you mean "good"?"""
    project.add(project.config, "good", 1)
    result = run("good.toml")
    assert (result.exit_code, result.stderr) == (
        2,
        f'agent "good.toml" not found (looked in {project.working} and {project.config}); '
        'did you mean "good"?\n',
    )


def test_a_mistyped_agents_dir_is_exit_2(project: Project) -> None:
    """--agents-dir naming no directory: one line, exit 2, nothing run."""
    project.add(project.config, "a", 3)
    result = run("--all", "--agents-dir", "agnets")
    assert (result.exit_code, result.stdout, result.stderr) == (
        2,
        "",
        '--agents-dir "agnets": no such directory\n',
    )


def test_memory_path_with_variables_is_the_file_trimmed(project: Project) -> None:
    """memory.path = "~/$SUB/${NAME}.md" reads and trims $HOME/notes/a.md."""
    home = project.home.root / "home"
    (home / "notes").mkdir(parents=True)
    memory = home / "notes" / "a.md"
    memory.write_bytes(entries(3))
    text = agent_toml(name="a", path="~/$SUB/${NAME}.md", last_n=1, model="builtin/heuristic")
    (project.config / "a.toml").write_text(text)
    result = run("a", env={"SUB": "notes", "NAME": "a"})
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout.endswith("Trimmed: 2 entries removed, 1 entries kept.\n")
    assert memory.read_bytes() == entries(1, start=2)


def test_memory_path_relative_after_expansion_is_exit_2(project: Project) -> None:
    """An unset variable leaving a relative path is a config error, exit 2."""
    text = agent_toml(name="a", path="${NOPE}notes/a.md")
    (project.config / "a.toml").write_text(text)
    result = run("a")
    assert (result.exit_code, result.stdout, result.stderr) == (
        2,
        "",
        'memory.path "${NOPE}notes/a.md" of agent "a" is not an absolute path (it expands '
        'to "notes/a.md"); use an absolute path such as /home/me/agent-memory.md\n',
    )


def test_an_error_naming_a_hostile_path_is_one_inert_line(project: Project) -> None:
    """A memory path holding a newline, a tab and an escape sequence is named in one line
    of stderr, each control written as an escape, so the path reads as it is."""
    hostile = project.home.root / "no\nsuch" / "d\x1b[31mRED\ttab"
    hostile.mkdir(parents=True)
    memory = hostile / "a.md"
    memory.mkdir()
    text = agent_toml(name="a", path="here", model="builtin/heuristic")
    (project.config / "a.toml").write_text(text.replace('"here"', json.dumps(str(memory))))
    result = run("a", "--dry-run")
    shown = str(memory).replace("\n", "\\n").replace("\t", "\\t").replace("\x1b", "\\u001b")
    assert (result.exit_code, result.stderr) == (
        1,
        f"cannot read memory file {shown}: a directory\n",
    )


# The installed program, in a real process


def test_installed_axe_searches_the_three_places(project: Project) -> None:
    """The installed axe, run from the project: first match wins, --all is the union in
    name order, and the warning for an unsafe file is one line."""
    project.add(project.chosen, "a", 1)
    project.add(project.working, "a", 2)
    project.add(project.working, "b", 2)
    project.add(project.config, "c", 3)
    unsafe = project.add(project.working, "d", 2)
    unsafe.chmod(0o666)
    done = run_installed(
        project.home,
        "gc",
        "--all",
        "--dry-run",
        *OFFLINE,
        "--agents-dir",
        str(project.chosen),
        cwd=project.work,
    )
    assert done.returncode == 0
    assert entries_seen(done.stdout) == [
        "=== GC: a ===",
        "Entries: 1",
        "=== GC: b ===",
        "Entries: 2",
        "=== GC: c ===",
        "Entries: 3",
    ]
    assert done.stderr == (
        f"Warning: ignoring {unsafe}: other users can write to it (mode 0666); run chmod "
        "go-w on it, or name it with --agents-dir\n"
    )


@as_root
def test_installed_axe_skips_a_directory_of_another_user(project: Project) -> None:
    """A ./axe/agents given to another user is skipped by the real process, said once."""
    project.add(project.working, "a", 2)
    project.add(project.config, "a", 3)
    os.chown(project.working, 4242, -1)
    done = run_installed(project.home, "gc", "a", "--dry-run", *OFFLINE, cwd=project.work)
    assert (done.returncode, entries_seen(done.stdout)) == (0, ["Entries: 3"])
    assert done.stderr == (
        f"Warning: ignoring {project.working}: it belongs to another user (uid 4242), not to you\n"
    )


def test_installed_axe_says_where_it_looked(project: Project) -> None:
    """A first run (no agents directory): the spec's stdout, one line of where gc looked."""
    project.working.rmdir()
    project.config.rmdir()
    done = run_installed(project.home, "gc", "--all", cwd=project.work)
    assert (done.returncode, done.stdout, done.stderr) == (
        0,
        "No agents with memory enabled.\n",
        f"No agents directory found (looked in {project.working} and {project.config})\n",
    )


def test_installed_axe_expands_memory_path(project: Project) -> None:
    """The real process expands ~ and $VAR in memory.path from its own environment."""
    memory = project.home.root / "home" / "mem" / "a.md"
    memory.parent.mkdir(parents=True)
    memory.write_bytes(entries(4))
    text = agent_toml(name="a", path="~/${DIR}/$NAME.md", last_n=1, model="builtin/heuristic")
    (project.config / "a.toml").write_text(text)
    done = run_installed(project.home, "gc", "a", cwd=project.work, DIR="mem", NAME="a")
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.endswith("Trimmed: 3 entries removed, 1 entries kept.\n")
    assert memory.read_bytes() == entries(1, start=3)


def test_installed_axe_completes_agents_of_every_place(project: Project) -> None:
    """`axe gc --agents-dir DIR he<TAB>` offers the matching agents of all three places."""
    project.add(project.chosen, "heron", 1)
    project.add(project.working, "herald", 1)
    project.add(project.working, "helper", 1)
    project.add(project.config, "hermit", 1)
    project.add(project.config, "other", 1)
    done = run_installed(
        project.home,
        cwd=project.work,
        _AXE_COMPLETE="bash_complete",
        COMP_WORDS=f"axe gc --agents-dir {project.chosen} he",
        COMP_CWORD="4",
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.split() == ["plain,helper", "plain,herald", "plain,hermit", "plain,heron"]
    without = run_installed(
        project.home,
        cwd=project.work,
        _AXE_COMPLETE="bash_complete",
        COMP_WORDS="axe gc he",
        COMP_CWORD="2",
    )
    assert without.stdout.split() == ["plain,helper", "plain,herald", "plain,hermit"]


def test_a_memory_file_name_with_no_room_for_gcs_own_files_is_exit_2(project: Project) -> None:
    """A memory file name so long that gc's lock and temp files beside it would pass the
    file system's 255 bytes is refused before anything is sent (it could be analysed but
    never locked or trimmed); one byte shorter works."""
    home = project.home
    longest, too_long = "n" * 219, "n" * 220  # memory files of 222 and 223 bytes
    for name in (longest, too_long):
        home.add_agent(name, last_n=1, model="builtin/heuristic")
        home.write_memory(name, entries(3))
    assert (run(longest).exit_code, home.memory_path(longest).read_bytes()) == (0, entries(1, 2))
    result = run(too_long)
    assert (result.exit_code, result.stdout, result.stderr) == (
        2,
        "",
        f'the memory file name of agent "{too_long}" is 223 bytes long; gc\'s own files beside '
        "it (lock, temp files) need 33 bytes more, so it can be at most 222: use a shorter "
        "agent name or memory.path\n",
    )
    assert home.memory_path(too_long).read_bytes() == entries(3)
