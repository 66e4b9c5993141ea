"""What gc left in a memory file when it last analysed it, and whether the file still holds
exactly that: the decision behind ``--skip-unchanged``, on bytes and a model name alone.

Exact bytes, not entry counts or times: an entry ``axe run`` appended changes the size, an
edit in the middle (same size) changes the digest, and anything that cannot be told apart
from a change counts as one, so a skip never hides text gc has not analysed.
"""

from __future__ import annotations

import hashlib

from attrs import frozen

from axe.domain.model import ModelRef


def digest(content: bytes) -> str:
    """The SHA-256 of ``content``, in hex: what a record compares instead of the bytes."""
    return hashlib.sha256(content).hexdigest()


@frozen(kw_only=True)
class AnalysedMemory:
    """gc analysed a memory file with ``model`` (``provider/model-name``) at ``at`` (seconds
    since the epoch, from the run's clock) and left ``size`` bytes there whose SHA-256 is
    ``sha256``: after a trim, the kept tail it wrote; otherwise the bytes it analysed. When a
    token budget of ``budget`` tokens left the oldest out, ``analysed`` is how many of the
    newest entries the analysis covered (None: every entry)."""

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
        narrowed = analysed is not None
        return cls(
            size=len(left),
            sha256=digest(left),
            model=str(model),
            at=at,
            budget=budget if narrowed else None,
            analysed=analysed,
        )

    def holds(self, content: bytes, model: ModelRef, budget: int | None) -> bool:
        """Whether ``content`` is byte for byte what gc left, ``model`` the model that
        analysed it and, if a budget left entries out, ``budget`` that very budget: only
        then is there nothing new to analyse (another budget could cover more). The size
        and the model are compared first, so a grown log costs no digest."""
        return (
            self.size == len(content)
            and self.model == str(model)
            and (self.analysed is None or self.budget == budget)
            and self.sha256 == digest(content)
        )
