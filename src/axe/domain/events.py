"""What happens during gc, as frozen facts emitted through ``Output``; no event carries a
sentence, and each names its agent so listeners can follow several at once."""

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
    """``./axe/agents``, or one file in it, was left out: another user may have written it."""

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
    """Another gc (pid ``holder``, if known) holds the memory file; this one waits."""

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
    """No line starts with ``## ``: gc still analyses the text, as the spec says."""

    agent: str
    size: int


@frozen
class MemoryUnchanged:
    """``--skip-unchanged``: the file holds exactly what gc left there for this model."""

    agent: str
    since: AnalysedMemory


@frozen
class RecordNotKept:
    """``--skip-unchanged``: the record of this analysis could not be kept (``reason``)."""

    agent: str
    reason: str


@frozen
class TrimWarning:
    """The trim happened, but a writer still holds the old file open (``warning``)."""

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
    """The provider, which counts for free, did not: gc's own estimate, which errs high, stands."""

    agent: str
    provider: str
    reason: str


@frozen
class AnalysisNarrowed:
    """``budget`` pays for only the newest ``analysed`` of the ``entries``."""

    agent: str
    budget: Budget
    analysed: int
    entries: int


@frozen
class AnalysisSplit:
    """The log is analysed in about ``parts`` parts (said again as the plan changes), merged."""

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
    """``reports`` part reports are being merged (in rounds, if they do not fit)."""

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
    """With ``--jobs``: ``done`` of ``total`` agents reported, ``running`` at work now."""

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
