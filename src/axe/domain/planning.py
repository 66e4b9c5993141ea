"""The big-log planner: which requests analyse a log, learnt from how the provider answers.

A pure state machine over values, drawn in architecture.md ("Big logs"), its rules stated in
docs/big-logs.md: :func:`start` gives the first plan, ``plan.batch()`` the requests to send
next and ``plan.after(outcomes)`` the plan that follows from what came of each, until the
analysis is :class:`Finished` or has :class:`Failed`. The application sends; nothing here does.
"""

from __future__ import annotations

import enum
import functools
import math
from collections.abc import Callable, Sequence

import attrs
from attrs import frozen

from axe.domain.errors import (
    AxeError,
    PromptTooLargeError,
    RefusalMismatchError,
    WindowTooSmallError,
)
from axe.domain.limits import MIN_INPUT_TOKENS
from axe.domain.parts import LogLayout, Measure, Part, halve, plan_parts
from axe.domain.prompt import (
    ANALYSIS_MAX_TOKENS,
    MERGE_PROMPT,
    PATTERN_DETECTION_PROMPT,
    merge_content,
)
from axe.domain.results import Completion
from axe.domain.tokens import Calibration, Classes, classes_sum, most_tokens, token_classes

_CALIBRATED_MARGIN = 0.95  # estimates scaled to a provider's count are exact on average only
_SMALLEST_PART = 64  # bytes of the log; a part this small refused: the window is too small
_SMALLEST_ROOM = 16  # tokens left for the log beside the instructions: less is no part at all
_SMALLEST_REPORT = 64  # characters of a part's report; shorter is no report to merge
_FRAMING: Classes = (0, 0, 0, 0, 0, 0, 16)  # role markers and framing around the two texts
_HALF = 0.55  # of the content refused without numbers: its halves fit, uneven ones too
_UNIT = 1 << 20  # what one request may cost in the units parts are planned in
_MISMATCH = 2  # a count this many times the estimate, or a window this many times it, is untrue

Outcome = Completion | AxeError | None  # what one request came to; None: it was not sent


@functools.cache
def _instructions(system_prompt: str) -> Classes:
    return classes_sum(token_classes(system_prompt.encode()), _FRAMING)


def request_classes(system_prompt: str, content: bytes) -> Classes:
    """The estimate of one request by kind of text: instructions, message and framing."""
    return classes_sum(_instructions(system_prompt), token_classes(content))


def prompt_cost(system_prompt: str, content: bytes) -> int:
    """Estimated input tokens of one request: instructions, user message and framing."""
    return math.ceil(sum(request_classes(system_prompt, content)))


class Stage(enum.Enum):
    """What the requests of a batch are for."""

    WHOLE = "whole"  # the whole log in one request
    PARTS = "parts"  # parts of a log split at entries
    MERGE = "merge"  # merges of part reports


@frozen(repr=False, eq=False)  # working state, used by identity; cheaper to define
class Ask:
    """One request: ``system_prompt`` and, as content, ``source`` itself or the bytes of
    ``part`` in it (made when sent, so a batch of parts holds no copy of the log).
    ``classes`` is its estimate by kind of text; None for a log sent whole with no window
    known, or one that surely fits it, estimated only when asked (a refusal, a budget)."""

    system_prompt: str
    source: bytes
    classes: Classes | None
    part: Part | None = None

    def content(self) -> bytes:
        return self.source if self.part is None else self.part.content(self.source)

    def estimate(self) -> Classes:
        """``classes``, or the estimate made now: the planner's own, as such a span lies
        in one piece of the layout, or the log is estimated whole."""
        return self.classes or request_classes(self.system_prompt, self.content())


@frozen
class Batch:
    """Requests to send together (a bounded few at a time; the first failure stops what
    has not started), and what a frontend is told of them: ``total`` parts the log is planned
    in now (``PARTS``) or reports this round merges (``MERGE``), ``done`` parts reported."""

    stage: Stage
    asks: tuple[Ask, ...]
    total: int = 1
    done: int = 0


@frozen
class Finished:
    """The report: the one reply of a log that fits, or the last merge; it covers the log
    from byte ``start`` on (0 unless a budget left the oldest entries out)."""

    text: str
    start: int = 0


@frozen
class Failed:
    """A request failed for another reason than its size: ``error`` as the client gave it,
    and where: part ``at`` of ``of`` (``PARTS``), a merge of ``of`` reports (``MERGE``), or
    the whole log (``WHOLE``)."""

    error: AxeError
    stage: Stage
    at: int = 0
    of: int = 0


@frozen
class Sizing:
    """What is known of how large one request may be: each lesson returns a new value,
    handed from plan to plan, so nothing learnt is lost between batches and rounds.

    ``cap`` (the client's limit, known before sending) and ``limit`` (the window a refusal
    stated) are in the provider's tokens; ``calibration`` bounds its count from the requests
    it counted; ``ceiling`` is the most estimated tokens a request may have after refusals
    without numbers (each halves the content it refused); ``answered_once``: a reply came,
    counted or not, so probing one part at a time is over.
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

    def surely_fits(self, tokens: float) -> bool:
        """Whether any request estimated at ``tokens`` or fewer may be sent: no limit
        measures a request above the sum of its estimate."""
        return all(tokens <= room for _, room in self._rooms())

    def content_cost(self, system_prompt: str) -> Measure:
        """What a request of ``system_prompt`` and some content (by its estimate by kind of
        text) costs, in units of which one request may hold ``_UNIT``.

        Raises:
            WindowTooSmallError: the instructions leave no room for a part of the log.
        """
        rooms = self._rooms()
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
            return attrs.evolve(self, answered_once=True)
        return attrs.evolve(self, calibration=self.calibration.learnt(request, usage.input_tokens))

    def refused(self, refusal: PromptTooLargeError, ask: Ask) -> Sizing:
        """What a refusal of ``ask`` (estimated) teaches.

        Raises:
            WindowTooSmallError: the provider says no input fits at all (the reply takes
                the whole window).
            RefusalMismatchError: what the provider says cannot be true of ``ask``.
        """
        request = ask.estimate()
        if refusal.limit is not None and refusal.limit <= 0:
            raise WindowTooSmallError(limit=None, instructions=None, reply=ANALYSIS_MAX_TOKENS)
        _check_believable(refusal, ask, sum(request))
        learnt = self
        if refusal.limit is not None:
            learnt = attrs.evolve(learnt, limit=min(refusal.limit, self.limit or refusal.limit))
            if refusal.tokens:  # a limit alone (a prompt Ollama cut) says nothing of the count
                calibration = learnt.calibration.learnt(request, refusal.tokens)
                learnt = attrs.evolve(learnt, calibration=calibration)
        if learnt.fits(request):  # nothing said by how much: half the log it refused, at most
            beside = _instructions(ask.system_prompt)
            content = sum(request) - sum(beside)
            learnt = attrs.evolve(learnt, ceiling=int(sum(beside) + content * _HALF))
        return learnt

    def too_small(self) -> WindowTooSmallError:
        """The failure for a window that holds no part of the log beside the instructions,
        both numbers in the provider's tokens (an estimate beside a real limit could claim
        instructions bigger than a window that holds them); the window named only when a
        stated limit is what binds."""
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


def _check_believable(refusal: PromptTooLargeError, ask: Ask, estimate: float) -> None:
    """Raises RefusalMismatchError when the refusal cannot be true of ``ask``, whose
    ``estimate`` errs high by design: it counts far more than that, or states a window
    that holds it many times over, or, with no numbers at all, refuses what is already
    within the smallest window gc supports (where halving only wastes requests)."""
    counted_more = refusal.tokens is not None and refusal.tokens > _MISMATCH * estimate
    room_to_spare = refusal.limit is not None and _MISMATCH * estimate <= refusal.limit
    no_numbers = refusal.tokens is None and refusal.limit is None
    if counted_more or room_to_spare or (no_numbers and estimate <= MIN_INPUT_TOKENS):
        content = len(ask.content())
        raise RefusalMismatchError(str(refusal), content=content, estimate=math.ceil(estimate))


def start(log: bytes, cap: int | None, layout: LogLayout | None = None) -> Plan | Finished:
    """The first plan for ``log``, ``cap`` being the most input tokens the client knows
    one request may carry (None: unknown, and the log goes whole, as the spec says);
    ``layout``, the log's entries and estimates when they are already known (a budget
    needs them even when the window is not).

    Raises:
        WindowTooSmallError: the window holds no part beside gc's instructions, or no merge.
    """
    sizing = Sizing(cap=cap)
    if sizing.window is None and layout is None:  # not even estimated: a log that fits costs
        return _Whole(sizing, Ask(PATTERN_DETECTION_PROMPT, log, None))  # nothing more
    layout = layout or LogLayout(log)
    return _first(layout, sizing, layout.part(0, len(log)))


def _first(layout: LogLayout, sizing: Sizing, span: Part) -> Plan | Finished:
    """``span`` in one request if it may fit (the whole log is sent as read), else in parts.

    Raises:
        WindowTooSmallError: as :func:`_planned`.
    """
    classes: Classes | None = None  # a span that surely fits: estimated only when asked
    if not _surely_fits(layout, sizing, span):
        classes = _part_classes(layout, span)
        if sizing.window is not None and not sizing.fits(classes):
            return _planned(layout, sizing, (span,))
    part = None if (span.start, span.end) == (0, len(layout.log)) else span
    return _Whole(sizing, Ask(PATTERN_DETECTION_PROMPT, layout.log, classes, part), layout)


def _surely_fits(layout: LogLayout, sizing: Sizing, span: Part) -> bool:
    """Whether ``span`` fits the known window at the most its bytes can be estimated at:
    then a log that fits costs no pass over its bytes (the estimate made later, if asked
    for, is the layout's: the span lies in one piece of it)."""
    if sizing.window is None or span.sent_bytes is not None:
        return False
    most = sum(_instructions(PATTERN_DETECTION_PROMPT)) + most_tokens(span.end - span.start)
    return layout.in_one_piece(span.start, span.end) and sizing.surely_fits(most)


def narrowed(plan: Plan, at: int) -> Plan | Finished:
    """``plan`` for the log from byte ``at`` on (where an entry begins) only: what lies
    before is left out, a report that covers any of it too, and what is left is planned
    afresh with what is known (one report left is the report).

    Raises:
        WindowTooSmallError: as :func:`start`.
    """
    layout = _layout(plan)
    kept: list[Piece] = []
    for piece in plan.pieces:
        if piece.start >= at:
            kept.append(piece)
        elif piece.end > at and isinstance(piece, Part):
            kept.append(layout.part(at, piece.end))
    if len(kept) == 1 and isinstance(kept[0], Part):
        return _first(layout, plan.sizing, kept[0])
    return _planned(layout, plan.sizing, tuple(kept))


def narrowing_points(plan: Plan) -> list[int]:
    """Where the analysis of ``plan`` may begin instead, oldest first: where it begins
    now, then each later entry's start that no report already made runs across. Text
    before the first entry goes only with every entry."""
    layout, pieces = _layout(plan), plan.pieces
    first = pieces[0].start
    inside = layout.bounds_between(first, len(layout.log))[1:-1]
    if first == 0 and layout.entries_between(0, 1) == 0:  # text before the first entry
        inside = inside[1:]
    reports = [(piece.start, piece.end) for piece in pieces if isinstance(piece, _Report)]
    return [first] + [
        point for point in inside if not any(start < point < end for start, end in reports)
    ]


def _layout(plan: Plan) -> LogLayout:
    if isinstance(plan, _Whole):
        return plan.layout or LogLayout(plan.ask.source)
    return plan.layout


@frozen(repr=False, eq=False)  # working state, used by identity; cheaper to define
class _Whole:
    """The whole log in one request."""

    sizing: Sizing
    ask: Ask
    layout: LogLayout | None = None

    def batch(self) -> Batch:
        return Batch(Stage.WHOLE, (self.ask,))

    @property
    def pieces(self) -> tuple[Part]:
        """The one span it analyses: the whole log, or its newest entries under a budget."""
        return (self.ask.part or _layout(self).part(0, len(self.ask.source)),)

    def after(self, outcomes: Sequence[Outcome]) -> Plan | Finished | Failed:
        (outcome,) = outcomes
        if outcome is None:
            return self
        if isinstance(outcome, Completion):
            return Finished(outcome.text, self.ask.part.start if self.ask.part else 0)
        if not isinstance(outcome, PromptTooLargeError):
            return Failed(outcome, Stage.WHOLE)
        layout = _layout(self)
        whole = self.ask.part or layout.part(0, len(layout.log))
        ask = attrs.evolve(self.ask, classes=self.ask.classes or _part_classes(layout, whole))
        return _planned(layout, self.sizing.refused(outcome, ask), (whole,))


@frozen(repr=False, eq=False)  # working state, used by identity; cheaper to define
class _Report:
    """The report on bytes ``start:end`` of the log (a part, or a run of merged ones);
    ``cut`` once its ``body`` was shortened to fit a merge."""

    start: int
    end: int
    body: str
    cut: bool = False

    @property
    def text(self) -> str:
        return self.body + _LEFT_OUT if self.cut else self.body

    def shortened(self) -> _Report:
        """Half of its own text, and one marker however often it is shortened."""
        return attrs.evolve(self, body=self.body[: len(self.body) // 2], cut=True)


_LEFT_OUT = "\n[... rest of this report left out ...]"
Piece = Part | _Report  # a part still to analyse, or the report of one


@frozen(repr=False, eq=False)  # working state, used by identity; cheaper to define
class _Parts:
    """Every entry in exactly one piece, in log order; ``sending`` are the parts to send
    now (the first alone while probing)."""

    layout: LogLayout
    sizing: Sizing
    pieces: tuple[Piece, ...]
    sending: tuple[Part, ...]

    def batch(self) -> Batch:
        done = sum(isinstance(piece, _Report) for piece in self.pieces)
        asks = tuple(self._ask(part) for part in self.sending)
        return Batch(Stage.PARTS, asks, len(self.pieces), done)

    def _ask(self, part: Part) -> Ask:
        classes = _part_classes(self.layout, part)
        return Ask(PATTERN_DETECTION_PROMPT, self.layout.log, classes, part)

    def after(self, outcomes: Sequence[Outcome]) -> Plan | Finished | Failed:
        """Reports in place of the parts answered; the rest re-planned with what the batch
        taught. The earliest failure is said, after what the others taught."""
        sizing, pieces = self.sizing, list(self.pieces)
        failure: Failed | None = None
        for part, outcome in zip(self.sending, outcomes, strict=True):
            at = pieces.index(part)
            if isinstance(outcome, Completion):
                sizing = sizing.answered(_part_classes(self.layout, part), outcome)
                pieces[at] = _Report(part.start, part.end, outcome.text)
            elif isinstance(outcome, PromptTooLargeError):
                sizing = sizing.refused(outcome, self._ask(part))
                if part.sent_size <= _SMALLEST_PART:  # the marker of a cut entry not counted
                    raise sizing.too_small() from outcome
            elif outcome is not None and failure is None:
                failure = Failed(outcome, Stage.PARTS, at + 1, len(pieces))
        return failure or _planned(self.layout, sizing, tuple(pieces))


def _planned(layout: LogLayout, sizing: Sizing, pieces: tuple[Piece, ...]) -> Plan | Finished:
    """The parts still to analyse planned afresh with what is known; the merges once
    every part has its report.

    Raises:
        WindowTooSmallError: no part fits, or no merge of two reports could.
    """
    reports = [piece for piece in pieces if isinstance(piece, _Report)]
    if len(reports) == len(pieces):
        return _merge_round(layout, sizing, reports)
    planned = _replanned(layout, sizing, pieces)
    if len(planned) > 1 and not _can_merge(sizing):
        raise sizing.too_small()
    todo = tuple(piece for piece in planned if isinstance(piece, Part))
    return _Parts(layout, sizing, planned, todo[:1] if sizing.probing else todo)


def _can_merge(sizing: Sizing) -> bool:
    """Whether the merge prompt and two empty reports may fit, so that a window no merge
    fits is found before the parts are paid for. Judged leniently (refusing a log whose
    merges would have fitted is worse than paying for its parts): within a ceiling (which
    only falls), and within the window at the lowest rate the provider was seen to count
    (not before it counted: uncalibrated, the estimate errs high)."""
    merge = request_classes(MERGE_PROMPT, _SMALLEST_MERGE)
    if sizing.ceiling is not None and sum(merge) > sizing.ceiling:
        return False
    calibration, window = sizing.calibration, sizing.window
    return window is None or not calibration.samples or calibration.least(merge) <= window


_SMALLEST_MERGE = merge_content([("entry 1", ""), ("entry 2", "")], 2)


def _replanned(layout: LogLayout, sizing: Sizing, pieces: Sequence[Piece]) -> tuple[Piece, ...]:
    """The parts not yet analysed planned afresh; with a window known, each run of them
    is joined first (halves, planned without one, stay halves)."""
    spans = _coalesced(layout, pieces) if sizing.window else pieces
    return tuple(
        piece
        for span in spans
        for piece in (_plan(layout, span, sizing) if isinstance(span, Part) else [span])
    )


def _coalesced(layout: LogLayout, pieces: Sequence[Piece]) -> list[Piece]:
    """Runs of parts not yet analysed joined into one span."""
    joined: list[Piece] = []
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
    halves (as even as the entries allow) until each fits.

    Raises:
        WindowTooSmallError: an entry too large for the window cannot be cut smaller (it is
            no longer than the least head ever sent), or its least head cannot fit even at
            the lowest rate the provider was seen to count: said before it is sent.
    """
    cost = sizing.content_cost(PATTERN_DETECTION_PROMPT)  # a limit is known: a cap, or a refusal
    if sizing.window is None:
        return _halves(layout, span, sizing)
    parts = plan_parts(layout.measured(cost), _UNIT, span.start, span.end)
    if any(_hopeless(layout, part, sizing) for part in parts if part.sent_bytes is not None):
        raise sizing.too_small()
    return parts


def _hopeless(layout: LogLayout, cut: Part, sizing: Sizing) -> bool:
    """Whether a cut entry certainly cannot fit the known window: its head is the whole
    entry (the marker only adds to what did not fit), or even at the lowest rate the
    provider was seen to count it is over (the estimate errs high, so only then)."""
    if cut.sent_size >= cut.end - cut.start:
        return True
    calibration, window = sizing.calibration, sizing.window
    request = request_classes(PATTERN_DETECTION_PROMPT, cut.content(layout.log))
    return bool(calibration.samples) and window is not None and calibration.least(request) > window


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


@frozen(repr=False, eq=False)  # working state, used by identity; cheaper to define
class _Merge:
    """One round of merges: consecutive ``groups`` of the reports, those of two or more
    sent (``asks``, in order)."""

    layout: LogLayout
    sizing: Sizing
    groups: tuple[tuple[_Report, ...], ...]
    asks: tuple[Ask, ...]

    @property
    def reports(self) -> int:
        """How many reports this round starts from."""
        return sum(map(len, self.groups))

    @property
    def pieces(self) -> tuple[_Report, ...]:
        return tuple(report for group in self.groups for report in group)

    def batch(self) -> Batch:
        return Batch(Stage.MERGE, self.asks, self.reports)

    def after(self, outcomes: Sequence[Outcome]) -> Plan | Finished | Failed:
        """The merged reports in place of their groups; a refused group is regrouped, with
        what its refusal taught, in the next round."""
        sizing, merged = self.sizing, {}
        sent = [index for index, group in enumerate(self.groups) if len(group) > 1]
        for index, ask, outcome in zip(sent, self.asks, outcomes, strict=True):
            group = self.groups[index]
            if isinstance(outcome, Completion):
                sizing = sizing.answered(ask.estimate(), outcome)
                merged[index] = _Report(group[0].start, group[-1].end, outcome.text)
            elif isinstance(outcome, PromptTooLargeError):
                sizing = sizing.refused(outcome, ask)
            elif outcome is not None:
                return Failed(outcome, Stage.MERGE, of=self.reports)
        reports = [
            report
            for index, group in enumerate(self.groups)
            for report in ([merged[index]] if index in merged else group)
        ]
        return _merge_round(self.layout, sizing, reports)


def _merge_round(layout: LogLayout, sizing: Sizing, reports: list[_Report]) -> Plan | Finished:
    """The next round of merges, or the one report left.

    Raises:
        WindowTooSmallError: two reports cut as short as they go do not fit one request.
    """
    if len(reports) == 1:
        return Finished(reports[0].text, reports[0].start)
    groups = _groups(layout, reports, sizing)
    asks = tuple(
        Ask(MERGE_PROMPT, content, request_classes(MERGE_PROMPT, content))
        for content in (_merge_content(layout, group) for group in groups if len(group) > 1)
    )
    return _Merge(layout, sizing, groups, asks)


def _merge_content(layout: LogLayout, group: Sequence[_Report]) -> bytes:
    labelled = [(layout.part(r.start, r.end).label(layout.log), r.text) for r in group]
    return merge_content(labelled, len(group))


def _groups(
    layout: LogLayout, reports: list[_Report], sizing: Sizing
) -> tuple[tuple[_Report, ...], ...]:
    """Consecutive groups of reports that fit one merge request, sized like parts; never a
    lone report while another could join it, so every round makes progress. A pair too
    large even alone has both its reports cut to half, as often as it takes, as a provider
    would otherwise cut it silently (Ollama does).

    Raises:
        WindowTooSmallError: the pair is already too short to be worth merging.
    """

    def fits(group: Sequence[_Report]) -> bool:
        return sizing.fits(request_classes(MERGE_PROMPT, _merge_content(layout, group)))

    def fitted(group: tuple[_Report, ...]) -> tuple[_Report, ...]:
        while len(group) == 2 and not fits(group):
            if all(len(report.body) <= _SMALLEST_REPORT for report in group):
                raise sizing.too_small()
            group = tuple(report.shortened() for report in group)
        return group

    groups: list[tuple[_Report, ...]] = [()]
    for report in reports:
        candidate = (*groups[-1], report)
        if len(candidate) > 2 and not fits(candidate):
            groups.append((report,))
        else:
            groups[-1] = candidate
    return tuple(map(fitted, groups))


Plan = _Whole | _Parts | _Merge  # what to send next, and what follows from its outcomes
