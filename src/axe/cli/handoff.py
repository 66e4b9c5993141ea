"""Living beside the Go axe, which a second ``axe`` on PATH would shadow: this one keeps
``gc`` and becomes the next ``axe`` on PATH that is not this project for every other command
(arguments, stdin, signals and exit code are then the Go axe's own).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Collection, Mapping, Sequence
from typing import NoReturn

GO_AXE = "https://github.com/jrswab/axe"
_HANDED_OFF = "AXE_GC_HANDED_OFF"  # "<pid> <hops>": which process handed off, how often
_MOST_HOPS = 8  # hand-offs in one chain before it is taken for a loop
_OUR_SCRIPT_MARK = b"axe.cli"  # in the console script pip writes for this project


def foreign_command(arguments: Sequence[str], known: Collection[str]) -> str | None:
    """The command named in ``arguments`` if this axe does not have it; None otherwise (no
    command, an option such as ``--help``, or one of ``known``)."""
    command = next((argument for argument in arguments if not argument.startswith("-")), None)
    return command if command is not None and command not in known else None


def next_axe(environ: Mapping[str, str]) -> str | None:
    """The first ``axe`` on PATH that is neither this program (``sys.argv[0]``, as PATH
    finds it) nor another install of this project."""
    import shutil  # noqa: PLC0415  (only for help, version and hand-offs: start-up matters)

    if _looping(environ.get(_HANDED_OFF, "")):
        return None
    this = shutil.which(sys.argv[0]) or sys.argv[0]
    here = os.path.realpath(this) if this else None
    for directory in environ.get("PATH", "").split(os.pathsep):
        candidate = shutil.which("axe", path=directory) if directory else None
        if candidate is None or os.path.realpath(candidate) == here:
            continue
        if not _is_this_project(candidate):
            return candidate
    return None


def _looping(handed: str) -> bool:
    """Whether this call came back from our own hand-off: exec keeps the process id, so a
    process finding its own id was handed to itself (by a copy of this project the script
    check missed); where a program runs as a child instead (Windows), a chain ends after a
    few hops. An ``axe`` the Go axe starts is another process, so it still reaches it."""
    pid, _, hops = handed.partition(" ")
    return pid == str(os.getpid()) or (hops.isdecimal() and int(hops) >= _MOST_HOPS)


def _is_this_project(program: str) -> bool:
    try:
        with open(program, "rb") as file:
            return _OUR_SCRIPT_MARK in file.read(4096)
    except OSError:
        return False


def hand_off(program: str, arguments: Sequence[str], environ: Mapping[str, str]) -> NoReturn:
    """Become ``program`` with ``arguments`` (on Windows, run it and exit with its code);
    the variable it inherits says who handed off, for :func:`_looping`."""
    _, _, hops = environ.get(_HANDED_OFF, "").partition(" ")
    count = int(hops) + 1 if hops.isdecimal() else 1
    env = {**environ, _HANDED_OFF: f"{os.getpid()} {count}"}
    sys.stdout.flush()
    if sys.platform == "win32":
        import subprocess  # noqa: PLC0415

        # The program is the `axe` the user's own PATH names: what typing `axe` would run.
        run = subprocess.run([program, *arguments], env=env, check=False)  # noqa: S603
        sys.exit(run.returncode)
    os.execve(program, [program, *arguments], env)  # noqa: S606  (as above)


OTHER_COMMANDS = (
    "Other commands (run, ...) are handed to the next `axe` on PATH that is not this one"
)


def handed_to(environ: Mapping[str, str]) -> str:
    """Where ``axe --help`` and ``axe --version`` say the other commands go: the program
    they would be handed to now, or that there is none and where to get one."""
    return next_axe(environ) or f"none is there now (the Go axe: {GO_AXE})"


def missing_command(command: str) -> str:
    """The line for a command neither this axe nor any other on PATH provides."""
    from axe.domain.model import quoted  # noqa: PLC0415  (help needs no domain value)

    return (
        f'{quoted(command)} is not a command of this axe, which provides "gc"; the other '
        f"commands come with the Go axe, and none was found on PATH: {GO_AXE}"
    )
