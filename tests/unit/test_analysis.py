"""Logs larger than the model's window: split, analysed in parts, merged.

The provider is a fake with a context window that counts tokens like a byte-pair tokenizer
and refuses what does not fit, with or without its numbers, as the real ones do.
"""

from __future__ import annotations

import math
import re
import threading
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from axe.adapters.console.lines import error_text
from axe.application.gc import GcOptions, GcPorts, collect_garbage
from axe.application.ports import AnalysisRequest
from axe.domain.entries import count_entries
from axe.domain.errors import ApiError, ConfigError, PromptTooLargeError
from axe.domain.events import AnalysisSplit, MergeStarted, PartAnalysed
from axe.domain.planning import request_tokens
from axe.domain.prompt import MERGE_PROMPT, PATTERN_DETECTION_PROMPT
from axe.domain.results import AgentResult, AgentStatus, Completion, Usage
from axe.domain.token_estimate import estimate_tokens
from axe.testing import (
    FakeAgentRepository,
    FakeMemoryStore,
    RecordingOutput,
    ScriptedLLM,
    make_agent,
)
from tests.support import entries, entry
from tests.tokenizer import count_tokens


def said(result: AgentResult) -> str:
    """The failure as the console words it."""
    assert result.error is not None
    return error_text(result.error)


def tokens(request: AnalysisRequest) -> int:
    content = request.content.decode("utf-8", "replace")
    return count_tokens(request.system_prompt) + count_tokens(content) + 8


def first_header(request: AnalysisRequest) -> str:
    text = request.content.decode("utf-8", "replace")
    start = text.find("## ")
    return text[start + 3 : text.find("\n", start)] if start != -1 else "?"


class Window:
    """A provider whose window holds ``size`` tokens; refusals carry numbers unless
    ``numbers`` is False (a 413, or OpenAI's newer wording)."""

    def __init__(self, size: int, *, numbers: bool = True, fail: str | None = None) -> None:
        self.size = size
        self.numbers = numbers
        self.fail = fail

    def __call__(self, request: AnalysisRequest) -> Completion | ApiError:
        used = tokens(request)
        if used > self.size:
            return PromptTooLargeError(
                f"prompt is too long: {used} tokens > {self.size} maximum",
                tokens=used if self.numbers else None,
                limit=self.size if self.numbers else None,
            )
        merge = request.system_prompt == MERGE_PROMPT
        if self.fail and (self.fail == "merge") == merge and self.fail in ("merge", "part"):
            return ApiError("boom")
        if merge:
            return Completion("## Patterns Found\nmerged", Usage(used, 3))
        return Completion(f"report from {first_header(request)}", Usage(used, 5))


def run(
    memory: bytes, llm: ScriptedLLM, *, dry_run: bool = False
) -> tuple[AgentResult, RecordingOutput, FakeMemoryStore]:
    output, store = RecordingOutput(), FakeMemoryStore({"a": memory})
    ports = GcPorts(
        agents=FakeAgentRepository(make_agent("a", last_n=2)),
        memory=store,
        llm=llm,
        output=output,
    )
    return collect_garbage("a", GcOptions(dry_run=dry_run), ports), output, store


def parts_sent(llm: ScriptedLLM) -> list[AnalysisRequest]:
    return [r for r in llm.requests if r.system_prompt == PATTERN_DETECTION_PROMPT]


def answered(llm: ScriptedLLM, window: int) -> list[AnalysisRequest]:
    return [r for r in llm.requests if tokens(r) <= window]


def test_a_log_that_fits_is_one_request_exactly_as_the_spec_says() -> None:
    """Nothing is added to a log that fits: one request, the fixed prompt, the whole log,
    no split or merge events."""
    llm = ScriptedLLM(script=Window(100_000))
    _, output, _ = run(entries(20), llm)
    (request,) = llm.requests
    assert (request.system_prompt, request.content) == (PATTERN_DETECTION_PROMPT, entries(20))
    assert not output.of_type(AnalysisSplit)
    assert not output.of_type(MergeStarted)


def test_a_refused_log_is_split_at_entries_and_every_part_fits() -> None:
    """After "prompt is too long: N > M", parts sized from N and M each fit the window,
    carry every entry once in log order, and their reports are merged into one."""
    memory = entries(400)
    window = 3000
    llm = ScriptedLLM(script=Window(window))
    result, _, store = run(memory, llm)
    (refused, *rest) = llm.requests
    assert refused.content == memory
    parts = parts_sent(llm)[1:]
    assert len(parts) >= 2
    assert all(tokens(r) <= window for r in rest)
    assert b"".join(p.content for p in parts) == memory
    merges = [r for r in rest if r.system_prompt == MERGE_PROMPT]
    assert merges
    reported = re.findall(r"report from (\S+)", merges[0].content.decode())
    assert len(reported) >= 2
    assert reported == sorted(reported)  # the reports reach the merge in log order
    assert result.status is AgentStatus.TRIMMED
    assert result.analysis is not None
    assert result.analysis.text == "## Patterns Found\nmerged"
    assert result.analysis.parts == len(parts)
    assert result.analysis.requests == len(llm.requests)
    assert result.analysis.usage is not None
    assert store.files["a"] == entries(2, start=398)


def test_parts_are_not_much_more_than_the_ideal() -> None:
    """Sized by gc's upper estimate, at most 1.6 times what a provider counts of English
    text, the parts number at most 1.6 times the ideal ceil(N / M), and one more."""
    memory = entries(1000)
    llm = ScriptedLLM(script=Window(5000))
    run(memory, llm)
    full = tokens(llm.requests[0])
    ideal = -(-full // 5000)
    assert len(parts_sent(llm)) - 1 <= math.ceil(1.6 * ideal) + 1


def test_a_refusal_without_numbers_halves_the_log() -> None:
    """A 413 says nothing about sizes: the log is halved, and halved again if still refused."""
    memory = entries(64)
    window = tokens_of(entries(20)) + 400
    llm = ScriptedLLM(script=Window(window, numbers=False))
    run(memory, llm)
    answered_parts = [r for r in parts_sent(llm) if tokens(r) <= window]
    assert [count_entries(r.content) for r in answered_parts] == [16, 16, 16, 16]


def tokens_of(memory: bytes) -> int:
    return count_tokens(memory.decode())


def test_a_known_window_splits_up_front_without_a_refused_request() -> None:
    """With --max-input-tokens (or Ollama's reported window) no request is ever refused."""
    window = 2500
    llm = ScriptedLLM(script=Window(window), window=window)
    run(entries(300), llm)
    assert all(tokens(r) <= window for r in llm.requests)
    assert len(parts_sent(llm)) >= 2


def test_reports_too_many_for_one_merge_are_merged_in_rounds() -> None:
    """When the part reports themselves do not fit one request, they are merged in rounds."""
    window = 1200
    llm = ScriptedLLM(script=Window(window), window=window)
    _, output, _ = run(entries(600), llm)
    rounds = output.of_type(MergeStarted)
    assert len(rounds) >= 2
    assert rounds[0].reports > rounds[-1].reports >= 2
    assert all(tokens(r) <= window for r in llm.requests)


def test_progress_events_count_the_parts() -> None:
    """A frontend sees how many parts there are (the count re-announced when calibration
    re-plans the rest) and how many are done, one by one up to the last count."""
    llm = ScriptedLLM(script=Window(3000), window=3000)
    _, output, _ = run(entries(300), llm)
    splits = output.of_type(AnalysisSplit)
    done = [e.done for e in output.of_type(PartAnalysed)]
    assert done == list(range(1, splits[-1].parts + 1))
    assert output.of_type(PartAnalysed)[-1].parts == splits[-1].parts


def test_an_entry_larger_than_a_part_is_sent_cut_with_a_marker() -> None:
    """One huge entry is cut to fit, with a marker saying how much was left out; the file
    keeps it whole."""
    huge = entry(5, result="word " * 20_000)
    memory = entries(5) + huge + entries(5, start=6)
    llm = ScriptedLLM(script=Window(4000))
    _, _, store = run(memory, llm, dry_run=True)
    (cut,) = [r for r in parts_sent(llm) if b"axe gc left out the last" in r.content]
    assert cut.content.startswith(huge[:60])
    assert tokens(cut) <= 4000
    assert store.files["a"] == memory


@pytest.mark.parametrize(
    ("fail", "message"),
    [("part", "analysis of part 1 of "), ("merge", "merging the ")],
)
def test_a_failing_part_or_merge_fails_the_agent_and_trims_nothing(fail: str, message: str) -> None:
    """Any part or merge failing is exit 3 with one line saying which, and no trim."""
    memory = entries(300)
    llm = ScriptedLLM(script=Window(2500, fail=fail), window=2500)
    result, _, store = run(memory, llm)
    assert (result.status, result.exit_code) == (AgentStatus.FAILED, 3)
    assert str(result.error).startswith(message)
    assert str(result.error).endswith("failed: boom")
    assert store.files["a"] == memory


_BODIES = st.tuples(st.integers(min_value=0, max_value=400), st.sampled_from(["w ", "日", "x"]))


def numbered_log(bodies: list[tuple[int, str]]) -> bytes:
    """Entries numbered in their headers, so each part can be placed in the log."""
    return b"".join(
        f"## {index:05d}\n**Task:** {word * size}\n\n".encode()
        for index, (size, word) in enumerate(bodies)
    )


def assert_parts_carry_every_entry_once_in_order(
    memory: bytes, llm: ScriptedLLM, window: int
) -> None:
    kept = sorted(
        (r.content for r in parts_sent(llm) if tokens(r) <= window and r.content != memory),
        key=first_number,
    )
    if not any(b"axe gc left out the last" in content for content in kept):
        assert b"".join(kept) == memory
    assert sum(count_entries(content) for content in kept) == count_entries(memory)


@settings(max_examples=60)
@given(st.lists(_BODIES, min_size=1, max_size=40).map(numbered_log), st.integers(900, 6000))
def test_with_a_known_window_every_request_fits(memory: bytes, window: int) -> None:
    """A cap (or Ollama's window) is a hard limit: not one request exceeds it, whatever the
    log; the parts carry every entry once, in log order, and one report comes out."""
    llm = ScriptedLLM(script=Window(window), window=window)
    result, _, _ = run(memory, llm, dry_run=True)
    assert result.status is AgentStatus.DRY_RUN
    assert max(tokens(r) for r in llm.requests) <= window
    if len(llm.requests) > 1:
        assert_parts_carry_every_entry_once_in_order(memory, llm, window)


@settings(max_examples=60)
@given(st.lists(_BODIES, min_size=1, max_size=40).map(numbered_log), st.integers(900, 6000))
def test_with_a_window_known_only_from_refusals_the_analysis_finishes(
    memory: bytes, window: int
) -> None:
    """Learning the window from "too long" answers, gc still ends with one report, every
    entry analysed once, in log order, whatever the log and the window."""
    llm = ScriptedLLM(script=Window(window))
    result, _, _ = run(memory, llm, dry_run=True)
    assert result.status is AgentStatus.DRY_RUN
    if tokens(llm.requests[0]) > window:
        assert_parts_carry_every_entry_once_in_order(memory, llm, window)
    else:
        assert len(llm.requests) == 1


def first_number(content: bytes) -> int:
    return int(content[3:8])


def test_a_window_too_small_for_the_instructions_fails_in_one_line() -> None:
    """A model (or cap) whose window cannot hold gc's instructions and a slice of the log is
    exit 3, saying so and what to do, and nothing is trimmed."""
    llm = ScriptedLLM(script=Window(200), window=200)
    result, _, store = run(entries(50), llm)
    assert (result.status, result.exit_code) == (AgentStatus.FAILED, 3)
    assert said(result).startswith(
        "the model's context window (200 tokens for input) is too small to hold gc's "
        "instructions (about "
    )
    assert said(result).endswith("use a model with a larger window, or --model builtin/heuristic")
    assert llm.requests == []
    assert store.files["a"] == entries(50)


def test_a_window_that_holds_the_instructions_but_no_part_says_so_in_its_own_tokens() -> None:
    """Learnt from a refusal, the window's size and the instructions' need are both in the
    provider's tokens: the message never claims instructions larger than a window that
    holds them."""
    llm = ScriptedLLM(script=Window(300))
    result, _, store = run(entries(50), llm)
    assert (result.status, result.exit_code) == (AgentStatus.FAILED, 3)
    found = re.search(
        r"\((\d+) tokens for input\).*instructions \(about (\d+) tokens\)", said(result)
    )
    assert found is not None, said(result)
    window, need = int(found[1]), int(found[2])
    assert window == 300
    assert need < window
    assert store.files["a"] == entries(50)


class Refusing:
    """A provider that refuses every request as too long, with the numbers given (or not);
    after ``give_up`` requests it fails instead, so a loop that never ends fails a test
    rather than hanging it."""

    def __init__(self, *, tokens: int | None = None, limit: int | None = None) -> None:
        self.tokens, self.limit = tokens, limit
        self.count = 0

    def __call__(self, request: AnalysisRequest) -> ApiError:
        self.count += 1
        if self.count > 2000:
            return ApiError("the analysis never ended")
        return PromptTooLargeError("request too large", tokens=self.tokens, limit=self.limit)


@pytest.mark.parametrize(
    "memory",
    [entries(40), entry(1, "x" * 20_000), b"pre-header text\n" * 2000 + entries(3)],
    ids=["many entries", "one huge entry", "long pre-header text"],
)
def test_a_provider_that_refuses_everything_without_numbers_ends_in_one_line(
    memory: bytes,
) -> None:
    """A gateway answering 413 to every request: the log is halved until a request is
    within the smallest window gc supports, then gc stops (exit 3) in a few requests, with
    one line that quotes the refusal and says what was sent, never a window it guessed."""
    provider = Refusing()
    result, _, store = run(memory, ScriptedLLM(script=provider))
    assert (result.status, result.exit_code) == (AgentStatus.FAILED, 3)
    assert re.fullmatch(
        r"request too large \(gc sent [\d,]+ bytes beside its instructions: about [\d,]+ "
        r"tokens by its own estimate, which errs high; sending less would not help, so gc "
        r"stopped: check the model, its window and any gateway in between, or use --model "
        r"builtin/heuristic\)",
        said(result),
    )
    assert provider.count <= 6
    assert store.files["a"] == memory


@pytest.mark.parametrize(
    "memory",
    [entries(40), entry(1, "x" * 20_000)],
    ids=["many entries", "one huge entry"],
)
def test_refusals_without_numbers_end_even_when_a_budget_says_the_part_fits(
    memory: bytes,
) -> None:
    """With a cap (or an Ollama window) the budget believes a part fits, yet a gateway
    refuses it without numbers: the refusal wins, the part is halved, and the analysis
    still ends in one line quoting the refusal after a few requests."""
    provider = Refusing()
    result, _, _ = run(memory, ScriptedLLM(script=provider, window=100_000))
    assert (result.status, result.exit_code) == (AgentStatus.FAILED, 3)
    assert said(result).startswith("request too large (gc sent ")
    assert provider.count <= 6


def test_a_refused_merge_of_several_reports_never_sends_a_merge_of_one() -> None:
    """Long part reports whose merge is refused (a 413, no numbers, no cap): groups are
    halved down to pairs, a lone report goes on unmerged, pairs are shortened, and the
    analysis ends with one report; no merge request ever holds fewer than two reports."""
    count = 0

    def gateway(request: AnalysisRequest) -> Completion | ApiError:
        nonlocal count
        count += 1
        if count > 200:
            return ApiError("the analysis never ended")
        if len(request.content) > 20_000:
            return PromptTooLargeError("request too large")
        if request.system_prompt == MERGE_PROMPT:
            return Completion("## Patterns Found\nmerged")
        return Completion("## Patterns Found\n" + "y" * 20_990)

    log = b"".join(entry(i, "word " * 1500) for i in range(5))
    llm = ScriptedLLM(script=gateway)
    result, _, _ = run(log, llm, dry_run=True)
    assert result.status is AgentStatus.DRY_RUN, said(result)
    merges = [r for r in llm.requests if r.system_prompt == MERGE_PROMPT]
    assert merges
    assert all(r.content.count(b"### Report") >= 2 for r in merges)


def test_a_window_that_the_reply_alone_fills_is_said_at_once() -> None:
    """A refusal whose window minus the reply leaves nothing for input (limit 0) ends after
    that one request, saying so."""
    provider = Refusing(tokens=5000, limit=0)
    result, _, _ = run(entries(40), ScriptedLLM(script=provider))
    assert (result.status, result.exit_code, provider.count) == (AgentStatus.FAILED, 3, 1)
    assert said(result) == (
        "the model's context window cannot hold gc's instructions beside a reply of "
        "4,096 tokens; use a model with a larger window, or --model builtin/heuristic"
    )


def test_merge_requests_keep_within_the_cap_however_long_the_reports() -> None:
    """With a cap, every request, merges included, is estimated within it: long part
    reports are shortened to fit rather than sent for a provider to cut silently."""
    cap = 1024

    def long_reports(request: AnalysisRequest) -> str:
        return "## Patterns Found\n" + "a finding worth keeping. " * 400

    llm = ScriptedLLM(script=long_reports, window=cap)
    result, output, _ = run(entries(60), llm)
    assert result.status is AgentStatus.TRIMMED
    assert output.of_type(MergeStarted)
    merges = [r for r in llm.requests if r.system_prompt == MERGE_PROMPT]
    assert merges
    assert all(
        request_tokens(r.system_prompt, estimate_tokens(r.content)).most <= cap
        for r in llm.requests
    )


def test_a_config_error_in_a_part_keeps_its_exit_code() -> None:
    """A failure that is a config error on a log that fits (a bad proxy setting) is the
    same exit 2 when it strikes a part of a split log, with the part named."""

    def proxy_misconfigured(request: AnalysisRequest) -> ConfigError:
        return ConfigError("HTTPS_PROXY: unsupported scheme")

    result, _, _ = run(entries(60), ScriptedLLM(script=proxy_misconfigured, window=1024))
    assert (result.status, result.exit_code) == (AgentStatus.FAILED, 2)
    assert str(result.error).endswith("failed: HTTPS_PROXY: unsupported scheme")


@pytest.mark.parametrize("max_tokens", [0, 1_000_000])
def test_only_a_budget_keeps_unanswered_requests_from_being_sent_again(max_tokens: int) -> None:
    """Under a budget every request says that an attempt which went out unanswered (and
    may have been billed) is not to be tried again; without one the client may retry it."""
    llm = ScriptedLLM("the analysis")
    ports = GcPorts(
        agents=FakeAgentRepository(make_agent("a", last_n=2)),
        memory=FakeMemoryStore({"a": entries(5)}),
        llm=llm,
        output=RecordingOutput(),
    )
    collect_garbage("a", GcOptions(max_tokens=max_tokens), ports)
    assert [request.retry_unanswered for request in llm.requests] == [max_tokens == 0]


class Lowering(Window):
    """A gateway that states one window, then a smaller one: requests above ``second``
    tokens (once one was refused with it) are refused with ``second``."""

    def __init__(self, first: int, second: int) -> None:
        super().__init__(first)
        self.second = second
        self.lowered = False
        self.after_lowering: list[int] = []

    def __call__(self, request: AnalysisRequest) -> Completion | ApiError:
        used = tokens(request)
        if self.lowered:
            self.after_lowering.append(used)
        part = request.system_prompt == PATTERN_DETECTION_PROMPT
        if part and self.second < used <= self.size:  # within the first window only
            self.lowered = True
            return PromptTooLargeError(
                f"prompt is too long: {used} tokens > {self.second} maximum",
                tokens=used,
                limit=self.second,
            )
        return super().__call__(request)


def test_a_smaller_window_stated_later_bounds_every_later_part() -> None:
    """A second refusal that states a smaller window than the first: no part sent after it
    is sized above the smaller window, and the analysis still finishes."""
    llm = Lowering(first=12_000, second=5_000)
    result, _, _ = run(entries(1500), ScriptedLLM(script=llm))
    assert result.status is AgentStatus.TRIMMED
    assert llm.lowered
    assert llm.after_lowering
    assert max(llm.after_lowering) <= 5_000


def test_at_most_four_parts_are_in_flight_at_once() -> None:
    """A log of many parts is analysed at most four parts at a time (docs/big-logs.md)."""
    in_flight, most = [0], [0]
    guard = threading.Lock()
    window = Window(3_000)

    def slowly(request: AnalysisRequest) -> Completion | ApiError:
        with guard:
            in_flight[0] += 1
            most[0] = max(most[0], in_flight[0])
        time.sleep(0.02)
        with guard:
            in_flight[0] -= 1
        return window(request)

    llm = ScriptedLLM(script=slowly, window=3_000)
    result, _, _ = run(entries(1200), llm)
    assert result.analysis is not None
    assert result.analysis.parts >= 8
    assert most[0] == 4
