"""One memory file, and everything a gc does to it: lock (and settle), read, trim (and archive).

The sentences a user reads when one of these fails are written here; the steps themselves
are in :mod:`.lock`, :mod:`.durable` (or :mod:`.closed_replace`, as the platform decides)
and :mod:`.archive` (imported only by runs that archive, or that find an archiving to settle).
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING

from axe.adapters.memory.durable import (
    DirectoryNames,
    LateAppendError,
    ReplacedDuringTrimError,
    SourceFile,
    pread,
    remove_abandoned_temps,
    replace_open,
    signals_deferred,
)
from axe.adapters.memory.paths import archive_path, intent_path
from axe.adapters.memory.releases import LaterReleases
from axe.adapters.shared.clock import SystemClock
from axe.adapters.shared.reading import FileStamp, describe_os_error, read_regular
from axe.domain.entries import MemorySnapshot, TrimPlan
from axe.domain.errors import AgentError

if TYPE_CHECKING:
    from axe.adapters.memory.lock import MemoryFileLocks
    from axe.adapters.memory.platforms import FilePlatform
    from axe.application.ports import Clock

_CUT_CONTEXT = 256  # bytes each side of the cut that must be as read for a trim to go ahead


Meanwhile = Callable[[], AbstractContextManager[object]]
_LONG_READ = 16 << 20  # bytes: long enough to read (8 ms here) to do something else meanwhile


class MemoryFile:
    """The memory file at ``path`` as the agent names it (a symlink stays a link; its
    target is what gets replaced), handled by the rules of ``platform`` (this system's when
    None), timed by the run's ``clock``; a run's ``releases`` free what a trim replaced
    (at once when None) and its ``names`` list the directory at most once a minute (its own
    when None)."""

    def __init__(
        self,
        path: Path,
        *,
        platform: FilePlatform | None = None,
        clock: Clock | None = None,
        releases: LaterReleases | None = None,
        names: DirectoryNames | None = None,
    ) -> None:
        self.path, self._platform, self.clock = path, platform, clock or SystemClock()
        self.releases, self._names = releases, names or DirectoryNames()
        self._temps_checked = False  # under the lock held now: see remove_abandoned_temps

    @property
    def platform(self) -> FilePlatform:
        """The given platform, else this system's, imported only once a run needs it (to
        trim or write): reading a file, or skipping an unchanged one, needs none."""
        if self._platform is None:
            from axe.adapters.memory.platforms import current_platform  # noqa: PLC0415

            self._platform = current_platform()
        return self._platform

    @functools.cached_property
    def real(self) -> Path:
        """The path with every symlink resolved: the file that is replaced, and beside
        which gc's own files (lock, temps) go; resolved once (a dozen system calls), so a
        trim's steps all work beside the one file it opened."""
        return Path(os.path.realpath(self.path))

    @contextlib.contextmanager
    def locked(
        self, locks: MemoryFileLocks, *, agent: str, waiting: Callable[[int | None], None]
    ) -> Iterator[None]:
        """Hold the file's lock for the block (see :mod:`.lock`), having first finished
        the archiving a stopped gc left (see :mod:`.archive`), whatever this gc then does.

        Raises:
            AgentError: the lock was not had in time, or the archive cannot be settled (the
                memory file was not changed).
        """
        with locks.hold(self.path, agent=agent, waiting=waiting, real=self.real):
            try:
                if _archiving_left(self.path):
                    from axe.adapters.memory.archive import settle_archive  # noqa: PLC0415

                    settle_archive(self)
            except OSError as error:
                raise AgentError(
                    f"cannot settle the archive {archive_path(self.path)} that an interrupted "
                    f"gc left: {describe_os_error(error)}; the memory file was not changed"
                ) from None
            try:
                yield
            finally:
                self._temps_checked = False

    def remove_abandoned_temps(self) -> None:
        """Delete the temp files a killed gc left beside this file (see
        :func:`.durable.remove_abandoned_temps`), once per hold of its lock: only a gc holding
        it makes them, so the trim's look through the directory serves the record written
        after it (a look costs a step per file there: the run over a fleet's shared
        directory paid one per agent twice)."""
        if not self._temps_checked:
            remove_abandoned_temps(self, self._names)
            self._temps_checked = True

    def read(self, meanwhile: Meanwhile | None = None) -> MemorySnapshot:
        """The whole file; missing reads as empty (stamp None). ``meanwhile`` is entered
        around the read of a large file: what the run can do while the kernel copies it.

        Raises:
            AgentError: the file exists but cannot be read, or is not a regular file.
        """
        with contextlib.ExitStack() as reading:

            def opened(status: os.stat_result) -> None:
                if meanwhile is not None and status.st_size >= _LONG_READ:
                    reading.enter_context(meanwhile())

            try:
                content, stamp = read_regular(self.path, check=opened)
            except FileNotFoundError:
                return MemorySnapshot(content=b"", stamp=None)
            except OSError as error:
                raise AgentError(
                    f"cannot read memory file {self.path}: {describe_os_error(error)}"
                ) from None
            except MemoryError:
                raise AgentError(
                    f"cannot read memory file {self.path}: not enough memory"
                ) from None
        return MemorySnapshot(content=content, stamp=stamp)

    def trim(self, snapshot: MemorySnapshot, plan: TrimPlan, *, archive: bool) -> str | None:
        """Apply ``plan`` to the file that ``snapshot`` was read from: the removed bytes
        appended to the archive first if ``archive``, then the file replaced by its tail
        (see :mod:`.durable`). Ctrl-C and SIGTERM wait until it is done.

        Raises:
            AgentError: nothing was changed (or, after the rename, late appends were lost).
        """
        with signals_deferred():
            source = self._open_to_trim()
            try:
                self._trim(source, snapshot, plan, archive=archive)
                source.close(self.releases)  # its blocks freed at once if few, else later
            except LateAppendError as error:
                raise AgentError(
                    f"trimmed memory file {self.path}, but {error.size} bytes appended during "
                    f"the trim could not be added back: {describe_os_error(error)}"
                ) from None
            except ReplacedDuringTrimError:
                raise self._changed("was replaced") from None
            except OSError as error:
                raise AgentError(
                    f"cannot trim memory file {self.path}: {describe_os_error(error)}; "
                    "the file was not changed"
                ) from None
            finally:
                source.close()
        return None

    def _open_to_trim(self) -> SourceFile:
        try:
            return SourceFile(self, self.real)
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
    ) -> None:
        self._check_unchanged(source, snapshot, plan.keep_from)
        self.remove_abandoned_temps()
        with contextlib.ExitStack() as archived:  # undone if the trim fails before the rename
            if archive and plan.keep_from:  # sliced only then: a copy of all but the tail
                self._archive(archived, snapshot.content[: plan.keep_from], source.status)
            self._replace_with_tail(source, plan.keep_from)

    def _replace_with_tail(self, source: SourceFile, keep_from: int) -> None:
        """By the protocol the platform allows: rename over the open file (:mod:`.durable`),
        or close every handle first (:mod:`.closed_replace`). Raises what the protocol raises."""
        if self.platform.replace_needs_closed_files:
            from axe.adapters.memory.closed_replace import replace_closed  # noqa: PLC0415

            replace_closed(source, keep_from)
        else:
            replace_open(source, keep_from)

    def _check_unchanged(self, source: SourceFile, snapshot: MemorySnapshot, cut: int) -> None:
        """Refuse a file that is no longer the one read plus appends: another file by now (an
        editor's save by rename), a shorter one, or one rewritten in place (an editor that
        keeps the inode) so that the bytes around the cut moved. A trim at a stale offset
        would cut through the middle of somebody's text."""
        stamp, status = snapshot.stamp, source.status
        if not isinstance(stamp, FileStamp):
            return
        if (status.st_dev, status.st_ino) != (stamp.device, stamp.inode):
            raise self._changed("was replaced")
        if status.st_size < stamp.size:
            raise self._changed("shrank")
        start, end = max(cut - _CUT_CONTEXT, 0), min(cut + _CUT_CONTEXT, stamp.size)
        if pread(source.fd, end - start, start) != snapshot.content[start:end]:
            raise self._changed("was rewritten")

    def _archive(
        self, stack: contextlib.ExitStack[bool | None], removed: bytes, status: os.stat_result
    ) -> None:
        """Append ``removed`` to the archive for the rest of ``stack`` (see :mod:`.archive`).

        Raises:
            AgentError: it cannot be appended; the archive is as it was, the memory file
                untouched.
        """
        from axe.adapters.memory.archive import archiving  # noqa: PLC0415

        try:
            stack.enter_context(archiving(self, removed, status))
        except OSError as error:
            raise AgentError(
                f"cannot archive removed entries to {archive_path(self.path)}: "
                f"{describe_os_error(error)}; the memory file was not changed"
            ) from None

    def _changed(self, how: str) -> AgentError:
        return AgentError(
            f"memory file {self.path} {how} while gc was running; not trimmed (run gc again)"
        )


def _archiving_left(path: Path) -> bool:
    """Whether a stopped archiving may have left its record beside ``path``: only such a
    gc writes one, so a run finds none and loads no archive module; any other answer than
    its absence is settled, where the error is said as before."""
    try:
        os.lstat(intent_path(path))
    except FileNotFoundError:
        return False
    except OSError:  # cannot tell: settling says why
        return True
    return True
