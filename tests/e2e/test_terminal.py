"""The real ``axe`` on a real terminal (a pty): Ctrl-C while the status line shows leaves no
row behind, at 60 columns and at 40."""

from __future__ import annotations

import os
import select
import sys
from pathlib import Path

import pytest

from tests.e2e.loopback import LoopbackLLM
from tests.support import INSTALLED_AXE, AxeHome, entries

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs a pty")

AGENT = "pr-reviewer-with-long-name"


def read_until(fd: int, seen: bytearray, marker: bytes) -> None:
    """Read the terminal until ``marker`` appears or the program ends."""
    while marker not in seen:
        ready, _, _ = select.select([fd], [], [], 60)
        if not ready:
            pytest.fail(f"no {marker!r} in {bytes(seen)!r}")
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # the program ended
            return
        if not chunk:
            return
        seen += chunk


@pytest.mark.parametrize("columns", [60, 40])
def test_ctrl_c_over_the_status_line_leaves_no_row_behind(
    home: AxeHome, plain_llm: LoopbackLLM, columns: int, tmp_path: Path
) -> None:
    """The status row, the echoed ^C with it, is erased and `interrupted` takes its place;
    exit 130."""
    import fcntl
    import pty
    import struct
    import termios

    plain_llm.delay = 30.0
    home.add_agent(AGENT, model="ollama/llama3-some-really-long-model-name-here", last_n=2)
    home.write_memory(AGENT, entries(5))
    env = {
        "PATH": os.environ.get("PATH", ""),
        "TERM": "xterm",
        "AXE_OLLAMA_BASE_URL": plain_llm.url,
        **home.env,
    }
    pid, fd = pty.fork()
    if pid == 0:  # the child: become axe on the pty
        os.execve(str(INSTALLED_AXE), ["axe", "gc", AGENT, "--dry-run"], env)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 10, columns, 0, 0))
    seen = bytearray()
    try:
        read_until(fd, seen, b"s)")  # a status frame with its timer
        os.write(fd, b"\x03")
        read_until(fd, seen, b"interrupted\r\n")
    finally:
        _, status = os.waitpid(pid, 0)
        os.close(fd)
    assert os.waitstatus_to_exitcode(status) == 130, bytes(seen)
    assert bytes(seen).startswith(f"Agent: {AGENT}\r\nEntries: 5\r\n".encode())
    assert bytes(seen).endswith(b"\x1b[0m^C\r\x1b[2K\rinterrupted\r\n")
    frames = bytes(seen).split(b"\r\x1b[2K")[1:-1]
    last = frames[-1].decode().removeprefix("\x1b[2m").split("\x1b[0m")[0]
    assert AGENT in last
    assert len(last) <= columns - 3
