"""The offline analyst as an ``LLMClient``: ``--model builtin/heuristic``; no key, no
network, no request, no window (a log of any size is read whole, never split)."""

from __future__ import annotations

from axe.adapters.llm.offline import analyse
from axe.application.ports import AnalysisRequest
from axe.domain.errors import AgentError
from axe.domain.model import quoted
from axe.domain.results import Completion

HEURISTIC_MODEL = "heuristic"


def check_model_name(name: str) -> None:
    """Raises AgentError unless ``name`` is a built-in model (``builtin/heuristic``)."""
    if name != HEURISTIC_MODEL:
        raise AgentError(f"unknown builtin model {quoted(name)} (available: heuristic)")


class HeuristicAnalyst:
    """An ``LLMClient`` that writes the three-section report from the log's own structure."""

    def complete(self, request: AnalysisRequest) -> Completion:
        check_model_name(request.model.name)
        return Completion(analyse(request.content, request.memory_config), sent=0)  # no request

    def input_limit(self, request: AnalysisRequest) -> int | None:
        """No window: the offline analyst reads a log of any size, so it is never split."""
        return None
