"""memory.path as the Go axe resolves it: ``~``, then ``$VAR``/``${VAR}``, then absolute."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from axe.adapters.memory.paths import expand_path, expand_variables
from axe.adapters.memory.store import FileMemoryStore
from axe.cli.commands import cli
from axe.domain.errors import ConfigError
from axe.testing import make_agent
from tests.support import AxeHome, entries

# Go's own table for os.Expand (src/os/env_test.go), with its getenv.
GO_GETENV = {
    "*": "all the args",
    "#": "NARGS",
    "$": "PID",
    "1": "ARGUMENT1",
    "HOME": "/usr/gopher",
    "H": "(Value of H)",
    "home_1": "/usr/foo",
    "_": "underscore",
}
GO_EXPAND_TESTS = [
    ("", ""),
    ("$*", "all the args"),
    ("$$", "PID"),
    ("${*}", "all the args"),
    ("$1", "ARGUMENT1"),
    ("${1}", "ARGUMENT1"),
    ("now is the time", "now is the time"),
    ("$HOME", "/usr/gopher"),
    ("$home_1", "/usr/foo"),
    ("${HOME}", "/usr/gopher"),
    ("${H}OME", "(Value of H)OME"),
    ("A$$$#$1$H$home_1*B", "APIDNARGSARGUMENT1(Value of H)/usr/foo*B"),
    ("start$+middle$^end$", "start$+middle$^end$"),
    ("mixed$|bag$$$", "mixed$|bagPID$"),
    ("$", "$"),
    ("$}", "$}"),
    ("${", ""),
    ("${}", ""),
]


@pytest.mark.parametrize(("text", "expanded"), GO_EXPAND_TESTS)
def test_variables_expand_exactly_as_go_os_expand_does(text: str, expanded: str) -> None:
    """Every case of Go's own os.Expand test table comes out the same, so gc trims the
    file axe run writes whatever the path holds."""
    assert expand_variables(text, GO_GETENV) == expanded


@pytest.mark.parametrize(
    ("text", "expanded"),
    [
        ("$NOPE/x.md", "/x.md"),  # unset: the empty string, as os.ExpandEnv
        ("/m/${NOPE}x.md", "/m/x.md"),
        ("/m/$$.md", "/m/.md"),  # $$ is the variable "$", which is not set
        ("/m/${}x", "/m/x"),
        ("/m/${DIR", "/m/DIR"),  # an unclosed ${ is dropped, the rest kept
        ("/m/$ x", "/m/$ x"),
        ("/m/$DIR.d/${DIR}_x", "/m/d.d/d_x"),
        ("/m/é$DIRé", "/m/édé"),  # names are ASCII: é ends one
    ],
)
def test_unset_and_odd_variables_follow_go(text: str, expanded: str) -> None:
    """An unset variable becomes nothing, $$ and ${} are Go's, a stray $ stays."""
    assert expand_variables(text, {"DIR": "d"}) == expanded


@pytest.mark.parametrize(
    ("text", "expanded"),
    [
        ("~", "/home/me"),
        ("~/mem/x.md", "/home/me/mem/x.md"),
        ("~/$AGENT.md", "/home/me/pr.md"),
        ("$HOME/mem.md", "/home/me/mem.md"),
        ("~root/x.md", "~root/x.md"),  # Go's axe knows only the user's own ~
        ("/a/~/x.md", "/a/~/x.md"),
        ("~x.md", "~x.md"),
    ],
)
def test_tilde_is_the_home_directory_then_variables_expand(text: str, expanded: str) -> None:
    """A leading ~ alone or before / is HOME; variables expand after it."""
    environ = {"HOME": "/home/me", "AGENT": "pr"}
    assert expand_path(text, environ, windows=False) == expanded


def test_on_windows_tilde_is_the_user_profile() -> None:
    r"""On Windows ~ is USERPROFILE (as Go's os.UserHomeDir), before / or \."""
    environ = {"HOME": "/unused", "USERPROFILE": "C:\\Users\\me"}
    assert expand_path("~\\m.md", environ, windows=True) == "C:\\Users\\me\\m.md"
    assert expand_path("~/m.md", environ, windows=True) == "C:\\Users\\me/m.md"


def test_without_a_home_tilde_stays() -> None:
    """No HOME: ~ is left as it is (and the path is then refused as relative)."""
    assert expand_path("~/m.md", {}, windows=False) == "~/m.md"


def store(environ: dict[str, str]) -> FileMemoryStore:
    return FileMemoryStore(lambda: Path("/data"), environ=environ)


def test_the_store_uses_the_expanded_path(tmp_path: Path) -> None:
    """memory.path = "$MEM/${NAME}.md" is the file gc reads and trims."""
    agent = make_agent("a", path="~/$MEM/${NAME}.md")
    environ = {"HOME": str(tmp_path), "MEM": "memory", "NAME": "a"}
    assert store(environ).path_for(agent) == tmp_path / "memory" / "a.md"


def test_the_environment_given_wins_over_the_process_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """An embedder's environment is the one used, not os.environ."""
    monkeypatch.setenv("MEM", "/from-process")
    agent = make_agent("a", path="$MEM/a.md")
    assert store({"MEM": "/given"}).path_for(agent) == Path("/given/a.md")


@pytest.mark.parametrize(
    ("path", "environ", "message"),
    [
        (
            "$MEM/a.md",
            {"MEM": "relative"},
            'memory.path "$MEM/a.md" of agent "a" is not an absolute path (it expands to '
            '"relative/a.md"); use an absolute path such as /home/me/agent-memory.md',
        ),
        (
            "${NOPE}a.md",
            {},
            'memory.path "${NOPE}a.md" of agent "a" is not an absolute path (it expands to '
            '"a.md"); use an absolute path such as /home/me/agent-memory.md',
        ),
        (
            "~/a.md",
            {},
            'memory.path "~/a.md" of agent "a" is not an absolute path; use an absolute path '
            "such as /home/me/agent-memory.md",
        ),
        (
            "mem/a.md",
            {"HOME": "/home/me"},
            'memory.path "mem/a.md" of agent "a" is not an absolute path; use an absolute path '
            "such as /home/me/agent-memory.md",
        ),
    ],
)
def test_a_relative_result_is_the_config_error_of_today(
    path: str, environ: dict[str, str], message: str
) -> None:
    """Still relative after expansion: the same config error as before, plus what the
    path became when expansion changed it, so an unset variable shows."""
    with pytest.raises(ConfigError) as caught:
        store(environ).path_for(make_agent("a", path=path))
    assert str(caught.value) == message


def test_an_unset_variable_is_refused_and_the_file_it_would_name_is_untouched(
    tmp_path: Path,
) -> None:
    """memory.path = "<dir>/$AXE_MEM/x.md" with AXE_MEM unset would be "<dir>//x.md", another
    file: gc exits 2 with one line naming the variable and the agent, and never trims the
    file the path would have named."""
    home = AxeHome(tmp_path)
    elsewhere = tmp_path / "x.md"
    elsewhere.write_bytes(entries(5))
    home.add_agent("a", model="builtin/heuristic", last_n=1, path=f"{tmp_path}/$AXE_MEM/x.md")
    env: dict[str, str | None] = {**home.env, "AXE_MEM": None}
    result = CliRunner().invoke(cli, ["gc", "a"], env=env, catch_exceptions=False)
    assert (result.exit_code, result.stdout, result.stderr) == (
        2,
        "",
        f'memory.path "{tmp_path}/$AXE_MEM/x.md" of agent "a" uses $AXE_MEM, which is not '
        f'set (it would name "{tmp_path}//x.md" instead); set it or write the path out\n',
    )
    assert elsewhere.read_bytes() == entries(5)


def test_every_unset_variable_is_named_once() -> None:
    """Several unset variables are all named, each once; a set one still expands."""
    agent = make_agent("a", path="/$A/${B}/$SET/$A.md")
    with pytest.raises(ConfigError) as caught:
        store({"SET": "s"}).path_for(agent)
    assert str(caught.value) == (
        'memory.path "/$A/${B}/$SET/$A.md" of agent "a" uses $A and $B, which are not set '
        '(it would name "///s/.md" instead); set it or write the path out'
    )
