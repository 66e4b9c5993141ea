"""Every LLM provider gc can analyse with, end to end: the catalogue, wire formats, auth and
SigV4, the HTTP transport, config.toml and AWS credentials, and the offline analyst."""
