"""The ``axe`` command line: arguments in, exit code out.

Thin on purpose: it validates the argument combination, hands the work to the composition
root, and turns each kind of error into its documented exit code (gc-spec §3.6) with a
single line on stderr. No traceback reaches the user unless ``AXE_DEBUG`` is set.
"""

from __future__ import annotations

import difflib
import os
import sys
from typing import Any, NoReturn

import click

from axe import __version__
from axe.domain.errors import AgentError, AxeError, exit_code_for

MIN_INPUT_TOKENS = 1024  # the same floor as AXE_MAX_INPUT_TOKENS (composition.MIN_INPUT_TOKENS)

EXIT_USAGE = 1
EXIT_INTERRUPTED = 130

GC_EXAMPLES = """\b
Examples:
  axe gc pr-reviewer                          analyse, print the report, trim
  axe gc pr-reviewer --dry-run                analyse and print only
  axe gc --all                                every agent with memory enabled
  axe gc --all --dry-run --model builtin/heuristic
                                              offline report, no API key, no trim
  axe gc pr-reviewer --model openai/gpt-4o    use another model for the analysis
  axe gc pr-reviewer --archive                keep removed entries in <memory>.archive

\b
Exit codes: 0 success or nothing to do, 1 agent error, 2 config error, 3 API error.
"""


class _AxeGroup(click.Group):
    """A group whose ``main`` maps every failure to one stderr line and an exit code."""

    def main(self, *args: Any, **kwargs: Any) -> NoReturn:
        kwargs["standalone_mode"] = False
        try:
            result = super().main(*args, **kwargs)
        except click.UsageError as error:
            command = error.ctx.command_path if error.ctx else "axe"
            if isinstance(error, click.NoSuchOption):
                error = _with_close_suggestions_only(error)
            message = error.format_message().rstrip(".")
            _fail(f"{message} (see '{command} --help')", EXIT_USAGE)
        except AxeError as error:
            _fail(str(error), exit_code_for(error))
        except (KeyboardInterrupt, click.Abort):
            _fail("interrupted", EXIT_INTERRUPTED)
        except BrokenPipeError:
            _silence_stdout()
            sys.exit(1)
        except click.ClickException as error:
            _fail(error.format_message(), error.exit_code)
        except Exception as error:
            if os.environ.get("AXE_DEBUG"):
                raise
            _fail(
                f"internal error: {type(error).__name__}: {error} (set AXE_DEBUG=1 for details)", 1
            )
        sys.exit(result if isinstance(result, int) else 0)


_CLOSE_ENOUGH = 0.75


def _with_close_suggestions_only(error: click.NoSuchOption) -> click.NoSuchOption:
    """click suggests any option within a 0.6 similarity ratio, which pairs '--bogus' with
    '--jobs'; only near-misses such as '--dryrun' for '--dry-run' help the reader."""
    close = [
        option
        for option in error.possibilities or []
        if difflib.SequenceMatcher(None, error.option_name, option).ratio() >= _CLOSE_ENOUGH
    ]
    return click.NoSuchOption(error.option_name, possibilities=close, ctx=error.ctx)


def _fail(message: str, code: int) -> NoReturn:
    click.echo(message, err=True)
    sys.exit(code)


def _silence_stdout() -> None:
    """After a closed pipe, point stdout at devnull so the interpreter's exit flush is quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


AXE_EXAMPLES = """\b
Examples:
  axe gc pr-reviewer            analyse and trim one agent's memory
  axe gc --all --dry-run        report on every agent, change nothing
  axe gc --help                 all gc options and exit codes
"""


@click.group(
    name="axe",
    cls=_AxeGroup,
    epilog=AXE_EXAMPLES,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.version_option(__version__, "--version", "-V", prog_name="axe", message="axe %(version)s")
def cli() -> None:
    """axe runs LLM agents defined in TOML files; each keeps a markdown memory log.

    This build provides `axe gc`, which analyses an agent's memory log with its LLM and
    trims the log to the configured number of entries.
    """


@cli.command(epilog=GC_EXAMPLES, short_help="Analyze and trim agent memory")
@click.argument("agent", required=False)
@click.option(
    "--dry-run",
    is_flag=True,
    help="Analyze and print suggestions without trimming the memory file.",
)
@click.option(
    "--all",
    "all_agents",
    is_flag=True,
    help="Run GC on all agents that have memory.enabled = true.",
)
@click.option(
    "--model",
    default="",
    metavar="PROVIDER/MODEL",
    help="Override the model used for pattern detection (provider/model-name format); "
    "builtin/heuristic analyses offline.",
)
@click.option(
    "--archive",
    is_flag=True,
    help="Append removed entries to '<memory file>.archive' before trimming.",
)
@click.option(
    "--json",
    "json_lines",
    is_flag=True,
    help="Print one JSON object per agent on stdout instead of text (schema in the README).",
)
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(min=1),
    default=1,
    metavar="N",
    help="With --all: gc up to N agents at once (default 1); output stays in name order.",
)
@click.option(
    "--max-input-tokens",
    type=click.IntRange(min=MIN_INPUT_TOKENS),
    default=None,
    metavar="N",
    help="Send at most N input tokens per request (also AXE_MAX_INPUT_TOKENS); a larger "
    "log is analysed in parts whose reports are merged.",
)
@click.option(
    "--lock-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    metavar="SECONDS",
    help="How long to wait for another gc of the same memory file (also AXE_LOCK_TIMEOUT; "
    "default 300).",
)
def gc(
    *,
    agent: str | None,
    dry_run: bool,
    all_agents: bool,
    model: str,
    archive: bool,
    json_lines: bool,
    jobs: int,
    max_input_tokens: int | None,
    lock_timeout: float | None,
) -> int:
    """Analyze and trim agent memory.

    Sends AGENT's whole memory log to its model in one request for a report (Patterns Found,
    Repeated Work, Recommendations), prints it, then keeps only the newest memory.last_n
    entries (or memory.max_entries when last_n is 0). The file is replaced atomically.
    """
    from axe.application.gc import GcOptions  # noqa: PLC0415
    from axe.composition import run_gc  # noqa: PLC0415

    if all_agents and agent:
        raise AgentError("cannot specify both --all and an agent name")
    if not all_agents and not agent:
        raise AgentError("agent name is required (or use --all)")
    if jobs > 1 and not all_agents:
        raise AgentError("--jobs runs several agents at once, so it needs --all")
    options = GcOptions(dry_run=dry_run, model_override=model or None, archive=archive, jobs=jobs)
    outcome = run_gc(
        None if all_agents else agent,
        options,
        stdout=sys.stdout.buffer,
        stderr=sys.stderr.buffer,
        json_lines=json_lines,
        max_input_tokens=max_input_tokens,
        lock_timeout=lock_timeout,
    )
    return outcome.exit_code


def main() -> NoReturn:
    """Console-script entry point."""
    cli.main(prog_name="axe")
