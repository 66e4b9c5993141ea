"""Bounds on what a user may ask for, shared by the command line and the composition root."""

MIN_INPUT_TOKENS = 1024  # room for gc's instructions, a slice of the log and a merge
MAX_WAIT_SECONDS = 86_400  # a day: longer waits overflow the clocks they are given to
