"""The command line: ``axe`` (``gc`` here, every other command handed to the Go axe) and
``axe-gc``, the same ``gc`` under a name that can never clash with the Go axe.

The console scripts import the commands inside their guard, so a Ctrl-C while Python loads
click is one line and exit 130, as during a run, never a traceback.
"""

from __future__ import annotations

import sys


def main() -> None:
    """The ``axe`` console script."""
    try:
        from axe.cli.commands import run_axe  # noqa: PLC0415  (inside the guard: see above)

        run_axe()
    except KeyboardInterrupt:
        _interrupted()


def gc_main() -> None:
    """The ``axe-gc`` console script: ``axe-gc pr-reviewer`` is ``axe gc pr-reviewer``."""
    try:
        from axe.cli.commands import run_axe_gc  # noqa: PLC0415  (inside the guard: see above)

        run_axe_gc()
    except KeyboardInterrupt:
        _interrupted()


def _interrupted() -> None:
    over_the_echo = "\r" if sys.stderr.isatty() else ""  # a terminal's "^C" on this row
    sys.stderr.write(f"{over_the_echo}interrupted\n")
    sys.exit(130)  # the shell's code for SIGINT
