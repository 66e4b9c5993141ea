"""TOML files into attrs values as strictly as the Go axe reads them: ``last_n = "ten"`` is
an error naming the key, never a coercion; unknown keys are ignored. Of cattrs' tree of
errors the user reads the first, in TOML's words (``providers."my.llm".api_key``, ``true``).
"""

from __future__ import annotations

import datetime
import functools
import os
import re
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, get_origin

import attrs
import cattrs
from cattrs.cols import list_structure_factory
from cattrs.gen import make_dict_structure_fn, make_mapping_structure_fn

from axe.adapters.shared.reading import describe_os_error, read_regular
from axe.domain.errors import ConfigError
from axe.domain.model import quoted

T = TypeVar("T")
Hook = Callable[[Any, Any], Any]
HookFactory = Callable[[Any, cattrs.Converter], Hook]

_MAX_CONFIG_BYTES = 4 * 1024 * 1024
_NAMES: dict[type[Any], str] = {str: "a string", bool: "true or false", int: "an integer"}
_NAMES.update({float: "a number", list: "an array", dict: "a table"})  # as TOML names them
_INT64 = range(-(2**63), 2**63)
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


class _WrongValueError(ValueError):
    """What is wrong with one value, in the user's words: ``expected an integer, got "ten"``."""


def _exactly(value: Any, kind: type[T]) -> T:
    """``value``, when TOML wrote it as a ``kind``: a float also as an integer (``temperature
    = 1``), as TOML decoders read it; an integer only within TOML's 64 bits."""
    if kind is float and type(value) is int:
        value = float(value)  # OverflowError: a whole number past any float
    if type(value) is not kind:
        raise _WrongValueError(f"expected {_NAMES[kind]}, got {_describe(value)}")
    if kind is int and value not in _INT64:
        raise _WrongValueError(f"{value} is outside TOML's 64-bit integer range")
    return value


def _only(kind: type[Any], factory: HookFactory) -> HookFactory:
    """``factory``'s hooks, for a ``kind`` of TOML value only (cattrs reads "ab" as a list)."""

    def make(into: Any, converter: cattrs.Converter) -> Hook:
        hook = factory(into, converter)
        return lambda value, of: hook(_exactly(value, kind), of)

    return make


@functools.cache
def _converter() -> cattrs.Converter:
    """The one converter; it writes each class's code once, when that class is first read."""
    converter = cattrs.Converter()  # detailed validation: each error carries its key
    for kind in (str, bool, int, float):
        converter.register_structure_hook(kind, _exactly)
    converter.register_structure_hook_factory(attrs.has, _only(dict, make_dict_structure_fn))
    for origin, factory in ((list, list_structure_factory), (dict, make_mapping_structure_fn)):
        of_origin = functools.partial(lambda origin, into: get_origin(into) is origin, origin)
        converter.register_structure_hook_factory(of_origin, _only(origin, factory))
    return converter


def structure(data: Any, kind: type[T], *, source: str, key: tuple[str, ...] = ()) -> T:
    """``data``, the value at ``key`` (the whole document by default), as a ``kind``,
    unknown keys ignored; ConfigError naming ``source`` and the key if a value has the wrong
    type or a key without a default in ``kind`` is missing."""
    try:
        return _converter().structure(data, kind)
    except (cattrs.BaseValidationError, _WrongValueError) as errors:
        where, error = _first(errors, functools.reduce(_key, key, ""))
        if isinstance(error, KeyError):  # cattrs reads a field without a default as o[key]
            problem = f"missing required field: {where}"
        elif isinstance(error, _WrongValueError | OverflowError):
            problem = f"{where}: {error}"
        else:
            raise
        raise ConfigError(f"invalid config {source}: {problem}") from None


def _first(error: Exception, key: str) -> tuple[str, Exception]:
    """The first error in cattrs' tree, which keeps the fields' order, after its key (below
    ``key``): each error in the tree has a note naming its field, or its item's index or key."""
    while isinstance(error, cattrs.BaseValidationError):
        error = error.exceptions[0]
        for note in getattr(error, "__notes__", ()):
            step = getattr(note, "name", getattr(note, "index", ""))
            key = f"{key}[{step}]" if isinstance(step, int) else _key(key, step)
    return key, error


def _describe(value: Any) -> str:
    """``value`` as TOML writes it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return quoted(value)  # a TOML basic string, no control character left to the terminal
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    return _NAMES[type(value)] if type(value) in (list, dict) else str(value)


def _key(table: str, name: str) -> str:
    """The key ``name`` of the table at ``table`` ("": the document), as TOML writes it."""
    name = name if _BARE_KEY.fullmatch(name) else quoted(name)
    return f"{table}.{name}" if table else name


def load_toml(
    path: Path, *, check: Callable[[os.stat_result], None] | None = None
) -> dict[str, Any]:
    """The TOML document at ``path``; ``check`` as for :func:`.reading.read_regular`.

    Raises:
        FileNotFoundError: nothing at ``path`` (the caller decides what that means).
        ConfigError: unreadable, not a regular file, too large, not UTF-8, or not TOML.
    """
    try:
        raw, _ = read_regular(path, limit=_MAX_CONFIG_BYTES, check=check)
    except FileNotFoundError:
        raise
    except OSError as error:
        raise ConfigError(f"cannot read {path}: {describe_os_error(error)}") from None
    except ValueError:
        raise ConfigError(f"cannot read {path}: larger than {_MAX_CONFIG_BYTES} bytes") from None
    try:
        return tomllib.loads(raw.decode("utf-8").removeprefix("\ufeff"))  # a BOM: Go's allows it
    except UnicodeDecodeError as error:
        raise ConfigError(
            f"cannot parse {path}: not UTF-8 text (invalid byte at offset {error.start})"
        ) from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"cannot parse {path}: {error}") from None
    except (ValueError, RecursionError):  # an integer of 4,300+ digits, a nesting 1,000 deep
        raise ConfigError(f"cannot parse {path}: a number or a nesting too large") from None
