"""Provider settings from ``config.toml`` and the environment (axe-formats.md), in plain
strings: ``settings.py`` turns them into a row's :class:`ProviderSettings`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from attrs import Factory, define

from axe.adapters.shared.toml import load_toml, structure


@define(repr=False, eq=False)  # read once, never shown or compared
class _ProviderTable:
    """The two keys every provider has, checked as soon as the file is read; a row's other
    settings (Bedrock's ``region``, OpenRouter's ``title``) are read by name."""

    api_key: str = ""
    base_url: str = ""


@define(repr=False, eq=False)
class _GlobalFile:
    providers: dict[str, _ProviderTable] = Factory(dict)


class TomlGlobalConfig:
    """``config.toml``, read once on first use; environment variables win over the file.

    Every method raises ``ConfigError`` when ``config.toml`` exists but is unreadable or
    malformed; a missing file means nothing is configured.
    """

    def __init__(self, path: Path, environ: Mapping[str, str]) -> None:
        self._path = path
        self._environ = environ
        self._file: _GlobalFile | None = None
        self._document: dict[str, Any] = {}

    @property
    def path(self) -> Path:
        """Where ``config.toml`` is (or would be), for messages that say where to write."""
        return self._path

    def check(self) -> None:
        """Read the file now, so a broken one is reported whatever the run needs from it."""
        self._load()

    def key_and_source(self, provider: str, variable: str) -> tuple[str, str]:
        """``provider``'s key from ``variable`` (its catalogue row's) or the file, and where
        it came from (the variable's name or the file's path); ``("", "")`` when neither
        has one. The environment wins over the file."""
        if key := self._environ.get(variable, ""):
            return key, variable
        if key := self._table(provider).api_key:
            return key, str(self._path)
        return "", ""

    def base_url(self, provider: str) -> str:
        """``provider``'s base URL, or "" for the provider's default."""
        variable = f"AXE_{provider.upper()}_BASE_URL"
        return self._environ.get(variable, "") or self._table(provider).base_url

    def setting(self, provider: str, name: str, variables: Sequence[str] | None = None) -> str:
        """One of ``[providers.<provider>]``'s other settings (``region``, ``referer``,
        ``title``, ``categories``): the first of ``variables`` set (default
        ``AXE_<PROVIDER>_<NAME>``), else the file; "" when none is."""
        for variable in variables or (f"AXE_{provider.upper()}_{name.upper()}",):
            if value := self._environ.get(variable, ""):
                return value
        self._load()  # so [providers] and each of its tables are known to be tables
        written = self._document.get("providers", {}).get(provider, {}).get(name, "")
        where = ("providers", provider, name)
        return structure(written, str, source=str(self._path), key=where)

    def _table(self, provider: str) -> _ProviderTable:
        return self._load().providers.get(provider, _ProviderTable())

    def _load(self) -> _GlobalFile:
        if self._file is None:
            try:
                document = load_toml(self._path)
            except FileNotFoundError:
                document = {}
            self._file = structure(document, _GlobalFile, source=str(self._path))
            self._document = document
        return self._file
