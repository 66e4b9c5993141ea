"""Running a click command as a process: every failure one stderr line and an exit code.

Shared by both entry points (``axe`` and ``axe-gc``), so an error reads the same whichever
name the command was run by, and its usage hint names that command's own help.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from typing import Any, NoReturn

import click

from axe.application.stops import StopSignal
from axe.domain.errors import AxeError, exit_code_for
from axe.domain.safe_text import terminal_safe

EXIT_USAGE = 1
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143  # 128 + SIGTERM, as a shell reports a process ended by it
_CLOSE_ENOUGH = 0.75


class OneLineErrors:
    """Makes a click command's ``main`` end the process itself, with its outcome's exit code
    or one stderr line per failure (no traceback unless ``AXE_DEBUG`` is set)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """click's parser raises some usage errors (an option without its value) without
        the command they belong to, so their hint would name ``axe --help`` instead of ``axe
        gc --help``; they are given it here."""
        try:
            return super().parse_args(ctx, args)  # type: ignore[misc,no-any-return]
        except click.UsageError as error:
            error.ctx = error.ctx or ctx
            raise

    def invoke(self, ctx: click.Context) -> Any:
        """Ctrl-C inside a command reaches :func:`_end_interrupted` as ``click.Abort``, past
        click's blank line for the echoed ``^C``: ``interrupted`` overwrites the echo
        instead, so no row is left behind. A reader that stopped reading (``| head``) ends
        the run where the output could not be written: before a trim that is said on
        stderr (exit 1, nothing trimmed); in a run that changes nothing (``--dry-run``,
        ``--estimate``) it is what the reader asked for, and gc ends quietly (exit 0)."""
        try:
            return super().invoke(ctx)  # type: ignore[misc]
        except KeyboardInterrupt:
            raise click.Abort from None
        except BrokenPipeError:  # caught before click's own handling, which says nothing
            _silence_stdout()
            if ctx.params.get("dry_run") or ctx.params.get("estimate"):
                raise SystemExit(0) from None  # nothing was to change: the reader had enough
            with contextlib.suppress(OSError):  # stderr may be gone too
                click.echo(_CLOSED_STDOUT, err=True)
            raise SystemExit(1) from None

    def main(self, *args: Any, **kwargs: Any) -> NoReturn:
        """Run the command with a fresh :class:`StopSignal` as its ``obj``, which Ctrl-C and
        SIGTERM reach while it runs."""
        kwargs["standalone_mode"] = False
        stop = StopSignal()
        kwargs.setdefault("obj", stop)
        try:
            with _stops_reach(stop):
                result = super().main(*args, **kwargs)  # type: ignore[misc]
        except click.UsageError as error:
            where = error.ctx.command_path if error.ctx else kwargs.get("prog_name", "axe")
            if isinstance(error, click.NoSuchOption):
                error = _with_close_suggestions_only(error)
            _fail(f"{error.format_message().rstrip('.')} (see '{where} --help')", EXIT_USAGE)
        except AxeError as error:
            _fail(str(error), exit_code_for(error))
        except (KeyboardInterrupt, click.Abort, Terminated) as stop:
            _end_interrupted(terminated=isinstance(stop, Terminated))
        except click.ClickException as error:
            _fail(error.format_message(), error.exit_code)
        except Exception as error:
            if os.environ.get("AXE_DEBUG"):
                raise
            _fail(
                f"internal error: {type(error).__name__}: {error} (set AXE_DEBUG=1 for details)", 1
            )
        sys.exit(result if isinstance(result, int) else 0)


_CLOSED_STDOUT = "stdout was closed by its reader; gc stopped at the first line it could not write"


class AxeGroup(OneLineErrors, click.Group):
    """``axe``."""


class AxeCommand(OneLineErrors, click.Command):
    """``axe gc``, and ``axe-gc``."""


def _with_close_suggestions_only(error: click.NoSuchOption) -> click.NoSuchOption:
    """click suggests any option within a 0.6 similarity ratio, which pairs '--bogus' with
    '--jobs'; only near-misses such as '--dryrun' for '--dry-run' help the reader."""
    import difflib  # noqa: PLC0415  (only for a mistyped option)

    close = [
        option
        for option in error.possibilities or []
        if difflib.SequenceMatcher(None, error.option_name, option).ratio() >= _CLOSE_ENOUGH
    ]
    return click.NoSuchOption(error.option_name, possibilities=close, ctx=error.ctx)


class Terminated(SystemExit):
    """SIGTERM during a run: a ``SystemExit``, so nothing that handles ordinary errors stops
    it on its way out, and the composition root settles it as it does Ctrl-C."""


@contextlib.contextmanager
def _stops_reach(stop: StopSignal) -> Iterator[None]:
    """While the command runs, Ctrl-C and SIGTERM (a service manager stopping, a cron job's
    time limit) are handed to ``stop``: raised at once, or, while a trim and its report are
    under way, as soon as they are done (``StopSignal.interrupt``), so a trim that happens
    is always reported. Only the main thread may set a handler; an embedder calling
    ``main`` from another thread keeps its own, and the previous handlers are put back."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_signal(number: int, _frame: object) -> None:
        terminated = number == signal.SIGTERM
        stop.interrupt(Terminated(EXIT_TERMINATED) if terminated else KeyboardInterrupt())

    previous = {number: signal.signal(number, on_signal) for number in _STOPS}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


_STOPS = (signal.SIGINT, signal.SIGTERM)


def _end_interrupted(*, terminated: bool) -> NoReturn:
    """Ctrl-C or SIGTERM: one line and exit 130 or 143. By now the stop has unwound through
    the composition root: what had begun to change was finished and reported, no more was
    started, and the lock sidecars still held were removed. Worker threads still waiting
    for a provider are daemons: the process does not wait for them."""
    code = EXIT_TERMINATED if terminated else EXIT_INTERRUPTED
    over_the_echo = "\r" if sys.stderr.isatty() else ""  # a terminal's "^C" on this row
    click.echo(over_the_echo + ("terminated" if terminated else "interrupted"), err=True)
    sys.exit(code)


def _fail(message: str, code: int) -> NoReturn:
    click.echo(terminal_safe(message), err=True)
    sys.exit(code)


def _silence_stdout() -> None:
    """After a closed pipe, point stdout at devnull so the interpreter's exit flush is quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
