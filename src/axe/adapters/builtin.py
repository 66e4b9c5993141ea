"""The offline analyst: ``--model builtin/heuristic``; no key, no network, no request."""

from __future__ import annotations

from axe.adapters.analyst import analyse
from axe.application.ports import AnalysisRequest
from axe.domain.errors import AgentError
from axe.domain.model import quoted

HEURISTIC_MODEL = "heuristic"


class HeuristicAnalyst:
    """An ``LLMClient`` that writes the three-section report from the log's own structure."""

    def complete(self, request: AnalysisRequest) -> str:
        if request.model.name != HEURISTIC_MODEL:
            raise AgentError(
                f"unknown builtin model {quoted(request.model.name)} (available: heuristic)"
            )
        return analyse(request.memory, request.memory_config)
