"""The decision behind ``--skip-unchanged``, on exact bytes, not entry counts or times:
anything that cannot be told apart from a change counts as one, so a skip never hides text
gc has not analysed."""

from __future__ import annotations

import hashlib

from attrs import frozen

from axe.domain.model import ModelRef


def digest(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


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
        cls,
        left: bytes,
        *,
        model: ModelRef,
        at: float,
        budget: int | None = None,
        analysed: int | None = None,
    ) -> AnalysedMemory:
        return cls(
            size=len(left),
            sha256=digest(left),
            model=str(model),
            at=at,
            budget=None if analysed is None else budget,
            analysed=analysed,
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
