"""The ``Output`` port on a process's stdout and stderr: the spec's lines (or, with
``--json``, one JSON object per agent) on stdout, warnings and errors on stderr in both
modes, and a status line only where a person watches stderr."""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Callable
from typing import BinaryIO

from axe.adapters.console.json_lines import result_line
from axe.adapters.console.lines import Line, Stream, TextLines
from axe.adapters.console.status import StatusLine
from axe.adapters.shared.clock import SystemClock
from axe.application.ports import Clock
from axe.domain import events
from axe.domain.model import ModelRef
from axe.domain.results import AgentResult, AgentStatus
from axe.domain.safe_text import escaped_line, terminal_safe


def _reported(event: events.Event) -> AgentResult | None:
    """The result ``--json`` prints an object for: every agent gc ran, and every agent file
    ``--all`` could not load, so a monitor reading only stdout sees it too."""
    if isinstance(event, events.AgentFinished):
        return event.result
    if isinstance(event, events.AgentSkipped):
        return AgentResult(agent=event.agent, status=AgentStatus.FAILED, error=event.error)
    return None


def short_model(model: ModelRef) -> str:
    """The model's name without its provider and a date it ends in
    (``anthropic/claude-sonnet-4-20250514``: ``claude-sonnet-4``), for a narrow status line."""
    name = model.name.rsplit("/", 1)[-1]
    return re.sub(r"[-@]\d{8}$|-\d{4}-\d{2}-\d{2}$", "", name) or model.name


class ConsoleOutput:
    """Renders events as text (or JSON lines) on two binary streams."""

    def __init__(
        self,
        stdout: BinaryIO,
        stderr: BinaryIO,
        *,
        json_lines: bool = False,
        interactive: bool = False,
        color: bool = False,
        clock: Clock | None = None,
        refresh_seconds: float = 0.1,
        columns: Callable[[], int] | None = None,
    ) -> None:
        self._streams = {Stream.OUT: stdout, Stream.ERR: stderr}
        self._json = json_lines
        self._text = TextLines()
        self._lock = threading.Lock()
        self._model: ModelRef | None = None  # of the analysis under way, for the status
        self._sweeping = False  # --jobs: the status line follows the sweep, not one agent
        self._status = (
            StatusLine(
                stderr,
                self._lock,
                color=color,
                clock=clock or SystemClock(),
                refresh_seconds=refresh_seconds,
                columns=columns,
            )
            if interactive
            else None
        )

    def emit(self, event: events.Event) -> None:
        lines = self._lines(event)
        with self._lock:
            if self._status is not None:
                self._follow(self._status, event)
            for line in lines:
                self._write(line)

    def close(self) -> None:
        """Erase the status line however the run ends, so the shell prompt does not land
        beside a stale spinner; the lock is only tried briefly, as an interrupt may have
        struck while this thread held it. A terminal that hung up takes nothing to erase."""
        if self._status is None or not self._lock.acquire(timeout=0.5):
            return
        try:
            with contextlib.suppress(OSError):
                self._status.hide()
        finally:
            self._lock.release()

    def _lines(self, event: events.Event) -> list[Line]:
        lines = self._text.render(event)
        if not self._json:
            return lines
        lines = [line for line in lines if line.stream is Stream.ERR]
        result = _reported(event)
        if result is not None:
            lines.append(Line(Stream.OUT, result_line(result)))
        return lines

    def _follow(self, status: StatusLine, event: events.Event) -> None:
        """Start, change or stop the status line as the run moves on."""
        match event:
            case events.SweepProgress(done=done, total=total, running=running):
                self._sweeping = True
                status.update(
                    f"gc --all: {done}/{total} agents done; at work: {', '.join(running)}"
                )
            case events.SweepFinished():
                self._sweeping = False
                status.hide()
            case _ if not self._sweeping:  # under --jobs, agents' events are replays
                self._follow_analysis(status, event)

    def _follow_analysis(self, status: StatusLine, event: events.Event) -> None:
        match event:
            case events.WaitingForLock(agent=agent, holder=holder):
                by = f" (pid {holder})" if holder else ""
                status.show(f"{agent}: waiting for another gc{by} to finish with its memory", agent)
            case events.MemoryRead():
                status.hide()
            case events.AnalysisStarted(agent=agent, model=model, entries=entries):
                self._model = model
                short = short_model(model)
                status.show(
                    f"Analysing {agent}: {entries} entries with {model}",
                    agent,
                    shorter=(f"Analysing {agent} with {short}", f"{agent}: {short}"),
                )
            case events.AnalysisNarrowed(agent=agent, analysed=analysed):
                status.update(f"Analysing {agent}: the newest {analysed} entries", agent)
            case events.AnalysisSplit(agent=agent, parts=parts):  # the plan's count: it may change
                status.update(f"Analysing {agent}: about {parts} parts with {self._model}", agent)
            case events.PartAnalysed(agent=agent, done=done, parts=parts):
                status.update(
                    f"Analysing {agent}: part {done} of about {parts} done with {self._model}",
                    agent,
                )
            case events.MergeStarted(agent=agent, reports=reports):
                status.update(f"Merging {agent}'s {reports} part reports with {self._model}", agent)
            case events.AnalysisReady() | events.AgentFinished():
                status.hide()

    def _write(self, line: Line) -> None:
        if self._status is not None:
            self._status.erase()
        stream = self._streams[line.stream]
        safe = escaped_line if line.stream is Stream.ERR else terminal_safe
        text = line.text if self._json and line.stream is Stream.OUT else safe(line.text)
        stream.write((text + "\n").encode("utf-8", "backslashreplace"))
        stream.flush()
