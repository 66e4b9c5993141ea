"""``axe gc --skip-unchanged`` end to end: CliRunner and the installed ``axe`` over real
files, against a loopback provider that counts every request."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from axe.cli.commands import cli
from tests.e2e.loopback import LoopbackLLM, loopback_llm
from tests.support import CANNED_ANALYSIS, AxeHome, entries, entry
from tests.support import run_installed as axe

FLEET = ("a", "b", "c")


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[LoopbackLLM]:
    with loopback_llm() as llm:
        monkeypatch.setenv("AXE_OLLAMA_BASE_URL", llm.url)
        yield llm


@pytest.fixture
def fleet(home: AxeHome) -> AxeHome:
    for name in FLEET:
        home.add_agent(name, model="ollama/m", last_n=3)
        home.write_memory(name, entries(5))
    return home


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, ["gc", *args], catch_exceptions=False)


def record_of(home: AxeHome, name: str) -> Path:
    return home.memory_path(name).with_name(f".{name}.md.axe-gc.analysed")


def when(home: AxeHome, name: str) -> str:
    """The time the record of ``name`` says gc analysed it, as gc prints it."""
    at = json.loads(record_of(home, name).read_bytes())["at"]
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))


def sent_by(server: LoopbackLLM, *args: str) -> int:
    """How many requests one run of ``axe gc *args`` sent (it must succeed)."""
    before = len(server.requests)
    result = run(*args)
    assert (result.exit_code, result.stderr) == (0, ""), result.output
    return len(server.requests) - before


def unchanged_lines(home: AxeHome, name: str) -> str:
    return (
        f"=== GC: {name} ===\nAgent: {name}\nEntries: 3\n"
        f"Unchanged since gc analysed it at {when(home, name)}. Skipping analysis and trim.\n"
    )


def test_an_unchanged_fleet_sends_nothing(fleet: AxeHome, server: LoopbackLLM) -> None:
    """The second nightly run over a fleet nothing touched sends no request, trims
    nothing, exits 0, and says so for each agent in the spec's lines plus one."""
    assert sent_by(server, "--all", "--skip-unchanged") == 3
    kept = {name: fleet.memory_path(name).read_bytes() for name in FLEET}
    result = run("--all", "--skip-unchanged")
    assert (result.exit_code, result.stderr, len(server.requests)) == (0, "", 3)
    assert result.stdout == "".join(unchanged_lines(fleet, name) for name in FLEET)
    assert {name: fleet.memory_path(name).read_bytes() for name in FLEET} == kept


def test_each_kind_of_change_is_analysed_again(fleet: AxeHome, server: LoopbackLLM) -> None:
    """One appended entry, an edit in the middle of the same size, a corrupted record and
    a deleted one: each such agent is analysed again, the others are skipped."""
    assert sent_by(server, "--all", "--skip-unchanged") == 3
    with fleet.memory_path("a").open("ab") as log:  # as `axe run` appends
        log.write(entry(99))
    assert sent_by(server, "--all", "--skip-unchanged") == 1
    b = fleet.memory_path("b")
    b.write_bytes(b.read_bytes().replace(b"number 3", b"NUMBER 3"))  # same size
    record_of(fleet, "c").write_text('{"size": ')
    assert sent_by(server, "--all", "--skip-unchanged") == 2
    record_of(fleet, "a").unlink()
    assert sent_by(server, "--all", "--skip-unchanged") == 1
    assert sent_by(server, "--all", "--skip-unchanged") == 0


def test_another_model_is_analysed_again(fleet: AxeHome, server: LoopbackLLM) -> None:
    """What one model analysed, another has not: --model names the model compared."""
    assert sent_by(server, "a", "--skip-unchanged") == 1
    assert sent_by(server, "a", "--skip-unchanged", "--model", "ollama/other") == 1
    assert sent_by(server, "a", "--skip-unchanged") == 1
    assert sent_by(server, "a", "--skip-unchanged") == 0


def test_json_says_unchanged(fleet: AxeHome, server: LoopbackLLM) -> None:
    """--json: one object with "status": "unchanged" and no request, exit 0."""
    run("a", "--skip-unchanged")
    result = run("a", "--skip-unchanged", "--json")
    assert (result.exit_code, result.stderr) == (0, "")
    assert json.loads(result.stdout) == {
        "agent": "a",
        "status": "unchanged",
        "entries": 3,
        "removed": 0,
        "kept": 3,
        "limit": 3,
        "model": "ollama/m",
        "analysis": None,
        "usage": None,
        "parts": None,
        "requests": None,
        "error": None,
        "exit_code": 0,
        "budget_max_tokens": None,
        "budget_used_tokens": None,
        "analysed_entries": None,
    }


def test_a_run_without_the_flag_records_and_a_dry_run_does_not(
    fleet: AxeHome, server: LoopbackLLM
) -> None:
    """A gc without --skip-unchanged prints exactly what it always did and records what it
    left beside the memory file; a dry run changes nothing and records nothing."""
    result = run("a")
    assert result.stdout == (
        "Agent: a\nEntries: 5\n--- Analysis ---\n"
        f"{CANNED_ANALYSIS}\nTrimmed: 2 entries removed, 3 entries kept.\n"
    )
    run("b", "--dry-run", "--skip-unchanged")
    assert sorted(os.listdir(fleet.data / "memory")) == [
        ".a.md.axe-gc.analysed",
        "a.md",
        "b.md",
        "c.md",
    ]


def test_no_record_through_a_symlink(home: AxeHome, server: LoopbackLLM, tmp_path: Path) -> None:
    """A memory.path that is a symlink gets its record beside the real file, none beside
    the link, and is skipped through either name."""
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    (real / "log.md").write_bytes(entries(2))
    links = tmp_path / "links"
    links.mkdir(mode=0o700)
    (links / "log.md").symlink_to(real / "log.md")
    home.add_agent("linked", model="ollama/m", last_n=3, path=str(links / "log.md"))
    home.add_agent("direct", model="ollama/m", last_n=3, path=str(real / "log.md"))
    assert sent_by(server, "linked", "--skip-unchanged") == 1
    assert sorted(os.listdir(links)) == ["log.md"]
    assert sorted(os.listdir(real)) == [".log.md.axe-gc.analysed", "log.md"]
    assert sent_by(server, "direct", "--skip-unchanged") == 0


def test_no_record_in_a_directory_others_can_write(
    home: AxeHome, server: LoopbackLLM, tmp_path: Path
) -> None:
    """In a memory directory others may write to, nothing is recorded and nothing skipped,
    and each run under --skip-unchanged says so in one warning (a run without it, none)."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    (shared / "log.md").write_bytes(entries(2))
    home.add_agent("open", model="ollama/m", last_n=3, path=str(shared / "log.md"))
    warning = (
        'Warning: --skip-unchanged cannot record the analysis of agent "open" '
        f"({shared} is writable by others, who could forge a record there), so it will be "
        "analysed on every run\n"
    )
    for _ in range(2):
        result = run("open", "--skip-unchanged")
        assert (result.exit_code, result.stderr) == (0, warning)
    assert (run("open").stderr, len(server.requests)) == ("", 3)
    assert sorted(os.listdir(shared)) == ["log.md"]


def test_the_installed_axe_skips_an_unchanged_fleet(fleet: AxeHome, server: LoopbackLLM) -> None:
    """The real program, twice, as cron runs it: the second run sends nothing."""
    first = axe(fleet, "gc", "--all", "--skip-unchanged", AXE_OLLAMA_BASE_URL=server.url)
    assert (first.returncode, first.stderr, len(server.requests)) == (0, "", 3)
    second = axe(fleet, "gc", "--all", "--skip-unchanged", AXE_OLLAMA_BASE_URL=server.url)
    assert (second.returncode, second.stderr, len(server.requests)) == (0, "", 3)
    assert second.stdout == "".join(unchanged_lines(fleet, name) for name in FLEET)


def test_an_agent_with_no_memory_file_yet_has_nothing_to_do(
    home: AxeHome, server: LoopbackLLM
) -> None:
    """--skip-unchanged for an agent that has never run (no memory file, no record): the
    spec's "No memory entries" line and exit 0, no request, no record written."""
    home.add_agent("new", model="ollama/m", last_n=3)
    result = run("new", "--skip-unchanged")
    assert (result.exit_code, result.stdout, result.stderr) == (
        0,
        'No memory entries for agent "new". Nothing to do.\n',
        "",
    )
    assert server.requests == []
    assert not record_of(home, "new").exists()
