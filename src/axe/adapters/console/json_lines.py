"""``--json``: one JSON object per agent per line, built from its :class:`AgentResult` alone,
so it says the same alone, in ``--all`` or under ``--jobs``; the schema (docs/json.md) only
ever gains keys."""

from __future__ import annotations

import json
import re
from typing import Any

from axe.adapters.console.lines import error_text
from axe.domain.budget import Estimate
from axe.domain.results import AgentResult, Usage
from axe.domain.safe_text import BIDI_CONTROLS, escaped_line

_UNESCAPED_CONTROLS = re.compile(f"[\x7f-\x9f\u2028\u2029{BIDI_CONTROLS}]")  # json.dumps keeps


def result_object(result: AgentResult) -> dict[str, Any]:
    analysis = result.analysis
    spent = analysis or result.spent  # a failed analysis still says what it sent
    usage = spent.usage if spent else None
    return (
        {
            "agent": result.agent,
            "status": result.status.value,
            "entries": result.entries,
            "removed": result.removed,
            "kept": result.kept,
            "limit": result.limit,
            "model": str(result.model) if result.model else None,
            "analysis": analysis.text if analysis else None,
            "usage": _usage(usage) if usage else None,
            "parts": spent.parts if spent else None,
            "requests": spent.requests if spent else None,
            "error": escaped_line(error_text(result.error)) if result.error else None,
            "exit_code": result.exit_code,
            "budget_max_tokens": result.budget.max_tokens if result.budget else None,
            "budget_used_tokens": result.budget_used if result.budget else None,
            "analysed_entries": result.analysed_entries,
        }
        | _estimate(result.estimate)
        | ({"warnings": [*map(escaped_line, result.warnings)]} if result.warnings else {})
    )


def _estimate(estimate: Estimate | None) -> dict[str, Any]:
    """``--estimate``'s figures, in the objects of ``"status": "estimated"`` alone."""
    if estimate is None:
        return {}
    return {
        "estimated_requests": estimate.requests,
        "estimated_input_tokens": estimate.input_tokens,
        "estimated_output_tokens": estimate.output_tokens,
        "likely_input_tokens": estimate.likely_input_tokens,
        "input_window_tokens": estimate.window,
        "input_window_source": estimate.window_source.value if estimate.window_source else None,
        "input_tokens_counted": estimate.counted,
        "budget_for_every_entry": None if estimate.offline else estimate.all_entries,
        "budget_for_newest_entry": estimate.one_entry,
    }


def _usage(usage: Usage) -> dict[str, Any]:
    """Tokens in and out; ``cost`` only where the reply stated it (OpenRouter, Requesty)."""
    tokens = {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens}
    return tokens if usage.cost is None else {**tokens, "cost": usage.cost}


def result_line(result: AgentResult) -> str:
    """The result as one line of JSON, safe to print on a terminal: ``json.dumps`` leaves
    DEL, the C1 range and the bidirectional overrides raw, so they are escaped here too."""
    text = json.dumps(result_object(result), ensure_ascii=False)
    return _UNESCAPED_CONTROLS.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
