"""The findings, and every sentence the user reads of them: the gc prompt's three sections,
with its headings and fallbacks, so the report reads like a model's and scripts that parse
either keep working. Counts of 1,000 or more carry thousands separators, as gc prints them.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import NamedTuple

from axe.adapters.llm.offline.reading import RESULT_LIMIT, clip
from axe.domain.model import MemoryConfig

BURST_RUNS = 5
_SHOWN_GROUPS, _ADVISED_GROUPS, _SHOWN_FAILURES, _ADVISED_FAILURES = 10, 3, 5, 2
_RUNS_WORTH_ADVICE, _MANY_ENTRIES_FOR_LAST_N, _TRUNCATED_SHARE = 3, 50, 10


class Citation(NamedTuple):  # the runs a finding rests on: the first few, how many, the last
    first: tuple[str, ...]
    runs: int
    last: str


class TaskGroup(NamedTuple):  # runs of one task, ``wording`` a real Task line among them
    wording: str
    wordings: int
    values: int
    value_kind: str
    cited: Citation
    same_result: bool
    failed: int  # runs whose result reports a failure


class Failure(NamedTuple):  # one failure line (numbers and ids aside) in several results
    message: str
    cited: Citation


class Rhythm(NamedTuple):  # how the runs with a readable time spread over it
    runs: int
    left_out: int  # entries without a readable time
    span_days: int
    busiest_day: str | None  # None when every day with runs had as many
    busiest_runs: int
    longest_gap: timedelta
    gap_after: str
    bursts: int


class Findings(NamedTuple):  # what the analyst found in one log
    entries: int
    tasks: int  # entries whose Task line says something
    kinds: Sequence[tuple[str, int]]  # the main kinds of task (first words) and their runs
    groups: Sequence[TaskGroup]
    failures: Sequence[Failure]
    rhythm: Rhythm | None
    truncated: int
    without_task: int


def write_report(found: Findings, settings: MemoryConfig) -> str:
    """The three sections, each a list of bullets or the prompt's fallback sentence."""
    sections = [
        ("Patterns Found", _patterns(found), "No clear patterns detected."),
        ("Repeated Work", _repeated_work(found.groups), "No repeated work detected."),
        ("Recommendations", _recommendations(found, settings), "No specific recommendations."),
    ]
    return "\n\n".join(
        "\n".join([f"## {heading}", *([f"- {item}" for item in items] or [empty])])
        for heading, items, empty in sections
    )


def _patterns(found: Findings) -> list[str]:
    patterns = []
    if found.kinds:  # the main kinds add up to every task: the rest is said as "others"
        counts = [f'"{word}" {runs:,}' for word, runs in found.kinds]
        if others := found.tasks - sum(runs for _, runs in found.kinds):
            counts.append(f"others {others:,}")
        patterns.append(f"Main kinds of task ({found.tasks:,} tasks): {', '.join(counts)}.")
    patterns.extend(
        f'Recurring failure ({failure.cited.runs:,} times): "{failure.message}" '
        f"at {_cite(failure.cited)}."
        for failure in found.failures[:_SHOWN_FAILURES]
    )
    if found.rhythm:
        patterns.append(_rhythm(found.rhythm))
    if found.truncated:
        patterns.append(
            f"{found.truncated:,} of {found.entries:,} results "
            f"({round(100 * found.truncated / found.entries)}%) were cut at the "
            f"{RESULT_LIMIT}-character memory limit."
        )
    if untasked := found.without_task:
        verb = "has" if untasked == 1 else "have"
        patterns.append(f"{untasked:,} of {found.entries:,} entries {verb} no **Task:** line.")
    return patterns


def _repeated_work(groups: Sequence[TaskGroup]) -> list[str]:
    lines = []
    for group in groups[:_SHOWN_GROUPS]:
        notes = [f"in {group.wordings:,} wordings"] if group.wordings > 1 else []
        if group.values > 1:
            notes.append(f"with {group.values:,} different {group.value_kind}")
        variety = f" ({', '.join(notes)})" if notes else ""
        outcome = "same result each time" if group.same_result else "results differ"
        lines.append(
            f'"{clip(group.wording)}"{variety}: {group.cited.runs:,} times '
            f"({_cite(group.cited)}); {outcome}."
        )
    if len(groups) > _SHOWN_GROUPS:
        lines.append(f"and {len(groups) - _SHOWN_GROUPS:,} more repeated tasks.")
    return lines


def _recommendations(found: Findings, settings: MemoryConfig) -> list[str]:
    advice = [text for group in found.groups[:_ADVISED_GROUPS] if (text := _advice_for(group))]
    advice.extend(
        f"The same failure came back {failure.cited.runs:,} times "
        f'("{failure.message}", last at {failure.cited.last}): fix its cause '
        "(credentials, network access, paths or the tool it names) before the next run."
        for failure in found.failures[:_ADVISED_FAILURES]
    )
    if found.truncated >= 2 and found.truncated * _TRUNCATED_SHARE >= found.entries:
        advice.append(
            f"{found.truncated:,} results hit the {RESULT_LIMIT}-character cap: ask the agent "
            "(its system prompt or skill) for shorter summaries so memory keeps what matters."
        )
    if settings.last_n == 0 and found.entries >= _MANY_ENTRIES_FOR_LAST_N:
        advice.append(
            f"memory.last_n is 0, so every run loads all {found.entries:,} entries into its "
            "prompt: set last_n (for example 20) to keep runs fast and cheap."
        )
    return advice


def _advice_for(group: TaskGroup) -> str | None:
    """What to do about one repeated task: a job run on many inputs is advised on whatever
    its results; any other task whose runs mostly fail is advised on as a failure instead,
    never cached."""
    runs, task = group.cited.runs, f'"{clip(group.wording)}"'
    if runs < _RUNS_WORTH_ADVICE or (group.values < 2 and group.failed * 2 > runs):
        return None
    if group.values > 1:
        return (
            f"{task} ran {runs:,} times with {group.values:,} different {group.value_kind}: "
            "it is one recurring job, so give the agent a skill or a fixed prompt for it (or "
            "batch the inputs into one run) instead of asking afresh each time."
        )
    if group.same_result:
        return (
            f"{task} ran {runs:,} times with the same result (last at {group.cited.last}): "
            "cache the answer or run it less often."
        )
    return (
        f"{task} ran {runs:,} times with different results: if it tracks something that "
        "changes, schedule it; otherwise make the task more specific so runs agree."
    )


def _cite(cited: Citation) -> str:
    rest = cited.runs - len(cited.first)
    return ", ".join(cited.first) + (f" and {rest:,} more" if rest else "")


def _rhythm(rhythm: Rhythm) -> str:
    left_out = ""
    if rhythm.left_out:
        whose = "entry whose header has" if rhythm.left_out == 1 else "entries whose headers have"
        left_out = f" (not counting {rhythm.left_out:,} {whose} no readable time)"
    text = (
        f"Rhythm: {rhythm.runs:,} runs over {_runs(rhythm.span_days, 'day')}{left_out}, "
        f"{rhythm.runs / rhythm.span_days:,.1f} a day on average; "
    )
    if rhythm.busiest_day:
        text += f"busiest day {rhythm.busiest_day} ({_runs(rhythm.busiest_runs)}); "
    text += f"longest gap {_duration(rhythm.longest_gap)} (after {rhythm.gap_after})"
    if rhythm.bursts:
        text += f"; {_runs(rhythm.bursts, 'burst')} of {BURST_RUNS}+ runs within 5 minutes"
    return text + "."


def _runs(count: int, noun: str = "run") -> str:
    return f"{count:,} {noun}{'s' * (count != 1)}"


def _duration(delta: timedelta) -> str:
    hours, minutes = divmod(int(delta.total_seconds() // 60), 60)
    days, hours = divmod(hours, 24)
    return f"{days}d {hours}h" if days else f"{hours}h {minutes}m" if hours else f"{minutes}m"
