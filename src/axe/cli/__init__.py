"""The command line: ``axe`` (``gc`` here, every other command handed to the Go axe) and
``axe-gc``, the same ``gc`` under a name that can never clash with the Go axe."""

from __future__ import annotations

import os
import sys

from axe.cli import collector

TYPE_CHECKING = False  # as typing's, without importing typing before the pause
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import NoReturn

    from axe.cli.commands import cli, gc

__all__ = ["cli", "gc", "gc_main", "main"]


def __getattr__(name: str) -> object:
    """``cli`` and ``gc``, the click commands, loaded on first use: the console scripts
    below pause the collector before click and the commands are imported (see
    :mod:`.collector`)."""
    if name in {"cli", "gc"}:
        from axe.cli import commands  # noqa: PLC0415

        return getattr(commands, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main() -> NoReturn:
    """The ``axe`` console script."""
    collector.pause()
    import click  # noqa: PLC0415  (this and the commands after the pause)

    from axe.cli import handoff  # noqa: PLC0415
    from axe.cli.commands import cli  # noqa: PLC0415

    foreign = handoff.foreign_command(sys.argv[1:], known=cli.commands)
    if foreign is not None and "_AXE_COMPLETE" not in os.environ:
        program = handoff.next_axe(os.environ)
        if program is not None:
            handoff.hand_off(program, sys.argv[1:], os.environ)
        if foreign != "help":  # `axe help` without the Go axe: this axe's own help
            click.echo(handoff.missing_command(foreign), err=True)
            sys.exit(1)
        sys.argv[1:] = ["--help"]
    _ended(lambda: cli.main(prog_name="axe"))


def gc_main() -> NoReturn:
    """The ``axe-gc`` console script: ``axe-gc pr-reviewer`` is ``axe gc pr-reviewer``."""
    collector.pause()
    from axe.cli.commands import gc  # noqa: PLC0415  (after the pause)

    _ended(lambda: gc.main(prog_name="axe-gc"))


def _ended(command: Callable[[], NoReturn]) -> NoReturn:
    """Run ``command`` (which ends by raising ``SystemExit``), then leave the process at once.

    By then every file gc wrote is closed and every lock given back; what is left is the
    interpreter freeing hundreds of modules that are about to vanish anyway, 10-30 ms of
    every run, which is skipped once the output is flushed. Left to the interpreter as
    before: an exit that is not a plain code, output that cannot be flushed (a closed
    pipe, which it reports), threads still running, a profiler or tracer that reports at
    exit.
    """
    import threading  # noqa: PLC0415  (after the pause)

    try:
        command()
    except SystemExit as done:
        if not isinstance(done.code, int) or sys.getprofile() or sys.gettrace():
            raise
        main = threading.main_thread()
        if any(not thread.daemon and thread is not main for thread in threading.enumerate()):
            raise
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except (OSError, ValueError):
            raise done from None
        os._exit(done.code)
