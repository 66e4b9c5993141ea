"""Memory logs as files (``<data dir>/memory/<name>.md`` or ``memory.path``): all a gc does to
one, in the sentences a user reads when it fails; and the ``--skip-unchanged`` record beside
it, only ever a reason to skip (any doubt reads as none): renamed into place under the lock,
not flushed, since a skip also needs the file's digest to match.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager
from pathlib import Path

import attrs

from axe.adapters.memory import durable, paths
from axe.adapters.memory.archive import archiving, settle_archive
from axe.adapters.memory.durable import SourceFile, changed
from axe.adapters.memory.lock import DEFAULT_LOCK_TIMEOUT, MemoryFileLocks, Waiting
from axe.adapters.memory.paths import archive_path, intent_path
from axe.adapters.memory.platforms import FilePlatform, current_platform
from axe.adapters.memory.side_files import HandledFile, Place, locate, read_fields
from axe.adapters.shared import reading
from axe.adapters.shared.clock import SystemClock
from axe.adapters.shared.reading import describe_os_error
from axe.application.ports import Clock
from axe.domain.analysed import AnalysedMemory, Narrowed
from axe.domain.entries import MemorySnapshot, TrimPlan, check_keep, plan_trim
from axe.domain.errors import AgentError, ConfigError
from axe.domain.model import AgentConfig, ModelRef, quoted, validate_agent_name

_CUT_CONTEXT = 256  # bytes each side of the cut that must be as read for a trim to go ahead
_LATEST = 253_402_300_799  # 9999-12-31T23:59:59Z
_FIELDS = {"size": (int,), "sha256": (str,), "model": (str,), "at": (float, int)}
_NARROWED = {"budget": (int,), "analysed": (int,)}  # only in a record a budget narrowed


@attrs.define
class MemoryFile:
    """The memory file at ``path`` (a link outside a shared directory stays: its target is
    trimmed), by the rules of ``platform``."""

    path: Path
    platform: FilePlatform = attrs.field(factory=current_platform, kw_only=True)
    clock: Clock = attrs.field(factory=SystemClock, kw_only=True)

    def place(self) -> Place:
        return locate(self.path, self.platform)

    @contextlib.contextmanager
    def locked(self, locks: MemoryFileLocks, *, agent: str, waiting: Waiting) -> Iterator[None]:
        """Hold the file's lock for the block, having settled what a stopped archiving left;
        AgentError (nothing changed) if the file, lock or settling fails."""
        with locks.hold(self.path, agent=agent, waiting=waiting, place=self.place()):
            try:
                settle_archive(self)
            except OSError as error:
                reason = str(error) if isinstance(error, reading.NotRegularFileError) else None
                raise AgentError(
                    f"cannot settle the archive {archive_path(self.path)} by its intent "
                    f"record: {reason or describe_os_error(error)}; the memory file was not "
                    f"changed (fix that, or delete {intent_path(self.path)} to go on without "
                    "settling)"
                ) from None
            yield

    def read(self) -> MemorySnapshot:
        """The whole file, missing read as empty; AgentError if it is refused or unreadable."""
        place = self.place()
        try:
            content, stamp = reading.read_regular(
                place.real,
                check=lambda status: place.mine(self.path, status),
                nofollow=place.shared is not None,
            )
        except FileNotFoundError:
            return MemorySnapshot(content=b"", stamp=None)
        except OSError as error:
            raise AgentError(
                f"cannot read memory file {self.path}: {describe_os_error(error)}"
            ) from None
        except MemoryError:
            raise AgentError(f"cannot read memory file {self.path}: not enough memory") from None
        return MemorySnapshot(content=content, stamp=stamp)

    def trim(self, snapshot: MemorySnapshot, plan: TrimPlan, *, archive: bool) -> str | None:
        """Apply ``plan`` (archived first if ``archive``; Ctrl-C waits); a warning's clause if a
        program still holds the old file open for writing. AgentError says if it was trimmed."""
        with durable.signals_deferred():
            source = self._open_to_trim()
            try:
                held = self._trim(source, snapshot, plan, archive=archive)
            except OSError as error:
                if source.renamed:
                    raise AgentError(
                        f"trimmed memory file {self.path}, but could not finish: "
                        f"{describe_os_error(error)}; entries appended during the trim may not "
                        "have been carried over"
                    ) from None
                raise AgentError(
                    f"cannot trim memory file {self.path}: {describe_os_error(error)}; "
                    "the file was not changed"
                ) from None
            finally:
                source.close()
        if not held:
            return None
        return (
            f"a program still had {self.path} open for writing after gc waited "
            f"{durable.DRAIN_SECONDS:g}s for it; what it writes there from now on goes to the "
            "replaced file, not to the trimmed one"
        )

    def _open_to_trim(self) -> SourceFile:
        place = self.place()
        try:
            return SourceFile(self, place, *place.open_memory())
        except FileNotFoundError:
            raise AgentError(
                f"memory file {self.path} disappeared before it could be trimmed; "
                "nothing was changed"
            ) from None
        except OSError as error:
            raise AgentError(
                f"cannot open memory file {self.path} to trim it: {describe_os_error(error)}"
            ) from None

    def _trim(
        self, source: SourceFile, snapshot: MemorySnapshot, plan: TrimPlan, *, archive: bool
    ) -> bool:
        source.place.mine(self.path, source.status)
        # a file no longer the one read plus appends is not trimmed: a stale cut cuts text
        stamp, status, cut = snapshot.stamp, source.status, plan.keep_from
        if isinstance(stamp, reading.FileStamp):
            if (status.st_dev, status.st_ino) != (stamp.device, stamp.inode):
                raise changed(self.path, "was replaced")
            if status.st_size < stamp.size:
                raise changed(self.path, "shrank")
            start, end = max(cut - _CUT_CONTEXT, 0), min(cut + _CUT_CONTEXT, stamp.size)
            if durable.pread(source.fd, end - start, start) != snapshot.content[start:end]:
                raise changed(self.path, "was rewritten")
        durable.remove_abandoned_temps(self, source.place)
        with contextlib.ExitStack() as archived:  # undone if the trim fails before the rename
            if archive and plan.keep_from:  # sliced only then: a copy of all but the tail
                removed = snapshot.content[: plan.keep_from]
                try:
                    archived.enter_context(archiving(self, removed, source))
                except OSError as error:
                    raise AgentError(
                        f"cannot archive removed entries to {archive_path(self.path)}: "
                        f"{describe_os_error(error)}; the memory file was not changed"
                    ) from None
            if self.platform.windows:
                return durable.replace_closed(source, plan.keep_from)
            return durable.replace_open(source, plan.keep_from)


class FileMemoryStore:
    """The :class:`~axe.application.ports.MemoryStore` over each agent's :class:`MemoryFile`."""

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
        """For an interrupted run: start no more trims, let those under way finish (at most
        ``timeout`` seconds), remove the lock sidecars still held."""
        with self._trims:
            self._interrupted = True
            self._trims.wait_for(lambda: self._trimming == 0, timeout)
        self._locks.remove_held_sidecars()

    def close(self) -> None:
        """Nothing to release: a trim closes and frees what it replaced before it returns."""

    def lock(self, agent: AgentConfig, *, waiting: Waiting) -> AbstractContextManager[None]:
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

    def remember_analysed(
        self, agent: AgentConfig, left: bytes, *, model: ModelRef, narrowed: Narrowed | None = None
    ) -> str | None:
        record = AnalysedMemory.of(left, model=model, at=self._clock.now(), narrowed=narrowed)
        return write_record(self.file_for(agent), record)

    def file_for(self, agent: AgentConfig) -> MemoryFile:
        return MemoryFile(self.path_for(agent), clock=self._clock)

    def path_for(self, agent: AgentConfig) -> Path:
        """Where ``agent``'s memory lives: ``memory.path`` expanded as the Go axe does, but an
        unset variable refused (``$AXE_MEM/x.md`` would trim ``/x.md``); else ConfigError."""
        if custom := agent.memory.path:
            path = _expanded(custom, self._environ, agent.name)
        else:
            validate_agent_name(agent.name)
            path = self._data_dir() / "memory" / f"{agent.name}.md"
        if (size := len(os.fsencode(path.name))) > paths.LONGEST_MEMORY_NAME:
            longest, more = paths.LONGEST_MEMORY_NAME, paths.OWN_NAMES_LONGER_BY
            raise ConfigError(
                f"the memory file name of agent {quoted(agent.name)} is {size} bytes long; "
                f"gc's own files beside it (lock, temp files) need {more} bytes more, so it "
                f"can be at most {longest}: use a shorter agent name or memory.path"
            )
        return path


def _expanded(custom: str, environ: Mapping[str, str], agent: str) -> Path:
    unset: list[str] = []
    expanded = paths.expand_path(custom, environ, unset=unset)
    where = f"memory.path {quoted(custom)} of agent {quoted(agent)}"
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
    """Go's TrimEntries: keep the last ``keep`` entries of the file at ``path``, under its lock
    as ``axe gc`` does; how many were removed (AgentError: the file is as it was)."""
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
    return paths.sidecar(real, ".analysed")


def read_record(file: HandledFile) -> AnalysedMemory | None:
    """The record beside ``file``, or None on any doubt."""
    try:
        place = file.place()
        if place.shared or os.path.lexists(intent_path(file.path)):
            return None  # a stopped archiving, settled under the lock, changes the file
        fields = read_fields(record_path(place.real), place, _FIELDS, optional=_NARROWED)
    except (OSError, AgentError):  # a refused memory file: the read that follows says why
        return None
    if fields is None or fields["size"] < 0 or not 0 <= fields["at"] <= _LATEST:
        return None  # NaN too: a time to print
    if ("budget" in fields) != ("analysed" in fields) or fields.get("analysed", 0) < 0:
        return None
    return AnalysedMemory(**fields)


def write_record(file: HandledFile, record: AnalysedMemory) -> str | None:
    """Replace the record beside ``file`` (under its lock), or say why none is kept: that
    only costs a later run an analysis, so nothing is raised."""
    try:
        place = file.place()
    except AgentError as error:
        return str(error)
    if (where := place.shared) is not None:
        return f"{where.directory} {where.why}, who could forge a record there"
    data = json.dumps(attrs.asdict(record, filter=lambda _, value: value is not None)) + "\n"
    durable.remove_abandoned_temps(file, place)
    try:
        with durable.signals_deferred():  # else Ctrl-C could leave the record in its temp file
            with durable.new_file(temp := durable.new_temp(place.real), place) as fd:
                durable.write_all(fd, data.encode(), write=file.platform.write)
            try:
                file.platform.replace(temp, record_path(place.real))
            except BaseException:
                durable.remove_quietly(temp)
                raise
    except OSError as error:
        return f"cannot write {record_path(place.real)}: {describe_os_error(error)}"
    return None
