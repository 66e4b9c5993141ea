"""The composition root: the one place that builds adapters and hands them to the use case.

Called when a command runs, never at import, with the environment and streams passed in,
so a test or an embedding program can build the same graph against its own directories.
The HTTP and built-in analyst adapters are imported, and clients built, on first use, and
httpx only when a request is made: a run that never reaches an LLM pays for none of it.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, BinaryIO

from axe import __version__
from axe.adapters.console import ConsoleOutput
from axe.adapters.files.agents import TomlAgentRepository
from axe.adapters.files.memory import FileMemoryStore
from axe.adapters.files.paths import config_dir, data_dir
from axe.application.gc import GcOptions, GcPorts, collect_all_garbage, collect_garbage
from axe.application.ports import LLMClient, Output
from axe.application.routing import ProviderRouter
from axe.domain.errors import ConfigError

if TYPE_CHECKING:
    from axe.adapters.files.global_config import TomlGlobalConfig
    from axe.adapters.http.transport import HttpTransport
    from axe.domain.providers import ProviderSettings

DEFAULT_HTTP_TIMEOUT = 120.0


@contextmanager
def production_ports(
    environ: Mapping[str, str],
    output: Output,
    *,
    http_timeout: float = DEFAULT_HTTP_TIMEOUT,
) -> Iterator[GcPorts]:
    """The real adapters, configured from ``environ``; the HTTP client closes on exit."""
    configuration = config_dir(environ)

    @functools.cache
    def global_config() -> TomlGlobalConfig:
        from axe.adapters.files.global_config import TomlGlobalConfig  # noqa: PLC0415

        return TomlGlobalConfig(configuration / "config.toml", environ)

    @functools.cache
    def transport() -> HttpTransport:
        from axe.adapters.http.transport import HttpTransport  # noqa: PLC0415

        return HttpTransport(timeout=http_timeout, user_agent=f"axe/{__version__}")

    def http_client(provider: str) -> Callable[[], LLMClient]:
        def build() -> LLMClient:
            from axe.adapters.http import providers  # noqa: PLC0415

            clients: dict[str, Callable[[HttpTransport, ProviderSettings], LLMClient]] = {
                "anthropic": providers.AnthropicClient,
                "openai": providers.OpenAIClient,
                "ollama": providers.OllamaClient,
            }
            return clients[provider](transport(), global_config().provider(provider))

        return build

    def builtin() -> LLMClient:
        from axe.adapters.builtin import HeuristicAnalyst  # noqa: PLC0415

        return HeuristicAnalyst()

    llm = ProviderRouter(
        {name: http_client(name) for name in ("anthropic", "openai", "ollama")}
        | {"builtin": builtin}
    )
    try:
        yield GcPorts(
            agents=TomlAgentRepository(configuration / "agents"),
            memory=FileMemoryStore(lambda: data_dir(environ)),
            llm=llm,
            output=output,
        )
    finally:
        if transport.cache_info().currsize:  # only a run that made a request has one to close
            transport().close()


def console_output(stdout: BinaryIO, stderr: BinaryIO, environ: Mapping[str, str]) -> Output:
    """Console output; a live status line only where a person is watching stderr."""
    interactive = stderr.isatty() and environ.get("TERM", "") != "dumb"
    return ConsoleOutput(
        stdout, stderr, interactive=interactive, color=interactive and not environ.get("NO_COLOR")
    )


def http_timeout_from(environ: Mapping[str, str], default: float) -> float:
    """``AXE_HTTP_TIMEOUT`` (seconds) when set, so tests and slow local models can change it.

    Raises:
        ConfigError: the variable is not a positive number.
    """
    text = environ.get("AXE_HTTP_TIMEOUT", "")
    if not text:
        return default
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not 0 < seconds < float("inf"):
        raise ConfigError(f"AXE_HTTP_TIMEOUT must be a positive number of seconds, not {text!r}")
    return seconds


def run_gc(
    agent: str | None,
    options: GcOptions,
    *,
    stdout: BinaryIO,
    stderr: BinaryIO,
    environ: Mapping[str, str] | None = None,
    http_timeout: float = DEFAULT_HTTP_TIMEOUT,
) -> None:
    """``axe gc`` for one agent, or every agent when ``agent`` is None.

    Raises:
        AxeError: as :func:`collect_garbage` / :func:`collect_all_garbage`.
    """
    environ = os.environ if environ is None else environ
    output = console_output(stdout, stderr, environ)
    timeout = http_timeout_from(environ, http_timeout)
    with production_ports(environ, output, http_timeout=timeout) as ports:
        if agent is None:
            collect_all_garbage(options, ports)
        else:
            collect_garbage(agent, options, ports)
