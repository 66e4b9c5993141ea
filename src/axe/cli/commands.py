"""The click commands ``axe`` and ``axe gc``: arguments in, exit code out. ``gc`` imports the
use case and the composition root only when it runs, so ``--help``, ``--version``,
completion and the commands handed to the Go axe start as fast as click does.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, NoReturn

import click

from axe import __version__
from axe.cli import handoff
from axe.cli.running import OneLineErrors
from axe.domain.errors import AgentError
from axe.domain.limits import MAX_WAIT_SECONDS, MIN_INPUT_TOKENS

GC_EPILOG = """\b
Examples:
  axe gc pr-reviewer                          analyse, print the report, trim
  axe gc pr-reviewer --dry-run                analyse and print only
  axe gc --all                                every agent with memory enabled
  axe gc --all --dry-run --model builtin/heuristic
                                              offline report, no API key, no trim
  axe gc pr-reviewer --model openai/gpt-4o    use another model for the analysis
  axe gc pr-reviewer --archive                keep removed entries in <memory>.archive
  axe gc --all --max-tokens 200000            at most 200k tokens for each agent
  axe gc --all --estimate                     what gc would send, sending nothing
  axe gc --all --skip-unchanged               skip agents unchanged since gc analysed them

\b
Where gc looks:
  agents        --agents-dir, then ./axe/agents, then <config dir>/agents (<name>.toml)
  memory        the agent's memory.path, else <data dir>/memory/<agent>.md
  record        .<memory file>.axe-gc.analysed beside it (--skip-unchanged)
  keys, URLs    <config dir>/config.toml; <PROVIDER>_API_KEY (GEMINI_API_KEY for
                google; AWS_* credentials for bedrock) and AXE_<PROVIDER>_BASE_URL
                win over it
  <config dir>  $XDG_CONFIG_HOME/axe, else ~/.config/axe
                (macOS ~/Library/Application Support/axe, Windows %APPDATA%\\axe)
  <data dir>    $XDG_DATA_HOME/axe, else ~/.local/share/axe
  limits        AXE_HTTP_TIMEOUT, AXE_LOCK_TIMEOUT, AXE_MAX_INPUT_TOKENS

\b
Exit codes: 0 success or nothing to do, 1 agent error, 2 config error, 3 API error,
4 budget too small for the newest entry.
"""


AXE_EXAMPLES = """\b
Examples:
  axe gc pr-reviewer            analyse and trim one agent's memory
  axe gc --all --dry-run        report on every agent, change nothing
  axe gc --help                 all gc options and exit codes
"""


class _WholeNumber(click.IntRange):
    """Its error says "not a valid whole number", not click's "not a valid integer range"."""

    name = "whole number"


class _TokenCount(_WholeNumber):
    """A budget, at most a 64-bit integer, as ``[budget] max_tokens`` (the Go axe's int64)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if number >= 2**63:
            self.fail(f"{value} is larger than a 64-bit integer ({2**63 - 1:,})", param, ctx)
        return number


class _AnyWholeNumber(click.types.IntParamType):
    """Without bounds (an unbounded IntRange shows "[x<=None]" in the help)."""

    name = "whole number"


class _Seconds(click.FloatRange):
    name = "number of seconds"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if number != number:  # noqa: PLR0124  (nan, which every range check lets through)
            self.fail("nan is not a number of seconds", param, ctx)
        return number


class _Gc(OneLineErrors, click.Command):
    """``axe gc`` and ``axe-gc``: the examples show the name the command was run by."""

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        formatter.write_paragraph()
        with formatter.indentation():
            formatter.write_text(GC_EPILOG.replace("axe gc ", f"{ctx.command_path} "))


class _Axe(OneLineErrors, click.Group):
    """``axe``: its help says where the commands it does not have go."""

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        super().format_commands(ctx, formatter)
        formatter.write_paragraph()
        with formatter.indentation():
            formatter.write_text(f"{handoff.OTHER_COMMANDS}:")
            with formatter.indentation():  # a path is never wrapped
                formatter.write_text(f"\b\n{handoff.handed_to(os.environ)}")


def _axe_version(ctx: click.Context, _: click.Parameter, value: bool) -> None:
    """``axe --version``: this axe's version, then which program gets the other commands."""
    if not value or ctx.resilient_parsing:
        return
    click.echo(f"axe {__version__}")
    click.echo(f"{handoff.OTHER_COMMANDS}: {handoff.handed_to(os.environ)}")
    ctx.exit()


@click.group(
    name="axe",
    cls=_Axe,
    epilog=AXE_EXAMPLES,
    invoke_without_command=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.option(
    "--version",
    "-V",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_axe_version,
    help="Show the version, and where other commands go, and exit.",
)
@click.pass_context
def cli(ctx: click.Context) -> None:
    """axe runs LLM agents defined in TOML files; each keeps a markdown memory log.

    This build provides `axe gc`, which analyses an agent's memory log with its LLM and
    trims the log to the configured number of entries.
    """
    if ctx.invoked_subcommand is None:  # bare `axe`: the help, as the Go axe shows it
        click.echo(ctx.get_help())


def _agent_names(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[str]:
    """Shell completion of AGENT, from --agents-dir too when it was typed before."""
    from axe.composition import agent_names  # noqa: PLC0415  (see the module docstring)

    names = agent_names(agents_dir=ctx.params.get("agents_dir"))
    return [name for name in names if name.startswith(incomplete)]


@cli.command(
    cls=_Gc,
    short_help="Analyze and trim agent memory",
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.argument("agent", required=False, shell_complete=_agent_names)
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
    "--skip-unchanged",
    is_flag=True,
    help="Skip an agent whose memory file holds exactly what gc left there when it last "
    "analysed it with the same model: no request, no trim (docs/cost.md).",
)
@click.option(
    "--json",
    "json_lines",
    is_flag=True,
    help="Print one JSON object per agent on stdout instead of text (schema in docs/json.md).",
)
@click.option(
    "--jobs",
    "-j",
    type=_AnyWholeNumber(),
    default=1,
    metavar="N",
    help="With --all: gc up to N agents at once (default 1); output stays in name order.",
)
@click.option(
    "--max-input-tokens",
    type=_WholeNumber(min=MIN_INPUT_TOKENS),
    default=None,
    metavar="N",
    help="Send at most N input tokens per request (also AXE_MAX_INPUT_TOKENS); a larger "
    "log is analysed in parts whose reports are merged.",
)
@click.option(
    "--max-tokens",
    type=_TokenCount(min=0),
    default=0,
    metavar="N",
    help="Maximum total tokens (input+output) for each agent's analysis (0 = the agent "
    "file's [budget] max_tokens, else unlimited); only the newest entries that fit are "
    "analysed.",
)
@click.option(
    "--estimate",
    is_flag=True,
    help="Print the requests and tokens the analysis would take, and what the budget "
    "allows; send, lock and trim nothing.",
)
@click.option(
    "--lock-timeout",
    type=_Seconds(min=0, min_open=True, max=MAX_WAIT_SECONDS),
    default=None,
    metavar="SECONDS",
    help="How long to wait for another gc of the same memory file (also AXE_LOCK_TIMEOUT; "
    "default 300).",
)
@click.option(
    "--agents-dir",
    type=Path,  # checked where it is used (adapters/agents/repository.py)
    metavar="DIR",
    help="Look for agents in DIR first, then in ./axe/agents, then in the config "
    "directory's agents.",
)
@click.version_option(__version__, "--version", "-V", message="%(prog)s %(version)s")
@click.pass_context
def gc(
    ctx: click.Context,
    *,
    agent: str | None,
    dry_run: bool,
    all_agents: bool,
    model: str,
    archive: bool,
    skip_unchanged: bool,
    json_lines: bool,
    jobs: int,
    max_input_tokens: int | None,
    max_tokens: int,
    estimate: bool,
    lock_timeout: float | None,
    agents_dir: Path | None,
) -> int:
    """Analyze and trim agent memory.

    Sends AGENT's memory log to its model for a report (Patterns Found, Repeated Work,
    Recommendations), prints it, then keeps only the newest memory.last_n entries (or
    memory.max_entries when last_n is 0). A log that fits the model goes in one request; a
    larger one is analysed in parts whose reports are merged. The file is replaced
    atomically.
    """
    from axe.application.gc import BelowOneError, GcOptions  # noqa: PLC0415  (see above)
    from axe.application.stops import StopSignal  # noqa: PLC0415
    from axe.composition import run_gc  # noqa: PLC0415

    if all_agents and agent:
        raise AgentError("cannot specify both --all and an agent name")
    if not all_agents and not agent:
        raise AgentError("agent name is required (or use --all)")
    if jobs > 1 and not all_agents:
        raise AgentError("--jobs runs several agents at once, so it needs --all")
    try:
        options = GcOptions(
            dry_run=dry_run,
            model_override=model or None,
            archive=archive,
            jobs=jobs,
            max_tokens=max_tokens,
            estimate=estimate,
            skip_unchanged=skip_unchanged,
        )
    except BelowOneError as error:  # the options' fact, in the command line's words
        raise AgentError(f"--{error.option} must be at least 1, not {error.value}") from None
    outcome = run_gc(
        None if all_agents else agent,
        options,
        stop=ctx.find_object(StopSignal),
        stdout=sys.stdout.buffer,
        stderr=sys.stderr.buffer,
        json_lines=json_lines,
        max_input_tokens=max_input_tokens,
        lock_timeout=lock_timeout,
        agents_dir=agents_dir,
    )
    return outcome.exit_code


def run_axe() -> NoReturn:
    """``axe``: gc here, any other command handed to the next ``axe`` on PATH."""
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


def run_axe_gc() -> NoReturn:
    """``axe-gc``: the same ``gc`` under a name that never clashes with the Go axe."""
    gc.main(prog_name="axe-gc")
