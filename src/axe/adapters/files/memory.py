"""Memory logs as files: ``<data dir>/memory/<name>.md`` or the agent's ``memory.path``."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from axe.adapters.files.archive import archive_path, archive_removed
from axe.adapters.files.durable import LateAppendError, remove_abandoned_temps, replace_with_tail
from axe.adapters.files.reading import FileStamp, describe_os_error, open_regular, read_regular
from axe.domain.entries import MemorySnapshot, TrimPlan
from axe.domain.errors import AgentError, ConfigError
from axe.domain.model import AgentConfig, quoted, validate_agent_name


class FileMemoryStore:
    """Reads memory files whole and trims them durably (see :mod:`.durable`)."""

    def __init__(
        self,
        data_dir: Callable[[], Path],
        *,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._data_dir = data_dir
        self._sleep = sleep
        self._clock = clock

    def path_for(self, agent: AgentConfig) -> Path:
        """Where ``agent``'s memory lives.

        Raises:
            ConfigError: a relative or malformed ``memory.path``, a hostile agent name, or
                no data directory.
        """
        custom = agent.memory.path
        if custom:
            expanded = os.path.expanduser(custom)
            if "\0" in custom or not os.path.isabs(expanded):
                raise ConfigError(
                    f"memory.path {quoted(custom)} of agent {quoted(agent.name)} is not an "
                    "absolute path; use an absolute path such as /home/me/agent-memory.md"
                )
            return Path(expanded)
        validate_agent_name(agent.name)
        return self._data_dir() / "memory" / f"{agent.name}.md"

    def read(self, agent: AgentConfig) -> MemorySnapshot:
        path = self.path_for(agent)
        try:
            content, stamp = read_regular(path)
        except FileNotFoundError:
            return MemorySnapshot(content=b"", stamp=None)
        except OSError as error:
            raise AgentError(
                f"cannot read memory file {path}: {describe_os_error(error)}"
            ) from None
        except MemoryError:
            raise AgentError(f"cannot read memory file {path}: not enough memory") from None
        return MemorySnapshot(content=content, stamp=stamp)

    def trim(
        self, agent: AgentConfig, snapshot: MemorySnapshot, plan: TrimPlan, *, archive: bool
    ) -> None:
        path = self.path_for(agent)
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
        try:
            self._check_unchanged(path, status, snapshot)
            remove_abandoned_temps(target)
            if archive:
                self._archive(path, snapshot.content[: plan.keep_from])
            replace_with_tail(
                fd, status, target, plan.keep_from, sleep=self._sleep, clock=self._clock
            )
        except LateAppendError as error:
            raise AgentError(
                f"trimmed memory file {path}, but {error.size} bytes appended during the trim "
                f"could not be added back: {describe_os_error(error)}"
            ) from None
        except OSError as error:
            raise AgentError(
                f"cannot trim memory file {path}: {describe_os_error(error)}; "
                "the file was not changed"
            ) from None
        finally:
            os.close(fd)

    @staticmethod
    def _check_unchanged(path: Path, status: os.stat_result, snapshot: MemorySnapshot) -> None:
        stamp = snapshot.stamp
        if not isinstance(stamp, FileStamp):
            return
        if (status.st_dev, status.st_ino) != (stamp.device, stamp.inode):
            raise AgentError(
                f"memory file {path} was replaced while gc was running; not trimmed (run gc again)"
            )
        if status.st_size < stamp.size:
            raise AgentError(
                f"memory file {path} shrank while gc was running; not trimmed (run gc again)"
            )

    @staticmethod
    def _archive(path: Path, removed: bytes) -> None:
        destination = archive_path(path)
        try:
            archive_removed(destination, removed)
        except OSError as error:
            raise AgentError(
                f"cannot archive removed entries to {destination}: "
                f"{describe_os_error(error)}; the memory file was not changed"
            ) from None
