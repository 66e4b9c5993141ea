"""The gc use case: analyse an agent's memory with one LLM call, print it, then trim.

Plain functions over the four ports, so any frontend (the click CLI, a scheduler, a web
hook) can run gc by passing its own adapters; nothing here knows about files, HTTP or the
terminal. The order of steps and every message follow gc-spec §3.3 and §3.5 exactly.
"""

from __future__ import annotations

from attrs import frozen

from axe.application.ports import AgentRepository, AnalysisRequest, LLMClient, MemoryStore, Output
from axe.domain.entries import count_entries, plan_trim
from axe.domain.errors import AgentError, AxeError, ConfigError
from axe.domain.model import AgentConfig, ModelRef, quoted
from axe.domain.policy import trim_target
from axe.domain.prompt import ANALYSIS_MAX_TOKENS, ANALYSIS_TEMPERATURE, PATTERN_DETECTION_PROMPT


@frozen(kw_only=True)
class GcOptions:
    """The choices a user makes per run (``--dry-run``, ``--model``, ``--archive``)."""

    dry_run: bool = False
    model_override: str | None = None
    archive: bool = False


@frozen(kw_only=True)
class GcPorts:
    """The outside world, as the use case sees it."""

    agents: AgentRepository
    memory: MemoryStore
    llm: LLMClient
    output: Output


def collect_garbage(name: str, options: GcOptions, ports: GcPorts) -> None:
    """Run gc on the agent called ``name`` (``axe gc <name>``).

    Raises:
        ConfigError: the agent or its memory path is invalid (exit 2).
        AgentError: bad model string, unknown provider, memory read or trim failure (exit 1).
        ApiError: the analysis failed; nothing was trimmed (exit 3).
    """
    agent = ports.agents.load(name)
    if not agent.memory.enabled:
        ports.output.warn(f"Warning: agent {quoted(name)} does not have memory enabled. Skipping.")
        return
    _collect(agent, options, ports)


def collect_all_garbage(options: GcOptions, ports: GcPorts) -> None:
    """Run gc on every agent with memory enabled, one after another (``axe gc --all``).

    A failing agent is reported on stderr and the rest still run. Agent files that do not
    load are skipped with a warning, as listing agents never fails on one bad file.

    Raises:
        ConfigError: the agents directory cannot be listed.
        AgentError: one or more agents failed; the message counts them.
    """
    enabled: list[AgentConfig] = []
    for name in ports.agents.list_names():
        try:
            agent = ports.agents.load(name)
        except ConfigError as error:
            ports.output.warn(f"Warning: skipping agent {quoted(name)}: {error}")
            continue
        if agent.memory.enabled:
            enabled.append(agent)
    if not enabled:
        ports.output.say("No agents with memory enabled.")
        return

    failed = 0
    for agent in enabled:
        ports.output.say(f"=== GC: {agent.name} ===")
        try:
            _collect(agent, options, ports)
        except AxeError as error:
            ports.output.warn(f"Error: gc failed for agent {quoted(agent.name)}: {error}")
            failed += 1
    if failed:
        raise AgentError(f"gc completed with errors: {failed} of {len(enabled)} agents failed")


def _collect(agent: AgentConfig, options: GcOptions, ports: GcPorts) -> None:
    """The single-agent flow after the agent is known to have memory enabled."""
    out = ports.output
    snapshot = ports.memory.read(agent)
    if not snapshot.content:
        out.say(f"No memory entries for agent {quoted(agent.name)}. Nothing to do.")
        return

    count = count_entries(snapshot.content)
    out.say(f"Agent: {agent.name}")
    out.say(f"Entries: {count}")

    model = ModelRef.parse(options.model_override or agent.model)
    request = AnalysisRequest(
        model=model,
        system_prompt=PATTERN_DETECTION_PROMPT,
        memory=snapshot.content,
        temperature=ANALYSIS_TEMPERATURE,
        max_tokens=ANALYSIS_MAX_TOKENS,
        memory_config=agent.memory,
    )
    with out.waiting(f"Analysing {agent.name}: {count} entries with {model}"):
        analysis = ports.llm.complete(request)
    out.say("--- Analysis ---")
    out.say(analysis)

    if options.dry_run:
        out.say("Dry run: no entries trimmed.")
        return

    target = trim_target(agent.memory)
    if target is None:
        out.say("No trim target configured (last_n and max_entries are both 0). Skipping trim.")
        return

    plan = plan_trim(snapshot.content, target, total=count)
    if not plan.changes_file:
        out.say(f"No trimming needed: {count} entries within limit ({target}).")
        return
    ports.memory.trim(agent, snapshot, plan, archive=options.archive)
    out.say(f"Trimmed: {plan.removed} entries removed, {target} entries kept.")
