"""Agent definitions: the TOML files in the agents directories, as AgentConfig values."""
