"""The client of the catalogue's ``builtin`` row (``heuristic``): the offline analyst, which
needs no key and no network, sends no request and has no window."""

from __future__ import annotations

from axe.adapters.llm.offline import analyse
from axe.application.ports import AnalysisRequest
from axe.domain.results import Completion


class HeuristicAnalyst:
    """The client that writes the three-section report from the log's own structure."""

    def complete(self, request: AnalysisRequest) -> Completion:
        return Completion(analyse(request.content, request.memory_config), sent=0)  # no request

    def input_limit(self, request: AnalysisRequest) -> int | None:
        return None  # no window: a log of any size is read whole, never split
