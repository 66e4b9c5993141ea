"""The built-in analyst: what the report says about hand-written logs, and robustness."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from axe.domain.heuristic import analyse, group_repeated_tasks, normalise, parse_entries
from axe.domain.model import MemoryConfig


def log(*items: tuple[str, str | None, str]) -> bytes:
    parts = []
    for stamp, task, result in items:
        body = f"**Task:** {task}\n**Result:** {result}\n" if task is not None else f"{result}\n"
        parts.append(f"## {stamp}\n{body}\n")
    return "".join(parts).encode()


def section(report: str, heading: str) -> list[str]:
    lines = report.split("\n")
    start = lines.index(f"## {heading}") + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("## ")), len(lines))
    return [line for line in lines[start:end] if line]


CI_FAILURE = "Error: connection refused to ci.internal:443"
SAMPLE = (
    b"My notes, written by hand\n"
    + log(
        ("2026-03-01T08:00:00Z", "Summarise the daily sales report", "Sales up 3%."),
        ("2026-03-01T09:00:00Z", "Check CI status for main", CI_FAILURE),
        ("2026-03-02T08:00:00Z", "summarize daily sales report", "Sales down 1%."),
        ("2026-03-02T09:00:00Z", "Check CI status for main", CI_FAILURE),
        ("2026-03-03T08:00:00Z", "Summarise the daily  sales report!", "Sales up 3%."),
        ("2026-03-03T09:00:00Z", "Check CI status for main", CI_FAILURE),
        ("2026-03-03T10:00:00Z", "Translate README to French", "Done."),
        ("2026-03-03T11:00:00Z", "Translate README to French", "Done."),
        ("2026-03-03T12:00:00Z", "Translate README to French", "Done."),
    )
    + "## 2026-03-03T13:00:00Z\nfree-form note \xff with no task line\n".encode("latin-1")
)


def test_report_has_the_three_headings_in_order() -> None:
    report = analyse(SAMPLE)
    headings = [line for line in report.split("\n") if line.startswith("## ")]
    assert headings == ["## Patterns Found", "## Repeated Work", "## Recommendations"]


def test_repeated_work_groups_exact_repeats_and_rewordings() -> None:
    repeated = section(analyse(SAMPLE), "Repeated Work")
    assert repeated == [
        '- "Check CI status for main": 3 times (2026-03-01T09:00:00Z, 2026-03-02T09:00:00Z, '
        "2026-03-03T09:00:00Z); same result each time.",
        '- "Summarise the daily sales report" (in 2 wordings): 3 times (2026-03-01T08:00:00Z, '
        "2026-03-02T08:00:00Z, 2026-03-03T08:00:00Z); results differ.",
        '- "Translate README to French": 3 times (2026-03-03T10:00:00Z, 2026-03-03T11:00:00Z, '
        "2026-03-03T12:00:00Z); same result each time.",
    ]


def test_patterns_name_kinds_failures_rhythm_and_free_form_entries() -> None:
    patterns = section(analyse(SAMPLE), "Patterns Found")
    assert (
        patterns[0]
        == '- Main kinds of task: "check" 33% (3), "summarize" 33% (3), "translate" 33% (3).'
    )
    assert patterns[1] == (
        f'- Recurring failure (3 times): "{CI_FAILURE}" at 2026-03-01T09:00:00Z, '
        "2026-03-02T09:00:00Z, 2026-03-03T09:00:00Z."
    )
    assert patterns[2].startswith(
        "- Rhythm: 10 runs over 3 days, 3.3 a day on average; busiest day 2026-03-03 (6 runs)"
    )
    assert patterns[3] == "- 1 of 10 entries has no **Task:** line."


def test_recommendations_follow_from_the_findings() -> None:
    advice = section(analyse(SAMPLE), "Recommendations")
    assert any(
        a.startswith('- "Translate README to French" ran 3 times with the same result')
        and "cache" in a
        for a in advice
    )
    assert any(
        a.startswith("- The same failure came back 3 times") and CI_FAILURE in a for a in advice
    )
    assert not any("Check CI status" in a and "cache" in a for a in advice), (
        "never advise caching a failure"
    )


def test_near_duplicates_keep_numbers_apart() -> None:
    entries = parse_entries(
        log(
            ("2026-01-01T00:00:00Z", "Review PR #42", "ok"),
            ("2026-01-02T00:00:00Z", "Review PR #43", "ok"),
            ("2026-01-03T00:00:00Z", "review pr 42", "ok"),
        )
    )
    (group,) = group_repeated_tasks(entries)
    assert [e.label for e in group.entries] == ["2026-01-01T00:00:00Z", "2026-01-03T00:00:00Z"]


def test_spelling_variants_and_apostrophes_are_the_same_task() -> None:
    entries = parse_entries(
        log(
            ("2026-01-01T00:00:00Z", "Summarise yesterday's merged PRs", "ok"),
            ("2026-01-02T00:00:00Z", "summarize yesterdays merged PRs", "ok"),
        )
    )
    (group,) = group_repeated_tasks(entries)
    assert (group.variants, len(group.entries)) == (2, 2)


def test_many_timestamps_are_summarised() -> None:
    report = analyse(log(*((f"2026-01-01T00:{m:02d}:00Z", "Ping", "pong") for m in range(9))))
    assert (
        '"Ping": 9 times (2026-01-01T00:00:00Z, 2026-01-01T00:01:00Z, 2026-01-01T00:02:00Z, 2026-01-01T00:03:00Z and 5 more)'
        in report
    )
    assert "burst of 5+ runs within 5 minutes" in report


def test_truncated_results_and_last_n_zero_are_flagged() -> None:
    cut = "x" * 997 + "..."
    memory = log(
        *((f"2026-01-{d:02d}T00:00:00Z", f"Write essay {d}", cut) for d in range(1, 29)),
        *((f"2026-02-{d:02d}T00:00:00Z", f"Write essay {d + 100}", "short") for d in range(1, 28)),
    )
    report = analyse(memory, MemoryConfig(enabled=True, last_n=0))
    assert "- 28 of 55 results (51%) were cut at the 1000-character memory limit." in report
    assert "28 results hit the 1000-character cap: ask the agent" in report
    assert "memory.last_n is 0, so every run loads all 55 entries" in report
    assert "memory.last_n is 0" not in analyse(memory, MemoryConfig(enabled=True, last_n=10))


def test_nothing_to_say_uses_the_prompts_sentences() -> None:
    report = analyse(log(("not a time", None, "hello")))
    assert section(report, "Repeated Work") == ["No repeated work detected."]
    assert section(report, "Recommendations") == ["No specific recommendations."]


def test_empty_log() -> None:
    assert analyse(b"") == (
        "## Patterns Found\nNo clear patterns detected.\n\n## Repeated Work\n"
        "No repeated work detected.\n\n## Recommendations\nNo specific recommendations."
    )


def test_normalise_folds_case_whitespace_and_punctuation() -> None:
    assert normalise("  Review   PR #42!! ") == "review pr 42"


def test_same_log_same_report() -> None:
    assert analyse(SAMPLE) == analyse(SAMPLE)


@given(
    st.binary(max_size=400)
    | st.lists(
        st.sampled_from(
            [
                b"## ",
                b"**Task:** ",
                b"**Result:** ",
                b"\n",
                b"x",
                b"error",
                b"2026-01-01T00:00:00Z",
                b"\xff",
            ]
        ),
        max_size=60,
    ).map(b"".join)
)
def test_any_bytes_give_a_well_formed_report(memory: bytes) -> None:
    report = analyse(memory)
    headings = [
        line
        for line in report.split("\n")
        if line in {"## Patterns Found", "## Repeated Work", "## Recommendations"}
    ]
    assert headings == ["## Patterns Found", "## Repeated Work", "## Recommendations"]
