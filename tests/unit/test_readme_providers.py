"""The README's provider table lists exactly the catalogue's rows (and the offline analyst)."""

from __future__ import annotations

import re
from pathlib import Path

from axe.adapters.llm.catalogue import CATALOGUE

README = Path(__file__).resolve().parents[2] / "README.md"


def table_rows() -> list[tuple[str, ...]]:
    section = README.read_text().split("\n## Providers\n", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("| `")]
    return [tuple(cell.strip() for cell in line.strip("|").split("|")) for line in lines]


def test_the_provider_table_lists_exactly_the_catalogue() -> None:
    """Every provider gc knows has a row, and every row is a provider gc knows."""
    names = [re.sub(r"`(\w+).*`", r"\1", row[0]) for row in table_rows()]
    assert names == [*CATALOGUE, "builtin"]


def test_each_rows_key_variable_and_default_base_are_the_catalogues() -> None:
    """The key variable and default base URL printed are the ones gc uses."""
    for name, variable, base, _ in table_rows()[: len(CATALOGUE)]:
        row = CATALOGUE[name.strip("`")]
        if row.key_variable:
            assert variable == f"`{row.key_variable}`"
        assert base == f"`{row.base_url}`"
