"""Provider keys and base URLs from ``config.toml`` and the environment (axe-formats.md)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from attrs import Factory, define

from axe.adapters.files.toml_values import load_toml, structure
from axe.domain.providers import ProviderSettings

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
    """``config.toml``, read once on first use; environment variables win over the file."""

    def __init__(self, path: Path, environ: Mapping[str, str]) -> None:
        self._path = path
        self._environ = environ
        self._file: _GlobalFile | None = None

    def provider(self, name: str) -> ProviderSettings:
        """Settings for provider ``name``; empty strings where nothing is configured.

        Raises:
            ConfigError: ``config.toml`` exists but is unreadable or malformed.
        """
        table = self._load().providers.get(name, _ProviderTable())
        variable = key_variable(name)
        return ProviderSettings(
            api_key=self._environ.get(variable, "") or table.api_key,
            base_url=self._environ.get(f"AXE_{name.upper()}_BASE_URL", "") or table.base_url,
            key_variable=variable,
        )

    def _load(self) -> _GlobalFile:
        if self._file is None:
            try:
                document = load_toml(self._path)
            except FileNotFoundError:
                document = {}
            self._file = structure(document, _GlobalFile, source=str(self._path))
        return self._file
