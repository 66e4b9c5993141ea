"""The installed ``axe`` script as a real process, against a loopback provider."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

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


def test_a_refusal_keeps_every_entry(home: AxeHome, server: LoopbackLLM) -> None:
    """A model that refuses to write the report (Anthropic's stop_reason refusal) ends in
    exit 3 and one line; the entries it did not analyse are all still there."""
    server.raw_reply = b'{"content": [], "stop_reason": "refusal"}'
    home.add_agent("helper", last_n=1)
    home.write_memory("helper", entries(3))
    done = axe(home, "gc", "helper", ANTHROPIC_API_KEY=KEY, AXE_ANTHROPIC_BASE_URL=server.url)
    assert (done.returncode, done.stdout) == (3, "Agent: helper\nEntries: 3\n")
    assert done.stderr == (
        "anthropic declined to write the report (stop_reason refusal); nothing was trimmed\n"
    )
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


LOADS = """
import sys
from axe.cli import main
sys.argv = ["axe", *sys.argv[1:]]
try:
    main()
except SystemExit:
    print("httpx loaded:", "httpx" in sys.modules)
"""


@pytest.mark.parametrize(
    ("args", "loaded"),
    [
        (["gc", "missing"], False),
        (["gc", "helper", "--dry-run", "--model", "builtin/heuristic"], False),
        (["gc", "helper", "--dry-run"], True),  # a request to a closed port: it may send
    ],
    ids=["missing agent", "offline analyst", "a run that sends"],
)
def test_only_a_run_that_may_send_loads_httpx(home: AxeHome, args: list[str], loaded: bool) -> None:
    """httpx, the largest import, is loaded by a run that may send, never by one that
    cannot: a fleet of agents that fail early, or analysed offline, starts as fast."""
    home.add_agent("helper", model="ollama/llama3", last_n=1)
    home.write_memory("helper", entries(3))
    env = {**os.environ, **home.env, "AXE_OLLAMA_BASE_URL": "http://127.0.0.1:9"}
    done = subprocess.run(
        [sys.executable, "-c", LOADS, *args], env=env, capture_output=True, text=True, check=False
    )
    assert done.stdout.splitlines()[-1] == f"httpx loaded: {loaded}"


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


@pytest.mark.parametrize("mode", ["--dry-run", "--estimate"])
def test_a_reader_that_stops_early_ends_a_run_that_changes_nothing_quietly(
    home: AxeHome, mode: str
) -> None:
    """`axe gc a --dry-run | head -1` (or --estimate) whose reader is gone: the run changes
    nothing anyway, so gc ends quietly, exit 0, nothing on stderr, the file untouched."""
    home.add_agent("a", last_n=1, model="builtin/heuristic")
    home.write_memory("a", entries(3))
    read_end, write_end = os.pipe()
    os.close(read_end)
    with os.fdopen(write_end, "wb") as closed:
        done = subprocess.run(
            [str(INSTALLED_AXE), "gc", "a", mode],
            stdout=closed,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **home.env},
            check=False,
        )
    assert (done.returncode, done.stderr) == (0, "")
    assert home.memory_path("a").read_bytes() == entries(3)


def test_a_trim_settles_what_a_stopped_archiving_left(home: AxeHome) -> None:
    """Without ``--archive``, a trim settles a record a stopped archiving left (one not
    whole: the append never began), which it then removes."""
    home.add_agent("a", last_n=1, model="builtin/heuristic")
    home.write_memory("a", entries(3))
    record = intent_path(home.memory_path("a"))
    record.write_bytes(b"not a record")
    assert axe(home, "gc", "a").returncode == 0
    assert home.memory_path("a").read_bytes() == entry(2)
    assert not record.exists()
