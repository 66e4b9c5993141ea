"""The shape of src/axe: no block too tangled to read at once (radon's cyclomatic
complexity of every function, method, class and closure at most 12), and no provider known
outside the LLM adapter."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from radon.complexity import add_inner_blocks, cc_visit

from axe.adapters.llm.catalogue import CATALOGUE

SOURCE = Path(__file__).resolve().parents[2] / "src" / "axe"
MOST = 12


def test_no_block_is_more_complex_than_twelve() -> None:
    """Every block of the code stays simple enough to follow: complexity 12 at most."""
    tangled = [
        f"{path.relative_to(SOURCE).as_posix()}: {block.fullname} ({block.complexity})"
        for path in sorted(SOURCE.rglob("*.py"))
        for block in add_inner_blocks(cc_visit(path.read_text()))
        if block.complexity > MOST
    ]
    assert tangled == []


def spoken(tree: ast.Module) -> Iterator[str]:
    """The names and the string literals of a module's code, docstrings and comments left
    out: what the code says, not what it explains."""
    documented = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, documented) and node.body and isinstance(node.body[0], ast.Expr)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if id(node) not in docstrings:
                yield node.value
        elif isinstance(node, ast.Name | ast.alias):
            yield node.id if isinstance(node, ast.Name) else node.name
        elif isinstance(node, ast.Attribute | ast.FunctionDef | ast.ClassDef):
            yield node.attr if isinstance(node, ast.Attribute) else node.name


def test_the_core_knows_no_provider() -> None:
    """The use case and the domain name no provider and nothing of AWS: a provider is
    added, changed or removed in the LLM adapter alone."""
    named = {*CATALOGUE, "aws"}
    found = [
        f"{path.relative_to(SOURCE).as_posix()}: {word}"
        for package in ("application", "domain")
        for path in sorted((SOURCE / package).rglob("*.py"))
        for text in spoken(ast.parse(path.read_text()))
        for word in re.findall(r"[a-z0-9]+", text.lower())
        if word in named
    ]
    assert found == []
