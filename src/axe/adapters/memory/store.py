"""Memory logs as files: ``<data dir>/memory/<name>.md`` or the agent's ``memory.path``."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from pathlib import Path

from axe.adapters.memory.analysed import read_record, write_record
from axe.adapters.memory.file import MemoryFile
from axe.adapters.memory.lock import DEFAULT_LOCK_TIMEOUT, MemoryFileLocks
from axe.adapters.memory.paths import LONGEST_MEMORY_NAME, OWN_NAMES_LONGER_BY, expand_path
from axe.adapters.shared.clock import SystemClock
from axe.application.ports import Clock
from axe.domain.analysed import AnalysedMemory
from axe.domain.entries import MemorySnapshot, TrimPlan, check_keep, plan_trim
from axe.domain.errors import AgentError, ConfigError
from axe.domain.model import AgentConfig, ModelRef, quoted, validate_agent_name


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
        self._files: dict[tuple[str, str], MemoryFile] = {}
        self._trimming = 0  # trims under way, so an interrupted run lets them finish
        self._interrupted = False
        self._trims = threading.Condition()

    def settle_interrupted(self, timeout: float = 10.0) -> None:
        """Before a run that was interrupted ends without waiting for its worker threads:
        start no more trims, let those under way finish (at most ``timeout`` seconds; they
        take milliseconds) so none is cut short, and remove the lock sidecars still held."""
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
        """``agent``'s memory file, with this run's clock (a ``ConfigError`` as
        :meth:`path_for` says); made once per agent name and ``memory.path``, the only
        inputs of its path, as each gc asks for it several times."""
        key = (agent.name, agent.memory.path)
        if (file := self._files.get(key)) is None:
            file = self._files[key] = MemoryFile(self.path_for(agent), clock=self._clock)
        return file

    def path_for(self, agent: AgentConfig) -> Path:
        """Where ``agent``'s memory lives: ``memory.path`` expanded as the Go axe does
        (:func:`.paths.expand_path`, with the store's environment), except that a variable
        that is not set is refused rather than dropped: ``$AXE_MEM/x.md`` would trim ``/x.md``.

        Raises:
            ConfigError: a ``memory.path`` that is not absolute once expanded or uses a
                variable that is not set, a hostile agent name, no data directory, or a
                file name too long for gc's own files beside it.
        """
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
    """Keep only the last ``keep`` entries of the memory file at ``path`` (Go's TrimEntries).

    Returns how many entries were removed: 0 when the file is missing, ``keep`` is 0, or
    the file holds ``keep`` entries or fewer (then it is not touched at all).

    Like ``axe gc``, it holds the file's lock while it works, so it never overlaps a gc,
    and first settles an ``--archive`` a stopped gc left, so no entry is archived twice.

    Raises:
        AgentError: ``keep`` is negative, the file cannot be read or replaced, or another
            gc held it past the default time limit; on failure the file is as it was.
    """
    check_keep(keep)  # refused before anything is touched
    file = MemoryFile(path)
    with file.locked(MemoryFileLocks(), agent=path.stem, waiting=lambda _: None):
        snapshot = file.read()
        plan = plan_trim(snapshot.content, keep)
        if snapshot.stamp is None or not plan.changes_file:
            return 0
        file.trim(snapshot, plan, archive=False)
        return plan.removed
