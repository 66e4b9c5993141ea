"""Co-users of a memory directory: gc's own files are never opened through what others
planted, never trusted when others own them, and in a directory others can write gc trims
only a regular file its user owns.

Each attack runs one gc in a child process, as root and as a plain user (uid 65534), the
way ``axe gc`` drives the store (lock, read, trim); the test itself (root) plants the links
and files and gives them to "another user" (uid 4242). The directories live under a fresh
``/tmp`` directory both users can reach.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import axe
from axe.adapters.memory.paths import archive_path, intent_path, sidecar
from tests.e2e.loopback import LoopbackLLM, loopback_llm
from tests.e2e.racing import environment
from tests.support import INSTALLED_AXE, AxeHome, entries, entry

ANOTHER_USER = 4242
PLAIN_USER = 65534
TRIMMED = entries(2, start=3)
NOT_TRUSTED = "so gc does not trust it: remove it and run gc again; nothing was changed"

_GC = """
import sys
from pathlib import Path
from axe.adapters.memory.store import MemoryFile
from axe.adapters.memory.lock import MemoryFileLocks
from axe.domain.entries import plan_trim
from axe.domain.errors import AgentError
path, archive = Path(sys.argv[1]), sys.argv[2] == "archive"
file = MemoryFile(path)
try:
    with file.locked(MemoryFileLocks(timeout=5), agent="v", waiting=lambda _: None):
        snapshot = file.read()
        plan = plan_trim(snapshot.content, 2)
        if plan.changes_file:
            file.trim(snapshot, plan, archive=archive)
except AgentError as error:
    print(error)
    sys.exit(1)
"""


@functools.cache
def plain_python() -> tuple[str, dict[str, str]] | None:
    """An interpreter the plain user may run, with the environment that finds axe."""
    paths = f"{Path(axe.__file__).parents[1]}:{sysconfig.get_paths()['purelib']}"
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": paths}
    for python in (sys.executable, getattr(sys, "_base_executable", ""), "/usr/bin/python3"):
        with contextlib.suppress(OSError):
            done = subprocess.run(
                [python, "-c", "import axe.adapters.memory.store"],
                user=PLAIN_USER, group=PLAIN_USER, env=env, cwd="/", capture_output=True,
                check=False,
            )  # fmt: skip
            if done.returncode == 0:
                return python, env
    return None


@pytest.fixture(params=[0, PLAIN_USER], ids=["as root", "as a plain user"])
def user(request: pytest.FixtureRequest) -> int:
    """The uid gc runs as."""
    if os.geteuid() != 0:
        pytest.skip("acting as two users and planting another user's files needs root")
    if request.param and plain_python() is None:
        pytest.skip("no Python interpreter here that uid 65534 may run")
    return int(request.param)


def gc(user: int, memory: Path, *, archive: bool = False) -> subprocess.CompletedProcess[str]:
    """One gc of ``memory`` (keeping 2 entries) run as ``user``; what it printed is the
    one line of its failure."""
    command = ["", "-c", _GC, str(memory), "archive" if archive else ""]
    if not user:
        command[0] = sys.executable
        return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    python, env = plain_python() or ("", {})
    command[0] = python
    return subprocess.run(
        command, user=user, group=user, env=env, cwd="/", capture_output=True, text=True,
        timeout=60, check=False,
    )  # fmt: skip


def make(path: Path, data: bytes, *, owner: int, mode: int = 0o644) -> Path:
    path.write_bytes(data)
    os.chown(path, owner, owner)
    path.chmod(mode)
    return path


def directory(path: Path, *, owner: int, mode: int) -> Path:
    path.mkdir()
    os.chown(path, owner, owner)
    path.chmod(mode)
    return path


@pytest.fixture
def room(user: int) -> Iterator[tuple[Path, Path]]:
    """A directory others can write (``shared``, mode 0777) and one of gc's user's own
    (``home``, mode 0755), both owned by gc's user."""
    base = Path(tempfile.mkdtemp(prefix="axe-co-users-"))
    base.chmod(0o711)
    try:
        yield (
            directory(base / "shared", owner=user, mode=0o777),
            directory(base / "home", owner=user, mode=0o755),
        )
    finally:
        for path in base.rglob("*"):
            subprocess.run(["chattr", "-i", str(path)], capture_output=True, check=False)
        shutil.rmtree(base)


@contextlib.contextmanager
def replanting(at: Path, target: Path) -> Iterator[None]:
    """Another user re-creating a link at ``at`` to ``target`` as fast as it can."""
    stop = threading.Event()

    def plant() -> None:
        while not stop.is_set():
            with contextlib.suppress(OSError):
                os.symlink(target, at)

    planter = threading.Thread(target=plant, daemon=True)
    planter.start()
    try:
        yield
    finally:
        stop.set()
        planter.join()
        with contextlib.suppress(OSError):
            at.unlink()


def status(path: Path) -> tuple[bytes, int, int, int]:
    found = os.stat(path)
    return path.read_bytes(), found.st_uid, found.st_gid, found.st_mode


@pytest.mark.parametrize("side_file", ["intent record", "lock"])
def test_a_link_replanted_in_a_loop_never_leads_gc_to_its_target(
    user: int, room: tuple[Path, Path], side_file: str
) -> None:
    """A co-user re-planting a link where gc's intent record (or lock) goes, in a loop,
    while `gc --archive` runs ten times: the file the link points at keeps its bytes, owner
    and mode, each run ends trimmed or refused in one line, and the log is never cut wrong."""
    shared, home = room
    memory = shared / "v.md"
    victim = make(home / "victim", b"precious\n", owner=user, mode=0o600)
    before = status(victim)
    at = intent_path(memory) if side_file == "intent record" else sidecar(memory, ".lock")
    with replanting(at, victim):
        for _ in range(10):
            make(memory, entries(5), owner=user)
            done = gc(user, memory, archive=True)
            assert done.returncode in (0, 1), done.stderr
            assert len(done.stdout.splitlines()) == done.returncode, done.stdout
            assert memory.read_bytes() in (entries(5), TRIMMED)
            assert status(victim) == before
    assert status(victim) == before


def intent_for(memory: Path, removed: bytes) -> bytes:
    """A whole intent record naming ``memory`` as it is, as if a gc had begun to archive
    its first ``removed`` bytes into an archive that was empty."""
    found = os.stat(memory)
    return json.dumps(
        {
            "archive_size": 0,
            "archive_existed": True,
            "length": len(removed),
            "sha256": hashlib.sha256(removed).hexdigest(),
            "device": found.st_dev,
            "inode": found.st_ino,
        }
    ).encode()


def test_an_intent_record_another_user_planted_is_refused(
    user: int, room: tuple[Path, Path]
) -> None:
    """A plain gc (no --archive) finding an intent record another user planted refuses it in
    one line naming it: the archive keeps its 188 bytes, the memory file its entries."""
    shared, _ = room
    memory = make(shared / "v.md", entries(5), owner=user)
    archive = make(archive_path(memory), b"x" * 188, owner=user)
    planted = make(
        intent_path(memory), intent_for(memory, entry(0)), owner=ANOTHER_USER, mode=0o666
    )
    done = gc(user, memory)
    assert (done.returncode, done.stdout) == (
        1,
        f"{planted} belongs to another user (uid {ANOTHER_USER}), {NOT_TRUSTED}\n",
    )
    assert (archive.read_bytes(), memory.read_bytes()) == (b"x" * 188, entries(5))
    assert planted.exists()


def test_a_lock_sidecar_another_user_planted_is_refused(user: int, room: tuple[Path, Path]) -> None:
    """A lock sidecar another user planted (one gc's user cannot even open, as a plain
    user) neither turns locking off nor takes gc's pid: refused in one line, nothing changed."""
    shared, _ = room
    memory = make(shared / "v.md", entries(5), owner=user)
    planted = make(sidecar(memory, ".lock"), b"", owner=ANOTHER_USER, mode=0o600)
    done = gc(user, memory)
    assert (done.returncode, done.stdout) == (
        1,
        f"{planted} belongs to another user (uid {ANOTHER_USER}), {NOT_TRUSTED}\n",
    )
    assert (planted.read_bytes(), memory.read_bytes()) == (b"", entries(5))


@pytest.mark.parametrize("kind", ["a link to a file of ours", "another user's file"])
def test_in_a_directory_others_can_write_gc_trims_only_its_users_own_file(
    user: int, room: tuple[Path, Path], kind: str
) -> None:
    """A co-user replaces v.md with a link to a file of ours elsewhere, or puts their own
    file there: gc refuses it in one line saying why and how to fix it; nothing is trimmed,
    archived or left beside it."""
    shared, home = room
    memory = shared / "v.md"
    if kind == "another user's file":
        make(memory, entries(5), owner=ANOTHER_USER, mode=0o666)
        why = f"belongs to another user (uid {ANOTHER_USER})"
        rule = "gc trims only its own files there"
    else:
        notes = make(home / "notes.md", entries(5), owner=user)
        memory.symlink_to(notes)
        why, rule = "is a symbolic link", "gc follows no link there"
    done = gc(user, memory, archive=True)
    assert (done.returncode, done.stdout) == (
        1,
        f"memory file {memory} {why}, and {shared} is writable by others: {rule} "
        f"(run chmod go-w {shared}); nothing was changed\n",
    )
    assert memory.read_bytes() == entries(5)
    assert sorted(os.listdir(shared)) == ["v.md"]
    assert sorted(os.listdir(home)) == ([] if kind == "another user's file" else ["notes.md"])


@pytest.mark.parametrize("user", [PLAIN_USER], ids=["as a plain user"], indirect=True)
def test_a_memory_file_its_user_may_not_read_is_refused_in_one_line(
    user: int, room: tuple[Path, Path]
) -> None:
    """Run by a user who may not read the memory file (mode 000), gc says so in one line,
    exit 1, and leaves the file as it was (root, who reads any file, is not asked)."""
    memory = make(room[1] / "v.md", entries(5), owner=user, mode=0o000)
    done = gc(user, memory)
    assert (done.returncode, done.stdout) == (
        1,
        f"cannot read memory file {memory}: Permission denied\n",
    )
    memory.chmod(0o644)
    assert memory.read_bytes() == entries(5)


@pytest.mark.parametrize("mode", [0o777, 0o1777], ids=["open", "sticky"])
def test_a_link_above_the_memory_file_where_others_can_write_is_not_followed(
    user: int, room: tuple[Path, Path], mode: int
) -> None:
    """A co-user swaps a directory on the memory file's path, in a directory others can
    write, for a link to another directory of ours: gc refuses it in one line, and the file
    of the same name there is neither trimmed nor given side files. The fix it gives never
    closes a sticky directory such as /tmp, which others must be able to write."""
    shared, home = room
    shared.chmod(mode)
    notes = make(home / "v.md", entries(5), owner=user)
    link = shared / "bot"
    link.symlink_to(home)
    done = gc(user, link / "v.md", archive=True)
    fix = f"use a memory.path outside {shared}" if mode & 0o1000 else f"run chmod go-w {shared}"
    assert (done.returncode, done.stdout) == (
        1,
        f"directory on the memory file's path {link} is a symbolic link, and {shared} is "
        f"writable by others: gc follows no link there ({fix}); nothing was changed\n",
    )
    assert notes.read_bytes() == entries(5)
    assert sorted(os.listdir(home)) == ["v.md"]


def test_a_directory_of_another_user_is_shared_too(user: int, room: tuple[Path, Path]) -> None:
    """Run as root on a file in a directory another user owns (which that user could fill
    with links), gc trims only root's own files there; a user's gc in its own is as always."""
    _, home = room
    memory = make(home / "v.md", entries(5), owner=user)
    if user:  # the plain user's own directory: not shared
        assert gc(user, memory).returncode == 0
        assert memory.read_bytes() == TRIMMED
        return
    os.chown(home, PLAIN_USER, PLAIN_USER)
    os.chown(memory, PLAIN_USER, PLAIN_USER)
    done = gc(user, memory)
    assert (done.returncode, done.stdout) == (
        1,
        f"memory file {memory} belongs to another user (uid {PLAIN_USER}), and {home} belongs "
        f"to another user (uid {PLAIN_USER}): gc trims only its own files there (run gc as "
        "that user); nothing was changed\n",
    )
    assert memory.read_bytes() == entries(5)


def test_an_archive_another_user_owns_never_receives_removed_entries(
    user: int, room: tuple[Path, Path]
) -> None:
    """A 0666 archive a co-user planted is refused in one line: our removed (private)
    entries never go there, and the memory file is not trimmed."""
    shared, _ = room
    memory = make(shared / "v.md", entries(5), owner=user, mode=0o600)
    planted = make(archive_path(memory), b"theirs\n", owner=ANOTHER_USER, mode=0o666)
    done = gc(user, memory, archive=True)
    assert (done.returncode, done.stdout) == (
        1,
        f"{planted} belongs to another user (uid {ANOTHER_USER}), {NOT_TRUSTED}\n",
    )
    assert (planted.read_bytes(), memory.read_bytes()) == (b"theirs\n", entries(5))
    assert sorted(os.listdir(shared)) == ["v.md", "v.md.archive"]


def test_an_archive_link_in_a_directory_others_can_write_is_not_followed(
    user: int, room: tuple[Path, Path]
) -> None:
    """Where others can write, a link at the archive's name is never followed, even to a
    file of ours: refused in one line, nothing appended, nothing trimmed."""
    shared, home = room
    memory = make(shared / "v.md", entries(5), owner=user)
    ours = make(home / "kept.archive", b"", owner=user)
    archive_path(memory).symlink_to(ours)
    done = gc(user, memory, archive=True)
    assert (done.returncode, done.stdout) == (
        1,
        f"archive {archive_path(memory)} is a symbolic link, and {shared} is writable by "
        f"others: gc follows no link there (run chmod go-w {shared}); nothing was changed\n",
    )
    assert (ours.read_bytes(), memory.read_bytes()) == (b"", entries(5))


@pytest.mark.parametrize("target_directory", [True, False], ids=["can be made", "cannot"])
def test_a_dangling_archive_link_is_followed_to_make_its_target_and_kept(
    user: int, room: tuple[Path, Path], target_directory: bool
) -> None:
    """Archives kept elsewhere, the target not made yet: gc makes it through the link,
    which stays; where it cannot, one line says it is a dangling link and names the target,
    and the link is still there."""
    _, home = room
    memory = make(home / "v.md", entries(5), owner=user)
    elsewhere = home / "archives"
    if target_directory:
        directory(elsewhere, owner=user, mode=0o755)
    target = elsewhere / "v.md.archive"
    archive_path(memory).symlink_to(target)
    done = gc(user, memory, archive=True)
    assert archive_path(memory).is_symlink()
    if target_directory:
        assert (done.returncode, done.stdout) == (0, "")
        assert (target.read_bytes(), memory.read_bytes()) == (entries(3), TRIMMED)
        assert os.stat(target).st_uid == user
    else:
        assert (done.returncode, done.stdout) == (
            1,
            f"cannot archive removed entries to {archive_path(memory)}: it is a dangling link "
            f"to {target}, which cannot be created (No such file or directory); the memory "
            "file was not changed\n",
        )
        assert memory.read_bytes() == entries(5)
    assert sorted(os.listdir(home)) == sorted(
        ["v.md", "v.md.archive", *["archives"] * target_directory]
    )


def test_an_archive_that_refuses_the_append_leaves_nothing_to_settle(
    user: int, room: tuple[Path, Path]
) -> None:
    """An immutable archive (chattr +i, as root) or a read-only one (as a plain user): the
    --archive run fails in one line with nothing changed and no intent record left, so the
    next gc of that agent simply trims."""
    _, home = room
    memory = make(home / "v.md", entries(5), owner=user)
    archive = make(archive_path(memory), entry(100), owner=user, mode=0o444)
    if not user and subprocess.run(["chattr", "+i", str(archive)], check=False).returncode:
        pytest.skip("this filesystem (or this container) has no immutable files")
    refused = "Permission denied" if user else "Operation not permitted"
    failed = gc(user, memory, archive=True)
    assert (failed.returncode, failed.stdout) == (
        1,
        f"cannot archive removed entries to {archive}: {refused}; the memory file was not "
        "changed\n",
    )
    assert sorted(os.listdir(home)) == ["v.md", "v.md.archive"]
    assert (gc(user, memory).returncode, memory.read_bytes()) == (0, TRIMMED)
    assert archive.read_bytes() == entry(100)


@pytest.fixture
def server() -> Iterator[LoopbackLLM]:
    with loopback_llm() as llm:
        yield llm


@pytest.mark.parametrize("dry_run", [False, True], ids=["gc", "gc --dry-run"])
def test_a_refused_memory_file_costs_no_request(
    home: AxeHome, server: LoopbackLLM, tmp_path: Path, dry_run: bool
) -> None:
    """The installed axe refuses a linked memory file in a directory others can write
    before it reads it: exit 1, the one line on stderr, and no request sent (with
    --dry-run too, which takes no lock)."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    notes = tmp_path / "notes.md"
    notes.write_bytes(entries(5))
    (shared / "v.md").symlink_to(notes)
    home.add_agent("v", model="ollama/m", last_n=2, path=str(shared / "v.md"))
    env = environment({**home.env, "AXE_OLLAMA_BASE_URL": server.url})
    command = [str(INSTALLED_AXE), "gc", "v", *(["--dry-run"] if dry_run else [])]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1].endswith(
        f"memory file {shared / 'v.md'} is a symbolic link, and {shared} is writable by "
        f"others: gc follows no link there (run chmod go-w {shared}); nothing was changed"
    )
    assert server.prompts == []
    assert notes.read_bytes() == entries(5)
