"""The big-log planner (docs/big-logs.md), a pure state machine in units of a
:class:`~axe.domain.log_index.LogIndex`: :func:`start` gives the first plan, ``batch()`` the
requests to send, ``after(outcomes)`` the next plan, until :class:`Finished` or :class:`Failed`."""

from __future__ import annotations

import enum
import functools
import itertools
import math
from collections.abc import Sequence

import attrs
from attrs import frozen

from axe.domain.errors import (
    AxeError,
    PromptTooLargeError,
    RefusalMismatchError,
    WindowTooSmallError,
)
from axe.domain.limits import MIN_INPUT_TOKENS
from axe.domain.log_index import LogIndex
from axe.domain.parts import Part, content, halve, label, plan_parts, size
from axe.domain.prompt import (
    ANALYSIS_MAX_TOKENS,
    MERGE_PROMPT,
    PATTERN_DETECTION_PROMPT,
    merge_content,
)
from axe.domain.results import Completion
from axe.domain.token_estimate import TokenEstimate, estimate_tokens

FRAMING = 16  # tokens a provider adds around the instructions and the message, at most
_HALF = 0.55  # of the content refused without numbers: its halves fit, uneven ones too
_SMALLEST_PART = 64  # bytes of the log; a part this small refused: the window is too small
_SMALLEST_REPORT = 64  # characters of a part's report; shorter is no report to merge
_MISMATCH = 2  # a count this many times the estimate, or a window this many times it, is untrue
# A part's report as merges are foreseen: three short sections, about 500 bytes.
ASSUMED_REPORT = "\n".join(
    f"## {heading}\n"
    + "- Seen in entries 2026-01-01T10:00:00Z to 2026-01-09T10:00:00Z; what it suggests.\n" * 2
    for heading in ("Patterns Found", "Repeated Work", "Recommendations")
)

Outcome = Completion | AxeError | None  # what one request came to; None: it was not sent


class Stage(enum.Enum):
    """What the requests of a batch are for."""

    WHOLE = "whole"  # the whole log (or its newest entries) in one request
    PARTS = "parts"  # parts of a log split at entries
    MERGE = "merge"  # merges of part reports


@functools.cache
def instructions(system_prompt: str) -> TokenEstimate:
    prompt = estimate_tokens(system_prompt.encode())
    return TokenEstimate(prompt.most + FRAMING, prompt.likely + FRAMING)


def request_tokens(system_prompt: str, of_content: TokenEstimate) -> TokenEstimate:
    beside = instructions(system_prompt)
    return TokenEstimate(beside.most + of_content.most, beside.likely + of_content.likely)


@frozen
class Ask:
    """One request, its content made when sent (units ``part`` of ``index``'s log, else
    ``text``); ``counted``: the provider's own count, where it gave one."""

    system_prompt: str
    tokens: TokenEstimate | None
    index: LogIndex | None = None
    part: Part | None = None
    text: bytes = b""
    counted: int | None = None

    def content(self) -> bytes:
        if self.index is not None and self.part is not None:
            return content(self.index, self.part)
        return self.text

    def estimate(self) -> TokenEstimate:
        if self.tokens is not None:
            return self.tokens
        return request_tokens(self.system_prompt, estimate_tokens(self.content()))


def part_ask(index: LogIndex, part: Part) -> Ask:
    if part.sent is None:
        of_content = index.cost(part.first, part.last)
    else:
        of_content = estimate_tokens(content(index, part))
    tokens = request_tokens(PATTERN_DETECTION_PROMPT, of_content)
    return Ask(PATTERN_DETECTION_PROMPT, tokens, index, part)


@frozen
class Batch:
    """Requests to send together; ``total``: the parts planned (``PARTS``) or the reports
    this round merges (``MERGE``); ``done``: parts reported."""

    stage: Stage
    asks: tuple[Ask, ...]
    total: int = 1
    done: int = 0


@frozen
class Finished:
    """The report; it covers the log from unit ``first`` on (a budget may leave some out)."""

    text: str
    first: int = 0


@frozen
class Failed:
    """A request failed for another reason than its size: part ``at`` of ``of`` (``PARTS``),
    a merge of ``of`` reports (``MERGE``), or the whole log (``WHOLE``)."""

    error: AxeError
    stage: Stage
    at: int = 0
    of: int = 0


@frozen
class Sizing:
    """What is known of how large one request may be: ``window``, in the provider's tokens;
    ``ratio``, the most the provider was seen counting above gc's upper estimate (1: never);
    ``ceiling``, the most the estimate may be after refusals without numbers."""

    window: int | None = None
    ratio: float = 1.0
    ceiling: int | None = None
    seen: float | None = None  # the last count over the estimate, for telling a person
    answered: bool = False  # a reply came since the ceiling was guessed

    def fits(self, tokens: TokenEstimate) -> bool:
        if self.window is not None and tokens.most * self.ratio > self.window:
            return False
        return self.ceiling is None or tokens.most <= self.ceiling

    def counted(self, tokens: TokenEstimate, count: int) -> Sizing:
        seen = count / max(tokens.most, 1)
        return attrs.evolve(self, ratio=max(self.ratio, seen), seen=seen)

    @property
    def probing(self) -> bool:
        """Only refusals without numbers sized the parts and no reply came since: one part
        goes first, so a guess still too large costs one request, not many."""
        return self.ceiling is not None and not self.answered

    def answered_with(self, ask: Ask, completion: Completion) -> Sizing:
        answered = attrs.evolve(self, answered=True) if self.ceiling is not None else self
        usage = completion.usage
        if usage is None or usage.input_tokens <= 0:
            return answered
        return answered.counted(ask.estimate(), usage.input_tokens)

    def refused(self, refusal: PromptTooLargeError, ask: Ask) -> Sizing:
        """What a refusal of ``ask`` teaches.

        Raises:
            WindowTooSmallError: the provider says no input fits at all.
            RefusalMismatchError: what the provider says cannot be true of ``ask``.
        """
        request = ask.estimate()
        if refusal.limit is not None and refusal.limit <= 0:
            raise WindowTooSmallError(limit=None, instructions=None, reply=ANALYSIS_MAX_TOKENS)
        _check_believable(refusal, ask, request)
        learnt = self
        if refusal.limit is not None:
            learnt = attrs.evolve(learnt, window=min(refusal.limit, self.window or refusal.limit))
        if refusal.tokens:
            learnt = learnt.counted(request, refusal.tokens)
        if learnt.fits(request):  # nothing said by how much: half the content it refused
            beside = instructions(ask.system_prompt).most
            ceiling = int(beside + (request.most - beside) * _HALF)
            ceiling = min(ceiling, learnt.ceiling or ceiling)
            learnt = attrs.evolve(learnt, ceiling=ceiling, answered=False)
        return learnt

    def too_small(self) -> WindowTooSmallError:
        """A window that holds no part of the log beside the instructions; named if it binds."""
        beside = instructions(PATTERN_DETECTION_PROMPT).most * (self.seen or 1.0)
        binding = self.window is not None and (
            self.ceiling is None or self.window - beside <= self.ceiling
        )
        return WindowTooSmallError(
            limit=self.window if binding else None,
            instructions=math.ceil(beside),
            reply=ANALYSIS_MAX_TOKENS,
        )


def _check_believable(refusal: PromptTooLargeError, ask: Ask, request: TokenEstimate) -> None:
    """Raises RefusalMismatchError when the refusal cannot be true of ``ask``
    (docs/big-logs.md)."""
    counted_more = refusal.tokens is not None and refusal.tokens > _MISMATCH * request.most
    room_to_spare = refusal.limit is not None and _MISMATCH * request.most <= refusal.limit
    no_numbers = refusal.tokens is None and refusal.limit is None
    if counted_more or room_to_spare or (no_numbers and request.most <= MIN_INPUT_TOKENS):
        content_bytes = len(ask.content())
        raise RefusalMismatchError(str(refusal), content=content_bytes, estimate=request.most)


@frozen
class Report:
    """The report on units ``first`` to ``last``; ``cut`` once shortened to fit a merge."""

    first: int
    last: int
    body: str
    cut: bool = False

    @property
    def text(self) -> str:
        return self.body + _LEFT_OUT if self.cut else self.body

    def shortened(self) -> Report:
        return attrs.evolve(self, body=self.body[: len(self.body) // 2], cut=True)


_LEFT_OUT = "\n[... rest of this report left out ...]"
Piece = Part | Report  # a part still to analyse, or the report of one


def start(log: bytes, window: int | None, index: LogIndex | None = None) -> Plan | Finished:
    """The first plan; ``window`` None: unknown, so the log goes whole, as the spec says.

    Raises:
        WindowTooSmallError: the window holds no part beside gc's instructions, or no merge.
    """
    sizing = Sizing(window=window)
    beside = instructions(PATTERN_DETECTION_PROMPT).most
    if index is None and (window is None or beside + len(log) <= window):  # no token is
        return Whole(sizing, Ask(PATTERN_DETECTION_PROMPT, None, text=log))  # above a byte
    return first_plan(index or LogIndex(log), sizing, 0)


def first_plan(index: LogIndex, sizing: Sizing, first: int) -> Plan | Finished:
    """Units ``first`` on in one request if it may fit, else in parts (raises as
    :func:`planned`)."""
    ask = part_ask(index, Part(first, index.units))
    if sizing.window is None or sizing.fits(ask.estimate()):
        return Whole(sizing, ask, first)
    return planned(index, sizing, (Part(first, index.units),))


@frozen(eq=False)
class Whole:
    """The log, from unit ``first`` on, in one request."""

    sizing: Sizing
    ask: Ask
    first: int = 0

    @property
    def index(self) -> LogIndex:
        return self.ask.index or LogIndex(self.ask.text)

    @property
    def pieces(self) -> tuple[Part]:
        return (Part(self.first, self.index.units),)

    def batch(self) -> Batch:
        return Batch(Stage.WHOLE, (self.ask,))

    def after(self, outcomes: Sequence[Outcome]) -> Plan | Finished | Failed:
        (outcome,) = outcomes
        if outcome is None:
            return self
        if isinstance(outcome, Completion):
            return Finished(outcome.text, self.first)
        if not isinstance(outcome, PromptTooLargeError):
            return Failed(outcome, Stage.WHOLE)
        sizing, index = self.sizing.refused(outcome, self.ask), self.index
        return planned(index, sizing, (Part(self.first, index.units),))


@frozen(eq=False)
class Parts:
    """Every unit in exactly one piece, in log order; ``sending``: the parts to send now."""

    index: LogIndex
    sizing: Sizing
    pieces: tuple[Piece, ...]
    sending: tuple[Part, ...]

    def batch(self) -> Batch:
        done = sum(isinstance(piece, Report) for piece in self.pieces)
        asks = tuple(part_ask(self.index, part) for part in self.sending)
        return Batch(Stage.PARTS, asks, len(self.pieces), done)

    def after(self, outcomes: Sequence[Outcome]) -> Plan | Finished | Failed:
        """The earliest failure is said after what the others taught."""
        sizing, pieces = self.sizing, list(self.pieces)
        failure: Failed | None = None
        for part, outcome in zip(self.sending, outcomes, strict=True):
            at, ask = pieces.index(part), part_ask(self.index, part)
            if isinstance(outcome, Completion):
                sizing = sizing.answered_with(ask, outcome)
                pieces[at] = Report(part.first, part.last, outcome.text)
            elif isinstance(outcome, PromptTooLargeError):
                sizing = sizing.refused(outcome, ask)
                if size(self.index, part) <= _SMALLEST_PART:
                    raise sizing.too_small() from outcome
            elif outcome is not None and failure is None:
                failure = Failed(outcome, Stage.PARTS, at + 1, len(pieces))
        return failure or planned(self.index, sizing, tuple(pieces))


def planned(index: LogIndex, sizing: Sizing, pieces: tuple[Piece, ...]) -> Plan | Finished:
    """The parts still to analyse planned afresh; the merges once every part has its report.

    Raises:
        WindowTooSmallError: no part fits, or no merge of two reports could.
    """
    reports = [piece for piece in pieces if isinstance(piece, Report)]
    if len(reports) == len(pieces):
        return merge_round(index, sizing, reports)
    replanned = _replanned(index, sizing, pieces)
    if len(replanned) > 1 and not _can_merge(sizing):
        raise sizing.too_small()
    todo = tuple(piece for piece in replanned if isinstance(piece, Part))
    return Parts(index, sizing, replanned, todo[:1] if sizing.probing else todo)


def _replanned(index: LogIndex, sizing: Sizing, pieces: Sequence[Piece]) -> tuple[Piece, ...]:
    """With a window known, each run of parts is joined first (halves stay halves)."""
    spans = _coalesced(pieces) if sizing.window else pieces
    return tuple(
        piece
        for span in spans
        for piece in (_split(index, span, sizing) if isinstance(span, Part) else [span])
    )


def _coalesced(pieces: Sequence[Piece]) -> list[Piece]:
    """Runs of parts not yet analysed joined into one span (a cut one stays as it is)."""
    joined: list[Piece] = []
    for piece in pieces:
        prev = joined[-1] if joined else None
        if isinstance(piece, Part) and isinstance(prev, Part) and not (piece.sent or prev.sent):
            joined[-1] = Part(prev.first, piece.last)
        else:
            joined.append(piece)
    return joined


def _split(index: LogIndex, span: Part, sizing: Sizing) -> list[Part]:
    """As few parts as fit a stated window, else halves.

    Raises:
        WindowTooSmallError: not even the smallest cut of an entry could fit.
    """
    if sizing.window is None or span.sent is not None:
        return _halves(index, span, sizing)

    def fits(part: Part) -> bool:
        return sizing.fits(part_ask(index, part).estimate())

    whole = index.cost(span.first, span.last).most * sizing.ratio
    guess = int((span.last - span.first) * sizing.window / max(whole, 1))
    try:
        return plan_parts(index, span.first, span.last, fits, guess)
    except ValueError:
        raise sizing.too_small() from None


def _halves(index: LogIndex, part: Part, sizing: Sizing) -> list[Part]:
    if sizing.fits(part_ask(index, part).estimate()):
        return [part]
    if size(index, part) <= _SMALLEST_PART:
        raise sizing.too_small()
    return [piece for half in halve(index, part) for piece in _halves(index, half, sizing)]


def _can_merge(sizing: Sizing) -> bool:
    """Whether two part reports may be merged, checked before any part is sent, by what a
    provider likely counts: refusing a log whose merges would fit is worse than paying."""
    if sizing.ceiling is not None and _merge_of(("", "")).most > sizing.ceiling:
        return False
    shortest = _merge_of(("x" * _SMALLEST_REPORT,) * 2)
    return sizing.window is None or shortest.likely <= sizing.window


@functools.cache
def _merge_of(reports: tuple[str, ...]) -> TokenEstimate:
    labelled = [(f"entries {9 * n + 1}-{9 * n + 9}", text) for n, text in enumerate(reports)]
    return request_tokens(MERGE_PROMPT, estimate_tokens(merge_content(labelled, len(reports))))


@frozen(eq=False)
class Merge:
    """One round of merges: consecutive ``groups``; ``asks``, those of two or more."""

    index: LogIndex
    sizing: Sizing
    groups: tuple[tuple[Report, ...], ...]
    asks: tuple[Ask, ...]

    @property
    def pieces(self) -> tuple[Report, ...]:
        return tuple(itertools.chain.from_iterable(self.groups))

    def batch(self) -> Batch:
        return Batch(Stage.MERGE, self.asks, len(self.pieces))

    def after(self, outcomes: Sequence[Outcome]) -> Plan | Finished | Failed:
        """A refused group is regrouped, with what its refusal taught, in the next round."""
        sizing, merged = self.sizing, {}
        sent = [index for index, group in enumerate(self.groups) if len(group) > 1]
        for index, ask, outcome in zip(sent, self.asks, outcomes, strict=True):
            group = self.groups[index]
            if isinstance(outcome, Completion):
                sizing = sizing.answered_with(ask, outcome)
                merged[index] = Report(group[0].first, group[-1].last, outcome.text)
            elif isinstance(outcome, PromptTooLargeError):
                sizing = sizing.refused(outcome, ask)
            elif outcome is not None:
                return Failed(outcome, Stage.MERGE, of=len(self.pieces))
        reports = [
            report
            for index, group in enumerate(self.groups)
            for report in ([merged[index]] if index in merged else group)
        ]
        return merge_round(self.index, sizing, reports)


def merge_round(index: LogIndex, sizing: Sizing, reports: list[Report]) -> Merge | Finished:
    """The next round of merges, or the one report left.

    Raises:
        WindowTooSmallError: two reports cut as short as they go do not fit one request.
    """
    if len(reports) == 1:
        return Finished(reports[0].text, reports[0].first)
    groups = _groups(index, reports, sizing)
    asks = tuple(_merge_ask(index, group) for group in groups if len(group) > 1)
    return Merge(index, sizing, groups, asks)


def _merge_ask(index: LogIndex, group: Sequence[Report]) -> Ask:
    labelled = [(label(index, report.first, report.last), report.text) for report in group]
    text = merge_content(labelled, len(group))
    return Ask(MERGE_PROMPT, request_tokens(MERGE_PROMPT, estimate_tokens(text)), text=text)


def _groups(
    index: LogIndex, reports: list[Report], sizing: Sizing
) -> tuple[tuple[Report, ...], ...]:
    """Consecutive groups that fit one merge request, never a lone report while another could
    join it; a pair too large is halved until it fits (a provider would cut it silently).

    Raises:
        WindowTooSmallError: the pair is already too short to be worth merging.
    """

    def fits(group: Sequence[Report]) -> bool:
        return sizing.fits(_merge_ask(index, group).estimate())

    def fitted(group: tuple[Report, ...]) -> tuple[Report, ...]:
        while len(group) == 2 and not fits(group):
            if all(len(report.body) <= _SMALLEST_REPORT for report in group):
                raise sizing.too_small()
            group = tuple(report.shortened() for report in group)
        return group

    groups: list[tuple[Report, ...]] = [()]
    for report in reports:
        candidate = (*groups[-1], report)
        if len(candidate) > 2 and not fits(candidate):
            groups.append((report,))
        else:
            groups[-1] = candidate
    return tuple(map(fitted, groups))


Plan = Whole | Parts | Merge  # what to send next, and what follows from its outcomes


def narrowing_points(plan: Plan) -> list[int]:
    """The units the analysis may begin at, oldest first: where it begins now, then each
    later unit no report runs across. Text before the first entry goes only with every entry."""
    points = [
        unit
        for piece in plan.pieces
        for unit in (range(piece.first, piece.last) if isinstance(piece, Part) else [piece.first])
    ]
    if points[0] == 0 and plan.index.preamble and points[1:2] == [1]:
        del points[1]
    return points


def narrowed(plan: Plan, first: int) -> Plan | Finished:
    """``plan`` for units ``first`` on only; a report that covers what lies before goes too.

    Raises:
        WindowTooSmallError: as :func:`start`.
    """
    kept: list[Piece] = []
    for piece in plan.pieces:
        if piece.first >= first:
            kept.append(piece)
        elif piece.last > first and isinstance(piece, Part):
            kept.append(Part(first, piece.last))
    if len(kept) == 1 and isinstance(kept[0], Part):
        return first_plan(plan.index, plan.sizing, kept[0].first)
    return planned(plan.index, plan.sizing, tuple(kept))
