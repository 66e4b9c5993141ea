"""Domain values read, compare and hash as attrs would generate them for each class."""

from __future__ import annotations

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from axe.domain.events import AgentStarted, MemoryRead
from axe.domain.values import Value

FIELD = st.one_of(st.none(), st.integers(), st.text(), st.tuples(st.text()))
FIELDS = st.tuples(FIELD, FIELD, FIELD, st.sampled_from([1, "1", 2]))


def _pair() -> tuple[type, type]:
    """A class on :class:`Value` and its twin with attrs' own generated methods: a field
    shown and compared, one never shown (a secret), one shown by its own function and left
    out of equality."""
    fields = {
        "a": attrs.field(),
        "secret": attrs.field(repr=False),
        "b": attrs.field(repr=lambda value: f"<{value!s}>", eq=False),
        "c": attrs.field(eq=str, default=""),  # compared by a key of its own
    }
    ours = attrs.make_class("Fact", fields, bases=(Value,), frozen=True, repr=False, eq=False)
    theirs = attrs.make_class("Fact", dict(fields), frozen=True)
    return ours, theirs


OURS, THEIRS = _pair()


@given(FIELDS, FIELDS)
def test_repr_equality_and_hash_are_attrs_own(
    one: tuple[object, ...], other: tuple[object, ...]
) -> None:
    """What a failing test prints and what equality an embedder's test asserts are the same
    as attrs generates: the repr byte for byte, equal exactly when the twin is, and equal
    values hash alike."""
    ours, theirs = OURS(*one), THEIRS(*one)
    assert repr(ours) == repr(theirs)
    assert (ours == OURS(*other)) == (theirs == THEIRS(*other))
    assert (ours != OURS(*other)) == (theirs != THEIRS(*other))
    if ours == OURS(*other):
        assert hash(ours) == hash(OURS(*other))


def test_values_of_different_classes_are_never_equal_and_stay_frozen() -> None:
    """Two events with the same fields are different facts, and a value cannot be changed."""
    assert AgentStarted("a", in_sweep=False) != ("a", False)
    assert MemoryRead("a", 1, 2) != OURS("a", 1, 2)
    assert MemoryRead("a", 1, 2) == MemoryRead("a", 1, 2)
    assert repr(MemoryRead("a", 1, 2)) == "MemoryRead(agent='a', entries=1, size=2)"
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        MemoryRead("a", 1, 2).agent = "b"  # type: ignore[misc]


def test_a_class_defined_inside_a_function_is_shown_by_its_own_name() -> None:
    """A value class an embedder's test defines in a function (in a function, here) shows
    as attrs shows it: its own name, without the ``<locals>`` path before it."""
    ours = attrs.make_class("Local", ["a"], bases=(Value,), repr=False, eq=False)
    theirs = attrs.make_class("Local", ["a"])
    for made in (ours, theirs):  # as Python names a class defined in inner() in outer()
        made.__qualname__ = "outer.<locals>.inner.<locals>.Local"
    assert repr(ours(1)) == repr(theirs(1)) == "Local(a=1)"


def test_values_that_differ_are_spread_over_hashes() -> None:
    """Sets and dicts of values (an embedder's, the planner's) stay fast: a hundred
    different values do not all hash alike."""
    assert len({hash(MemoryRead("a", n, n)) for n in range(100)}) > 50
