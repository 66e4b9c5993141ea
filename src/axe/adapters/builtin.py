"""The offline analyst: ``--model builtin/heuristic``; no key, no network, no request."""

from __future__ import annotations

from axe.application.ports import AnalysisRequest
from axe.domain.errors import AgentError
from axe.domain.heuristic import analyse
from axe.domain.model import quoted
from axe.domain.results import Completion

HEURISTIC_MODEL = "heuristic"


class HeuristicAnalyst:
    """An ``LLMClient`` that writes the three-section report from the log's own structure."""

    def complete(self, request: AnalysisRequest) -> Completion:
        if request.model.name != HEURISTIC_MODEL:
            raise AgentError(
                f"unknown builtin model {quoted(request.model.name)} (available: heuristic)"
            )
        return Completion(analyse(request.content, request.memory_config))

    def input_limit(self, request: AnalysisRequest) -> int | None:
        """No window: the offline analyst reads a log of any size, so it is never split."""
        return None
