"""The report's sentences: the three sections of the gc prompt, written from the findings.

Every word the user reads from the offline analyst is written here; the other modules
only find things. The headings and the fallback sentences are the prompt's own, so the
report reads like a model's and scripts that parse either keep working.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from attrs import frozen

from axe.adapters.llm.offline.grouping import Citation, Failure, Kind, TaskGroup
from axe.adapters.llm.offline.reading import RESULT_LIMIT, clip
from axe.adapters.llm.offline.rhythm import BURST_RUNS, Rhythm
from axe.domain.model import MemoryConfig

_SHOWN_GROUPS = 10
_SHOWN_FAILURES = 5
_ADVISED_GROUPS = 3
_ADVISED_FAILURES = 2
_RUNS_WORTH_ADVICE = 3
_MANY_ENTRIES_FOR_LAST_N = 50
_TRUNCATED_SHARE = 10


@frozen
class Findings:
    """Everything the analyst found in one log."""

    entries: int
    tasks: int  # entries with a Task line that says something
    kinds: Sequence[Kind]
    groups: Sequence[TaskGroup]
    failures: Sequence[Failure]
    rhythm: Rhythm | None
    truncated: int
    without_task: int


def write_report(findings: Findings, settings: MemoryConfig) -> str:
    """The three sections, each a list of bullets or the prompt's fallback sentence."""
    lines = [
        "## Patterns Found",
        *_bullets(_patterns(findings), "No clear patterns detected."),
        "",
        "## Repeated Work",
        *_bullets(_repeated_work(findings.groups), "No repeated work detected."),
        "",
        "## Recommendations",
        *_bullets(_recommendations(findings, settings), "No specific recommendations."),
    ]
    return "\n".join(lines)


def _bullets(items: Sequence[str], empty: str) -> list[str]:
    return [f"- {item}" for item in items] if items else [empty]


def _patterns(findings: Findings) -> list[str]:
    patterns: list[str] = []
    if findings.kinds:
        patterns.append(_kinds(findings.kinds, findings.tasks))
    patterns.extend(
        f'Recurring failure ({failure.cited.runs} times): "{failure.message}" '
        f"at {_cite(failure.cited)}."
        for failure in findings.failures[:_SHOWN_FAILURES]
    )
    if findings.rhythm:
        patterns.append(_rhythm(findings.rhythm))
    entries = findings.entries
    if findings.truncated:
        patterns.append(
            f"{findings.truncated} of {entries} results "
            f"({_percent(findings.truncated / entries)}) were cut at the "
            f"{RESULT_LIMIT}-character memory limit."
        )
    if findings.without_task:
        verb = "has" if findings.without_task == 1 else "have"
        patterns.append(f"{findings.without_task} of {entries} entries {verb} no **Task:** line.")
    return patterns


def _kinds(kinds: Sequence[Kind], tasks: int) -> str:
    """The main kinds as counts that add up to every task: the rest is said as "others"."""
    counts = [f'"{kind.word}" {kind.runs}' for kind in kinds]
    if others := tasks - sum(kind.runs for kind in kinds):
        counts.append(f"others {others}")
    return f"Main kinds of task ({tasks} tasks): {', '.join(counts)}."


def _repeated_work(groups: Sequence[TaskGroup]) -> list[str]:
    lines = []
    for group in groups[:_SHOWN_GROUPS]:
        outcome = "same result each time" if group.same_result else "results differ"
        lines.append(
            f'"{clip(group.wording)}"{_variety(group)}: {group.cited.runs} times '
            f"({_cite(group.cited)}); {outcome}."
        )
    if len(groups) > _SHOWN_GROUPS:
        lines.append(f"and {len(groups) - _SHOWN_GROUPS} more repeated tasks.")
    return lines


def _variety(group: TaskGroup) -> str:
    """How the runs of one task differed: ``(in 2 wordings, with 3 different numbers)``."""
    notes = []
    if group.wordings > 1:
        notes.append(f"in {group.wordings} wordings")
    if group.values > 1:
        notes.append(f"with {group.values} different {group.value_kind}")
    return f" ({', '.join(notes)})" if notes else ""


def _recommendations(findings: Findings, settings: MemoryConfig) -> list[str]:
    advice = [
        text
        for group in findings.groups[:_ADVISED_GROUPS]
        if (text := _advice_for(group)) is not None
    ]
    advice.extend(
        f"The same failure came back {failure.cited.runs} times "
        f'("{failure.message}", last at {failure.cited.last}): fix its cause '
        "(credentials, network access, paths or the tool it names) before the next run."
        for failure in findings.failures[:_ADVISED_FAILURES]
    )
    truncated = findings.truncated
    if truncated >= 2 and truncated * _TRUNCATED_SHARE >= findings.entries:
        advice.append(
            f"{truncated} results hit the {RESULT_LIMIT}-character cap: ask the agent (its "
            "system prompt or skill) for shorter summaries so memory keeps what matters."
        )
    if settings.last_n == 0 and findings.entries >= _MANY_ENTRIES_FOR_LAST_N:
        advice.append(
            f"memory.last_n is 0, so every run loads all {findings.entries} entries into its "
            "prompt: set last_n (for example 20) to keep runs fast and cheap."
        )
    return advice


def _advice_for(group: TaskGroup) -> str | None:
    """What to do about one repeated task, however big the log: a job run on many inputs is
    advised on whatever its results; any other task whose runs mostly fail is advised on
    as a failure instead, never cached."""
    runs = group.cited.runs
    if runs < _RUNS_WORTH_ADVICE:
        return None
    task = f'"{clip(group.wording)}"'
    if group.values > 1:
        return (
            f"{task} ran {runs} times with {group.values} different {group.value_kind}: it "
            "is one recurring job, so give the agent a skill or a fixed prompt for it (or "
            "batch the inputs into one run) instead of asking afresh each time."
        )
    if group.failed * 2 > runs:
        return None
    if group.same_result:
        return (
            f"{task} ran {runs} times with the same result (last at {group.cited.last}): "
            "cache the answer or run it less often."
        )
    return (
        f"{task} ran {runs} times with different results: if it tracks something that "
        "changes, schedule it; otherwise make the task more specific so runs agree."
    )


def _cite(cited: Citation) -> str:
    rest = cited.runs - len(cited.first)
    return ", ".join(cited.first) + (f" and {rest} more" if rest else "")


def _percent(share: float) -> str:
    return f"{round(100 * share)}%"


def _rhythm(rhythm: Rhythm) -> str:
    days = rhythm.span_days
    busiest = (
        f"busiest day {rhythm.busiest_day} ({_runs(rhythm.busiest_runs)}); "
        if rhythm.busiest_day
        else ""
    )
    text = (
        f"Rhythm: {rhythm.runs} runs over {days} day{'s' * (days != 1)}, "
        f"{rhythm.runs / days:.1f} a day on average; {busiest}longest gap "
        f"{_duration(rhythm.longest_gap)} (after {rhythm.gap_after})"
    )
    if rhythm.bursts:
        text += (
            f"; {rhythm.bursts} burst{'s' * (rhythm.bursts != 1)} of {BURST_RUNS}+ runs "
            "within 5 minutes"
        )
    return text + "."


def _runs(count: int) -> str:
    return f"{count} run{'s' * (count != 1)}"


def _duration(delta: timedelta) -> str:
    minutes = int(delta.total_seconds() // 60)
    days, minutes = divmod(minutes, 24 * 60)
    hours, minutes = divmod(minutes, 60)
    if days:
        return f"{days}d {hours}h"
    if hours:
        return f"{hours}h {minutes}m"
    return f"{minutes}m"
