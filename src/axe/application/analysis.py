"""Analysing one agent's memory log: one request when it fits, parts and a merge when not.

A log that fits is one request with the fixed prompt and the whole log (gc-spec §3.7), and
nothing here adds a request, a byte or an event to that path. A log that does not fit,
known up front (a window or cap the client reports) or from the provider's refusal, is
split into parts at entry boundaries; the parts go through the one scheduler
(:func:`~axe.application.workers.ordered_map`), a bounded few at a time over the one
shared client, and their reports are merged into one report with the same three sections
(in rounds, if the reports themselves do not fit one request).

What the provider teaches is kept in one :class:`Sizing` value, passed from the first
request to the parts, from one batch of parts to the next and on to every merge round:
a refusal's numbers ("prompt is too long: N tokens > M maximum") give the window and how
the provider counts; a refusal without numbers halves the largest request allowed; and
every accepted reply that reports its prompt size calibrates the estimate (it is built to
stay above the truth, often by half again), so the rest of the log goes in fewer, fuller
parts. The estimate stays a hard cap: no request is sent above a window that is known.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Sequence
from typing import TypeVar

import attrs
from attrs import frozen

from axe.application.ports import AnalysisRequest, LLMClient, Output
from axe.application.workers import StopSignal, ordered_map
from axe.domain.errors import ApiError, AxeError, PromptTooLargeError
from axe.domain.events import AnalysisSplit, MergeStarted, PartAnalysed
from axe.domain.model import MemoryConfig, ModelRef
from axe.domain.parts import LogLayout, Measure, Part, halve, plan_parts
from axe.domain.prompt import (
    ANALYSIS_MAX_TOKENS,
    ANALYSIS_TEMPERATURE,
    MERGE_PROMPT,
    PATTERN_DETECTION_PROMPT,
    merge_content,
)
from axe.domain.results import Analysis, Completion, Usage, total_usage
from axe.domain.spending import Spent
from axe.domain.tokens import Calibration, Classes, classes_sum, token_classes
from axe.domain.window import WindowTooSmallError

_CALIBRATED_MARGIN = 0.95  # estimates scaled to a provider's count are exact on average only
_SMALLEST_PART = 64  # bytes of the log; a part this small refused: the window is too small
_SMALLEST_ROOM = 16  # tokens left for the log beside the instructions: less is no part at all
_SMALLEST_REPORT = 64  # characters of a part's report; shorter is no report to merge
_FRAMING: Classes = (0, 0, 0, 0, 0, 0, 16)  # role markers and framing around the two texts
_HALF = 0.55  # of the content refused without numbers: its halves fit, uneven ones too
_UNIT = 1 << 20  # what one request may cost in the units parts are planned in

T = TypeVar("T")
Outcome = Completion | AxeError  # what one request came to; a refusal is an AxeError too


@functools.cache
def _instructions(system_prompt: str) -> Classes:
    return classes_sum(token_classes(system_prompt.encode()), _FRAMING)


def request_classes(system_prompt: str, content: bytes) -> Classes:
    """The estimate of one request by kind of text: instructions, message and framing."""
    return classes_sum(_instructions(system_prompt), token_classes(content))


def prompt_cost(system_prompt: str, content: bytes) -> int:
    """Estimated input tokens of one request: instructions, user message and framing."""
    return math.ceil(sum(request_classes(system_prompt, content)))


@frozen
class Sizing:
    """What is known about how large one request may be, as a value: each lesson returns
    a new one, which is handed on, so nothing learnt is lost between batches and rounds.

    ``cap`` and ``limit`` are in the provider's tokens: the client's limit known before
    sending, and the window a refusal stated. ``calibration`` bounds the provider's count
    from the requests it counted (replies and refusals with numbers). ``ceiling`` is the
    most estimated tokens a request may have after refusals that gave no numbers: each such
    refusal halves the content it refused. ``answered_once``: a reply came, with or without a count
    (probing one part at a time is over either way).
    """

    cap: int | None = None
    limit: int | None = None
    calibration: Calibration = attrs.field(factory=Calibration)
    ceiling: int | None = None
    answered_once: bool = False

    @property
    def window(self) -> int | None:
        limits = [limit for limit in (self.cap, self.limit) if limit is not None]
        return min(limits) if limits else None

    @property
    def probing(self) -> bool:
        """A limit is known but no reply has come yet: one request first, so the rest is
        planned from the provider's own count (or from its next refusal)."""
        known = self.window is not None or self.ceiling is not None
        return known and not (self.calibration.samples or self.answered_once)

    def fits(self, request: Classes) -> bool:
        """Whether a request of these estimated classes may be sent."""
        return all(measure(request) <= room for measure, room in self._rooms())

    def content_cost(self, system_prompt: str) -> Measure | None:
        """What a request of ``system_prompt`` and some content (given by its estimate by
        kind of text) costs, in units of which one request may hold ``_UNIT``; None when
        nothing is known (the content goes whole).

        Raises:
            WindowTooSmallError: the instructions leave no room for a part of the log.
        """
        rooms = self._rooms()
        if not rooms:
            return None
        beside = _instructions(system_prompt)
        if any(measure(beside) > room - _SMALLEST_ROOM for measure, room in rooms):
            raise self.too_small()

        def cost(content: Classes) -> float:
            request = classes_sum(beside, content)
            return max(measure(request) / room for measure, room in rooms) * _UNIT

        return cost

    def answered(self, request: Classes, completion: Completion) -> Sizing:
        """Calibrated from a reply that reports its prompt size."""
        usage = completion.usage
        if usage is None or usage.input_tokens <= 0:  # no count: only no more probing
            return self if self.answered_once else attrs.evolve(self, answered_once=True)
        return attrs.evolve(self, calibration=self.calibration.learnt(request, usage.input_tokens))

    def refused(self, refusal: PromptTooLargeError, request: Classes, beside: Classes) -> Sizing:
        """What a refusal of a request of these estimated classes (of which ``beside`` are
        its instructions) teaches.

        Raises:
            WindowTooSmallError: the provider says no input fits at all (the reply takes
                the whole window).
        """
        if refusal.limit is not None and refusal.limit <= 0:
            raise WindowTooSmallError(limit=None, instructions=None, reply=ANALYSIS_MAX_TOKENS)
        learnt = self
        if refusal.limit is not None:
            learnt = attrs.evolve(learnt, limit=min(refusal.limit, self.limit or refusal.limit))
            if refusal.tokens:  # a limit alone (a prompt Ollama cut) says nothing of the count
                calibration = learnt.calibration.learnt(request, refusal.tokens)
                learnt = attrs.evolve(learnt, calibration=calibration)
        if learnt.fits(request):  # nothing said by how much: half the log it refused, at most
            content = sum(request) - sum(beside)
            learnt = attrs.evolve(learnt, ceiling=int(sum(beside) + content * _HALF))
        return learnt

    def too_small(self) -> WindowTooSmallError:
        """The failure for a window that holds no part of the log beside the instructions.

        Both numbers are in the provider's tokens: an estimate beside a real limit could
        claim instructions bigger than a window that in truth holds them, and only not a
        part. The window is named only when a stated limit is what binds."""
        instructions = _instructions(PATTERN_DETECTION_PROMPT)
        window = self.window
        binding = window is not None and (
            self.ceiling is None or window - self.calibration.bound(instructions) <= self.ceiling
        )
        return WindowTooSmallError(
            limit=window if binding else None,
            instructions=math.ceil(self.calibration.typical(instructions)),
            reply=ANALYSIS_MAX_TOKENS,
        )

    def _rooms(self) -> list[tuple[Callable[[Classes], float], float]]:
        """Each known limit: how it measures a request, and the most it allows."""
        rooms: list[tuple[Callable[[Classes], float], float]] = []
        if self.window is not None:
            margin = _CALIBRATED_MARGIN if self.calibration.samples else 1.0
            rooms.append((self.calibration.bound, self.window * margin))
        if self.ceiling is not None:
            rooms.append((sum, self.ceiling))
        return rooms


class LogAnalysis:
    """The analysis of one agent's log with one model; emits progress for that agent.

    ``spent`` says what was sent so far, also after :meth:`run` failed.
    """

    def __init__(
        self,
        *,
        llm: LLMClient,
        output: Output,
        agent: str,
        model: ModelRef,
        memory_config: MemoryConfig,
        concurrency: int,
        stop: StopSignal | None = None,
    ) -> None:
        self._llm = llm
        self._output = output
        self._agent = agent
        self._model = model
        self._memory_config = memory_config
        self._concurrency = concurrency
        self._stop = stop or StopSignal()
        self._requests = 0
        self._usages: list[Usage | None] = []
        self._parts: int | None = None

    @property
    def spent(self) -> Spent:
        return Spent(usage=total_usage(self._usages), requests=self._requests, parts=self._parts)

    def run(self, memory: bytes) -> Analysis:
        """The report on ``memory``.

        Raises:
            ApiError: a request failed for another reason than its size (the message says
                which part or merge, when the log was split), or the window is too small.
            AgentError: the provider is unknown.
        """
        request = self._request(PATTERN_DETECTION_PROMPT, memory)
        sizing = Sizing(cap=self._llm.input_limit(request))
        known = sizing.window is not None  # else the log goes whole, estimated only if refused
        layout = LogLayout(memory) if known else None
        whole = _part_classes(layout, layout.part(0, len(memory))) if layout else None
        if whole is None or sizing.fits(whole):
            outcome = self._tally(self._send(request))
            if isinstance(outcome, Completion):
                return self._analysis(outcome.text, parts=1)
            if not isinstance(outcome, PromptTooLargeError):
                raise outcome
            layout = layout or LogLayout(memory)
            whole = whole or _part_classes(layout, layout.part(0, len(memory)))
            sizing = sizing.refused(outcome, whole, _instructions(PATTERN_DETECTION_PROMPT))
        layout = layout or LogLayout(memory)
        reports, sizing = self._analyse_parts(layout, sizing)
        if len(reports) == 1:
            return self._analysis(reports[0].text, parts=1)
        return self._analysis(self._merge(layout, reports, sizing), parts=len(reports))

    def _analyse_parts(self, layout: LogLayout, sizing: Sizing) -> tuple[list[_Report], Sizing]:
        """Every entry in exactly one part, in log order: batches of parts planned with
        what is known, re-planned after each batch with what the batch taught."""
        pieces: list[Part | _Report] = [layout.part(0, len(layout.log))]
        announced = 0
        while todo := [piece for piece in pieces if isinstance(piece, Part)]:
            pieces = [
                planned
                for piece in (_coalesced(layout, pieces) if sizing.window else pieces)
                for planned in (
                    _plan(layout, piece, sizing) if isinstance(piece, Part) else [piece]
                )
            ]
            if len(pieces) != announced:
                announced = len(pieces)
                self._output.emit(AnalysisSplit(self._agent, announced))
            todo = [piece for piece in pieces if isinstance(piece, Part)]
            batch = todo[:1] if sizing.probing else todo
            outcomes = self._map(
                batch,
                lambda part: self._request(PATTERN_DETECTION_PROMPT, part.content(layout.log)),
                functools.partial(self._part_answered, len(pieces) - len(todo), announced),
            )
            failure: AxeError | None = None
            for part, outcome in zip(batch, outcomes, strict=True):
                cost = _part_classes(layout, part)
                if isinstance(outcome, Completion):
                    sizing = sizing.answered(cost, outcome)
                    pieces[pieces.index(part)] = _Report(part, part, outcome.text)
                    self._parts = (self._parts or 0) + 1
                elif isinstance(outcome, PromptTooLargeError):
                    sizing = sizing.refused(outcome, cost, _instructions(PATTERN_DETECTION_PROMPT))
                    if part.sent_size <= _SMALLEST_PART:  # the marker of a cut entry not counted
                        raise sizing.too_small() from outcome
                elif outcome is not None and failure is None:  # the earliest one is said
                    at = pieces.index(part) + 1
                    failure = _in_context(outcome, f"analysis of part {at} of {len(pieces)} failed")
            if failure is not None:
                raise failure
        return [piece for piece in pieces if isinstance(piece, _Report)], sizing

    def _part_answered(self, done: int, total: int, answered: int) -> None:
        self._output.emit(PartAnalysed(self._agent, done + answered, total))

    def _merge(self, layout: LogLayout, reports: list[_Report], sizing: Sizing) -> str:
        """Merge reports in rounds until one is left: each round merges consecutive groups
        sized like parts; a refused group is regrouped, with what its refusal taught, in
        the next round."""
        while len(reports) > 1:
            self._output.emit(MergeStarted(self._agent, len(reports)))
            groups = _groups(layout, reports, sizing)
            batch = [group for group in groups if len(group) > 1]
            outcomes = self._map(
                batch, lambda group: self._request(MERGE_PROMPT, _merge_content(layout, group))
            )
            merged: dict[int, _Report] = {}
            for group, outcome in zip(batch, outcomes, strict=True):
                cost = request_classes(MERGE_PROMPT, _merge_content(layout, group))
                if isinstance(outcome, Completion):
                    sizing = sizing.answered(cost, outcome)
                    merged[id(group)] = _Report(group[0].first, group[-1].last, outcome.text)
                elif isinstance(outcome, PromptTooLargeError):
                    sizing = sizing.refused(outcome, cost, _instructions(MERGE_PROMPT))
                elif outcome is not None:
                    raise _in_context(outcome, f"merging the {len(reports)} part reports failed")
            reports = [
                report
                for group in groups
                for report in ([merged[id(group)]] if id(group) in merged else group)
            ]
        return reports[0].text

    def _map(
        self,
        items: Sequence[T],
        request: Callable[[T], AnalysisRequest],
        answered: Callable[[int], None] | None = None,
    ) -> list[Outcome | None]:
        """Each item's request through the one scheduler, a bounded few at a time; the
        first refusal or failure stops what has not started (None in its place).
        ``answered(n)`` follows the n-th answer, in item order."""

        def send(item: T) -> Outcome:
            return self._send(request(item))  # the request (a part's bytes) is not kept

        count = itertools.count(1)

        def settled(_index: int, outcome: Outcome) -> None:
            if answered is not None and isinstance(outcome, Completion):
                answered(next(count))

        outcomes = ordered_map(
            items,
            send,
            jobs=self._concurrency,
            stop=self._stop,
            name="axe-request",
            settled=settled,
            halts=lambda outcome: isinstance(outcome, AxeError),
        )
        return [None if outcome is None else self._tally(outcome) for outcome in outcomes]

    def _send(self, request: AnalysisRequest) -> Outcome:
        try:
            return self._llm.complete(request)
        except AxeError as error:
            return error

    def _tally(self, outcome: Outcome) -> Outcome:
        """Counts what an outcome cost: every request that went out may have been billed."""
        if isinstance(outcome, Completion):
            self._requests += outcome.sent
            self._usages.append(outcome.usage)
        elif isinstance(outcome, PromptTooLargeError):
            self._requests += max(outcome.sent, 1)  # a refusal is an answer to a request
        elif isinstance(outcome, ApiError):
            self._requests += outcome.sent
        return outcome

    def _request(self, system_prompt: str, content: bytes) -> AnalysisRequest:
        return AnalysisRequest(
            model=self._model,
            system_prompt=system_prompt,
            content=content,
            temperature=ANALYSIS_TEMPERATURE,
            max_tokens=ANALYSIS_MAX_TOKENS,
            memory_config=self._memory_config,
        )

    def _analysis(self, text: str, *, parts: int) -> Analysis:
        spent = self.spent
        return Analysis(text=text, usage=spent.usage, parts=parts, requests=spent.requests)


_LEFT_OUT = "\n[... rest of this report left out ...]"


@frozen
class _Report:
    """A report and the parts it covers (one part, or a run of merged ones); ``kept`` is
    how much of the report's own text is left after shortening (all of it, unless cut)."""

    first: Part
    last: Part
    text: str
    kept: int | None = None

    @property
    def body(self) -> str:
        return self.text if self.kept is None else self.text[: self.kept]

    def shortened(self) -> _Report:
        """Half of the report's own text and one marker, however often it is shortened."""
        kept = len(self.body) // 2
        return _Report(self.first, self.last, self.body[:kept] + _LEFT_OUT, kept)


def _coalesced(layout: LogLayout, pieces: list[Part | _Report]) -> list[Part | _Report]:
    """Runs of parts not yet analysed joined into one span, to be planned afresh with a
    window that is known (halves, planned without one, stay halves)."""
    joined: list[Part | _Report] = []
    for piece in pieces:
        previous = joined[-1] if joined else None
        if isinstance(piece, Part) and isinstance(previous, Part):
            joined[-1] = layout.part(previous.start, piece.end)
        else:
            joined.append(piece)
    return joined


def _plan(layout: LogLayout, span: Part, sizing: Sizing) -> list[Part]:
    """``span`` in parts that fit what is known; always progress, or the window is too
    small. With a stated window, as few parts as fit; with only refusals without numbers,
    halves (as even as the entries allow) until each fits."""
    cost = sizing.content_cost(PATTERN_DETECTION_PROMPT)
    if cost is None:
        return [span]
    if sizing.window is not None:
        return plan_parts(layout.measured(cost), _UNIT, span.start, span.end)
    return _halves(layout, span, sizing)


def _part_classes(layout: LogLayout, part: Part) -> Classes:
    """The estimate of the request that analyses ``part``, by kind of text."""
    if part.sent_bytes is not None:  # a cut entry and its marker
        return request_classes(PATTERN_DETECTION_PROMPT, part.content(layout.log))
    return classes_sum(
        _instructions(PATTERN_DETECTION_PROMPT), layout.classes(part.start, part.end)
    )


def _halves(layout: LogLayout, part: Part, sizing: Sizing) -> list[Part]:
    if sizing.fits(_part_classes(layout, part)):
        return [part]
    if part.sent_size <= _SMALLEST_PART:
        raise sizing.too_small()
    return [piece for half in halve(layout, part) for piece in _halves(layout, half, sizing)]


def _shortened(pair: list[_Report], sizing: Sizing) -> list[_Report]:
    """Both reports of a pair cut to half, for a merge request that does not fit.

    Raises:
        WindowTooSmallError: both are already too short to be worth merging.
    """
    if all(len(report.body) <= _SMALLEST_REPORT for report in pair):
        raise sizing.too_small()
    return [report.shortened() for report in pair]


def _merge_content(layout: LogLayout, group: list[_Report]) -> bytes:
    labelled = [
        (layout.part(report.first.start, report.last.end).label(layout.log), report.text)
        for report in group
    ]
    return merge_content(labelled, len(group))


def _groups(layout: LogLayout, reports: list[_Report], sizing: Sizing) -> list[list[_Report]]:
    """Consecutive groups of reports that fit one merge request, sized like parts; never a
    lone report while another could join it, so every round makes progress. A pair too
    large even alone is shortened to fit, as a provider would otherwise cut it silently
    (Ollama does)."""

    def fits(group: list[_Report]) -> bool:
        return sizing.fits(request_classes(MERGE_PROMPT, _merge_content(layout, group)))

    groups: list[list[_Report]] = [[]]
    for report in reports:
        candidate = [*groups[-1], report]
        if len(candidate) > 2 and not fits(candidate):
            groups.append([report])
        else:
            groups[-1] = candidate
    fitted = []
    for group in groups:
        shortened = group
        while len(shortened) == 2 and not fits(shortened):
            shortened = _shortened(shortened, sizing)
        fitted.append(shortened)
    return fitted


def _in_context(error: AxeError, what: str) -> AxeError:
    """``error`` itself, with what failed in front of its message: its kind (so the exit
    code is the one the same failure has on a log that fits) and its numbers are kept."""
    error.args = (f"{what}: {error}", *error.args[1:])
    return error
