"""CPython's cycle collector, paused while the ``axe`` process starts.

Start-up makes tens of thousands of objects (modules, classes, functions, click's
parameters) and frees almost none: they live until the process ends. The collector, which
runs after every 700 new ones, would collect dozens of times before the first agent is
read and find nothing (the figures: docs/benchmarks.md, round eight). So the console
scripts pause it before anything else is imported, and gc's command resumes it as the run
begins, after freezing what start-up made, which later collections then never look
through again. The run itself is collected as always. Only a pause made here is resumed:
a program that runs the click commands keeps its own setting. A command that never runs
gc (``--help``, a hand-off to the Go axe) ends the process still paused.
"""

from __future__ import annotations

import gc

_paused = False


def pause() -> None:
    """Stop automatic collection, if it is on, until :func:`resume`."""
    global _paused  # noqa: PLW0603  (the collector's state is the process's too)
    if gc.isenabled():
        gc.disable()
        _paused = True


def resume() -> None:
    """Freeze what exists now, then collect automatically again; nothing unless
    :func:`pause` stopped it."""
    global _paused  # noqa: PLW0603
    if _paused:
        gc.freeze()
        gc.enable()
        _paused = False
