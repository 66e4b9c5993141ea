"""The HTTP transport the LLM adapter tests drive, on a fake clock, against respx."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import respx

from axe.adapters.llm.retry import RetryPolicy
from axe.adapters.llm.transport import HttpTransport
from axe.testing import FakeClock


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def transport(clock: FakeClock) -> Iterator[HttpTransport]:
    """Retries without jitter, so a test knows every pause."""
    http = HttpTransport(clock=clock, retry=RetryPolicy(jitter=lambda: 0.0))
    yield http
    http.close()


@pytest.fixture
def mock() -> Iterator[respx.MockRouter]:
    with respx.mock(assert_all_called=False) as router:
        yield router
