"""Print architecture.md's size map: each package of src/axe, its lines, and its modules.

Run it after a change that moves code between packages and paste its table into
architecture.md; ``tests/unit/test_docs.py`` fails when the table drifts far from the code.
"""

from __future__ import annotations

from pathlib import Path

SOURCE = Path(__file__).resolve().parents[1] / "src" / "axe"
SMALLEST = 20  # lines; the entry points and package markers are not worth a row


def packages() -> dict[str, int]:
    """Lines per package (a top-level module counts as its own package), in source order."""
    sizes: dict[str, int] = {}
    for path in sorted(SOURCE.rglob("*.py")):
        relative = path.relative_to(SOURCE)
        parts = relative.parts
        if parts[0] == "adapters" and len(parts) > 2:
            key = f"adapters/{parts[1]}/"
        elif len(parts) > 1:
            key = f"{parts[0]}/"
        else:
            key = parts[0]
        sizes[key] = sizes.get(key, 0) + len(path.read_text().splitlines())
    return sizes


def main() -> None:
    for name, lines in packages().items():
        if lines >= SMALLEST:
            print(f"| `{name}` | {lines:,} |")


if __name__ == "__main__":
    main()
