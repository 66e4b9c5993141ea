"""The record ``--skip-unchanged`` reads: what gc left in a memory file when it last analysed
it (:class:`~axe.domain.analysed.AnalysedMemory`), in ``.<name>.axe-gc.analysed`` beside the
resolved file, as one line of JSON.

It is only ever a reason to skip, so any doubt about it reads as no record, and deleting it
only costs the next run an analysis. It is written under the memory file's lock, to a temp
file renamed over the old record (a reader sees one whole record or the other), and not
flushed: a skip also needs the memory file's digest to match, so a record a power cut loses
or cuts only costs an analysis. It is opened as every side file is (:mod:`.side_files`), and
in a shared directory none is written and none is read: anyone there could forge one. An
archive intent left by a stopped ``--archive`` also reads as no record, so the gc that
settles it is never skipped.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from axe.adapters.memory.durable import (
    remove_abandoned_temps,
    remove_quietly,
    signals_deferred,
    write_temp,
)
from axe.adapters.memory.paths import intent_path, sidecar
from axe.adapters.memory.side_files import HandledFile
from axe.adapters.shared.reading import describe_os_error, read_regular
from axe.domain.analysed import AnalysedMemory
from axe.domain.errors import AgentError

_LARGEST = 4096  # a record is about 150 bytes; anything much larger is not one
_LATEST = 253_402_300_799  # 9999-12-31T23:59:59Z
_FIELDS = {"size": int, "sha256": str, "model": str, "at": float}


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
    remove_abandoned_temps(file)
    try:
        # Ctrl-C or SIGTERM waits for the record, as for a trim: between these two steps it
        # would leave the new record in its temp file.
        with signals_deferred():
            temp = write_temp(place.real, (data + "\n").encode(), platform=file.platform)
            try:
                file.platform.replace(temp, record_path(place.real))
            except BaseException:
                remove_quietly(temp)
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
