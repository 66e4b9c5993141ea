"""The three kinds of failure axe reports.

Each kind is a separate class so the command line can map it to the exit code the spec
documents (1, 2 or 3) in one table at the edge; the core only says *what* went wrong.
Messages are complete one-line sentences meant for the person at the terminal.
"""


class AxeError(Exception):
    """Base of every failure axe reports to the user instead of a traceback."""


class AgentError(AxeError):
    """The agent cannot be processed: bad arguments, bad model string, memory I/O (exit 1)."""


class ConfigError(AxeError):
    """A configuration file or path is missing, unparsable or invalid (exit 2)."""


class ApiError(AxeError):
    """The LLM provider could not be used: no key, HTTP error, timeout, bad reply (exit 3)."""


class PromptTooLargeError(ApiError):
    """The provider refused the request because the memory log does not fit the model.

    Kept distinct so the user can be pointed at the offline analyzer, which has no limit.
    """
