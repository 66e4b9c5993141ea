"""One memory file, and everything a gc does to it: lock (and settle), read, trim (and archive).
The sentences a user reads when one of these fails are written here; the steps are in
:mod:`.lock`, :mod:`.durable`, :mod:`.archive`, :mod:`.side_files`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from axe.adapters.memory import durable
from axe.adapters.memory.archive import archiving, settle_archive
from axe.adapters.memory.durable import LateAppendError, ReplacedDuringTrimError, SourceFile
from axe.adapters.memory.lock import MemoryFileLocks
from axe.adapters.memory.paths import archive_path, intent_path
from axe.adapters.memory.platforms import FilePlatform, current_platform
from axe.adapters.memory.side_files import Place, locate
from axe.adapters.shared import reading
from axe.adapters.shared.clock import SystemClock
from axe.adapters.shared.reading import describe_os_error
from axe.application.ports import Clock
from axe.domain.entries import MemorySnapshot, TrimPlan
from axe.domain.errors import AgentError

_CUT_CONTEXT = 256  # bytes each side of the cut that must be as read for a trim to go ahead


class MemoryFile:
    """The memory file at ``path`` as the agent names it (a symlink outside a shared
    directory stays a link; its target is replaced), by the rules of ``platform``."""

    def __init__(
        self, path: Path, *, platform: FilePlatform | None = None, clock: Clock | None = None
    ) -> None:
        self.path = path
        self.platform = platform or current_platform()
        self.clock = clock or SystemClock()

    def place(self) -> Place:
        """Where the file really is, and the rules beside it (:func:`.side_files.locate`)."""
        return locate(self.path, self.platform)

    @contextlib.contextmanager
    def locked(
        self, locks: MemoryFileLocks, *, agent: str, waiting: Callable[[int | None], None]
    ) -> Iterator[None]:
        """Hold the file's lock for the block, having first settled the archiving a stopped
        gc left. Raises AgentError (nothing changed) for a file refused, a lock not had in
        time, or an archive that cannot be settled."""
        with locks.hold(self.path, agent=agent, waiting=waiting, place=self.place()):
            try:
                settle_archive(self)
            except OSError as error:
                reason = str(error) if isinstance(error, reading.NotRegularFileError) else None
                raise AgentError(
                    f"cannot settle the archive {archive_path(self.path)} that an interrupted "
                    f"gc left: {reason or describe_os_error(error)}; the memory file was not "
                    f"changed (fix that, or delete {intent_path(self.path)} to go on without "
                    "settling)"
                ) from None
            yield

    def read(self) -> MemorySnapshot:
        """The whole file; missing reads as empty (stamp None). Raises AgentError for a file
        refused, unreadable, or not a regular file."""
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
        """Apply ``plan`` to the file ``snapshot`` was read from: the removed bytes archived
        first if ``archive``, then the file replaced by its tail; Ctrl-C and SIGTERM wait.
        Returns a warning's clause when a program still holds the old file open for writing.
        Raises AgentError: nothing was changed (or, after the rename, late appends were lost).
        """
        with durable.signals_deferred():
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
            f"{durable.DRAIN_SECONDS:g}s for it; what it writes there from now on goes to the "
            "replaced file, not to the trimmed one"
        )

    def _open_to_trim(self, place: Place) -> SourceFile:
        try:
            fd, status = reading.open_regular(place.real, nofollow=place.shared is not None)
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
            place.mine(self.path, status)
        except AgentError:
            os.close(fd)
            raise
        return SourceFile(self, place, fd, status)

    def _trim(
        self, source: SourceFile, snapshot: MemorySnapshot, plan: TrimPlan, *, archive: bool
    ) -> bool:
        self._check_unchanged(source, snapshot, plan.keep_from)
        durable.remove_abandoned_temps(self)
        with contextlib.ExitStack() as archived:  # undone if the trim fails before the rename
            if archive and plan.keep_from:  # sliced only then: a copy of all but the tail
                self._archive(archived, snapshot.content[: plan.keep_from], source.status)
            if self.platform.replace_needs_closed_files:
                return durable.replace_closed(source, plan.keep_from)
            return durable.replace_open(source, plan.keep_from)

    def _check_unchanged(self, source: SourceFile, snapshot: MemorySnapshot, cut: int) -> None:
        """Refuse a file that is no longer the one read plus appends (replaced, shorter, or
        rewritten around the cut): a trim at a stale offset would cut through someone's text."""
        stamp, status = snapshot.stamp, source.status
        if not isinstance(stamp, reading.FileStamp):
            return
        if (status.st_dev, status.st_ino) != (stamp.device, stamp.inode):
            raise self._changed("was replaced")
        if status.st_size < stamp.size:
            raise self._changed("shrank")
        start, end = max(cut - _CUT_CONTEXT, 0), min(cut + _CUT_CONTEXT, stamp.size)
        if durable.pread(source.fd, end - start, start) != snapshot.content[start:end]:
            raise self._changed("was rewritten")

    def _archive(
        self, stack: contextlib.ExitStack[bool | None], removed: bytes, status: os.stat_result
    ) -> None:
        """Append ``removed`` to the archive for the rest of ``stack``. Raises AgentError if
        it cannot be appended or gc does not trust it (nothing was changed)."""
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
