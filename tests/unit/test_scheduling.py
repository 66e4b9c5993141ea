"""What the sizing of a big log learns is never lost, and what was sent is
always counted: properties over random windows, refusal styles and replies.

The provider is a fake with a context window that counts tokens like a byte-pair
tokenizer. It refuses what does not fit in one of four styles: with its numbers
(Anthropic, OpenAI), without them (a 413 from a gateway), a bare 413 first and numbers
after, or (Ollama) a window known up front and a cut prompt reported as a limit alone.
Replies report their prompt size, or do not.
"""

from __future__ import annotations

import threading

import attrs
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from axe.application.gc import GcOptions, GcPorts, collect_garbage
from axe.application.ports import AnalysisRequest
from axe.domain.entries import count_entries
from axe.domain.errors import ApiError, PromptTooLargeError, WindowTooSmallError
from axe.domain.planning import request_tokens
from axe.domain.prompt import MERGE_PROMPT, PATTERN_DETECTION_PROMPT
from axe.domain.results import AgentResult, AgentStatus, Completion, Spent, Usage
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
from tests.unit.test_planning import merge_floor

STYLES = ["numbers", "bare", "bare-then-numbers", "ollama"]


def _words(length: int) -> str:
    """``length`` characters of a report as a model writes one: words, not one letter
    repeated (which a byte-pair tokenizer counts up to four times gc's estimate)."""
    text = "- Seen in several entries; the same task ran again with the same result.\n"
    return (text * (length // len(text) + 1))[:length]


def tokens(request: AnalysisRequest) -> int:
    return count_tokens(request.system_prompt) + count_tokens(request.content.decode()) + 8


@attrs.define
class Sent:
    """One request as the fake provider saw it, and what it knew was refused before it."""

    request: AnalysisRequest
    tokens: int
    estimate: int
    refused: bool = False


class Provider:
    """A window of ``size`` tokens refusing in ``style``; replies report their prompt size
    when ``usage`` is set, and part reports are ``report`` characters long."""

    def __init__(self, size: int, style: str, *, usage: bool = True, report: int = 40) -> None:
        self.size, self.style, self.usage, self.report = size, style, usage, report
        self.sent: list[Sent] = []
        self._lock = threading.Lock()

    @property
    def window(self) -> int | None:
        """What the client knows before sending: Ollama's window, nobody else's."""
        return self.size if self.style == "ollama" else None

    def __call__(self, request: AnalysisRequest) -> Completion | ApiError:
        used = tokens(request)
        estimate = request_tokens(request.system_prompt, estimate_tokens(request.content)).most
        record = Sent(request, used, estimate)
        with self._lock:
            first_refusal = not any(sent.refused for sent in self.sent)
            self.sent.append(record)
            if used > self.size:
                record.refused = True
                return self._refusal(used, first_refusal)
        usage = Usage(used, 7) if self.usage else None
        if request.system_prompt == MERGE_PROMPT:
            return Completion("## Patterns Found\nmerged", usage)
        head = request.content[:8].decode()
        return Completion(f"report on {head} " + _words(self.report), usage)

    def _refusal(self, used: int, first: bool) -> PromptTooLargeError:
        bare = self.style == "bare" or (self.style == "bare-then-numbers" and first)
        if bare:
            return PromptTooLargeError("request too large", sent=1)
        if self.style == "ollama":  # the prompt was cut: a limit, no count
            return PromptTooLargeError("prompt cut", limit=self.size, sent=1)
        return PromptTooLargeError("too long", tokens=used, limit=self.size, sent=1)


def run(memory: bytes, provider: Provider, *, jobs: int = 1) -> AgentResult:
    llm = ScriptedLLM(script=provider, window=provider.window)
    ports = GcPorts(
        agents=FakeAgentRepository(make_agent("a", last_n=2)),
        memory=FakeMemoryStore({"a": memory}),
        llm=llm,
        output=RecordingOutput(),
    )
    return collect_garbage("a", GcOptions(dry_run=True, part_concurrency=jobs), ports)


def numbered_log(bodies: list[tuple[int, str]]) -> bytes:
    """Entries numbered in their headers, so each part can be placed in the log."""
    return b"".join(
        f"## {index:05d}\n**Task:** {word * size}\n\n".encode()
        for index, (size, word) in enumerate(bodies)
    )


_LOGS = st.lists(
    st.tuples(st.integers(0, 300), st.sampled_from(["w ", "日", "x", "word, "])),
    min_size=1,
    max_size=40,
).map(numbered_log)


def assert_every_entry_once_in_order(memory: bytes, provider: Provider) -> None:
    parts = [
        sent.request.content
        for sent in provider.sent
        if not sent.refused and sent.request.system_prompt == PATTERN_DETECTION_PROMPT
    ]
    if len(parts) == 1 and parts[0] == memory:
        return
    parts.sort(key=lambda part: int(part[3:8]))  # a refused part is re-sent after later ones
    if not any(b"axe gc left out the last" in part for part in parts):
        assert b"".join(parts) == memory
    assert sum(count_entries(part) for part in parts) == count_entries(memory)


def assert_never_forgets(provider: Provider) -> None:
    """No request over a window that was known when it was sent, no request estimated at or
    above one refused without numbers, never the same request refused twice."""
    known = provider.window
    bare: int | None = None
    for sent in provider.sent:
        if known is not None:
            assert sent.tokens <= known, "a request over a known window"
        if bare is not None:
            assert sent.estimate < bare, "a size already refused, sent again"
        if sent.refused:
            if provider.style == "bare" or (
                provider.style == "bare-then-numbers" and bare is None and known is None
            ):
                bare = sent.estimate if bare is None else min(bare, sent.estimate)
            else:
                known = provider.size
    refused = [sent.request for sent in provider.sent if sent.refused]
    assert len(refused) == len({(r.system_prompt, r.content) for r in refused})


def assert_no_merge_of_one(provider: Provider) -> None:
    for sent in provider.sent:
        if sent.request.system_prompt == MERGE_PROMPT:
            assert sent.request.content.count(b"### Report ") >= 2


# A part refused without numbers while it was the only one under way: the next part,
# planned before that refusal, must not start (it did once a worker could finish before
# the scheduler looked again, and was refused too).
_REFUSED_ALONE = numbered_log(
    [
        *[(91, "日"), (300, "日"), (162, "word, "), (0, "w "), (0, "w "), (0, "w ")],
        *[(254, "w "), (300, "w "), (0, "w "), (0, "w "), (2, "word, "), (295, "日")],
        (300, "word, "),
    ]
)


@settings(max_examples=80, deadline=None)
@given(
    _LOGS,
    st.integers(1200, 6000),
    st.sampled_from(STYLES),
    st.booleans(),
    st.integers(10, 600),
)
@example(_REFUSED_ALONE, 1200, "bare", False, 10)
@example(_REFUSED_ALONE, 1200, "bare-then-numbers", False, 10)
def test_the_sizing_never_forgets_and_every_entry_is_analysed_once(
    memory: bytes, window: int, style: str, usage: bool, report: int
) -> None:
    """Whatever the window, the refusal style and whether replies report their size: every
    entry goes in exactly one part, in order; no request exceeds a window once known; no
    size already refused without numbers is sent again; no merge holds one report."""
    provider = Provider(window, style, usage=usage, report=report)
    result = run(memory, provider)
    assert result.status is AgentStatus.DRY_RUN, str(result.error)
    assert_every_entry_once_in_order(memory, provider)
    assert_never_forgets(provider)
    assert_no_merge_of_one(provider)
    assert result.analysis is not None
    assert result.analysis.requests == len(provider.sent)


def test_a_refusal_without_numbers_is_remembered_by_every_later_request() -> None:
    """The sizing learnt from the parts is the one the merges start from: after a bare 413
    no request (part or merge) is estimated at or above a size already refused; a sizing
    rebound locally (lost between parts and merges) fails this."""
    provider = Provider(3000, "bare", report=2500)
    result = run(entries(400), provider)
    assert result.status is AgentStatus.DRY_RUN, str(result.error)
    assert [s for s in provider.sent if s.request.system_prompt == MERGE_PROMPT]
    assert_never_forgets(provider)
    refused_merges = [
        s for s in provider.sent if s.refused and s.request.system_prompt == MERGE_PROMPT
    ]
    assert len(refused_merges) <= 1


def test_a_known_window_is_filled_by_the_estimate_whatever_replies_report() -> None:
    """Ollama's window known up front: every part goes out at once, as few as fit the
    window by gc's upper estimate, none over the window by the provider's count; replies
    that report a size below the estimate change nothing (the same requests as replies
    that report none), as the estimate is what keeps every request within the window."""
    window = 3000
    memory = entries(1200)
    provider = Provider(window, "ollama")
    result = run(memory, provider, jobs=4)
    assert result.status is AgentStatus.DRY_RUN, str(result.error)
    beside = request_tokens(PATTERN_DETECTION_PROMPT, estimate_tokens(b"")).most
    least = -(-estimate_tokens(memory).most // (window - beside))
    assert result.analysis is not None
    assert result.analysis.parts is not None
    assert least <= result.analysis.parts <= least + 1
    assert max(s.tokens for s in provider.sent) <= window
    assert max(s.estimate for s in provider.sent) <= window
    uncounted = Provider(window, "ollama", usage=False)
    run(memory, uncounted, jobs=4)

    def requests(sent: list[Sent]) -> list[tuple[str, bytes]]:
        return sorted((s.request.system_prompt, s.request.content) for s in sent)

    assert requests(uncounted.sent) == requests(provider.sent)


def test_a_failed_part_keeps_what_the_analysis_sent() -> None:
    """Part 3 failing after two answered ones: the result still counts every request sent
    (the refused whole log, both parts, the failed one) and the tokens replies reported."""
    memory = entries(300)
    window = 3000
    answered: list[int] = []

    def provider(request: AnalysisRequest) -> Completion | ApiError:
        used = tokens(request)
        if used > window:
            return PromptTooLargeError("too long", tokens=used, limit=window, sent=1)
        if len(answered) == 2:
            return ApiError("anthropic API error (HTTP 500): overloaded", sent=2)
        answered.append(used)
        return Completion("report", Usage(used, 5))

    llm = ScriptedLLM(script=provider)
    ports = GcPorts(
        agents=FakeAgentRepository(make_agent("a", last_n=2)),
        memory=FakeMemoryStore({"a": memory}),
        llm=llm,
        output=RecordingOutput(),
    )
    result = collect_garbage("a", GcOptions(part_concurrency=1), ports)
    assert (result.status, result.exit_code) == (AgentStatus.FAILED, 3)
    assert str(result.error).startswith("analysis of part 3 of ")
    assert isinstance(result.error, ApiError)
    assert result.error.sent == 2  # put in context, not rebuilt: its numbers are kept
    assert result.spent == Spent(
        usage=Usage(sum(answered), 10), requests=len(llm.requests) + 1, parts=2
    )


def test_a_request_retried_then_given_up_is_counted() -> None:
    """A log that fits, a 429 retried twice then given up: three requests, no usage, and
    no parts (the log was not split)."""
    llm = ScriptedLLM(ApiError("rate limited (HTTP 429)", sent=3))
    ports = GcPorts(
        agents=FakeAgentRepository(make_agent("a", last_n=2)),
        memory=FakeMemoryStore({"a": entries(5)}),
        llm=llm,
        output=RecordingOutput(),
    )
    result = collect_garbage("a", GcOptions(), ports)
    assert result.spent == Spent(usage=None, requests=3, parts=None)
    assert result.analysis is None


def test_an_entry_larger_than_the_window_is_cut_to_fit_a_known_window() -> None:
    """One huge entry among small ones, the window known up front: cut with its marker,
    still within the window."""
    memory = entries(30) + entry(31, result="word " * 30_000) + entries(5, start=32)
    provider = Provider(3000, "ollama")
    result = run(memory, provider)
    assert result.status is AgentStatus.DRY_RUN
    assert max(s.tokens for s in provider.sent) <= 3000
    assert any(b"axe gc left out the last" in s.request.content for s in provider.sent)


def test_a_window_too_small_is_a_fact_with_its_numbers() -> None:
    """The core says why (the window, what the instructions need), not what to do: the
    console words the advice."""
    provider = Provider(200, "ollama")
    result = run(entries(50), provider)
    assert isinstance(result.error, WindowTooSmallError)
    assert result.error.limit == 200
    assert result.error.instructions is not None
    assert result.error.instructions > 200
    assert provider.sent == []


def _merge_floor() -> int:
    from tests.unit.test_planning import merge_floor

    return merge_floor()


@pytest.mark.parametrize("taught", ["refusal", "known"])
@pytest.mark.parametrize("window", [400, None], ids=["400 tokens", "just under a merge"])
def test_a_window_no_merge_fits_fails_before_any_part_is_sent(
    taught: str, window: int | None
) -> None:
    """A window that holds no merge of two reports (400 tokens, or one
    token under the smallest merge gc makes), on a 60-entry log, whether a refusal with
    numbers taught it or the client knew it: gc says the window is too small (exit 3)
    before sending any part; only the whole log, refused, was sent."""
    limit = window if window is not None else merge_floor() - 1
    memory = entries(60)

    def provider(request: AnalysisRequest) -> Completion | ApiError:
        return PromptTooLargeError("too long", tokens=tokens(request), limit=limit, sent=1)

    llm = ScriptedLLM(script=provider, window=limit if taught == "known" else None)
    ports = GcPorts(
        agents=FakeAgentRepository(make_agent("a", last_n=2)),
        memory=FakeMemoryStore({"a": memory}),
        llm=llm,
        output=RecordingOutput(),
    )
    result = collect_garbage("a", GcOptions(), ports)
    assert (result.status, result.exit_code) == (AgentStatus.FAILED, 3)
    assert isinstance(result.error, WindowTooSmallError)
    assert result.error.limit == limit
    expected = [] if taught == "known" else [memory]
    assert [request.content for request in llm.requests] == expected
