"""The installed ``axe`` script as a real process, against a loopback provider."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from axe.adapters.memory.paths import intent_path
from tests.e2e.loopback import LoopbackLLM, loopback_llm
from tests.support import CANNED_ANALYSIS, INSTALLED_AXE, AxeHome, entries, entry
from tests.support import run_installed as axe

KEY = "sk-ant-subprocess-0123456789"


@pytest.fixture
def server() -> Iterator[LoopbackLLM]:
    with loopback_llm() as llm:
        yield llm


def test_the_script_is_installed() -> None:
    """Installing the package puts an `axe` command beside its Python."""
    assert INSTALLED_AXE.exists(), "run `make test`, which installs the package into .venv"


def test_full_gc_against_a_loopback_anthropic(home: AxeHome, server: LoopbackLLM) -> None:
    """The installed axe does a full gc over real HTTP: the spec's stdout, the key sent, a trim."""
    home.add_agent("helper", last_n=3)
    home.write_memory("helper", entries(10))
    done = axe(home, "gc", "helper", ANTHROPIC_API_KEY=KEY, AXE_ANTHROPIC_BASE_URL=server.url)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == (
        "Agent: helper\nEntries: 10\n--- Analysis ---\n"
        f"{CANNED_ANALYSIS}\nTrimmed: 7 entries removed, 3 entries kept.\n"
    )
    assert home.memory_path("helper").read_bytes() == entries(3, start=7)
    path, headers, _ = server.requests[0]
    assert path == "/v1/messages"
    assert headers["x-api-key"] == KEY


def test_all_reuses_one_connection_across_agents(home: AxeHome, server: LoopbackLLM) -> None:
    """--all sends every agent's request over one keep-alive connection."""
    for name in ("a", "b", "c"):
        home.add_agent(name, model="openai/gpt-4o", last_n=1)
        home.write_memory(name, entries(3))
    done = axe(home, "gc", "--all", OPENAI_API_KEY="sk-o", AXE_OPENAI_BASE_URL=server.url)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("Trimmed: 2 entries removed, 1 entries kept.") == 3
    assert len(server.requests) == 3
    assert len(set(server.client_ports)) == 1  # one keep-alive connection for all three


def test_all_sends_no_agent_a_cookie_the_provider_set_for_another(
    home: AxeHome, server: LoopbackLLM
) -> None:
    """A cookie in a reply (Cloudflare's ``__cf_bm`` before a provider's API) goes back with no
    later request: gc keeps no cookie jar, as the Go axe's HTTP client keeps none. The other
    headers httpx's client added are still sent."""
    server.reply_headers = {"set-cookie": "__cf_bm=agent-a-session; path=/; HttpOnly"}
    for name in ("a", "b"):
        home.add_agent(name, model="openai/gpt-4o", last_n=1)
        home.write_memory(name, entries(3))
    done = axe(home, "gc", "--all", OPENAI_API_KEY="sk-o", AXE_OPENAI_BASE_URL=server.url)
    assert done.returncode == 0, done.stderr
    sent = [
        {name.lower(): value for name, value in headers.items()}
        for _, headers, _ in server.requests
    ]
    assert [headers.get("cookie") for headers in sent] == [None, None]
    assert len(set(server.client_ports)) == 1  # still one keep-alive connection
    # the rest as httpx's client sent it
    shown = {name: sent[1].get(name) for name in ("accept", "accept-encoding", "connection")}
    assert shown == {
        "accept": "*/*",
        "accept-encoding": "gzip, deflate",
        "connection": "keep-alive",
    }


def test_http_error_is_exit_3_and_the_key_is_never_printed(
    home: AxeHome, server: LoopbackLLM
) -> None:
    """A provider's 401 is exit 3 with one line, the echoed key redacted, and no trim."""
    server.status = 401
    server.raw_reply = (
        f'{{"error": {{"type": "authentication_error", "message": "bad key {KEY}"}}}}'.encode()
    )
    home.add_agent("helper", last_n=1)
    home.write_memory("helper", entries(3))
    done = axe(home, "gc", "helper", ANTHROPIC_API_KEY=KEY, AXE_ANTHROPIC_BASE_URL=server.url)
    assert done.returncode == 3
    assert done.stderr == (
        "anthropic API error (HTTP 401 authentication_error): bad key [redacted] "
        "(key from ANTHROPIC_API_KEY)\n"
    )
    assert KEY not in done.stdout + done.stderr
    assert home.memory_path("helper").read_bytes() == entries(3)


def test_server_that_never_answers_times_out_with_exit_3(
    home: AxeHome, server: LoopbackLLM
) -> None:
    """A provider that never answers times out after AXE_HTTP_TIMEOUT: exit 3, no trim."""
    server.hang.set()
    home.add_agent("helper", model="ollama/llama3", last_n=1)
    home.write_memory("helper", entries(3))
    done = axe(home, "gc", "helper", AXE_OLLAMA_BASE_URL=server.url, AXE_HTTP_TIMEOUT="1")
    assert done.returncode == 3
    assert done.stderr == f"request to ollama at {server.url}/api/chat timed out after 1s\n"
    assert home.memory_path("helper").read_bytes() == entries(3)


def test_refused_connection_is_exit_3(home: AxeHome) -> None:
    """Nothing listening at the provider's address is exit 3, one line naming the URL."""
    home.add_agent("helper", model="ollama/llama3", last_n=1)
    home.write_memory("helper", entries(3))
    done = axe(home, "gc", "helper", AXE_OLLAMA_BASE_URL="http://127.0.0.1:9")
    assert done.returncode == 3
    assert done.stderr == (
        "cannot reach ollama at http://127.0.0.1:9/api/chat: connection refused (after 2 retries)\n"
    )


def test_garbage_reply_is_exit_3(home: AxeHome, server: LoopbackLLM) -> None:
    """An HTML error page instead of JSON is exit 3 with one line saying so."""
    server.raw_reply = b"<html>502 Bad Gateway</html>"
    home.add_agent("helper", model="ollama/llama3", last_n=1)
    home.write_memory("helper", entries(3))
    done = axe(home, "gc", "helper", AXE_OLLAMA_BASE_URL=server.url)
    assert done.returncode == 3
    assert done.stderr == "ollama returned a reply that is not JSON: an HTML page\n"


def test_errors_are_one_line_without_traceback(home: AxeHome) -> None:
    """A binary agent file is exit 2 with one stderr line and no traceback."""
    (home.config / "agents" / "bad.toml").write_bytes(b"\xff\xfe\x00binary")
    done = axe(home, "gc", "bad")
    assert done.returncode == 2
    assert len(done.stderr.splitlines()) == 1
    assert "Traceback" not in done.stderr


def test_a_closed_stdout_is_said_on_stderr_and_nothing_is_trimmed(home: AxeHome) -> None:
    """`axe gc a | head -1` whose reader is gone: one stderr line, exit 1, and the trim
    that would have followed the unwritten report is not made."""
    home.add_agent("a", last_n=1, model="builtin/heuristic")
    home.write_memory("a", entries(3))
    read_end, write_end = os.pipe()
    os.close(read_end)
    with os.fdopen(write_end, "wb") as closed:
        done = subprocess.run(
            [str(INSTALLED_AXE), "gc", "a"],
            stdout=closed,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **home.env},
            check=False,
        )
    assert (done.returncode, done.stderr) == (
        1,
        "stdout was closed by its reader; gc stopped at the first line it could not write\n",
    )
    assert home.memory_path("a").read_bytes() == entries(3)


def imported_by(home: AxeHome, *args: str, **env: str) -> set[str]:
    """The modules ``axe *args`` imports, as ``python -X importtime`` lists them."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "axe", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **home.env, **env},
        check=False,
    )
    return {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if "|" in line}


def test_paths_that_need_no_config_never_import_cattrs(home: AxeHome) -> None:
    """A missing agent, disabled memory and --help never load cattrs (agent files are read
    without it) or a TOML parser they do not need, so cron runs start fast."""
    home.add_agent("quiet", enabled=False)
    for args in (["gc", "missing"], ["gc", "quiet"], ["gc", "--help"]):
        imported = imported_by(home, *args)
        assert "cattrs" not in imported, args
        assert ("tomllib" in imported) == (args[1] == "quiet"), args
        assert "click" in imported


def test_a_trim_loads_the_archive_machinery_only_to_settle_a_stopped_archiving(
    home: AxeHome,
) -> None:
    """Without ``--archive``, a trim loads the archive's module (and hashlib's digests) only
    when a stopped archiving left its record to settle, which it then removes."""
    home.add_agent("a", last_n=1, model="builtin/heuristic")
    home.write_memory("a", entries(3))
    assert "axe.adapters.memory.archive" not in imported_by(home, "gc", "a")
    assert home.memory_path("a").read_bytes() == entry(2)
    home.write_memory("a", entries(3))
    record = intent_path(home.memory_path("a"))
    record.write_bytes(b"not a record")
    assert "axe.adapters.memory.archive" in imported_by(home, "gc", "a")
    assert not record.exists()


COLLECTIONS = """
import gc, os, sys
def collected(phase, info):
    if phase == "start":
        with open(os.environ["SEEN"], "a") as seen:
            print(*sorted({"click", "axe.composition"} & set(sys.modules)), file=seen)
gc.callbacks.append(collected)
import axe.cli
getattr(axe.cli, sys.argv.pop(1))()  # a console script: main or gc_main
"""


@pytest.mark.parametrize(
    "script", [["main", "gc", "helper"], ["gc_main", "helper"]], ids=["axe", "axe-gc"]
)
def test_the_collector_waits_for_the_run_and_then_collects(
    home: AxeHome, tmp_path: Path, script: list[str]
) -> None:
    """In both console scripts, CPython's cycle collector does not run while the process
    starts (nothing it would find: docs/benchmarks.md), and runs as always once gc
    begins: none comes between click's import and the command's, and some come after."""
    home.add_agent("helper", model="builtin/heuristic", last_n=1)
    home.write_memory("helper", entries(3))
    seen = tmp_path / "collections"
    done = subprocess.run(
        [sys.executable, "-c", COLLECTIONS, *script],
        capture_output=True,
        text=True,
        env={**os.environ, **home.env, "SEEN": str(seen)},
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, "")
    # a line per collection: the modules of the two that were loaded when it began
    assert set(seen.read_text().splitlines()) - {""} == {"axe.composition click"}
    assert home.memory_path("helper").read_bytes() == entries(1, start=2)


def test_importing_the_command_line_loads_nothing_and_leaves_the_collector_on() -> None:
    """A program that imports ``axe.cli`` keeps its collector as it was; click and the
    commands load when first used (the console scripts pause the collector first)."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import gc, sys, axe.cli; print(gc.isenabled(), 'click' in sys.modules); "
            "axe.cli.cli; print('click' in sys.modules, axe.cli.gc.name)",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout == "True False\nTrue gc\n"


def test_a_profiled_run_still_ends_through_the_interpreter(home: AxeHome) -> None:
    """A run under ``python -m cProfile`` (or a tracer such as coverage) still gets its
    report: axe leaves the process early only when nothing waits for the interpreter's
    own ending (the profiler prints, then exits 0, as it always did)."""
    done = subprocess.run(
        [sys.executable, "-m", "cProfile", "-m", "axe", "gc", "missing"],
        capture_output=True,
        text=True,
        env={**os.environ, **home.env},
        check=False,
    )
    assert "function calls" in done.stdout
    assert done.stderr.startswith('agent "missing" not found')


def test_the_budget_is_loaded_only_by_runs_that_have_one(
    home: AxeHome, server: LoopbackLLM
) -> None:
    """A gc with no budget loads none of the budget's code, so the budget costs nightly runs
    that do not use it no start-up time; a budget loads it (and the run still sends)."""
    home.add_agent("helper", last_n=1)
    home.write_memory("helper", entries(3))
    env = {"ANTHROPIC_API_KEY": KEY, "AXE_ANTHROPIC_BASE_URL": server.url}
    budget = {"axe.domain.budget", "axe.domain.spending"}
    assert budget & imported_by(home, "gc", "helper", "--dry-run", **env) == set()
    assert budget <= imported_by(home, "gc", "helper", "--dry-run", "--max-tokens", "9999", **env)
    assert len(server.requests) == 2


def test_a_run_that_sends_never_imports_cattrs(home: AxeHome, server: LoopbackLLM) -> None:
    """A gc that reads its agent file and config.toml, sends and trims loads no structuring
    library: TOML values are built from their attrs fields, so a small gc starts fast."""
    home.add_agent("helper", model="openai/gpt-4o", last_n=1)
    home.write_memory("helper", entries(3))
    home.write_global_config('[providers.openai]\napi_key = "sk-o"\n')
    imported = imported_by(home, "gc", "helper", AXE_OPENAI_BASE_URL=server.url)
    assert {"httpx", "axe.adapters.llm.config"} <= imported  # it did send, with the file read
    assert "cattrs" not in imported
    assert home.memory_path("helper").read_bytes() == entries(1, start=2)


def test_a_100_mb_line_without_a_newline(home: AxeHome, server: LoopbackLLM) -> None:
    """A huge last entry with no newline is sent whole (the server reports no window) and
    kept byte for byte."""
    huge = b"## 2026-02-27T03:15:00Z " + b"x" * (100 * 1024 * 1024)
    home.add_agent("helper", model="ollama/llama3", last_n=1)
    path = home.write_memory("helper", entries(3) + huge)
    done = axe(home, "gc", "helper", AXE_OLLAMA_BASE_URL=server.url, timeout=120)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines()[-1] == "Trimmed: 3 entries removed, 1 entries kept."
    assert path.read_bytes() == huge
    (body,) = [body for path, _, body in server.requests if path == "/api/chat"]
    assert len(body) > len(huge)
