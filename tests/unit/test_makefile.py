"""The Makefile installs what each target needs: the demo only the package, checks the dev
tools; both create .venv when it is missing."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


def planned(target: str, where: Path) -> str:
    """What `make -n <target>` would run in a fresh clone (no .venv)."""
    for name in ("Makefile", "pyproject.toml"):
        shutil.copy(ROOT / name, where / name)
    done = subprocess.run(
        ["make", "-n", target], cwd=where, capture_output=True, text=True, check=True
    )
    return done.stdout


def test_the_demo_installs_only_the_package(tmp_path: Path) -> None:
    """`make demo` creates .venv and installs the package alone, no dev tools."""
    plan = planned("demo", tmp_path)
    assert "-m venv .venv" in plan
    assert "-e ." in plan
    assert "[dev]" not in plan


@pytest.mark.parametrize("target", ["unit", "bench"])
def test_checks_and_benchmarks_install_the_dev_tools(tmp_path: Path, target: str) -> None:
    """`make unit` and `make bench` create .venv and install the dev tools."""
    plan = planned(target, tmp_path)
    assert "-m venv .venv" in plan
    assert "-e '.[dev]'" in plan
