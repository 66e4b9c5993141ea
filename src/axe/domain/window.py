"""Why a log cannot be analysed with a model at all: its window is too small (a fact).

Kept apart from ``tokens.py`` so the console can name this failure without loading the
estimator at start-up.
"""

from __future__ import annotations

from axe.domain.errors import ApiError


class WindowTooSmallError(ApiError):
    """The model's window cannot hold gc's instructions and a part of the log: a fact with
    its numbers, all in the provider's tokens; the console words the advice.

    ``limit`` is the input the window allows (None: unknown, or nothing beside a reply of
    ``reply`` tokens); ``instructions`` what gc's own instructions need (None when the
    reply alone fills the window).
    """

    def __init__(
        self, *, limit: int | None, instructions: int | None, reply: int, sent: int = 0
    ) -> None:
        super().__init__(
            f"context window too small: input limit {limit}, instructions {instructions}, "
            f"reply {reply}",
            sent=sent,
        )
        self.limit = limit
        self.instructions = instructions
        self.reply = reply
