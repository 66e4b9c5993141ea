"""Where agents are found: --agents-dir, ./axe/agents (only when yours alone), the config dir."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from axe.adapters.agents.repository import Guarded, TomlAgentRepository, agents_directories
from axe.domain.errors import ConfigError
from axe.domain.events import AgentsIgnored, Exposure, NoAgentsDirectory
from tests.support import agent_toml

ME = os.geteuid() if hasattr(os, "geteuid") else 1000
SOMEONE_ELSE = 4242 if ME != 4242 else 4243
as_root = pytest.mark.skipif(ME != 0, reason="giving a file to another user needs root")


class Places:
    """Three agents directories in the order gc searches them, and what the repository
    reported about them."""

    def __init__(self, root: Path) -> None:
        self.chosen = root / "chosen"
        self.working = root / "work" / "axe" / "agents"
        self.config = root / "config" / "axe" / "agents"
        for directory in (self.chosen, self.working, self.config):
            directory.mkdir(parents=True)
            directory.chmod(0o755)
        self.reported: list[AgentsIgnored | NoAgentsDirectory] = []

    def add(self, directory: Path, name: str, *, mode: int = 0o644) -> Path:
        """``name``.toml whose display name says which place it is in."""
        path = directory / f"{name}.toml"
        path.write_text(agent_toml(name=self.label(directory)))
        path.chmod(mode)
        return path

    def label(self, directory: Path) -> str:
        labels = {self.chosen: "chosen", self.working: "working", self.config: "config"}
        return labels.get(directory, "elsewhere")

    def repository(self, euid: int | None = ME, profile: Path | None = None) -> TomlAgentRepository:
        return TomlAgentRepository(
            [self.chosen, Guarded(self.working, euid, profile), self.config],
            report=self.reported.append,
        )


@pytest.fixture
def places(tmp_path: Path) -> Places:
    return Places(tmp_path)


def where(repository: TomlAgentRepository, name: str) -> str:
    return repository.load(name).display_name


def test_the_first_place_holding_the_agent_wins(places: Places) -> None:
    """--agents-dir before ./axe/agents before the config dir, for one and the same name."""
    for directory in (places.chosen, places.working, places.config):
        places.add(directory, "a")
    assert where(places.repository(), "a") == "chosen"
    (places.chosen / "a.toml").unlink()
    assert where(places.repository(), "a") == "working"
    (places.working / "a.toml").unlink()
    assert where(places.repository(), "a") == "config"
    assert places.reported == []


def test_all_lists_every_place_once_per_name_in_name_order(places: Places) -> None:
    """--all: the union of the three directories, a name found twice counted once."""
    places.add(places.chosen, "zeta")
    places.add(places.chosen, "mid")
    places.add(places.working, "alpha")
    places.add(places.working, "mid")
    places.add(places.config, "beta")
    places.add(places.config, "zeta")
    assert places.repository().list_names() == ["alpha", "beta", "mid", "zeta"]


def test_a_missing_place_is_simply_not_searched(places: Places) -> None:
    """No ./axe/agents (the usual case) and no config dir: the others still answer."""
    places.working.rmdir()
    places.config.rmdir()
    places.add(places.chosen, "a")
    repository = places.repository()
    assert (repository.list_names(), where(repository, "a")) == (["a"], "chosen")
    assert places.reported == []


@pytest.mark.parametrize("mode", [0o775, 0o757, 0o777, 0o1777])
def test_a_working_directory_others_can_write_is_ignored(places: Places, mode: int) -> None:
    """./axe/agents writable by group or others is skipped whole, with one report saying
    why, and the same name is found in the config dir instead."""
    places.add(places.working, "a")
    places.add(places.working, "only-here")
    places.add(places.config, "a")
    places.working.chmod(mode)
    repository = places.repository()
    assert (repository.list_names(), where(repository, "a")) == (["a"], "config")
    ignored = AgentsIgnored(str(places.working), Exposure.WRITABLE, mode=mode)
    assert set(places.reported) == {ignored}


def test_a_working_directory_of_another_user_is_ignored(places: Places) -> None:
    """./axe/agents that belongs to someone else is skipped, naming its owner (as root the
    directory is given away; otherwise gc is told it runs as someone else)."""
    places.add(places.working, "a")
    if ME == 0:
        os.chown(places.working, SOMEONE_ELSE, -1)
    repository = places.repository(euid=ME if ME == 0 else SOMEONE_ELSE)
    assert repository.list_names() == []
    owner = places.working.stat().st_uid
    assert places.reported == [AgentsIgnored(str(places.working), Exposure.OWNER, owner=owner)]


def test_a_file_others_can_write_is_ignored_and_the_next_place_used(places: Places) -> None:
    """One group-writable file in a safe ./axe/agents: that file is skipped (reported
    once per look), the rest of the directory is used, and the name falls through."""
    path = places.add(places.working, "a", mode=0o664)
    places.add(places.working, "b")
    places.add(places.config, "a")
    repository = places.repository()
    assert repository.list_names() == ["a", "b"]
    assert (where(repository, "a"), where(repository, "b")) == ("config", "working")
    assert set(places.reported) == {AgentsIgnored(str(path), Exposure.WRITABLE, mode=0o664)}


@as_root
def test_a_file_of_another_user_is_ignored(places: Places) -> None:
    """A file in your own ./axe/agents that another user owns is skipped."""
    path = places.add(places.working, "a")
    os.chown(path, SOMEONE_ELSE, -1)
    places.add(places.working, "b")
    repository = places.repository()
    assert repository.list_names() == ["b"]
    with pytest.raises(ConfigError, match='agent "a" not found'):
        repository.load("a")
    assert set(places.reported) == {AgentsIgnored(str(path), Exposure.OWNER, owner=SOMEONE_ELSE)}


@as_root
def test_a_link_to_a_file_of_another_user_is_ignored(places: Places, tmp_path: Path) -> None:
    """A symbolic link is judged by the file it leads to, as that file is opened."""
    target = places.add(tmp_path, "theirs")
    os.chown(target, SOMEONE_ELSE, -1)
    (places.working / "a.toml").symlink_to(target)
    with pytest.raises(ConfigError, match='agent "a" not found'):
        places.repository().load("a")
    assert places.reported[0] == AgentsIgnored(
        str(places.working / "a.toml"), Exposure.OWNER, owner=SOMEONE_ELSE
    )


@as_root
def test_files_of_root_are_trusted_for_any_user(places: Places) -> None:
    """Root can write anything anyway: its files and directories add no one."""
    places.add(places.working, "a")
    repository = places.repository(euid=SOMEONE_ELSE)
    assert (repository.list_names(), places.reported) == (["a"], [])


def test_without_user_ids_only_the_profile_is_trusted(places: Places, tmp_path: Path) -> None:
    """Where ownership cannot be read (Windows), ./axe/agents is used inside the user's
    profile and skipped elsewhere, saying so."""
    places.add(places.working, "a")
    assert places.repository(euid=None, profile=tmp_path).list_names() == ["a"]
    assert places.reported == []
    elsewhere = places.repository(euid=None, profile=tmp_path / "config")
    assert elsewhere.list_names() == []
    assert places.reported == [AgentsIgnored(str(places.working), Exposure.UNCHECKED)]


def test_no_directory_at_all_is_reported_with_where_gc_looked(tmp_path: Path) -> None:
    """Listing with none of the places there reports each place searched, in order."""
    reported: list[AgentsIgnored | NoAgentsDirectory] = []
    places = [tmp_path / "w" / "axe" / "agents", tmp_path / "c" / "agents"]
    assert TomlAgentRepository(places, report=reported.append).list_names() == []
    assert reported == [NoAgentsDirectory(tuple(map(str, places)))]


def test_an_empty_directory_is_not_reported_as_missing(places: Places) -> None:
    """An agents directory that exists but is empty is no reason to say anything."""
    assert (places.repository().list_names(), places.reported) == ([], [])


def test_a_missing_agent_lists_the_agents_there_are(places: Places) -> None:
    """Not found: where gc looked, then the agents that do exist."""
    places.add(places.chosen, "zeta")
    places.add(places.config, "alpha")
    with pytest.raises(ConfigError) as caught:
        places.repository().load("ghost")
    assert str(caught.value) == (
        f'agent "ghost" not found (looked in {places.chosen}, {places.working} and '
        f"{places.config}); existing agents: alpha, zeta"
    )


def test_a_long_list_of_agents_is_cut_short(places: Places) -> None:
    """More than ten agents: the first ten, and how many more."""
    for index in range(13):
        places.add(places.config, f"agent-{index:02d}")
    with pytest.raises(ConfigError) as caught:
        places.repository().load("ghost")
    assert str(caught.value).endswith(
        "; existing agents: agent-00, agent-01, agent-02, agent-03, agent-04, agent-05, "
        "agent-06, agent-07, agent-08, agent-09 and 3 more"
    )


@pytest.mark.parametrize(("typed", "meant"), [("good.toml", "good"), ("god", "good")])
def test_a_near_miss_suggests_the_agent_meant(places: Places, typed: str, meant: str) -> None:
    """`axe gc good.toml` (or a typo) asks whether `good` was meant."""
    places.add(places.config, "good")
    places.add(places.config, "other")
    with pytest.raises(ConfigError) as caught:
        places.repository().load(typed)
    assert str(caught.value).endswith(f'); did you mean "{meant}"?')


def test_with_no_agents_it_says_where_to_write_one(places: Places) -> None:
    """No agents anywhere: the file to create, in the config dir's agents directory."""
    with pytest.raises(ConfigError) as caught:
        places.repository().load("pr-reviewer")
    assert str(caught.value).endswith(
        f"; there are no agents yet: write one to {places.config / 'pr-reviewer.toml'}"
    )


def test_the_places_are_chosen_then_working_then_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--agents-dir as given, ./axe/agents of the working directory guarded, the config dir."""
    monkeypatch.chdir(tmp_path)
    environ = {"XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    assert agents_directories(environ, tmp_path, euid=7) == [
        tmp_path,
        Guarded(tmp_path / "axe" / "agents", 7, None),
        tmp_path / "cfg" / "axe" / "agents",
    ]


def test_an_agents_dir_that_is_the_working_one_is_used_as_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--agents-dir ./axe/agents is the user's explicit choice: not guarded, not twice."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "axe" / "agents").mkdir(parents=True)
    environ = {"XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    chosen = Path("axe/agents")
    assert agents_directories(environ, chosen) == [chosen, tmp_path / "cfg" / "axe" / "agents"]


@pytest.mark.parametrize(("make", "why"), [(False, "no such directory"), (True, "not a directory")])
def test_an_agents_dir_that_is_not_a_directory_is_a_config_error(
    tmp_path: Path, make: bool, why: str
) -> None:
    """A mistyped --agents-dir is exit 2 at once, rather than silently finding others."""
    chosen = tmp_path / "agnets"
    if make:
        chosen.write_text("")
    with pytest.raises(ConfigError) as caught:
        agents_directories({"XDG_CONFIG_HOME": str(tmp_path)}, chosen)
    assert str(caught.value) == f'--agents-dir "{chosen}": {why}'


def test_a_removed_working_directory_is_no_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run from a directory that was deleted: only the other places are searched."""
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    environ = {"XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    assert agents_directories(environ) == [tmp_path / "cfg" / "axe" / "agents"]
