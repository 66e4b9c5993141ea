"""The offline analyst: what its report says about hand-written logs, and robustness."""

from __future__ import annotations

import os
import subprocess
import sys
from bisect import bisect_right
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from axe.adapters.llm.offline import analyse
from axe.domain.model import MemoryConfig

QUIET = MemoryConfig(enabled=True, last_n=10)  # no last_n advice in the way


def log(*items: tuple[str, str | None, str]) -> bytes:
    parts = []
    for stamp, task, result in items:
        body = f"**Task:** {task}\n**Result:** {result}\n" if task is not None else f"{result}\n"
        parts.append(f"## {stamp}\n{body}\n")
    return "".join(parts).encode()


def daily(*tasks: tuple[str, str]) -> bytes:
    """One entry a day from 2026-01-01, at midnight UTC."""
    return log(
        *(
            (f"2026-01-{day:02d}T00:00:00Z", task, result)
            for day, (task, result) in enumerate(tasks, start=1)
        )
    )


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

# A log as `axe run` writes one when every task is new: different words, different results.
DISTINCT = log(
    ("2026-02-02T09:00:00Z", "Summarise the onboarding survey", "Most found setup slow."),
    ("2026-02-02T10:00:00Z", "Draft a reply to the landlord", "Draft saved as reply.md."),
    ("2026-02-03T09:00:00Z", "Explain how OAuth refresh tokens work", "Short primer written."),
    ("2026-02-03T15:30:00Z", "Plan a vegetarian dinner menu", "Three courses, one shopping list."),
    ("2026-02-04T08:10:00Z", "Compare two standing desks", "The cheaper one wobbles."),
    ("2026-02-05T12:00:00Z", "Find flights to Lisbon in May", "Cheapest on a Tuesday."),
    ("2026-02-06T18:45:00Z", "Translate the tenancy agreement to German", "Done, 4 pages."),
    ("2026-02-07T07:20:00Z", "Outline the quarterly board update", "Six sections agreed."),
)


def test_report_has_the_three_headings_in_order() -> None:
    """The report always has the prompt's three headings, in the prompt's order."""
    report = analyse(SAMPLE)
    headings = [line for line in report.split("\n") if line.startswith("## ")]
    assert headings == ["## Patterns Found", "## Repeated Work", "## Recommendations"]


def test_repeated_work_groups_exact_repeats_and_rewordings() -> None:
    """Exact repeats and rewordings of one task are one line, with when it ran."""
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
    """Patterns name the kinds of task, failures that recur, the rhythm and untasked entries."""
    assert section(analyse(SAMPLE), "Patterns Found") == [
        '- Main kinds of task (9 tasks): "check" 3, "summarize" 3, "translate" 3.',
        f'- Recurring failure (3 times): "{CI_FAILURE}" at 2026-03-01T09:00:00Z, '
        "2026-03-02T09:00:00Z, 2026-03-03T09:00:00Z.",
        "- Rhythm: 10 runs over 3 days, 3.3 a day on average; busiest day 2026-03-03 (6 runs); "
        "longest gap 23h 0m (after 2026-03-01T09:00:00Z).",
        "- 1 of 10 entries has no **Task:** line.",
    ]


def test_recommendations_follow_from_the_findings() -> None:
    """Advice follows the findings and never says to cache a task that keeps failing."""
    assert section(analyse(SAMPLE), "Recommendations") == [
        '- "Summarise the daily sales report" ran 3 times with different results: if it '
        "tracks something that changes, schedule it; otherwise make the task more specific "
        "so runs agree.",
        '- "Translate README to French" ran 3 times with the same result (last at '
        "2026-03-03T12:00:00Z): cache the answer or run it less often.",
        f'- The same failure came back 3 times ("{CI_FAILURE}", last at 2026-03-03T09:00:00Z): '
        "fix its cause (credentials, network access, paths or the tool it names) before the "
        "next run.",
    ]


def test_tasks_that_differ_only_by_an_id_are_repeated_work() -> None:
    """ "Review PR 4411", "Review PR 4415", ... is one job run again and again, and said so."""
    report = analyse(
        daily(
            ("Review PR 4411", "Looks good."),
            ("Review PR #4415", "Looks good."),
            ("review pr 4420", "Looks good."),
            ("Review PR 4411", "Looks good."),
        ),
        QUIET,
    )
    assert section(report, "Repeated Work") == [
        '- "Review PR 4411" (with 3 different numbers): 4 times (2026-01-01T00:00:00Z, '
        "2026-01-02T00:00:00Z, 2026-01-03T00:00:00Z, 2026-01-04T00:00:00Z); same result each "
        "time.",
    ]
    assert section(report, "Recommendations") == [
        '- "Review PR 4411" ran 4 times with 3 different numbers: it is one recurring job, so '
        "give the agent a skill or a fixed prompt for it (or batch the inputs into one run) "
        "instead of asking afresh each time.",
    ]


@pytest.mark.parametrize(
    ("tasks", "line"),
    [
        (
            ["Summarise sales for 2026-03-01", "Summarise sales for 2026-03-02"],
            '- "Summarise sales for 2026-03-01" (with 2 different dates): 2 times',
        ),
        (
            ["Explain commit 9f3a2c1d", "Explain commit 0b77e1aa4"],
            '- "Explain commit 9f3a2c1d" (with 2 different ids): 2 times',
        ),
        (
            [
                "Trace job 123e4567-e89b-12d3-a456-426614174000",
                "Trace job 00000000-0000-4000-8000-000000000001",
            ],
            '- "Trace job 123e4567-e89b-12d3-a456-426614174000" (with 2 different ids): 2 times',
        ),
        (
            ['Proofread "Annual report"', "Proofread 'Press release'"],
            '- "Proofread "Annual report"" (with 2 different quoted names): 2 times',
        ),
        (
            ["Summarise https://example.com/a", "Summarise https://example.org/b?c=1"],
            '- "Summarise https://example.com/a" (with 2 different links): 2 times',
        ),
        (
            ["Compare PR 12 with 2026-01-01", "Compare PR 13 with 2026-01-02"],
            '- "Compare PR 12 with 2026-01-01" (with 2 different values): 2 times',
        ),
    ],
)
def test_dates_hashes_uuids_quoted_names_and_links_are_folded(tasks: list[str], line: str) -> None:
    """Every kind of value a task names folds, and the report says which kind differed."""
    (repeated,) = section(analyse(daily(*((task, "ok") for task in tasks))), "Repeated Work")
    assert repeated.startswith(line + " (")


def test_ids_that_are_names_stay_words() -> None:
    """Names like "ec2", "k8s", "sha256" are words: tasks that differ by them are different."""
    names = daily(("Restart ec2", "ok"), ("Restart k8s", "ok"), ("Restart sha256", "ok"))
    assert section(analyse(names), "Repeated Work") == ["No repeated work detected."]
    ids = daily(("Restart pr4411", "ok"), ("Restart pr4415", "ok"))
    assert section(analyse(ids), "Repeated Work")[0].startswith(
        '- "Restart pr4411" (with 2 different ids): 2 times'
    )


def test_a_task_that_is_only_a_value_matches_only_itself() -> None:
    """A task that is only a number or a quote is not folded into "the same task"."""
    report = analyse(
        daily(("4411", "ok"), ("4415", "ok"), ('"What is the time?"', "ok"), ('"Who won?"', "ok"))
    )
    assert section(report, "Repeated Work") == ["No repeated work detected."]


def test_spelling_variants_and_apostrophes_are_the_same_task() -> None:
    """British/American spellings and dropped apostrophes are rewordings of one task."""
    report = analyse(
        daily(
            ("Summarise yesterday's merged PRs", "ok"),
            ("summarize yesterdays merged PRs", "ok"),
        )
    )
    assert section(report, "Repeated Work") == [
        '- "Summarise yesterday\'s merged PRs" (in 2 wordings): 2 times (2026-01-01T00:00:00Z, '
        "2026-01-02T00:00:00Z); same result each time."
    ]


def test_latin1_bytes_do_not_cut_a_word() -> None:
    """A word written in Latin-1 inside a UTF-8 log is read whole: "café", never "caf"."""
    memory = daily(("x", "ok"), ("x", "ok"), ("x", "ok")).replace(
        b"**Task:** x", "**Task:** Café au lait order".encode("latin-1")
    )
    report = analyse(memory, QUIET)
    assert section(report, "Patterns Found")[0] == '- Main kinds of task (3 tasks): "café" 3.'
    assert section(report, "Repeated Work")[0].startswith('- "Café au lait order": 3 times')


@given(st.text(alphabet="abcdeéèàçñöüßÿ", min_size=1, max_size=12))
def test_any_latin1_word_is_one_word(letters: str) -> None:
    """Whatever Latin-1 letters a word has, it stays one word (here: the kind of task)."""
    word = "k" + letters
    task = b"**Task:** " + word.encode("latin-1") + b" plan"
    memory = daily(("x", "ok"), ("x", "ok")).replace(b"**Task:** x", task)
    patterns = section(analyse(memory, QUIET), "Patterns Found")
    assert patterns[0] == f'- Main kinds of task (2 tasks): "{word}" 2.'


def test_many_timestamps_are_summarised() -> None:
    """Long lists of runs are cut to four timestamps and a count; bursts are named."""
    report = analyse(log(*((f"2026-01-01T00:{m:02d}:00Z", "Ping", "pong") for m in range(9))))
    assert section(report, "Repeated Work") == [
        '- "Ping": 9 times (2026-01-01T00:00:00Z, 2026-01-01T00:01:00Z, 2026-01-01T00:02:00Z, '
        "2026-01-01T00:03:00Z and 5 more); same result each time."
    ]
    assert "; 1 burst of 5+ runs within 5 minutes." in section(report, "Patterns Found")[1]


def test_truncated_results_and_last_n_zero_are_flagged() -> None:
    """Results cut at the 1000-character limit and last_n = 0 each get a finding and advice."""
    cut = "x" * 997 + "..."
    memory = log(
        *((f"2026-01-{d:02d}T00:00:00Z", f"Write essay {d}", cut) for d in range(1, 29)),
        *((f"2026-02-{d:02d}T00:00:00Z", f"Write poem {d + 100}", "short") for d in range(1, 28)),
    )
    report = analyse(memory, MemoryConfig(enabled=True, last_n=0))
    assert "- 28 of 55 results (51%) were cut at the 1000-character memory limit." in report
    assert "28 results hit the 1000-character cap: ask the agent" in report
    assert "memory.last_n is 0, so every run loads all 55 entries" in report
    assert "memory.last_n is 0" not in analyse(memory, MemoryConfig(enabled=True, last_n=10))


def test_nothing_to_say_uses_the_prompts_sentences() -> None:
    """With nothing to report, each section says the prompt's own fallback sentence."""
    report = analyse(log(("not a time", None, "hello")))
    assert section(report, "Repeated Work") == ["No repeated work detected."]
    assert section(report, "Recommendations") == ["No specific recommendations."]


def test_empty_log() -> None:
    """An empty log gives the three fallback sentences and nothing else."""
    assert analyse(b"") == (
        "## Patterns Found\nNo clear patterns detected.\n\n## Repeated Work\n"
        "No repeated work detected.\n\n## Recommendations\nNo specific recommendations."
    )


def test_a_log_of_distinct_tasks_reports_no_repeated_work_and_invents_nothing() -> None:
    """Every task different: no repeated work, no advice, only what the log shows."""
    assert analyse(DISTINCT, QUIET) == (
        "## Patterns Found\n"
        "- Rhythm: 8 runs over 6 days, 1.3 a day on average; busiest day 2026-02-02 (2 runs); "
        "longest gap 1d 6h (after 2026-02-05T12:00:00Z).\n"
        "\n## Repeated Work\nNo repeated work detected.\n"
        "\n## Recommendations\nNo specific recommendations."
    )


WORDS = st.text(alphabet="bcdfghjklmnpqrstvwxz", min_size=4, max_size=8)


@given(st.lists(WORDS, min_size=6, max_size=60, unique=True))
def test_tasks_that_share_no_word_are_never_grouped(words: list[str]) -> None:
    """Tasks with no word in common are never reported as repeated work."""
    tasks = [" ".join(words[i : i + 3]) for i in range(0, len(words) - 2, 3)]
    report = analyse(daily(*((task, f"result {task}") for task in tasks)))
    assert section(report, "Repeated Work") == ["No repeated work detected."]


def test_mixed_utc_offsets_are_a_rhythm_not_a_crash() -> None:
    """Timestamps with different offsets count calendar days as each entry wrote them (one
    run each, so no day is called the busiest)."""
    report = analyse(
        log(
            ("2026-01-02T00:00:00+02:00", "Water the plants", "ok"),
            ("2026-01-01T23:00:00Z", "Feed the cat", "ok"),
        )
    )
    assert section(report, "Patterns Found") == [
        "- Rhythm: 2 runs over 2 days, 1.0 a day on average; "
        "longest gap 1h 0m (after 2026-01-01T22:00:00Z)."
    ]


RICH = (
    SAMPLE
    + DISTINCT
    + daily(
        ("Review PR 4411", "Looks good."),
        ("Review PR 4415", "Needs work."),
        ("Deploy build 77 to staging", "Error: denied for build 77"),
        ("Deploy build 78 to staging", "Error: denied for build 78"),
        ("Plan the offsite agenda", "ok"),
        ("Plan the offsite agenda and venue", "ok"),
        ("Write the release notes", "ok"),
        ("Write the release notes draft", "ok"),
    )
)


def test_report_is_the_same_in_every_process(tmp_path: Path) -> None:
    """Two processes with different string-hash seeds write the same report, byte for byte."""
    (tmp_path / "memory.md").write_bytes(RICH)
    script = (
        "import sys; from axe.adapters.llm.offline import analyse; "
        "sys.stdout.write(analyse(open(sys.argv[1], 'rb').read()))"
    )

    def report(seed: str) -> str:
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", script, str(tmp_path / "memory.md")],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout

    first, second = report("1"), report("2")
    assert first == second
    assert '"Review PR 4411" (with 2 different numbers)' in first


FALLBACKS = {
    "## Patterns Found": "No clear patterns detected.",
    "## Repeated Work": "No repeated work detected.",
    "## Recommendations": "No specific recommendations.",
}
ATOMS = [
    b"## ",
    b"**Task:** ",
    b"**Result:** ",
    b"\n",
    b"\r\n",
    b"x",
    b"error",
    b"no errors",
    b"0 failed",
    b"Error: x",
    b"2026-01-01T00:00:00Z",
    b"2026-01-01T00:00:00+05:00",
    b"2026-175-24T19:30:00Z",
    b"0001-01-01T00:00:00+01:00",
    b"9999-12-31T23:59:59-01:00",
    b"'",
    b'"',
    b"4411",
    b"\xff",
    b"\xe9",
]


@given(st.binary(max_size=400) | st.lists(st.sampled_from(ATOMS), max_size=60).map(b"".join))
def test_any_bytes_give_a_well_formed_report(memory: bytes) -> None:
    """Whatever the bytes, the report is the three sections in the prompt's order, each a
    heading then bullets or the prompt's fallback sentence, and it says the same thing twice."""
    report = analyse(memory)
    sections = [section.split("\n") for section in report.split("\n\n")]
    assert [lines[0] for lines in sections] == list(FALLBACKS)
    for heading, *body in sections:
        assert body == [FALLBACKS[heading]] or (body and all(line[:2] == "- " for line in body))
    assert analyse(memory) == report


TASKS = [
    "Review PR 4411",
    "Review PR #4415",
    "Summarise the daily sales report",
    "summarize daily sales report",
    "Check CI status for main",
    "Plan the offsite agenda",
    "Plan the offsite agenda and venue",
    '"What is the time?"',
    "4411",
    "",
    None,
]
RESULTS = [
    "Done.",
    "done!",
    CI_FAILURE,
    "Error: connection refused to ci.internal:444",
    "All 120 tests passed, no errors found.",
    "x" * 997 + "...",
]
MINUTES = st.integers(0, 60 * 24 * 60)  # when an entry ran, in the first two months of 2026
ENTRIES = st.lists(
    st.tuples(MINUTES, st.sampled_from(TASKS), st.sampled_from(RESULTS)),
    min_size=1,
    max_size=30,
    unique_by=lambda entry: entry[0],
)


def timed(entries: list[tuple[int, str | None, str]]) -> bytes:
    """The log of ``entries``, each written at its minute of 2026."""
    start = datetime(2026, 1, 1, tzinfo=UTC)
    return log(
        *(
            ((start + timedelta(minutes=minute)).strftime("%Y-%m-%dT%H:%M:%SZ"), task, result)
            for minute, task, result in entries
        )
    )


@given(ENTRIES.flatmap(lambda entries: st.tuples(st.just(entries), st.permutations(entries))))
def test_the_report_follows_the_clock_not_where_entries_sit_in_the_file(
    entries_and_shuffled: tuple[
        list[tuple[int, str | None, str]], list[tuple[int, str | None, str]]
    ],
) -> None:
    """Entries at different times give the same report in any order in the file: which runs
    come first and last, which wording and failure line are quoted, and every tie are
    decided by time and content."""
    entries, shuffled = entries_and_shuffled
    assert analyse(timed(shuffled), QUIET) == analyse(timed(entries), QUIET)


@given(ENTRIES, ENTRIES)
def test_the_same_bytes_give_the_same_report_whatever_was_analysed_before(
    entries: list[tuple[int, str | None, str]], others: list[tuple[int, str | None, str]]
) -> None:
    """A log's report does not depend on what the analyst read before it."""
    first = analyse(timed(entries))
    analyse(timed(others))
    assert analyse(timed(entries)) == first


def test_when_every_day_ties_no_day_is_called_the_busiest() -> None:
    """Three runs a day on each of three days: the rhythm names no busiest day."""
    report = analyse(
        log(
            *(
                (f"2026-04-0{day}T0{hour}:00:00Z", f"Task {day} {hour}", "ok")
                for day in (1, 2, 3)
                for hour in (1, 4, 7)
            )
        )
    )
    rhythm = [line for line in section(report, "Patterns Found") if "Rhythm" in line]
    assert rhythm == [
        "- Rhythm: 9 runs over 3 days, 3.0 a day on average; "
        "longest gap 18h 0m (after 2026-04-01T07:00:00Z)."
    ]


def test_a_job_counts_once_and_the_kinds_add_up_to_every_task() -> None:
    """A job's runs count alike under Main kinds and Repeated Work, and the kinds, with
    "others", add up to every task: a word before the kind ("Deep review") or another kind
    ("Translate" for "Summarise") makes another job, never a rewording of one."""
    report = analyse(
        daily(
            ("Review PR 4411", "Looks good."),
            ("Review PR 4415", "Looks good."),
            ("Review PR 4420", "Looks good."),
            ("Deep review of PR 4400", "Long notes."),
            ("Deep review of PR 4401", "Long notes."),
            ("Summarise the sales report", "Up."),
            ("Translate the sales report", "Done."),
            ("Plan the offsite", "Booked."),
        ),
        QUIET,
    )
    assert section(report, "Patterns Found")[0] == (
        '- Main kinds of task (8 tasks): "review" 3, "deep" 2, others 3.'
    )
    assert section(report, "Repeated Work") == [
        '- "Review PR 4411" (with 3 different numbers): 3 times (2026-01-01T00:00:00Z, '
        "2026-01-02T00:00:00Z, 2026-01-03T00:00:00Z); same result each time.",
        '- "Deep review of PR 4400" (with 2 different numbers): 2 times (2026-01-04T00:00:00Z, '
        "2026-01-05T00:00:00Z); same result each time.",
    ]


def test_the_demo_log_counts_each_job_once() -> None:
    """On `make demo`'s log the kinds add up to its 46 tasks and each job has one count in
    both sections ("review" 14 beside "Review PR" 18 times, kinds adding to 90%)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
    import demo

    report = analyse(demo.sample_log(), QUIET)
    assert section(report, "Patterns Found")[0] == (
        '- Main kinds of task (46 tasks): "check" 14, "review" 14, "summarize" 14, others 4.'
    )
    repeated = [
        line.split(": ", 1)[1].split(" times", 1)[0] for line in section(report, "Repeated Work")
    ]
    assert repeated == ["14", "14", "14", "4"]


def dominated_log() -> bytes:
    """80,000 entries, one a minute; "Review PR #n" the commonest job (20,164 runs on 4,929
    PR numbers). One result in ten, and every result of the last 1,000 entries, reports a
    failure no other result shares, so no failure recurs and every job's last run failed."""
    jobs: list[tuple[int, Callable[[int], str]]] = [
        (20_164, lambda run: f"Review PR #{4000 + run % 4929}"),
        (39_000, lambda run: "Check CI status for main"),
        (57_000, lambda run: "Summarise yesterday's merged PRs"),
        (72_000, lambda run: f"Triage issue #{run}"),
        (80_000, lambda run: f"Deploy build {run} to staging"),
    ]
    bounds, runs, parts = [below for below, _ in jobs], [0] * len(jobs), []
    for index in range(80_000):
        job = bisect_right(bounds, index * 7919 % 80_000)  # 7919 is prime: each slot once
        task = jobs[job][1](runs[job])
        runs[job] += 1
        if index % 10 == 9 or index >= 79_000:
            unique = str(index).translate(str.maketrans("0123456789", "abcdefghij"))
            result = f"Error: lint failed in module {unique}"
        else:
            result = "Looks good."
        day, minute = divmod(index, 1440)
        stamp = (
            f"2026-{1 + day // 28:02d}-{1 + day % 28:02d}T{minute // 60:02d}:{minute % 60:02d}:00Z"
        )
        parts.append(f"## {stamp}\n**Task:** {task}\n**Result:** {result}\n\n")
    return "".join(parts).encode()


def test_a_job_that_dominates_a_big_log_gets_a_recommendation() -> None:
    """However big the log, its commonest job is advised on, even when its last run failed
    (80,000 entries, one job run 20,164 times, "No specific recommendations.")."""
    report = analyse(dominated_log(), QUIET)
    assert section(report, "Patterns Found")[0] == (
        '- Main kinds of task (80,000 tasks): "review" 20,164, "check" 18,836, "summarize" 18,000, '
        '"triage" 15,000, others 8,000.'
    )
    assert section(report, "Recommendations")[0] == (
        '- "Review PR #4000" ran 20,164 times with 4,929 different numbers: it is one recurring '
        "job, so give the agent a skill or a fixed prompt for it (or batch the inputs into one "
        "run) instead of asking afresh each time."
    )


HEALTHY = [
    "All 120 tests passed, no errors found.",
    "0 errors, 2 warnings.",
    "Finished without error.",
    "I have not found any errors.",
    "Lint: errors: 0",
    "Tests: 12 passed, 0 failed",
    "No failures.",
]


def test_a_result_that_says_nothing_failed_is_no_failure() -> None:
    """ "All 120 tests passed, no errors found." and its kin ("0 errors", "without error", "not
    found any errors", "errors: 0", "0 failed", "no failures") report no failure: no recurring
    failure, no advice to check credentials."""
    report = analyse(
        daily(*(("Run the checks", result) for result in HEALTHY for _ in "ab")), QUIET
    )
    assert report == (
        "## Patterns Found\n"
        '- Main kinds of task (14 tasks): "run" 14.\n'
        "- Rhythm: 14 runs over 14 days, 1.0 a day on average; longest gap 1d 0h "
        "(after 2026-01-01T00:00:00Z).\n"
        "\n## Repeated Work\n"
        '- "Run the checks": 14 times (2026-01-01T00:00:00Z, 2026-01-02T00:00:00Z, '
        "2026-01-03T00:00:00Z, 2026-01-04T00:00:00Z and 10 more); results differ.\n"
        "\n## Recommendations\n"
        '- "Run the checks" ran 14 times with different results: if it tracks something that '
        "changes, schedule it; otherwise make the task more specific so runs agree."
    )


@pytest.mark.parametrize(
    "failure",
    [
        "Error: connection refused",
        "failed to fetch https://example.com/feed",
        "3 tests failed",
        "Request timed out after 30s",
        "open /etc/shadow: permission denied",
        "Traceback (most recent call last):",
    ],
)
def test_a_result_that_says_something_failed_is_quoted_as_the_failure(failure: str) -> None:
    """The line that says something failed is the recurring failure quoted and advised on,
    never a line beside it that says nothing did ("No errors in lint.")."""
    result = f"No errors in lint.\n{failure}"
    report = analyse(daily(("Run the checks", result), ("Run the checks", result)), QUIET)
    assert section(report, "Patterns Found")[1] == (
        f'- Recurring failure (2 times): "{failure}" at 2026-01-01T00:00:00Z, 2026-01-02T00:00:00Z.'
    )
    assert section(report, "Recommendations") == [
        f'- The same failure came back 2 times ("{failure}", last at 2026-01-02T00:00:00Z): '
        "fix its cause (credentials, network access, paths or the tool it names) before the "
        "next run."
    ]


def test_entries_without_a_readable_time_are_left_out_of_the_rhythm_and_never_the_latest() -> None:
    """An entry whose header has no readable time ("2026-175-24T19:30:00Z") is said to be left
    out of the rhythm, is cited after the runs with one, and is never quoted as the last run:
    that is the latest by a readable time."""
    task = "Translate README to French"
    memory = log(
        ("2026-03-01T09:00:00Z", task, "Done."),
        ("2026-175-24T19:30:00Z", task, "Done."),
        ("2026-03-02T09:00:00Z", task, "Done."),
        ("2026-03-03T09:00:00Z", task, "Done."),
        ("2026-13-01T00:00:00Z", task, "Done."),
    )
    report = analyse(memory, QUIET)
    assert section(report, "Patterns Found")[1] == (
        "- Rhythm: 3 runs over 3 days (not counting 2 entries whose headers have no readable "
        "time), 1.0 a day on average; longest gap 1d 0h (after 2026-03-01T09:00:00Z)."
    )
    assert section(report, "Repeated Work") == [
        f'- "{task}": 5 times (2026-03-01T09:00:00Z, 2026-03-02T09:00:00Z, 2026-03-03T09:00:00Z, '
        "2026-175-24T19:30:00Z and 1 more); same result each time."
    ]
    assert section(report, "Recommendations") == [
        f'- "{task}" ran 5 times with the same result (last at 2026-03-03T09:00:00Z): cache the '
        "answer or run it less often."
    ]


def test_a_recurring_failure_is_last_at_its_latest_readable_time() -> None:
    """A failure that came back is last at its latest run by a readable time, and the one
    entry without a readable time is said to be left out of the rhythm."""
    memory = log(
        ("2026-03-01T09:00:00Z", "Check CI status for main", CI_FAILURE),
        ("2026-03-02T09:00:00Z", "Check CI status for main", CI_FAILURE),
        ("last Tuesday", "Check CI status for main", CI_FAILURE),
    )
    report = analyse(memory, QUIET)
    assert section(report, "Patterns Found")[1:] == [
        f'- Recurring failure (3 times): "{CI_FAILURE}" at 2026-03-01T09:00:00Z, '
        "2026-03-02T09:00:00Z, last Tuesday.",
        "- Rhythm: 2 runs over 2 days (not counting 1 entry whose header has no readable time), "
        "1.0 a day on average; longest gap 1d 0h (after 2026-03-01T09:00:00Z).",
    ]
    assert section(report, "Recommendations")[-1] == (
        f'- The same failure came back 3 times ("{CI_FAILURE}", last at 2026-03-02T09:00:00Z): '
        "fix its cause (credentials, network access, paths or the tool it names) before the "
        "next run."
    )


def test_when_no_run_has_a_readable_time_the_last_is_the_last_in_the_file() -> None:
    """Without any readable time, the file's order is all there is: the last run cited is the
    last one written."""
    memory = log(("yesterday", "Ping the server", "pong"), ("today", "Ping the server", "pong"))
    memory += log(("(no time)", "Ping the server", "pong"))
    assert section(analyse(memory, QUIET), "Recommendations") == [
        '- "Ping the server" ran 3 times with the same result (last at (no time)): cache the '
        "answer or run it less often."
    ]


def test_counts_of_a_thousand_or_more_have_thousands_separators() -> None:
    """Counts of 1,000 or more print as the rest of gc prints numbers ("2,000 tasks",
    "1,440 runs"); smaller ones as they always did."""
    start = datetime(2026, 1, 1, tzinfo=UTC)
    memory = log(
        *(
            ((start + timedelta(minutes=minute)).strftime("%Y-%m-%dT%H:%M:%SZ"), "Ping", "pong")
            for minute in range(2000)
        )
    )
    report = analyse(memory, MemoryConfig(enabled=True, last_n=0))
    assert report == (
        "## Patterns Found\n"
        '- Main kinds of task (2,000 tasks): "ping" 2,000.\n'
        "- Rhythm: 2,000 runs over 2 days, 1,000.0 a day on average; busiest day 2026-01-01 "
        "(1,440 runs); longest gap 1m (after 2026-01-01T00:00:00Z); 1 burst of 5+ runs within "
        "5 minutes.\n"
        "\n## Repeated Work\n"
        '- "Ping": 2,000 times (2026-01-01T00:00:00Z, 2026-01-01T00:01:00Z, '
        "2026-01-01T00:02:00Z, 2026-01-01T00:03:00Z and 1,996 more); same result each time.\n"
        "\n## Recommendations\n"
        '- "Ping" ran 2,000 times with the same result (last at 2026-01-02T09:19:00Z): cache '
        "the answer or run it less often.\n"
        "- memory.last_n is 0, so every run loads all 2,000 entries into its prompt: set last_n "
        "(for example 20) to keep runs fast and cheap."
    )


@pytest.mark.parametrize("stamp", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00"])
def test_a_time_that_falls_off_the_calendar_in_utc_is_no_readable_time(stamp: str) -> None:
    """A header time that lies before year 1 or after year 9999 once told in UTC is left out
    of the rhythm like any unreadable one, never an internal error."""
    memory = log((stamp, None, "x"), ("2026-01-01T00:00:00Z", None, "y"))
    assert section(analyse(memory), "Patterns Found") == [
        "- 2 of 2 entries have no **Task:** line."
    ]
