"""Helpers that write the files axe reads: agent TOML and memory logs as `axe run` writes them."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

INSTALLED_BIN = Path(sys.executable).parent  # where `make test` installed axe and axe-gc
INSTALLED_AXE = INSTALLED_BIN / "axe"

CANNED_ANALYSIS = (
    "## Patterns Found\nReviews dominate.\n\n## Repeated Work\nNo repeated work detected.\n\n"
    "## Recommendations\nNo specific recommendations."
)


def entry(index: int, task: str | None = None, result: str | None = None) -> bytes:
    """One entry with a unique timestamp, in the exact layout `axe run` appends."""
    day, minute = divmod(index, 1440)
    hour, minute = divmod(minute, 60)
    stamp = f"2026-{1 + day // 28:02d}-{1 + day % 28:02d}T{hour:02d}:{minute:02d}:00Z"
    task = task if task is not None else f"Task number {index}"
    result = result if result is not None else f"Result number {index}"
    return f"## {stamp}\n**Task:** {task}\n**Result:** {result}\n\n".encode()


def entries(count: int, start: int = 0) -> bytes:
    return b"".join(entry(i) for i in range(start, start + count))


def agent_toml(
    *,
    name: str = "helper",
    model: str = "anthropic/claude-3",
    enabled: bool | None = True,
    last_n: int | None = None,
    max_entries: int | None = None,
    path: str | None = None,
) -> str:
    lines = [f'name = "{name}"', f'model = "{model}"']
    if enabled is not None:
        lines.append("[memory]")
        lines.append(f"enabled = {'true' if enabled else 'false'}")
        if last_n is not None:
            lines.append(f"last_n = {last_n}")
        if max_entries is not None:
            lines.append(f"max_entries = {max_entries}")
        if path is not None:
            lines.append(f'path = "{path}"')
    return "\n".join(lines) + "\n"


class AxeHome:
    """A throw-away config and data directory, as XDG_CONFIG_HOME / XDG_DATA_HOME see them."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.config = root / "config" / "axe"
        self.data = root / "data" / "axe"
        (self.config / "agents").mkdir(parents=True)
        (self.data / "memory").mkdir(parents=True)

    @property
    def env(self) -> dict[str, str]:
        return {
            "XDG_CONFIG_HOME": str(self.root / "config"),
            "XDG_DATA_HOME": str(self.root / "data"),
            "HOME": str(self.root / "home"),
        }

    def add_agent(self, name: str, **settings: object) -> Path:
        path = self.config / "agents" / f"{name}.toml"
        path.write_text(agent_toml(name=name, **settings))  # type: ignore[arg-type]
        return path

    def memory_path(self, name: str) -> Path:
        return self.data / "memory" / f"{name}.md"

    def write_memory(self, name: str, content: bytes) -> Path:
        path = self.memory_path(name)
        path.write_bytes(content)
        return path

    def write_global_config(self, text: str) -> None:
        (self.config / "config.toml").write_text(text)


def run_installed(
    home: AxeHome,
    *args: str,
    program: str = "axe",
    path: list[Path] | None = None,
    stdin: str | None = None,
    timeout: float = 120,
    environment: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    **env: str,
) -> subprocess.CompletedProcess[str]:
    """Run the installed ``program`` in a real process, in ``home``, with ``environment``
    and ``env`` added, from the working directory ``cwd`` (default: this process's).

    ``path`` is the whole PATH when given (which other ``axe`` programs it can find);
    otherwise this environment's PATH is kept.
    """
    search = os.pathsep.join(map(str, path)) if path is not None else os.environ.get("PATH", "")
    return subprocess.run(
        [str(INSTALLED_BIN / program), *args],
        input=stdin,
        capture_output=True,
        text=True,
        env={"PATH": search, **home.env, **(environment or {}), **env},
        timeout=timeout,
        check=False,
        cwd=cwd,
    )
