"""Memory logs as files: ``<data dir>/memory/<name>.md`` or the agent's ``memory.path``."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING

from axe.adapters.memory.lock import MemoryFileLocks
from axe.adapters.memory.paths import expand_path
from axe.adapters.shared.reading import FileStamp, describe_os_error, open_regular, read_regular
from axe.domain.entries import MemorySnapshot, TrimPlan, check_keep, plan_trim
from axe.domain.errors import AgentError, ConfigError
from axe.domain.model import AgentConfig, quoted, validate_agent_name

if TYPE_CHECKING:
    from axe.adapters.memory.durable import SourceFile
    from axe.adapters.memory.platforms import FilePlatform


_CUT_CONTEXT = 256  # bytes each side of the cut that must be as read for a trim to go ahead


class FileMemoryStore:
    """Reads memory files whole and trims them durably (see :mod:`.durable`), one gc per
    file at a time (see :mod:`.lock`)."""

    def __init__(
        self,
        data_dir: Callable[[], Path],
        *,
        locks: MemoryFileLocks | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self._data_dir = data_dir
        self._environ = os.environ if environ is None else environ  # for memory.path
        self._locks = locks or MemoryFileLocks()
        self._sleep = sleep
        self._clock = clock
        self._trims = _TrimsUnderWay()

    def settle_interrupted(self, timeout: float = 10.0) -> None:
        """Before a run that was interrupted ends without waiting for its worker threads:
        start no more trims, let those under way finish (at most ``timeout`` seconds; they
        take milliseconds) so none is cut short, and remove the lock sidecars still held."""
        self._trims.close_and_wait(timeout)
        self._locks.remove_held_sidecars()

    def lock(
        self, agent: AgentConfig, *, waiting: Callable[[int | None], None]
    ) -> AbstractContextManager[None]:
        path = self.path_for(agent)
        return _settling_archive(self._locks.hold(path, agent=agent.name, waiting=waiting), path)

    def path_for(self, agent: AgentConfig) -> Path:
        """Where ``agent``'s memory lives.

        ``memory.path`` is expanded as the Go axe does (``~``, then ``$VAR``/``${VAR}`` from
        the environment given to the store).

        Raises:
            ConfigError: a ``memory.path`` that is not absolute once expanded, a hostile
                agent name, or no data directory.
        """
        custom = agent.memory.path
        if custom:
            expanded = expand_path(custom, self._environ)
            if "\0" in expanded or not os.path.isabs(expanded):
                became = f" (it expands to {quoted(expanded)})" if expanded != custom else ""
                raise ConfigError(
                    f"memory.path {quoted(custom)} of agent {quoted(agent.name)} is not an "
                    f"absolute path{became}; use an absolute path such as "
                    "/home/me/agent-memory.md"
                )
            return Path(expanded)
        validate_agent_name(agent.name)
        return self._data_dir() / "memory" / f"{agent.name}.md"

    def read(self, agent: AgentConfig) -> MemorySnapshot:
        return read_memory(self.path_for(agent))

    def trim(
        self, agent: AgentConfig, snapshot: MemorySnapshot, plan: TrimPlan, *, archive: bool
    ) -> None:
        with self._trims.counting():
            trim_memory(
                self.path_for(agent),
                snapshot,
                plan,
                archive=archive,
                sleep=self._sleep,
                clock=self._clock,
            )


class _TrimsUnderWay:
    """How many trims a store is carrying out, so an interrupted run can let them finish
    before it ends without waiting for anything else, and start none after that."""

    def __init__(self) -> None:
        self._count = 0
        self._closed = False
        self._changed = threading.Condition()

    @contextlib.contextmanager
    def counting(self) -> Iterator[None]:
        """Count the block as a trim under way.

        Raises:
            AgentError: the run is being interrupted: no trim starts any more.
        """
        with self._changed:
            if self._closed:
                raise AgentError("not trimmed: the run was interrupted")
            self._count += 1
        try:
            yield
        finally:
            with self._changed:
                self._count -= 1
                self._changed.notify_all()

    def close_and_wait(self, timeout: float) -> bool:
        """Start no more trims; True once none is under way, False if some still were
        after ``timeout``."""
        with self._changed:
            self._closed = True
            return self._changed.wait_for(lambda: self._count == 0, timeout)


def trim_entries(path: Path, keep: int) -> int:
    """Keep only the last ``keep`` entries of the memory file at ``path`` (Go's TrimEntries).

    Returns how many entries were removed: 0 when the file is missing, ``keep`` is 0, or
    the file holds ``keep`` entries or fewer (then it is not touched at all).

    Like ``axe gc``, it holds the file's lock while it works, so it never overlaps a gc.

    Raises:
        AgentError: ``keep`` is negative, the file cannot be read or replaced, or another
            gc held it past the default time limit; on failure the file is as it was.
    """
    check_keep(keep)  # refused before anything is touched
    with MemoryFileLocks().hold(path, agent=path.stem, waiting=lambda _: None):
        snapshot = read_memory(path)
        plan = plan_trim(snapshot.content, keep)
        if snapshot.stamp is None or not plan.changes_file:
            return 0
        trim_memory(path, snapshot, plan, archive=False)
        return plan.removed


def read_memory(path: Path) -> MemorySnapshot:
    """The whole file; missing reads as empty (stamp None).

    Raises:
        AgentError: the file exists but cannot be read, or is not a regular file.
    """
    try:
        content, stamp = read_regular(path)
    except FileNotFoundError:
        return MemorySnapshot(content=b"", stamp=None)
    except OSError as error:
        raise AgentError(f"cannot read memory file {path}: {describe_os_error(error)}") from None
    except MemoryError:
        raise AgentError(f"cannot read memory file {path}: not enough memory") from None
    return MemorySnapshot(content=content, stamp=stamp)


def trim_memory(
    path: Path,
    snapshot: MemorySnapshot,
    plan: TrimPlan,
    *,
    archive: bool,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    platform: FilePlatform | None = None,
) -> None:
    """Apply ``plan`` to the file at ``path`` that ``snapshot`` was read from, by the rules
    of ``platform`` (this system's when None).

    Raises:
        AgentError: nothing was changed (or, after the rename, late appends were lost).
    """
    # Imported here: runs that trim nothing never load the machinery.
    from axe.adapters.memory.durable import signals_deferred  # noqa: PLC0415
    from axe.adapters.memory.platforms import current_platform  # noqa: PLC0415

    platform = current_platform() if platform is None else platform
    with signals_deferred():  # Ctrl-C, SIGTERM: the trim finishes, then the run ends
        _trim(path, snapshot, plan, archive=archive, sleep=sleep, clock=clock, platform=platform)


def _trim(
    path: Path,
    snapshot: MemorySnapshot,
    plan: TrimPlan,
    *,
    archive: bool,
    sleep: Callable[[float], None],
    clock: Callable[[], float],
    platform: FilePlatform,
) -> None:
    from axe.adapters.memory.durable import (  # noqa: PLC0415
        LateAppendError,
        ReplacedDuringTrimError,
        SourceFile,
        remove_abandoned_temps,
        replace_with_tail,
    )

    if platform.replace_needs_closed_files:
        from axe.adapters.memory.closed_replace import (  # noqa: PLC0415
            replace_closed_with_tail as replace,
        )
    else:
        replace = replace_with_tail
    target = Path(os.path.realpath(path))  # a symlink stays a link; its target is trimmed
    try:
        fd, status = open_regular(target)
    except FileNotFoundError:
        raise AgentError(
            f"memory file {path} disappeared before it could be trimmed; nothing was changed"
        ) from None
    except OSError as error:
        raise AgentError(
            f"cannot open memory file {path} to trim it: {describe_os_error(error)}"
        ) from None
    source = SourceFile(fd, status)
    try:
        _check_unchanged(path, source, snapshot, plan.keep_from)
        remove_abandoned_temps(target, platform=platform)
        with contextlib.ExitStack() as archived:  # undone if the trim fails before the rename
            if archive:
                _archive(archived, path, snapshot.content[: plan.keep_from], status, platform)
            replace(source, target, plan.keep_from, platform=platform, sleep=sleep, clock=clock)
    except LateAppendError as error:
        raise AgentError(
            f"trimmed memory file {path}, but {error.size} bytes appended during the trim "
            f"could not be added back: {describe_os_error(error)}"
        ) from None
    except ReplacedDuringTrimError:
        raise _replaced(path) from None
    except OSError as error:
        raise AgentError(
            f"cannot trim memory file {path}: {describe_os_error(error)}; the file was not changed"
        ) from None
    finally:
        source.close()


def _replaced(path: Path) -> AgentError:
    return AgentError(
        f"memory file {path} was replaced while gc was running; not trimmed (run gc again)"
    )


def _check_unchanged(
    path: Path, source: SourceFile, snapshot: MemorySnapshot, keep_from: int
) -> None:
    """Refuse a file that is no longer the one read plus appends: another file by now (an
    editor's save by rename), a shorter one, or one rewritten in place (an editor that
    keeps the inode) so that the bytes around the cut moved. A trim at a stale offset would
    cut through the middle of somebody's text."""
    from axe.adapters.memory.durable import pread  # noqa: PLC0415  (trims only)

    stamp = snapshot.stamp
    if not isinstance(stamp, FileStamp):
        return
    status = source.status
    if (status.st_dev, status.st_ino) != (stamp.device, stamp.inode):
        raise _replaced(path)
    if status.st_size < stamp.size:
        raise AgentError(
            f"memory file {path} shrank while gc was running; not trimmed (run gc again)"
        )
    start, end = max(keep_from - _CUT_CONTEXT, 0), min(keep_from + _CUT_CONTEXT, stamp.size)
    if pread(source.fd, end - start, start) != snapshot.content[start:end]:
        raise AgentError(
            f"memory file {path} was rewritten while gc was running; not trimmed (run gc again)"
        )


def _archive(
    stack: contextlib.ExitStack[bool | None],
    path: Path,
    removed: bytes,
    memory_status: os.stat_result,
    platform: FilePlatform,
) -> None:
    """Append ``removed`` to the archive for the rest of ``stack`` (see :mod:`.archive`).

    Raises:
        AgentError: it cannot be appended; the archive is as it was, the memory file
            untouched.
    """
    from axe.adapters.memory.archive import archive_path, archiving  # noqa: PLC0415

    if not removed:
        return
    try:
        stack.enter_context(
            archiving(path, removed, memory_status=memory_status, platform=platform)
        )
    except OSError as error:
        raise AgentError(
            f"cannot archive removed entries to {archive_path(path)}: "
            f"{describe_os_error(error)}; the memory file was not changed"
        ) from None


@contextlib.contextmanager
def _settling_archive(held: AbstractContextManager[None], path: Path) -> Iterator[None]:
    """Hold the lock, then finish what a gc stopped while archiving left (see
    :mod:`.archive`): the next gc of a file settles its archive, whatever it then does."""
    from axe.adapters.memory.archive import archive_path, settle_archive  # noqa: PLC0415
    from axe.adapters.memory.platforms import current_platform  # noqa: PLC0415

    with held:
        try:
            settle_archive(path, platform=current_platform())
        except OSError as error:
            raise AgentError(
                f"cannot settle the archive {archive_path(path)} that an interrupted gc "
                f"left: {describe_os_error(error)}; the memory file was not changed"
            ) from None
        yield
