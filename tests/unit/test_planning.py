"""The big-log planner on its own: properties of the plan over random logs,
windows and ways of refusing, the provider a pure function of the request: no LLM double,
no scheduler, no I/O.

The provider counts a request as a share of gc's upper estimate, one share for the
instructions and one for the content (each at most the estimate itself, as the estimate is
built to be), and refuses what exceeds its window in one of four styles: with its numbers,
with none (a bare 413), with a limit alone (Ollama's cut prompt), or never, the window being
known up front (a cap). Parts and merges are answered with the units they cover, so what
the plan does with the reports can be followed to the end. No figure of the estimate is
pinned: expected values are computed through it.
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
from axe.domain.limits import MIN_INPUT_TOKENS
from axe.domain.log_index import LogIndex
from axe.domain.parts import Part, content, label
from axe.domain.planning import (
    Ask,
    Batch,
    Failed,
    Finished,
    Merge,
    Outcome,
    Parts,
    Plan,
    Sizing,
    Stage,
    Whole,
    instructions,
    narrowed,
    narrowing_points,
    request_tokens,
    start,
)
from axe.domain.prompt import (
    ANALYSIS_MAX_TOKENS,
    MERGE_PROMPT,
    PATTERN_DETECTION_PROMPT,
    merge_content,
)
from axe.domain.results import Completion, Usage
from axe.domain.token_estimate import TokenEstimate, estimate_tokens
from tests.logs import planner_logs
from tests.support import entries, entry

STYLES = ["numbers", "bare", "limit", "cap"]
_SPAN = re.compile(rb"### Report \d+ of \d+ \([^\n]*\)\n\nspan (\d+)-(\d+)")


def sent_estimate(ask: Ask) -> TokenEstimate:
    """gc's estimate of the request as it goes out: its instructions and its content."""
    return request_tokens(ask.system_prompt, estimate_tokens(ask.content()))


def beside() -> int:
    """gc's upper estimate of its instructions and framing, beside a part of the log."""
    return instructions(PATTERN_DETECTION_PROMPT).most


def empty_merge() -> int:
    """gc's upper estimate of the smallest merge request it could make: two empty reports
    under their labels."""
    reports = [(f"entries {9 * n + 1}-{9 * n + 9}", "") for n in range(2)]
    return request_tokens(MERGE_PROMPT, estimate_tokens(merge_content(reports, 2))).most


def merge_floor() -> int:
    """What a provider likely counts of the smallest merge gc makes: two reports cut to
    64 characters, by gc's ``likely`` estimate."""
    reports = [(f"entries {9 * n + 1}-{9 * n + 9}", "x" * 64) for n in range(2)]
    return request_tokens(MERGE_PROMPT, estimate_tokens(merge_content(reports, 2))).likely


@frozen
class Provider:
    """A window of ``window`` tokens refusing in ``style``; it counts the instructions and
    the content at ``shares`` of gc's upper estimate; replies report their size if
    ``usage``; part reports are ``report`` characters beyond the span they name."""

    window: int
    style: str
    shares: tuple[float, float] = (1.0, 1.0)
    usage: bool = True
    report: int = 40

    def count(self, ask: Ask) -> int:
        prompt = instructions(ask.system_prompt).most
        of_content = estimate_tokens(ask.content()).most
        return math.ceil(self.shares[0] * prompt + self.shares[1] * of_content)

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
    """The units of the log a request reports on: its part, or the runs its reports
    cover (which must follow each other), or the whole log."""
    if ask.part is not None:
        return f"{ask.part.first}-{ask.part.last}"
    if ask.system_prompt == MERGE_PROMPT:
        spans = spans_in(ask)
        assert all(a[1] == b[0] for a, b in itertools.pairwise(spans)), spans
        return f"{spans[0][0]}-{spans[-1][1]}"
    return f"0-{LogIndex(ask.content()).units}"


def spans_in(merge: Ask) -> list[tuple[int, int]]:
    return [(int(a), int(b)) for a, b in _SPAN.findall(merge.content())]


Step = tuple[Plan, Batch, list[Outcome], Plan | Finished | Failed | None]


@define
class Run:
    """Every batch the plan asked for, what came of it, and the plan it led to."""

    steps: list[Step]
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
    shares=st.tuples(st.floats(0.3, 1.0), st.floats(0.3, 1.0)),
    usage=st.booleans(),
    report=st.sampled_from([10, 40, 300, 1500]),
)


@given(planner_logs(), st.sampled_from([None, 10**3, 10**4, 10**5, 10**8]), st.booleans())
def test_a_log_goes_whole_exactly_when_its_estimate_fits(
    log: bytes, window: int | None, indexed: bool
) -> None:
    """A log goes whole exactly when no window is known or gc's upper estimate of its
    request fits the window, whether or not the estimate was made to decide (a log that
    surely fits is not estimated to be planned, and with no window nothing is estimated);
    what its request is then estimated at, for a budget or a refusal, is never below the
    estimate of what is sent, and is the index's estimate when the log was indexed."""
    index = LogIndex(log)
    estimate = request_tokens(PATTERN_DETECTION_PROMPT, index.cost(0, index.units))
    fits = window is None or estimate.most <= window
    try:
        plan = start(log, window, index if indexed else None)
    except WindowTooSmallError:
        assert not fits
        return
    assert not isinstance(plan, Finished)
    batch = plan.batch()
    assert (batch.stage is Stage.WHOLE) == fits
    if fits:
        (ask,) = batch.asks
        assert ask.content() == log
        assert ask.estimate().most >= sent_estimate(ask).most
        if indexed:
            assert ask.estimate() == estimate
        elif window is None:
            assert ask.tokens is None


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
    consecutive units (a cut entry still counts as its whole unit), in log order."""
    run = drive(log, provider, started=started)
    if not isinstance(run.end, Finished):
        return
    answered = sorted(
        (ask.part.first, ask.part.last)
        for ask, outcome in run.sent(Stage.PARTS)
        if isinstance(outcome, Completion) and ask.part is not None
    )
    if not answered:
        assert [batch.stage for _, batch, _, _ in run.steps][-1] is Stage.WHOLE
        return
    assert answered[0][0] == 0
    assert answered[-1][1] == LogIndex(log).units
    assert all(a[1] == b[0] and a[0] < a[1] for a, b in itertools.pairwise(answered))


@settings(max_examples=150)
@given(_LOGS, _PROVIDERS)
@example(  # an entry shorter than the least ever cut: it fits whole or not at all
    numbered_log([(21, "w ")]), Provider(window=431, style="numbers", usage=False)
)
@example(  # a window under the smallest gc supports, stated by a cut prompt
    numbered_log([(15, "日")]), Provider(window=439, style="limit", usage=False, report=10)
)
@example(  # counted at a low rate for the content, the full rate for the instructions
    numbered_log([(67, "w ")]),
    Provider(window=408, style="numbers", shares=(1.0, 0.375), usage=False, report=10),
)
def test_no_request_is_planned_above_a_window_that_is_known(log: bytes, provider: Provider) -> None:
    """Once the window is known (up front, or from a refusal that states it) no request
    exceeds it by the provider's own count, merges and cut entries included, and none by
    gc's upper estimate; after a refusal without numbers, no request is as large (by
    gc's estimate) as one already refused."""
    run = drive(log, provider)
    known = provider.window if provider.style == "cap" else None
    refused_bare: int | None = None
    for ask, outcome in run.sent():
        estimate = ask.estimate().most
        assert estimate >= sent_estimate(ask).most
        if known is not None:
            assert provider.count(ask) <= known
            assert estimate <= known
        if refused_bare is not None:
            assert estimate < refused_bare
        if isinstance(outcome, PromptTooLargeError):
            if outcome.limit is None:
                refused_bare = min(estimate, refused_bare or estimate)
            else:
                known = outcome.limit


@settings(max_examples=150)
@given(_LOGS, _PROVIDERS, st.integers(1, 4))
def test_a_refusal_never_makes_the_next_plan_larger(
    log: bytes, provider: Provider, started: int
) -> None:
    """After a batch with a refusal, the next plan would not send the refused request
    again; what it knows of the window only ever shrinks, and the rate it counts at only
    ever rises."""
    run = drive(log, provider, started=started)
    for before, batch, outcomes, after in run.steps:
        if after is None or isinstance(after, Finished | Failed):
            continue
        for ask, outcome in zip(batch.asks, outcomes, strict=True):
            if isinstance(outcome, PromptTooLargeError):
                assert not after.sizing.fits(ask.estimate())
        old, new = before.sizing, after.sizing
        assert new.ratio >= old.ratio
        if old.window is not None:
            assert new.window is not None
            assert new.window <= old.window
        if old.ceiling is not None:
            assert new.ceiling is not None
            assert new.ceiling <= old.ceiling


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
    whole = f"0-{LogIndex(log).units}"
    assert made[-1] == whole
    assert run.end.text.startswith(f"span {whole} ")
    assert run.end.first == 0
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
    for window in (None, 100_000):
        plan = start(log, window)
        assert not isinstance(plan, Finished)
        batch = plan.batch()
        (ask,) = batch.asks
        assert (batch.stage, ask.system_prompt) == (Stage.WHOLE, PATTERN_DETECTION_PROMPT)
        assert ask.content() is log
        assert plan.after([Completion("the report")]) == Finished("the report")


def test_all_parts_go_out_together_and_one_merge_ends_a_log_of_many_windows() -> None:
    """A log of about fifteen windows, known up front, with a provider that never refuses
    it: every part is sent in one batch (none first to learn from), then the reports are
    merged, in one request when they fit one."""
    run = drive(entries(1000), Provider(window=4000, style="cap"))
    assert isinstance(run.end, Finished)
    stages = [batch.stage for _, batch, _, _ in run.steps]
    assert stages == [Stage.PARTS, Stage.MERGE]
    parts = len(run.sent(Stage.PARTS))
    assert parts >= math.ceil(sent_estimate(start_whole(entries(1000))).most / 4000)
    assert len(run.sent(Stage.MERGE)) == 1


def start_whole(log: bytes) -> Ask:
    plan = start(log, None)
    assert isinstance(plan, Whole)
    return plan.ask


def test_a_plan_that_could_not_merge_fails_before_any_part_is_sent() -> None:
    """A refusal stating a window that holds gc's instructions and a
    slice of the log, but not the smallest merge (two short reports, by what a provider
    likely counts): the window is found too small at once, instead of after every part was
    paid for; where that merge fits, the parts go ahead."""
    log = b"".join(
        entry(i, result="the agent reviewed the change and summed it up " * 3) for i in range(100)
    )
    plan = start(log, None)
    assert isinstance(plan, Whole)
    counted = int(sent_estimate(plan.ask).most * 0.6)  # as a tokenizer might
    floor = merge_floor()
    part = request_tokens(PATTERN_DETECTION_PROMPT, estimate_tokens(entry(99))).most
    assert part < floor  # a window just under the merge holds a part of the log
    refusal = PromptTooLargeError("too long", tokens=counted, limit=floor - 1)
    with pytest.raises(WindowTooSmallError) as raised:
        plan.after([refusal])
    assert raised.value.limit == floor - 1
    parts = plan.after([PromptTooLargeError("too long", tokens=counted, limit=floor)])
    assert isinstance(parts, Parts)
    assert parts.batch().stage is Stage.PARTS


@pytest.mark.parametrize("window", [400, None], ids=["400 tokens", "just under a merge"])
def test_a_window_that_holds_no_merge_fails_before_any_part_whatever_taught_it(
    window: int | None,
) -> None:
    """A window that holds no merge of two reports (400 tokens, or one
    token under the smallest merge, where an entry with gc's instructions fits), known up
    front or stated by a refusal with numbers, on a 60-entry log: too small, said by
    planning, before any part is sent."""
    floor = merge_floor()
    assert request_tokens(PATTERN_DETECTION_PROMPT, estimate_tokens(entries(2))).most < floor
    limit = window if window is not None else floor - 1
    log = entries(60)
    with pytest.raises(WindowTooSmallError) as raised:
        start(log, limit)
    assert raised.value.limit == limit
    plan = start(log, None)
    assert isinstance(plan, Whole)
    counted = int(sent_estimate(plan.ask).most * 0.7)
    with pytest.raises(WindowTooSmallError) as raised:
        plan.after([PromptTooLargeError("too long", tokens=counted, limit=limit)])
    assert raised.value.limit == limit
    assert isinstance(start(log, floor), Parts)


@pytest.mark.parametrize(
    ("tokens", "limit"),
    [(250_123, 200_000), (None, 200_000), (None, None)],
    ids=["a count far above the estimate", "a window far above it", "no numbers"],
)
@pytest.mark.parametrize("indexed", [False, True], ids=["read whole", "on its index"])
def test_a_refusal_that_cannot_be_true_of_a_small_log_stops_at_once(
    tokens: int | None, limit: int | None, indexed: bool
) -> None:
    """A refusal of "prompt is too long: 250123 tokens > 200000 maximum" (or a window
    that holds the request many times, or no numbers at all) for a log of under 1 KB stops
    the plan with the provider's own words and what was sent, not 11 shrinking requests;
    the same when the log was planned on its index (as under a budget)."""
    log = entries(8)
    plan = start(log, None, LogIndex(log) if indexed else None)
    assert isinstance(plan, Whole)
    refusal = PromptTooLargeError("provider: too long", tokens=tokens, limit=limit)
    with pytest.raises(RefusalMismatchError) as raised:
        plan.after([refusal])
    error = raised.value
    assert (error.refusal, error.content) == ("provider: too long", len(log))
    assert error.estimate == sent_estimate(plan.ask).most


def entry_units(index: LogIndex) -> list[int]:
    """The unit each entry is, in order."""
    return list(range(index.preamble, index.units))


@pytest.mark.parametrize("preamble", [b"", b"\n", b"# kept by hand\n"])
def test_a_budget_may_begin_the_analysis_at_any_entry_but_the_first(preamble: bytes) -> None:
    """Where a budget may begin the analysis instead: where it begins now, then every
    later entry, each of them; text before the first entry goes only with the first
    entry, so the first entry is no such place when text precedes it."""
    log = preamble + entries(30)
    index = LogIndex(log)
    plan = start(log, None)
    assert not isinstance(plan, Finished)
    assert narrowing_points(plan) == [0, *entry_units(index)[1:]]
    starts = [at for at in range(len(log)) if log.startswith(b"## ", at)]
    assert [index.bounds[unit] for unit in narrowing_points(plan)[1:]] == starts[1:]


@given(st.integers(min_value=1, max_value=28), st.booleans())
def test_a_plan_already_narrowed_is_never_widened_again(kept_from: int, pre: bool) -> None:
    """A budget that narrowed the analysis to the newest entries narrows it further only:
    the places a narrowed plan may begin are where it begins and the entries after it,
    never an entry it already left out (nor the text before the first entry)."""
    log = b"# notes\n" * pre + entries(30)
    index = LogIndex(log)
    plan = start(log, None, index)
    assert not isinstance(plan, Finished)
    at = entry_units(index)[kept_from]
    later = narrowed(plan, at)
    assert not isinstance(later, Finished)
    assert narrowing_points(later) == entry_units(index)[kept_from:]
    assert later.pieces[0].first == at


def answered_parts(log: bytes, window: int, which: list[int]) -> tuple[Parts, Parts]:
    """The first plan of ``log`` in parts, and the plan after only parts ``which`` of its
    batch were answered (the others never started)."""
    plan = start(log, window)
    assert isinstance(plan, Parts)
    asks = plan.batch().asks
    outcomes: list[Outcome] = [
        Completion(f"report {n}", Usage(500, 7)) if n in which else None for n in range(len(asks))
    ]
    mid = plan.after(outcomes)
    assert isinstance(mid, Parts)
    return plan, mid


def test_no_report_already_made_is_split_by_a_budget() -> None:
    """Mid-run, the places a budget may begin the analysis are the entries no report
    runs across: a report's own start and end are such places; narrowed to where the last
    report begins, that report is the analysis, and to where the plan already begins,
    every piece is kept."""
    log = entries(200)
    last_part = len(start_parts(log, 2000)) - 1
    plan, mid = answered_parts(log, 2000, [1, last_part])
    sending = plan.batch().asks
    reports = [(p.first, p.last) for p in mid.pieces if not isinstance(p, Part)]
    parts = [ask.part for ask in sending]
    assert reports == [(p.first, p.last) for p in (parts[1], parts[-1]) if p is not None]
    expected = [u for u in range(200) if not any(a < u < b for a, b in reports)]
    assert narrowing_points(mid) == expected
    last = reports[-1][0]
    assert narrowed(mid, last) == Finished(f"report {len(sending) - 1}", last)
    again = narrowed(mid, 0)
    assert not isinstance(again, Finished)
    assert [(p.first, p.last) for p in again.pieces] == [(p.first, p.last) for p in mid.pieces]


def start_parts(log: bytes, window: int) -> tuple[Ask, ...]:
    plan = start(log, window)
    assert isinstance(plan, Parts)
    return plan.batch().asks


def test_parts_not_started_are_planned_again_not_failed() -> None:
    """A batch stopped early (a refusal, or a stop): the parts never started are neither a
    failure nor lost; the next plan sends them again, as they were."""
    log = entries(200)
    plan, following = answered_parts(log, 2000, [0])
    asks = plan.batch().asks
    assert len(asks) > 2
    assert [covered(ask) for ask in following.batch().asks] == [covered(ask) for ask in asks[1:]]
    assert following.batch().done == 1


def test_a_reply_count_of_nothing_teaches_nothing_and_a_count_only_raises_the_rate() -> None:
    """A reply without a count and one counting 0 tokens teach the plan nothing; a reply
    counting less than gc's estimate is believed (it is what the provider said), but the
    window is never filled beyond gc's upper estimate; one counting more raises the rate
    every later request is estimated at."""
    plan = start(entries(200), 2000)
    assert isinstance(plan, Parts)
    asks = plan.batch().asks
    most = asks[0].estimate().most

    def after_first(usage: Usage | None) -> Parts:
        outcomes: list[Outcome] = [Completion("r" * 100, usage)] + [None] * (len(asks) - 1)
        following = plan.after(outcomes)
        assert isinstance(following, Parts)
        return following

    uncounted, zero = after_first(None), after_first(Usage(0, 7))
    assert uncounted.sizing == zero.sizing == plan.sizing
    lower = after_first(Usage(1, 7))
    assert (lower.sizing.ratio, lower.sizing.seen) == (1.0, 1 / most)
    assert [covered(ask) for ask in lower.batch().asks] == [
        covered(ask) for ask in uncounted.batch().asks
    ]
    higher = after_first(Usage(2 * most, 7))
    assert higher.sizing.ratio == 2.0
    assert all(ask.estimate().most * 2 <= 2000 for ask in higher.batch().asks)
    assert len(higher.batch().asks) > len(uncounted.batch().asks)


_ESTIMATED = entries(3)  # a small log, refused in the tests below


def _request(log: bytes) -> int:
    return request_tokens(PATTERN_DETECTION_PROMPT, estimate_tokens(log)).most


def _log_estimated_at(tokens: int) -> bytes:
    """A log whose request gc estimates at exactly ``tokens``."""
    for fill in ("!", "1", "x", " y"):
        for count in range(4000):
            log = entries(4) + entry(99, result=fill * count)
            if _request(log) == tokens:
                return log
    raise AssertionError(f"no log estimated at {tokens} tokens")


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("a count three times the estimate", RefusalMismatchError),
        ("a count of exactly twice it", WindowTooSmallError),
        ("a count one above twice it", RefusalMismatchError),
        ("a window of exactly twice it", RefusalMismatchError),
        ("a window alone, smaller than the request", WindowTooSmallError),
        ("no numbers, for a request of exactly 1,024 tokens", RefusalMismatchError),
    ],
)
def test_a_refusal_is_believed_up_to_twice_the_estimate_and_no_further(
    case: str, expected: type[AxeError]
) -> None:
    """Which refusals gc takes at their word: a count up to twice its estimate (no more),
    a window under twice it, a bare refusal of a request above the 1,024 tokens gc
    supports; any other stops the analysis with the provider's words (a refusal that
    cannot be true), not with a window too small."""
    log = _ESTIMATED
    estimate = _request(log)
    assert estimate < 2 * beside()  # twice the count leaves no room beside the instructions
    refusals = {
        "a count three times the estimate": PromptTooLargeError(
            "t", tokens=3 * estimate, limit=estimate
        ),
        "a count of exactly twice it": PromptTooLargeError(
            "t", tokens=2 * estimate, limit=estimate - 1
        ),
        "a count one above twice it": PromptTooLargeError(
            "t", tokens=2 * estimate + 1, limit=estimate - 1
        ),
        "a window of exactly twice it": PromptTooLargeError("t", limit=2 * estimate),
        "a window alone, smaller than the request": PromptTooLargeError("t", limit=beside() // 2),
    }
    refusal = refusals.get(case, PromptTooLargeError("t"))
    if case.startswith("no numbers"):
        log = _log_estimated_at(MIN_INPUT_TOKENS)
    plan = start(log, None)
    assert not isinstance(plan, Finished)
    with pytest.raises(expected):
        plan.after([refusal])


def test_a_bare_refusal_of_a_request_above_the_smallest_window_is_believed() -> None:
    """A refusal without numbers of a request one token above the 1,024 gc supports is
    taken at its word: the log is planned in parts (or, if no part or merge could fit
    what it teaches, the window is too small), never a refusal that cannot be true."""
    plan = start(_log_estimated_at(MIN_INPUT_TOKENS + 1), None)
    assert isinstance(plan, Whole)
    try:
        following: Plan | Finished | Failed | None = plan.after([PromptTooLargeError("t")])
    except WindowTooSmallError:
        following = None
    assert following is None or isinstance(following, Parts)


@pytest.mark.parametrize(
    ("limit", "named"),
    [("one token", True), ("the request", True), ("twice the request less one", False)],
)
def test_a_window_too_small_is_named_only_when_the_stated_limit_is_what_binds(
    limit: str, named: bool
) -> None:
    """The window-too-small failure names the provider's stated limit when that limit
    is what leaves no room; when it is the halving after a refusal the request fitted
    (the limit holds it, so the provider refused it for another reason), no limit is
    named; gc's instructions and the reply are always said."""
    estimate = _request(_ESTIMATED)
    stated = {
        "one token": 1,
        "the request": estimate,
        "twice the request less one": 2 * estimate - 1,
    }
    plan = start(_ESTIMATED, None)
    assert not isinstance(plan, Finished)
    with pytest.raises(WindowTooSmallError) as raised:
        plan.after([PromptTooLargeError("prompt cut", limit=stated[limit])])
    error = raised.value
    expected = stated[limit] if named else None
    assert (error.limit, error.instructions, error.reply) == (
        expected,
        beside(),
        ANALYSIS_MAX_TOKENS,
    )


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
    index = LogIndex(log)
    run = drive(log, Provider(window=window, style="cap", report=report))
    assert isinstance(run.end, Finished)
    merges = [ask.content().decode() for ask, _ in run.sent(Stage.MERGE)]
    assert sum(batch.stage is Stage.MERGE for _, batch, _, _ in run.steps) > 1
    for text in merges:
        sections = _SECTION.findall(text)
        assert "\n".join(match.group(0) for match in _SECTION.finditer(text)) == text
        for section_label, body, first, last, marker in sections:
            assert section_label == label(index, int(first), int(last))
            whole = f"span {first}-{last} " + "r" * report
            halvings = [len(whole) >> k for k in range(1, 12)]
            assert (body, marker) == (whole, "") or (
                len(body) in halvings and whole.startswith(body) and marker == LEFT_OUT
            )


def head_window(log: bytes, unit: int) -> int:
    """The smallest window that holds entry ``unit``'s first 64 bytes with the marker."""
    index = LogIndex(log)
    return request_tokens(
        PATTERN_DETECTION_PROMPT, estimate_tokens(content(index, Part(unit, unit + 1, 64)))
    ).most


@pytest.mark.parametrize(
    "log",
    [entry(1, result="!" * 9000), b"## a\n\n" + b"## " + b"x" * 3000 + b"\n"],
    ids=["a single huge entry", "a huge entry after a small one"],
)
def test_an_entry_whose_least_head_does_not_fit_fails_before_sending(log: bytes) -> None:
    """An entry too large for the known window whose least head (64 bytes and the marker
    saying what was left out) does not fit either cannot be cut smaller: the window is too
    small, said before any request is sent, wherever the entry lies in the log; with room
    for that head, the entry is cut to fit and sent."""
    huge = LogIndex(log).units - 1
    window = head_window(log, huge)
    with pytest.raises(WindowTooSmallError) as raised:
        start(log, window - 1)
    assert (raised.value.limit, raised.value.instructions) == (window - 1, beside())
    if huge == 0:  # a log in one part needs no merge
        plan = start(log, window)
        assert isinstance(plan, Parts)
        (ask,) = plan.batch().asks
        assert ask.part is not None
        assert ask.part.sent is not None
        assert ask.content().startswith(log.split(b"\n", 1)[0] + b"\n")
        assert ask.estimate().most <= window


def answer_all(plan: Plan | Finished | Failed, reply: str) -> Finished | Failed:
    """``plan`` driven to its end, every request answered with ``reply``, no usage."""
    while not isinstance(plan, Finished | Failed):
        plan = plan.after([Completion(reply) for _ in plan.batch().asks])
    return plan


def merge_requests(plan: Plan | Finished | Failed, reply: str) -> list[bytes]:
    """The merge requests ``plan`` sends, every request answered with ``reply``, no usage.

    Raises:
        WindowTooSmallError: as the plan does.
    """
    sent: list[bytes] = []
    while not isinstance(plan, Finished | Failed):
        batch = plan.batch()
        if batch.stage is Stage.MERGE:
            sent += [ask.content() for ask in batch.asks]
        plan = plan.after([Completion(reply) for _ in batch.asks])
    assert plan == Finished(reply)
    return sent


_CUT_BODY = re.compile(rb"\n\n(x+)" + re.escape(LEFT_OUT.encode()) + rb"\n")


def test_reports_are_cut_to_no_less_than_64_characters_to_fit_a_merge() -> None:
    """A pair of reports too long for one merge is cut by halves down to 64 characters
    each, no shorter: if the pair does not fit then, the window is too small; in the
    smallest window that merges them, they are merged as their 64-character halves."""
    log, reply = entries(20), "x" * 1024
    merged: dict[int, list[bytes]] = {}
    too_small: set[int] = set()
    for window in range(700, 1300):
        try:
            merged[window] = merge_requests(start(log, window), reply)
        except WindowTooSmallError:
            too_small.add(window)
    smallest = min(merged)
    assert smallest - 1 in too_small
    assert all(window in merged for window in range(smallest, 1300))
    cut = [len(body) for text in merged[smallest] for body in _CUT_BODY.findall(text)]
    assert min(cut) == 64
    everywhere = [
        len(body) for texts in merged.values() for t in texts for body in _CUT_BODY.findall(t)
    ]
    assert set(everywhere) <= {512, 256, 128, 64}


def test_a_single_entry_cut_to_fit_needs_no_merge_to_fit() -> None:
    """A log of one entry far larger than a small window is analysed from its head, in
    one request, even when no merge could fit that window: there is nothing to merge."""
    log = b"## a\n" + b"x" * 9000
    window = head_window(log, 0)
    assert window < merge_floor()
    plan = start(log, None)
    assert isinstance(plan, Whole)
    refusal = PromptTooLargeError(
        "too long", tokens=int(0.8 * sent_estimate(plan.ask).most), limit=window
    )
    cut = plan.after([refusal])
    assert isinstance(cut, Parts)
    (ask,) = cut.batch().asks
    assert ask.part is not None
    assert (ask.part.first, ask.part.last) == (0, 1)
    assert ask.part.sent is not None
    assert 64 <= ask.part.sent < len(log)
    assert ask.estimate().most <= window
    assert ask.content().startswith(log[:64])


def test_a_window_stated_by_a_refusal_below_the_known_one_is_the_window() -> None:
    """A provider whose real window is smaller than the one the client knew (a cap of
    100,000 tokens, a refusal stating 2,000): the smaller is the window from then on, and
    every part planned fits it by gc's upper estimate, and so by the provider's count."""
    log = entries(200)
    plan = start(log, 100_000)
    assert isinstance(plan, Whole)
    counted = int(sent_estimate(plan.ask).most * 0.6)
    parts = plan.after([PromptTooLargeError("too long", tokens=counted, limit=2000)])
    assert isinstance(parts, Parts)
    assert parts.sizing.window == 2000
    asks = parts.batch().asks
    assert len(asks) > 1
    assert all(ask.estimate().most * parts.sizing.ratio <= 2000 for ask in asks)
    assert all(sent_estimate(ask).most <= 2000 for ask in asks)


def test_a_failed_merge_says_how_many_reports_it_was_merging() -> None:
    """A merge that fails for another reason than its size is said to be a merge of as
    many reports as the round started from (the message names them)."""
    plan: Plan | Finished | Failed = start(entries(200), 2000)
    while not isinstance(plan, Finished | Failed) and plan.batch().stage is Stage.PARTS:
        plan = plan.after([Completion("r" * 100) for _ in plan.batch().asks])
    assert isinstance(plan, Merge)
    batch = plan.batch()
    failure = ApiError("HTTP 500")
    failed = plan.after([failure] + [None] * (len(batch.asks) - 1))
    assert failed == Failed(failure, Stage.MERGE, of=len(plan.pieces))
    assert batch.total == len(plan.pieces) > 2


MISMATCH = r"is (shorter|longer) than|(not enough|too many) values to unpack"  # zip, unpacking


def test_outcomes_that_do_not_match_the_batch_are_refused() -> None:
    """A frontend driving a plan gives one outcome per request of its batch, in order:
    too few or too many is a ValueError, never a plan that silently drops a request."""
    whole = start(entries(20), None)
    assert isinstance(whole, Whole)
    parts = start(entries(200), 2000)
    assert isinstance(parts, Parts)
    reply = Completion("r" * 100)
    merge = answer_parts(parts, reply)
    plans: list[Plan] = [whole, parts, merge]
    for plan in plans:
        asks = len(plan.batch().asks)
        for outcomes in ([reply] * (asks - 1), [reply] * (asks + 1)):
            with pytest.raises(ValueError, match=MISMATCH):
                plan.after(outcomes)


def answer_parts(plan: Parts, reply: Completion) -> Merge:
    """The first round of merges of ``plan``, every part answered with ``reply``."""
    following: Plan | Finished | Failed = plan
    while isinstance(following, Parts):
        following = following.after([reply] * len(following.batch().asks))
    assert isinstance(following, Merge)
    return following


def test_after_a_refusal_without_numbers_one_part_goes_first_until_one_is_answered() -> None:
    """docs/big-logs.md: a refusal without numbers (a bare 413) halves the largest request
    gc will send, and then one part goes first, so that a guess still too large costs one
    request; once a part is answered, the others go together; a later refusal without
    numbers makes one part go first again, though a part was answered before it."""
    bare = PromptTooLargeError("request too large")
    plan = start(entries(400), None)
    assert isinstance(plan, Whole)
    halves = plan.after([bare])
    assert isinstance(halves, Parts)
    assert (len(halves.pieces), len(halves.batch().asks)) == (2, 1)
    quarters = halves.after([bare])
    assert isinstance(quarters, Parts)
    assert (len(quarters.pieces), len(quarters.batch().asks)) == (4, 1)
    answered = quarters.after([Completion("report", Usage(100, 5))])
    assert isinstance(answered, Parts)
    assert len(answered.batch().asks) == 3
    refused_again = answered.after([bare, None, None])
    assert isinstance(refused_again, Parts)
    assert (len(refused_again.pieces), len(refused_again.batch().asks)) == (7, 1)


def test_parts_planned_before_a_window_was_stated_are_planned_afresh_by_it() -> None:
    """Parts halved after a refusal without numbers, then a refusal that states the
    window: everything not yet analysed is planned again as one run, into as few parts as
    fit that window, exactly the parts of a plan that knew the window from the start, not
    each earlier half split on its own."""
    log = entries(400)
    plan = start(log, None)
    assert isinstance(plan, Whole)
    halves = plan.after([PromptTooLargeError("request too large")])
    assert isinstance(halves, Parts)
    (first,) = halves.batch().asks
    refusal = PromptTooLargeError("too long", tokens=int(0.8 * first.estimate().most), limit=4800)
    following = halves.after([refusal])
    fresh = start(log, 4800)
    assert isinstance(following, Parts)
    assert isinstance(fresh, Parts)
    assert following.pieces == fresh.pieces
    assert len(fresh.pieces) < len(halves.pieces) * 3


@pytest.mark.parametrize("below", [0, 1], ids=["exactly the merge", "one token under it"])
def test_a_ceiling_that_exactly_holds_the_smallest_merge_lets_the_log_be_split(
    below: int,
) -> None:
    """After a refusal whose stated window held the request (so gc halves what it will
    send), the log is split if the ceiling left holds the smallest merge gc could make
    (two empty reports) by its upper estimate, exactly as a request is let through at
    exactly the ceiling; one token under it, no merge could be sent, so the window is too
    small before any part is sent, even for a log of just two parts."""
    ceiling = empty_merge() - below
    request = next(
        r for r in range(beside(), 10_000) if int(beside() + (r - beside()) * 0.55) == ceiling
    )
    log = _log_estimated_at(request)
    plan = start(log, None)
    assert isinstance(plan, Whole)
    refusal = PromptTooLargeError("prompt cut", limit=request)
    if below:
        with pytest.raises(WindowTooSmallError):
            plan.after([refusal])
        return
    parts = plan.after([refusal])
    assert isinstance(parts, Parts)
    assert (parts.sizing.ceiling, len(parts.pieces)) == (ceiling, 2)


def test_a_request_estimated_at_exactly_the_window_or_the_ceiling_fits() -> None:
    """A request whose upper estimate, scaled by the most the provider was seen counting
    above it, equals the window or the ceiling refusals left is sent; a token more is not.
    A window too small names the stated window whenever it binds, also when it leaves
    exactly the ceiling beside gc's instructions."""
    request = TokenEstimate(most=1000, likely=700)
    for sizing, fits in [
        (Sizing(window=1000), True),
        (Sizing(window=999), False),
        (Sizing(window=2000, ratio=2.0), True),
        (Sizing(window=1999, ratio=2.0), False),
        (Sizing(ceiling=1000), True),
        (Sizing(ceiling=999), False),
        (Sizing(window=5000, ceiling=1000), True),
    ]:
        assert sizing.fits(request) is fits, sizing
    window = 2000
    for ceiling, named in [(window - beside(), window), (window - beside() - 1, None)]:
        error = Sizing(window=window, ceiling=ceiling).too_small()
        assert (error.limit, error.instructions) == (named, beside())


def test_an_entry_too_large_for_refusals_without_numbers_is_sent_by_halves() -> None:
    """An entry larger than what refusals without numbers let through, among smaller
    ones, is sent as its first half, then, refused again, its first quarter: halves of
    that entry's own bytes, wherever it lies in the log."""
    log = entries(30) + entry(30, result="a word of prose " * 1500) + entries(5, start=31)
    index = LogIndex(log)
    whole = index.bounds[31] - index.bounds[30]
    run = drive(log, Provider(window=3000, style="bare"))
    assert isinstance(run.end, Finished)
    cuts = [ask.part for ask, _ in run.sent(Stage.PARTS) if ask.part and ask.part.sent]
    assert cuts == [Part(30, 31, whole // 2), Part(30, 31, whole // 4)]


def test_a_log_whose_bytes_fit_beside_the_instructions_goes_whole_however_it_is_estimated() -> None:
    """A provider never counts a token for less than a byte, so a log whose bytes and gc's
    instructions fit the window goes whole, as the spec's one request, even where gc's
    upper estimate of it is above its bytes (emoji, a token a byte, and the estimate's
    room); a byte more than that and the estimate decides."""
    log = b"## " + "\N{GRINNING FACE}".encode() * 300
    assert estimate_tokens(log).most > len(log)
    plan = start(log, beside() + len(log))
    assert isinstance(plan, Whole)
    assert plan.ask.content() is log
    assert isinstance(start(log, beside() + len(log) - 1), Parts)
