"""Agent definitions: ``<name>.toml`` in the agents directories, first match wins
(axe-formats.md "Places"): ``--agents-dir``, ``./axe/agents`` (:class:`Guarded`: another
user may control the working directory, and an agent file chooses which file gc trims),
then ``<config dir>/agents``.
"""

from __future__ import annotations

import difflib
import functools
import os
import re
import shlex
import stat
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from attrs import Factory, define, frozen

from axe.adapters.shared.places import config_dir
from axe.adapters.shared.toml import load_toml, structure
from axe.domain import model as domain
from axe.domain.errors import ConfigError
from axe.domain.events import AgentsIgnored, Exposure, NoAgentsDirectory
from axe.domain.model import AgentConfig, quoted, validate_agent, validate_agent_name

Report = Callable[[AgentsIgnored | NoAgentsDirectory], None]
_SHOWN_NAMES = 10  # a not-found message lists at most this many agents
_WRITABLE_BY_OTHERS = stat.S_IWGRP | stat.S_IWOTH


@define(repr=False, eq=False)  # read once into an AgentConfig, never shown or compared
class _AgentFile:
    """An agent file: every key the Go axe knows, type-checked; ``name`` and ``model`` required."""

    name: str
    model: str
    description: str = ""
    system_prompt: str = ""
    skill: str = ""
    files: list[str] = Factory(list)
    workdir: str = ""
    sub_agents: list[str] = Factory(list)
    timeout: int = 0
    sub_agents_config: domain.SubAgentsConfig = Factory(domain.SubAgentsConfig)
    memory: domain.MemoryConfig = Factory(domain.MemoryConfig)
    params: domain.Params = Factory(domain.Params)
    budget: domain.BudgetConfig = Factory(domain.BudgetConfig)


@frozen
class Guarded:
    """A directory another user may control, used only when it and each file read from it
    (checked through the handle it is read from) belong to ``euid`` or root and are writable
    by neither group nor others, as ssh and git refuse unsafe config. Without user ids
    (Windows, ``euid`` None), only inside ``profile``, the user's profile, whose default
    access list admits only the user and administrators.
    """

    path: Path
    euid: int | None
    profile: Path | None = None

    def exposure(self, path: Path, status: os.stat_result) -> AgentsIgnored | None:
        """Why ``path``, this directory or a file in it, must not be used; None if it may."""
        if self.euid is None:  # the directory's place in the profile vouches for its files
            vouched = path != self.path or bool(self.profile and _inside(path, self.profile))
            return None if vouched else AgentsIgnored(str(path), Exposure.UNCHECKED)
        if status.st_uid not in {self.euid, 0}:
            return AgentsIgnored(str(path), Exposure.OWNER, owner=status.st_uid)
        if status.st_mode & _WRITABLE_BY_OTHERS:
            return AgentsIgnored(str(path), Exposure.WRITABLE, mode=stat.S_IMODE(status.st_mode))
        return None

    def refuse(self, path: Path, status: os.stat_result) -> None:
        """Raise :class:`_Refused` if :meth:`exposure` refuses a file as it is opened."""
        if (ignored := self.exposure(path, status)) is not None:
            raise _Refused(ignored)


class _Refused(Exception):  # noqa: N818  (not an error: a file left out; never leaves this module)
    def __init__(self, ignored: AgentsIgnored) -> None:
        self.ignored = ignored


def _same(one: Path, other: Path) -> bool:
    try:
        return one.samefile(other)
    except OSError:  # either is missing or unreadable: not one and the same directory
        return False


def _inside(path: Path, directory: Path) -> bool:
    """``path`` is ``directory`` or lies under it, links resolved, case folded on Windows."""
    path, directory = (Path(os.path.normcase(os.path.realpath(p))) for p in (path, directory))
    return path.is_relative_to(directory)


def agents_directories(
    environ: Mapping[str, str], chosen: Path | None = None, *, euid: int | None = None
) -> list[Path | Guarded]:
    """Where agents are searched, in order: ``chosen`` (``--agents-dir``, used as given),
    ``./axe/agents`` (:class:`Guarded` for ``euid``, by default this process's), then
    ``<config dir>/agents``, where new agents belong.

    Raises:
        ConfigError: ``chosen`` is not a directory (a typo must not go unnoticed).
    """
    places: list[Path | Guarded] = []
    if chosen is not None:
        if not chosen.is_dir():
            why = "not a directory" if chosen.exists() else "no such directory"
            raise ConfigError(f"--agents-dir {quoted(str(chosen))}: {why}")
        places.append(chosen)
    try:
        working = Path.cwd() / "axe" / "agents"
    except OSError:  # the working directory was removed: nothing there to find
        pass
    else:
        if chosen is not None and _same(chosen, working):
            return [*places, config_dir(environ) / "agents"]  # chosen, so used as given
        if euid is None and hasattr(os, "geteuid"):
            euid = os.geteuid()
        profile = environ.get("USERPROFILE", "")
        places.append(Guarded(working, euid, Path(profile) if profile else None))
    places.append(config_dir(environ) / "agents")
    return places


class TomlAgentRepository:
    """Agents from directories of ``<name>.toml`` files, the first holding it winning; what
    it leaves out of a :class:`Guarded` directory, and finding no agents directory, it tells
    ``report`` as facts (by default nobody), each once, however often it looks.
    """

    def __init__(self, directories: Sequence[Path | Guarded], *, report: Report = lambda _: None):
        self._places = [(p.path, p) if isinstance(p, Guarded) else (p, None) for p in directories]
        self._directories = [path for path, _ in self._places]
        self._report = report
        self._told: set[AgentsIgnored | NoAgentsDirectory] = set()

    def load(self, name: str) -> AgentConfig:
        try:
            validate_agent_name(name)
        except ConfigError as refused:
            raise ConfigError(f"{refused}{self._command_for(name)}") from None
        for directory, guard in self._usable():
            path = directory / f"{name}.toml"
            try:
                check = None if guard is None else functools.partial(guard.refuse, path)
                layout = structure(load_toml(path, check=check), _AgentFile, source=str(path))
            except FileNotFoundError:
                continue
            except _Refused as refused:
                self._tell(refused.ignored)
                continue
            agent = AgentConfig(
                name=name,
                model=layout.model,
                display_name=layout.name,
                memory=layout.memory,
                sub_agents=layout.sub_agents_config,
                source=str(path),
                timeout=layout.timeout,
                budget=layout.budget,
            )
            validate_agent(agent)  # its message names the file: the user fixes a file
            return agent
        raise ConfigError(self._not_found(name))

    def list_names(self) -> list[str]:
        names = self._names()
        if not names and not any(path.is_dir() for path in self._directories):
            self._tell(NoAgentsDirectory(tuple(map(str, self._directories))))
        return names

    def _names(self) -> list[str]:
        names: set[str] = set()
        for directory, guard in self._usable():
            try:
                entries = list(os.scandir(directory))
            except FileNotFoundError:
                continue
            except OSError as error:
                why = error.strerror or error
                raise ConfigError(f"cannot list agents in {directory}: {why}") from None
            for entry in entries:
                name = entry.name.removesuffix(".toml")
                if name and name != entry.name and self._trusted(entry.path, guard):
                    names.add(name)
        return sorted(names)

    def _usable(self) -> list[tuple[Path, Guarded | None]]:
        """The directories to look in now: a guarded one only when it exists and is safe."""
        return [
            (directory, guard)
            for directory, guard in self._places
            if guard is None or (directory.is_dir() and self._trusted(directory, guard))
        ]

    def _trusted(self, path: str | Path, guard: Guarded | None) -> bool:
        """Whether ``path`` may be used; what ``guard`` says against it is reported."""
        try:
            ignored = guard.exposure(Path(path), os.stat(path)) if guard else None
        except OSError:  # gone, or a dangling link: loading it would say so
            return True
        if ignored is not None:
            self._tell(ignored)
        return ignored is None

    def _tell(self, fact: AgentsIgnored | NoAgentsDirectory) -> None:
        if fact not in self._told:
            self._told.add(fact)
            self._report(fact)

    def _command_for(self, path: str) -> str:
        """For ``axe gc ./axe/agents/good.toml``, a path where a name belongs: the command
        that runs that agent file (": axe gc good"), or "" when there is none."""
        stem = re.split(r"[/\\]", path)[-1].removesuffix(".toml")
        given = Path(path if path.endswith(".toml") else f"{path}.toml")
        try:
            validate_agent_name(stem)
        except ConfigError:
            return ""
        places = (directory / f"{stem}.toml" for directory, _ in self._usable())
        found = next((place for place in places if place.is_file()), None)
        if found is not None and (not given.is_file() or _same(given, found)):
            return f": axe gc {stem}"
        if given.is_file():
            return f": axe gc {stem} --agents-dir {shlex.quote(str(given.parent))}"
        return ""

    def _not_found(self, name: str) -> str:
        """Where gc looked (not where it refused to), and what the user may have meant or
        where an agent goes."""
        places = self._places
        *others, last = [d for d, g in places if not (g and d.is_dir() and not self._trusted(d, g))]
        looked = f"{', '.join(map(str, others))} and {last}" if others else str(last)
        message = f"agent {quoted(name)} not found (looked in {looked})"
        names = self._names()
        stem = name.removesuffix(".toml")
        if meant := ([stem] if stem in names else difflib.get_close_matches(name, names, 1, 0.75)):
            return f"{message}; did you mean {quoted(meant[0])}?"
        if not names:
            return (
                f"{message}; there are no agents yet: write one to {last / f'{stem or name}.toml'}"
            )
        shown = ", ".join(names[:_SHOWN_NAMES])
        more = len(names) - _SHOWN_NAMES
        return f"{message}; existing agents: {shown}" + (f" and {more} more" if more > 0 else "")
