"""Every test runs with provider keys, AWS credentials, axe, proxy and CA variables removed from
the environment.

A developer's or CI machine's ``HTTPS_PROXY``/``NO_PROXY`` or ``SSL_CERT_FILE`` would
otherwise route the loopback tests through a real proxy or change which certificates are
trusted; the tests that need one of them set it themselves.

Every test function also needs a docstring whose first line says what user-visible promise
it keeps: a run that collects one without fails before any test runs, listing them all.

``make mutate`` runs the fast tests with ``--hypothesis-profile=mutation`` (pyproject.toml's
``[tool.mutmut]``): the same examples at every run, so which mutants are caught does not
depend on a draw, and a mutant that hangs a test is given up on after a few CPU seconds of
that test rather than mutmut's limit for all of them (docs/testing.md).
"""

from __future__ import annotations

import os
import signal
from collections.abc import Generator, Iterator
from pathlib import Path
from types import FrameType

import pytest
from hypothesis import HealthCheck, Phase, settings

from tests.e2e.loopback import LoopbackLLM, loopback_llm
from tests.e2e.loopback_proxy import LoopbackProxy, loopback_proxy
from tests.e2e.tls import server_tls
from tests.support import AxeHome

settings.register_profile(
    "ci", max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("dev", max_examples=100, deadline=None)
settings.register_profile(
    "mutation",  # the dev examples, drawn from each test's own fixed seed; no shrinking
    max_examples=100,
    deadline=None,
    derandomize=True,
    database=None,
    phases=[Phase.explicit, Phase.generate, Phase.target],
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


def _undocumented_tests(items: list[pytest.Item]) -> list[str]:
    """The node ids (parameters left off, each test once) of test functions without a
    docstring, in collection order."""
    missing: dict[str, None] = {}
    for item in items:
        if not isinstance(item, pytest.Function):
            continue
        if not (item.function.__doc__ or "").strip():
            parent = item.parent.nodeid if item.parent is not None else ""
            missing[f"{parent}::{item.originalname}"] = None
    return list(missing)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Refuse to run while a collected test function has no docstring."""
    missing = _undocumented_tests(items)
    if missing:
        raise pytest.UsageError(
            f"{len(missing)} test function(s) without a docstring. Give each one a docstring "
            "whose first line says what user-visible promise the test keeps:\n"
            + "\n".join(f"  {node_id}" for node_id in missing)
        )


# CPU seconds a test may use while mutmut runs a mutant: about three times the slowest
# selected test's (1.4 to 1.9 s), whatever the machine's load (a wall-clock limit is not).
_MUTANT_TEST_CPU_SECONDS = 5


def _give_up_on_mutant(_signal: int, _frame: FrameType | None) -> None:
    os.kill(os.getpid(), signal.SIGXCPU)  # as mutmut's own limit does: counted as a timeout


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    """Under mutation (mutmut names the mutant in ``MUTANT_UNDER_TEST``), a test that hangs
    ends the mutant's run after its own CPU seconds, not after mutmut's wall-clock limit
    for every test selected (ten times their total), which a loaded machine can reach."""
    if "__mutmut_" not in os.environ.get("MUTANT_UNDER_TEST", ""):
        return (yield)
    signal.signal(signal.SIGPROF, _give_up_on_mutant)
    signal.setitimer(signal.ITIMER_PROF, _MUTANT_TEST_CPU_SECONDS)
    try:
        return (yield)
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)


_CA_VARIABLES = frozenset({"SSL_CERT_FILE", "SSL_CERT_DIR"})


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if (
            name.endswith("_API_KEY")
            or name.startswith(("AXE_", "XDG_", "AWS_"))  # AWS_PROFILE picks Bedrock's keys
            or name == "NO_COLOR"
            or name.lower().endswith("_proxy")  # what urllib reads: HTTP_PROXY, no_proxy, ...
            or name in _CA_VARIABLES
        ):
            monkeypatch.delenv(name)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AxeHome:
    """An isolated axe home, also exported to the environment for in-process CLI runs."""
    axe_home = AxeHome(tmp_path)
    for name, value in axe_home.env.items():
        monkeypatch.setenv(name, value)
    return axe_home


@pytest.fixture
def plain_llm() -> Iterator[LoopbackLLM]:
    """A loopback provider on http://127.0.0.1."""
    with loopback_llm() as server:
        yield server


@pytest.fixture
def tls_llm() -> Iterator[LoopbackLLM]:
    """A loopback provider on https://127.0.0.1 whose certificate the test CA signed."""
    with loopback_llm(server_tls()) as server:
        yield server


@pytest.fixture
def proxy() -> Iterator[LoopbackProxy]:
    """A loopback forwarding and CONNECT proxy, the only resolver of llm.axe.test."""
    with loopback_proxy() as server:
        yield server
