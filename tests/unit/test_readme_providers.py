"""The README's provider table lists exactly the catalogue's rows, the offline analyst's too."""

from __future__ import annotations

import re
from pathlib import Path

from axe.adapters.llm.catalogue import CATALOGUE

README = Path(__file__).resolve().parents[2] / "README.md"


def table_rows() -> list[tuple[str, ...]]:
    section = README.read_text().split("\n## Providers\n", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("| `")]
    return [tuple(cell.strip() for cell in line.strip("|").split("|")) for line in lines]


def provider(cell: str) -> str:
    """The provider a row's first cell names (`builtin/heuristic` is the builtin row's)."""
    return re.sub(r"`(\w+).*`", r"\1", cell)


def test_the_provider_table_lists_exactly_the_catalogue() -> None:
    """Every provider gc knows has a row, and every row is a provider gc knows."""
    assert [provider(row[0]) for row in table_rows()] == [*CATALOGUE]


def test_each_rows_key_variable_and_default_base_are_the_catalogues() -> None:
    """The key variable and default base URL printed are the ones gc uses."""
    for name, variable, base, _ in table_rows():
        row = CATALOGUE[provider(name)]
        if row.key_variable:
            assert variable == f"`{row.key_variable}`"
        assert base == (f"`{row.base_url}`" if row.base_url else "—")
