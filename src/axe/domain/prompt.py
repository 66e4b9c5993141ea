"""The pattern-detection instructions sent with every analysis.

Hard-coded on purpose (gc-spec Requirement 4.2 and Constraint 7): the report format is a
contract with the people and scripts that read it, so it is not configurable.
"""

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
