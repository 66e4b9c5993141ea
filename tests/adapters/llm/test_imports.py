"""What building a provider's client loads: httpx, and not httpx's command-line tool."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

# Run in a fresh interpreter: the test process has imported httpx (and its tool) already.
BUILD_A_CLIENT = """
import sys
from pathlib import Path

from axe.adapters.llm import LLMProviders
from axe.application.ports import AnalysisRequest
from axe.domain.model import ModelRef
from axe.domain.prompt import PATTERN_DETECTION_PROMPT
from axe.testing import FakeClock

providers = LLMProviders({"OPENAI_API_KEY": "k"}, config_dir=Path(sys.argv[1]), clock=FakeClock())
request = AnalysisRequest(
    model=ModelRef("openai", "gpt-4o"),
    system_prompt=PATTERN_DETECTION_PROMPT,
    content=b"## 2026-01-01\\n",
    temperature=0.0,
    max_tokens=100,
)
providers.input_limit(request)
print("httpx" in sys.modules, sys.modules.get("httpx._main") is None, "rich" in sys.modules)
"""


def test_a_provider_client_is_built_without_httpx_command_line_tool(tmp_path: Path) -> None:
    """A run that analyses with a provider starts without loading httpx's command-line tool
    and what it brings where installed (rich, pygments): about 30 ms of every such run, for
    a tool gc never runs."""
    done = subprocess.run(
        [sys.executable, "-c", BUILD_A_CLIENT, str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.split() == ["True", "True", "False"]
