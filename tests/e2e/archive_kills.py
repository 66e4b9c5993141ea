"""Stopping a real ``axe gc --archive`` at chosen points of its append, for the archive's
durability tests and ``make stress``."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from axe.adapters.memory.paths import archive_path, intent_path


def size_of(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return -1


def kill_at_archive_size(
    command: list[str], env: dict[str, str], archive: Path, size: int, delay: float = 0.0
) -> None:
    """Start ``command``; SIGKILL it ``delay`` seconds after ``archive`` holds ``size``
    bytes (0: as soon as it exists), or once it has ended."""
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    while process.poll() is None and size_of(archive) < size:
        pass
    if delay:
        time.sleep(delay)
    process.kill()
    process.wait()


def stop_when(process: subprocess.Popen[str], ready: Callable[[], bool]) -> bool:
    """SIGSTOP ``process`` as soon as ``ready()``; True if it was stopped while still ready
    (so whatever ``ready`` saw is under way), False if it ended or moved on first."""
    while process.poll() is None:
        if ready():
            process.send_signal(signal.SIGSTOP)
            if ready():
                return True
            process.send_signal(signal.SIGCONT)
            return False
    return False


KILL_POINTS = (
    "before the record",
    "after the record, before the append",
    "during the append",
    "after the append, before the rename",
    "after the rename, before the record was removed",
    "after the record was removed",
)


def kill_point(memory: Path, original: bytes, removed: int, archived_before: int) -> str:
    """Where a killed ``gc --archive`` stopped, read from what it left on disk."""
    recorded = intent_path(memory).exists()
    if memory.read_bytes() != original:
        return KILL_POINTS[4] if recorded else KILL_POINTS[5]
    if not recorded:
        return KILL_POINTS[0]
    appended = max(size_of(archive_path(memory)), 0) - archived_before
    if appended <= 0:
        return KILL_POINTS[1]
    return KILL_POINTS[2] if appended < removed else KILL_POINTS[3]


def temp_files(directory: Path) -> list[str]:
    return [name for name in os.listdir(directory) if name.endswith(".tmp")]
