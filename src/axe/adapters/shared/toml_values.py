"""Turn parsed TOML into attrs values, as strictly as the Go axe's TOML decoder does.

cattrs by default coerces (``int("10")``, ``int(True)``); a config with ``last_n = "ten"``
or ``enabled = "yes"`` must instead be a config error that names the key, so the primitive
hooks here accept only the TOML type that was meant, and integers only within TOML's
64-bit range. Errors speak TOML: the full dotted key (``providers.openai.base_url``) and
the value as it is written in the file (``true``, ``"ten"``).
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import attrs

from axe.adapters.shared.reading import describe_os_error, read_regular
from axe.domain.errors import ConfigError

if TYPE_CHECKING:
    import cattrs

T = TypeVar("T")

_MAX_CONFIG_BYTES = 4 * 1024 * 1024
_TYPE_NAMES = {int: "an integer", bool: "true or false", str: "a string", float: "a number"}
_INT64 = range(-(2**63), 2**63)
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def _strict(kind: type[Any]) -> Any:
    def structure(value: Any, _: Any) -> Any:
        if kind is float and type(value) is int:
            return float(value)
        if type(value) is not kind:
            raise ValueError(f"expected {_TYPE_NAMES[kind]}, got {_describe(value)}")
        if kind is int and value not in _INT64:
            raise ValueError(f"{value} is outside TOML's 64-bit integer range")
        return value

    return structure


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


@functools.cache
def _converter() -> cattrs.Converter:
    """Built on first use: cattrs is only imported once a TOML file has actually been read.

    cattrs would quietly build from the wrong container (a string iterates as a list, a
    table built from a string gets defaults); in TOML a table must be a table, so each of
    its hooks for tables and arrays is wrapped in a check of what it is given."""
    import cattrs  # noqa: PLC0415
    from cattrs.cols import list_structure_factory, mapping_structure_factory  # noqa: PLC0415
    from cattrs.gen import make_dict_structure_fn  # noqa: PLC0415

    converter = cattrs.Converter(forbid_extra_keys=False)
    for kind in (int, bool, str, float):
        converter.register_structure_hook(kind, _strict(kind))

    def checked(factory: Any, container: type[Any], expected: str) -> Any:
        def hook(kind: Any) -> Any:
            build = factory(kind, converter)

            def structure(value: Any, _: Any) -> Any:
                if not isinstance(value, container):
                    raise ValueError(f"expected {expected}, got {_describe(value)}")
                return build(value, kind)

            return structure

        return hook

    for matches, factory, container, expected in (
        (attrs.has, make_dict_structure_fn, Mapping, "a table"),
        (_origin_is(dict), mapping_structure_factory, Mapping, "a table"),
        (_origin_is(list), list_structure_factory, list, "an array"),
    ):
        converter.register_structure_hook_factory(matches, checked(factory, container, expected))
    return converter


def _origin_is(origin: type[Any]) -> Callable[[Any], bool]:
    return lambda kind: getattr(kind, "__origin__", None) is origin


def _first_problem(error: Exception) -> str:
    import cattrs  # noqa: PLC0415

    def fmt(exc: BaseException, _type: Any) -> str:
        if isinstance(exc, KeyError):
            return "is required"
        if isinstance(exc, (TypeError, AttributeError)):
            return "has the wrong type"
        return str(exc)

    messages = cattrs.transform_error(error, path="", format_exception=fmt)
    message = messages[0] if messages else str(error)
    text, _, where = message.rpartition(" @ ")
    key = _toml_path(where)
    return f"{key}: {text}" if key else text


_PATH_STEP = re.compile(r"\.([^.\[]+)|\[(\d+)\]|\[('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")\]")


def _toml_path(where: str) -> str:
    """cattrs' ``.memory.last_n`` or ``.providers['openai'].base_url`` as TOML writes the
    key: ``memory.last_n``, ``providers.openai.base_url``, ``files[2]``."""
    import ast  # noqa: PLC0415  (error paths only: start-up matters)

    path = ""
    for attribute, index, key in _PATH_STEP.findall(where):
        if index:
            path += f"[{index}]"
        else:
            written = _toml_key(attribute or ast.literal_eval(key))
            path += f".{written}" if path else written
    return path


def _toml_key(name: str) -> str:
    """``name`` as a TOML key: bare where it may be, else a basic string."""
    import json  # noqa: PLC0415  (error paths only: start-up matters)

    return name if _BARE_KEY.fullmatch(name) else json.dumps(name, ensure_ascii=False)


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
    import cattrs  # noqa: PLC0415

    try:
        return _converter().structure(data, kind)
    except (cattrs.BaseValidationError, ValueError, TypeError, AttributeError) as error:
        raise ConfigError(f"invalid config {source}: {_first_problem(error)}") from None


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
