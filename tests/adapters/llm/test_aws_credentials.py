"""AWS credentials for Bedrock: the environment, then a profile of the shared credentials file."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from axe.adapters.llm.aws_credentials import (
    AwsCredentials,
    read_aws_credentials,
    shared_credentials_file,
)
from axe.domain.errors import ConfigError

CREDENTIALS = """\
[default]
aws_access_key_id = AKIADEFAULT
aws_secret_access_key = default-secret

[dev]
aws_access_key_id = AKIADEV
aws_secret_access_key = dev-secret%with/percent
aws_session_token = dev-token
"""


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A home directory with ~/.aws/credentials holding a default and a dev profile."""
    (tmp_path / ".aws").mkdir()
    (tmp_path / ".aws" / "credentials").write_text(CREDENTIALS)
    return tmp_path


def test_environment_pair_wins_over_the_file(home: Path) -> None:
    """AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN) beat any profile."""
    env = {
        "HOME": str(home),
        "AWS_PROFILE": "dev",
        "AWS_ACCESS_KEY_ID": "AKIAENV",
        "AWS_SECRET_ACCESS_KEY": "env-secret",
        "AWS_SESSION_TOKEN": "env-token",
    }
    assert read_aws_credentials(env) == AwsCredentials(
        access_key_id="AKIAENV",
        secret_access_key="env-secret",
        session_token="env-token",
        source="AWS_ACCESS_KEY_ID",
    )


def test_default_profile_of_the_home_credentials_file(home: Path) -> None:
    """Without variables, the [default] profile of ~/.aws/credentials is used and named."""
    keys = read_aws_credentials({"HOME": str(home)})
    path = home / ".aws" / "credentials"
    assert keys == AwsCredentials(
        access_key_id="AKIADEFAULT",
        secret_access_key="default-secret",
        source=f'profile "default" in {path}',
    )


def test_aws_profile_chooses_the_profile(home: Path) -> None:
    """AWS_PROFILE picks the profile; its token is read and a % in a value is kept as is."""
    keys = read_aws_credentials({"HOME": str(home), "AWS_PROFILE": "dev"})
    assert keys is not None
    assert (keys.access_key_id, keys.secret_access_key, keys.session_token) == (
        "AKIADEV",
        "dev-secret%with/percent",
        "dev-token",
    )
    assert keys.source == f'profile "dev" in {home / ".aws" / "credentials"}'


def test_userprofile_is_home_when_home_is_unset(home: Path) -> None:
    """On Windows ~ is USERPROFILE."""
    keys = read_aws_credentials({"USERPROFILE": str(home)})
    assert keys is not None
    assert keys.access_key_id == "AKIADEFAULT"


def test_aws_shared_credentials_file_names_the_file(tmp_path: Path, home: Path) -> None:
    """AWS_SHARED_CREDENTIALS_FILE replaces ~/.aws/credentials, a leading ~ expanded."""
    (home / "elsewhere").write_text(
        "[default]\naws_access_key_id=AKIAOTHER\naws_secret_access_key=o\n"
    )
    env = {"HOME": str(home), "AWS_SHARED_CREDENTIALS_FILE": "~/elsewhere"}
    assert shared_credentials_file(env) == home / "elsewhere"
    keys = read_aws_credentials(env)
    assert keys is not None
    assert keys.access_key_id == "AKIAOTHER"
    assert keys.source == f'profile "default" in {home / "elsewhere"}'


@pytest.mark.parametrize(
    "env",
    [
        {"AWS_SHARED_CREDENTIALS_FILE": "{home}/missing"},
        {"AWS_PROFILE": "prod"},
        {},  # no HOME: no default file to look at
    ],
    ids=["missing-file", "missing-profile", "no-home"],
)
def test_no_file_or_no_profile_means_no_credentials(home: Path, env: dict[str, str]) -> None:
    """A missing file, a missing profile or no home is no credentials, not an error."""
    environ = {name: value.format(home=home) for name, value in env.items()}
    if env:
        environ["HOME"] = str(home)
    assert read_aws_credentials(environ) is None


@pytest.mark.parametrize(
    "env",
    [
        {"AWS_ACCESS_KEY_ID": "AKIAHALF"},
        {"AWS_SECRET_ACCESS_KEY": "half-secret"},
    ],
    ids=["key-id-only", "secret-only"],
)
def test_half_an_environment_pair_falls_back_to_the_file(home: Path, env: dict[str, str]) -> None:
    """One of the two variables alone is ignored, as the Go axe and the AWS SDK for Go do."""
    keys = read_aws_credentials({"HOME": str(home), **env})
    assert keys is not None
    assert (keys.access_key_id, keys.secret_access_key) == ("AKIADEFAULT", "default-secret")


def test_half_an_environment_pair_and_no_file_is_no_credentials(tmp_path: Path) -> None:
    """With one variable alone and no credentials file there are no credentials."""
    assert read_aws_credentials({"HOME": str(tmp_path), "AWS_ACCESS_KEY_ID": "AKIA"}) is None


def test_a_profile_without_both_keys_is_no_credentials(tmp_path: Path) -> None:
    """A profile with only a key id (or only settings such as region) has no credentials."""
    path = tmp_path / "credentials"
    path.write_text("[default]\naws_access_key_id = AKIA\n\n[sso]\nregion = eu-west-1\n")
    for profile in ("default", "sso"):
        env = {"AWS_SHARED_CREDENTIALS_FILE": str(path), "AWS_PROFILE": profile}
        assert read_aws_credentials(env) is None


def test_the_last_of_repeated_keys_wins(tmp_path: Path) -> None:
    """Repeated profiles and keys are allowed; the last value wins, as the Go axe reads them."""
    path = tmp_path / "credentials"
    path.write_text(
        "[default]\naws_access_key_id = OLD\naws_secret_access_key = s\n"
        "[default]\naws_access_key_id = NEW\n"
    )
    keys = read_aws_credentials({"AWS_SHARED_CREDENTIALS_FILE": str(path)})
    assert keys is not None
    assert keys.access_key_id == "NEW"


def test_a_default_section_does_not_leak_into_other_profiles(tmp_path: Path) -> None:
    """[DEFAULT] is just another profile name: its keys do not fill in other profiles."""
    path = tmp_path / "credentials"
    path.write_text("[DEFAULT]\naws_access_key_id = A\naws_secret_access_key = s\n[dev]\n")
    env = {"AWS_SHARED_CREDENTIALS_FILE": str(path), "AWS_PROFILE": "dev"}
    assert read_aws_credentials(env) is None


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("aws_secret_access_key = LEAKED-SECRET\n", "line 1 comes before any [profile] line"),
        (
            "[default]\naws_access_key_id = A\nLEAKED-SECRET\n",
            "line 3 is neither a [profile] nor a key = value line",
        ),
    ],
    ids=["no-section", "not-key-value"],
)
def test_a_malformed_file_is_one_line_naming_the_file_never_its_values(
    tmp_path: Path, text: str, reason: str
) -> None:
    """A file that does not parse is a config error naming the file and line, no value."""
    path = tmp_path / "credentials"
    path.write_text(text)
    with pytest.raises(ConfigError) as raised:
        read_aws_credentials({"AWS_SHARED_CREDENTIALS_FILE": str(path)})
    assert str(raised.value) == f"cannot parse {path}: {reason}"


def test_non_utf8_bytes_are_a_config_error(tmp_path: Path) -> None:
    """A credentials file that is not UTF-8 is a config error naming the file and offset."""
    path = tmp_path / "credentials"
    path.write_bytes(b"[default]\naws_access_key_id = \xff\n")
    with pytest.raises(ConfigError) as raised:
        read_aws_credentials({"AWS_SHARED_CREDENTIALS_FILE": str(path)})
    assert str(raised.value) == (f"cannot parse {path}: not UTF-8 text (invalid byte at offset 30)")


def test_a_directory_in_place_of_the_file_is_a_config_error(tmp_path: Path) -> None:
    """A directory where the credentials file should be is a config error, not 'missing'."""
    (tmp_path / ".aws" / "credentials").mkdir(parents=True)
    with pytest.raises(ConfigError) as raised:
        read_aws_credentials({"HOME": str(tmp_path)})
    assert str(raised.value) == f"cannot read {tmp_path / '.aws' / 'credentials'}: a directory"


@pytest.mark.skipif(
    sys.platform == "win32" or os.geteuid() == 0, reason="needs POSIX permissions, not root"
)
def test_an_unreadable_file_is_a_config_error(tmp_path: Path) -> None:
    """A credentials file that cannot be opened is a config error that says why."""
    path = tmp_path / "credentials"
    path.write_text(CREDENTIALS)
    path.chmod(0)
    with pytest.raises(ConfigError) as raised:
        read_aws_credentials({"AWS_SHARED_CREDENTIALS_FILE": str(path)})
    assert str(raised.value) == f"cannot read {path}: Permission denied"


def test_a_file_in_place_of_a_directory_is_a_config_error(tmp_path: Path) -> None:
    """A path through a regular file (~/.aws is a file) is a config error that says why."""
    (tmp_path / ".aws").write_text("not a directory")
    with pytest.raises(ConfigError) as raised:
        read_aws_credentials({"HOME": str(tmp_path)})
    assert str(raised.value) == (
        f"cannot read {tmp_path / '.aws' / 'credentials'}: Not a directory"
    )


def test_a_byte_order_mark_is_allowed(tmp_path: Path) -> None:
    """A file saved with a UTF-8 BOM (Windows editors) reads like one without."""
    path = tmp_path / "credentials"
    path.write_bytes(b"\xef\xbb\xbf" + CREDENTIALS.encode())
    keys = read_aws_credentials({"AWS_SHARED_CREDENTIALS_FILE": str(path)})
    assert keys is not None
    assert keys.access_key_id == "AKIADEFAULT"


def test_secrets_never_appear_in_repr_or_str(home: Path) -> None:
    """The secret key and token of keys read from a file show in neither repr nor str."""
    keys = read_aws_credentials({"HOME": str(home), "AWS_PROFILE": "dev"})
    for shown in (repr(keys), str(keys)):
        assert "dev-secret" not in shown
        assert "dev-token" not in shown
        assert "AKIADEV" in shown
