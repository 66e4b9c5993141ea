"""config.toml and the environment: keys and base URLs (axe-formats.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from axe.adapters.files.global_config import TomlGlobalConfig, key_variable
from axe.adapters.files.paths import config_dir, data_dir
from axe.domain.errors import ConfigError

CONFIG = """
[providers.anthropic]
api_key = "file-key"
base_url = "https://proxy.example"

[providers.groq]
api_key = "groq-file-key"
"""


def test_file_values_are_used_when_environment_is_silent(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text(CONFIG)
    settings = TomlGlobalConfig(tmp_path / "config.toml", {}).provider("anthropic")
    assert (settings.api_key, settings.base_url) == ("file-key", "https://proxy.example")


def test_environment_wins_over_the_file(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text(CONFIG)
    env = {"ANTHROPIC_API_KEY": "env-key", "AXE_ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}
    settings = TomlGlobalConfig(tmp_path / "config.toml", env).provider("anthropic")
    assert (settings.api_key, settings.base_url) == ("env-key", "http://127.0.0.1:9")


def test_other_providers_use_upper_cased_variable_names(tmp_path: Path) -> None:
    assert key_variable("groq") == "GROQ_API_KEY"
    env = {"GROQ_API_KEY": "g"}
    assert TomlGlobalConfig(tmp_path / "config.toml", env).provider("groq").api_key == "g"


def test_missing_file_means_nothing_configured(tmp_path: Path) -> None:
    settings = TomlGlobalConfig(tmp_path / "config.toml", {}).provider("openai")
    assert (settings.api_key, settings.base_url, settings.key_variable) == (
        "",
        "",
        "OPENAI_API_KEY",
    )


@pytest.mark.parametrize(
    "text", ["[providers.anthropic\n", "providers = 3\n", "[providers]\nanthropic = 1\n"]
)
def test_malformed_file_is_a_config_error(tmp_path: Path, text: str) -> None:
    (tmp_path / "config.toml").write_text(text)
    with pytest.raises(ConfigError, match=r"config\.toml"):
        TomlGlobalConfig(tmp_path / "config.toml", {}).provider("anthropic")


def test_settings_repr_never_shows_the_key() -> None:
    settings = TomlGlobalConfig(
        Path("/nonexistent/config.toml"), {"OPENAI_API_KEY": "sk-secret"}
    ).provider("openai")
    assert "sk-secret" not in repr(settings)


def test_xdg_variables_win_on_every_platform() -> None:
    env = {"XDG_CONFIG_HOME": "/c", "XDG_DATA_HOME": "/d", "HOME": "/h"}
    assert config_dir(env) == Path("/c/axe")
    assert data_dir(env) == Path("/d/axe")


def test_data_dir_falls_back_to_home_local_share() -> None:
    assert data_dir({"HOME": "/h", "XDG_DATA_HOME": ""}) == Path("/h/.local/share/axe")


def test_no_home_and_no_xdg_data_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="set HOME or XDG_DATA_HOME"):
        data_dir({})


def test_config_dir_falls_back_to_the_platform_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    import platformdirs

    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    expected = Path(platformdirs.user_config_dir("axe", appauthor=False, roaming=True))
    assert config_dir({}) == expected
    assert expected.name == "axe"
