"""Memory logs as files: ``<data dir>/memory/<name>.md`` or the agent's ``memory.path``; and
the record ``--skip-unchanged`` reads, one line of JSON in ``.<name>.axe-gc.analysed`` beside
the resolved file. A record is only ever a reason to skip, so any doubt reads as none: one in a
shared directory (anyone there could forge it), not whole, not trusted (:mod:`.side_files`), or
beside an archive left to settle. It is renamed over the old one under the lock, not flushed:
a skip also needs the file's digest to match, so a record lost only costs an analysis.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from pathlib import Path

from axe.adapters.memory import durable
from axe.adapters.memory.file import MemoryFile
from axe.adapters.memory.lock import DEFAULT_LOCK_TIMEOUT, MemoryFileLocks
from axe.adapters.memory.paths import (
    LONGEST_MEMORY_NAME,
    OWN_NAMES_LONGER_BY,
    expand_path,
    intent_path,
    sidecar,
)
from axe.adapters.memory.side_files import HandledFile
from axe.adapters.shared.clock import SystemClock
from axe.adapters.shared.reading import describe_os_error, read_regular
from axe.application.ports import Clock
from axe.domain.analysed import AnalysedMemory
from axe.domain.entries import MemorySnapshot, TrimPlan, check_keep, plan_trim
from axe.domain.errors import AgentError, ConfigError
from axe.domain.model import AgentConfig, ModelRef, quoted, validate_agent_name

_LARGEST = 4096  # a record is about 150 bytes; anything much larger is not one
_LATEST = 253_402_300_799  # 9999-12-31T23:59:59Z
_FIELDS = {"size": int, "sha256": str, "model": str, "at": float}


class FileMemoryStore:
    """The :class:`~axe.application.ports.MemoryStore` over files: each agent's
    :class:`MemoryFile`, one gc per file at a time across the run's threads and processes."""

    def __init__(
        self,
        data_dir: Callable[[], Path],
        *,
        clock: Clock | None = None,
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self._data_dir = data_dir
        self._environ = os.environ if environ is None else environ  # for memory.path
        self._clock = clock or SystemClock()
        self._locks = MemoryFileLocks(timeout=lock_timeout, clock=self._clock)
        self._trimming = 0  # trims under way, so an interrupted run lets them finish
        self._interrupted = False
        self._trims = threading.Condition()

    def settle_interrupted(self, timeout: float = 10.0) -> None:
        """Before an interrupted run ends without waiting for its workers: start no more
        trims, let those under way finish (at most ``timeout`` seconds), and remove the lock
        sidecars still held."""
        with self._trims:
            self._interrupted = True
            self._trims.wait_for(lambda: self._trimming == 0, timeout)
        self._locks.remove_held_sidecars()

    def close(self) -> None:
        """Nothing to release: a trim closes and frees what it replaced before it returns."""

    def lock(
        self, agent: AgentConfig, *, waiting: Callable[[int | None], None]
    ) -> AbstractContextManager[None]:
        return self.file_for(agent).locked(self._locks, agent=agent.name, waiting=waiting)

    def read(self, agent: AgentConfig) -> MemorySnapshot:
        return self.file_for(agent).read()

    def trim(
        self, agent: AgentConfig, snapshot: MemorySnapshot, plan: TrimPlan, *, archive: bool
    ) -> str | None:
        with self._trims:
            if self._interrupted:
                raise AgentError("not trimmed: the run was interrupted")
            self._trimming += 1
        try:
            return self.file_for(agent).trim(snapshot, plan, archive=archive)
        finally:
            with self._trims:
                self._trimming -= 1
                self._trims.notify_all()

    def analysed(self, agent: AgentConfig) -> AnalysedMemory | None:
        return read_record(self.file_for(agent))

    def remember_analysed(self, agent: AgentConfig, left: bytes, *, model: ModelRef) -> str | None:
        record = AnalysedMemory.of(left, model=model, at=self._clock.now())
        return write_record(self.file_for(agent), record)

    def file_for(self, agent: AgentConfig) -> MemoryFile:
        """``agent``'s memory file (a ``ConfigError`` as :meth:`path_for` says)."""
        return MemoryFile(self.path_for(agent), clock=self._clock)

    def path_for(self, agent: AgentConfig) -> Path:
        """Where ``agent``'s memory lives: ``memory.path`` expanded as the Go axe does,
        except that a variable not set is refused, not dropped (``$AXE_MEM/x.md`` would trim
        ``/x.md``). Raises ConfigError for a path not absolute once expanded or using an
        unset variable, a hostile agent name, no data directory, or a name too long."""
        path = self._expanded(agent)
        if (size := len(os.fsencode(path.name))) > LONGEST_MEMORY_NAME:
            raise ConfigError(
                f"the memory file name of agent {quoted(agent.name)} is {size} bytes long; "
                f"gc's own files beside it (lock, temp files) need {OWN_NAMES_LONGER_BY} bytes "
                f"more, so it can be at most {LONGEST_MEMORY_NAME}: use a shorter agent name "
                "or memory.path"
            )
        return path

    def _expanded(self, agent: AgentConfig) -> Path:
        custom = agent.memory.path
        if not custom:
            validate_agent_name(agent.name)
            return self._data_dir() / "memory" / f"{agent.name}.md"
        unset: list[str] = []
        expanded = expand_path(custom, self._environ, unset=unset)
        where = f"memory.path {quoted(custom)} of agent {quoted(agent.name)}"
        if "\0" in expanded or not os.path.isabs(expanded):
            became = f" (it expands to {quoted(expanded)})" if expanded != custom else ""
            raise ConfigError(
                f"{where} is not an absolute path{became}; use an absolute path such as "
                "/home/me/agent-memory.md"
            )
        if unset:
            *others, last = [f"${name}" for name in dict.fromkeys(unset)]
            names = f"{', '.join(others)} and {last}, which are" if others else f"{last}, which is"
            raise ConfigError(
                f"{where} uses {names} not set (it would name {quoted(expanded)} instead); "
                "set it or write the path out"
            )
        return Path(expanded)


def trim_entries(path: Path, keep: int) -> int:
    """Keep only the last ``keep`` entries of the memory file at ``path`` (Go's TrimEntries),
    under its lock as ``axe gc`` does (a stopped ``--archive`` settled first); how many were
    removed (0: no file, ``keep`` 0, or within it: then untouched). Raises AgentError for a
    negative ``keep``, or a file that cannot be read, locked or replaced (left as it was)."""
    check_keep(keep)  # refused before anything is touched
    file = MemoryFile(path)
    with file.locked(MemoryFileLocks(), agent=path.stem, waiting=lambda _: None):
        snapshot = file.read()
        plan = plan_trim(snapshot.content, keep)
        if snapshot.stamp is None or not plan.changes_file:
            return 0
        file.trim(snapshot, plan, archive=False)
        return plan.removed


def record_path(real: Path) -> Path:
    """The record of the memory file whose resolved path is ``real``."""
    return sidecar(real, ".analysed")


def read_record(file: HandledFile) -> AnalysedMemory | None:
    """The record beside ``file``, or None: none, unreadable, not whole, not one gc may
    trust, in a shared directory, or an archive left to settle."""
    try:
        place = file.place()
    except AgentError:  # the memory file is refused: the read that follows says why
        return None
    if place.shared or os.path.lexists(intent_path(file.path)):
        return None
    record = record_path(place.real)
    try:
        text, _ = read_regular(
            record, limit=_LARGEST, check=lambda status: place.check(record, status), nofollow=True
        )
    except (OSError, ValueError, AgentError):
        return None
    return _parse(text)


def write_record(file: HandledFile, record: AnalysedMemory) -> str | None:
    """Replace the record beside ``file`` with ``record`` (the caller holds the file's
    lock), or leave none where it cannot be written safely and say why: a failure only
    costs a later run an analysis, and is not raised."""
    try:
        place = file.place()
    except AgentError as error:
        return str(error)
    if (where := place.shared) is not None:
        return f"{where.directory} {where.why}, who could forge a record there"
    data = json.dumps(
        {"size": record.size, "sha256": record.sha256, "model": record.model, "at": record.at}
    )
    durable.remove_abandoned_temps(file)
    try:
        with durable.signals_deferred():  # else Ctrl-C could leave the record in its temp file
            with durable.temp_file(place.real) as (temp, fd):
                durable.write_all(fd, (data + "\n").encode(), write=file.platform.write)
            try:
                file.platform.replace(temp, record_path(place.real))
            except BaseException:
                durable.remove_quietly(temp)
                raise
    except OSError as error:
        return f"cannot write {record_path(place.real)}: {describe_os_error(error)}"
    return None


def _parse(text: bytes) -> AnalysedMemory | None:
    """The record in ``text``, or None unless it is exactly one, every field of its type."""
    try:
        fields = json.loads(text)
    except ValueError:  # UnicodeDecodeError and JSONDecodeError included
        return None
    if not isinstance(fields, dict) or fields.keys() != _FIELDS.keys():
        return None
    for name, kind in _FIELDS.items():
        value = fields[name]
        if type(value) is not kind and not (kind is float and type(value) is int):
            return None
    if fields["size"] < 0 or not 0 <= fields["at"] <= _LATEST:  # NaN too: a time to print
        return None
    return AnalysedMemory(**fields)
