"""How the HTTP clients reach one provider: the adapter's own configuration.

The composition root fills it from ``config.toml`` and the environment; the core never
sees a key or a base URL.
"""

from __future__ import annotations

from attrs import frozen


@frozen(repr=False)
class ProviderSettings:
    """How to reach one provider. ``repr`` leaves out the key so it cannot reach a log.

    ``key_variable`` names the environment variable the key comes from, for the message
    that says where to put a missing key. ``max_input_tokens`` caps every request
    (``--max-input-tokens``): logs larger than that are analysed in parts from the start.
    """

    api_key: str
    base_url: str
    key_variable: str
    max_input_tokens: int | None = None

    def __repr__(self) -> str:
        return (
            f"ProviderSettings(base_url={self.base_url!r}, key_variable={self.key_variable!r}, "
            f"max_input_tokens={self.max_input_tokens!r})"
        )
