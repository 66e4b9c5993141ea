"""One memory file, and everything a gc does to it: lock (and settle), read, trim (and archive).

The sentences a user reads when one of these fails are written here; the steps themselves
are in :mod:`.lock`, :mod:`.durable` (or :mod:`.closed_replace`, as the platform decides),
:mod:`.archive` and :mod:`.side_files`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from axe.adapters.memory.archive import archiving, settle_archive
from axe.adapters.memory.closed_replace import replace_closed
from axe.adapters.memory.durable import (
    DRAIN_SECONDS,
    LateAppendError,
    ReplacedDuringTrimError,
    SourceFile,
    pread,
    remove_abandoned_temps,
    replace_open,
    signals_deferred,
)
from axe.adapters.memory.lock import MemoryFileLocks
from axe.adapters.memory.paths import archive_path, intent_path
from axe.adapters.memory.platforms import FilePlatform, current_platform
from axe.adapters.memory.side_files import Place, check_own, locate
from axe.adapters.shared.clock import SystemClock
from axe.adapters.shared.reading import (
    FileStamp,
    NotRegularFileError,
    describe_os_error,
    open_regular,
    read_regular,
)
from axe.application.ports import Clock
from axe.domain.entries import MemorySnapshot, TrimPlan
from axe.domain.errors import AgentError

_CUT_CONTEXT = 256  # bytes each side of the cut that must be as read for a trim to go ahead


class MemoryFile:
    """The memory file at ``path`` as the agent names it (outside a shared directory a
    symlink stays a link, and its target is what gets replaced), handled by the rules of
    ``platform`` (this system's when None), timed by the run's ``clock``."""

    def __init__(
        self, path: Path, *, platform: FilePlatform | None = None, clock: Clock | None = None
    ) -> None:
        self.path = path
        self.platform = platform or current_platform()
        self.clock = clock or SystemClock()

    def place(self) -> Place:
        """Where the file really is, and whose files gc trusts beside it, looked at afresh.

        Raises:
            AgentError: a link, or another user's file, in a shared directory.
        """
        return locate(self.path, self.platform)

    @contextlib.contextmanager
    def locked(
        self, locks: MemoryFileLocks, *, agent: str, waiting: Callable[[int | None], None]
    ) -> Iterator[None]:
        """Hold the file's lock for the block (see :mod:`.lock`), having first finished
        the archiving a stopped gc left (see :mod:`.archive`), whatever this gc then does.

        Raises:
            AgentError: the file is refused, the lock was not had in time, or the archive
                cannot be settled (the memory file was not changed).
        """
        with locks.hold(self.path, agent=agent, waiting=waiting, place=self.place()):
            try:
                settle_archive(self)
            except OSError as error:
                reason = str(error) if isinstance(error, NotRegularFileError) else None
                raise AgentError(
                    f"cannot settle the archive {archive_path(self.path)} that an interrupted "
                    f"gc left: {reason or describe_os_error(error)}; the memory file was not "
                    f"changed (fix that, or delete {intent_path(self.path)} to go on without "
                    "settling)"
                ) from None
            yield

    def read(self) -> MemorySnapshot:
        """The whole file; missing reads as empty (stamp None).

        Raises:
            AgentError: the file is refused, exists but cannot be read, or is not a regular
                file; nothing was read.
        """
        place = self.place()
        try:
            content, stamp = read_regular(
                place.real,
                check=lambda status: check_own(self.path, status, place.shared),
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
        """Apply ``plan`` to the file that ``snapshot`` was read from: the removed bytes
        appended to the archive first if ``archive``, then the file replaced by its tail
        (see :mod:`.durable`). Ctrl-C and SIGTERM wait until it is done. Returns a clause
        for a warning when a program still holds the old file open for writing.

        Raises:
            AgentError: nothing was changed (or, after the rename, late appends were lost).
        """
        with signals_deferred():
            source = self._open_to_trim(self.place())
            try:
                held = self._trim(source, snapshot, plan, archive=archive)
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
        if not held:
            return None
        return (
            f"a program still had {self.path} open for writing after gc waited "
            f"{DRAIN_SECONDS:g}s for it; what it writes there from now on goes to the replaced "
            "file, not to the trimmed one"
        )

    def _open_to_trim(self, place: Place) -> SourceFile:
        try:
            fd, status = open_regular(place.real, nofollow=place.shared is not None)
        except FileNotFoundError:
            raise AgentError(
                f"memory file {self.path} disappeared before it could be trimmed; "
                "nothing was changed"
            ) from None
        except OSError as error:
            raise AgentError(
                f"cannot open memory file {self.path} to trim it: {describe_os_error(error)}"
            ) from None
        try:
            check_own(self.path, status, place.shared)
        except AgentError:
            os.close(fd)
            raise
        return SourceFile(self, place, fd, status)

    def _trim(
        self, source: SourceFile, snapshot: MemorySnapshot, plan: TrimPlan, *, archive: bool
    ) -> bool:
        self._check_unchanged(source, snapshot, plan.keep_from)
        remove_abandoned_temps(self)
        with contextlib.ExitStack() as archived:  # undone if the trim fails before the rename
            if archive and plan.keep_from:  # sliced only then: a copy of all but the tail
                self._archive(archived, snapshot.content[: plan.keep_from], source.status)
            if self.platform.replace_needs_closed_files:
                return replace_closed(source, plan.keep_from)
            return replace_open(source, plan.keep_from)

    def _check_unchanged(self, source: SourceFile, snapshot: MemorySnapshot, cut: int) -> None:
        """Refuse a file that is no longer the one read plus appends: another file by now (an
        editor's save by rename), a shorter one, or one rewritten in place so that the bytes
        around the cut moved. A trim at a stale offset would cut through somebody's text."""
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
            AgentError: it cannot be appended, or gc does not trust it; the archive is as it
                was, the memory file untouched.
        """
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
