"""The big-log planner on its own (issue 24): properties of the plan over random logs,
windows and ways of refusing, the provider a pure function of the request: no LLM double,
no scheduler, no I/O.

The provider counts a request as a share of gc's estimate, kind of text by kind of text
(each share at most the estimate itself, as the estimate is built to be), and refuses what
exceeds its window in one of four styles: with its numbers, with none (a bare 413), with a
limit alone (Ollama's cut prompt), or never, the window being known up front (a cap).
Parts and merges are answered with the byte spans they cover, so what the plan does with
the reports can be followed to the end.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter

import pytest
from attrs import define, frozen
from hypothesis import example, given, settings
from hypothesis import strategies as st

from axe.domain.errors import (
    ApiError,
    AxeError,
    PromptTooLargeError,
    RefusalMismatchError,
    WindowTooSmallError,
)
from axe.domain.parts import LogLayout, Part
from axe.domain.planning import (
    Ask,
    Batch,
    Failed,
    Finished,
    Outcome,
    Plan,
    Sizing,
    Stage,
    narrowed,
    narrowing_points,
    prompt_cost,
    request_classes,
    start,
)
from axe.domain.prompt import ANALYSIS_MAX_TOKENS, MERGE_PROMPT, PATTERN_DETECTION_PROMPT
from axe.domain.results import Completion, Usage
from axe.domain.tokens import Classes, classes_sum
from tests.logs import planner_logs
from tests.support import entries, entry

STYLES = ["numbers", "bare", "limit", "cap"]
_SPAN = re.compile(rb"### Report \d+ of \d+ \([^\n]*\)\n\nspan (\d+)-(\d+)")


def true_classes(ask: Ask) -> Classes:
    return request_classes(ask.system_prompt, ask.content())


@given(planner_logs(), st.sampled_from([None, 10**3, 10**4, 10**5, 10**8]))
def test_a_log_goes_whole_exactly_when_its_estimate_fits(log: bytes, cap: int | None) -> None:
    """A log goes whole exactly when no window is known or the planner's estimate of its
    request fits the window, whether or not the estimate was made to decide (a log that
    surely fits is not estimated to be planned); and what its request is then estimated
    at, for a budget or a refusal, is that same estimate."""
    layout = LogLayout(log)
    beside = request_classes(PATTERN_DETECTION_PROMPT, b"")
    estimate = classes_sum(beside, layout.classes(0, len(log)))
    fits = cap is None or Sizing(cap=cap).fits(estimate)
    try:
        plan = start(log, cap, layout)
    except WindowTooSmallError:
        assert not fits
        return
    assert not isinstance(plan, Finished)
    batch = plan.batch()
    assert (batch.stage is Stage.WHOLE) == fits
    if fits:
        (ask,) = batch.asks
        assert ask.estimate() == estimate


@frozen
class Provider:
    """A window of ``window`` tokens refusing in ``style``; it counts each kind of text at
    its ``shares`` of the estimate; replies report their size if ``usage``; part reports
    are ``report`` characters beyond the span they name."""

    window: int
    style: str
    shares: tuple[float, ...]
    usage: bool = True
    report: int = 40

    def count(self, ask: Ask) -> int:
        counted = zip(self.shares, true_classes(ask), strict=True)
        return math.ceil(sum(share * size for share, size in counted))

    def answer(self, ask: Ask) -> Outcome:
        used = self.count(ask)
        if used > self.window:
            if self.style == "bare":
                return PromptTooLargeError("request too large")
            if self.style == "limit":
                return PromptTooLargeError("prompt cut", limit=self.window)
            return PromptTooLargeError("too long", tokens=used, limit=self.window)
        text = f"span {covered(ask)} " + "r" * self.report
        return Completion(text, Usage(used, 7) if self.usage else None)


def covered(ask: Ask) -> str:
    """The bytes of the log a request reports on: its part, or the runs its reports cover
    (which must follow each other), or the whole log."""
    if ask.part is not None:
        return f"{ask.part.start}-{ask.part.end}"
    if ask.system_prompt == MERGE_PROMPT:
        spans = spans_in(ask)
        assert all(a[1] == b[0] for a, b in itertools.pairwise(spans)), spans
        return f"{spans[0][0]}-{spans[-1][1]}"
    return f"0-{len(ask.source)}"


def spans_in(merge: Ask) -> list[tuple[int, int]]:
    return [(int(a), int(b)) for a, b in _SPAN.findall(merge.content())]


@define
class Run:
    """Every batch the plan asked for, what came of it, and the plan it led to."""

    steps: list[tuple[Plan, Batch, list[Outcome], Plan | Finished | Failed | None]]
    end: Finished | Failed | AxeError | None = None

    def sent(self, stage: Stage | None = None) -> list[tuple[Ask, Outcome]]:
        """The requests sent (those never started left out), in order, with their outcome."""
        return [
            (ask, outcome)
            for _, batch, outcomes, _ in self.steps
            for ask, outcome in zip(batch.asks, outcomes, strict=True)
            if outcome is not None and (stage is None or batch.stage is stage)
        ]


def drive(
    log: bytes, provider: Provider, *, started: int = 1, fail_at: int = 0, limit: int = 400
) -> Run:
    """The plan driven to its end against ``provider``. After a refusal or failure in a
    batch only ``started`` - 1 more requests of it are answered (the rest never started,
    as under a scheduler that stops); request number ``fail_at`` fails instead."""
    run = Run([])
    cap = provider.window if provider.style == "cap" else None
    sent = 0
    try:
        plan: Plan | Finished | Failed = start(log, cap)
        while not isinstance(plan, Finished | Failed):
            assert sent < limit, "the plan never ended"
            batch = plan.batch()
            outcomes: list[Outcome] = []
            stopped: int | None = None
            for index, ask in enumerate(batch.asks):
                if stopped is not None and index >= stopped + started:
                    outcomes.append(None)
                    continue
                sent += 1
                outcome = ApiError("boom") if sent == fail_at else provider.answer(ask)
                outcomes.append(outcome)
                if stopped is None and isinstance(outcome, AxeError):
                    stopped = index
            run.steps.append((plan, batch, outcomes, None))
            plan = plan.after(outcomes)
            run.steps[-1] = (*run.steps[-1][:3], plan)
        run.end = plan
    except (WindowTooSmallError, RefusalMismatchError) as error:
        run.end = error
    return run


def numbered_log(bodies: list[tuple[int, str]]) -> bytes:
    return b"".join(
        f"## {index:05d}\n**Task:** {word * size}\n\n".encode()
        for index, (size, word) in enumerate(bodies)
    )


_LOGS = st.lists(
    st.tuples(st.integers(0, 300), st.sampled_from(["w ", "日", "x", "word, ", "4 "])),
    min_size=1,
    max_size=40,
).map(numbered_log)
_PROVIDERS = st.builds(
    Provider,
    window=st.one_of(st.integers(300, 1100), st.integers(1100, 7000)),
    style=st.sampled_from(STYLES),
    shares=st.tuples(*[st.floats(0.3, 1.0)] * 7),
    usage=st.booleans(),
    report=st.sampled_from([10, 40, 300, 1500]),
)


@settings(max_examples=150)
@given(_LOGS, _PROVIDERS, st.integers(1, 4), st.integers(0, 30))
def test_the_plan_always_ends_in_a_report_or_a_typed_failure(
    log: bytes, provider: Provider, started: int, fail_at: int
) -> None:
    """Whatever the log, the window, the way of refusing, failures and requests never
    started: the plan ends, with a report, a failure that names its part or merge, or a
    typed error (window too small, refusal that cannot be true), never by looping."""
    run = drive(log, provider, started=started, fail_at=fail_at)
    assert isinstance(run.end, Finished | Failed | WindowTooSmallError | RefusalMismatchError)
    if isinstance(run.end, Failed):
        assert str(run.end.error) == "boom"
        assert run.end.stage is Stage.WHOLE or 1 <= max(run.end.at, 1) <= run.end.of


@settings(max_examples=150)
@given(_LOGS, _PROVIDERS, st.integers(1, 4))
def test_every_entry_is_in_exactly_one_part_and_parts_are_runs_of_entries(
    log: bytes, provider: Provider, started: int
) -> None:
    """The parts that got their report cover the log exactly once, each a run of whole
    consecutive entries (a cut entry still counts as its whole span), in log order."""
    run = drive(log, provider, started=started)
    if not isinstance(run.end, Finished):
        return
    answered = sorted(
        (ask.part.start, ask.part.end)
        for ask, outcome in run.sent(Stage.PARTS)
        if isinstance(outcome, Completion) and ask.part is not None
    )
    if not answered:
        assert [batch.stage for _, batch, _, _ in run.steps][-1] is Stage.WHOLE
        return
    assert answered[0][0] == 0
    assert answered[-1][1] == len(log)
    assert all(a[1] == b[0] for a, b in itertools.pairwise(answered))
    assert all(start == 0 or log[start - 1 : start + 3] == b"\n## " for start, _ in answered)


@settings(max_examples=150)
@given(_LOGS, _PROVIDERS)
@example(  # an entry shorter than the least ever cut: "cutting" it only adds the marker
    numbered_log([(21, "w ")]),
    Provider(window=431, style="numbers", shares=(1, 1, 1, 1, 1, 1, 0.5), usage=False),
)
@example(  # a window under the smallest gc supports: the head of its one entry is sent
    numbered_log([(15, "日")]),
    Provider(window=439, style="limit", shares=(1.0,) * 7, usage=False, report=10),
)
@example(  # counted at a low rate for words, a head of other text at a higher one
    numbered_log([(67, "w ")]),
    Provider(window=408, style="numbers", shares=(0.375,) + (1.0,) * 6, usage=False, report=10),
)
def test_no_request_is_planned_above_a_window_that_is_known(log: bytes, provider: Provider) -> None:
    """Once the window is known (up front, or from a refusal that states it) no request
    exceeds it by the provider's own count, merges included; after a refusal without
    numbers, no request is as large (by gc's estimate) as one already refused.

    One exception, by design (``_hopeless``): an entry cut to its least head (64 bytes and
    the marker) is sent before the provider counted anything, or while it may fit at the
    lowest rate the provider was seen to count at, as the estimate errs high; one that counts
    this text at a higher rate refuses it, and that ends the analysis (window too small).
    It arises only in windows below the 1,024 tokens gc supports."""
    run = drive(log, provider)
    known = provider.window if provider.style == "cap" else None
    refused_bare: float | None = None
    counted = [(plan.sizing, ask) for plan, batch, _, _ in run.steps for ask in batch.asks]
    for ask, outcome in run.sent():
        if known is not None and provider.count(ask) > known:
            sizing = next(sizing for sizing, sent in counted if sent is ask)
            assert ask.part is not None
            assert ask.part.sent_bytes == 64
            least = sizing.calibration.least(ask.estimate())
            assert not sizing.calibration.samples or least <= known
            assert isinstance(outcome, PromptTooLargeError)
            assert isinstance(run.end, WindowTooSmallError)
            assert (ask, outcome) == run.sent()[-1]
        estimate = sum(true_classes(ask))
        if refused_bare is not None:
            assert estimate < refused_bare
        if isinstance(outcome, PromptTooLargeError):
            if outcome.limit is None:
                refused_bare = min(estimate, refused_bare or estimate)
            else:
                known = provider.window


@settings(max_examples=150)
@given(_LOGS, _PROVIDERS, st.integers(1, 4))
def test_a_refusal_never_makes_the_next_plan_larger(
    log: bytes, provider: Provider, started: int
) -> None:
    """After a batch with a refusal, the next plan would not send the refused request
    again, and what it knows of the window only ever shrinks."""
    run = drive(log, provider, started=started)
    for before, batch, outcomes, after in run.steps:
        if after is None or isinstance(after, Finished | Failed):
            continue
        for ask, outcome in zip(batch.asks, outcomes, strict=True):
            if isinstance(outcome, PromptTooLargeError):
                assert ask.classes is not None or batch.stage is Stage.WHOLE
                assert not after.sizing.fits(ask.classes or true_classes(ask))
        if before.sizing.window is not None:
            assert after.sizing.window is not None
            assert after.sizing.window <= before.sizing.window
        if before.sizing.ceiling is not None:
            assert after.sizing.ceiling is not None
            assert after.sizing.ceiling <= before.sizing.ceiling


@settings(max_examples=150)
@given(_LOGS, _PROVIDERS, st.integers(1, 4))
def test_merges_cover_every_part_report_exactly_once(
    log: bytes, provider: Provider, started: int
) -> None:
    """Each merge combines reports of runs that follow each other; every part report and
    every merged one goes into exactly one answered merge, but the last, which covers the
    whole log; no merge request holds a lone report."""
    run = drive(log, provider, started=started)
    if not isinstance(run.end, Finished):
        return
    made = [
        covered(ask) for ask, outcome in run.sent() if isinstance(outcome, Completion)
    ]  # every report, in the order they came; the last is the one printed
    used: Counter[str] = Counter()
    for ask, outcome in run.sent(Stage.MERGE):
        assert len(spans_in(ask)) >= 2
        if isinstance(outcome, Completion):
            used.update(f"{a}-{b}" for a, b in spans_in(ask))
    assert made[-1] == f"0-{len(log)}"
    assert run.end.text.startswith(f"span 0-{len(log)} ")
    assert all(used[span] == 1 for span in made[:-1])
    assert used[made[-1]] == 0


@settings(max_examples=100)
@given(_LOGS, _PROVIDERS)
def test_progress_counts_never_run_past_the_total(log: bytes, provider: Provider) -> None:
    """What a frontend is told of the parts adds up: the parts done before a batch and
    those it sends never exceed the total the plan counts."""
    run = drive(log, provider)
    for _, batch, _, _ in run.steps:
        if batch.stage is Stage.PARTS:
            assert 0 <= batch.done < batch.total
            assert batch.done + len(batch.asks) <= batch.total


def test_a_log_that_fits_is_one_request_with_the_whole_log() -> None:
    """gc-spec §3.7: the fixed prompt and the log exactly as read, whatever the client
    knows of the window, and that one reply is the report."""
    log = entries(20)
    for cap in (None, 100_000):
        plan = start(log, cap)
        assert not isinstance(plan, Finished)
        batch = plan.batch()
        (ask,) = batch.asks
        assert (batch.stage, ask.content()) == (Stage.WHOLE, log)
        assert ask.content() is log
        assert plan.after([Completion("the report")]) == Finished("the report")


def test_a_plan_that_could_not_merge_fails_before_any_part_is_sent() -> None:
    """Issue 28, item 8: a refusal stating a window that holds gc's instructions and a
    slice of the log, but not the merge prompt: the window is found too small at once,
    instead of after every part was paid for."""
    log = b"".join(
        entry(i, result="the agent reviewed the change and summed it up " * 3) for i in range(100)
    )
    plan = start(log, None)
    assert not isinstance(plan, Finished)
    counted = int(prompt_cost(PATTERN_DETECTION_PROMPT, log) * 0.6)  # as a tokenizer might
    refusal = PromptTooLargeError("too long", tokens=counted, limit=400)
    with pytest.raises(WindowTooSmallError) as raised:
        plan.after([refusal])
    assert raised.value.limit == 400
    parts = plan.after([PromptTooLargeError("too long", tokens=counted, limit=450)])
    assert not isinstance(parts, Finished | Failed)
    assert parts.batch().stage is Stage.PARTS  # where a merge fits, the parts go ahead


@pytest.mark.parametrize(
    ("tokens", "limit"),
    [(250_123, 200_000), (None, 200_000), (None, None)],
    ids=["a count far above the estimate", "a window far above it", "no numbers"],
)
def test_a_refusal_that_cannot_be_true_of_a_small_log_stops_at_once(
    tokens: int | None, limit: int | None
) -> None:
    """Issue 28, item 1: "prompt is too long: 250123 tokens > 200000 maximum" (or a window
    that holds the request many times, or no numbers at all) for a log of under 1 KB stops
    the plan with the provider's own words and what was sent, not 11 shrinking requests."""
    log = entries(8)
    plan = start(log, None)
    assert not isinstance(plan, Finished)
    refusal = PromptTooLargeError("provider: too long", tokens=tokens, limit=limit)
    with pytest.raises(RefusalMismatchError) as raised:
        plan.after([refusal])
    estimate = prompt_cost(plan.batch().asks[0].system_prompt, log)
    assert (raised.value.refusal, raised.value.content) == ("provider: too long", len(log))
    assert estimate - 1 <= raised.value.estimate <= estimate


def test_the_plan_can_be_driven_with_assumed_answers_to_count_requests() -> None:
    """What an estimate needs (issue 25): the plan alone, driven with replies assumed from
    its own estimates, says how many requests a log takes; here a log of about fifteen
    windows, known up front, takes sixteen parts and one merge."""
    provider = Provider(window=4000, style="cap", shares=(1.0,) * 7)
    run = drive(entries(1000), provider)
    assert isinstance(run.end, Finished)
    stages = Counter(batch.stage for _, batch, _, _ in run.steps for _ in batch.asks)
    assert stages == {Stage.PARTS: 16, Stage.MERGE: 1}


def entry_starts(log: bytes) -> list[int]:
    """Where each entry of ``log`` begins: a ``## `` at byte 0 or after a line end."""
    return [
        at
        for at in range(len(log))
        if log.startswith(b"## ", at) and log[at - 1 : at] in {b"", b"\n"}
    ]


@pytest.mark.parametrize("preamble", [b"", b"\n", b"# kept by hand\n"])
def test_a_budget_may_begin_the_analysis_at_any_entry_but_the_first(preamble: bytes) -> None:
    """Where a budget may begin the analysis instead: where it begins now, then every
    later entry's start, each of them; text before the first entry goes only with the
    first entry, so the first entry's own start is no such place when text precedes it."""
    log = preamble + entries(30)
    plan = start(log, None)
    assert not isinstance(plan, Finished)
    assert narrowing_points(plan) == [0, *entry_starts(log)[1:]]


@given(st.integers(min_value=1, max_value=28))
def test_a_plan_already_narrowed_is_never_widened_again(kept_from: int) -> None:
    """A budget that narrowed the analysis to the newest entries narrows it further only:
    the places a narrowed plan may begin are where it begins and the entries after it,
    never an entry it already left out."""
    log = entries(30)
    plan = start(log, None)
    assert not isinstance(plan, Finished)
    at = entry_starts(log)[kept_from]
    later = narrowed(plan, at)
    assert not isinstance(later, Finished)
    assert narrowing_points(later) == [at, *entry_starts(log)[kept_from + 1 :]]


def test_no_report_already_made_is_split_by_a_budget() -> None:
    """Mid-run, the places a budget may begin the analysis are the entries no report
    runs across: a report's own start and end are such places; narrowed to where the
    last report begins, that report is the analysis, and to where the plan already
    begins, every piece is kept."""
    log = entries(200)
    plan = start(log, 2000)
    assert not isinstance(plan, Finished)
    probed = plan.after([Completion("r" * 100, Usage(500, 7))])
    assert not isinstance(probed, Finished | Failed)
    outcomes: list[Outcome] = [None] * len(probed.batch().asks)
    outcomes[1] = Completion("x" * 100, Usage(500, 7))
    answered = probed.batch().asks[1].part
    assert answered is not None
    mid = probed.after(outcomes)
    assert not isinstance(mid, Finished | Failed)
    reports = [(p.start, p.end) for p in mid.pieces if not isinstance(p, Part)]
    assert reports == [(0, probed.pieces[1].start), (answered.start, answered.end)]
    expected = [at for at in entry_starts(log) if not any(a < at < b for a, b in reports)]
    assert narrowing_points(mid) == expected
    assert answered.start in expected
    assert narrowed(mid, answered.start) == Finished("x" * 100, answered.start)
    again = narrowed(mid, 0)
    assert not isinstance(again, Finished)
    assert [(p.start, p.end) for p in again.pieces] == [(p.start, p.end) for p in mid.pieces]


_ESTIMATED_578 = entries(3)  # estimated at exactly 578 tokens with gc's instructions
_ESTIMATED_1024 = entries(4) + entry(99, result="1" * 1045)  # exactly 1,024


@pytest.mark.parametrize(
    ("log", "refusal", "expected"),
    [
        (_ESTIMATED_578, PromptTooLargeError("t", tokens=1734, limit=578), RefusalMismatchError),
        (_ESTIMATED_578, PromptTooLargeError("t", tokens=1156, limit=500), WindowTooSmallError),
        (_ESTIMATED_578, PromptTooLargeError("t", limit=1156), RefusalMismatchError),
        (_ESTIMATED_578, PromptTooLargeError("t", limit=300), WindowTooSmallError),
        (_ESTIMATED_1024, PromptTooLargeError("t"), RefusalMismatchError),
    ],
    ids=[
        "a count three times the estimate",
        "a count of exactly twice it",
        "a window of exactly twice it",
        "a window alone, smaller than the request",
        "no numbers, for a request of exactly 1,024 tokens",
    ],
)
def test_a_refusal_is_believed_up_to_twice_the_estimate_and_no_further(
    log: bytes, refusal: PromptTooLargeError, expected: type[AxeError]
) -> None:
    """Which refusals gc takes at their word: a count up to twice its estimate (no more),
    a window under twice it, a bare refusal of a request above the 1,024 tokens gc
    supports; any other stops the analysis with the provider's words (a refusal that
    cannot be true), not with a window too small."""
    assert sum(request_classes(PATTERN_DETECTION_PROMPT, log)) in {578.0, 1024.0}
    plan = start(log, None)
    assert not isinstance(plan, Finished)
    with pytest.raises(expected):
        plan.after([refusal])


@pytest.mark.parametrize(
    ("limit", "named"),
    [(1, 1), (578, 578), (1155, None)],
    ids=["a window of one token", "a window the request fills", "a window it half fills"],
)
def test_a_window_too_small_is_named_only_when_the_stated_limit_is_what_binds(
    limit: int, named: int | None
) -> None:
    """The window-too-small failure names the provider's stated limit when that limit
    is what leaves no room; when it is the halving after a refusal the request fitted
    (the limit holds it, so the provider refused it for another reason), no limit is
    named; gc's instructions (423 tokens) and the reply are always said."""
    plan = start(_ESTIMATED_578, None)
    assert not isinstance(plan, Finished)
    with pytest.raises(WindowTooSmallError) as raised:
        plan.after([PromptTooLargeError("prompt cut", limit=limit)])
    error = raised.value
    assert (error.limit, error.instructions, error.reply) == (named, 423, ANALYSIS_MAX_TOKENS)


LEFT_OUT = "\n[... rest of this report left out ...]"  # once, after a cut report
_SECTION = re.compile(r"### Report \d+ of \d+ \(([^\n]*)\)\n\n(span (\d+)-(\d+) r*)(\n\[[^\n]*)?\n")


@pytest.mark.parametrize(("window", "report"), [(1200, 1500), (1400, 1500), (1400, 300)])
def test_merged_reports_are_labelled_with_their_entries_and_cut_in_halves_marked_once(
    window: int, report: int
) -> None:
    """In every merge request each report is headed by the entries and times it covers
    (merged reports too, round after round, from pairs or from runs of four), and a
    report too long for the window is its first half, quarter, ... followed by one "rest
    left out" marker."""
    log = entries(300)
    layout = LogLayout(log)
    run = drive(log, Provider(window=window, style="cap", shares=(1.0,) * 7, report=report))
    assert isinstance(run.end, Finished)
    merges = [ask.content().decode() for ask, _ in run.sent(Stage.MERGE)]
    assert len(merges) > 5
    for content in merges:
        sections = _SECTION.findall(content)
        assert "\n".join(match.group(0) for match in _SECTION.finditer(content)) == content
        for label, body, start_at, end_at, marker in sections:
            assert label == layout.part(int(start_at), int(end_at)).label(log)
            whole = f"span {start_at}-{end_at} " + "r" * report
            halvings = [len(whole) >> k for k in range(1, 12)]
            assert (body, marker) == (whole, "") or (
                len(body) in halvings and whole.startswith(body) and marker == LEFT_OUT
            )


@pytest.mark.parametrize(
    "log",
    [numbered_log([(0, "w "), (21, "w ")]), b"## 1\n\n## " + b"!" * 59 + b"\n\n"],
    ids=["a later entry of 63 bytes", "a later entry of exactly 64 bytes"],
)
def test_an_entry_no_longer_than_the_least_head_that_does_not_fit_fails_before_sending(
    log: bytes,
) -> None:
    """An entry too large for the known window that is no longer than the least head gc
    ever sends (64 bytes) cannot be cut smaller: the window is too small, said before any
    request is sent, wherever the entry lies in the log; one byte longer, it is cut."""
    with pytest.raises(WindowTooSmallError) as raised:
        start(log, 460)
    assert (raised.value.limit, raised.value.instructions) == (460, 423)
    longer = start(b"## 1\n\n## " + b"!" * 60 + b"\n\n", 460)
    assert not isinstance(longer, Finished)
    assert longer.batch().stage is Stage.PARTS


def test_a_reply_without_a_count_ends_probing_and_teaches_nothing_of_the_count() -> None:
    """After the first part's reply, the rest of the parts go out together whether the
    reply counted its prompt or not; a count of 0 is no count (the plan is the one a
    reply without usage gives), a count of 1 token is one (the provider's word is taken)."""
    log = entries(200)
    plan = start(log, 2000)
    assert not isinstance(plan, Finished)
    assert len(plan.batch().asks) == 1
    uncounted = plan.after([Completion("r" * 100)])
    zero = plan.after([Completion("r" * 100, Usage(0, 7))])
    one = plan.after([Completion("r" * 100, Usage(1, 7))])
    assert not isinstance(uncounted, Finished | Failed)
    assert not isinstance(zero, Finished | Failed)
    assert not isinstance(one, Finished | Failed)
    spans = [covered(ask) for ask in uncounted.batch().asks]
    assert len(spans) > 1
    assert [covered(ask) for ask in zero.batch().asks] == spans
    assert (uncounted.sizing.calibration.samples, zero.sizing.calibration.samples) == ((), ())
    assert len(one.sizing.calibration.samples) == 1


def test_parts_not_started_are_planned_again_not_failed() -> None:
    """A batch stopped early (a refusal, or a stop): the parts never started are neither a
    failure nor lost; the next plan sends them again."""
    log = entries(200)
    plan = start(log, 2000)
    assert not isinstance(plan, Finished)
    probed = plan.after([Completion("r" * 100, Usage(500, 7))])
    assert not isinstance(probed, Finished | Failed)
    asks = probed.batch().asks
    outcomes: list[Outcome] = [Completion("x" * 100, Usage(500, 7))] + [None] * (len(asks) - 1)
    following = probed.after(outcomes)
    assert not isinstance(following, Finished | Failed)
    assert [covered(ask) for ask in following.batch().asks] == [covered(ask) for ask in asks[1:]]


def answer_all(plan: Plan | Finished | Failed, reply: str) -> Finished | Failed:
    """``plan`` driven to its end, every request answered with ``reply``, no usage."""
    while not isinstance(plan, Finished | Failed):
        plan = plan.after([Completion(reply) for _ in plan.batch().asks])
    return plan


def test_reports_are_cut_to_no_less_than_64_characters_to_fit_a_merge() -> None:
    """A pair of reports too long for one merge is cut by halves down to 64 characters
    each, no shorter: if the pair does not fit then, the window is too small; two more
    tokens of window and the pair of 64-character halves is merged."""
    log = entries(20)
    with pytest.raises(WindowTooSmallError):
        answer_all(start(log, 864), "x" * 128)
    merged = answer_all(start(log, 866), "x" * 128)
    assert merged == Finished("x" * 128)


def test_a_single_entry_cut_to_fit_needs_no_merge_to_fit() -> None:
    """A log of one entry far larger than a small window is analysed from its head, in
    one request, even when no merge could fit that window: there is nothing to merge."""
    log = entry(1, result="!" * 9000)
    plan = start(log, None)
    assert not isinstance(plan, Finished)
    estimate = sum(request_classes(PATTERN_DETECTION_PROMPT, log))
    refusal = PromptTooLargeError("too long", tokens=int(0.8 * estimate), limit=480)
    cut = plan.after([refusal])
    assert not isinstance(cut, Finished | Failed)
    (ask,) = cut.batch().asks
    assert ask.part is not None
    assert (ask.part.start, ask.part.end, ask.part.sent_bytes) == (0, len(log), 48)
    assert cut.sizing.calibration.least(request_classes(MERGE_PROMPT, b"")) > 480


def test_a_window_stated_by_a_refusal_below_the_known_one_is_the_window() -> None:
    """A provider whose real window is smaller than the one the client knew (a cap of
    100,000 tokens, a refusal stating 2,000): the smaller is the window from then on, and
    every part planned fits it by the provider's count as far as gc can bound it."""
    log = entries(200)
    plan = start(log, 100_000)
    assert not isinstance(plan, Finished)
    (ask,) = plan.batch().asks
    counted = int(sum(true_classes(ask)) * 0.6)
    parts = plan.after([PromptTooLargeError("too long", tokens=counted, limit=2000)])
    assert not isinstance(parts, Finished | Failed)
    assert parts.sizing.window == 2000
    asks = parts.batch().asks
    assert all(parts.sizing.calibration.bound(true_classes(ask)) <= 2000 for ask in asks)


def test_a_window_that_leaves_under_16_tokens_beside_the_instructions_is_too_small() -> None:
    """A window that leaves fewer than 16 tokens beside gc's instructions (423 estimated)
    holds no part of the log: said before anything is sent; one token more and the entry
    is cut to fit and sent."""
    log = entry(1, result="w " * 100)
    with pytest.raises(WindowTooSmallError) as raised:
        start(log, 438)
    assert (raised.value.limit, raised.value.instructions) == (438, 423)
    plan = start(log, 439)
    assert not isinstance(plan, Finished)
    assert plan.batch().stage is Stage.PARTS


def test_a_log_of_two_parts_no_merge_fits_fails_before_its_second_part_is_paid_for() -> None:
    """Once the provider's count shows that no merge fits the window, a log in two parts
    fails as too large for it before the second part is sent, as one in more parts does."""
    plan = start(entries(4), 600)
    assert not isinstance(plan, Finished)
    (ask,) = plan.batch().asks
    counted = Completion("r", Usage(math.ceil(sum(ask.estimate())), 5))  # the estimate: 578
    with pytest.raises(WindowTooSmallError) as raised:
        plan.after([counted])
    assert raised.value.limit == 600


def test_a_failed_merge_says_how_many_reports_it_was_merging() -> None:
    """A merge that fails for another reason than its size is said to be a merge of as
    many reports as the round started from (the message names them)."""
    plan: Plan | Finished | Failed = start(entries(200), 2000)
    while not isinstance(plan, Finished | Failed) and plan.batch().stage is Stage.PARTS:
        plan = plan.after([Completion("r" * 100) for _ in plan.batch().asks])
    assert not isinstance(plan, Finished | Failed)
    batch = plan.batch()
    failure = ApiError("HTTP 500")
    failed = plan.after([failure] + [None] * (len(batch.asks) - 1))
    assert failed == Failed(failure, Stage.MERGE, of=7)
    assert batch.total == 7
