"""Living beside the Go axe: `axe gc` stays ours, every other command goes to the
next `axe` on PATH, `axe-gc` never clashes, and the shells can complete agent names."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from axe.cli.commands import cli
from tests.support import INSTALLED_BIN, AxeHome, entries
from tests.support import run_installed as axe

BIN = INSTALLED_BIN
GO_AXE = """#!/bin/sh
echo "go axe: $*"
while IFS= read -r line; do echo "$line"; done
exit 7
"""


@pytest.fixture
def go_axe(tmp_path: Path) -> Path:
    """A stand-in for the Go axe: prints its arguments and its stdin, exits 7."""
    directory = tmp_path / "go-bin"
    directory.mkdir()
    program = directory / "axe"
    program.write_text(GO_AXE)
    program.chmod(0o755)
    return directory


def test_other_commands_go_to_the_go_axe_with_arguments_stdin_and_exit_code(
    home: AxeHome, go_axe: Path
) -> None:
    """`axe run` reaches the Go axe as if it had been typed to it: arguments, stdin and
    exit code are its own, even with this axe first on PATH."""
    done = axe(home, "run", "helper", "--verbose", path=[BIN, go_axe], stdin="the task\n")
    assert (done.returncode, done.stdout, done.stderr) == (
        7,
        "go axe: run helper --verbose\nthe task\n",
        "",
    )


def test_neither_this_axe_nor_another_install_of_it_is_taken_for_the_go_axe(
    home: AxeHome, go_axe: Path, tmp_path: Path
) -> None:
    """Another copy of this project's `axe` on PATH is skipped, so nothing loops."""
    other_install = tmp_path / "other-venv-bin"
    other_install.mkdir()
    shutil.copy(BIN / "axe", other_install / "axe")
    done = axe(home, "agents", "list", path=[BIN, other_install, BIN, go_axe])
    assert (done.returncode, done.stdout) == (7, "go axe: agents list\n")


def test_without_the_go_axe_one_line_says_what_to_install(home: AxeHome) -> None:
    """No other axe on PATH: one line, exit 1, naming where the other commands come from."""
    done = axe(home, "run", "helper", path=[BIN])
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        '"run" is not a command of this axe, which provides "gc"; the other commands come '
        "with the Go axe, and none was found on PATH: https://github.com/jrswab/axe\n"
    )


def test_gc_stays_ours_even_with_the_go_axe_on_path(home: AxeHome, go_axe: Path) -> None:
    """`axe gc` is never handed off."""
    home.add_agent("helper", model="builtin/heuristic", last_n=2)
    home.write_memory("helper", entries(3))
    done = axe(home, "gc", "helper", "--dry-run", path=[BIN, go_axe])
    assert done.returncode == 0
    assert done.stdout.startswith("Agent: helper\nEntries: 3\n")


def test_axe_gc_under_its_own_name_does_what_axe_gc_does(home: AxeHome) -> None:
    """`axe-gc helper` is `axe gc helper`, and its hints name `axe-gc`."""
    home.add_agent("helper", model="builtin/heuristic", last_n=2)
    home.write_memory("helper", entries(3))
    ours = axe(home, "helper", "--dry-run", path=[BIN], program="axe-gc")
    theirs = axe(home, "gc", "helper", "--dry-run", path=[BIN])
    assert (ours.returncode, ours.stdout, ours.stderr) == (
        theirs.returncode,
        theirs.stdout,
        theirs.stderr,
    )
    wrong = axe(home, "--bogus", path=[BIN], program="axe-gc")
    assert (wrong.returncode, wrong.stderr) == (
        1,
        "No such option '--bogus' (see 'axe-gc --help')\n",
    )


def test_axe_gc_takes_h_and_says_its_own_name_with_its_version(home: AxeHome) -> None:
    """`axe-gc -h` is its help, as `axe -h` and `axe gc -h` are; `axe-gc --version` names
    `axe-gc`, and `axe gc --version` still names `axe`."""
    from axe import __version__

    helped = axe(home, "-h", path=[BIN], program="axe-gc")
    assert (helped.returncode, helped.stderr) == (0, "")
    assert helped.stdout.startswith("Usage: axe-gc [OPTIONS] [AGENT]\n")
    assert axe(home, "gc", "-h", path=[BIN]).stdout.startswith("Usage: axe gc [OPTIONS] [AGENT]")
    version = axe(home, "--version", path=[BIN], program="axe-gc")
    assert (version.returncode, version.stdout) == (0, f"axe-gc {__version__}\n")
    assert axe(home, "gc", "--version", path=[BIN]).stdout == f"axe {__version__}\n"


def test_bare_axe_shows_its_help_and_nothing_glued_to_it() -> None:
    """`axe` alone prints the help, exit 0, ending with its examples, not an error hint."""
    result = CliRunner().invoke(cli, [])
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout.startswith("Usage: axe [OPTIONS] [COMMAND] [ARGS]...")
    assert result.stdout.rstrip().endswith(
        "axe gc --help                 all gc options and exit codes"
    )


def test_axe_help_without_the_go_axe_is_this_axes_help(home: AxeHome) -> None:
    """`axe help` works even where no Go axe would answer it."""
    done = axe(home, "help", path=[BIN])
    assert done.returncode == 0
    assert done.stdout.startswith("Usage: axe [OPTIONS] [COMMAND] [ARGS]...")


def test_the_shell_completes_agent_names(home: AxeHome) -> None:
    """With click's completion enabled, `axe gc he<TAB>` offers the agents that match."""
    for name in ("helper", "herald", "reviewer"):
        home.add_agent(name)
    done = axe(
        home,
        path=[BIN],
        _AXE_COMPLETE="bash_complete",
        COMP_WORDS="axe gc he",
        COMP_CWORD="2",
    )
    assert done.returncode == 0
    assert done.stdout.split() == ["plain,helper", "plain,herald"]


def test_a_command_name_never_drives_the_terminal(home: AxeHome) -> None:
    """A command typed with control characters (a pasted escape sequence) is quoted with
    them escaped in the one line that says it is unknown."""
    done = axe(home, "x\x1b]0;owned\x07", path=[BIN])
    assert done.returncode == 1
    assert done.stderr.startswith('"x\\u001b]0;owned\\u0007" is not a command of this axe')


def test_an_axe_run_by_the_go_axe_can_hand_off_to_it_again(home: AxeHome, go_axe: Path) -> None:
    """The Go axe passes its environment on to what it runs; an `axe run` started from
    there (a script, a sub-agent's tool) that finds this axe first still reaches the Go
    axe, rather than being refused as a loop."""
    handed_by_another_process = "1 1"
    done = axe(
        home,
        "run",
        "helper",
        path=[BIN, go_axe],
        stdin="",
        AXE_GC_HANDED_OFF=handed_by_another_process,
    )
    assert (done.returncode, done.stdout) == (7, "go axe: run helper\n")


def test_a_wrapper_that_runs_this_axe_is_not_handed_to_in_a_loop(
    home: AxeHome, tmp_path: Path
) -> None:
    """A script on PATH that runs this very axe (`python -m axe`), which the check of
    installed scripts cannot recognise: the hand-off comes back once, is recognised by its
    process, and ends with the one line, not in an endless chain."""
    wrappers = tmp_path / "wrapper-bin"
    wrappers.mkdir()
    wrapper = wrappers / "axe"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m axe "$@"\n')
    wrapper.chmod(0o755)
    done = axe(home, "run", "helper", path=[BIN, wrappers], timeout=30)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.startswith('"run" is not a command of this axe')
