"""The gc use case driven entirely through in-memory fakes: no click, no files, no HTTP."""

from __future__ import annotations

import pytest

from axe.application.gc import GcOptions, GcPorts, collect_all_garbage, collect_garbage
from axe.domain.errors import AgentError, ApiError, ConfigError
from axe.domain.model import ModelRef
from axe.domain.prompt import PATTERN_DETECTION_PROMPT
from tests.fakes import (
    FakeAgentRepository,
    FakeMemoryStore,
    RecordingOutput,
    ScriptedLLM,
    agent,
)
from tests.support import entries


def ports(
    *agents: object,
    files: dict[str, bytes] | None = None,
    llm: ScriptedLLM | None = None,
    broken: dict[str, str] | None = None,
) -> GcPorts:
    return GcPorts(
        agents=FakeAgentRepository(*agents, broken=broken),  # type: ignore[arg-type]
        memory=FakeMemoryStore(files),
        llm=llm or ScriptedLLM("the analysis"),
        output=RecordingOutput(),
    )


def out(p: GcPorts) -> RecordingOutput:
    assert isinstance(p.output, RecordingOutput)
    return p.output


def store(p: GcPorts) -> FakeMemoryStore:
    assert isinstance(p.memory, FakeMemoryStore)
    return p.memory


def llm(p: GcPorts) -> ScriptedLLM:
    assert isinstance(p.llm, ScriptedLLM)
    return p.llm


def test_analyses_prints_and_trims() -> None:
    """The whole single-agent flow, every stdout line in order."""
    p = ports(agent("a", last_n=3), files={"a": entries(10)})
    collect_garbage("a", GcOptions(), p)
    assert out(p).stdout == [
        "Agent: a",
        "Entries: 10",
        "--- Analysis ---",
        "the analysis",
        "Trimmed: 7 entries removed, 3 entries kept.",
    ]
    assert out(p).stderr == []
    assert store(p).files["a"] == entries(3, start=7)


def test_request_carries_prompt_memory_and_fixed_settings() -> None:
    p = ports(agent("a", last_n=3), files={"a": entries(4)})
    collect_garbage("a", GcOptions(), p)
    (request,) = llm(p).requests
    assert request.system_prompt == PATTERN_DETECTION_PROMPT
    assert request.memory == entries(4)
    assert (request.temperature, request.max_tokens) == (0.3, 4096)
    assert request.model == ModelRef("anthropic", "claude-3")


def test_model_override_replaces_the_agents_model() -> None:
    p = ports(agent("a"), files={"a": entries(2)})
    collect_garbage("a", GcOptions(model_override="ollama/llama3"), p)
    assert llm(p).requests[0].model == ModelRef("ollama", "llama3")


def test_dry_run_prints_analysis_and_keeps_every_entry() -> None:
    p = ports(agent("a", last_n=3), files={"a": entries(10)})
    collect_garbage("a", GcOptions(dry_run=True), p)
    assert out(p).stdout[-2:] == ["the analysis", "Dry run: no entries trimmed."]
    assert store(p).files["a"] == entries(10)
    assert store(p).trims == []


def test_memory_disabled_warns_and_does_nothing() -> None:
    p = ports(agent("a", enabled=False))
    collect_garbage("a", GcOptions(), p)
    assert out(p).stderr == ['Warning: agent "a" does not have memory enabled. Skipping.']
    assert out(p).stdout == []
    assert llm(p).requests == []


@pytest.mark.parametrize("files", [{}, {"a": b""}], ids=["missing", "empty"])
def test_no_memory_means_nothing_to_do_and_no_llm_call(files: dict[str, bytes]) -> None:
    p = ports(agent("a", last_n=3), files=files)
    collect_garbage("a", GcOptions(), p)
    assert out(p).stdout == ['No memory entries for agent "a". Nothing to do.']
    assert llm(p).requests == []


def test_no_trim_target_skips_the_trim() -> None:
    p = ports(agent("a"), files={"a": entries(10)})
    collect_garbage("a", GcOptions(), p)
    assert out(p).stdout[-1] == (
        "No trim target configured (last_n and max_entries are both 0). Skipping trim."
    )
    assert store(p).files["a"] == entries(10)


def test_falls_back_to_max_entries() -> None:
    p = ports(agent("a", max_entries=5), files={"a": entries(10)})
    collect_garbage("a", GcOptions(), p)
    assert out(p).stdout[-1] == "Trimmed: 5 entries removed, 5 entries kept."
    assert store(p).files["a"] == entries(5, start=5)


def test_nothing_to_trim_reports_count_and_limit() -> None:
    p = ports(agent("a", last_n=10), files={"a": entries(3)})
    collect_garbage("a", GcOptions(), p)
    assert out(p).stdout[-1] == "No trimming needed: 3 entries within limit (10)."
    assert store(p).trims == []


def test_llm_failure_trims_nothing() -> None:
    p = ports(
        agent("a", last_n=1), files={"a": entries(4)}, llm=ScriptedLLM(error=ApiError("boom"))
    )
    with pytest.raises(ApiError, match="boom"):
        collect_garbage("a", GcOptions(), p)
    assert store(p).files["a"] == entries(4)
    assert "--- Analysis ---" not in out(p).stdout


def test_empty_analysis_still_trims() -> None:
    """gc-spec §5.3: an empty reply prints an empty analysis and trimming proceeds."""
    p = ports(agent("a", last_n=1), files={"a": entries(3)}, llm=ScriptedLLM(""))
    collect_garbage("a", GcOptions(), p)
    assert out(p).stdout[2:] == [
        "--- Analysis ---",
        "",
        "Trimmed: 2 entries removed, 1 entries kept.",
    ]


def test_invalid_model_is_an_agent_error_after_the_counts() -> None:
    p = ports(agent("a", model="nonsense"), files={"a": entries(2)})
    with pytest.raises(AgentError, match='invalid model format "nonsense"'):
        collect_garbage("a", GcOptions(), p)
    assert out(p).stdout == ["Agent: a", "Entries: 2"]


def test_unknown_agent_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match='agent "ghost" not found'):
        collect_garbage("ghost", GcOptions(), ports())


def test_archive_option_reaches_the_store() -> None:
    p = ports(agent("a", last_n=1), files={"a": b"pre\n" + entries(3)})
    collect_garbage("a", GcOptions(archive=True), p)
    assert store(p).archives["a"] == b"pre\n" + entries(2)


def test_status_shown_while_waiting_names_agent_count_and_model() -> None:
    p = ports(agent("a"), files={"a": entries(2)})
    collect_garbage("a", GcOptions(), p)
    assert out(p).statuses == ["Analysing a: 2 entries with anthropic/claude-3"]


# --all


def test_all_processes_only_memory_enabled_agents_in_name_order() -> None:
    p = ports(
        agent("agent-c", last_n=2),
        agent("agent-a", last_n=2),
        agent("agent-b", enabled=False),
        files={"agent-a": entries(10), "agent-c": entries(5)},
    )
    collect_all_garbage(GcOptions(), p)
    separators = [line for line in out(p).stdout if line.startswith("===")]
    assert separators == ["=== GC: agent-a ===", "=== GC: agent-c ==="]
    assert out(p).stderr == []
    assert store(p).files == {"agent-a": entries(2, start=8), "agent-c": entries(2, start=3)}


def test_all_with_no_enabled_agents() -> None:
    p = ports(agent("x", enabled=False), agent("y", enabled=False))
    collect_all_garbage(GcOptions(), p)
    assert out(p).stdout == ["No agents with memory enabled."]


def test_all_with_no_agents_at_all() -> None:
    p = ports()
    collect_all_garbage(GcOptions(), p)
    assert out(p).stdout == ["No agents with memory enabled."]


def test_all_continues_after_a_failure_and_counts_it() -> None:
    p = ports(agent("a", last_n=1), agent("b", last_n=1), files={"a": entries(3), "b": entries(3)})
    store(p).unreadable.add("a")
    with pytest.raises(AgentError) as caught:
        collect_all_garbage(GcOptions(), p)
    assert str(caught.value) == "gc completed with errors: 1 of 2 agents failed"
    assert out(p).stderr == [
        'Error: gc failed for agent "a": cannot read memory file of a: permission denied'
    ]
    assert store(p).files["b"] == entries(1, start=2)


def test_all_counts_every_failure() -> None:
    names = [f"a{i}" for i in range(5)]
    p = ports(
        *(agent(n, last_n=1) for n in names),
        files={n: entries(2) for n in names},
        llm=ScriptedLLM(error=ApiError("down")),
    )
    with pytest.raises(AgentError, match="gc completed with errors: 5 of 5 agents failed"):
        collect_all_garbage(GcOptions(), p)
    assert len(out(p).stderr) == 5


def test_all_dry_run_trims_nobody() -> None:
    p = ports(agent("a", last_n=1), agent("b", last_n=1), files={"a": entries(3), "b": entries(3)})
    collect_all_garbage(GcOptions(dry_run=True), p)
    assert out(p).stdout.count("Dry run: no entries trimmed.") == 2
    assert store(p).trims == []


def test_all_applies_the_model_override_to_every_agent() -> None:
    p = ports(agent("a"), agent("b"), files={"a": entries(1), "b": entries(1)})
    collect_all_garbage(GcOptions(model_override="ollama/llama3"), p)
    assert [r.model.name for r in llm(p).requests] == ["llama3", "llama3"]


def test_all_skips_agent_files_that_do_not_load_with_a_warning() -> None:
    p = ports(agent("good"), files={"good": entries(1)}, broken={"bad": "cannot parse bad.toml"})
    collect_all_garbage(GcOptions(), p)
    assert out(p).stderr == ['Warning: skipping agent "bad": cannot parse bad.toml']
    assert "=== GC: good ===" in out(p).stdout
