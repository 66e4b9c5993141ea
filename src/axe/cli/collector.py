"""CPython's cycle collector, paused while the ``axe`` process starts.

Start-up makes some 25,000 objects (modules, classes, functions, click's parameters) and
frees almost none: they live until the process ends. The collector, which runs after every
700 new ones, would look through them some 35 times before the first agent is read, finding
nothing: 6 ms of a 100 ms start-up (docs/benchmarks.md). So the console scripts pause it
before anything is imported, and gc's command resumes it as the run begins, after freezing
what start-up made: later collections never look through that again. The run itself is
collected as always. Only a pause made here is resumed, so a program that embeds the
commands keeps its own setting, and a command that never runs gc (``--help``, a hand-off
to the Go axe) ends the process paused.
"""

from __future__ import annotations

import gc

_paused = False


def pause() -> None:
    """Stop automatic collection, if it is on, until :func:`resume`."""
    global _paused  # noqa: PLW0603  (the process's one pause)
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
