"""The command line: ``axe`` (``gc`` here, every other command handed to the Go axe) and
``axe-gc``, the same ``gc`` under a name that can never clash with the Go axe."""

from __future__ import annotations

import os
import sys
from typing import NoReturn

import click

from axe.cli import handoff
from axe.cli.commands import cli, gc

__all__ = ["cli", "gc", "gc_main", "main"]


def main() -> NoReturn:
    """The ``axe`` console script."""
    foreign = handoff.foreign_command(sys.argv[1:], known=cli.commands)
    if foreign is not None and "_AXE_COMPLETE" not in os.environ:
        program = handoff.next_axe(os.environ)
        if program is not None:
            handoff.hand_off(program, sys.argv[1:], os.environ)
        if foreign != "help":  # `axe help` without the Go axe: this axe's own help
            click.echo(handoff.missing_command(foreign), err=True)
            sys.exit(1)
        sys.argv[1:] = ["--help"]
    cli.main(prog_name="axe")


def gc_main() -> NoReturn:
    """The ``axe-gc`` console script: ``axe-gc pr-reviewer`` is ``axe gc pr-reviewer``."""
    gc.main(prog_name="axe-gc")
