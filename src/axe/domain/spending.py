"""What one agent's analysis sent and what it cost, whatever came of it.

Apart from ``results.py`` so that runs which never analyse (a missing agent, memory
disabled) do not define it at start-up.
"""

from __future__ import annotations

from attrs import frozen

from axe.domain.results import Usage


@frozen(kw_only=True)
class Spent:
    """What one agent's analysis sent and what it cost, whatever came of it: the bill of a
    failed analysis counts too.

    ``requests`` counts every HTTP request that went out (refused, failed and retried
    ones included: each may have been billed); ``usage`` sums what the replies reported;
    ``parts`` is None unless the log was split, then the parts analysed so far.
    """

    usage: Usage | None = None
    requests: int = 0
    parts: int | None = None
