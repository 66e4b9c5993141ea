"""One MemoryStore contract, held by the file store and by axe.testing's fake alike.

If the fake drifts from what ``FileMemoryStore`` does, an embedder's tests would pass on
behaviour production does not have; this suite fails first.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Protocol

import pytest

from axe.adapters.memory.store import FileMemoryStore, record_path
from axe.adapters.shared.clock import SystemClock
from axe.application.ports import Clock, MemoryStore
from axe.domain.analysed import AnalysedMemory
from axe.domain.entries import plan_trim
from axe.domain.errors import AgentError
from axe.domain.model import AgentConfig, ModelRef
from axe.testing import FakeClock, FakeMemoryStore, make_agent
from tests.support import entries, entry

AGENT = make_agent("helper", last_n=2)


class StoreHarness(Protocol):
    store: MemoryStore
    clock: Clock

    def write(self, agent: AgentConfig, data: bytes) -> None: ...
    def replace(self, agent: AgentConfig, data: bytes) -> None: ...
    def remove(self, agent: AgentConfig) -> None: ...
    def append(self, agent: AgentConfig, data: bytes) -> None: ...
    def contents(self, agent: AgentConfig) -> bytes: ...
    def archive(self, agent: AgentConfig) -> bytes | None: ...
    def spoil_record(self, agent: AgentConfig, how: str) -> None: ...


class FileHarness:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.clock: Clock = SystemClock()
        self.store: MemoryStore = FileMemoryStore(lambda: root, clock=self.clock)

    def path(self, agent: AgentConfig) -> Path:
        return self.root / "memory" / f"{agent.name}.md"

    def write(self, agent: AgentConfig, data: bytes) -> None:
        self.path(agent).parent.mkdir(parents=True, exist_ok=True)
        self.path(agent).write_bytes(data)

    def replace(self, agent: AgentConfig, data: bytes) -> None:
        """A new file renamed over the old one, as an editor saves."""
        fresh = self.path(agent).with_name("fresh.tmp")
        fresh.write_bytes(data)
        os.replace(fresh, self.path(agent))

    def remove(self, agent: AgentConfig) -> None:
        self.path(agent).unlink()

    def append(self, agent: AgentConfig, data: bytes) -> None:
        with self.path(agent).open("ab") as handle:
            handle.write(data)

    def contents(self, agent: AgentConfig) -> bytes:
        return self.path(agent).read_bytes()

    def archive(self, agent: AgentConfig) -> bytes | None:
        archive = self.path(agent).with_name(f"{agent.name}.md.archive")
        return archive.read_bytes() if archive.exists() else None

    def spoil_record(self, agent: AgentConfig, how: str) -> None:
        record = record_path(self.path(agent))
        if how == "deleted":
            record.unlink()
        else:  # corrupted: cut short, as no atomic write leaves it, but a disk might
            record.write_bytes(record.read_bytes()[:20])


class FakeHarness:
    def __init__(self) -> None:
        self.clock: Clock = FakeClock(1_795_608_000.0)
        self.fake = FakeMemoryStore(clock=self.clock)
        self.store: MemoryStore = self.fake

    def write(self, agent: AgentConfig, data: bytes) -> None:
        self.fake.files[agent.name] = data

    def replace(self, agent: AgentConfig, data: bytes) -> None:
        self.fake.files[agent.name] = data

    def remove(self, agent: AgentConfig) -> None:
        del self.fake.files[agent.name]

    def append(self, agent: AgentConfig, data: bytes) -> None:
        self.fake.append(agent, data)

    def contents(self, agent: AgentConfig) -> bytes:
        return self.fake.files[agent.name]

    def archive(self, agent: AgentConfig) -> bytes | None:
        return self.fake.archives.get(agent.name)

    def spoil_record(self, agent: AgentConfig, how: str) -> None:
        del self.fake.records[agent.name]  # the fake holds values: spoilt is gone


@pytest.fixture(params=["file", "fake"])
def harness(request: pytest.FixtureRequest, tmp_path: Path) -> StoreHarness:
    return FileHarness(tmp_path) if request.param == "file" else FakeHarness()


def test_a_missing_memory_file_reads_as_empty(harness: StoreHarness) -> None:
    """No memory file is no entries, not an error."""
    assert harness.store.read(AGENT).content == b""


def test_read_returns_the_bytes_exactly(harness: StoreHarness) -> None:
    """What is read is the file byte for byte: CRLF, invalid UTF-8 and pre-header text too."""
    data = b"notes\r\n" + entries(2) + b"## odd \xff\r\n"
    harness.write(AGENT, data)
    assert harness.store.read(AGENT).content == data


def test_a_trim_keeps_the_tail_and_what_was_appended_after_the_read(harness: StoreHarness) -> None:
    """Bytes an `axe run` appends between gc's read and its trim survive the trim."""
    harness.write(AGENT, entries(5))
    snapshot = harness.store.read(AGENT)
    harness.append(AGENT, entry(99))
    harness.store.trim(AGENT, snapshot, plan_trim(snapshot.content, 2), archive=False)
    assert harness.contents(AGENT) == entries(2, start=3) + entry(99)
    assert harness.archive(AGENT) is None


def test_the_archive_receives_exactly_the_removed_prefix(harness: StoreHarness) -> None:
    """With archive, the removed bytes (pre-header text included) are appended, in order."""
    harness.write(AGENT, b"notes\n" + entries(5))
    snapshot = harness.store.read(AGENT)
    harness.store.trim(AGENT, snapshot, plan_trim(snapshot.content, 2), archive=True)
    assert harness.archive(AGENT) == b"notes\n" + entries(3)
    harness.append(AGENT, entries(2, start=5))
    snapshot = harness.store.read(AGENT)
    harness.store.trim(AGENT, snapshot, plan_trim(snapshot.content, 2), archive=True)
    assert harness.archive(AGENT) == b"notes\n" + entries(5)
    assert harness.contents(AGENT) == entries(2, start=5)


def test_a_second_lock_on_one_file_waits_for_the_first(harness: StoreHarness) -> None:
    """Overlapping gc runs on one file are serialised: the second is told it waits, and
    gets the file only when the first lets go."""
    first_holds, release = threading.Event(), threading.Event()
    order: list[str] = []

    def first() -> None:
        with harness.store.lock(AGENT, waiting=lambda _: order.append("first waited")):
            first_holds.set()
            release.wait(5)
            order.append("first done")

    worker = threading.Thread(target=first)
    worker.start()
    assert first_holds.wait(5)
    threading.Timer(0.1, release.set).start()
    with harness.store.lock(AGENT, waiting=lambda _: order.append("second waits")):
        order.append("second holds")
    worker.join()
    assert order == ["second waits", "first done", "second holds"]


def test_different_files_do_not_wait_for_each_other(harness: StoreHarness) -> None:
    """One agent's gc never holds up another's."""
    other = make_agent("other", last_n=2)
    told: list[int | None] = []
    with (
        harness.store.lock(AGENT, waiting=told.append),
        harness.store.lock(other, waiting=told.append),
    ):
        pass
    assert told == []


@pytest.mark.parametrize(
    ("change", "left"),
    [
        ("shrunk", entries(2)),
        ("replaced", entries(5, start=10)),
        ("removed", None),
        ("rewritten in place", entries(5).replace(b"Task", b"Jobs")),
    ],
)
def test_a_file_changed_under_gc_is_not_trimmed(
    harness: StoreHarness, change: str, left: bytes | None
) -> None:
    """A file shrunk, replaced (an editor's save), rewritten in place or removed between
    gc's read and its trim is refused as an agent error (exit 1), and left exactly as it
    now is."""
    harness.write(AGENT, entries(5))
    snapshot = harness.store.read(AGENT)
    if change == "shrunk":
        harness.write(AGENT, entries(2))
    elif change == "replaced":
        harness.replace(AGENT, entries(5, start=10))
    elif change == "rewritten in place":  # an editor that keeps the inode, same size
        harness.write(AGENT, entries(5).replace(b"Task", b"Jobs"))
    else:
        harness.remove(AGENT)
    with pytest.raises(AgentError, match=r"not trimmed|nothing was changed"):
        harness.store.trim(AGENT, snapshot, plan_trim(snapshot.content, 2), archive=False)
    if left is not None:
        assert harness.contents(AGENT) == left
    assert harness.archive(AGENT) is None


MODEL = ModelRef("anthropic", "claude-3")


def test_what_gc_left_is_remembered_with_the_model_and_the_time(harness: StoreHarness) -> None:
    """The record reads back as written: the size and digest of what gc left, its model and
    the store's clock at the time; a memory file never analysed has none."""
    harness.write(AGENT, entries(5))
    assert harness.store.analysed(AGENT) is None
    before = harness.clock.now()
    harness.store.remember_analysed(AGENT, entries(2, start=3), model=MODEL)
    record = harness.store.analysed(AGENT)
    assert record is not None
    assert before <= record.at <= harness.clock.now()
    assert record == AnalysedMemory.of(entries(2, start=3), model=MODEL, at=record.at)
    harness.store.remember_analysed(AGENT, entries(5), model=MODEL)  # replaces the old one
    latest = harness.store.analysed(AGENT)
    assert latest is not None
    assert latest.holds(entries(5), MODEL, None)


@pytest.mark.parametrize("how", ["deleted", "corrupted"])
def test_a_deleted_or_corrupted_record_is_no_record(harness: StoreHarness, how: str) -> None:
    """Deleting the record is always safe, and a spoilt one is never trusted: either way
    the next --skip-unchanged run analyses the file."""
    harness.write(AGENT, entries(5))
    harness.store.remember_analysed(AGENT, entries(5), model=MODEL)
    harness.spoil_record(AGENT, how)
    assert harness.store.analysed(AGENT) is None
    assert harness.contents(AGENT) == entries(5)
