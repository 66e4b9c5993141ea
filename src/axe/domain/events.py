"""What happens during gc, as small frozen facts the use case emits through ``Output``; a
listener decides what to make of them. No event carries a sentence; each names its agent so
listeners can follow several at once."""

from __future__ import annotations

import enum

from attrs import frozen

from axe.domain.analysed import AnalysedMemory
from axe.domain.budget import Budget
from axe.domain.errors import AxeError
from axe.domain.model import ModelRef
from axe.domain.results import AgentResult, Analysis, SweepResult


@frozen
class SweepStarted:
    """``--all`` found these memory-enabled agents (in name order; possibly none)."""

    agents: tuple[str, ...]


class Exposure(enum.Enum):
    """Why agent definitions in the working directory were not trusted."""

    OWNER = "owner"  # they belong to another user
    WRITABLE = "writable"  # other users may write them
    UNCHECKED = "unchecked"  # who may write them cannot be told (Windows, outside the profile)


@frozen
class AgentsIgnored:
    """``./axe/agents`` under the working directory, or one file in it, was left out, as
    another user may have written it: ``owner`` is the user id that owns it (``OWNER``),
    ``mode`` its permission bits (``WRITABLE``)."""

    path: str
    why: Exposure
    owner: int | None = None
    mode: int | None = None


@frozen
class NoAgentsDirectory:
    """``--all`` found none of the directories agents are kept in; it looked in these."""

    searched: tuple[str, ...]


@frozen
class AgentSkipped:
    """``--all`` left out an agent whose file does not load; the sweep goes on."""

    agent: str
    error: AxeError


@frozen
class AgentStarted:
    """gc began on an agent; ``in_sweep`` when it is one of ``--all``'s agents."""

    agent: str
    in_sweep: bool


@frozen
class WaitingForLock:
    """Another gc holds the agent's memory file (``holder`` is its pid, if known); this
    one waits for it to finish, then reads the file as that run left it."""

    agent: str
    holder: int | None


@frozen
class MemoryRead:
    """The agent's memory file was read: ``entries`` entries in ``size`` bytes."""

    agent: str
    entries: int
    size: int


@frozen
class NoEntryHeadings:
    """The memory file holds text (``size`` bytes) but no line that starts with ``## ``,
    so it has no entries: gc still analyses the text, as the spec says, and trims nothing."""

    agent: str
    size: int


@frozen
class MemoryUnchanged:
    """``--skip-unchanged``: the memory file holds exactly what gc left there when it
    analysed it (``since``), for the model this run would use; it is neither analysed
    again nor trimmed."""

    agent: str
    since: AnalysedMemory


@frozen
class RecordNotKept:
    """``--skip-unchanged``: the record of this analysis could not be kept (``reason``, in
    the memory store's words), so the agent will be analysed on every run, unchanged or not."""

    agent: str
    reason: str


@frozen
class TrimWarning:
    """The trim happened, but something about it needs the user's attention (``warning``,
    in the memory store's words): a writer still holds the old file open."""

    agent: str
    warning: str


@frozen
class AnalysisStarted:
    """The analysis of ``entries`` entries was sent to ``model``; a slow step begins."""

    agent: str
    model: ModelRef
    entries: int


@frozen
class CountingUnavailable:
    """The provider of ``agent``'s model, which counts requests for free, did not count
    this run's (``reason``, in the LLM adapter's words: no key, an endpoint that failed), so
    the budget or the estimate rests on gc's own estimate, which errs high."""

    agent: str
    provider: str
    reason: str


@frozen
class AnalysisNarrowed:
    """The agent's ``budget`` cannot pay for analysing every entry, so only the newest
    ``analysed`` of its ``entries`` are analysed; said before anything is sent, and again
    should a refusal leave fewer affordable."""

    agent: str
    budget: Budget
    analysed: int
    entries: int


@frozen
class AnalysisSplit:
    """The log does not fit the model: it is analysed in about ``parts`` parts, then merged.

    The count is the plan's, not a promise: it is emitted again with the new count when
    replies calibrate the estimate (fewer, fuller parts) or a part is refused and split.
    """

    agent: str
    parts: int


@frozen
class PartAnalysed:
    """``done`` parts have their report, of the ``parts`` last announced."""

    agent: str
    done: int
    parts: int


@frozen
class MergeStarted:
    """``reports`` part reports are being merged into one (in rounds, if they do not fit)."""

    agent: str
    reports: int


@frozen
class AnalysisReady:
    """The report is in (merged from parts, if the log had to be split)."""

    agent: str
    analysis: Analysis


@frozen
class AgentFinished:
    """gc is done with one agent, however it ended."""

    result: AgentResult


@frozen
class SweepProgress:
    """With ``--jobs``: ``done`` of ``total`` agents reported, these ones at work now (for
    a live display; the agents' own events follow in name order)."""

    done: int
    total: int
    running: tuple[str, ...]


@frozen
class SweepFinished:
    """``--all`` is done with every agent."""

    result: SweepResult


Event = (
    AgentsIgnored
    | NoAgentsDirectory
    | SweepStarted
    | AgentSkipped
    | AgentStarted
    | WaitingForLock
    | MemoryRead
    | NoEntryHeadings
    | MemoryUnchanged
    | RecordNotKept
    | TrimWarning
    | AnalysisStarted
    | AnalysisNarrowed
    | CountingUnavailable
    | AnalysisSplit
    | PartAnalysed
    | MergeStarted
    | AnalysisReady
    | AgentFinished
    | SweepProgress
    | SweepFinished
)
