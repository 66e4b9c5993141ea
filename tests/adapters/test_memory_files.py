"""The file memory store against a real filesystem (gc-spec §7.2 and the failure cases).

CI runs as root, where permission bits stop nothing, so failures are simulated in ways
that bind root too: a directory where a file should be, RLIMIT_FSIZE in a subprocess, a
file replaced or shrunk behind gc's back.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from axe.adapters.memory.durable import remove_abandoned_temps, temp_prefix
from axe.adapters.memory.platforms import ReadLeases, current_platform
from axe.adapters.memory.store import FileMemoryStore, MemoryFile, trim_entries
from axe.domain.entries import count_entries, plan_trim
from axe.domain.errors import AgentError, ConfigError
from axe.domain.model import AgentConfig, MemoryConfig, ModelRef
from axe.testing import FakeClock, make_agent
from tests.support import entries, entry


def files_in(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


# gc-spec §7.2, one test each


def test_trim_entries_file_does_not_exist(tmp_path: Path) -> None:
    """Trimming a memory file that does not exist removes nothing and creates no file."""
    assert trim_entries(tmp_path / "missing.md", 5) == 0
    assert not (tmp_path / "missing.md").exists()


def test_trim_entries_empty_file(tmp_path: Path) -> None:
    """An empty memory file stays empty, with nothing removed."""
    path = tmp_path / "m.md"
    path.write_bytes(b"")
    assert trim_entries(path, 5) == 0
    assert path.read_bytes() == b""


def test_trim_entries_keep_n_zero(tmp_path: Path) -> None:
    """Keeping 0 means no limit: every entry stays."""
    path = tmp_path / "m.md"
    path.write_bytes(entries(5))
    assert trim_entries(path, 0) == 0
    assert path.read_bytes() == entries(5)


def test_trim_entries_keep_n_negative(tmp_path: Path) -> None:
    """A negative keep count is refused with the spec's error, and the file is untouched."""
    path = tmp_path / "m.md"
    path.write_bytes(entries(5))
    with pytest.raises(AgentError, match="keepN must be non-negative"):
        trim_entries(path, -1)
    assert path.read_bytes() == entries(5)


def test_trim_entries_entries_within_limit(tmp_path: Path) -> None:
    """A log under its limit is not rewritten at all: same bytes, same inode."""
    path = tmp_path / "m.md"
    path.write_bytes(entries(3))
    before = os.stat(path)
    assert trim_entries(path, 5) == 0
    assert path.read_bytes() == entries(3)
    assert os.stat(path).st_ino == before.st_ino  # not even rewritten


def test_trim_entries_entries_equal_to_limit(tmp_path: Path) -> None:
    """A log exactly at its limit loses nothing."""
    path = tmp_path / "m.md"
    path.write_bytes(entries(5))
    assert trim_entries(path, 5) == 0
    assert path.read_bytes() == entries(5)


def test_trim_entries_trims_old_entries(tmp_path: Path) -> None:
    """Over the limit the oldest entries go, the newest N stay in order; no temp file is left."""
    path = tmp_path / "m.md"
    path.write_bytes(entries(10))
    assert trim_entries(path, 3) == 7
    assert path.read_bytes() == entries(3, start=7)
    assert files_in(tmp_path) == ["m.md"]


def test_trim_entries_preserves_entry_format(tmp_path: Path) -> None:
    """Multi-line results, blank lines, trailing spaces, CRLF and invalid UTF-8 survive."""
    kept = (
        b"## 2026-02-27T03:15:00Z\r\n**Task:** Review\r\n**Result:** line one  \r\n\r\n"
        b"\tindented\xff\xfe line\n\n\n"
        b"## 2026-02-28T03:15:00Z\n**Task:** x\n**Result:** no trailing newline"
    )
    path = tmp_path / "m.md"
    path.write_bytes(entries(4) + kept)
    assert trim_entries(path, 2) == 4
    assert path.read_bytes() == kept


def test_trim_entries_discards_pre_header_content(tmp_path: Path) -> None:
    """Text before the first entry is dropped by a trim, as the Go axe's LoadEntries does."""
    path = tmp_path / "m.md"
    path.write_bytes(b"# My agent's memory\nnotes\n\n" + entries(5))
    assert trim_entries(path, 3) == 2
    assert path.read_bytes() == entries(3, start=2)


def test_trim_entries_single_entry_keep_one(tmp_path: Path) -> None:
    """A single entry with keep 1 stays exactly as it is."""
    path = tmp_path / "m.md"
    path.write_bytes(entries(1))
    assert trim_entries(path, 1) == 0
    assert path.read_bytes() == entries(1)


_LIMITED_TRIM = """
import resource, sys
from pathlib import Path
resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[2]), int(sys.argv[2])))
from axe.adapters.memory.store import trim_entries
from axe.domain.errors import AgentError
try:
    trim_entries(Path(sys.argv[1]), int(sys.argv[3]))
except AgentError as error:
    print(error)
    sys.exit(1)
"""


def test_trim_entries_original_unmodified_on_write_error(tmp_path: Path) -> None:
    """The temp file cannot be written in full (file size limit, as on a full disk)."""
    path = tmp_path / "m.md"
    original = entries(200)
    path.write_bytes(original)
    done = subprocess.run(
        [sys.executable, "-c", _LIMITED_TRIM, str(path), "1000", "100"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1
    assert done.stdout.startswith(f"cannot trim memory file {path}: File too large")
    assert done.stdout.rstrip().endswith("the file was not changed")
    assert path.read_bytes() == original
    assert files_in(tmp_path) == ["m.md"]


_NO_SPARE_DESCRIPTORS = """
import os, resource, sys
from pathlib import Path
from axe.adapters.memory.store import trim_entries
from axe.domain.errors import AgentError
probe = os.open(os.devnull, os.O_RDONLY)
os.close(probe)
# Room for exactly two more descriptors: the lock's and the memory file's; the temp file
# cannot be opened.
resource.setrlimit(resource.RLIMIT_NOFILE, (probe + 2, probe + 2))
try:
    trim_entries(Path(sys.argv[1]), 2)
except AgentError as error:
    print(error)
    sys.exit(1)
"""


def test_trim_entries_temp_file_cannot_be_created(tmp_path: Path) -> None:
    """gc-spec §5.1: the temp file cannot be created; the original stays as it was."""
    path = tmp_path / "m.md"
    path.write_bytes(entries(5))
    done = subprocess.run(
        [sys.executable, "-c", _NO_SPARE_DESCRIPTORS, str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert done.stdout.strip() == (
        f"cannot trim memory file {path}: Too many open files; the file was not changed"
    )
    assert path.read_bytes() == entries(5)
    assert files_in(tmp_path) == ["m.md"]


# beyond the spec


def test_permissions_are_kept(tmp_path: Path) -> None:
    """The trimmed memory file keeps its permission bits."""
    path = tmp_path / "m.md"
    path.write_bytes(entries(4))
    path.chmod(0o640)
    trim_entries(path, 1)
    assert stat.S_IMODE(path.stat().st_mode) == 0o640


def test_symlink_stays_a_link_and_its_target_is_trimmed(tmp_path: Path) -> None:
    """A symlinked memory file stays a link; its target is what gets trimmed."""
    real = tmp_path / "real.md"
    real.write_bytes(entries(4))
    link = tmp_path / "link.md"
    link.symlink_to(real)
    assert trim_entries(link, 1) == 3
    assert link.is_symlink()
    assert real.read_bytes() == entries(1, start=3)
    assert files_in(tmp_path) == ["link.md", "real.md"]


def test_memory_path_that_is_a_directory_is_an_agent_error(tmp_path: Path) -> None:
    """A memory path that is a directory is one line naming it (exit 1), not a crash."""
    (tmp_path / "m.md").mkdir()
    with pytest.raises(AgentError) as caught:
        MemoryFile(tmp_path / "m.md").read()
    assert str(caught.value) == f"cannot read memory file {tmp_path / 'm.md'}: a directory"


def test_memory_path_that_is_a_fifo_does_not_hang(tmp_path: Path) -> None:
    """A memory path that is a FIFO is refused as not a regular file instead of blocking gc."""
    fifo = tmp_path / "m.md"
    os.mkfifo(fifo)
    with pytest.raises(AgentError, match="not a regular file"):
        MemoryFile(fifo).read()


def test_file_replaced_since_it_was_read_is_not_trimmed(tmp_path: Path) -> None:
    """A memory file another program replaced while gc ran is not trimmed; the new one stays."""
    path = tmp_path / "m.md"
    path.write_bytes(entries(5))
    snapshot = MemoryFile(path).read()
    replacement = tmp_path / "other"
    replacement.write_bytes(entries(5, start=100))
    os.replace(replacement, path)
    with pytest.raises(AgentError, match="was replaced while gc was running"):
        MemoryFile(path).trim(snapshot, plan_trim(snapshot.content, 2), archive=False)
    assert path.read_bytes() == entries(5, start=100)


def test_file_shrunk_since_it_was_read_is_not_trimmed(tmp_path: Path) -> None:
    """A memory file that shrank while gc ran is left as it is, not trimmed from a stale read."""
    path = tmp_path / "m.md"
    path.write_bytes(entries(5))
    snapshot = MemoryFile(path).read()
    with open(path, "r+b") as handle:
        handle.truncate(10)
    with pytest.raises(AgentError, match="shrank while gc was running"):
        MemoryFile(path).trim(snapshot, plan_trim(snapshot.content, 2), archive=False)
    assert path.read_bytes() == entries(5)[:10]


def test_file_vanished_since_it_was_read(tmp_path: Path) -> None:
    """A memory file deleted while gc ran is reported in one line, and gc does not recreate it."""
    path = tmp_path / "m.md"
    path.write_bytes(entries(5))
    snapshot = MemoryFile(path).read()
    path.unlink()
    with pytest.raises(AgentError) as caught:
        MemoryFile(path).trim(snapshot, plan_trim(snapshot.content, 2), archive=False)
    assert str(caught.value) == (
        f"memory file {path} disappeared before it could be trimmed; nothing was changed"
    )
    assert files_in(tmp_path) == []


def test_bytes_appended_after_the_read_are_kept(tmp_path: Path) -> None:
    """Entries appended between gc's read and its trim are kept after the trimmed tail."""
    path = tmp_path / "m.md"
    path.write_bytes(entries(5))
    snapshot = MemoryFile(path).read()
    with open(path, "ab") as handle:
        handle.write(entry(99))
    MemoryFile(path).trim(snapshot, plan_trim(snapshot.content, 2), archive=False)
    assert path.read_bytes() == entries(2, start=3) + entry(99)


def test_writes_into_the_old_file_after_the_rename_are_carried_over(tmp_path: Path) -> None:
    """A writer that opened the file before the rename still has its entry kept."""
    path = tmp_path / "m.md"
    path.write_bytes(entries(5))
    snapshot = MemoryFile(path).read()
    late_writer = open(path, "ab")  # noqa: SIM115  (held open across the rename)

    def write_at_first_sleep(_now: float) -> None:
        if len(clock.slept) == 1:
            late_writer.write(entry(77))
            late_writer.close()

    clock = FakeClock(on_sleep=write_at_first_sleep)
    MemoryFile(path, clock=clock).trim(snapshot, plan_trim(snapshot.content, 2), archive=False)
    assert path.read_bytes() == entries(2, start=3) + entry(77)
    assert clock.slept  # gc waited for the writer instead of dropping its entry


def test_abandoned_temp_files_are_removed_but_live_ones_kept(tmp_path: Path) -> None:
    """Temps of dead or hour-old gc runs are removed; a live run's, and other files', are kept."""
    path = tmp_path / "m.md"
    path.write_bytes(entries(3))
    prefix = temp_prefix(path)
    dead = tmp_path / f"{prefix}999999999-abcd.tmp"
    alive = tmp_path / f"{prefix}{os.getppid()}-abcd.tmp"
    stale = tmp_path / f"{prefix}{os.getppid()}-ef01.tmp"
    for temp in (dead, alive, stale):
        temp.write_bytes(b"partial")
    old = time.time() - 7200
    os.utime(stale, (old, old))
    unrelated = tmp_path / ".other.md.axe-gc-1-x.tmp"
    unrelated.write_bytes(b"x")
    removed = remove_abandoned_temps(MemoryFile(path))
    assert sorted(removed) == sorted([dead, stale])
    assert files_in(tmp_path) == sorted([alive.name, unrelated.name, "m.md"])


def test_trim_cleans_up_abandoned_temps_of_the_same_file(tmp_path: Path) -> None:
    """A trim removes the temp files a killed gc left beside the same memory file."""
    path = tmp_path / "m.md"
    path.write_bytes(entries(3))
    (tmp_path / f"{temp_prefix(path)}999999999-abcd.tmp").write_bytes(b"partial")
    trim_entries(path, 1)
    assert files_in(tmp_path) == ["m.md"]


# the store's paths


def agent(**memory: object) -> AgentConfig:
    return AgentConfig(name="helper", model="x/y", display_name="h", memory=MemoryConfig(**memory))  # type: ignore[arg-type]


def test_default_memory_path(tmp_path: Path) -> None:
    """Memory lives at <data dir>/memory/<agent>.md unless the agent says otherwise."""
    store = FileMemoryStore(lambda: tmp_path)
    assert store.path_for(agent(enabled=True)) == tmp_path / "memory" / "helper.md"


def test_custom_memory_path_is_used_as_given(tmp_path: Path) -> None:
    """An absolute memory.path is used as written."""
    store = FileMemoryStore(lambda: tmp_path / "unused")
    custom = tmp_path / "elsewhere.md"
    assert store.path_for(agent(path=str(custom))) == custom


def test_custom_memory_path_with_tilde_is_expanded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A memory.path starting with ~ is taken from the user's home directory."""
    monkeypatch.setenv("HOME", str(tmp_path))
    store = FileMemoryStore(lambda: tmp_path)
    assert store.path_for(agent(path="~/m.md")) == tmp_path / "m.md"


def test_relative_memory_path_is_a_config_error(tmp_path: Path) -> None:
    """A relative memory.path is a config error asking for an absolute path."""
    store = FileMemoryStore(lambda: tmp_path)
    with pytest.raises(ConfigError) as caught:
        store.path_for(agent(path="memory/m.md"))
    assert "is not an absolute path; use an absolute path" in str(caught.value)


# the late-append carry-over (read lease), on and off the main thread


def trim_with_a_late_writer(path: Path, *, write_at: float, in_thread: bool) -> list[str | None]:
    """Trim to 2 entries while a writer holds an O_APPEND descriptor opened before the
    rename and writes through it ``write_at`` seconds (of simulated time) later."""
    path.write_bytes(entries(5))
    snapshot = MemoryFile(path).read()
    writer = [os.open(path, os.O_WRONLY | os.O_APPEND)]

    def late_write(now: float) -> None:
        if writer and now >= write_at:
            os.write(writer[0], entry(77))
            os.close(writer.pop())

    memory = MemoryFile(path, clock=FakeClock(on_sleep=late_write))
    plan = plan_trim(snapshot.content, 2)
    failures: list[BaseException] = []
    warnings: list[str | None] = []

    def work() -> None:
        try:
            warnings.append(memory.trim(snapshot, plan, archive=False))
        except BaseException as error:  # noqa: BLE001  (re-raised in the test's thread)
            failures.append(error)

    try:
        if in_thread:
            worker = threading.Thread(target=work)
            worker.start()
            worker.join()
        else:
            work()
    finally:
        for fd in writer:
            os.close(fd)
    if failures:
        raise failures[0]
    return warnings


@pytest.fixture
def sigio() -> Iterator[Callable[[signal.Handlers], None]]:
    """Set SIGIO's disposition for one test (from the main thread) and restore it after."""
    previous = signal.getsignal(signal.SIGIO)

    def set_disposition(handler: signal.Handlers) -> None:
        signal.signal(signal.SIGIO, handler)

    yield set_disposition
    signal.signal(signal.SIGIO, previous)


def test_a_writer_still_holding_the_old_file_is_waited_for(tmp_path: Path) -> None:
    """An `axe run` that opened the file before the rename and writes 0.5 s later still has
    its entry kept: the lease is refused until that writer closes (fails without the lease)."""
    path = tmp_path / "m.md"
    assert trim_with_a_late_writer(path, write_at=0.5, in_thread=False) == [None]
    assert path.read_bytes() == entries(2, start=3) + entry(77)


def test_off_the_main_thread_the_lease_holds_when_sigio_is_ignored(
    tmp_path: Path, sigio: Callable[[signal.Handlers], None]
) -> None:
    """An embedder running gc in a worker thread keeps the full guarantee once SIGIO is
    ignored (as `axe gc` does at start)."""
    sigio(signal.SIG_IGN)
    path = tmp_path / "m.md"
    trim_with_a_late_writer(path, write_at=0.5, in_thread=True)
    assert path.read_bytes() == entries(2, start=3) + entry(77)


def test_off_the_main_thread_without_sigio_ignored_gc_waits_only_for_quiet(
    tmp_path: Path, sigio: Callable[[signal.Handlers], None]
) -> None:
    """The documented fallback: off the main thread with SIGIO at its default, gc cannot
    lease; it carries over what arrives until the old file has been quiet for 20 ms, and a
    writer that stays silent longer than that loses its entry."""
    sigio(signal.SIG_DFL)
    soon, late = tmp_path / "soon.md", tmp_path / "late.md"
    trim_with_a_late_writer(soon, write_at=0.005, in_thread=True)
    assert trim_with_a_late_writer(late, write_at=0.5, in_thread=True) == [None]  # cannot tell
    assert soon.read_bytes() == entries(2, start=3) + entry(77)
    assert late.read_bytes() == entries(2, start=3)


_HOLDER = """
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)
print("open", flush=True)
for line in sys.stdin:
    os.write(fd, bytes.fromhex(line))
    print("written", flush=True)
"""


class HeldWriter:
    """Another process holding the memory file open for appending (`long_job >> log`,
    `tee -a`, a logger), writing when told to, until it is closed."""

    def __init__(self, path: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", _HOLDER, str(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        assert self.process.stdin is not None
        self.replies, self.commands = self.process.stdout, self.process.stdin
        assert self.replies.readline() == "open\n"

    def write(self, data: bytes) -> None:
        self.commands.write(data.hex() + "\n")
        self.commands.flush()
        assert self.replies.readline() == "written\n"

    def close(self) -> None:
        self.commands.close()
        self.process.wait(10)
        self.replies.close()


def test_a_writer_that_outlives_the_wait_is_named_in_a_warning(tmp_path: Path) -> None:
    """A program holding the file open across a gc: what it writes during gc's 2-second
    wait is carried over; once the wait ends with it still there, the trim is done and
    returns a warning naming the file (what it writes later goes to the replaced file)."""
    path = tmp_path / "m.md"
    path.write_bytes(entries(5))
    snapshot = MemoryFile(path).read()
    writer = HeldWriter(path)
    try:
        clock = FakeClock(on_sleep=lambda _: None if clock.slept[1:] else writer.write(entry(77)))
        warning = MemoryFile(path, clock=clock).trim(
            snapshot, plan_trim(snapshot.content, 2), archive=False
        )
        writer.write(entry(88))
    finally:
        writer.close()
    assert warning == (
        f"a program still had {path} open for writing after gc waited 2s for it; what it "
        "writes there from now on goes to the replaced file, not to the trimmed one"
    )
    assert path.read_bytes() == entries(2, start=3) + entry(77)
    assert 2.0 <= clock.monotonic() < 2.1


_SOUP = st.binary(max_size=30).map(lambda soup: soup.replace(b"\n", b" "))


@st.composite
def odd_logs(draw: st.DrawFn) -> tuple[bytes, bytes]:
    """A log of at least two entries (a BOM first, text of any bytes before the first
    heading, CRLF only, a last heading without its line end) and bytes an `axe run`
    appends meanwhile. Three headings at least: a BOM, or text that does not end its
    line, turns the first into text."""
    kind = draw(st.sampled_from(["byte soup", "crlf only", "unended heading", "bom first"]))
    eol = b"\r\n" if kind == "crlf only" else b"\n"
    pre = draw(st.binary(max_size=40)) if kind == "byte soup" else b""
    heads = draw(st.lists(_SOUP, min_size=3, max_size=12))
    log = pre + b"".join(b"## " + head + eol + draw(_SOUP) + eol for head in heads)
    if kind == "unended heading":
        log += b"## " + draw(_SOUP)
    if kind == "bom first":
        log = b"\xef\xbb\xbf" + log
    return log, draw(st.sampled_from([b"", entry(99), b"\xff half an entry"]))


@settings(max_examples=60, deadline=None)
@given(odd_logs(), st.data())
def test_a_trim_leaves_the_kept_tail_and_every_byte_appended_meanwhile(
    log_and_appended: tuple[bytes, bytes], data: st.DataObject
) -> None:
    """For any log and any keep short of all its entries, the file afterwards is exactly
    the read bytes from the planned cut on, then what was appended between the read and
    the trim, then what a writer put into the old file after the rename (carried over)."""
    log, appended = log_and_appended
    total = count_entries(log)
    plan = plan_trim(log, data.draw(st.integers(1, total - 1), label="keep"))
    assert plan.changes_file  # by construction: every example trims
    late = data.draw(st.sampled_from([b"", entry(77)]), label="late")
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "m.md"
        path.write_bytes(log)
        snapshot = MemoryFile(path).read()
        with path.open("ab") as writer:
            writer.write(appended)
            writer.flush()

            def replace_then_write(source: Path, target: Path) -> None:
                os.replace(source, target)
                writer.write(late)  # into the old file, which the writer still holds
                writer.flush()

            platform = attrs.evolve(current_platform(), replace=replace_then_write)
            clock = FakeClock(on_sleep=lambda _: writer.close())
            MemoryFile(path, platform=platform, clock=clock).trim(snapshot, plan, archive=False)
        assert path.read_bytes() == log[plan.keep_from :] + appended + late


def test_a_version_saved_by_an_editor_during_the_trim_is_not_overwritten(
    tmp_path: Path,
) -> None:
    """If another program saves a new version while gc copies the kept tail, gc refuses to
    rename over it: the new version stays, and gc says the file was replaced."""
    path = tmp_path / "m.md"
    path.write_bytes(entries(5))
    snapshot = MemoryFile(path).read()
    saved = entries(3, start=50)

    def fsync_then_an_editor_saves(fd: int) -> None:
        os.fsync(fd)
        fresh = tmp_path / "editor-save"
        fresh.write_bytes(saved)
        os.replace(fresh, path)

    platform = attrs.evolve(current_platform(), fsync=fsync_then_an_editor_saves)
    with pytest.raises(AgentError, match="was replaced while gc was running; not trimmed"):
        MemoryFile(path, platform=platform).trim(
            snapshot, plan_trim(snapshot.content, 2), archive=False
        )
    assert path.read_bytes() == saved
    assert files_in(tmp_path) == ["m.md"]


def test_a_failure_after_the_rename_does_not_claim_the_file_unchanged(tmp_path: Path) -> None:
    """Once the trimmed file is in place, a failure that follows (here flushing the
    directory: EIO) says the file was trimmed and that entries appended meanwhile may be
    missing, never that it was not changed."""
    path = tmp_path / "m.md"
    path.write_bytes(entries(5))
    snapshot = MemoryFile(path).read()
    base = current_platform()

    def directory_fails(fd: int) -> None:
        if os.readlink(f"/proc/self/fd/{fd}") == str(tmp_path):
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        base.fsync(fd)

    file = MemoryFile(path, platform=attrs.evolve(base, fsync=directory_fails))
    with pytest.raises(AgentError) as caught:
        file.trim(snapshot, plan_trim(snapshot.content, 2), archive=False)
    assert str(caught.value) == (
        f"trimmed memory file {path}, but could not finish: Input/output error; entries "
        "appended during the trim may not have been carried over"
    )
    assert path.read_bytes() == entries(2, start=3)
    assert files_in(tmp_path) == ["m.md"]


def test_late_bytes_that_cannot_be_added_back_are_counted_in_one_line(tmp_path: Path) -> None:
    """The trim stands, but what an `axe run` wrote into the old file and a full disk keeps
    out of the new one is named by its size in one line, never lost in silence."""
    path = tmp_path / "m.md"
    path.write_bytes(entries(5))
    snapshot = MemoryFile(path).read()
    writer = os.open(path, os.O_WRONLY | os.O_APPEND)

    def replace_then_write(source: Path, target: Path) -> None:
        os.replace(source, target)
        os.write(writer, entry(77))  # into the old file
        os.close(writer)

    def full(fd: int, data: memoryview) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    platform = attrs.evolve(current_platform(), replace=replace_then_write, write=full)
    with pytest.raises(AgentError) as caught:
        MemoryFile(path, platform=platform, clock=FakeClock()).trim(
            snapshot, plan_trim(snapshot.content, 2), archive=False
        )
    assert str(caught.value) == (
        f"trimmed memory file {path}, but {len(entry(77))} bytes appended during the trim "
        "could not be added back: No space left on device"
    )
    assert path.read_bytes() == entries(2, start=3)


def test_a_worker_thread_takes_no_lease_while_sigio_still_kills(tmp_path: Path) -> None:
    """A lease broken where SIGIO is not ignored ends the process, so a worker thread leases
    only where SIGIO is ignored for good: not in the moment the main thread ignores it for
    its own lease (the worker then watches for 20 ms of quiet instead)."""
    path = tmp_path / "m.md"
    path.write_bytes(entries(1))
    leases, seen = ReadLeases(), []
    mine, theirs = os.open(path, os.O_RDONLY), os.open(path, os.O_RDONLY)

    def worker() -> None:
        with leases.held(theirs) as unbroken:
            seen.append(unbroken)

    previous = signal.signal(signal.SIGIO, signal.SIG_DFL)
    try:
        with leases.held(mine) as unbroken:
            if unbroken is None:
                pytest.skip("no read leases on this filesystem")
            asking = threading.Thread(target=worker)
            asking.start()
            time.sleep(0.2)  # the worker asks while the main thread holds its lease
        asking.join()
    finally:
        signal.signal(signal.SIGIO, previous)
        os.close(mine)
        os.close(theirs)
    assert seen == [None]


# a run holds nothing open once a trim returns


def gc_once(store: FileMemoryStore, agent: AgentConfig) -> None:
    """What one gc does to the store: lock, read, trim to ``last_n``, write the record."""
    with store.lock(agent, waiting=lambda _: None):
        snapshot = store.read(agent)
        store.trim(agent, snapshot, plan_trim(snapshot.content, agent.memory.last_n), archive=False)
        store.remember_analysed(agent, store.read(agent).content, model=ModelRef.parse("x/y"))


def open_deleted_files() -> list[str]:
    """What this process still holds open of files that are gone (Linux)."""
    held = []
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            if (target := os.readlink(f"/proc/self/fd/{fd}")).endswith(" (deleted)"):
                held.append(target)
    return held


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="reads /proc/self/fd")
def test_a_run_ends_holding_no_replaced_file_open(tmp_path: Path) -> None:
    """The old file a trim replaced, and the record it replaced, are freed before the trim
    returns; nothing but the memory file and its record is left."""
    store = FileMemoryStore(lambda: tmp_path)
    helper = make_agent("helper", last_n=2)
    memory = tmp_path / "memory" / "helper.md"
    memory.parent.mkdir()
    memory.write_bytes(entries(5))
    gc_once(store, helper)
    memory.write_bytes(memory.read_bytes() + entries(3, start=5))
    gc_once(store, helper)  # replaces the memory file and the record again
    assert memory.read_bytes() == entries(2, start=6)
    assert [held for held in open_deleted_files() if str(tmp_path) in held] == []
    assert files_in(memory.parent) == [".helper.md.axe-gc.analysed", "helper.md"]
