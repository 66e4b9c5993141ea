"""The token budget's values: the budget and what ``--estimate`` found."""

from __future__ import annotations

from attrs import frozen

from axe.domain.window import WindowSource


@frozen
class Budget:
    """The most tokens, input plus output, one agent's analysis may spend, set by
    ``--max-tokens`` (``flag``) or else by the agent's file at ``source``."""

    max_tokens: int
    flag: bool
    source: str = ""


@frozen(kw_only=True)
class Estimate:
    """What analysing one agent's log would send (``--estimate``, docs/cost.md):
    ``input_tokens`` at most (what a budget counts), ``likely_input_tokens`` about what a
    provider counts; ``all_entries`` (``one_entry``): the smallest budget that analyses
    every entry (the newest); ``offline``: the model answers here, for no token."""

    window: int | None = None
    window_source: WindowSource | None = None
    requests: int = 0
    merges: int = 0
    most_requests: int = 0
    input_tokens: int = 0
    likely_input_tokens: int = 0
    output_tokens: int = 0
    analysed: int | None = None
    all_entries: int = 0
    one_entry: int | None = None
    offline: bool = False
    counted: bool = False
