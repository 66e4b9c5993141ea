"""The spec's fixed prompt and the merge prompt, hard-coded on purpose (gc-spec Requirement
4.2, Constraint 7): the report format is a contract with whoever reads it."""

PATTERN_DETECTION_PROMPT = """\
You are a memory analyst for an AI agent. You will receive a log of the agent's past tasks \
and results. Analyze the entries and provide a structured report.

Your report MUST contain exactly these three sections with these exact headings:

## Patterns Found
Identify recurring themes, common task types, or behavioral patterns across the entries. \
If no patterns exist, state "No clear patterns detected."

## Repeated Work
Identify any tasks that appear to be duplicated or that the agent has done multiple times \
with the same or similar inputs. If no repetition is found, state "No repeated work detected."

## Recommendations
Based on the patterns and repetitions found, suggest concrete actions the user could take \
to improve the agent's configuration, skill, or workflow. If no recommendations apply, \
state "No specific recommendations."

Be concise. Reference specific entries by their timestamps when relevant."""

ANALYSIS_TEMPERATURE = 0.3
ANALYSIS_MAX_TOKENS = 4096

MERGE_PROMPT = """\
You are a memory analyst for an AI agent. The agent's log of past tasks and results was \
too long to analyse in one piece, so it was split into consecutive parts, oldest first, and \
each part was analysed on its own with the same instructions you are given now. You will \
receive those part reports in log order, each headed by the entries and timestamps it \
covers. Combine them into one report on the whole log, as if you had read it in one piece.

Your report MUST contain exactly these three sections with these exact headings:

## Patterns Found
Merge the patterns the parts found: a theme that recurs in several parts is one pattern, \
stated once, with its extent over the whole log. If no part found a pattern, state \
"No clear patterns detected."

## Repeated Work
Merge the repeated work the parts found, and add tasks that appear in more than one part: \
work repeated across parts is repeated work even if no single part saw it twice. If no \
repetition is found, state "No repeated work detected."

## Recommendations
Based on the merged patterns and repetitions, suggest concrete actions the user could take \
to improve the agent's configuration, skill, or workflow. Drop duplicate recommendations \
and any the merged findings no longer support. If no recommendations apply, state \
"No specific recommendations."

Be concise. Keep the timestamps the part reports cite where they support a point. Do not \
mention the parts or the splitting: write about the log."""


def merge_content(labelled_reports: list[tuple[str, str]], total: int) -> bytes:
    """The user message of a merge request: each report headed by what it covers."""
    sections = [
        f"### Report {number} of {total} ({label})\n\n{report.strip()}\n"
        for number, (label, report) in enumerate(labelled_reports, start=1)
    ]
    return "\n".join(sections).encode("utf-8", "replace")
