"""Turn parsed TOML into attrs values, as strictly as the Go axe's TOML decoder does.

A config with ``last_n = "ten"`` or ``enabled = "yes"`` is a config error that names the
key, never a coercion (``int("10")``, ``int(True)``): a value is taken only from the TOML
type that is meant, integers only within TOML's 64-bit range, a table only from a table.
Errors speak TOML: the full dotted key (``providers.openai.base_url``) and the value as it
is written in the file (``true``, ``"ten"``). The values are built by walking their attrs
fields, with no generated code: every run that reads an agent file does this once, so it
must cost less than importing a structuring library would.
"""

from __future__ import annotations

import functools
import os
import re
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import attrs

from axe.adapters.shared.reading import describe_os_error, read_regular
from axe.domain.errors import ConfigError

T = TypeVar("T")

_MAX_CONFIG_BYTES = 4 * 1024 * 1024
_TYPE_NAMES = {int: "an integer", bool: "true or false", str: "a string", float: "a number"}
_INT64 = range(-(2**63), 2**63)
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def _describe(value: Any) -> str:
    """``value`` as it is written in TOML (only ever needed for an error message)."""
    import datetime  # noqa: PLC0415  (error paths only: start-up matters)
    import json  # noqa: PLC0415

    if isinstance(value, Mapping):
        return "a table"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # a TOML basic string
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    return str(value)


class _WrongValueError(ValueError):
    """The first wrong value, after its key as TOML writes it (``memory.last_n: ...``)."""

    def __init__(self, key: str, text: str) -> None:
        super().__init__(f"{key}: {text}" if key else text)


@functools.cache
def _fields(kind: type[Any]) -> list[tuple[str, str, Any, bool]]:
    """Each field of the attrs class ``kind``: its key, its argument's name, its type, and
    whether the file must give it (it has no default)."""
    hints = typing.get_type_hints(kind)
    return [
        (field.name, field.alias, hints[field.name], field.default is attrs.NOTHING)
        for field in attrs.fields(kind)
    ]


def _structured(value: Any, kind: Any, key: str = "") -> Any:
    """``value``, found at ``key``, as a ``kind``: an attrs class (a table; keys it does
    not know are ignored, missing ones take their defaults), ``list[T]``, ``dict[str, T]``,
    or str, int, bool or float, each only from the TOML type that is meant. The first wrong
    value, in the order of the fields, is raised as a :class:`_WrongValueError`; a ``kind``
    none of these is a ``TypeError``, so a field of a new type is noticed by its first test.
    """
    origin = getattr(kind, "__origin__", None)
    if origin is list:
        if not isinstance(value, list):
            raise _WrongValueError(key, f"expected an array, got {_describe(value)}")
        return [_structured(item, kind.__args__[0], f"{key}[{i}]") for i, item in enumerate(value)]
    if origin is dict:
        return {
            name: _structured(item, kind.__args__[1], _key(key, name))
            for name, item in _table(value, key).items()
        }
    if attrs.has(kind):
        table = _table(value, key)
        made = {}
        for name, alias, of, required in _fields(kind):
            if name in table:
                made[alias] = _structured(table[name], of, _key(key, name))
            elif required:
                raise _WrongValueError(_key(key, name), "is required")
        return kind(**made)
    if kind in _TYPE_NAMES:
        return _primitive(value, kind, key)
    raise TypeError(f"a TOML value cannot be read as {kind!r}")


def _table(value: Any, key: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise _WrongValueError(key, f"expected a table, got {_describe(value)}")
    return value


def _primitive(value: Any, kind: type[Any], key: str) -> Any:
    """A float is also read from an integer (``temperature = 1``), as TOML decoders do."""
    if kind is float and type(value) is int:
        try:
            return float(value)
        except OverflowError as error:  # a whole number past any float
            raise _WrongValueError(key, str(error)) from None
    if type(value) is not kind:
        raise _WrongValueError(key, f"expected {_TYPE_NAMES[kind]}, got {_describe(value)}")
    if kind is int and value not in _INT64:
        raise _WrongValueError(key, f"{value} is outside TOML's 64-bit integer range")
    return value


def _key(table: str, name: str) -> str:
    """The key ``name`` of the table at ``table`` ("": the document), as TOML writes it."""
    return f"{table}.{_toml_key(name)}" if table else _toml_key(name)


def _toml_key(name: str) -> str:
    """``name`` as a TOML key: bare where it may be, else a basic string."""
    if _BARE_KEY.fullmatch(name):
        return name
    import json  # noqa: PLC0415  (keys that need quotes are rare: start-up matters)

    return json.dumps(name, ensure_ascii=False)


def string_at(document: Mapping[str, Any], keys: tuple[str, ...], *, source: str) -> str:
    """The string at ``keys`` of a parsed TOML document, "" when it is not there.

    For settings read by name (another provider's extra key): what is never asked for is
    never checked, as the Go axe ignores keys it does not know.

    Raises:
        ConfigError: it is there but not a string, said as :func:`structure` says it.
    """
    value: Any = document
    for key in keys:
        value = value.get(key) if isinstance(value, Mapping) else None
    if value is None or isinstance(value, str):
        return value or ""
    where = ".".join(map(_toml_key, keys))
    raise ConfigError(
        f"invalid config {source}: {where}: expected a string, got {_describe(value)}"
    )


def structure(data: Mapping[str, Any], kind: type[T], *, source: str) -> T:
    """``data`` as a ``kind``; unknown keys are ignored, wrong types are errors.

    Raises:
        ConfigError: a value has the wrong type; the message names ``source`` and the key.
    """
    try:
        return typing.cast(T, _structured(data, kind))
    except _WrongValueError as problem:
        raise ConfigError(f"invalid config {source}: {problem}") from None


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
        text = raw.decode("utf-8").removeprefix("\ufeff")  # a BOM, as the Go axe allows
    except UnicodeDecodeError as error:
        raise ConfigError(
            f"cannot parse {path}: not UTF-8 text (invalid byte at offset {error.start})"
        ) from None
    import tomllib  # noqa: PLC0415  (only once a file was found: a missing agent needs none)

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"cannot parse {path}: {error}") from None
    except (ValueError, RecursionError):  # past what Python reads: an integer of over 4,300
        # digits, arrays or tables nested about a thousand deep
        raise ConfigError(f"cannot parse {path}: a number or a nesting too large") from None
