"""Every provider gc can analyse with, one row each (axe-formats.md's table), the offline
analyst's included, and the one check of a model: does a row serve it? Adding a provider is
one row here, plus a module in ``wire/`` if it speaks a format no row speaks yet.

``largest_window``, where one is published, is the largest context window any model of the
provider accepts: a request estimated above it is split before it is sent, whatever the
model. Anthropic: 1,000,000 tokens (Claude Sonnet 4 with the 1M context; support.claude.com,
"How large is the Anthropic API's context window?"). OpenAI: 1,047,576 (GPT-4.1;
platform.openai.com/docs/models/gpt-4.1). Google: 2,097,152 (Gemini 1.5 Pro and 2.0 Pro;
ai.google.dev/gemini-api/docs/long-context). Gateways, Bedrock and MiniMax publish none.

``window`` asks the provider for a model's own window, ``counting`` for its count of a
request's input tokens: both free, both only where the provider offers them.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Final

from attrs import frozen

from axe.adapters.llm.wire import (
    anthropic_messages,
    bedrock_converse,
    gemini,
    ollama_chat,
    openai_chat,
    openai_responses,
)
from axe.adapters.llm.wire.base import Lookup, WireFormat
from axe.domain.errors import AgentError
from axe.domain.model import quoted


class Auth(enum.Enum):
    """How a provider's requests prove who sends them (``client.authentication``). A key
    goes in the header its member's value names, but a bearer token in ``authorization``."""

    NONE = "none"
    X_API_KEY = "x-api-key"
    BEARER = "bearer"
    GOOG_API_KEY = "x-goog-api-key"
    SIGV4 = "sigv4"

    @property
    def needs_key(self) -> bool:
        return self not in (Auth.NONE, Auth.SIGV4)


@frozen
class Route:
    """The format that models whose name starts with ``prefix`` take ("" takes any), and
    its path when the provider puts it elsewhere than the format's own (OpenCode)."""

    wire: WireFormat
    prefix: str = ""
    path: str | None = None


@frozen(kw_only=True)
class Provider:
    """One row of the catalogue.

    ``versioned_base``: an OpenAI-style base URL includes its version path; one that is only
    a server root (``http://host:8080``) gets ``/v1``.
    ``optional_headers``: ``(header, setting)`` pairs, read from ``[providers.<name>]
    <setting>`` or ``AXE_<NAME>_<SETTING>``. ``region_variables`` (SigV4): where the region
    is read, in order, before ``[providers.<name>] region``. ``models``: the only model names
    the row serves (none: any). ``offline``: answered in this process (``offline/``).
    """

    name: str
    base_url: str
    routes: tuple[Route, ...]
    auth: Auth
    key_variable: str = ""
    optional_headers: tuple[tuple[str, str], ...] = ()
    versioned_base: bool = False
    region_variables: tuple[str, ...] = ()
    largest_window: int | None = None
    models: tuple[str, ...] = ()
    offline: bool = False
    window: Lookup | None = None
    counting: Lookup | None = None

    def route(self, model: str) -> Route:
        return next(route for route in self.routes if model.startswith(route.prefix))

    def check_model(self, name: str) -> None:
        """Raises AgentError (exit 1) unless the row serves the model called ``name``."""
        if self.models and name not in self.models:
            available = ", ".join(self.models)
            raise AgentError(f"unknown {self.name} model {quoted(name)} (available: {available})")


def _one(wire: WireFormat) -> tuple[Route, ...]:
    return (Route(wire),)


CATALOGUE: Final[Mapping[str, Provider]] = {
    row.name: row
    for row in (
        Provider(
            name="anthropic",
            base_url="https://api.anthropic.com",
            routes=_one(anthropic_messages.FORMAT),
            auth=Auth.X_API_KEY,
            key_variable="ANTHROPIC_API_KEY",
            largest_window=1_000_000,
            counting=anthropic_messages.COUNTING,
        ),
        Provider(
            name="openai",
            base_url="https://api.openai.com/v1",
            routes=_one(openai_chat.FORMAT),
            auth=Auth.BEARER,
            key_variable="OPENAI_API_KEY",
            versioned_base=True,
            largest_window=1_047_576,
            counting=openai_responses.COUNTING,
        ),
        Provider(
            name="ollama",
            base_url="http://localhost:11434",
            routes=_one(ollama_chat.FORMAT),
            auth=Auth.NONE,
            window=ollama_chat.WINDOW,
        ),
        Provider(
            name="google",
            base_url="https://generativelanguage.googleapis.com",
            routes=_one(gemini.FORMAT),
            auth=Auth.GOOG_API_KEY,
            key_variable="GEMINI_API_KEY",
            largest_window=2_097_152,
            window=gemini.WINDOW,
            counting=gemini.COUNTING,
        ),
        Provider(
            name="openrouter",
            base_url="https://openrouter.ai/api/v1",
            routes=_one(openai_chat.FORMAT),
            auth=Auth.BEARER,
            key_variable="OPENROUTER_API_KEY",
            optional_headers=(
                ("HTTP-Referer", "referer"),
                ("X-OpenRouter-Title", "title"),
                ("X-OpenRouter-Categories", "categories"),
            ),
            versioned_base=True,
            window=openai_chat.OPENROUTER_WINDOW,
        ),
        Provider(
            name="atlascloud",
            base_url="https://api.atlascloud.ai/v1",
            routes=_one(openai_chat.FORMAT),
            auth=Auth.BEARER,
            key_variable="ATLASCLOUD_API_KEY",
            versioned_base=True,
        ),
        Provider(
            name="requesty",
            base_url="https://router.requesty.ai/v1",
            routes=_one(openai_chat.FORMAT),
            auth=Auth.BEARER,
            key_variable="REQUESTY_API_KEY",
            optional_headers=(("HTTP-Referer", "referer"), ("X-Title", "title")),
        ),
        Provider(
            name="edenai",
            base_url="https://api.edenai.run/v3",
            routes=_one(openai_chat.FORMAT),
            auth=Auth.BEARER,
            key_variable="EDENAI_API_KEY",
        ),
        Provider(
            name="minimax",
            base_url="https://api.minimax.io/anthropic",
            routes=_one(anthropic_messages.FORMAT),
            auth=Auth.X_API_KEY,
            key_variable="MINIMAX_API_KEY",
        ),
        Provider(
            name="opencode",
            base_url="https://opencode.ai/zen",
            routes=(
                Route(anthropic_messages.FORMAT, "claude-"),
                Route(openai_responses.FORMAT, "gpt-"),
                Route(openai_chat.FORMAT, "", "/v1/chat/completions"),
            ),
            auth=Auth.BEARER,
            key_variable="OPENCODE_API_KEY",
        ),
        Provider(
            name="bedrock",
            base_url="https://bedrock-runtime.{region}.amazonaws.com",
            routes=_one(bedrock_converse.FORMAT),
            auth=Auth.SIGV4,
            region_variables=("AWS_REGION", "AWS_DEFAULT_REGION", "AXE_BEDROCK_REGION"),
            counting=bedrock_converse.COUNTING,
        ),
        Provider(
            name="builtin",
            base_url="",
            routes=(),
            auth=Auth.NONE,
            models=("heuristic",),
            offline=True,
        ),
    )
}


def provider(name: str) -> Provider:
    """The row called ``name``; AgentError (exit 1), naming every row, if none is."""
    if name not in CATALOGUE:
        known = ", ".join(sorted(CATALOGUE))
        raise AgentError(f"unsupported provider {quoted(name)} (supported: {known})")
    return CATALOGUE[name]
