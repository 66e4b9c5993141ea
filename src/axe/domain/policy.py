"""Which trim target an agent's memory settings give (gc-spec Requirement 3.11, §5.5)."""

from __future__ import annotations

from axe.domain.model import MemoryConfig


def trim_target(memory: MemoryConfig) -> int | None:
    """``last_n`` when positive, else ``max_entries`` when positive, else None (no trim):
    ``last_n = 0`` means "load all entries" for ``axe run``, so it cannot mean "keep none"."""
    if memory.last_n > 0:
        return memory.last_n
    if memory.max_entries > 0:
        return memory.max_entries
    return None
