"""Provider keys and base URLs from ``config.toml`` and the environment (axe-formats.md).

Answers in plain strings: the composition root hands them to the HTTP adapter, which owns
its own settings type, so neither adapter imports the other.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from attrs import Factory, define

from axe.adapters.files.toml_values import load_toml, structure

_KEY_VARIABLES = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}


@define
class _ProviderTable:
    api_key: str = ""
    base_url: str = ""


@define
class _GlobalFile:
    providers: dict[str, _ProviderTable] = Factory(dict)


def key_variable(provider: str) -> str:
    """The environment variable that holds ``provider``'s API key."""
    return _KEY_VARIABLES.get(provider, f"{provider.upper()}_API_KEY")


class TomlGlobalConfig:
    """``config.toml``, read once on first use; environment variables win over the file.

    Every method raises ``ConfigError`` when ``config.toml`` exists but is unreadable or
    malformed; a missing file means nothing is configured.
    """

    def __init__(self, path: Path, environ: Mapping[str, str]) -> None:
        self._path = path
        self._environ = environ
        self._file: _GlobalFile | None = None

    @staticmethod
    def key_variable(provider: str) -> str:
        """The environment variable that holds ``provider``'s key."""
        return key_variable(provider)

    def check(self) -> None:
        """Read the file now, so a broken one is reported whatever the run needs from it."""
        self._load()

    def api_key(self, provider: str) -> str:
        """``provider``'s key, or "" when neither the environment nor the file has one."""
        return self._environ.get(key_variable(provider), "") or self._table(provider).api_key

    def base_url(self, provider: str) -> str:
        """``provider``'s base URL, or "" for the provider's default."""
        variable = f"AXE_{provider.upper()}_BASE_URL"
        return self._environ.get(variable, "") or self._table(provider).base_url

    def _table(self, provider: str) -> _ProviderTable:
        return self._load().providers.get(provider, _ProviderTable())

    def _load(self) -> _GlobalFile:
        if self._file is None:
            try:
                document = load_toml(self._path)
            except FileNotFoundError:
                document = {}
            self._file = structure(document, _GlobalFile, source=str(self._path))
        return self._file
