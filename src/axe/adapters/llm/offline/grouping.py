"""Repeated tasks, recurring failures and the main kinds of task, found in the columns.

Repeated work is found in two passes, each linear in the log:

1. Every entry offers its task's *probes* (see :mod:`~axe.adapters.llm.offline.wording`): its
   *shape* (significant words and kinds of value), and, for three words or more, the shape
   with each word but the first (the task's kind) left out. The same shape twice is a
   repeated task; two shapes that offer the same probe are near-duplicates (one word
   changed, or one word added, never the kind), joined with a union-find. A
   :class:`~axe.adapters.llm.offline.counting.RepeatFilter` first rules out the probes
   offered only once, so a log of all-different tasks never holds a table of them,
   and no two tasks are ever compared with each other.
2. One more pass gathers, for each group of two runs or more, what the report needs: how
   many runs, the first few and the last in time, the wordings and values seen, whether
   the results agree.

Nothing here iterates a set or a dict to decide an order; groups are sorted by content, so
the report is the same in every process.
"""

from __future__ import annotations

from bisect import bisect_right, insort

from attrs import define, field, frozen

from axe.adapters.llm.offline.columns import KIND_SHARE, Columns
from axe.adapters.llm.offline.counting import SLOTS_PER_VALUE, RepeatFilter, repeated
from axe.adapters.llm.offline.reading import failure_line, label, result_of, task_text, text_of
from axe.adapters.llm.offline.wording import SLOT_NAMES, kind_name, normalise, tokenise

CITED_RUNS = 4
_SHOWN_KINDS = 4


@frozen
class Citation:
    """Which runs a finding rests on: the labels of the first few, how many in all, the last."""

    first: tuple[str, ...]
    runs: int
    last: str


@frozen
class TaskGroup:
    """Runs that did the same task; ``wording`` is one real Task line among them."""

    wording: str
    wordings: int
    values: int
    value_kind: str
    cited: Citation
    same_result: bool
    failed: int  # runs whose result reports a failure


@frozen
class Failure:
    """The same failure line (numbers and ids aside) in the results of several runs."""

    message: str
    cited: Citation


@frozen
class Kind:
    """A first word that many tasks share ("review", "summarize"). A repeated task's runs
    all have one kind (see :mod:`~axe.adapters.llm.offline.wording`), so the kinds and the
    repeated work count a job's runs alike."""

    word: str
    runs: int


def main_kinds(columns: Columns) -> list[Kind]:
    """The kinds of task that make up at least one task in ten, commonest first."""
    tasks = columns.tasks
    kinds = []
    for key, word in columns.frequent_kinds.candidates.items():
        runs = columns.kinds.count(key)
        if runs >= 2 and runs * KIND_SHARE >= tasks:
            kinds.append(Kind(kind_name(word), runs))
    kinds.sort(key=lambda kind: (-kind.runs, kind.word))
    return kinds[:_SHOWN_KINDS]


def repeated_tasks(columns: Columns, *, slots_per_value: int = SLOTS_PER_VALUE) -> list[TaskGroup]:
    """Tasks run more than once, most runs first."""
    runs, clusters = _shape_runs_and_clusters(columns, slots_per_value)
    tallies: dict[int, _GroupTally] = {}
    for index in columns.with_task():
        shape = columns.shapes[index]
        if runs.get(shape, 0) > 1 or shape in clusters:
            group = clusters.find(shape)
            tally = tallies.get(group)
            if tally is None:
                tally = tallies[group] = _GroupTally(first=index)
            tally.add(columns, index)
    groups = [(tally.first, tally.finding(columns)) for tally in tallies.values()]
    groups.sort(key=lambda item: (-item[1].cited.runs, normalise(item[1].wording), item[0]))
    return [group for _, group in groups]


def recurring_failures(
    columns: Columns, *, slots_per_value: int = SLOTS_PER_VALUE
) -> list[Failure]:
    """Failure lines seen in more than one result, commonest first."""
    runs = repeated(columns.failures, slots_per_value=slots_per_value)
    tallies: dict[int, _Runs] = {}
    for index, key in enumerate(columns.failures):
        if key in runs:
            tallies.setdefault(key, _Runs()).add_in_file_order(index)
    failures = []
    for tally in tallies.values():
        message = failure_line(result_of(columns.memory, columns.parts(tally.first))) or ""
        failures.append((tally.first, Failure(message, tally.citation(columns))))
    failures.sort(key=lambda item: (-item[1].cited.runs, item[1].message, item[0]))
    return [failure for _, failure in failures]


class _Clusters:
    """Union-find over the shapes that share a probe with another shape."""

    def __init__(self) -> None:
        self._parent: dict[int, int] = {}

    def __contains__(self, shape: int) -> bool:
        return shape in self._parent

    def find(self, shape: int) -> int:
        parent = self._parent
        while parent.get(shape, shape) != shape:
            parent[shape] = parent[parent[shape]]
            shape = parent[shape]
        return shape

    def join(self, one: int, other: int) -> None:
        self._parent.setdefault(one, one)
        self._parent.setdefault(other, other)
        self._parent[self.find(one)] = self.find(other)


def _shape_runs_and_clusters(columns: Columns, slots: int) -> tuple[dict[int, int], _Clusters]:
    """How often each shape that may repeat occurs, and which shapes are near-duplicates.

    Every entry offers its probes (its shape first). A probe offered only once can neither
    be a repeated shape nor join two shapes, and the filter rules out most of those; the
    rest are looked at exactly: a probe that two different shapes offer joins them.
    """
    probes, ends, shapes = columns.probes, columns.probe_ends, columns.shapes
    maybe = RepeatFilter(probes, expected=len(probes), slots_per_value=slots)
    runs: dict[int, int] = {}
    owners: dict[int, int] = {}
    clusters = _Clusters()
    for at in maybe.positions(probes):
        index = bisect_right(ends, at)
        shape = shapes[index]
        if at == (ends[index - 1] if index else 0):
            runs[shape] = runs.get(shape, 0) + 1
        owner = owners.setdefault(probes[at], shape)
        if owner != shape:
            clusters.join(shape, owner)
    return runs, clusters


@define
class _Runs:
    """The runs behind a finding: how many, the first few and the last, by a sort key."""

    runs: int = 0
    earliest: list[tuple[int, int]] = field(factory=list)
    latest: tuple[int, int] = (-1, -1)

    @property
    def first(self) -> int:
        return self.earliest[0][1]

    def add_in_file_order(self, index: int) -> None:
        self.add(index, index)

    def add(self, index: int, when: int) -> None:
        """Count the run ``index``; ``when`` orders runs (ties keep file order)."""
        self.runs += 1
        key = (when, index)
        if len(self.earliest) < CITED_RUNS or key < self.earliest[-1]:
            insort(self.earliest, key)
            del self.earliest[CITED_RUNS:]
        self.latest = max(self.latest, key)

    def citation(self, columns: Columns) -> Citation:
        def label_of(index: int) -> str:
            written = label(columns.memory, columns.starts[index], columns.parts(index))
            return written or "(no timestamp)"

        return Citation(
            first=tuple(label_of(index) for _, index in self.earliest),
            runs=self.runs,
            last=label_of(self.latest[1]),
        )


@define
class _GroupTally:
    """What one group of runs has shown so far, in bounded space but for its distinct
    wordings and values, which the report counts."""

    first: int
    runs: _Runs = field(factory=_Runs)
    wordings: dict[int, list[int]] = field(factory=dict)
    values: set[int] = field(factory=set)
    reference: bytes | None = None
    reference_words: str | None = None
    results_differ: bool = False
    failed: int = 0

    def add(self, columns: Columns, index: int) -> None:
        self.runs.add(index, columns.instants[index])
        self.failed += columns.failures[index] != 0
        seen = self.wordings.setdefault(columns.wordings[index], [0, index])
        seen[0] += 1
        self.values.add(columns.values[index])
        if not self.results_differ:
            result = result_of(columns.memory, columns.parts(index)).strip()
            self.results_differ = not self._same_result(result)

    def _same_result(self, result: bytes) -> bool:
        """Whether ``result`` says what the group's first result said (case, spacing and
        punctuation aside)."""
        if self.reference is None:
            self.reference = result
        if result == self.reference:
            return True
        if self.reference_words is None:
            self.reference_words = normalise(text_of(self.reference))
        return normalise(text_of(result)) == self.reference_words

    def finding(self, columns: Columns) -> TaskGroup:
        _, example = max((runs, -index) for runs, index in self.wordings.values())
        wording = task_text(columns.memory, columns.parts(-example)) or ""
        return TaskGroup(
            wording=wording,
            wordings=len(self.wordings),
            values=len(self.values),
            value_kind=_value_kind(wording),
            cited=self.runs.citation(columns),
            same_result=not self.results_differ,
            failed=self.failed,
        )


def _value_kind(wording: str) -> str:
    """What the values of a task are called in the report: their kind, if they share one."""
    kinds = set(tokenise(wording).slot_kinds)
    return SLOT_NAMES[kinds.pop()] if len(kinds) == 1 else "values"
