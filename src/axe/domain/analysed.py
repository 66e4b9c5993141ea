"""The decision behind ``--skip-unchanged``, on exact bytes, not entry counts or times:
anything that cannot be told apart from a change counts as one, so a skip never hides text
gc has not analysed."""

from __future__ import annotations

import hashlib
from typing import NamedTuple

from attrs import frozen

from axe.domain.model import ModelRef


def digest(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


class Narrowed(NamedTuple):
    """A budget that left the oldest entries out: the newest ``entries`` were analysed."""

    budget: int
    entries: int


@frozen(kw_only=True)
class AnalysedMemory:
    """gc analysed a memory file with ``model`` at ``at`` (epoch seconds) and left bytes of
    this ``size`` and ``sha256`` there; ``analysed``: the newest entries a ``budget``
    covered (None: every entry)."""

    size: int
    sha256: str
    model: str
    at: float
    budget: int | None = None
    analysed: int | None = None

    @classmethod
    def of(
        cls, left: bytes, *, model: ModelRef, at: float, narrowed: Narrowed | None = None
    ) -> AnalysedMemory:
        budget, analysed = narrowed or (None, None)
        size, sha256 = len(left), digest(left)
        return cls(
            size=size, sha256=sha256, model=str(model), at=at, budget=budget, analysed=analysed
        )

    def holds(self, content: bytes, model: ModelRef, budget: int | None) -> bool:
        """Whether ``content`` is byte for byte what gc left for ``model`` (and ``budget``, if
        it left entries out: another could cover more)."""
        return (
            self.size == len(content)
            and self.model == str(model)
            and (self.analysed is None or self.budget == budget)
            and self.sha256 == digest(content)
        )
