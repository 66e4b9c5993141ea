"""The README's embedding examples run as printed."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.support import AxeHome, entries

README = Path(__file__).resolve().parents[2] / "README.md"


def embedding_examples() -> list[str]:
    section = README.read_text().split("## Embedding", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.DOTALL)
    assert len(blocks) == 2, "the Embedding section has a frontend and its test"
    return blocks


def run(code: str, namespace: dict[str, Any]) -> None:
    exec(compile(code, str(README), "exec"), namespace)


def test_the_embedding_frontend_runs_on_the_real_adapters(
    home: AxeHome, capsys: pytest.CaptureFixture[str]
) -> None:
    """The README's frontend example works as printed against a real agent and log."""
    home.add_agent("pr-reviewer", last_n=2)
    home.write_memory("pr-reviewer", entries(5))
    frontend, _ = embedding_examples()
    run(frontend, {"__name__": "readme"})
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == "['pr-reviewer: 5 entries', 'asking builtin/heuristic'] dry_run 0"
    assert printed[1] == "## Patterns Found"
    assert home.memory_path("pr-reviewer").read_bytes() == entries(5)


def test_the_embedding_test_example_passes_on_the_testing_kit(
    home: AxeHome, capsys: pytest.CaptureFixture[str]
) -> None:
    """The README's test of that frontend passes when run on axe.testing's fakes."""
    home.add_agent("pr-reviewer", last_n=2)
    frontend, test = embedding_examples()
    namespace: dict[str, Any] = {"__name__": "readme"}
    run(frontend, namespace)
    capsys.readouterr()
    run(test, namespace)
    namespace["test_the_page_shows_the_entry_count_then_the_model"]()


def test_the_offline_sample_in_the_readme_is_what_axe_prints(home: AxeHome) -> None:
    """The README shows the built-in analyst's report as it really looks: the demo's log,
    analysed now, prints exactly the sample's lines."""
    import sys

    from click.testing import CliRunner

    from axe.cli import cli

    sys.path.insert(0, str(README.parent / "scripts"))
    import demo

    (home.config / "agents" / f"{demo.AGENT}.toml").write_text(demo.AGENT_TOML)
    home.write_memory(demo.AGENT, demo.sample_log())
    section = README.read_text().split("`make demo`'s, verbatim", 1)[1]
    sample = re.search(r"```\n(.*?)```", section, re.DOTALL)
    assert sample, "the README shows the offline sample"
    command, _, printed = sample.group(1).partition("\n")
    assert command == f"$ axe gc {demo.AGENT} --model builtin/heuristic"
    result = CliRunner().invoke(cli, command.split()[2:], catch_exceptions=False)
    assert result.stdout == printed
