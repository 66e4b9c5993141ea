"""Where axe keeps its files, identical to the Go axe on every platform (axe-formats.md).

Resolving a path never creates a directory. The environment is passed in rather than read
from ``os.environ`` so tests and embedding programs can point axe anywhere.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from axe.domain.errors import ConfigError


def config_dir(environ: Mapping[str, str]) -> Path:
    """``$XDG_CONFIG_HOME/axe`` when set, else the platform's user config dir + ``/axe``."""
    xdg = environ.get("XDG_CONFIG_HOME", "")
    if xdg:
        return Path(xdg) / "axe"
    import platformdirs  # noqa: PLC0415  (only needed when XDG_CONFIG_HOME is unset)

    return Path(platformdirs.user_config_dir("axe", appauthor=False, roaming=True))


def data_dir(environ: Mapping[str, str]) -> Path:
    """``$XDG_DATA_HOME/axe`` when set, else ``$HOME/.local/share/axe`` on every platform.

    Raises:
        ConfigError: neither variable is set, so there is no place to look.
    """
    xdg = environ.get("XDG_DATA_HOME", "")
    if xdg:
        return Path(xdg) / "axe"
    home = environ.get("HOME", "") or environ.get("USERPROFILE", "")
    if not home:
        raise ConfigError("cannot locate the data directory: set HOME or XDG_DATA_HOME")
    return Path(home) / ".local" / "share" / "axe"


def expand_path(text: str, environ: Mapping[str, str], *, windows: bool = os.name == "nt") -> str:
    """``text`` as the Go axe expands ``memory.path``: a leading ``~`` (alone or before a
    separator) becomes the home directory (``HOME``; ``USERPROFILE`` on Windows, as Go's
    ``os.UserHomeDir``), then ``$VAR`` and ``${VAR}`` are replaced with Go's
    ``os.ExpandEnv`` rules, so gc trims the very file ``axe run`` appends to.

    ``~user`` is left as it is, and so is ``~`` when there is no home directory.
    """
    home = environ.get("USERPROFILE" if windows else "HOME", "")
    separators = ("/", "\\") if windows else ("/",)
    if home and (text == "~" or (text[:1] == "~" and text[1:2] in separators)):
        text = home + text[1:]
    return expand_variables(text, environ)


_SPECIAL = frozenset("*#$@!?-0123456789")  # Go's isShellSpecialVar: $1, $$, ${?} ...
_NAME = re.compile(r"[A-Za-z0-9_]*")


def expand_variables(text: str, environ: Mapping[str, str]) -> str:
    """Go's ``os.Expand(text, getenv)``, byte for byte in its choices.

    ``$NAME`` takes the longest run of ASCII letters, digits and ``_``; ``${...}`` anything
    up to the first ``}``; ``$`` before one of ``*#$@!?-`` or a digit names that one
    character (so ``$$`` is the variable ``$``, normally unset). An unset variable becomes
    the empty string; ``${}`` and an unclosed ``${`` are dropped; a ``$`` followed by
    anything else (or by nothing) stays.
    """
    parts: list[str] = []
    start = 0
    dollar = text.find("$")
    while 0 <= dollar < len(text) - 1:
        parts.append(text[start:dollar])
        after = dollar + 1
        if text[after] == "{":
            close = text.find("}", after)
            name, start = (text[after + 1 : close], close + 1) if close >= 0 else ("", after + 1)
        elif text[after] in _SPECIAL:
            name, start = text[after], after + 1
        else:
            match = _NAME.match(text, after)
            name = match.group() if match else ""
            start = after + len(name)
            if not name:
                parts.append("$")
        parts.append(environ.get(name, "") if name else "")
        dollar = text.find("$", start)
    parts.append(text[start:])
    return "".join(parts)
