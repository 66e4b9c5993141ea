"""Bounds on what a user may ask for, shared by the command line and the composition root.

A module of plain constants with no imports, so the command line can name them in its
options without loading anything else at start-up.
"""

MIN_INPUT_TOKENS = 1024  # room for gc's instructions, a slice of the log and a merge
MAX_WAIT_SECONDS = 86_400  # a day: longer waits overflow the clocks they are given to
