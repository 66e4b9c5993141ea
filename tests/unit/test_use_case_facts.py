"""Facts the use case reports for a frontend to word: where a model the
provider does not know was named, a memory file without entry headings, a count below one."""

from __future__ import annotations

import pytest

from axe.adapters.console.lines import error_text
from axe.application.gc import BelowOneError, GcOptions, GcPorts, collect_garbage
from axe.domain.errors import AgentError, ModelNotFoundError, ModelOrigin
from axe.domain.events import MemoryRead, NoEntryHeadings
from axe.testing import (
    FakeAgentRepository,
    FakeMemoryStore,
    RecordingOutput,
    ScriptedLLM,
    make_agent,
)
from tests.support import entries


def ports(memory: bytes, llm: ScriptedLLM) -> GcPorts:
    return GcPorts(
        agents=FakeAgentRepository(make_agent("a", last_n=1)),
        memory=FakeMemoryStore({"a": memory}),
        llm=llm,
        output=RecordingOutput(),
    )


@pytest.mark.parametrize(
    ("model", "origin", "said"),
    [
        (
            None,
            ModelOrigin("anthropic/claude-3", override=False, agent="a"),
            '(model "anthropic/claude-3" is set in the file of agent "a")',
        ),
        (
            "openai/gpt-nope",
            ModelOrigin("openai/gpt-nope", override=True, agent="a"),
            '(model "openai/gpt-nope" is given by --model)',
        ),
    ],
)
def test_a_model_not_found_says_where_the_model_was_named(
    model: str | None, origin: ModelOrigin, said: str
) -> None:
    """The use case adds whether the model came from --model or the agent; the console
    words it after the provider's line."""
    result = collect_garbage(
        "a",
        GcOptions(model_override=model),
        ports(entries(2), ScriptedLLM(ModelNotFoundError("404"))),
    )
    assert isinstance(result.error, ModelNotFoundError)
    assert result.error.origin == origin
    assert (result.exit_code, error_text(result.error)) == (3, f"404 {said}")


def test_text_without_entry_headings_is_a_fact_before_the_analysis() -> None:
    """Text with no "## " line: MemoryRead with 0 entries, then NoEntryHeadings; the text is
    still analysed, as the spec says."""
    p = ports(b"just notes\n", ScriptedLLM("report"))
    collect_garbage("a", GcOptions(), p)
    assert isinstance(p.output, RecordingOutput)
    events = p.output.events
    at = events.index(MemoryRead("a", 0, 11))
    assert events[at + 1] == NoEntryHeadings("a", 11)
    assert isinstance(p.llm, ScriptedLLM)
    assert len(p.llm.requests) == 1


def test_entries_with_headings_raise_no_such_fact() -> None:
    """A log with entries emits no NoEntryHeadings."""
    p = ports(entries(2), ScriptedLLM("report"))
    collect_garbage("a", GcOptions(), p)
    assert isinstance(p.output, RecordingOutput)
    assert not [e for e in p.output.events if isinstance(e, NoEntryHeadings)]


@pytest.mark.parametrize("option", ["jobs", "part_concurrency"])
def test_a_count_below_one_is_a_fact_naming_the_option_not_a_flag(option: str) -> None:
    """GcOptions refuses a count below 1 with the keyword and the value; no CLI flag."""
    with pytest.raises(BelowOneError) as caught:
        GcOptions(**{option: 0})  # type: ignore[arg-type]
    assert (caught.value.option, caught.value.value) == (option, 0)
    assert isinstance(caught.value, AgentError)
    assert "--" not in str(caught.value)
