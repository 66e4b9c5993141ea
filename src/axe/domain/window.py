from __future__ import annotations

import enum

from attrs import frozen


class WindowSource(enum.Enum):
    """Where a model's input window was learnt, so a person is told how sure it is."""

    CAP = "cap"  # --max-input-tokens or AXE_MAX_INPUT_TOKENS
    MODEL = "model"  # the provider said this model's window
    PROVIDER = "provider"  # the largest any model of the provider takes: the model's may be less


@frozen
class Window:
    """The most input tokens one request may carry, and where that was learnt."""

    tokens: int
    source: WindowSource
