"""The mutation score of each module after `make mutate` (docs/testing.md), as the
Markdown table docs/testing.md records, and every mutant that survived, by name, so each
can be looked at with `mutmut show NAME`.

Reads the results mutmut keeps beside each mutated file (``mutants/**/*.py.meta``). A
timeout counts as caught: the mutant made the tests hang, which a user would see too.
Exits 1 when a mutant survived that docs/testing.md does not list as equivalent or
accepted, so a new survivor is noticed.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MUTANTS = ROOT / "mutants"
LISTED = ROOT / "docs" / "testing.md"

CAUGHT = {1: "killed", 3: "killed", 36: "timeout", -24: "timeout", 24: "timeout", 152: "timeout"}
CAUGHT |= {255: "timeout", -11: "crash", -9: "crash", 37: "type check"}


def _outcome(code: int | None) -> str:
    if code in CAUGHT:
        return "caught"
    return {0: "survived", None: "not run", 33: "no tests", 5: "no tests"}.get(code, "other")


def _timed_out(code: int | None) -> bool:
    return CAUGHT.get(code) == "timeout"  # type: ignore[arg-type]


def _row(module: str, codes: dict[str, int | None]) -> None:
    outcomes = Counter(_outcome(code) for code in codes.values())
    timeouts = sum(_timed_out(code) for code in codes.values())
    caught = outcomes["caught"]
    others = [f"{n} {kind}" for kind, n in outcomes.items() if kind not in {"caught", "survived"}]
    name = module if module == "all" else f"`{module.removeprefix('axe/')}`"
    missed = f"{len(codes) - caught}" + (f" ({', '.join(others)})" if others else "")
    score = f"{caught / len(codes):.1%}"
    print(f"| {name} | {len(codes):,} | {caught:,} ({timeouts}) | {missed} | {score} |")


def main() -> int:
    metas = sorted(MUTANTS.glob("src/**/*.py.meta"))
    if not metas:
        print("no results: run `make mutate` first", file=sys.stderr)
        return 2
    listed = set(re.findall(r"`(axe\.[\w.ǁ]+__mutmut_\d+)`", LISTED.read_text()))
    survivors: list[str] = []
    print("| module | mutants | caught (timeout) | not caught | score |\n|---|---|---|---|---|")
    every: dict[str, int | None] = {}
    for meta in metas:
        codes = json.loads(meta.read_text())["exit_code_by_key"]
        if codes:
            _row(meta.relative_to(MUTANTS / "src").as_posix().removesuffix(".meta"), codes)
        every |= codes
        survivors += sorted(
            (name for name, code in codes.items() if _outcome(code) != "caught"),
            key=lambda name: (name.rsplit("_", 1)[0], int(name.rsplit("_", 1)[1])),
        )
    _row("all", every)
    unlisted = [name for name in survivors if name not in listed]
    print(f"\n{len(survivors)} not caught, {len(unlisted)} of them not in docs/testing.md:")
    for name in unlisted:
        print(f"  {name}")
    stale = sorted(listed - set(survivors))
    print(f"{len(stale)} listed in docs/testing.md that no longer survive (delete them there):")
    for name in stale:
        print(f"  {name}")
    return 1 if unlisted else 0


if __name__ == "__main__":
    sys.exit(main())
