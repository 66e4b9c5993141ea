"""Analysing one agent's memory log: one request when it fits, parts and a merge when not.

A log that fits is one request with the fixed prompt and the whole log (gc-spec §3.7), and
nothing here adds a request, a byte or an event to that path. A log that does not fit,
known up front (a window or cap the client reports) or from the provider's refusal, is
split into parts at entry boundaries; the parts are analysed concurrently, a bounded few at
a time over the one shared client, and their reports merged into one report with the same
three sections (in rounds, if the reports themselves do not fit one request).

Refusals are sized from the provider's own numbers when it gives them ("prompt is too
long: N tokens > M maximum"): the estimate is scaled to the provider's count and the parts
planned to fit M. Without numbers, the refused span is halved. Either way a refused part is
split again, so the analysis finishes on any log with any model.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Generic, TypeVar

from attrs import frozen

from axe.application.ports import AnalysisRequest, LLMClient, Output
from axe.application.workers import StopSignal, worker_pool
from axe.domain.errors import AgentError, ApiError, AxeError, ConfigError, PromptTooLargeError
from axe.domain.events import AnalysisSplit, MergeStarted, PartAnalysed
from axe.domain.model import MemoryConfig, ModelRef
from axe.domain.parts import LogLayout, Part, halve, plan_parts
from axe.domain.prompt import (
    ANALYSIS_MAX_TOKENS,
    ANALYSIS_TEMPERATURE,
    MERGE_PROMPT,
    PATTERN_DETECTION_PROMPT,
    merge_content,
)
from axe.domain.results import Analysis, Completion, Usage, total_usage
from axe.domain.tokens import TokenBudget, estimate_tokens

if TYPE_CHECKING:
    from concurrent.futures import Future
_FRAMING_TOKENS = 16  # role markers and message framing around the two texts
_CALIBRATED_MARGIN = 0.95  # estimates scaled to a provider's count are exact on average only
_SMALLEST_PART = 64  # bytes of the log; a part this small refused: the window is too small
_SMALLEST_ROOM = 16  # tokens left for the log beside the instructions: less is no part at all
_SMALLEST_REPORT = 64  # characters of a part's report; shorter is no report to merge

T = TypeVar("T")


def prompt_cost(system_prompt: str, content: bytes) -> int:
    """Estimated input tokens of one request: instructions, user message and framing."""
    return estimate_tokens(system_prompt.encode()) + estimate_tokens(content) + _FRAMING_TOKENS


@frozen
class _Sizing:
    """How large a request may be: a token budget, or None to halve on every refusal."""

    budget: TokenBudget | None

    def room(self, system_prompt: str) -> int | None:
        if self.budget is None:
            return None
        return self.budget.room() - prompt_cost(system_prompt, b"")

    def after(self, refusal: PromptTooLargeError, cost: int, cap: int | None) -> _Sizing:
        """Sizing learnt from a refusal of a request estimated at ``cost`` tokens.

        Raises:
            ApiError: the provider says no input fits at all (the reply takes the window).
        """
        if refusal.limit is not None and refusal.limit <= 0:
            raise ApiError(
                "the model's context window cannot hold gc's instructions beside a reply of "
                f"{ANALYSIS_MAX_TOKENS:,} tokens; use a model with a larger window, or "
                "--model builtin/heuristic"
            ) from refusal
        if not (refusal.tokens and refusal.limit):
            return self
        limit = refusal.limit if cap is None else min(refusal.limit, cap)
        return _Sizing(TokenBudget(limit, refusal.tokens / max(cost, 1), _CALIBRATED_MARGIN))

    def split(self, layout: LogLayout, part: Part) -> list[Part]:
        """``part`` in pieces that fit (or halves, when nothing is known); always progress."""
        room = self.room(PATTERN_DETECTION_PROMPT)
        if room is None:
            return halve(layout, part)
        if room < _SMALLEST_ROOM:
            raise _window_too_small(self.budget)
        pieces = plan_parts(layout, room, part.start, part.end)
        if all(piece.sent_size < part.sent_size for piece in pieces):
            return pieces
        return halve(layout, part)  # the budget thinks the refused part fits: trust the refusal


def _window_too_small(budget: TokenBudget | None = None) -> ApiError:
    """Both numbers in the provider's tokens: an estimate beside a real limit could claim
    instructions bigger than a window that in truth holds them, and only not a part."""
    size = f" ({budget.limit:,} tokens for input)" if budget is not None else ""
    scale = budget.scale if budget is not None else 1.0
    need = math.ceil(prompt_cost(PATTERN_DETECTION_PROMPT, b"") * scale)
    return ApiError(
        f"the model's context window{size} is too small to hold gc's instructions (about "
        f"{need:,} tokens) and a part of the log; use a model with a larger window, or "
        "--model builtin/heuristic"
    )


class _Slot(Generic[T]):
    """One item of an ordered batch of requests and, once answered, its completion."""

    def __init__(self, item: T) -> None:
        self.item = item
        self.completion: Completion | None = None


class LogAnalysis:
    """The analysis of one agent's log with one model; emits progress for that agent."""

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

    def run(self, memory: bytes) -> Analysis:
        """The report on ``memory``.

        Raises:
            ApiError: a request failed for another reason than its size; the message says
                which part or merge, when the log was split.
            AgentError: the provider is unknown.
        """
        request = self._request(PATTERN_DETECTION_PROMPT, memory)
        cap = self._llm.input_limit(request)
        sizing = _Sizing(TokenBudget(cap) if cap is not None else None)
        if sizing.budget is None or sizing.budget.fits(
            prompt_cost(PATTERN_DETECTION_PROMPT, memory)
        ):
            try:
                completion = self._send(request)
            except PromptTooLargeError as refusal:
                cost = prompt_cost(PATTERN_DETECTION_PROMPT, memory)
                return self._split(memory, sizing.after(refusal, cost, cap), cap)
            return self._analysis(completion.text, parts=1)
        return self._split(memory, sizing, cap)

    def _split(self, memory: bytes, sizing: _Sizing, cap: int | None) -> Analysis:
        layout = LogLayout(memory)
        parts = sizing.split(layout, layout.part(0, len(memory)))
        reports = self._analyse_parts(layout, parts, sizing, cap)
        if len(reports) == 1:
            return self._analysis(reports[0].text, parts=1)
        return self._analysis(self._merge(layout, reports, sizing, cap), parts=len(reports))

    def _analyse_parts(
        self, layout: LogLayout, parts: list[Part], sizing: _Sizing, cap: int | None
    ) -> list[_Report]:
        slots = [_Slot(part) for part in parts]
        self._output.emit(AnalysisSplit(self._agent, len(slots)))

        def request(part: Part) -> AnalysisRequest:
            return self._request(PATTERN_DETECTION_PROMPT, part.content(layout.log))

        def refused(slot: _Slot[Part], refusal: PromptTooLargeError) -> list[_Slot[Part]]:
            nonlocal sizing
            content = slot.item.content(layout.log)
            sizing = sizing.after(refusal, prompt_cost(PATTERN_DETECTION_PROMPT, content), cap)
            if slot.item.sent_size <= _SMALLEST_PART:  # the marker of a cut entry not counted
                raise _window_too_small(sizing.budget) from refusal
            pieces = [_Slot(piece) for piece in sizing.split(layout, slot.item)]
            self._output.emit(AnalysisSplit(self._agent, len(slots) - 1 + len(pieces)))
            return pieces

        def answered(done: int, total: int) -> None:
            self._output.emit(PartAnalysed(self._agent, done, total))

        def failed(error: AxeError, index: int, total: int) -> AxeError:
            return _in_context(error, f"analysis of part {index} of {total} failed")

        self._run(slots, request, refused, answered, failed)
        return [_Report(slot.item, slot.item, _text(slot)) for slot in slots]

    def _merge(
        self, layout: LogLayout, reports: list[_Report], sizing: _Sizing, cap: int | None
    ) -> str:
        """Merge reports in rounds until one is left: each round merges consecutive groups
        that fit one request; a refused group is split in two and each half merged."""
        while len(reports) > 1:
            self._output.emit(MergeStarted(self._agent, len(reports)))
            groups = _groups(layout, reports, sizing)
            reports = self._merge_round(layout, groups, sizing, cap)
        return reports[0].text

    def _merge_round(
        self, layout: LogLayout, groups: list[list[_Report]], sizing: _Sizing, cap: int | None
    ) -> list[_Report]:
        slots = [_group_slot(group) for group in groups]

        def request(group: list[_Report]) -> AnalysisRequest:
            return self._request(MERGE_PROMPT, _merge_content(layout, group))

        def refused(
            slot: _Slot[list[_Report]], refusal: PromptTooLargeError
        ) -> list[_Slot[list[_Report]]]:
            nonlocal sizing
            cost = prompt_cost(MERGE_PROMPT, _merge_content(layout, slot.item))
            sizing = sizing.after(refusal, cost, cap)
            group = slot.item
            if len(group) == 2:  # two reports too large together: each is cut to half
                return [_Slot(_shortened(group, sizing))]
            middle = len(group) // 2
            return [_group_slot(group[:middle]), _group_slot(group[middle:])]

        def failed(error: AxeError, index: int, total: int) -> AxeError:
            count = sum(len(group) for group in groups)
            return _in_context(error, f"merging the {count} part reports failed")

        self._run(slots, request, refused, lambda done, total: None, failed)
        return [_Report(slot.item[0].first, slot.item[-1].last, _text(slot)) for slot in slots]

    def _run(
        self,
        slots: list[_Slot[T]],
        request: Callable[[T], AnalysisRequest],
        refused: Callable[[_Slot[T], PromptTooLargeError], list[_Slot[T]]],
        answered: Callable[[int, int], None],
        failed: Callable[[AxeError, int, int], AxeError],
    ) -> None:
        """Send every slot's request, a few at a time; a refused slot is replaced, in
        place, by the slots ``refused`` returns, which are sent in turn. Fills ``slots``.

        On a failure nothing more is sent and what has not started is cancelled; requests
        in flight (all for earlier slots, as work starts in order) are waited for, so the
        earliest failing slot is the one reported, whatever the timing.
        """
        from concurrent.futures import FIRST_COMPLETED, wait  # noqa: PLC0415  (split logs only)

        failures: list[tuple[_Slot[T], AxeError]] = []
        with worker_pool(self._concurrency, "axe-request") as pool:

            def send(slot: _Slot[T]) -> Future[Completion]:
                return pool.submit(self._llm.complete, request(slot.item))

            running = {send(slot): slot for slot in slots if slot.completion is None}
            while running:
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in finished:
                    slot = running.pop(future)
                    if future.cancelled():
                        continue
                    pieces = self._settle(future, slot, slots, refused, failures)
                    running.update((send(p), p) for p in pieces if p.completion is None)
                    if failures:
                        for waiting in running:
                            waiting.cancel()  # only those not yet started are cancelled
                    elif slot.completion is not None:
                        answered(sum(s.completion is not None for s in slots), len(slots))
                self._stop.check()
        if failures:
            first, cause = min(failures, key=lambda failure: slots.index(failure[0]))
            raise failed(cause, slots.index(first) + 1, len(slots)) from cause

    def _settle(
        self,
        future: Future[Completion],
        slot: _Slot[T],
        slots: list[_Slot[T]],
        refused: Callable[[_Slot[T], PromptTooLargeError], list[_Slot[T]]],
        failures: list[tuple[_Slot[T], AxeError]],
    ) -> list[_Slot[T]]:
        """Take one finished request's outcome into ``slot``; returns the slots that now
        need sending (the pieces a refused slot was replaced by, in place)."""
        self._requests += 1
        try:
            slot.completion = future.result()
        except PromptTooLargeError as refusal:
            if failures:
                return []  # the batch is failing: nothing more is sent
            pieces = refused(slot, refusal)
            at = slots.index(slot)
            slots[at : at + 1] = pieces
            return pieces
        except AxeError as error:
            failures.append((slot, error))
            return []
        self._usages.append(slot.completion.usage)
        return []

    def _send(self, request: AnalysisRequest) -> Completion:
        self._requests += 1
        completion = self._llm.complete(request)
        self._usages.append(completion.usage)
        return completion

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
        return Analysis(
            text=text, usage=total_usage(self._usages), parts=parts, requests=self._requests
        )


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


def _shortened(pair: list[_Report], sizing: _Sizing) -> list[_Report]:
    """Both reports of a pair cut to half, for a merge request that does not fit.

    Raises:
        ApiError: both are already too short to be worth merging: the window is too small.
    """
    if all(len(report.body) <= _SMALLEST_REPORT for report in pair):
        raise _window_too_small(sizing.budget)
    return [report.shortened() for report in pair]


def _group_slot(group: list[_Report]) -> _Slot[list[_Report]]:
    """A merge group's slot; a lone report needs no request: it goes on as it is."""
    slot = _Slot(group)
    if len(group) == 1:
        slot.completion = Completion(group[0].text)
    return slot


def _merge_content(layout: LogLayout, group: list[_Report]) -> bytes:
    labelled = [
        (layout.part(report.first.start, report.last.end).label(layout.log), report.text)
        for report in group
    ]
    return merge_content(labelled, len(group))


def _groups(layout: LogLayout, reports: list[_Report], sizing: _Sizing) -> list[list[_Report]]:
    """Consecutive groups of reports that fit one merge request; never a lone report while
    another could join it, so every round makes progress. A pair too large even alone is
    shortened to fit, as a provider would otherwise cut it silently (Ollama does)."""
    room = sizing.room(MERGE_PROMPT)
    if room is None:
        return [reports]
    groups: list[list[_Report]] = [[]]
    for report in reports:
        candidate = [*groups[-1], report]
        if len(candidate) > 2 and estimate_tokens(_merge_content(layout, candidate)) > room:
            groups.append([report])
        else:
            groups[-1] = candidate
    return [_fitted(layout, group, room, sizing) for group in groups]


def _fitted(layout: LogLayout, group: list[_Report], room: int, sizing: _Sizing) -> list[_Report]:
    while len(group) == 2 and estimate_tokens(_merge_content(layout, group)) > room:
        group = _shortened(group, sizing)
    return group


def _text(slot: _Slot[T]) -> str:
    assert slot.completion is not None  # _run fills every slot or raises
    return slot.completion.text


def _in_context(error: AxeError, what: str) -> AxeError:
    """``error`` with what failed in front, of the same kind, so the exit code is the one
    the same failure has on a log that fits (a proxy misconfigured is exit 2 either way)."""
    kind = next(
        (kind for kind in (ApiError, ConfigError, AgentError) if isinstance(error, kind)),
        AgentError,
    )
    return kind(f"{what}: {error}")
