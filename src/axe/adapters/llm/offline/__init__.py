"""The offline analyst (``--model builtin/heuristic``): the gc report, worked out from the log.

The client of the catalogue's ``builtin`` row: it needs no key, no network and no context
window, so it is the way out for logs no model can hold. It reads the ``**Task:**`` /
``**Result:**`` entries ``axe run`` writes (and copes with entries that have neither), and is:

- linear in time and memory: one pass leaves a few integers per entry
  (:mod:`~axe.adapters.llm.offline.columns`); repeats are found with bounded counters, never a
  table of every task (:mod:`~axe.adapters.llm.offline.grouping`);
- deterministic: the same bytes and settings give the same report in every process, since
  fingerprints are BLAKE2b and every order is decided by content;
- total: any bytes give a well-formed report, never an exception.

``reading`` finds an entry's pieces on the bytes, ``wording`` reduces a Task line to
fingerprints, ``counting`` holds the bounded counters, ``rhythm`` reads the timestamps, and
``report`` writes every sentence the user sees.
"""

from __future__ import annotations

from attrs import frozen

from axe.adapters.llm.offline.columns import scan
from axe.adapters.llm.offline.counting import SLOTS_PER_VALUE
from axe.adapters.llm.offline.grouping import main_kinds, recurring_failures, repeated_tasks
from axe.adapters.llm.offline.report import Findings, write_report
from axe.adapters.llm.offline.rhythm import rhythm
from axe.adapters.llm.offline.wording import LINE_MEMO_LIMIT, WORD_MEMO_LIMIT, WordBook
from axe.domain.model import MemoryConfig

__all__ = ["Tuning", "analyse"]


@frozen
class Tuning:
    """How much memory the analyst spends to save time: sizes of its filters and memos.

    They change how long an analysis takes and how much it holds, never what it says;
    the tests run the analyst with tiny values to keep that promise.
    """

    slots_per_value: int = SLOTS_PER_VALUE
    word_memo: int = WORD_MEMO_LIMIT
    line_memo: int = LINE_MEMO_LIMIT


def analyse(memory: bytes, settings: MemoryConfig | None = None, tuning: Tuning = Tuning()) -> str:
    """The report for ``memory``, with the headings and fallbacks of the gc prompt."""
    columns = scan(memory, WordBook(word_limit=tuning.word_memo, line_limit=tuning.line_memo))
    findings = Findings(
        entries=len(columns),
        tasks=columns.tasks,
        kinds=main_kinds(columns),
        groups=repeated_tasks(columns, slots_per_value=tuning.slots_per_value),
        failures=recurring_failures(columns, slots_per_value=tuning.slots_per_value),
        rhythm=rhythm(columns),
        truncated=columns.truncated,
        without_task=columns.without_task,
    )
    return write_report(findings, settings or MemoryConfig())
