"""The record ``--skip-unchanged`` reads: what gc left in a memory file when it last analysed
it (:class:`~axe.domain.analysed.AnalysedMemory`), in ``.<name>.axe-gc.analysed`` beside the
resolved file, as one line of JSON.

It is only ever a reason to skip, so any doubt about it reads as no record, and deleting it
only costs the next run an analysis:

- It is written under the memory file's lock, atomically (the old record moved aside, a
  temp file renamed into its place), so a reader sees a whole record, the one before, or
  none (which means an analysis). It is not flushed to disk: a
  skip needs the memory file's digest to match, so a record lost or cut by a power failure
  only costs an analysis.
- Never through a symlink: it sits beside the resolved real path; a new record replaces a
  link of that name rather than following it, and a record is opened with ``O_NOFOLLOW``.
- Never where another user could have written it: in a directory that group or others may
  write to, none is written and none is read, and one that is not the user's own regular
  file is not read. (Windows has no mode bits or user ids the standard library can read;
  there the record is as safe as the lock and temp files beside it.)
- Never mistaken for memory: hidden, not ending in ``.md``. An archive intent left by a
  stopped ``--archive`` also reads as no record, so the gc that settles it is never skipped.
"""

from __future__ import annotations

import functools
import json
import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from axe.adapters.memory.durable import new_temp, remove_quietly, signals_deferred, write_temp
from axe.adapters.memory.paths import intent_path, sidecar
from axe.adapters.memory.releases import release
from axe.adapters.shared.reading import describe_os_error, read_regular
from axe.domain.analysed import AnalysedMemory

if TYPE_CHECKING:
    from axe.adapters.memory.platforms import HandledFile

_LARGEST = 4096  # a record is about 150 bytes; anything much larger is not one
_WRITABLE_BY_OTHERS = stat.S_IWGRP | stat.S_IWOTH
_LATEST = 253_402_300_799  # 9999-12-31T23:59:59Z
_FIELDS = {"size": int, "sha256": str, "model": str, "at": float}


def record_path(real: Path) -> Path:
    """The record of the memory file whose resolved path is ``real``."""
    return sidecar(real, ".analysed")


def read_record(file: HandledFile) -> AnalysedMemory | None:
    """The record beside ``file``, or None: none, unreadable, not whole, not the user's, in
    a directory others can write, or an archive left to settle."""
    real = _resolved(file)
    if not _private(real.parent) or os.path.lexists(intent_path(file.path)):
        return None
    try:
        text, _ = read_regular(record_path(real), limit=_LARGEST, check=_yours, nofollow=True)
    except (OSError, ValueError):
        return None
    return _parse(text)


def write_record(file: HandledFile, record: AnalysedMemory) -> str | None:
    """Replace the record beside ``file`` with ``record`` (the caller holds the file's
    lock), or leave no record where it cannot be written safely (see the module docstring)
    and say why: an ``OSError`` only costs a later run an analysis, and is not raised."""
    real = _resolved(file)
    if not _private(real.parent):
        return f"{real.parent} is writable by others, who could forge a record there"
    data = json.dumps(
        {"size": record.size, "sha256": record.sha256, "model": record.model, "at": record.at}
    )
    file.remove_abandoned_temps()
    aside, size = None, 0
    try:
        # Ctrl-C or SIGTERM waits for the record, as for a trim: between two of these steps
        # it would leave the new record in its temp file.
        with signals_deferred():
            temp = write_temp(real, (data + "\n").encode(), platform=file.platform)
            try:
                # Renamed into an empty place: ext4 flushes a file renamed over another to
                # disk first (auto_da_alloc), 8 times the time of the rest; a record whole or
                # absent is all a reader needs, absent meaning an analysis. The old one is set
                # aside under a temp name (a killed gc's is removed later) and freed through
                # the store's releases.
                aside, size = _set_aside(real)
                file.platform.replace(temp, record_path(real))
            except BaseException:
                remove_quietly(temp)
                raise
    except OSError as error:
        return f"cannot write {record_path(real)}: {describe_os_error(error)}"
    finally:
        if aside is not None:
            release(file.releases, functools.partial(remove_quietly, aside), size)
    return None


def _set_aside(real: Path) -> tuple[Path | None, int]:
    """Move the record of ``real`` to a temp name beside it, which is returned with its
    size; None when there is none, or it is a directory, or it cannot be moved: the new
    record is then renamed over whatever is there (a directory stays, and no record is
    written)."""
    record, aside = record_path(real), new_temp(real)
    try:
        status = os.lstat(record)
        if stat.S_ISDIR(status.st_mode):
            return None, 0
        os.rename(record, aside)
    except OSError:
        return None, 0
    return aside, status.st_size


def _resolved(file: HandledFile) -> Path:
    """The memory file's path with a final symlink resolved: the directory entry its record
    goes beside. A path that is no link already names it (a linked directory on the way
    leads to the same directory), and needs no walk of every component."""
    try:
        linked = stat.S_ISLNK(os.lstat(file.path).st_mode)
    except OSError:
        linked = True  # let the full resolution decide
    return file.real if linked else file.path


def _private(directory: Path) -> bool:
    """Whether only its owner may add or replace files in ``directory`` (always where there
    are no mode bits to read: Windows)."""
    if not hasattr(os, "geteuid"):
        return True
    try:
        mode = os.stat(directory).st_mode
    except OSError:
        return False
    return not mode & _WRITABLE_BY_OTHERS


def _yours(status: os.stat_result) -> None:
    """Refuses a record someone else wrote: only the user's own is trusted."""
    if hasattr(os, "geteuid") and status.st_uid != os.geteuid():
        raise PermissionError("not your own record")


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
