"""Processes that stress a memory file the way real users do, for the durability tests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

APPENDER = """
import os, sys, time
path, stop = sys.argv[1], sys.argv[2]
count = 0
while not os.path.exists(stop):
    entry = f"## 2026-03-01T00:00:00Z appended-{count}\\n**Task:** racing\\n\\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.write(fd, entry.encode())
    os.close(fd)
    count += 1
print(count)
"""


def appender_command(path: Path, stop: Path) -> list[str]:
    """Appends like the Go ``axe run``: open(O_APPEND), one write, close; no lock."""
    return [sys.executable, "-c", APPENDER, str(path), str(stop)]


def appended_numbers(data: bytes) -> list[int]:
    marker = b"appended-"
    numbers = []
    at = data.find(marker)
    while at != -1:
        end = data.index(b"\n", at)
        numbers.append(int(data[at + len(marker) : end]))
        at = data.find(marker, end)
    return numbers


def environment(extra: dict[str, str]) -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", ""), **extra}


def kill_after(command: list[str], env: dict[str, str], delay: float) -> None:
    """Start ``command``, SIGKILL it after ``delay`` seconds (or once it has ended)."""
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    time.sleep(delay)
    process.send_signal(signal.SIGKILL)
    process.wait()
