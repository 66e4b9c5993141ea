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
    separator) is Go's ``os.UserHomeDir``, then variables as :func:`expand_variables`."""
    home = environ.get("USERPROFILE" if windows else "HOME", "")
    separators = ("/", "\\") if windows else ("/",)
    if home and (text == "~" or (text[:1] == "~" and text[1:2] in separators)):
        text = home + text[1:]
    return expand_variables(text, environ, unset)


# Go's getShellName: ${...} up to "}", an unclosed "${" eaten, a special character ($1, $$,
# $?) alone, or the longest run of ASCII letters, digits and "_"; any other "$" stays.
_VARIABLE = re.compile(r"\$(?:\{([^}]*)\}|\{|([*#$@!?0-9-])|(\w+))", re.ASCII)


def expand_variables(text: str, environ: Mapping[str, str], unset: list[str] | None = None) -> str:
    """Go's ``os.Expand(text, getenv)``, byte for byte: an unset variable becomes "" (its
    name appended to ``unset``), and so do ``${}`` and an unclosed ``${``."""

    def value(match: re.Match[str]) -> str:
        name = match[1] or match[2] or match[3] or ""
        if name and name not in environ and unset is not None:
            unset.append(name)
        return environ.get(name, "") if name else ""

    return _VARIABLE.sub(value, text)
