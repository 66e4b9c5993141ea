"""LLM providers over HTTP: one shared ``httpx.Client`` per process, imported lazily."""
