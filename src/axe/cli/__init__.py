"""The command line: ``axe`` (``gc`` here, every other command handed to the Go axe) and
``axe-gc``, the same ``gc`` under a name that can never clash with the Go axe.

The console scripts import the commands inside their own guard: a Ctrl-C while Python
loads click and the commands is then one line and exit 130, like a Ctrl-C during a run,
never a traceback; this module itself imports nothing that is not loaded already (not even
``typing``), so that guard is reached as early as a console script allows.
"""

from __future__ import annotations

import sys

EXIT_INTERRUPTED = 130


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
    """One line over the terminal's echoed ``^C``, and the shell's code for SIGINT."""
    over_the_echo = "\r" if sys.stderr.isatty() else ""
    sys.stderr.write(f"{over_the_echo}interrupted\n")
    sys.exit(EXIT_INTERRUPTED)
