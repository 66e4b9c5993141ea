"""Running a click command as a process: every failure one stderr line and an exit code,
the same under both entry points (``axe``, ``axe-gc``), a usage hint naming the command's
own help."""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import sys
import threading
from collections.abc import Iterator
from typing import Any, NoReturn, TextIO

import click

from axe.application.stops import StopSignal
from axe.domain.errors import AxeError, exit_code_for
from axe.domain.safe_text import escaped_line

EXIT_USAGE = 1
EXIT_INTERRUPTED = 130
_CLOSE_ENOUGH = 0.75
_CLOSED_STDOUT = "stdout was closed by its reader; gc stopped at the first line it could not write"
# Ctrl-C; SIGTERM; SIGHUP, a closed terminal or ssh session (not on Windows)
_STOPS = [getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, n)]


class Terminated(SystemExit):
    """SIGTERM or SIGHUP (exit 128 + the signal): a ``SystemExit``, so nothing that handles
    ordinary errors stops it on its way out; the composition root settles it as Ctrl-C."""


class OneLineErrors:
    """Makes a click command's ``main`` end the process itself, with its outcome's exit code
    or one stderr line per failure (no traceback unless ``AXE_DEBUG`` is set)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """Some of click's usage errors (an option without its value) come without their
        command, so their hint would name ``axe --help``, not ``axe gc --help``."""
        try:
            return super().parse_args(ctx, args)  # type: ignore[misc,no-any-return]
        except click.UsageError as error:
            error.ctx = error.ctx or ctx
            raise

    def invoke(self, ctx: click.Context) -> Any:
        """Ctrl-C becomes ``click.Abort``, past click's blank line for the echoed ``^C``,
        which ``interrupted`` overwrites instead. A reader that stopped reading (``| head``),
        or a terminal that hung up while SIGHUP was ignored (EIO), ends the run where the
        output could not be written: said on stderr (exit 1, nothing trimmed), except quietly
        (exit 0) in a run that changes nothing."""
        try:
            return super().invoke(ctx)  # type: ignore[misc]
        except KeyboardInterrupt:
            raise click.Abort from None
        except OSError as error:  # caught before click's own handling, which says nothing
            if not isinstance(error, BrokenPipeError) and error.errno != errno.EIO:
                raise
            _silence(sys.stdout)
            if ctx.params.get("dry_run") or ctx.params.get("estimate"):
                raise SystemExit(0) from None  # nothing was to change: the reader had enough
            _say(_CLOSED_STDOUT)
            raise SystemExit(1) from None

    def main(self, *args: Any, **kwargs: Any) -> NoReturn:
        """Run the command with a :class:`StopSignal` as its ``obj``, which Ctrl-C, SIGTERM
        and SIGHUP reach while it runs."""
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
            _end_interrupted(stop.args[0] if isinstance(stop, Terminated) else EXIT_INTERRUPTED)
        except click.ClickException as error:
            _fail(error.format_message(), error.exit_code)
        except Exception as error:
            if os.environ.get("AXE_DEBUG"):
                raise
            _fail(
                f"internal error: {type(error).__name__}: {error} (set AXE_DEBUG=1 for details)", 1
            )
        sys.exit(result if isinstance(result, int) else 0)


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


@contextlib.contextmanager
def _stops_reach(stop: StopSignal) -> Iterator[None]:
    """While the command runs, Ctrl-C, SIGTERM (a service manager, a cron job's time limit)
    and SIGHUP go to ``stop``, which raises them at once or after the trim and report under
    way. Only the main thread may set a handler; the previous ones are put back."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_signal(number: int, _frame: object) -> None:
        interrupted = number == signal.SIGINT
        stop.interrupt(KeyboardInterrupt() if interrupted else Terminated(128 + number))

    heeded = [n for n in _STOPS if signal.getsignal(n) is not signal.SIG_IGN]  # not nohup's
    previous = {number: signal.signal(number, on_signal) for number in heeded}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def _end_interrupted(code: int) -> NoReturn:
    """Ctrl-C, SIGTERM or SIGHUP, unwound through the composition root: one line, exit 130,
    143 or 129; worker threads still waiting for a provider are daemons, not waited for."""
    said = "interrupted" if code == EXIT_INTERRUPTED else "terminated"
    _say(("\r" if sys.stderr.isatty() else "") + said)  # over a terminal's "^C"
    sys.exit(code)


def _fail(message: str, code: int) -> NoReturn:
    _say(escaped_line(message))
    sys.exit(code)


def _say(line: str) -> None:
    """A line on stderr; if a closed terminal took stderr with it, none, and the exit code
    stands (the interpreter's last flush of a dead stream would make it 120)."""
    try:
        click.echo(line, err=True)
    except OSError:
        _silence(sys.stdout, sys.stderr)


def _silence(*streams: TextIO) -> None:
    """After a closed pipe or terminal, ``streams`` to devnull: the exit flush is quiet."""
    for stream in streams:
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())
