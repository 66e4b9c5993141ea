"""The built-in analyst: the three-section report, worked out from the log itself.

Pure and deterministic (same bytes and settings, same report), linear in the size of the
log, and never raising on any input, so it can run from cron on logs of any size without a
key, a network or a context window. It reads the ``**Task:**`` / ``**Result:**`` lines that
``axe run`` writes and copes with entries that have neither.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from itertools import pairwise

from attrs import frozen

from axe.domain.model import MemoryConfig

RESULT_LIMIT = 1000
_SHOWN_TIMESTAMPS = 4
_SHOWN_GROUPS = 10
_SHOWN_FAILURES = 5
_BURST_RUNS = 5
_BURST_WINDOW = timedelta(minutes=5)
_MANY_ENTRIES_FOR_LAST_N = 50
_QUOTE_CHARS = 80

_FAILURE = re.compile(
    r"\b(error|errors|failed|failure|fails|timeout|timed out|exception|denied|refused"
    r"|unauthori[sz]ed|forbidden|not found|panic|traceback|crash(?:ed)?)\b",
    re.IGNORECASE,
)
_VOLATILE = re.compile(
    r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b|\b0x[0-9a-f]+\b|\d+",
    re.IGNORECASE,
)
_WORD = re.compile(r"[^\W_]+")
_APOSTROPHES = re.compile("['\u2019]")
_BRITISH_ENDINGS = (("isation", "ization"), ("ising", "izing"), ("ised", "ized"), ("ise", "ize"))
_STOP_WORDS = frozenset(
    {"a", "an", "the", "and", "or", "of", "for", "to", "in", "on", "at", "by", "with", "from"}
    | {"into", "about", "please", "this", "that", "these", "those", "my", "our", "your", "its"}
    | {"it", "is", "are", "be", "me", "us"}
)


@frozen
class Entry:
    """One entry as the analyst sees it; ``when`` is None if the header is no timestamp."""

    label: str
    when: datetime | None
    task: str | None
    result: str


def parse_entries(memory: bytes) -> list[Entry]:
    """Every ``## `` entry of ``memory``; invalid UTF-8 is replaced, never fatal."""
    text = memory.decode("utf-8", "replace").replace("\r\n", "\n")
    chunks = text[3:].split("\n## ") if text.startswith("## ") else text.split("\n## ")[1:]
    return [_parse_entry(chunk) for chunk in chunks]


def _parse_entry(chunk: str) -> Entry:
    header, _, body = chunk.partition("\n")
    label = header.strip()
    task: str | None = None
    result_lines: list[str] = []
    in_result = False
    for line in body.split("\n"):
        if task is None and line.startswith("**Task:**"):
            task = line[len("**Task:**") :].strip()
        elif not in_result and line.startswith("**Result:**"):
            in_result = True
            result_lines.append(line[len("**Result:**") :].strip())
        elif in_result:
            result_lines.append(line)
    result = "\n".join(result_lines).strip() if in_result else body.strip()
    return Entry(label=label, when=_timestamp(label), task=task, result=result)


def _timestamp(label: str) -> datetime | None:
    try:
        when = datetime.fromisoformat(label.split(maxsplit=1)[0]) if label else None
    except ValueError:
        return None
    if when is not None and when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when


def normalise(text: str) -> str:
    """Case, whitespace and punctuation folded away: ``"Review  PR #42!"`` -> ``review pr 42``."""
    return " ".join(_WORD.findall(_APOSTROPHES.sub("", text.lower())))


def stem(word: str) -> str:
    """A crude stem, used only to match wordings: plurals and -ise/-ize spellings fold."""
    if word.isdigit() or len(word) <= 3:
        return word
    for british, american in _BRITISH_ENDINGS:
        if word.endswith(british) and len(word) > len(british) + 2:
            word = word[: -len(british)] + american
            break
    return word[:-1] if word.endswith("s") and not word.endswith("ss") else word


def _significant_words(normalised: str) -> list[str]:
    """The stemmed words of a normalised task, in order, stop words dropped."""
    return [stem(w) for w in normalised.split() if w not in _STOP_WORDS]


@frozen
class TaskGroup:
    """Entries that did the same task, possibly worded a little differently."""

    wording: str
    variants: int
    entries: tuple[Entry, ...]

    @property
    def same_result(self) -> bool:
        return len({normalise(e.result) for e in self.entries}) == 1


def group_repeated_tasks(entries: Sequence[Entry]) -> list[TaskGroup]:
    """Tasks done more than once, largest group first.

    Exact repeats are grouped after :func:`normalise`; near-duplicates are joined when their
    sets of significant words are equal or differ by one word (numbers must match, so
    "Review PR 42" and "Review PR 43" stay apart).
    """
    by_text: dict[str, list[Entry]] = defaultdict(list)
    first_wording: dict[str, str] = {}
    for entry in entries:
        if entry.task:
            key = normalise(entry.task)
            if key:
                by_text[key].append(entry)
                first_wording.setdefault(key, entry.task)
    parent = {key: key for key in by_text}

    def root(key: str) -> str:
        while parent[key] != key:
            parent[key] = parent[parent[key]]
            key = parent[key]
        return key

    owner: dict[frozenset[str], str] = {}
    for key in sorted(by_text):
        words = frozenset(_significant_words(key))
        probes = [words]
        if sum(not w.isdigit() for w in words) >= 3:
            probes += [words - {w} for w in sorted(words) if not w.isdigit()]
        for probe in probes:
            if not probe:
                continue
            other = owner.setdefault(probe, key)
            if other != key:
                parent[root(key)] = root(other)
    clusters: dict[str, list[str]] = defaultdict(list)
    for key in sorted(by_text):
        clusters[root(key)].append(key)
    groups = []
    for keys in clusters.values():
        members = sorted((e for k in keys for e in by_text[k]), key=_chronological)
        if len(members) > 1:
            main = max(keys, key=lambda k: (len(by_text[k]), k))
            groups.append(TaskGroup(first_wording[main], len(keys), tuple(members)))
    groups.sort(key=lambda g: (-len(g.entries), normalise(g.wording)))
    return groups


def _chronological(entry: Entry) -> tuple[int, datetime]:
    return (0, entry.when) if entry.when else (1, datetime.min.replace(tzinfo=UTC))


@frozen
class Failure:
    message: str
    entries: tuple[Entry, ...]


def recurring_failures(entries: Iterable[Entry]) -> list[Failure]:
    """Failure messages seen more than once (numbers and ids masked), commonest first."""
    seen: dict[str, list[Entry]] = defaultdict(list)
    shown: dict[str, str] = {}
    for entry in entries:
        line = _failure_line(entry.result)
        if line is None:
            continue
        key = _VOLATILE.sub("#", line.lower())
        seen[key].append(entry)
        shown.setdefault(key, line)
    failures = [Failure(shown[k], tuple(v)) for k, v in seen.items() if len(v) > 1]
    failures.sort(key=lambda f: (-len(f.entries), f.message))
    return failures


def _failure_line(result: str) -> str | None:
    for line in result.split("\n"):
        if _FAILURE.search(line):
            return _clip(line.strip())
    return None


def _clip(text: str, limit: int = _QUOTE_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def _is_truncated(entry: Entry) -> bool:
    return entry.result.endswith("...") and len(entry.result) >= RESULT_LIMIT


def _when(entry: Entry) -> str:
    return entry.label or "(no timestamp)"


def _cite(entries: Sequence[Entry]) -> str:
    labels = [_when(e) for e in entries[:_SHOWN_TIMESTAMPS]]
    rest = len(entries) - len(labels)
    return ", ".join(labels) + (f" and {rest} more" if rest else "")


def _percent(part: int, whole: int) -> str:
    return f"{round(100 * part / whole)}%"


def _task_kinds(entries: Sequence[Entry]) -> list[str]:
    kinds: Counter[str] = Counter()
    for entry in entries:
        if entry.task:
            words = _significant_words(normalise(entry.task))
            if words:
                kinds[words[0]] += 1
    total = sum(kinds.values())
    return [
        f'"{kind}" {_percent(n, total)} ({n})'
        for kind, n in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0]))
        if n >= 2 and n * 10 >= total
    ][:4]


def _rhythm(entries: Sequence[Entry]) -> str | None:
    times = sorted(e.when for e in entries if e.when)
    if len(times) < 2:
        return None
    days = Counter(t.date() for t in times)
    span_days = (times[-1].date() - times[0].date()).days + 1
    busiest, busiest_runs = min(days.items(), key=lambda kv: (-kv[1], kv[0]))
    gap, gap_after = max(((b - a, a) for a, b in pairwise(times)), key=lambda g: g[0])
    bursts, start = 0, 0
    in_burst = False
    for end in range(len(times)):
        while times[end] - times[start] > _BURST_WINDOW:
            start += 1
        if end - start + 1 >= _BURST_RUNS:
            bursts += not in_burst
            in_burst = True
        else:
            in_burst = False
    text = (
        f"Rhythm: {len(times)} runs over {span_days} day{'s' * (span_days != 1)}, "
        f"{len(times) / span_days:.1f} a day on average; busiest day {busiest.isoformat()} "
        f"({_runs(busiest_runs)}); longest gap {_duration(gap)} "
        f"(after {gap_after.strftime('%Y-%m-%dT%H:%M:%SZ')})"
    )
    if bursts:
        text += f"; {bursts} burst{'s' * (bursts != 1)} of {_BURST_RUNS}+ runs within 5 minutes"
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


def _bullet_lines(items: Sequence[str], empty: str) -> list[str]:
    return [f"- {item}" for item in items] if items else [empty]


def analyse(memory: bytes, settings: MemoryConfig | None = None) -> str:
    """The report for ``memory``, with the headings and fallbacks of the gc prompt."""
    settings = settings or MemoryConfig()
    entries = parse_entries(memory)
    groups = group_repeated_tasks(entries)
    failures = recurring_failures(entries)
    truncated = sum(_is_truncated(e) for e in entries)
    free_form = sum(e.task is None for e in entries)

    patterns: list[str] = []
    kinds = _task_kinds(entries)
    if kinds:
        patterns.append("Main kinds of task: " + ", ".join(kinds) + ".")
    for failure in failures[:_SHOWN_FAILURES]:
        patterns.append(
            f'Recurring failure ({len(failure.entries)} times): "{failure.message}" '
            f"at {_cite(failure.entries)}."
        )
    rhythm = _rhythm(entries)
    if rhythm:
        patterns.append(rhythm)
    if truncated:
        patterns.append(
            f"{truncated} of {len(entries)} results ({_percent(truncated, len(entries))}) were "
            f"cut at the {RESULT_LIMIT}-character memory limit."
        )
    if free_form and entries:
        verb = "has" if free_form == 1 else "have"
        patterns.append(f"{free_form} of {len(entries)} entries {verb} no **Task:** line.")

    repeated = []
    for group in groups[:_SHOWN_GROUPS]:
        wording = f" (in {group.variants} wordings)" if group.variants > 1 else ""
        outcome = "same result each time" if group.same_result else "results differ"
        repeated.append(
            f'"{_clip(group.wording)}"{wording}: {len(group.entries)} times '
            f"({_cite(group.entries)}); {outcome}."
        )
    if len(groups) > _SHOWN_GROUPS:
        repeated.append(f"and {len(groups) - _SHOWN_GROUPS} more repeated tasks.")

    advice = _recommendations(entries, groups, failures, truncated, settings)
    lines = [
        "## Patterns Found",
        *_bullet_lines(patterns, "No clear patterns detected."),
        "",
        "## Repeated Work",
        *_bullet_lines(repeated, "No repeated work detected."),
        "",
        "## Recommendations",
        *_bullet_lines(advice, "No specific recommendations."),
    ]
    return "\n".join(lines)


def _recommendations(
    entries: Sequence[Entry],
    groups: Sequence[TaskGroup],
    failures: Sequence[Failure],
    truncated: int,
    settings: MemoryConfig,
) -> list[str]:
    advice = []
    for group in groups[:3]:
        if _failure_line(group.entries[-1].result) is not None:
            continue  # a repeated failure is advised on below, not cached
        if group.same_result and len(group.entries) >= 3:
            advice.append(
                f'"{_clip(group.wording)}" ran {len(group.entries)} times with the same result '
                f"(last at {_when(group.entries[-1])}): cache the answer or run it less often."
            )
        elif len(group.entries) >= 3:
            advice.append(
                f'"{_clip(group.wording)}" ran {len(group.entries)} times with different '
                "results: if it tracks something that changes, schedule it; otherwise make "
                "the task more specific so runs agree."
            )
    for failure in failures[:2]:
        advice.append(
            f'The same failure came back {len(failure.entries)} times ("{failure.message}", '
            f"last at {_when(failure.entries[-1])}): fix its cause (credentials, network "
            "access, paths or the tool it names) before the next run."
        )
    if truncated * 10 >= len(entries) and truncated >= 2:
        advice.append(
            f"{truncated} results hit the {RESULT_LIMIT}-character cap: ask the agent (its "
            "system prompt or skill) for shorter summaries so memory keeps what matters."
        )
    if settings.last_n == 0 and len(entries) >= _MANY_ENTRIES_FOR_LAST_N:
        advice.append(
            f"memory.last_n is 0, so every run loads all {len(entries)} entries into its "
            "prompt: set last_n (for example 20) to keep runs fast and cheap."
        )
    return advice
