"""axe gc: analyse and trim the memory logs of axe LLM agents."""

__version__ = "0.1.0"
