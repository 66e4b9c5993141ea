"""How the HTTP client reaches one provider: the adapter's own configuration.

The composition root fills it from ``config.toml`` and the environment; the core never
sees a key, a credential or a base URL.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from attrs import field, frozen

if TYPE_CHECKING:
    from axe.adapters.llm.aws_credentials import AwsCredentials


@frozen(kw_only=True)
class ProviderSettings:
    """How to reach one provider; ``repr`` leaves out every secret.

    ``key_variable`` names the environment variable the key may come from and
    ``config_path`` the ``config.toml`` it may be written in, for the message that says
    where to put a missing key; ``key_source`` is where the key in use came from (the
    variable or the file), for the message about a rejected one. ``max_input_tokens``
    caps every request (``--max-input-tokens``). ``headers`` are extra headers the user
    configured (OpenRouter's attribution); ``region`` and ``aws`` are Bedrock's.
    """

    api_key: str = field(default="", repr=False)
    base_url: str = ""
    key_variable: str = ""
    key_source: str = ""
    config_path: str = "config.toml"
    max_input_tokens: int | None = None
    headers: Mapping[str, str] = field(factory=dict)
    region: str = ""
    aws: AwsCredentials | None = None
