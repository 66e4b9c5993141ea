"""Recorded events replayed through the real console, for asserting exact lines in tests."""

from __future__ import annotations

import io
from collections.abc import Iterable

from axe.adapters.console import ConsoleOutput
from axe.domain.events import Event


def rendered(events: Iterable[Event], *, json_lines: bool = False) -> tuple[list[str], list[str]]:
    """The stdout and stderr lines the console prints for ``events``."""
    stdout, stderr = io.BytesIO(), io.BytesIO()
    console = ConsoleOutput(stdout, stderr, json_lines=json_lines)
    for event in events:
        console.emit(event)
    return stdout.getvalue().decode().splitlines(), stderr.getvalue().decode().splitlines()
