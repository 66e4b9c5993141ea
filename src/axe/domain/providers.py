"""How to reach an LLM provider, as resolved from config.toml and the environment."""

from __future__ import annotations

from attrs import frozen


@frozen(repr=False)
class ProviderSettings:
    """How to reach one provider. ``repr`` leaves out the key so it cannot reach a log."""

    api_key: str
    base_url: str
    key_variable: str

    def __repr__(self) -> str:
        return f"ProviderSettings(base_url={self.base_url!r}, key_variable={self.key_variable!r})"
