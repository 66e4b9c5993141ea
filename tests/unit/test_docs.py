"""What the README and docs/ show is true: snippets run as printed, every link leads somewhere."""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from tests.support import AxeHome, entries

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
EMBEDDING = DOCS / "embedding.md"
PAGES = [README, ROOT / "architecture.md", *sorted(DOCS.rglob("*.md"))]
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
_ABSOLUTE = ("http://", "https://", "mailto:")


def embedding_examples() -> list[str]:
    blocks = re.findall(r"```python\n(.*?)```", EMBEDDING.read_text(), re.DOTALL)
    assert len(blocks) == 2, "the embedding page has a frontend and its test"
    return blocks


def run(code: str, namespace: dict[str, Any]) -> None:
    exec(compile(code, str(EMBEDDING), "exec"), namespace)


def anchors(page: Path) -> set[str]:
    """GitHub's anchors for a page's headings: lower case, punctuation dropped, spaces to -."""
    headings = re.findall(r"^#+ (.*)$", page.read_text(), re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-") for heading in headings}


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.relative_to(ROOT).as_posix())
def test_every_local_link_leads_to_a_file_and_heading_that_exist(page: Path) -> None:
    """Each relative link in the README, architecture.md and docs/ names a file that exists
    and, after a #, a heading of that file."""
    broken = []
    for target in _LINK.findall(page.read_text()):
        if target.startswith(_ABSOLUTE):
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.is_file() or (anchor and anchor not in anchors(linked)):
            broken.append(target)
    assert broken == []


def _shipped(path: Path) -> bool:
    """Whether the source distribution holds ``path``: what setuptools always adds (the
    package, the metadata files) and what MANIFEST.in includes or grafts."""
    rules = [line.split() for line in (ROOT / "MANIFEST.in").read_text().splitlines()]
    included = {name for rule in rules if rule and rule[0] == "include" for name in rule[1:]}
    grafted = {name for rule in rules if rule and rule[0] == "graft" for name in rule[1:]}
    parts = path.relative_to(ROOT).parts
    return parts[0] in {"src", "README.md", "pyproject.toml", *included} or any(
        parts[: len(Path(tree).parts)] == Path(tree).parts for tree in grafted
    )


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.relative_to(ROOT).as_posix())
def test_a_page_names_nothing_outside_the_repository(page: Path) -> None:
    """A clone, or the source distribution, holds everything the README and docs/ link to,
    and everything the README names: no link, and no path in the README's text
    (``../shared/spec/...``), leads out of the repository or to a file that does not ship.
    (docs/ may quote hostile names such as ``axe gc ../victim``.)"""
    text = page.read_text()
    named = [target.partition("#")[0] for target in _LINK.findall(text)]
    if page == README:
        named += re.findall(r"(?<![\w/.])((?:\.\./)+[\w./-]*)", text)
    outside = [
        target
        for target in named
        if target
        and not target.startswith(_ABSOLUTE)
        and (
            not (page.parent / target).resolve().is_relative_to(ROOT)
            or not _shipped((page.parent / target).resolve())
        )
    ]
    assert outside == []


def test_the_package_index_page_has_no_link_that_breaks_there() -> None:
    """The long description (pyproject's readme) is shown on a package index, where a
    relative link or an anchor leads nowhere: every link it has is absolute, and the
    commands it shows are the README's."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    page = (ROOT / project["readme"]).read_text()
    targets = _LINK.findall(page) + re.findall(r"^\[[^\]]+\]:\s*(\S+)", page, re.MULTILINE)
    targets += re.findall(r"(?:href|src)=[\"']([^\"']+)", page)
    assert [target for target in targets if not target.startswith(_ABSOLUTE)] == []
    readme = README.read_text()
    commands = re.findall(r"^axe .*$", page, re.MULTILINE)
    assert len(commands) > 5
    assert commands == re.findall(r"^axe .*$", readme, re.MULTILINE)


def test_the_package_index_page_says_what_the_readme_says() -> None:
    """What the project is (its first paragraph, the providers it runs on) is the README's,
    word for word, on the index page too."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    page = (ROOT / project["readme"]).read_text()
    first = re.search(r"^\[axe\]\(.*?\n\n", README.read_text(), re.MULTILINE | re.DOTALL)
    assert first is not None
    assert "eleven providers" in first.group(0)
    assert first.group(0) in page


def test_every_test_the_troubleshooting_table_names_exists() -> None:
    """Each row of docs/troubleshooting.md names a test that is really in tests/."""
    named = set(re.findall(r"`(test_\w+)`", (DOCS / "troubleshooting.md").read_text()))
    defined = {
        name
        for source in (ROOT / "tests").rglob("test_*.py")
        for name in re.findall(r"^def (test_\w+)", source.read_text(), re.MULTILINE)
    }
    assert len(named) > 40
    assert sorted(named - defined) == []


def test_the_readme_points_at_every_docs_page_and_stays_short() -> None:
    """A newcomer finds every page under docs/ from the README, which stays a front page."""
    text = README.read_text()
    assert [
        page.name for page in sorted(DOCS.glob("*.md")) if f"](docs/{page.name})" not in text
    ] == []
    assert len(text.splitlines()) <= 220


def test_the_embedding_frontend_runs_on_the_real_adapters(
    home: AxeHome, capsys: pytest.CaptureFixture[str]
) -> None:
    """The embedding page's frontend example works as printed against a real agent and log."""
    home.add_agent("pr-reviewer", last_n=2)
    home.write_memory("pr-reviewer", entries(5))
    frontend, _ = embedding_examples()
    run(frontend, {"__name__": "readme"})
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == "['pr-reviewer: 5 entries', 'asking builtin/heuristic'] dry_run 0"
    assert printed[1] == "## Patterns Found"
    assert home.memory_path("pr-reviewer").read_bytes() == entries(5)


def test_the_embedding_test_example_passes_on_the_testing_kit(
    home: AxeHome, capsys: pytest.CaptureFixture[str]
) -> None:
    """The embedding page's test of that frontend passes when run on axe.testing's fakes."""
    home.add_agent("pr-reviewer", last_n=2)
    frontend, test = embedding_examples()
    namespace: dict[str, Any] = {"__name__": "readme"}
    run(frontend, namespace)
    capsys.readouterr()
    run(test, namespace)
    namespace["test_the_page_shows_the_entry_count_then_the_model"]()


def test_the_offline_sample_in_the_docs_is_what_axe_prints(home: AxeHome) -> None:
    """docs/offline-analyst.md shows the built-in analyst's report as it really looks: the demo's log,
    analysed now, prints exactly the sample's lines."""

    from click.testing import CliRunner

    from axe.cli.commands import cli

    sys.path.insert(0, str(ROOT / "scripts"))
    import demo

    (home.config / "agents" / f"{demo.AGENT}.toml").write_text(demo.AGENT_TOML)
    home.write_memory(demo.AGENT, demo.sample_log())
    section = (DOCS / "offline-analyst.md").read_text().split("`make demo`'s, verbatim", 1)[1]
    sample = re.search(r"```\n(.*?)```", section, re.DOTALL)
    assert sample, "the page shows the offline sample"
    command, _, printed = sample.group(1).partition("\n")
    assert command == f"$ axe gc {demo.AGENT} --model builtin/heuristic"
    result = CliRunner().invoke(cli, command.split()[2:], catch_exceptions=False)
    assert result.stdout == printed


def test_the_estimates_the_cost_page_shows_are_what_axe_prints(home: AxeHome) -> None:
    """docs/cost.md's `--estimate` examples, on the log it names and with no key, print
    exactly the lines shown, and the warning the page quotes for a keyless estimate."""
    from click.testing import CliRunner

    from axe.cli.commands import cli

    page = (DOCS / "cost.md").read_text()
    home.add_agent("diary", last_n=10)
    home.write_memory("diary", entries(3600))
    examples = re.findall(r"```\n\$ (axe gc diary --estimate.*?)```", page, re.DOTALL)
    assert len(examples) == 2
    for example in examples:
        command, _, printed = example.partition("\n")
        result = CliRunner().invoke(cli, command.split()[1:], catch_exceptions=False)
        assert result.stdout == printed
        assert result.stderr in page
        assert result.stderr.startswith("Warning: anthropic could not count gc's requests")
