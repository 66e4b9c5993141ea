"""The ``--skip-unchanged`` record on disk: where it lives, how it is written, and every
reason it is not trusted (each one means the next run analyses the file)."""

from __future__ import annotations

import errno
import json
import os
import signal
from pathlib import Path

import attrs
import pytest

from axe.adapters.memory.paths import intent_path
from axe.adapters.memory.platforms import current_platform
from axe.adapters.memory.store import (
    FileMemoryStore,
    MemoryFile,
    read_record,
    record_path,
    write_record,
)
from axe.domain.analysed import AnalysedMemory
from axe.domain.model import ModelRef
from axe.testing import make_agent
from tests.platform_substitutes import WindowsRules
from tests.support import entries

RECORD = AnalysedMemory.of(entries(3), model=ModelRef("ollama", "m"), at=1_795_608_000.0)
WHOLE = json.dumps({"size": 3, "sha256": "ab" * 32, "model": "ollama/m", "at": 1.5})


@pytest.fixture
def memory(tmp_path: Path) -> MemoryFile:
    directory = tmp_path / "memory"
    directory.mkdir(mode=0o700)
    path = directory / "helper.md"
    path.write_bytes(entries(3))
    return MemoryFile(path)


def names(directory: Path) -> list[str]:
    return sorted(os.listdir(directory))


def test_the_record_is_a_hidden_file_beside_the_memory_file(memory: MemoryFile) -> None:
    """One hidden file, not ending in .md (neither axe reads it as memory), private to its
    owner, holding one line of JSON, and read back as written."""
    write_record(memory, RECORD)
    assert names(memory.path.parent) == [".helper.md.axe-gc.analysed", "helper.md"]
    record = record_path(memory.path)
    assert oct(record.stat().st_mode & 0o777) == "0o600"
    assert record.read_bytes().count(b"\n") == 1
    assert read_record(memory) == RECORD


def test_a_symlinked_memory_file_has_its_record_beside_the_target(
    memory: MemoryFile, tmp_path: Path
) -> None:
    """The record belongs to the real file, as the lock does: nothing is written through
    the link's directory, and the link and its target share one record."""
    links = tmp_path / "links"
    links.mkdir(mode=0o700)
    (links / "helper.md").symlink_to(memory.path)
    write_record(MemoryFile(links / "helper.md"), RECORD)
    assert names(links) == ["helper.md"]
    assert read_record(memory) == RECORD


def test_a_symlink_at_the_records_name_is_never_followed(
    memory: MemoryFile, tmp_path: Path
) -> None:
    """A link planted where the record goes is neither read nor written through: the
    record replaces the link, and the file it pointed at keeps its bytes."""
    victim = tmp_path / "victim"
    victim.write_text(WHOLE)
    record = record_path(memory.path)
    record.symlink_to(victim)
    assert read_record(memory) is None
    write_record(memory, RECORD)
    assert (record.is_symlink(), victim.read_text()) == (False, WHOLE)
    assert read_record(memory) == RECORD


@pytest.mark.parametrize("mode", [0o777, 0o1777, 0o770, 0o720])
def test_no_record_in_a_directory_others_can_write(memory: MemoryFile, mode: int) -> None:
    """Where group or others may write (a sticky /tmp too), a record could be anybody's:
    none is written, and one already there is not read, so nothing is ever skipped."""
    write_record(memory, RECORD)
    memory.path.parent.chmod(mode)
    assert read_record(memory) is None
    record_path(memory.path).unlink()
    assert write_record(memory, RECORD) == (
        f"{memory.path.parent} is writable by others, who could forge a record there"
    )
    assert names(memory.path.parent) == ["helper.md"]


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a file to another user")
def test_another_users_record_is_not_trusted(memory: MemoryFile) -> None:
    """A record that is not the user's own file is not read."""
    write_record(memory, RECORD)
    os.chown(record_path(memory.path), 65534, 65534)
    assert read_record(memory) is None


@pytest.mark.parametrize(
    "text",
    [
        b"",
        WHOLE[:-5].encode(),  # cut short
        b"\xff\xfe{}",
        b"null",
        b"[1, 2]",
        WHOLE.replace('"at"', '"when"').encode(),
        WHOLE.replace("}", ', "extra": 1}').encode(),
        WHOLE.replace('"size": 3', '"size": "3"').encode(),
        WHOLE.replace('"size": 3', '"size": true').encode(),
        WHOLE.replace('"size": 3', '"size": -3').encode(),
        WHOLE.replace('"size": 3', '"size": 3.0').encode(),
        WHOLE.replace('"ollama/m"', "5").encode(),
        WHOLE.replace("1.5", "NaN").encode(),
        WHOLE.replace("1.5", "1e300").encode(),
        WHOLE.replace("1.5", "-1").encode(),
        WHOLE.replace("1.5", '"2026-11-25T12:00:00Z"').encode(),
        WHOLE.replace("}", "}" + " " * 5000).encode(),  # huge: no record is that large
        WHOLE.replace("}", ', "budget": 20000}').encode(),  # a budget without its count
        WHOLE.replace("}", ', "analysed": 7}').encode(),
        WHOLE.replace("}", ', "budget": 20000, "analysed": "7"}').encode(),
        WHOLE.replace("}", ', "budget": 20000, "analysed": -7}').encode(),
    ],
)
def test_a_record_that_is_not_whole_and_well_formed_is_no_record(
    memory: MemoryFile, text: bytes
) -> None:
    """Bad JSON, a missing, extra or mistyped field, an impossible size or time, bytes
    that are not text, a size no record has: not trusted (the next run analyses)."""
    record_path(memory.path).write_bytes(text)
    assert read_record(memory) is None


def test_the_well_formed_record_of_those_is_read(memory: MemoryFile) -> None:
    """The one the refusals above are cut from is a record (an integer time included)."""
    record_path(memory.path).write_text(WHOLE)
    assert read_record(memory) == AnalysedMemory(size=3, sha256="ab" * 32, model="ollama/m", at=1.5)
    record_path(memory.path).write_text(WHOLE.replace("1.5", "2"))
    assert read_record(memory) == AnalysedMemory(size=3, sha256="ab" * 32, model="ollama/m", at=2)


def test_a_record_a_budget_narrowed_says_the_budget_and_the_entries_analysed(
    memory: MemoryFile,
) -> None:
    """The two extra fields are written only when a budget left entries out, and read back."""
    narrowed = attrs.evolve(RECORD, budget=20_000, analysed=2)
    write_record(memory, narrowed)
    assert json.loads(record_path(memory.path).read_bytes())["analysed"] == 2
    assert read_record(memory) == narrowed
    write_record(memory, RECORD)
    assert "budget" not in json.loads(record_path(memory.path).read_bytes())


@pytest.mark.parametrize("kind", ["directory", "fifo"])
def test_something_else_at_the_records_name_is_no_record(memory: MemoryFile, kind: str) -> None:
    """A directory or a FIFO where the record goes is no record, and reading never hangs;
    a record replaces the FIFO, and leaves a directory (which it cannot replace) alone."""
    record = record_path(memory.path)
    record.mkdir() if kind == "directory" else os.mkfifo(record)
    assert read_record(memory) is None
    write_record(memory, RECORD)
    assert read_record(memory) == (None if kind == "directory" else RECORD)
    assert [name for name in names(memory.path.parent) if name.endswith(".tmp")] == []


def test_an_archive_left_to_settle_is_no_record(memory: MemoryFile) -> None:
    """A stopped `gc --archive` left its intent record: the next gc must take the lock and
    settle it, so it is never skipped."""
    write_record(memory, RECORD)
    intent_path(memory.path).write_text("{}")
    assert read_record(memory) is None


def test_a_failed_write_keeps_the_old_record_and_leaves_no_temp(memory: MemoryFile) -> None:
    """The record is replaced atomically: a write that fails (here the write itself, EIO)
    leaves the earlier record whole and no temp file, and raises nothing."""
    write_record(memory, RECORD)

    def failing_write(fd: int, data: memoryview) -> int:
        raise OSError(errno.EIO, "Input/output error")

    broken = MemoryFile(memory.path, platform=attrs.evolve(current_platform(), write=failing_write))
    other = AnalysedMemory.of(b"other", model=ModelRef("ollama", "m"), at=2.0)
    assert write_record(broken, other) == (
        f"cannot write {record_path(memory.path)}: Input/output error"
    )
    assert read_record(memory) == RECORD
    assert names(memory.path.parent) == [".helper.md.axe-gc.analysed", "helper.md"]


def test_ctrl_c_while_the_record_is_written_comes_after_it(memory: MemoryFile) -> None:
    """A Ctrl-C (or SIGTERM) that arrives while the record is written interrupts gc once the
    new record is in place: no temp file is left with it, and no old record set aside."""
    write_record(memory, RECORD)

    def interrupted_write(fd: int, data: memoryview) -> int:
        signal.raise_signal(signal.SIGINT)
        return os.write(fd, data)

    stopped = MemoryFile(
        memory.path, platform=attrs.evolve(current_platform(), write=interrupted_write)
    )
    other = AnalysedMemory.of(b"other", model=ModelRef("ollama", "m"), at=2.0)
    with pytest.raises(KeyboardInterrupt):
        write_record(stopped, other)
    assert read_record(memory) == other
    assert names(memory.path.parent) == [".helper.md.axe-gc.analysed", "helper.md"]


def test_temps_a_killed_run_left_are_removed(memory: MemoryFile) -> None:
    """A temp file of a process that is gone (killed between write and rename) is removed
    by the next record written, as a trim removes its own."""
    abandoned = memory.path.with_name(".helper.md.axe-gc-999999999-0badcafe.tmp")
    abandoned.write_text(WHOLE)
    write_record(memory, RECORD)
    assert names(memory.path.parent) == [".helper.md.axe-gc.analysed", "helper.md"]


def test_a_record_that_cannot_be_renamed_into_place_keeps_the_old_one_and_leaves_no_temp(
    memory: MemoryFile,
) -> None:
    """The new record is renamed over the old one; when that rename fails, the new temp is
    removed, the old record stays whole (it no longer matches a trimmed file, so the next run
    analyses), and the reason is said."""
    write_record(memory, RECORD)

    def refused(source: Path, target: Path) -> None:
        raise OSError(errno.EIO, "Input/output error")

    failing = MemoryFile(memory.path, platform=attrs.evolve(current_platform(), replace=refused))
    other = AnalysedMemory.of(b"other", model=ModelRef("ollama", "m"), at=2.0)
    said = write_record(failing, other)
    assert said == f"cannot write {record_path(memory.path)}: Input/output error"
    assert read_record(memory) == RECORD
    assert names(memory.path.parent) == [".helper.md.axe-gc.analysed", "helper.md"]


def test_where_permissions_are_access_lists_the_record_is_kept(memory: MemoryFile) -> None:
    """Windows has no mode bits or owners to read (its access lists decide), so no
    directory counts as one others can write: `--skip-unchanged` writes and reads its
    record there, here in a directory whose mode bits would say otherwise on POSIX."""
    memory.path.parent.chmod(0o777)
    windows = MemoryFile(memory.path, platform=WindowsRules().platform())
    assert write_record(windows, RECORD) is None
    assert read_record(windows) == RECORD
    assert read_record(memory) is None  # the same directory, by POSIX rules


@pytest.mark.parametrize("directory", [True, False], ids=["no file", "no directory"])
def test_no_memory_file_yet_is_no_record_and_no_error(tmp_path: Path, directory: bool) -> None:
    """An agent whose memory file does not exist yet (nor, maybe, its directory) has no
    record: `--skip-unchanged` goes on to say there are no entries."""
    store = FileMemoryStore(lambda: tmp_path)
    if directory:
        (tmp_path / "memory").mkdir()
    assert store.analysed(make_agent("new", last_n=2)) is None
