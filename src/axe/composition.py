"""The composition root: the one place that builds adapters and hands them to the use case.

Called when a command runs, never at import, with the environment and streams passed in,
so a test or an embedding program can build the same graph against its own directories.
The HTTP and built-in analyst adapters are imported, and clients built, on first use, and
httpx only when a request is made: a run that never reaches an LLM pays for none of it.
"""

from __future__ import annotations

import functools
import os
import signal
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Final

from axe import __version__
from axe.adapters.agents.repository import TomlAgentRepository, agents_directories
from axe.adapters.console import ConsoleOutput
from axe.adapters.console.status import terminal_columns
from axe.adapters.llm.router import ProviderRouter
from axe.adapters.memory.lock import DEFAULT_LOCK_TIMEOUT
from axe.adapters.memory.store import FileMemoryStore
from axe.adapters.shared.clock import SystemClock
from axe.adapters.shared.places import config_dir, data_dir
from axe.application.gc import GcOptions, GcPorts, collect_all_garbage, collect_garbage
from axe.application.ports import Clock, LLMClient, Output
from axe.domain.errors import ApiError, ConfigError
from axe.domain.events import Event
from axe.domain.limits import MAX_WAIT_SECONDS, MIN_INPUT_TOKENS
from axe.domain.model import ModelRef, quoted
from axe.domain.results import AgentResult, SweepResult

if TYPE_CHECKING:
    from axe.adapters.llm.config import TomlGlobalConfig
    from axe.adapters.llm.settings import ProviderSettings
    from axe.adapters.llm.transport import HttpTransport

BUILTIN_PROVIDER: Final = "builtin"


class _LazyAdapters:
    """The adapters of one run that cost something to build, each built once, on first use.

    ``config.toml`` is read, and the HTTP transport (and httpx) created, only when an
    analysis is requested; ``close`` releases the transport if one was made. Under
    ``--jobs`` several workers ask for a client at the same moment, so every build happens
    under one lock: each gets the same client over the same transport, whose pauses for a
    rate limit and whose connections they then share.
    """

    def __init__(
        self,
        configuration: Path,
        environ: Mapping[str, str],
        http_timeout: float | None,
        max_input_tokens: int | None,
    ):
        self._configuration = configuration
        self._environ = environ
        self._http_timeout = http_timeout
        self._max_input_tokens = max_input_tokens
        self._building = threading.RLock()
        self._transport: HttpTransport | None = None
        self._global_config: TomlGlobalConfig | None = None
        self._clients: dict[str, LLMClient] = {}

    def global_config(self) -> TomlGlobalConfig:
        with self._building:
            if self._global_config is None:
                from axe.adapters.llm.config import TomlGlobalConfig  # noqa: PLC0415

                path = self._configuration / "config.toml"
                self._global_config = TomlGlobalConfig(path, self._environ)
            return self._global_config

    def transport(self) -> HttpTransport:
        with self._building:
            if self._transport is None:
                from axe.adapters.llm.transport import HttpTransport  # noqa: PLC0415

                self._transport = HttpTransport(
                    timeout=self._http_timeout, user_agent=f"axe/{__version__}"
                )
            return self._transport

    def client(self, provider: str) -> LLMClient:
        """``provider``'s client, the same one however many workers ask at once."""
        with self._building:
            if provider not in self._clients:
                build = self._builtin_client if provider == BUILTIN_PROVIDER else self._http_client
                self._clients[provider] = build(provider)
            return self._clients[provider]

    def _http_client(self, provider: str) -> LLMClient:
        """``provider``'s row of the catalogue, with what config.toml and the environment
        say about it.

        Raises:
            ConfigError: config.toml is broken, or Bedrock has no region.
            ApiError: the key (Bedrock: the credentials) is missing.
        """
        from axe.adapters.llm.catalogue import CATALOGUE, Auth  # noqa: PLC0415
        from axe.adapters.llm.client import HttpLLMClient  # noqa: PLC0415
        from axe.adapters.llm.settings import ProviderSettings  # noqa: PLC0415

        row = CATALOGUE[provider]
        config = self.global_config()
        config.check()  # broken even when the environment supplies everything it would give
        # a row without a key variable sends no key: none is looked up, none is reported
        key, source = (
            config.key_and_source(provider, row.key_variable) if row.key_variable else ("", "")
        )
        headers = {
            header: value
            for header, name in row.optional_headers
            if (value := config.setting(provider, name))
        }
        settings = ProviderSettings(
            api_key=key,
            base_url=config.base_url(provider),
            key_variable=row.key_variable,
            key_source=source,
            config_path=str(config.path),
            max_input_tokens=self._max_input_tokens,
            headers=headers,
        )
        if row.auth is Auth.SIGV4:
            settings = self._signing(provider, row.region_variables, settings)
        return HttpLLMClient(self.transport(), row, settings)

    def _signing(
        self, provider: str, region_variables: tuple[str, ...], settings: ProviderSettings
    ) -> ProviderSettings:
        """Bedrock's region and AWS credentials, both checked before any request.

        Raises:
            ConfigError: no region (exit 2).
            ApiError: no credentials (exit 3, as a missing key).
        """
        import attrs  # noqa: PLC0415

        from axe.adapters.llm.aws_credentials import (  # noqa: PLC0415
            aws_profile,
            read_aws_credentials,
            shared_credentials_file,
        )

        region = self.global_config().setting(provider, "region", region_variables)
        if not region:
            raise ConfigError(
                f"AWS region for provider {quoted(provider)} is not configured (set "
                f"{', '.join(region_variables)}, or add region to [providers.{provider}] in "
                f"{self.global_config().path})"
            )
        found = read_aws_credentials(self._environ)
        if found is None:
            looked = shared_credentials_file(self._environ)
            where = (
                f"profile {quoted(aws_profile(self._environ))} in {looked or '~/.aws/credentials'}"
            )
            raise ApiError(
                f"AWS credentials for provider {quoted(provider)} are not configured: none in "
                f"the environment and no {where} (set AWS_ACCESS_KEY_ID and "
                "AWS_SECRET_ACCESS_KEY, or AWS_PROFILE and AWS_SHARED_CREDENTIALS_FILE)"
            )
        return attrs.evolve(settings, region=region, aws=found)

    def _builtin_client(self, _: str) -> LLMClient:
        """The offline analyst needs no key, but a broken ``config.toml`` is reported all the
        same: the same file gives the same answer whichever model is asked."""
        self.global_config().check()
        from axe.adapters.llm.offline.client import HeuristicAnalyst  # noqa: PLC0415

        return HeuristicAnalyst()

    def llm(self) -> ProviderRouter:
        return ProviderRouter(self.client, _provider_names)

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()


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
    clock: Clock | None = None,
) -> Iterator[GcPorts]:
    """The real adapters, configured from ``environ``; the HTTP client closes on exit.

    ``http_timeout`` (seconds for one analysis request, retries included) defaults to the
    HTTP adapter's own default; ``max_input_tokens`` caps every request to a provider;
    ``lock_timeout`` is how long gc waits for another gc holding the same memory file;
    ``agents_dir`` (``--agents-dir``) is searched for agents before the usual places;
    ``check_config`` reads ``config.toml`` now, if it exists, so that ``--all`` says a
    broken one once, like a bad ``--model``, instead of once per agent (a setup without
    one starts as fast as before); ``clock`` is the run's one clock (the system's when None).

    Raises:
        ConfigError: ``agents_dir`` is not a directory, or ``check_config`` and
            ``config.toml`` does not load.
    """
    configuration = config_dir(environ)
    agents = TomlAgentRepository(agents_directories(environ, agents_dir), report=_once(output.emit))
    lazy = _LazyAdapters(configuration, environ, http_timeout, max_input_tokens)
    if check_config and lazy.global_config().path.exists():
        lazy.global_config().check()  # the same file every client reads later: parsed once
    memory = FileMemoryStore(
        functools.partial(data_dir, environ),
        clock=clock or SystemClock(),
        lock_timeout=lock_timeout,
        environ=environ,
    )
    try:
        yield GcPorts(
            agents=agents,
            memory=memory,
            llm=lazy.llm(),
            output=output,
        )
    except (KeyboardInterrupt, SystemExit):  # Ctrl-C, SIGTERM: may end without joining threads
        memory.settle_interrupted()
        raise
    finally:
        lazy.close()


def _once(emit: Callable[[Event], None]) -> Callable[[Event], None]:
    """``emit``, passing each distinct event on once: a warning about an unsafe agents
    directory is said once per run, however often the directory is looked at."""
    seen: set[Event] = set()

    def emit_once(event: Event) -> None:
        if event not in seen:
            seen.add(event)
            emit(event)

    return emit_once


def _provider_names() -> list[str]:
    from axe.adapters.llm.catalogue import CATALOGUE  # noqa: PLC0415  (only once a model is used)

    return [*CATALOGUE, BUILTIN_PROVIDER]


def agent_names(
    environ: Mapping[str, str] | None = None, agents_dir: Path | None = None
) -> list[str]:
    """The agents of every agents directory (``agents_dir`` first, when given), for shell
    completion; what cannot be read, or is not safe to use, offers none, silently."""
    environ = os.environ if environ is None else environ
    try:
        return TomlAgentRepository(agents_directories(environ, agents_dir)).list_names()
    except ConfigError:
        return []


def console_output(
    stdout: BinaryIO, stderr: BinaryIO, environ: Mapping[str, str], *, json_lines: bool = False
) -> ConsoleOutput:
    """Console output; a live status line only where a person is watching stderr."""
    interactive = stderr.isatty() and environ.get("TERM", "") != "dumb"
    return ConsoleOutput(
        stdout,
        stderr,
        json_lines=json_lines,
        interactive=interactive,
        color=interactive and not environ.get("NO_COLOR"),
        columns=functools.partial(terminal_columns, stderr, environ),
    )


def seconds_from(environ: Mapping[str, str], variable: str) -> float | None:
    """A time limit in seconds from ``variable`` (``AXE_HTTP_TIMEOUT``, ``AXE_LOCK_TIMEOUT``)
    when it is set.

    Raises:
        ConfigError: the variable is not a positive number of seconds, at most a day.
    """
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
    """``AXE_MAX_INPUT_TOKENS`` when set: the same cap as ``--max-input-tokens``.

    Raises:
        ConfigError: the variable is not a whole number of at least 1024.
    """
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
    stdout: BinaryIO,
    stderr: BinaryIO,
    environ: Mapping[str, str] | None = None,
    json_lines: bool = False,
    max_input_tokens: int | None = None,
    lock_timeout: float | None = None,
    agents_dir: Path | None = None,
) -> AgentResult | SweepResult:
    """``axe gc`` for one agent, or every agent when ``agent`` is None.

    ``max_input_tokens`` (``--max-input-tokens``) wins over ``AXE_MAX_INPUT_TOKENS``, and
    ``lock_timeout`` (``--lock-timeout``) over ``AXE_LOCK_TIMEOUT``; ``agents_dir``
    (``--agents-dir``) is searched first.

    Raises:
        ConfigError: an agents directory cannot be listed, ``agents_dir`` is not one, or a
            setting in the environment is invalid.
    """
    environ = os.environ if environ is None else environ
    _ignore_sigio()
    timeout = seconds_from(environ, "AXE_HTTP_TIMEOUT")
    cap = max_input_tokens or max_input_tokens_from(environ)
    waits = lock_timeout or seconds_from(environ, "AXE_LOCK_TIMEOUT") or DEFAULT_LOCK_TIMEOUT
    output = console_output(stdout, stderr, environ, json_lines=json_lines)
    try:
        with production_ports(
            environ,
            output,
            http_timeout=timeout,
            max_input_tokens=cap,
            lock_timeout=waits,
            agents_dir=agents_dir,
            check_config=agent is None,
        ) as ports:
            if options.model_override is not None:  # known before any agent runs, like its format
                _check_model(ports.llm, options.model_override)
            if agent is None:
                return collect_all_garbage(options, ports)
            return collect_garbage(agent, options, ports)
    finally:
        output.close()


def _check_model(llm: LLMClient, model: ModelRef) -> None:
    """Raises AgentError for a ``--model`` whose provider (or built-in model) does not
    exist, so ``--all`` says it once instead of once per agent."""
    if isinstance(llm, ProviderRouter):
        llm.check(model.provider)
    if model.provider == BUILTIN_PROVIDER:
        from axe.adapters.llm.offline.client import check_model_name  # noqa: PLC0415

        check_model_name(model.name)


def _ignore_sigio() -> None:
    """Let any thread of this run take the read lease that carries late appends over.

    A writer opening a leased file raises SIGIO, which would kill the process by default;
    gc uses no signal-driven I/O, so ignoring it is safe, and only the main thread may
    change it (an embedding program calling from another thread keeps its own setting).
    """
    sigio = getattr(signal, "SIGIO", None)
    if sigio is not None and threading.current_thread() is threading.main_thread():
        signal.signal(sigio, signal.SIG_IGN)
