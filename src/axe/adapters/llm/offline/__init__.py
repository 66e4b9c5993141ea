"""The offline analyst (``--model builtin/heuristic``): the gc report worked out from the log,
with no key, network or window. One pass reads each entry (``reading``) and its Task line
(``wording``) into plain lists and counters; the findings are drawn from those, and ``report``
words them. The same bytes give the same report in every process (fingerprints are BLAKE2b;
orders follow counts, content or time, never a set's); any bytes give a well-formed report."""

from __future__ import annotations

import re
from collections import Counter
from datetime import UTC, datetime, timedelta
from itertools import pairwise

from axe.adapters.llm.offline import reading, report
from axe.adapters.llm.offline.wording import normalise, read_task, value_kind
from axe.application.ports import AnalysisRequest
from axe.domain.entries import entry_starts
from axe.domain.model import MemoryConfig
from axe.domain.results import Completion

_KIND_SHARE, _SHOWN_KINDS, _CITED_RUNS = 10, 4, 4  # kinds from one task in ten; 4 at most
_EPOCH, _BURST_WINDOW = datetime(1970, 1, 1, tzinfo=UTC), 5 * 60 * 1_000_000  # µs
_VOLATILE = re.compile(r"\b[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}\b|\b0x[0-9a-f]+\b|\d+", re.I)


class HeuristicAnalyst:
    """The client of the catalogue's ``builtin`` row: it sends no request."""

    def complete(self, request: AnalysisRequest) -> Completion:
        return Completion(analyse(request.content, request.memory_config), sent=0)


def analyse(memory: bytes, settings: MemoryConfig | None = None) -> str:
    """The report for ``memory``, with the headings and fallbacks of the gc prompt."""
    log = _Log(memory)
    tasks = len(log.shapes) - log.shapes.count(None)
    kinds = [(word, n) for word, n in log.kinds.items() if n >= max(2, tasks / _KIND_SHARE)]
    groups: dict[int, list[int]] = {}
    for index, shape in enumerate(log.shapes):
        if shape is not None and shape in log.parents:  # repeated, or a near-duplicate
            groups.setdefault(log.find(shape), []).append(index)
    failures: dict[str, list[int]] = {}
    for index, line in log.failures.items():
        failures.setdefault(_VOLATILE.sub("#", line.lower()), []).append(index)  # ids aside
    repeated = [log.group(log.in_time_order(runs)) for runs in groups.values()]
    recurring = [
        report.Failure(log.failures[runs[0]], log.cite(runs))  # as its earliest run put it
        for runs in map(log.in_time_order, failures.values())
        if len(runs) > 1
    ]
    kinds.sort(key=lambda kind: (-kind[1], kind[0]))
    repeated.sort(key=lambda group: (-group.cited.runs, normalise(group.wording), group))
    recurring.sort(key=lambda failure: (-failure.cited.runs, failure))
    findings = report.Findings(
        entries=len(log.shapes),
        tasks=tasks,
        kinds=kinds[:_SHOWN_KINDS],
        groups=repeated,
        failures=recurring,
        rhythm=log.rhythm(),
        truncated=log.truncated,
        without_task=log.without_task,
    )
    return report.write_report(findings, settings or MemoryConfig())


class _Log:
    """What the one pass keeps of each entry (by index), the counts, and the findings drawn
    from them. A probe that two shapes offer joins them in a union-find (``parents``), so
    near-duplicates meet without any two tasks being compared."""

    def __init__(self, memory: bytes) -> None:
        self.memory, self.bounds = memory, [*entry_starts(memory), len(memory)]
        self.whens: list[int | None] = []  # µs since the epoch; None without a readable time
        self.shapes: list[int | None] = []
        self.failures: dict[int, str] = {}
        self.kinds, self.days = Counter[str](), Counter[int]()  # runs of each kind, and day
        self.parents: dict[int, int] = {}
        self.truncated = self.without_task = 0
        owners: dict[int, int] = {}  # probe -> the first shape that offered it
        for index in range(len(self.bounds) - 1):
            self._read(index, owners)

    def entry(self, index: int) -> reading.Pieces:
        return reading.pieces(self.memory, self.bounds[index], self.bounds[index + 1])

    def _read(self, index: int, owners: dict[int, int]) -> None:
        header, task_line, result = self.entry(index)
        when = reading.moment(header)
        self.whens.append(None if when is None else when[0])
        if when is not None:
            self.days[when[1]] += 1
        self.without_task += task_line is None
        task = None if task_line is None else read_task(task_line)
        self.shapes.append(None if task is None else task.shape)
        if task is not None:
            self.kinds[task.kind] += bool(task.kind)  # a task of values alone has no kind
            if owners.get(task.shape) == task.shape:  # a task run before
                self.parents.setdefault(task.shape, task.shape)
            for probe in task.probes:
                if (owner := owners.setdefault(probe, task.shape)) != task.shape:
                    self.parents[self.find(task.shape)] = root = self.find(owner)
                    self.parents.setdefault(root, root)
        self.truncated += reading.is_truncated(result)
        if (failure := reading.failure_line(result)) is not None:
            self.failures[index] = failure

    def find(self, shape: int) -> int:
        """The shape that stands for ``shape``'s group of near-duplicates."""
        while (parent := self.parents.get(shape, shape)) != shape:
            shape = self.parents[shape] = self.parents.get(parent, parent)
        return shape

    def in_time_order(self, runs: list[int]) -> list[int]:
        """``runs`` by time, those without a readable time after the rest, in file order."""
        return sorted(runs, key=lambda run: (self.whens[run] is None, self.whens[run] or 0, run))

    def cite(self, runs: list[int]) -> report.Citation:
        """``runs`` (in time order) cited: the first few, and the latest by a readable time (one
        without is never taken for the latest), or when none has one the last in the file."""
        last = max(runs, key=lambda run: (self.whens[run] is not None, self.whens[run] or 0, run))
        headers = [self.entry(run).header for run in (*runs[:_CITED_RUNS], last)]
        labels = [reading.text_of(header).strip() or "(no timestamp)" for header in headers]
        return report.Citation(tuple(labels[:-1]), len(runs), labels[-1])

    def group(self, runs: list[int]) -> report.TaskGroup:
        """One repeated task (``runs`` in time order), shown in the wording most runs used (the
        earliest among equals); its results are the same when they agree but for case, spacing
        and punctuation."""
        wordings: Counter[str] = Counter()
        examples: dict[str, bytes] = {}
        values: set[str] = set()
        first = self.entry(runs[0]).result.strip()
        said, same = normalise(reading.text_of(first)), True
        for run in runs:
            _, raw, result = self.entry(run)
            task = read_task(raw or b"")
            assert task is not None  # a run of a task has a Task line that says something
            wordings[task.wording] += 1
            examples.setdefault(task.wording, raw or b"")
            values.add(task.values)
            if same and result.strip() != first:
                same = normalise(reading.text_of(result)) == said
        wording = reading.text_of(examples[max(wordings, key=wordings.__getitem__)]).strip()
        failed = sum(run in self.failures for run in runs)
        variety = (len(wordings), len(values), value_kind(wording))
        return report.TaskGroup(wording, *variety, self.cite(runs), same, failed)

    def rhythm(self) -> report.Rhythm | None:
        """When the agent ran, from the readable times; None with fewer than two. Days are
        calendar days as each entry's own clock wrote them; instants are told in UTC."""
        instants = sorted(when for when in self.whens if when is not None)
        if len(instants) < 2:
            return None
        day, on_day = min(self.days.items(), key=lambda day: (-day[1], day[0]))
        gap, after = max(((b - a, a) for a, b in pairwise(instants)), key=lambda gap: gap[0])
        busiest = (_EPOCH + timedelta(days=day)).date().isoformat()
        return report.Rhythm(
            runs=len(instants),
            left_out=len(self.whens) - len(instants),
            span_days=max(self.days) - min(self.days) + 1,
            busiest_day=busiest if len(set(self.days.values())) > 1 else None,  # a tie: none
            busiest_runs=on_day,
            longest_gap=timedelta(microseconds=gap),
            gap_after=(_EPOCH + timedelta(microseconds=after)).strftime("%Y-%m-%dT%H:%M:%SZ"),
            bursts=_bursts(instants),
        )


def _bursts(instants: list[int]) -> int:
    """Stretches of at least :data:`report.BURST_RUNS` runs within five minutes of each other."""
    bursts, start, in_burst = 0, 0, False
    for end, instant in enumerate(instants):
        while instant - instants[start] > _BURST_WINDOW:
            start += 1
        burst = end - start + 1 >= report.BURST_RUNS
        bursts += burst and not in_burst
        in_burst = burst
    return bursts
