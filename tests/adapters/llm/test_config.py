"""config.toml and the environment: keys and base URLs (axe-formats.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from axe.adapters.llm.catalogue import provider
from axe.adapters.llm.settings import ProviderSettings, TomlGlobalConfig, provider_settings
from axe.adapters.shared.places import config_dir, data_dir
from axe.domain.errors import ConfigError

KEY = "ANTHROPIC_API_KEY"
CONFIG = """
[providers.anthropic]
api_key = "file-key"
base_url = "https://proxy.example"

[providers.groq]
api_key = "groq-file-key"
"""


def test_file_values_are_used_when_environment_is_silent(tmp_path: Path) -> None:
    """Keys and base URLs come from config.toml when no variable is set."""
    (tmp_path / "config.toml").write_text(CONFIG)
    config = TomlGlobalConfig(tmp_path / "config.toml", {})
    assert (
        config.key_and_source("anthropic", KEY)[0],
        config.setting("anthropic", "base_url"),
    ) == (
        "file-key",
        "https://proxy.example",
    )


def test_environment_wins_over_the_file(tmp_path: Path) -> None:
    """A key or base URL in the environment beats the one in config.toml."""
    (tmp_path / "config.toml").write_text(CONFIG)
    env = {"ANTHROPIC_API_KEY": "env-key", "AXE_ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}
    config = TomlGlobalConfig(tmp_path / "config.toml", env)
    assert (
        config.key_and_source("anthropic", KEY)[0],
        config.setting("anthropic", "base_url"),
    ) == (
        "env-key",
        "http://127.0.0.1:9",
    )


def test_missing_file_means_nothing_configured(tmp_path: Path) -> None:
    """No config.toml is fine: no key, no source, default base URL, no other setting."""
    config = TomlGlobalConfig(tmp_path / "config.toml", {})
    assert (
        config.key_and_source("openai", "OPENAI_API_KEY"),
        config.setting("openai", "base_url"),
    ) == (
        ("", ""),
        "",
    )
    assert config.setting("bedrock", "region") == ""


def test_a_rows_own_variable_is_read_for_its_key(tmp_path: Path) -> None:
    """Google's key is read from GEMINI_API_KEY (the catalogue's variable), not GOOGLE_API_KEY."""
    env = {"GEMINI_API_KEY": "g", "GOOGLE_API_KEY": "wrong"}
    config = TomlGlobalConfig(tmp_path / "config.toml", env)
    assert config.key_and_source("google", "GEMINI_API_KEY") == ("g", "GEMINI_API_KEY")


def test_the_source_of_a_key_is_the_variable_or_the_files_path(tmp_path: Path) -> None:
    """Where a key came from is named (the variable, or config.toml's full path), the
    environment winning over the file as before."""
    path = tmp_path / "config.toml"
    path.write_text(CONFIG)
    assert TomlGlobalConfig(path, {}).key_and_source("anthropic", KEY) == ("file-key", str(path))
    env = {"ANTHROPIC_API_KEY": "env-key"}
    assert TomlGlobalConfig(path, env).key_and_source("anthropic", KEY) == (
        "env-key",
        "ANTHROPIC_API_KEY",
    )


def test_bedrock_region_and_openrouter_headers_are_read_from_the_file_and_the_environment(
    tmp_path: Path,
) -> None:
    """[providers.bedrock] region and [providers.openrouter] referer/title/categories are
    read; the first variable set wins over the file."""
    path = tmp_path / "config.toml"
    path.write_text(
        '[providers.bedrock]\nregion = "eu-west-1"\n'
        '[providers.openrouter]\nreferer = "https://me.example"\ntitle = "gc"\n'
    )
    variables = ("AWS_REGION", "AWS_DEFAULT_REGION", "AXE_BEDROCK_REGION")
    assert TomlGlobalConfig(path, {}).setting("bedrock", "region", variables) == "eu-west-1"
    env = {"AWS_DEFAULT_REGION": "us-east-2", "AXE_BEDROCK_REGION": "ap-south-1"}
    assert TomlGlobalConfig(path, env).setting("bedrock", "region", variables) == "us-east-2"
    env = {"AXE_OPENROUTER_TITLE": "nightly"}
    config = TomlGlobalConfig(path, env)
    assert config.setting("openrouter", "referer") == "https://me.example"
    assert config.setting("openrouter", "title") == "nightly"
    assert config.setting("openrouter", "categories") == ""


def test_spaces_at_either_end_of_a_key_or_header_are_dropped(tmp_path: Path) -> None:
    """A key pasted with a space or tab at either end (the environment or the file), or a
    title so written, is used without them, as the Go axe's HTTP library sends it."""
    path = tmp_path / "config.toml"
    path.write_text('[providers.anthropic]\napi_key = "\\tfile-key "\n')
    assert TomlGlobalConfig(path, {}).key_and_source("anthropic", KEY) == ("file-key", str(path))
    env = {KEY: " env-key\t", "AXE_OPENROUTER_TITLE": " gc ", "OPENROUTER_API_KEY": "k"}
    config = TomlGlobalConfig(path, env)
    assert config.key_and_source("anthropic", KEY) == ("env-key", KEY)
    row = provider("openrouter")
    assert provider_settings(row, config, env, None).headers == {"X-OpenRouter-Title": "gc"}


def test_a_new_rows_setting_is_read_by_name_and_unknown_keys_stay_unread(tmp_path: Path) -> None:
    """A setting only a new catalogue row knows (no field here) is read by its name; keys
    no one asks for are ignored whatever their type, as the Go axe ignores them."""
    path = tmp_path / "config.toml"
    path.write_text('[providers.acme]\nproject = "p-7"\ntimeout = 30\n')
    config = TomlGlobalConfig(path, {})
    config.check()
    assert config.setting("acme", "project") == "p-7"
    assert config.setting("acme", "tenant") == ""


def test_a_setting_that_is_not_a_string_is_the_usual_config_error(tmp_path: Path) -> None:
    """[providers.bedrock] region = 5 names the whole key and the value, like every other
    wrong type in config.toml."""
    path = tmp_path / "config.toml"
    path.write_text("[providers.bedrock]\nregion = 5\n")
    with pytest.raises(ConfigError) as caught:
        TomlGlobalConfig(path, {}).setting("bedrock", "region", ("AWS_REGION",))
    assert str(caught.value) == (
        f"invalid config {path}: providers.bedrock.region: expected a string, got 5"
    )


@pytest.mark.parametrize(
    "text", ["[providers.anthropic\n", "providers = 3\n", "[providers]\nanthropic = 1\n"]
)
def test_malformed_file_is_a_config_error(tmp_path: Path, text: str) -> None:
    """A config.toml that does not parse or has the wrong shape is a ConfigError naming it."""
    (tmp_path / "config.toml").write_text(text)
    with pytest.raises(ConfigError, match=r"config\.toml"):
        TomlGlobalConfig(tmp_path / "config.toml", {}).key_and_source("anthropic", KEY)
    with pytest.raises(ConfigError, match=r"config\.toml"):
        TomlGlobalConfig(tmp_path / "config.toml", {}).check()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "[providers.openai]\nbase_url = 5\n",
            "providers.openai.base_url: expected a string, got 5",
        ),
        (
            '[providers."my.llm"]\napi_key = false\n',
            'providers."my.llm".api_key: expected a string, got false',
        ),
        ("[providers]\nopenai = 1\n", "providers.openai: expected a table, got 1"),
        (
            '[providers."a\\u009bb"]\napi_key = 1\n',
            'providers."a\\u009bb".api_key: expected a string, got 1',
        ),
    ],
)
def test_errors_name_the_whole_key_and_the_value_as_toml_writes_them(
    tmp_path: Path, text: str, message: str
) -> None:
    """A wrong value inside a provider's table names that provider, and shows the value in
    TOML's words (false, "ten"), not Python's (False, 'ten')."""
    (tmp_path / "config.toml").write_text(text)
    with pytest.raises(ConfigError) as caught:
        TomlGlobalConfig(tmp_path / "config.toml", {}).check()
    assert str(caught.value) == f"invalid config {tmp_path / 'config.toml'}: {message}"


def test_settings_repr_never_shows_the_key() -> None:
    """The HTTP adapter's settings can be logged without leaking the key."""
    settings = ProviderSettings(api_key="sk-secret", base_url="", key_variable="OPENAI_API_KEY")
    assert "sk-secret" not in repr(settings)
    assert "OPENAI_API_KEY" in repr(settings)


def test_xdg_variables_win_on_every_platform() -> None:
    """XDG_CONFIG_HOME and XDG_DATA_HOME decide where agents and memory live, on every platform."""
    env = {"XDG_CONFIG_HOME": "/c", "XDG_DATA_HOME": "/d", "HOME": "/h"}
    assert config_dir(env) == Path("/c/axe")
    assert data_dir(env) == Path("/d/axe")


def test_data_dir_falls_back_to_home_local_share() -> None:
    """An empty XDG_DATA_HOME counts as unset: memory lives in ~/.local/share/axe, as in Go axe."""
    assert data_dir({"HOME": "/h", "XDG_DATA_HOME": ""}) == Path("/h/.local/share/axe")


def test_no_home_and_no_xdg_data_is_a_config_error() -> None:
    """With neither HOME nor XDG_DATA_HOME set, gc says to set one instead of guessing a place."""
    with pytest.raises(ConfigError, match="set HOME or XDG_DATA_HOME"):
        data_dir({})


def test_config_dir_falls_back_to_the_platform_dir(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Without XDG_CONFIG_HOME, agents are looked for in ~/.config/axe on Linux, as the
    README and the Go axe say."""
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert config_dir({}) == tmp_path / ".config" / "axe"
