"""Every LLM provider gc can analyse with, end to end, behind one ``LLMClient``: the
catalogue, wire formats, auth and SigV4, the HTTP transport, config.toml and AWS credentials,
and the offline analyst. Until a model is checked or a request made, a run loads this module
alone: the rest, and httpx, are imported and built on first use.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from axe.domain.errors import AgentError

if TYPE_CHECKING:
    from axe.adapters.llm.catalogue import Provider
    from axe.adapters.llm.config import TomlGlobalConfig
    from axe.adapters.llm.transport import HttpTransport
    from axe.application.ports import AnalysisRequest, Clock
    from axe.domain.model import AgentConfig, ModelRef
    from axe.domain.results import Completion

# httpx imports its own command line (``httpx._main``) with the package, and that imports
# rich and pygments wherever they are installed: 60 ms of every run that sends, for a
# command gc never runs. A module set to None cannot be imported, so httpx takes the
# fallback it takes when they are missing. Set before any module here imports httpx, and
# only if nothing imported that module already; a program that embeds gc and calls
# ``httpx.main`` in its own process gets that fallback's advice to install httpx[cli].
sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]


class _RowClient(Protocol):
    """What serves one row: the port without ``charges_tokens``, which the row itself says."""

    def input_limit(self, request: AnalysisRequest) -> int | None: ...

    def complete(self, request: AnalysisRequest) -> Completion: ...


class LLMProviders:
    """The ``LLMClient`` of every row of the catalogue, chosen by the provider part of the
    model; one client per row, each built on first use with what config.toml and the
    environment say about it.

    Under ``--jobs`` several workers ask for a client at the same moment, so every build
    happens under one lock: each gets the same client over the same transport, whose
    pauses for a rate limit and whose connections they then share. ``close`` releases the
    transport if one was made.
    """

    def __init__(
        self,
        environ: Mapping[str, str],
        *,
        config_dir: Path,
        clock: Clock,
        http_timeout: float | None = None,
        max_input_tokens: int | None = None,
        user_agent: str = "axe",
        sending: bool = True,
    ) -> None:
        """``clock``: the run's one clock, for every HTTP deadline and retry pause;
        ``http_timeout``: seconds for one request, retries included (default: the
        transport's); ``max_input_tokens``: a cap on every request (``--max-input-tokens``);
        not ``sending`` (``--estimate``): only windows are asked for, so no key is needed,
        and an analysis is refused."""
        self._environ = environ
        self._clock = clock
        self._config_path = config_dir / "config.toml"
        self._http_timeout = http_timeout
        self._max_input_tokens = max_input_tokens
        self._user_agent = user_agent
        self._sending = sending
        self._building = threading.RLock()
        self._config: TomlGlobalConfig | None = None
        self._transport: HttpTransport | None = None
        self._clients: dict[str, _RowClient] = {}
        self._builders: list[threading.Thread] = []  # see preparing

    def check(self, model: ModelRef) -> None:
        """Raises AgentError (exit 1) for a model no row serves, so that a ``--model`` is
        refused before any agent runs."""
        from axe.adapters.llm.catalogue import provider  # noqa: PLC0415

        provider(model.provider).check_model(model.name)

    def read_config(self) -> None:
        """Read config.toml now, if there is one, so that ``--all`` says a broken one once
        rather than once per agent; the clients built later use what was read.

        Raises:
            ConfigError: config.toml does not load.
        """
        if self._config_path.exists():
            self._global_config().check()

    @contextlib.contextmanager
    def preparing(self, agent: AgentConfig, model: ModelRef | None = None) -> Iterator[None]:
        """While ``agent``'s large memory file is read: the client its requests will need
        is built on a thread, as a request builds it (httpx only once its row's settings
        are good: a missing key loads none), done by the time the read is. The imports (70
        ms) and the kernel's copy of the file overlap instead of following each other. A
        hint, raising nothing: whatever fails here, the first request says it. ``model``:
        the run's ``--model``."""
        builder = threading.Thread(target=self._build_ahead, args=(model, agent.model))
        builder.daemon = True
        try:
            builder.start()
        except RuntimeError:  # no thread to be had: the first request builds it
            yield
            return
        # Kept to the end of the run: freeing a Thread runs a callback of ``threading`` on
        # this thread, and a Ctrl-C raised inside it would be printed and dropped.
        self._builders.append(builder)
        try:
            yield
        finally:
            builder.join()

    def _build_ahead(self, model: ModelRef | None, named: str) -> None:
        from axe.domain.model import ModelRef  # noqa: PLC0415

        with contextlib.suppress(Exception):  # a hint: the first request says what is wrong
            self._client(model or ModelRef.parse(named))
            if self._transport is not None:  # an HTTP row's: what its first pool loads too
                import httpcore  # noqa: F401, PLC0415

    def input_limit(self, request: AnalysisRequest) -> int | None:
        return self._client(request.model).input_limit(request)

    def charges_tokens(self, model: ModelRef) -> bool:
        """Every row but the offline analyst's, known from the row alone (no client)."""
        from axe.adapters.llm.catalogue import provider  # noqa: PLC0415

        return not provider(model.provider).offline

    def complete(self, request: AnalysisRequest) -> Completion:
        if not self._sending:
            raise AgentError("internal: a run that sends nothing asked for an analysis")
        return self._client(request.model).complete(request)

    def close(self) -> None:
        """Close the transport: no request is started or retried after this."""
        if self._transport is not None:
            self._transport.close()

    def _client(self, model: ModelRef) -> _RowClient:
        """The client of ``model``'s row, built once; the model is checked after the
        provider's configuration, so a broken config.toml is said first for every row."""
        from axe.adapters.llm.catalogue import provider  # noqa: PLC0415

        row = provider(model.provider)
        with self._building:
            if row.name not in self._clients:
                self._clients[row.name] = self._build(row)
            client = self._clients[row.name]
        row.check_model(model.name)
        return client

    def _build(self, row: Provider) -> _RowClient:
        """Called under the lock. Raises what :meth:`TomlGlobalConfig.check` and
        :func:`~axe.adapters.llm.settings.provider_settings` raise: a broken config.toml
        (said whichever row is asked), a missing region, key or credentials."""
        config = self._global_config()
        config.check()
        if row.offline:
            from axe.adapters.llm.offline.client import HeuristicAnalyst  # noqa: PLC0415

            return HeuristicAnalyst()
        from axe.adapters.llm.settings import provider_settings  # noqa: PLC0415

        settings = provider_settings(
            row, config, self._environ, self._max_input_tokens, keyless=not self._sending
        )
        # httpx is imported here, once the settings are known to be good
        from axe.adapters.llm.client import HttpLLMClient  # noqa: PLC0415
        from axe.adapters.llm.transport import HttpTransport  # noqa: PLC0415

        if self._transport is None:
            self._transport = HttpTransport(
                clock=self._clock, timeout=self._http_timeout, user_agent=self._user_agent
            )
        return HttpLLMClient(self._transport, row, settings)

    def _global_config(self) -> TomlGlobalConfig:
        with self._building:
            if self._config is None:
                from axe.adapters.llm.config import TomlGlobalConfig  # noqa: PLC0415

                self._config = TomlGlobalConfig(self._config_path, self._environ)
            return self._config
