"""Where axe keeps its files, as the Go axe does on every platform (axe-formats.md); the
environment is passed in, so tests and embedding programs can point axe anywhere."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import platformdirs

from axe.domain.errors import ConfigError


def config_dir(environ: Mapping[str, str]) -> Path:
    """``$XDG_CONFIG_HOME/axe`` when set, else the platform's user config dir + ``/axe``."""
    if xdg := environ.get("XDG_CONFIG_HOME", ""):
        return Path(xdg) / "axe"
    return Path(platformdirs.user_config_dir("axe", appauthor=False, roaming=True))


def data_dir(environ: Mapping[str, str]) -> Path:
    """``$XDG_DATA_HOME/axe`` when set, else ``$HOME/.local/share/axe`` on every platform;
    ConfigError when neither variable is set, so there is no place to look."""
    if xdg := environ.get("XDG_DATA_HOME", ""):
        return Path(xdg) / "axe"
    home = environ.get("HOME", "") or environ.get("USERPROFILE", "")
    if not home:
        raise ConfigError("cannot locate the data directory: set HOME or XDG_DATA_HOME")
    return Path(home) / ".local" / "share" / "axe"
