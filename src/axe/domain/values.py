"""What every value class shares, written once instead of generated for each class.

attrs compiles a ``__repr__``, an ``__eq__`` and a ``__hash__`` from source for each class it
decorates: 60 % of the cost of defining one (170 of 280 µs here), and a run of ``axe gc``
defines some forty before it reads a file. A class declared ``@frozen(repr=False, eq=False)``
on :class:`Value` keeps all else attrs gives it (``__init__``, slots, immutability,
``__match_args__``, ``attrs.evolve``) and reads, compares and hashes as it did:
``MemoryRead(agent='a', entries=3, size=120)``, equal to a value of its own class with equal
fields, hashed consistently with that.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    import attrs


class Value:
    """Base of the attrs value classes: attrs' repr and equality, read from the fields."""

    __slots__ = ()
    if TYPE_CHECKING:  # set by attrs on each class; hidden from typing.get_type_hints
        __attrs_attrs__: ClassVar[tuple[attrs.Attribute[Any], ...]]

    def _field_values(self) -> tuple[Any, ...]:
        """The fields equality compares (``field(eq=False)`` leaves one out), each through
        its own key where it has one (``field(eq=str.lower)``)."""
        return tuple(
            _compared(field, getattr(self, field.name))
            for field in self.__attrs_attrs__
            if field.eq
        )

    def __repr__(self) -> str:
        shown = ", ".join(
            f"{field.name}={_shown(field, getattr(self, field.name))}"
            for field in self.__attrs_attrs__
            if field.repr is not False
        )
        return f"{type(self).__qualname__.rsplit('>.', 1)[-1]}({shown})"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._field_values() == other._field_values()

    def __hash__(self) -> int:
        return hash((self.__class__, self._field_values()))


def _shown(field: attrs.Attribute[Any], value: object) -> str:
    """``value`` as attrs' repr shows the field: ``repr`` or the field's own function."""
    return field.repr(value) if callable(field.repr) else repr(value)


def _compared(field: attrs.Attribute[Any], value: object) -> object:
    """``value`` as attrs' equality compares the field: itself, or its ``eq`` key."""
    key = field.eq_key  # type: ignore[attr-defined]  # attrs sets it; its stubs omit it
    return key(value) if key else value
