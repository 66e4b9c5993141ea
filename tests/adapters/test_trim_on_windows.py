"""The trim's Windows branch, run on Linux under Windows' rule (gc-spec Constraint 10).

Windows refuses to rename over, or link, a file that any handle holds open. The shim in
``tests.platform_substitutes`` enforces that against the real descriptors of this process,
so these tests see what a Windows user would: the file's bytes, the one-line error, and
what is left in the directory.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from axe.adapters.memory.durable import remove_abandoned_temps, temp_prefix
from axe.adapters.memory.platforms import FilePlatform, platform_for
from axe.adapters.memory.store import MemoryFile
from axe.domain.entries import plan_trim
from axe.domain.errors import AgentError
from axe.testing import FakeClock
from tests.platform_substitutes import Holder, WindowsRules
from tests.support import entries, entry

IN_USE = "The process cannot access the file because it is being used by another process"


@pytest.fixture
def memory(tmp_path: Path) -> Path:
    path = tmp_path / "m.md"
    path.write_bytes(entries(5))
    return path


@pytest.fixture
def holders() -> Iterator[list[Holder]]:
    """Holders a test creates; any still holding the file let go when it ends."""
    created: list[Holder] = []
    yield created
    for holder in created:
        holder.let_go()


def hold(memory: Path, holders: list[Holder], **kwargs: object) -> Holder:
    holder = Holder(memory, **kwargs)  # type: ignore[arg-type]
    holders.append(holder)
    return holder


def trim_to_two(memory: Path, platform: FilePlatform, clock: FakeClock | None = None) -> None:
    file = MemoryFile(memory, platform=platform, clock=FakeClock() if clock is None else clock)
    snapshot = file.read()
    file.trim(snapshot, plan_trim(snapshot.content, 2), archive=False)


def files_in(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def append(memory: Path, data: bytes) -> None:
    """What `axe run` does: open for appending, one write, close."""
    fd = os.open(memory, os.O_WRONLY | os.O_APPEND)
    os.write(fd, data)
    os.close(fd)


def test_the_shim_refuses_what_windows_refuses(memory: Path) -> None:
    """The POSIX branch, which keeps the file open across the rename, fails under the shim
    exactly as it would on Windows: so the shim bites, and the Windows branch is needed."""
    rules = WindowsRules()
    with pytest.raises(AgentError) as caught:
        trim_to_two(memory, rules.platform(base="darwin"))
    assert str(caught.value) == (
        f"cannot trim memory file {memory}: {IN_USE}; the file was not changed"
    )
    assert memory.read_bytes() == entries(5)
    assert files_in(memory.parent) == ["m.md"]


def test_under_windows_rules_the_file_is_trimmed_with_nothing_left_behind(memory: Path) -> None:
    """On Windows gc closes every handle before the rename: the trim succeeds at the first
    attempt, the kept bytes are exact and no temp file or sidecar remains."""
    rules = WindowsRules()
    trim_to_two(memory, rules.platform())
    assert memory.read_bytes() == entries(2, start=3)
    assert (rules.replaced, rules.refusals) == (1, 0)
    assert files_in(memory.parent) == ["m.md"]


def test_a_scanner_holding_the_file_for_a_moment_is_waited_out(
    memory: Path, holders: list[Holder]
) -> None:
    """A virus scanner or indexer that holds the file for a few milliseconds makes the
    rename fail a few times; gc retries with short pauses and trims (the pauses and the
    20 ms watch for late writers stay far below a second)."""
    hold(memory, holders, refusals=3)
    rules = WindowsRules(holder=holders[0])
    clock = FakeClock()
    trim_to_two(memory, rules.platform(), clock)
    assert memory.read_bytes() == entries(2, start=3)
    assert (rules.refusals, rules.replaced) == (3, 1)
    assert clock.monotonic() < 0.05
    assert files_in(memory.parent) == ["m.md"]


def test_a_file_held_for_good_gives_up_after_two_seconds_unchanged(
    memory: Path, holders: list[Holder]
) -> None:
    """A program that keeps the file open: after two seconds of retries, the usual one-line
    error, and the file is exactly as it was, with no temp file or sidecar left."""
    hold(memory, holders, refusals=None)
    before = os.stat(memory)
    rules = WindowsRules(holder=holders[0])
    clock = FakeClock()
    with pytest.raises(AgentError) as caught:
        trim_to_two(memory, rules.platform(), clock)
    assert str(caught.value) == (
        f"cannot trim memory file {memory}: {IN_USE}; the file was not changed"
    )
    assert 1.9 <= clock.monotonic() <= 2.0
    assert memory.read_bytes() == entries(5)
    assert os.stat(memory).st_ino == before.st_ino
    assert files_in(memory.parent) == ["m.md"]


def test_an_entry_appended_between_the_last_copy_and_the_rename_is_kept(memory: Path) -> None:
    """An `axe run` appends after gc copied the file and before the rename: the entry
    reaches the old file only, and is carried into the new one, once."""

    def axe_run_appends(call: str) -> None:
        if call == "replace" and rules.replaced == 0:
            append(memory, entry(77))

    rules = WindowsRules(on_call=axe_run_appends)
    trim_to_two(memory, rules.platform())
    assert memory.read_bytes() == entries(2, start=3) + entry(77)
    assert files_in(memory.parent) == ["m.md"]


def test_a_writer_that_held_up_the_rename_has_its_entry_kept(
    memory: Path, holders: list[Holder]
) -> None:
    """An `axe run` that had the file open makes gc wait; the entry it then writes into
    the old file is carried over."""
    hold(memory, holders, refusals=2, then_writes=entry(77))
    rules = WindowsRules(holder=holders[0])
    trim_to_two(memory, rules.platform())
    assert memory.read_bytes() == entries(2, start=3) + entry(77)
    assert files_in(memory.parent) == ["m.md"]


def test_without_hard_links_entries_written_while_gc_waits_are_kept(
    memory: Path, holders: list[Holder]
) -> None:
    """On a filesystem without hard links (FAT, some shares) gc copies what the old file
    gained before each attempt, so a writer that held up the rename loses nothing."""
    hold(memory, holders, refusals=2, then_writes=entry(77))
    rules = WindowsRules(holder=holders[0], links=False)
    trim_to_two(memory, rules.platform())
    assert memory.read_bytes() == entries(2, start=3) + entry(77)
    assert files_in(memory.parent) == ["m.md"]


def test_without_hard_links_an_entry_in_the_last_instant_is_lost(memory: Path) -> None:
    """The documented limit without hard links: an entry appended between gc's last read
    and the rename itself is lost (gc-spec §5.1's accepted race, narrowed to that instant)."""

    def axe_run_appends(call: str) -> None:
        if call == "replace":
            append(memory, entry(77))

    rules = WindowsRules(on_call=axe_run_appends, links=False)
    trim_to_two(memory, rules.platform())
    assert memory.read_bytes() == entries(2, start=3)
    assert files_in(memory.parent) == ["m.md"]


def test_a_file_replaced_by_another_program_during_the_trim_is_left_alone(memory: Path) -> None:
    """Another program saves a new version of the file after gc closed it: gc notices
    before renaming, keeps the other program's file and leaves nothing behind."""
    theirs = entries(3, start=100)

    def editor_saves(call: str) -> None:
        if call == "link":
            saved = memory.with_name("saved")
            saved.write_bytes(theirs)
            os.replace(saved, memory)

    rules = WindowsRules(on_call=editor_saves)
    with pytest.raises(AgentError) as caught:
        trim_to_two(memory, rules.platform())
    assert str(caught.value) == (
        f"memory file {memory} was replaced while gc was running; not trimmed (run gc again)"
    )
    assert memory.read_bytes() == theirs
    assert files_in(memory.parent) == ["m.md"]


def test_a_sidecar_left_by_a_killed_gc_is_removed_once_it_is_an_hour_old(memory: Path) -> None:
    """Windows cannot ask whether a pid lives (signal 0 is Ctrl-C there), so a sidecar or
    temp file of a killed gc is removed by age alone; POSIX removes it as soon as its pid
    is gone. Either way only a name goes: the memory file keeps its bytes."""
    prefix = temp_prefix(memory)
    young = memory.with_name(f"{prefix}999999999-abcd-old.tmp")  # killed before its rename
    os.link(memory, young)
    old = memory.with_name(f"{prefix}999999999-ef01-old.tmp")  # killed after: the old file
    old.write_bytes(entries(5))
    an_hour_and_more = time.time() - 3700
    os.utime(old, (an_hour_and_more, an_hour_and_more))
    windows = MemoryFile(memory, platform=WindowsRules().platform())
    assert remove_abandoned_temps(windows) == [old]
    assert files_in(memory.parent) == sorted(["m.md", young.name])
    linux = MemoryFile(memory, platform=platform_for("linux", fcntl=None))
    assert remove_abandoned_temps(linux) == [young]
    assert memory.read_bytes() == entries(5)
