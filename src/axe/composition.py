"""The composition root: the one place that builds adapters and hands them to the use case,
when a command runs, from the environment and streams passed in (a test or an embedding
program builds the same graph against its own directories)."""

from __future__ import annotations

import functools
import os
import signal
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from axe import __version__
from axe.adapters.agents.repository import TomlAgentRepository, agents_directories
from axe.adapters.console import ConsoleOutput
from axe.adapters.console.status import terminal_columns
from axe.adapters.llm import LLMProviders
from axe.adapters.memory.lock import DEFAULT_LOCK_TIMEOUT
from axe.adapters.memory.store import FileMemoryStore
from axe.adapters.shared.clock import SystemClock
from axe.adapters.shared.places import config_dir, data_dir
from axe.application.gc import GcOptions, GcPorts, collect_all_garbage, collect_garbage
from axe.application.ports import Clock, Output
from axe.application.stops import StopSignal
from axe.domain.errors import ConfigError
from axe.domain.limits import MAX_WAIT_SECONDS, MIN_INPUT_TOKENS
from axe.domain.model import ModelRef
from axe.domain.results import AgentResult, SweepResult


@contextmanager
def production_ports(
    environ: Mapping[str, str],
    output: Output,
    *,
    http_timeout: float | None = None,
    max_input_tokens: int | None = None,
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
    agents_dir: Path | None = None,
    check_config: bool = False,
    model: ModelRef | None = None,
    clock: Clock | None = None,
    sending: bool = True,
    stop: StopSignal | None = None,
) -> Iterator[GcPorts]:
    """The real adapters, configured from ``environ`` and ``axe gc``'s options (None: the
    adapter's default), closed on exit. ``check_config`` reads ``config.toml`` now, so
    ``--all`` says a broken one once, not once per agent; ``model`` is checked now, before
    any agent runs; not ``sending`` (``--estimate``), no key is needed.

    Raises:
        ConfigError: ``agents_dir`` is not a directory, or ``check_config`` and
            ``config.toml`` does not load.
        AgentError: no provider serves ``model``.
    """
    clock = clock or SystemClock()
    llm = LLMProviders(
        environ,
        config_dir=config_dir(environ),
        clock=clock,
        http_timeout=http_timeout,
        max_input_tokens=max_input_tokens,
        user_agent=f"axe/{__version__}",
        sending=sending,
    )
    agents = TomlAgentRepository(agents_directories(environ, agents_dir), report=output.emit)
    if check_config:
        llm.read_config()
    if model is not None:
        llm.check(model)
    memory = FileMemoryStore(
        functools.partial(data_dir, environ),
        clock=clock,
        lock_timeout=lock_timeout,
        environ=environ,
    )
    try:
        yield GcPorts(
            agents=agents, memory=memory, llm=llm, output=output, stop=stop or StopSignal()
        )
    except (KeyboardInterrupt, SystemExit):  # Ctrl-C, SIGTERM: may end without joining threads
        memory.settle_interrupted()
        raise
    finally:
        memory.close()
        llm.close()


def agent_names(agents_dir: Path | None = None) -> list[str]:
    """The agents of every agents directory, for shell completion; what cannot be read, or
    is not safe to use, offers none, silently."""
    try:
        return TomlAgentRepository(agents_directories(os.environ, agents_dir)).list_names()
    except ConfigError:
        return []


def console_output(
    stdout: BinaryIO,
    stderr: BinaryIO,
    environ: Mapping[str, str],
    *,
    json_lines: bool = False,
    clock: Clock | None = None,
) -> ConsoleOutput:
    """Console output; a live status line only where a person is watching stderr."""
    interactive = stderr.isatty() and environ.get("TERM", "") != "dumb"
    return ConsoleOutput(
        stdout,
        stderr,
        json_lines=json_lines,
        interactive=interactive,
        color=interactive and not environ.get("NO_COLOR"),
        clock=clock or SystemClock(),
        columns=functools.partial(terminal_columns, stderr, environ),
    )


def seconds_from(environ: Mapping[str, str], variable: str) -> float | None:
    """A time limit in seconds from ``variable`` when it is set; ConfigError unless it is a
    positive number of seconds, at most a day."""
    text = environ.get(variable, "")
    if not text:
        return None
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not 0 < seconds <= MAX_WAIT_SECONDS:
        raise ConfigError(
            f"{variable} must be a positive number of seconds, at most {MAX_WAIT_SECONDS}, "
            f"not {text!r}"
        )
    return seconds


def max_input_tokens_from(environ: Mapping[str, str]) -> int | None:
    """``AXE_MAX_INPUT_TOKENS`` when set: the same cap as ``--max-input-tokens``;
    ConfigError unless it is a whole number of at least 1024."""
    text = environ.get("AXE_MAX_INPUT_TOKENS", "").strip()
    if not text:
        return None
    if not text.isdecimal() or int(text) < MIN_INPUT_TOKENS:
        raise ConfigError(
            f"AXE_MAX_INPUT_TOKENS must be a whole number of tokens, at least "
            f"{MIN_INPUT_TOKENS}, not {text!r}"
        )
    return int(text)


def run_gc(
    agent: str | None,
    options: GcOptions,
    *,
    stop: StopSignal | None = None,
    stdout: BinaryIO,
    stderr: BinaryIO,
    environ: Mapping[str, str] | None = None,
    json_lines: bool = False,
    max_input_tokens: int | None = None,
    lock_timeout: float | None = None,
    agents_dir: Path | None = None,
) -> AgentResult | SweepResult:
    """``axe gc`` for one agent, or every agent when ``agent`` is None; an option given
    wins over its variable in ``environ``; ``stop`` is where signal handlers ask to stop.

    Raises:
        ConfigError: an agents directory cannot be listed, ``agents_dir`` is not one, or a
            setting in the environment is invalid.
    """
    environ = os.environ if environ is None else environ
    _ignore_sigio()
    timeout = seconds_from(environ, "AXE_HTTP_TIMEOUT")
    cap = max_input_tokens or max_input_tokens_from(environ)
    waits = lock_timeout or seconds_from(environ, "AXE_LOCK_TIMEOUT") or DEFAULT_LOCK_TIMEOUT
    clock = SystemClock()
    output = console_output(stdout, stderr, environ, json_lines=json_lines, clock=clock)
    try:
        with production_ports(
            environ,
            output,
            http_timeout=timeout,
            max_input_tokens=cap,
            lock_timeout=waits,
            agents_dir=agents_dir,
            check_config=agent is None,
            model=options.model_override,
            clock=clock,
            sending=not options.estimate,
            stop=stop,
        ) as ports:
            if agent is None:
                return collect_all_garbage(options, ports)
            return collect_garbage(agent, options, ports)
    finally:
        output.close()


def _ignore_sigio() -> None:
    """Let any thread take the read lease that carries late appends over (``ReadLeases``):
    gc uses no signal-driven I/O; only the main thread may set it."""
    sigio = getattr(signal, "SIGIO", None)
    if sigio is not None and threading.current_thread() is threading.main_thread():
        signal.signal(sigio, signal.SIG_IGN)
