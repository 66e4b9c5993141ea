"""The token budget's values: the budget and what ``--estimate`` found. Kept apart from
the planning that uses them (:mod:`axe.domain.spending`), and imported only by what makes
them, so that a run with no budget and no estimate loads none of it (start-up matters for
cron runs over many agents); the results and events that carry them name them only for the
type checker.
"""

from __future__ import annotations

from attrs import frozen

from axe.domain.window import WindowSource


@frozen
class Budget:
    """The most tokens, input plus output, one agent's analysis may spend: ``max_tokens``,
    set by ``--max-tokens`` (``flag``) or else by ``[budget] max_tokens`` in the agent's
    file at ``source`` (its path; "" when the repository has none)."""

    max_tokens: int
    flag: bool
    source: str = ""


@frozen(kw_only=True)
class Estimate:
    """What analysing one agent's log would send (``--estimate``), told by driving its plan
    with assumed answers, nothing sent (docs/cost.md).

    ``window``: the input tokens one request may carry, as known before sending (None:
    unknown until a provider refuses), and ``window_source``, where that was learnt;
    ``requests``, of which ``merges`` merge part reports, what a run that is refused nothing
    makes, and ``most_requests``, as many as the budget makes room for; ``input_tokens`` at
    most (the figure a budget counts) and ``likely_input_tokens``, about what a provider
    counts (both the provider's own count where ``counted``); ``output_tokens``, the replies
    a budget makes room for; ``analysed``, the entries the analysis would cover (None: none,
    the budget being too small); ``all_entries``, the smallest budget that analyses every
    entry; ``one_entry``, when the budget is too small for any, the smallest that analyses
    the newest; ``offline``: the model answers here, for no token.
    """

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
