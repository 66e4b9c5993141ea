"""The README's embedding example runs as printed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support import AxeHome, entries

README = Path(__file__).resolve().parents[2] / "README.md"


def embedding_example() -> str:
    section = README.read_text().split("## Embedding", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match, "the Embedding section has a python example"
    return match.group(1)


def test_embedding_example_runs(home: AxeHome, capsys: pytest.CaptureFixture[str]) -> None:
    home.add_agent("pr-reviewer", last_n=2)
    home.write_memory("pr-reviewer", entries(5))
    exec(compile(embedding_example(), str(README), "exec"), {"__name__": "readme"})
    printed = capsys.readouterr().out.splitlines()
    assert printed[:2] == ["Agent: pr-reviewer", "Entries: 5"]
    assert "## Patterns Found" in printed
    assert printed[-1] == "Dry run: no entries trimmed."
    assert home.memory_path("pr-reviewer").read_bytes() == entries(5)
