"""Print the size map of src/axe: per package its lines, its modules and its most complex block.

A package is a directory of modules (``adapters/llm/`` and ``adapters/llm/wire/`` apart);
a module directly under ``axe`` is a row of its own. Complexity is radon's cyclomatic
complexity of a function, method, class or closure, the figure ``tests/unit/test_code_shape.py``
holds at 12. Given a git revision, the map is of that commit's tree, so a before and an
after come from one command:

    python scripts/size_map.py            # the working tree
    python scripts/size_map.py d3d4df2    # a commit
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from attrs import define
from radon.complexity import add_inner_blocks, cc_visit

ROOT = Path(__file__).resolve().parents[1]
SOURCE = "src/axe"


@define
class Package:
    lines: int = 0
    modules: int = 0
    complexity: int = 0
    block: str = ""


def sources(revision: str | None) -> Iterator[tuple[str, str]]:
    """Each module's path below ``src/axe`` and its text, in path order."""
    if revision is None:
        for path in sorted((ROOT / SOURCE).rglob("*.py")):
            yield path.relative_to(ROOT / SOURCE).as_posix(), path.read_text()
        return
    listing = git("ls-tree", "-r", "--name-only", revision, SOURCE).splitlines()
    for name in sorted(name for name in listing if name.endswith(".py")):
        yield name.removeprefix(f"{SOURCE}/"), git("show", f"{revision}:{name}")


def git(*args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout


def size_map(revision: str | None = None) -> dict[str, Package]:
    """Every package's figures, in path order."""
    packages: dict[str, Package] = {}
    for name, text in sources(revision):
        directory, _, module = name.rpartition("/")
        package = packages.setdefault(f"{directory}/" if directory else module, Package())
        package.lines += len(text.splitlines())
        package.modules += 1
        for block in add_inner_blocks(cc_visit(text)):
            if block.complexity > package.complexity:
                package.complexity = block.complexity
                package.block = f"{module.removesuffix('.py')}.{block.fullname}"
    return packages


def main() -> None:
    revision = sys.argv[1] if len(sys.argv) > 1 else None
    packages = size_map(revision)
    print("| package | lines | modules | most complex block |")
    print("|---|--:|--:|---|")
    for name, package in packages.items():
        print(f"| `{name}` | {package.lines:,} | {package.modules} | {worst(package)} |")
    everything = Package(
        lines=sum(package.lines for package in packages.values()),
        modules=sum(package.modules for package in packages.values()),
    )
    top = max(packages.values(), key=lambda package: package.complexity)
    everything.complexity, everything.block = top.complexity, top.block
    print(
        f"| all of `src/axe` | {everything.lines:,} | {everything.modules} | {worst(everything)} |"
    )


def worst(package: Package) -> str:
    return f"{package.block} ({package.complexity})" if package.block else "—"


if __name__ == "__main__":
    main()
