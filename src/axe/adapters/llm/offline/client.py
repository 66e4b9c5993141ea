"""The offline analyst, the client of the catalogue's ``builtin`` row, which serves
``heuristic`` alone; no key, no network, no request, no window (a log of any size is read
whole, never split)."""

from __future__ import annotations

from axe.adapters.llm.offline import analyse
from axe.application.ports import AnalysisRequest
from axe.domain.results import Completion


class HeuristicAnalyst:
    """The client that writes the three-section report from the log's own structure."""

    def complete(self, request: AnalysisRequest) -> Completion:
        return Completion(analyse(request.content, request.memory_config), sent=0)  # no request

    def input_limit(self, request: AnalysisRequest) -> int | None:
        """No window: the offline analyst reads a log of any size, so it is never split."""
        return None
