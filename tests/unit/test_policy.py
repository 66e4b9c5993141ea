"""Trim target resolution, gc-spec §5.5, row by row."""

from __future__ import annotations

import pytest

from axe.domain.model import MemoryConfig
from axe.domain.policy import trim_target


@pytest.mark.parametrize(
    ("last_n", "max_entries", "target"),
    [(5, 100, 5), (5, 0, 5), (0, 100, 100), (0, 0, None), (10, 5, 10), (1, 0, 1), (0, 1, 1)],
)
def test_trim_target_table(last_n: int, max_entries: int, target: int | None) -> None:
    """last_n wins when above 0, else max_entries when above 0, else nothing is trimmed."""
    memory = MemoryConfig(enabled=True, last_n=last_n, max_entries=max_entries)
    assert trim_target(memory) == target
