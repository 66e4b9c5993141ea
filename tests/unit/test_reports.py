"""What a split analysis adds up and sends: summed usage, and the merge request's text."""

from __future__ import annotations

import pytest

from axe.domain.prompt import merge_content
from axe.domain.results import Completion, Spent, Usage


@pytest.mark.parametrize(
    ("usages", "total"),
    [
        ([], None),
        ([None, None], None),
        ([Usage(10, 2)], Usage(10, 2)),
        ([Usage(10, 2), None, Usage(5, 1)], Usage(15, 3)),
        ([Usage(10, 2, 0.5), Usage(5, 1, 0.25)], Usage(15, 3, 0.75)),
        ([Usage(10, 2, 0.5), Usage(5, 1)], Usage(15, 3, 0.5)),
        ([Usage(10, 2), Usage(5, 1, 0.25)], Usage(15, 3, 0.25)),
        ([Usage(1, 1), Usage(2, 2), Usage(3, 3, 1.0)], Usage(6, 6, 1.0)),
    ],
)
def test_usage_of_a_split_analysis_is_the_sum_of_what_was_reported(
    usages: list[Usage | None], total: Usage | None
) -> None:
    """Tokens in and out add up over every reply that reported them; a cost is the sum of
    the costs stated, and absent when no reply stated one."""
    spent = Spent()
    for usage in usages:
        spent = spent.counting(Completion("report", usage), part=True)
    assert spent.usage == total


def test_the_merge_request_heads_each_report_with_what_it_covers() -> None:
    """Each part report goes to the merge numbered, with its entries and timestamps, its
    own surrounding blank lines trimmed; text that is not UTF-8 is replaced, not refused."""
    content = merge_content(
        [("entries 1-2, t1 to t2", "\n## Patterns Found\nA\n\n"), ("entry 3, t3", "B \ud800")],
        2,
    )
    assert content == (
        b"### Report 1 of 2 (entries 1-2, t1 to t2)\n\n## Patterns Found\nA\n"
        b"\n### Report 2 of 2 (entry 3, t3)\n\nB ?\n"
    )
