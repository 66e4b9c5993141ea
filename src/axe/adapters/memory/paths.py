"""Where a memory file is: ``memory.path`` expanded as the Go axe expands it, so gc trims the
file ``axe run`` writes; and the names of gc's own files beside it."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path


def sidecar(real: Path, suffix: str) -> Path:
    """gc's own file beside the memory file whose resolved path is ``real``: hidden and
    never ending in ``.md``, so neither the Go axe nor gc reads it as memory."""
    return real.with_name(f".{real.name}.axe-gc{suffix}")


# gc's longest own name, ``.<name>.axe-gc-<pid>-<8 hex>-old.tmp``, must fit in 255 bytes
# (NAME_MAX): a longer memory file name could be analysed but never locked or trimmed.
OWN_NAMES_LONGER_BY = len(".") + len(".axe-gc") + len("-4194304-0123abcd-old.tmp")
LONGEST_MEMORY_NAME = 255 - OWN_NAMES_LONGER_BY


def archive_path(memory_path: Path) -> Path:
    """Where ``--archive`` keeps what trims removed: ``<memory file>.archive``."""
    return memory_path.with_name(memory_path.name + ".archive")


def intent_path(memory_path: Path) -> Path:
    """The archive's intent record (see :mod:`.archive`), hidden beside it."""
    return memory_path.with_name(f".{archive_path(memory_path).name}.axe-gc-intent")


def expand_path(
    text: str,
    environ: Mapping[str, str],
    *,
    windows: bool = os.name == "nt",
    unset: list[str] | None = None,
) -> str:
    """``text`` as the Go axe expands ``memory.path``: a leading ``~`` (alone or before a
    separator) is Go's ``os.UserHomeDir``, then variables as Go's ``os.ExpandEnv`` (the
    names of those not set go to ``unset``)."""
    home = environ.get("USERPROFILE" if windows else "HOME", "")
    separators = ("/", "\\") if windows else ("/",)
    if home and (text == "~" or (text[:1] == "~" and text[1:2] in separators)):
        text = home + text[1:]
    return expand_variables(text, environ, unset)


_SPECIAL = frozenset("*#$@!?-0123456789")  # Go's isShellSpecialVar: $1, $$, ${?} ...
_NAME = re.compile(r"[A-Za-z0-9_]*")


def expand_variables(text: str, environ: Mapping[str, str], unset: list[str] | None = None) -> str:
    """Go's ``os.Expand(text, getenv)``, byte for byte in its choices: ``$NAME`` takes the
    longest run of ASCII letters, digits and ``_``, ``${...}`` anything up to ``}``, ``$``
    before ``*#$@!?-`` or a digit that character; an unset variable becomes "" (its name
    appended to ``unset``); ``${}`` and an unclosed ``${`` go; any other ``$`` stays."""
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
        if name and name not in environ and unset is not None:
            unset.append(name)
        parts.append(environ.get(name, "") if name else "")
        dollar = text.find("$", start)
    parts.append(text[start:])
    return "".join(parts)
