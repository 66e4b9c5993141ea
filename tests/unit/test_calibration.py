"""How a provider's own counts bound the size of the next requests, number for number.

Classes are the estimate by kind of text, in ``token_classes``' order: word starts,
letters, number starts, digits, spaces, runs of spaces, one-token bytes.
"""

from __future__ import annotations

import pytest

from axe.domain.tokens import Calibration

PROSE_AND_SYMBOLS = (10.0, 0.0, 0.5, 0.0, 0.0, 0.0, 10.0)


@pytest.mark.parametrize(
    ("sample", "tokens", "text", "bound"),
    [
        # Counted at half its estimate: the text's kinds the sample saw least of (per
        # token) are spent first; kinds it never saw keep their whole estimate.
        (PROSE_AND_SYMBOLS, 10, (4.0, 2.0, 3.0, 0.0, 0.0, 0.0, 8.0), 12.6),
        # The sample's tokens run out with a fraction of one kind left for the next.
        ((10.0, 0, 0, 0, 0, 0, 10.0), 11, (4.0, 2.0, 0, 0, 0, 0, 8.0), 10.4),
        # Counted above its estimate: no bound below the estimate itself.
        ((10.0, 0, 0, 0, 0, 0, 0), 20, (1.0, 9.0, 0, 0, 0, 0, 0), 10.0),
        ((10.0, 0, 0, 0, 0, 0, 0), 20, (4.0, 0, 0, 0, 0, 0, 0), 4.0),
    ],
)
def test_a_counted_request_bounds_other_text_by_its_kinds(
    sample: tuple[float, ...], tokens: int, text: tuple[float, ...], bound: float
) -> None:
    """What another text can cost, given that a request estimated as ``sample`` cost
    ``tokens``: never more than its own estimate, and exactly the fractional-knapsack most."""
    assert Calibration().learnt(sample, tokens).bound(text) == pytest.approx(bound)
    assert Calibration().bound(text) == sum(text)


def test_the_typical_cost_follows_the_last_request_counted() -> None:
    """What a person is told a text likely costs: its estimate at the ratio of the last
    request the provider counted; the estimate itself before any was counted."""
    text = (3.0, 0, 0, 0, 0, 0, 4.0)
    assert Calibration().typical(text) == 7.0
    counted = Calibration().learnt(PROSE_AND_SYMBOLS, 10).learnt((1.0,) * 7, 14)
    assert counted.typical(text) == pytest.approx(14.0)


def test_only_the_last_eight_counted_requests_are_kept() -> None:
    """A long analysis keeps the eight latest counts, the oldest dropped first."""
    calibration = Calibration()
    for tokens in range(1, 10):
        calibration = calibration.learnt(PROSE_AND_SYMBOLS, tokens)
    assert [tokens for _classes, tokens in calibration.samples] == list(range(2, 10))


def test_the_least_cost_is_the_lowest_rate_seen_and_never_above_the_estimate() -> None:
    """The verdict that must not come early (a merge or a head that cannot fit) uses the
    lowest rate the provider counted at, and no more than the estimate itself even when
    every count so far was above it: a window is not refused for text that could fit."""
    text = (4.0, 2.0, 0, 0, 0, 0, 2.0)
    above = Calibration().learnt(PROSE_AND_SYMBOLS, 41)  # 2 times its estimate of 20.5
    assert above.least(text) == 8.0
    both = above.learnt(PROSE_AND_SYMBOLS, 10)
    assert both.least(text) == pytest.approx(8.0 * 10 / 20.5)
    assert Calibration().least(text) == 8.0
