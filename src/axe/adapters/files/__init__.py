"""Filesystem adapters: where axe's files live, agent TOML, global config, memory logs."""
