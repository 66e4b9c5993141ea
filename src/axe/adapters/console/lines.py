"""Every sentence a user reads during gc, for each event (gc-spec §3.3, §3.5), kept apart
from the terminal's mechanics so the wording can be read and tested in one place."""

from __future__ import annotations

import enum
import time
from collections.abc import Callable
from typing import assert_never

from attrs import frozen

from axe.domain import errors, events
from axe.domain.budget import Budget, Estimate
from axe.domain.model import quoted
from axe.domain.results import AgentResult, AgentStatus, SweepResult
from axe.domain.window import WindowSource


class Stream(enum.Enum):
    OUT = "stdout"
    ERR = "stderr"


@frozen
class Line:
    """One line for one stream, without its newline."""

    stream: Stream
    text: str


def _out(*texts: str) -> list[Line]:
    return [Line(Stream.OUT, text) for text in texts]


def _err(text: str) -> list[Line]:
    return [Line(Stream.ERR, text)]


_OUTCOME: dict[AgentStatus, Callable[[AgentResult], str]] = {
    AgentStatus.EMPTY: lambda r: f"No memory entries for agent {quoted(r.agent)}. Nothing to do.",
    AgentStatus.DRY_RUN: lambda r: "Dry run: no entries trimmed.",
    AgentStatus.NO_TARGET: lambda r: (
        "No trim target configured (last_n and max_entries are both 0). Skipping trim."
    ),
    AgentStatus.WITHIN_LIMIT: lambda r: (
        f"No trimming needed: {r.entries} entries within limit ({r.limit})."
    ),
    AgentStatus.TRIMMED: lambda r: f"Trimmed: {r.removed} entries removed, {r.kept} entries kept.",
}


_Warning = (
    events.AgentSkipped
    | events.AgentsIgnored
    | events.NoAgentsDirectory
    | events.NoEntryHeadings
    | events.AnalysisNarrowed
    | events.RecordNotKept
    | events.TrimWarning
    | events.CountingUnavailable
)


class TextLines:
    """Turns events into the lines the Go axe prints, stream by stream; stateful only in
    that inside ``--all`` a failed agent is reported with its name, as spec 5.5 words it."""

    def __init__(self) -> None:
        self._in_sweep = False
        self._said: set[tuple[str, str]] = set()  # a provider that cannot count, said once

    def render(self, event: events.Event) -> list[Line]:
        if isinstance(event, _Warning):
            return self._warned(event)
        match event:
            case events.SweepStarted(agents=agents):
                self._in_sweep = True
                return [] if agents else _out("No agents with memory enabled.")
            case events.AgentStarted(agent=agent, in_sweep=in_sweep):
                return _out(f"=== GC: {agent} ===") if in_sweep else []
            case events.MemoryRead() | events.MemoryUnchanged():
                return _out(*_memory(event))
            case events.AnalysisReady(analysis=analysis):
                return _out("--- Analysis ---", analysis.text)
            case events.AgentFinished(result=result):
                return self._finished(result)
            case events.SweepFinished(result=sweep):
                self._in_sweep = False
                return _sweep_failures(sweep)
            case (
                events.WaitingForLock()
                | events.AnalysisStarted()
                | events.AnalysisSplit()
                | events.PartAnalysed()
                | events.MergeStarted()
                | events.SweepProgress()
            ):
                return []  # progress: the status line shows it, the Go axe prints nothing
            case _:
                assert_never(event)  # mypy: a new event must be given its lines here

    def _warned(self, event: _Warning) -> list[Line]:
        """One stderr line; that a provider does not count is said once a run for each
        provider and reason, however many agents it weighs."""
        if isinstance(event, events.CountingUnavailable):
            if (event.provider, event.reason) in self._said:
                return []
            self._said.add((event.provider, event.reason))
        return _err(_left_out(event))

    def _finished(self, result: AgentResult) -> list[Line]:
        if result.status is AgentStatus.DISABLED:
            return _err(
                f"Warning: agent {quoted(result.agent)} does not have memory enabled. Skipping."
            )
        if result.status is AgentStatus.UNCHANGED:
            return []  # MemoryUnchanged said it, with the time
        if result.error is not None:
            if self._in_sweep:
                failure = error_text(result.error)
                return _err(f"Error: gc failed for agent {quoted(result.agent)}: {failure}")
            return _err(error_text(result.error))
        if result.status is AgentStatus.ESTIMATED:
            return _out(*estimate_lines(result))
        return _out(_OUTCOME[result.status](result))


def estimate_lines(result: AgentResult) -> list[str]:
    """``--estimate``: after the spec's ``Agent:`` and ``Entries:`` lines, what gc would
    send: the model and its window, the requests, the tokens, what the budget allows."""
    estimate = result.estimate
    assert estimate is not None  # an estimated result carries its estimate
    if estimate.offline:
        return [
            f"Model: {result.model}, offline: it reads the log here, for no tokens",
            "Requests: none",
            "Input tokens: none",
            "Output tokens: none",
            "Budget: not needed, nothing is spent",
        ]
    requests = str(estimate.requests or "none")
    if estimate.requests > 1:  # parts, and the merges of their reports
        parts, merges = estimate.requests - estimate.merges, estimate.merges
        requests = f"about {requests} ({parts} parts, {merges} merge{'s' * (merges != 1)})"
    if estimate.most_requests > estimate.requests:
        requests += f", at most {estimate.most_requests}"
    sure, likely = estimate.input_tokens, estimate.likely_input_tokens
    if estimate.counted and not estimate.merges:
        sent = f"{sure:,}, the provider's own count"
    elif estimate.requests:
        counted = " (the parts as the provider counts them)" if estimate.counted else ""
        sent = f"{sure:,} at most, likely about {likely:,}{counted}"
    else:
        sent = "none"
    reply = f"{estimate.output_tokens:,} at most" if estimate.requests else "none"
    return [
        f"Model: {result.model}, {_window(estimate)}",
        f"Requests: {requests}",
        f"Input tokens: {sent}",
        f"Output tokens: {reply}",
        f"Budget: {_allowance(result)}",
    ]


def _window(estimate: Estimate) -> str:
    """The input window as sure as its source makes it."""
    if estimate.window is None:
        return "input window unknown until a request is refused"
    if estimate.window_source is WindowSource.PROVIDER:
        return (
            f"input window at most {estimate.window:,} tokens, the provider's largest; "
            "the model's may be smaller"
        )
    return f"input window {estimate.window:,} tokens"


def _allowance(result: AgentResult) -> str:
    """What the budget lets the analysis cover, and what every entry would need."""
    estimate, budget = result.estimate, result.budget
    assert estimate is not None
    needs = f" (every entry needs {estimate.all_entries:,} at most)"
    if budget is None:
        return f"unlimited{needs}"
    if estimate.one_entry is not None:
        covers = f"too small, the newest entry alone needs {estimate.one_entry:,}"
    elif estimate.analysed != result.entries:
        covers = f"the newest {estimate.analysed:,} of {result.entries or 0:,} entries"
    else:
        covers = "every entry"
    return f"{_budget(budget)}: {covers}{needs}"


def _budget(budget: Budget) -> str:
    """A budget and where it was set."""
    if budget.flag:
        where = "--max-tokens"
    else:
        where = f"[budget] max_tokens in {budget.source or 'the agent file'}"
    return f"{budget.max_tokens:,} tokens (from {where})"


def utc_time(seconds: float) -> str:
    """``seconds`` since the epoch as ``axe run`` stamps its entries: ``2026-11-25T03:15:00Z``."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def _memory(event: events.MemoryRead | events.MemoryUnchanged) -> list[str]:
    """What gc found in the memory file (the spec's two lines), and that it is unchanged."""
    if isinstance(event, events.MemoryRead):
        return [f"Agent: {event.agent}", f"Entries: {event.entries}"]
    since, at = event.since, utc_time(event.since.at)
    if since.analysed is not None and since.budget is not None:
        return [
            f"Unchanged since gc analysed its newest {since.analysed:,} entries under a budget "
            f"of {since.budget:,} tokens at {at}. Skipping analysis and trim."
        ]
    return [f"Unchanged since gc analysed it at {at}. Skipping analysis and trim."]


_LARGER = "use a model with a larger window, or --model builtin/heuristic"


def error_text(error: errors.AxeError) -> str:
    """The sentence for a failure: the facts the core reports as values are worded here (a
    window too small; a refusal that cannot be true of what was sent; where a model the
    provider does not know was named)."""
    if isinstance(error, errors.WindowTooSmallError):
        return _too_small(error)
    if isinstance(error, errors.BudgetTooSmallError):
        if error.spent:
            return (
                f"budget of {_budget(error.budget)} ran short: {error.spent:,} spent, and "
                f"analysing even the newest entry needs {error.needed:,} more; nothing was trimmed"
            )
        return (
            f"budget of {_budget(error.budget)} is too small: analysing even the newest entry "
            f"needs a budget of {error.needed:,} tokens; nothing was sent or trimmed"
        )
    if isinstance(error, errors.RefusalMismatchError):
        return (
            f"{error.refusal} (gc sent {error.content:,} bytes beside its instructions: about "
            f"{error.estimate:,} tokens by its own estimate, which errs high; sending less "
            "would not help, so gc stopped: check the model, its window and any gateway in "
            "between, or use --model builtin/heuristic)"
        )
    origin = error.origin if isinstance(error, errors.ModelNotFoundError) else None
    if origin is None:
        return str(error)
    if origin.override:
        where = "is given by --model"
    else:
        where = f"is set in {origin.source or f'the file of agent {quoted(origin.agent)}'}"
    return f"{error} (model {quoted(origin.model)} {where})"


def _too_small(error: errors.WindowTooSmallError) -> str:
    if error.instructions is None:
        return (
            "the model's context window cannot hold gc's instructions beside a reply of "
            f"{error.reply:,} tokens; {_LARGER}"
        )
    size = f" ({error.limit:,} tokens for input)" if error.limit is not None else ""
    return (
        f"the model's context window{size} is too small to hold gc's instructions (about "
        f"{error.instructions:,} tokens) and a part of the log; {_LARGER}"
    )


def _left_out(event: _Warning) -> str:
    """What ``--all`` (or a lookup, a reading, a budget) could not use, and why."""
    match event:
        case events.CountingUnavailable(provider=provider, reason=reason):
            return (
                f"Warning: {provider} could not count gc's requests ({reason}); the budget "
                "and the estimate rest on gc's own estimate, which errs high"
            )
        case events.AnalysisNarrowed(
            agent=agent, budget=budget, analysed=analysed, entries=entries
        ):
            return (
                f"Budget of {_budget(budget)}: analysing the newest {analysed:,} of {entries:,} "
                f"entries of agent {quoted(agent)}"
            )
        case events.AgentSkipped(agent=agent, error=error):
            return f"Warning: skipping agent {quoted(agent)}: {error}"
        case events.RecordNotKept(agent=agent, reason=reason):
            return (
                f"Warning: --skip-unchanged cannot record the analysis of agent {quoted(agent)} "
                f"({reason}), so it will be analysed on every run"
            )
        case events.TrimWarning(agent=agent, warning=warning):
            return f"Warning: agent {quoted(agent)}: {warning}"
        case events.AgentsIgnored(path=path):
            return f"Warning: ignoring {path}: {_exposure(event)}"
        case events.NoAgentsDirectory(searched=searched):
            return f"No agents directory found (looked in {_joined(searched)})"
        case events.NoEntryHeadings(agent=agent):
            return (
                f"Warning: no line in the memory file of agent {quoted(agent)} starts with "
                '"## ", so it holds no entries; its text is analysed as it is and nothing is '
                "trimmed"
            )
        case _:
            assert_never(event)


def _exposure(ignored: events.AgentsIgnored) -> str:
    match ignored.why:
        case events.Exposure.OWNER:
            return f"it belongs to another user (uid {ignored.owner}), not to you"
        case events.Exposure.WRITABLE:
            return (
                f"other users can write to it (mode {ignored.mode or 0:04o}); run chmod go-w "
                "on it, or name it with --agents-dir"
            )
        case events.Exposure.UNCHECKED:
            return (
                "outside your user profile, who can write to it cannot be checked; name it "
                "with --agents-dir"
            )
        case _:
            assert_never(ignored.why)


def _joined(items: tuple[str, ...]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    if len(items) < 2:
        return "".join(items)
    return f"{', '.join(items[:-1])} and {items[-1]}"


def _sweep_failures(sweep: SweepResult) -> list[Line]:
    if not sweep.failed:
        return []
    return _err(f"gc completed with errors: {sweep.failed} of {len(sweep.agents)} agents failed")
