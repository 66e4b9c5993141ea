"""The kinds of failure, their exit codes and the facts they carry, as frontends read them."""

from __future__ import annotations

from typing import NoReturn, TypeVar

import pytest

from axe.domain.budget import Budget
from axe.domain.errors import (
    AgentError,
    ApiError,
    AxeError,
    BudgetTooSmallError,
    ConfigError,
    ModelNotFoundError,
    NoTokenCountError,
    PromptTooLargeError,
    RefusalMismatchError,
    WindowTooSmallError,
    detached,
    exit_code_for,
)


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (AgentError("a"), 1),
        (ConfigError("c"), 2),
        (ApiError("p"), 3),
        (ModelNotFoundError("m"), 3),
        (PromptTooLargeError("t"), 3),
        (WindowTooSmallError(limit=1, instructions=2, reply=3), 3),
        (AxeError("unforeseen"), 1),
    ],
)
def test_each_kind_of_failure_has_its_documented_exit_code(error: AxeError, code: int) -> None:
    """gc-spec §3.6: agent errors exit 1, config errors 2, provider errors 3 (their
    refinements too), and a kind nobody foresaw 1."""
    assert exit_code_for(error) == code


def test_provider_errors_say_how_many_requests_went_out() -> None:
    """A provider error counts the requests that may have been billed: none unless said."""
    assert (str(ApiError("down")), ApiError("down").sent) == ("down", 0)
    assert ApiError("down", sent=3).sent == 3
    missing = ModelNotFoundError("no such model", sent=2)
    assert (str(missing), missing.sent, missing.origin) == ("no such model", 2, None)
    assert ModelNotFoundError("x").sent == 0


def test_a_refusal_for_size_carries_the_providers_counts() -> None:
    """ "Prompt too long" keeps the provider's numbers when it gave them, None when not."""
    refusal = PromptTooLargeError("too long", tokens=212_230, limit=200_000, sent=1)
    assert (str(refusal), refusal.tokens, refusal.limit, refusal.sent) == (
        "too long",
        212_230,
        200_000,
        1,
    )
    bare = PromptTooLargeError("too long")
    assert (bare.tokens, bare.limit, bare.sent) == (None, None, 0)


def test_a_window_too_small_states_its_numbers() -> None:
    """A window that cannot hold gc's instructions and a part says its three numbers."""
    error = WindowTooSmallError(limit=1000, instructions=900, reply=4096)
    assert str(error) == (
        "context window too small: input limit 1000, instructions 900, reply 4096"
    )
    assert (error.limit, error.instructions, error.reply, error.sent) == (1000, 900, 4096, 0)
    assert WindowTooSmallError(limit=None, instructions=None, reply=1).sent == 0


def test_a_refusal_that_cannot_be_true_says_the_providers_words_and_what_was_sent() -> None:
    """What an embedder reads of a refusal gc does not believe: the provider's words, then
    the bytes and the estimate sent, in the message and as values."""
    error = RefusalMismatchError("prompt is too long", content=812, estimate=430)
    assert str(error) == "prompt is too long (sent 812 bytes, estimated 430 tokens)"
    assert (error.refusal, error.content, error.estimate, error.sent) == (
        "prompt is too long",
        812,
        430,
        0,
    )


def test_a_budget_too_small_states_the_budget_what_was_spent_and_what_is_needed() -> None:
    """Exit 4's facts, in the message and as values: nothing spent unless said."""
    budget = Budget(4000, flag=True)
    error = BudgetTooSmallError(budget, needed=4778)
    assert str(error) == "budget of 4000 tokens too small: 0 spent, 4778 needed"
    assert (error.budget, error.needed, error.spent) == (budget, 4778, 0)
    assert BudgetTooSmallError(budget, needed=9, spent=3).spent == 3


E = TypeVar("E", bound=BaseException)


def _throw(error: BaseException) -> NoReturn:
    raise error


def _raised(error: E) -> E:
    """``error`` as an except clause holds it: raised, with the frames it went through."""
    try:
        _throw(error)
    except BaseException:  # noqa: BLE001
        return error


def _frames(*errors: BaseException) -> list[object]:
    return [error.__traceback__ for error in errors]


def test_a_detached_error_keeps_no_stack_frames_along_its_chain() -> None:
    """A failed result keeps its error but not the frames it was raised through: nor those
    of its cause, nor of what it was raised while handling, even in a cycle."""
    cause = _raised(OSError("cause"))
    error = ApiError("down")
    try:
        raise error from cause
    except ApiError:
        pass
    assert None not in _frames(error, cause)
    assert detached(error) is error
    assert _frames(error, cause) == [None, None]

    context = _raised(ValueError("while handling"))
    handled = _raised(AgentError("trim failed"))
    handled.__context__ = context
    detached(handled)
    assert _frames(handled, context) == [None, None]

    first, second = _raised(ConfigError("a")), _raised(ValueError("b"))
    first.__context__, second.__context__ = second, first
    detached(first)
    assert _frames(first, second) == [None, None]


def test_a_provider_that_does_not_count_says_why_in_its_message() -> None:
    """A count the provider did not give reads as its reason, as every failure reads as
    its message, and says whether the provider counts for others (worth telling)."""
    for offered in (True, False):
        error = NoTokenCountError("no key to ask with", offered=offered)
        assert (str(error), error.reason, error.offered) == ("no key to ask with",) * 2 + (offered,)
    assert NoTokenCountError("x").offered is True
