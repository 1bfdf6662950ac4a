"""install / uninstall: idempotent merges that never drop other entries, with backups and diffs."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shlex
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from context_keeper import install
from context_keeper.errors import InvalidInput, StoreError
from tests.hook_helpers import hook_env

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: the tomli package, a dependency there
    try:
        import tomli as tomllib
    except ModuleNotFoundError:
        tomllib = None
needs_tomllib = pytest.mark.skipif(tomllib is None, reason="needs tomllib (Python 3.11+) or tomli")

OTHER_SETTINGS = {
    "permissions": {"allow": ["Bash(npm test)"]},
    "env": {"FOO": "1"},
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh", "timeout": 3}]}],
        "SessionStart": [{"matcher": "", "hooks": [
            {"type": "command", "command": "echo hello"},
            {"type": "command", "command": "python /opt/context-keeper/hooks/session_start.py"},  # 0.x wiring
        ]}],
        "PostToolUse": [{"matcher": "", "hooks": [
            {"type": "command", "command": "python /opt/context-keeper/hooks/constraint_reinject.py"}]}],
    },
}
OTHER_MCP = {"mcpServers": {"github": {"type": "stdio", "command": "gh-mcp", "args": [], "env": {"T": "x"}}}}


def _cli(*args: str, cwd: Path, home: Path) -> subprocess.CompletedProcess:
    """``context-keeper ARGS --home HOME`` from ``cwd``, without CONTEXT_KEEPER_PROJECT or
    CLAUDE_PROJECT_DIR (as ``hook_env()`` gives a child), run by ``cli.main`` in this process.

    What these tests check is what install and uninstall write and say, not the process around
    them, and a spawn cost ~0.25 s each (about 90 of them). The console entry point and the
    ``python -m context_keeper install`` process keep their own tests: _install_as below, the
    shell-wiring test, test_cli.py and test_adapter_hunt13.py.
    """
    from context_keeper.cli import main

    saved_cwd = os.getcwd()
    saved_env = {k: os.environ.pop(k) for k in ("CONTEXT_KEEPER_PROJECT", "CLAUDE_PROJECT_DIR") if k in os.environ}
    out, err = io.StringIO(), io.StringIO()
    argv = [*args, "--home", str(home)]
    try:
        os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as exc:  # argparse's refusals, as the process would exit
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
                if not isinstance(exc.code, (int, type(None))):
                    err.write(f"{exc.code}\n")
    finally:
        os.chdir(saved_cwd)
        os.environ.update(saved_env)
    return subprocess.CompletedProcess(argv, code, out.getvalue(), err.getvalue())


def _write(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def _codex_config(tmp_path: Path, text: str) -> tuple[Path, Path]:
    """A home directory whose Codex config.toml holds ``text``: (home, the config's path)."""
    home = tmp_path / "home"
    path = home / ".codex" / "config.toml"
    path.parent.mkdir(parents=True)
    path.write_text(text, encoding="utf-8")
    return home, path


def _commands(settings: dict) -> list[tuple[str, str]]:
    return [(event, h["command"]) for event, groups in settings.get("hooks", {}).items()
            for g in groups for h in g["hooks"]]


@pytest.fixture
def configured(project: Path) -> Path:
    _write(project / ".claude" / "settings.json", OTHER_SETTINGS)
    _write(project / ".mcp.json", OTHER_MCP)
    return project


def test_claude_install_adds_every_hook_and_the_server_and_keeps_the_rest(configured: Path, tmp_path: Path):
    proc = _cli("install", "--project", str(configured), cwd=configured, home=tmp_path / "home")
    assert proc.returncode == 0, proc.stderr
    settings = json.loads((configured / ".claude" / "settings.json").read_text(encoding="utf-8"))
    assert settings["permissions"] == OTHER_SETTINGS["permissions"] and settings["env"] == {"FOO": "1"}
    commands = _commands(settings)
    assert ("PreToolUse", "./guard.sh") in commands and ("SessionStart", "echo hello") in commands
    assert not any("/opt/context-keeper" in c for _, c in commands)  # 0.x wiring replaced, not duplicated
    ours = [(e, c) for e, c in commands if install.is_our_command(c)]
    assert sorted({e for e, _ in ours}) == ["PostToolUse", "PreCompact", "PreToolUse", "SessionStart", "Stop",
                                            "SubagentStart", "UserPromptSubmit"]
    assert len(ours) == len(install.CLAUDE_HOOKS)
    guard = next(g for g in settings["hooks"]["PreToolUse"] if g.get("matcher") == install.EDIT_TOOLS)
    assert guard["hooks"][0]["timeout"] == 10
    mcp = json.loads((configured / ".mcp.json").read_text(encoding="utf-8"))
    assert mcp["mcpServers"]["github"] == OTHER_MCP["mcpServers"]["github"]
    assert mcp["mcpServers"]["context-keeper"]["type"] == "stdio"
    assert list((configured / ".context" / "install-backups" / ".claude").glob("settings.json.bak-*"))


def test_install_twice_changes_nothing(configured: Path, tmp_path: Path):
    _cli("install", "--project", str(configured), cwd=configured, home=tmp_path / "home")
    first = {p: p.read_bytes() for p in (configured / ".claude" / "settings.json", configured / ".mcp.json")}
    proc = _cli("install", "--project", str(configured), cwd=configured, home=tmp_path / "home")
    assert "already up to date" in proc.stdout
    assert {p: p.read_bytes() for p in first} == first


def test_uninstall_removes_only_our_entries(configured: Path, tmp_path: Path):
    _cli("install", "--project", str(configured), cwd=configured, home=tmp_path / "home")
    proc = _cli("uninstall", "--project", str(configured), cwd=configured, home=tmp_path / "home")
    assert proc.returncode == 0, proc.stderr
    settings = json.loads((configured / ".claude" / "settings.json").read_text(encoding="utf-8"))
    assert _commands(settings) == [("PreToolUse", "./guard.sh"), ("SessionStart", "echo hello")]
    assert settings["permissions"] == OTHER_SETTINGS["permissions"]
    assert json.loads((configured / ".mcp.json").read_text(encoding="utf-8")) == OTHER_MCP


def test_uninstall_keeps_a_server_entry_the_user_had_before_install(project: Path, tmp_path: Path):
    users = {"command": "context-keeper", "args": [], "env": {"FOO": "1"}}
    _write(project / ".mcp.json", {"mcpServers": {"context-keeper": users}})
    home = tmp_path / "home"
    _cli("install", "--project", str(project), cwd=project, home=home)
    proc = _cli("uninstall", "--project", str(project), cwd=project, home=home)
    assert proc.returncode == 0, proc.stderr
    entry = json.loads((project / ".mcp.json").read_text(encoding="utf-8"))["mcpServers"]["context-keeper"]
    assert entry["env"] == {"FOO": "1"} and "context-keeper" in entry["command"]
    assert "kept mcpServers.context-keeper" in proc.stdout and "(env)" in proc.stdout


def test_install_adds_its_variable_to_the_users_env_instead_of_replacing_it(project: Path, tmp_path: Path):
    path = project / ".vscode" / "mcp.json"
    _write(path, {"servers": {"context-keeper": {"type": "stdio", "command": "context-keeper", "env": {"FOO": "1"}}}})
    home = tmp_path / "home"
    _cli("install", "--client", "vscode", "--write", "--project", str(project), cwd=project, home=home)
    entry = json.loads(path.read_text(encoding="utf-8"))["servers"]["context-keeper"]
    assert entry["env"] == {"FOO": "1", "CONTEXT_KEEPER_PROJECT": "${workspaceFolder}"}
    _cli("uninstall", "--client", "vscode", "--project", str(project), cwd=project, home=home)
    assert json.loads(path.read_text(encoding="utf-8"))["servers"]["context-keeper"]["env"]["FOO"] == "1"


FOREIGN_SERVERS = [
    {"type": "http", "url": "https://mcp.example.com/ck", "headers": {"Authorization": "Bearer t"}},
    {"command": "uvx", "args": ["context-keeper-mcp"], "env": {"TOKEN": "t"}},
    {"type": "sse", "command": "context-keeper", "args": ["serve"]},
]


@pytest.mark.parametrize("entry", FOREIGN_SERVERS, ids=["http", "other-command", "sse"])
def test_install_refuses_to_replace_a_server_under_our_name_that_is_not_ours(project: Path, tmp_path: Path, entry):
    path = project / ".mcp.json"
    _write(path, {"mcpServers": {"context-keeper": entry}})
    before = path.read_bytes()
    home = tmp_path / "home"
    proc = _cli("install", "--project", str(project), cwd=project, home=home)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert str(path) in proc.stderr and json.dumps(entry) in proc.stderr and "--force" in proc.stderr
    assert path.read_bytes() == before
    proc = _cli("uninstall", "--project", str(project), cwd=project, home=home)
    assert proc.returncode == 0 and path.read_bytes() == before
    proc = _cli("install", "--force", "--project", str(project), cwd=project, home=home)
    assert proc.returncode == 0, proc.stderr
    assert install.is_our_server(json.loads(path.read_text(encoding="utf-8"))["mcpServers"]["context-keeper"])


def test_a_refusal_for_one_client_writes_nothing_for_the_others(project: Path, tmp_path: Path):
    # claude comes before cursor: planned first, it must not be written when cursor refuses.
    _write(project / ".cursor" / "mcp.json", {"mcpServers": {"context-keeper": FOREIGN_SERVERS[0]}})
    before = {p: p.read_bytes() for p in project.rglob("*") if p.is_file()}
    proc = _cli("install", "--client", "all", "--write", "--project", str(project), cwd=project, home=tmp_path / "home")
    assert proc.returncode != 0 and "nothing was written" in proc.stderr.lower()
    assert {p: p.read_bytes() for p in project.rglob("*") if p.is_file()} == before
    assert not (tmp_path / "home").exists() or not any((tmp_path / "home").rglob("*.json"))


@needs_tomllib
def test_codex_install_refuses_to_replace_a_server_under_our_name_that_is_not_ours(project: Path, tmp_path: Path):
    text = '[mcp_servers.context-keeper]\ncommand = "uvx"\nargs = ["context-keeper-mcp"]\n'
    home, path = _codex_config(tmp_path, text)
    proc = _cli("install", "--client", "codex", "--write", "--project", str(project), cwd=project, home=home)
    assert proc.returncode != 0 and str(path) in proc.stderr and "--force" in proc.stderr
    proc = _cli("uninstall", "--client", "codex", "--project", str(project), cwd=project, home=home)
    assert proc.returncode == 0 and path.read_text(encoding="utf-8") == text


@pytest.mark.parametrize("entry", [
    {"command": "/old/venv/bin/context-keeper", "args": ["serve"]},
    {"type": "stdio", "command": "C:\\ck\\Scripts\\context-keeper.exe", "args": ["serve"]},
    {"command": "/usr/bin/python3", "args": ["-m", "context_keeper", "serve"]},
    {"command": "python", "args": ["/src/context-keeper/server.py"]},
])
def test_an_older_server_entry_of_ours_is_recognised(entry):
    assert install.is_our_server(entry)
    assert install.merge_server({"mcpServers": {"context-keeper": entry}}, "mcpServers", {"command": "ck"})


@needs_tomllib
def test_codex_uninstall_keeps_a_table_with_the_users_keys(project: Path, tmp_path: Path):
    home, path = _codex_config(tmp_path, '[mcp_servers.context-keeper]\ncommand = "context-keeper"\nargs = []\n'
                                         'env = { FOO = "1" }\n')
    _cli("install", "--client", "codex", "--write", "--project", str(project), cwd=project, home=home)
    proc = _cli("uninstall", "--client", "codex", "--project", str(project), cwd=project, home=home)
    assert proc.returncode == 0 and "kept mcp_servers.context-keeper" in proc.stdout
    assert tomllib.loads(path.read_text(encoding="utf-8"))["mcp_servers"]["context-keeper"]["env"] == {"FOO": "1"}


def test_round_trip_on_fresh_files_leaves_nothing_behind(project: Path, tmp_path: Path):
    home = tmp_path / "home"
    _cli("install", "--project", str(project), cwd=project, home=home)
    _cli("uninstall", "--project", str(project), cwd=project, home=home)
    assert not (project / ".claude" / "settings.json").exists() and not (project / ".mcp.json").exists()


def test_dry_run_prints_a_diff_and_writes_nothing(configured: Path, tmp_path: Path):
    before = (configured / ".claude" / "settings.json").read_bytes()
    proc = _cli("install", "--project", str(configured), "--dry-run", cwd=configured, home=tmp_path / "home")
    assert proc.stdout.count("+++ ") == 2 and "\n+" in proc.stdout
    # the command style depends on how the package is installed (checkout launcher or console script)
    assert "scope_guard" in proc.stdout or "scope-guard" in proc.stdout
    assert (configured / ".claude" / "settings.json").read_bytes() == before
    assert not list(configured.rglob("*.bak-*"))


def test_user_install_writes_user_settings_only(project: Path, tmp_path: Path):
    home = tmp_path / "home"
    proc = _cli("install", "--user", "--project", str(project), cwd=project, home=home)
    assert proc.returncode == 0 and "claude mcp add -s user" in proc.stdout
    assert _commands(json.loads((home / ".claude" / "settings.json").read_text(encoding="utf-8")))
    assert not (project / ".claude").exists() and not (project / ".mcp.json").exists()


def test_an_unparsable_config_is_refused_not_overwritten(project: Path, tmp_path: Path):
    path = project / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text('{"hooks": {,}', encoding="utf-8")
    proc = _cli("install", "--project", str(project), cwd=project, home=tmp_path / "home")
    assert proc.returncode != 0 and "does not parse" in proc.stderr
    assert path.read_text(encoding="utf-8") == '{"hooks": {,}'


JSONC = ('{\n  // servers for this workspace\n  "servers": {\n    "other": {"command": "x", "args": ["a//b", "/*c*/"],},'
         ' /* trailing */\n  },\n}\n')


def test_a_config_with_comments_is_refused_as_jsonc_not_as_broken(project: Path, tmp_path: Path):
    path = project / ".vscode" / "mcp.json"
    path.parent.mkdir()
    path.write_text(JSONC, encoding="utf-8")
    proc = _cli("install", "--client", "vscode", "--write", "--project", str(project), cwd=project,
                home=tmp_path / "home")
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "comments or trailing commas" in proc.stderr and "--print" in proc.stderr
    assert "does not parse" not in proc.stderr and "Fix it" not in proc.stderr
    assert path.read_text(encoding="utf-8") == JSONC


@pytest.mark.parametrize("text", ['{"a": [1,, 2]}', '{"a": "// not a comment" x}', '{"a": 1 /* open'])
def test_a_broken_file_is_not_taken_for_jsonc(tmp_path: Path, text):
    with pytest.raises(StoreError, match="does not parse"):
        install._load_json(tmp_path / "x.json", text)


def test_a_settings_file_with_a_byte_order_mark_is_merged(project: Path, tmp_path: Path):
    path = project / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_bytes(b'\xef\xbb\xbf{"env": {"FOO": "1"}}\r\n')
    proc = _cli("install", "--project", str(project), cwd=project, home=tmp_path / "home")
    assert proc.returncode == 0, proc.stderr
    settings = json.loads(path.read_text(encoding="utf-8"))
    assert settings["env"] == {"FOO": "1"} and _commands(settings)


@pytest.mark.parametrize("indent,newline", [("    ", "\r\n"), ("\t", "\n"), ("  ", "\r\n")])
def test_a_rewritten_config_keeps_its_line_endings_and_indent(project: Path, tmp_path: Path, indent, newline):
    path = project / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_bytes((json.dumps(OTHER_SETTINGS, indent=indent) + "\n").replace("\n", newline).encode("utf-8"))
    proc = _cli("install", "--project", str(project), cwd=project, home=tmp_path / "home")
    assert proc.returncode == 0, proc.stderr
    text = path.read_bytes().decode("utf-8")
    assert text == json.dumps(json.loads(text), indent=indent).replace("\n", newline) + newline


def test_a_config_with_a_key_twice_is_refused_not_rewritten(project: Path, tmp_path: Path):
    path = project / ".mcp.json"
    text = '{"mcpServers": {"a": {"command": "x"}}, "mcpServers": {"b": {"command": "y"}}}\n'
    path.write_text(text, encoding="utf-8")
    proc = _cli("install", "--project", str(project), cwd=project, home=tmp_path / "home")
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert str(path) in proc.stderr and '"mcpServers" twice' in proc.stderr
    assert path.read_text(encoding="utf-8") == text


def test_a_settings_file_that_is_not_utf8_is_refused_with_what_to_do(project: Path, tmp_path: Path):
    path = project / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_bytes(b'{"env": {"NAME": "Caf\xe9"}}')
    proc = _cli("install", "--project", str(project), cwd=project, home=tmp_path / "home")
    assert proc.returncode != 0 and "not valid UTF-8" in proc.stderr and "Traceback" not in proc.stderr
    assert path.read_bytes() == b'{"env": {"NAME": "Caf\xe9"}}'


@pytest.mark.parametrize("client,relative,key", [
    ("cursor", ".cursor/mcp.json", "mcpServers"), ("vscode", ".vscode/mcp.json", "servers"),
    ("gemini", ".gemini/settings.json", "mcpServers"),
])
def test_json_clients_round_trip_next_to_other_servers(project: Path, tmp_path: Path, client, relative, key):
    path = project / relative
    _write(path, {key: {"other": {"command": "x"}}, "theme": "dark"})
    home = tmp_path / "home"
    proc = _cli("install", "--client", client, "--write", "--project", str(project), cwd=project, home=home)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["theme"] == "dark" and data[key]["other"] == {"command": "x"} and "context-keeper" in data[key]
    _cli("uninstall", "--client", client, "--project", str(project), cwd=project, home=home)
    assert json.loads(path.read_text(encoding="utf-8")) == {key: {"other": {"command": "x"}}, "theme": "dark"}


def test_windsurf_writes_the_user_config(project: Path, tmp_path: Path):
    home = tmp_path / "home"
    _cli("install", "--client", "windsurf", "--write", "--project", str(project), cwd=project, home=home)
    data = json.loads((home / ".codeium" / "windsurf" / "mcp_config.json").read_text(encoding="utf-8"))
    assert "context-keeper" in data["mcpServers"]


def test_codex_toml_round_trip_keeps_other_tables(project: Path, tmp_path: Path):
    original = 'model = "o4"\n\n[mcp_servers.other]\ncommand = "x"\nargs = []\n\n[profiles.fast]\nmodel = "mini"\n'
    home, path = _codex_config(tmp_path, original)
    _cli("install", "--client", "codex", "--write", "--project", str(project), cwd=project, home=home)
    text = path.read_text(encoding="utf-8")
    assert "[mcp_servers.context-keeper]" in text and "[mcp_servers.other]" in text and "[profiles.fast]" in text

    parsed = tomllib.loads(text)
    assert parsed["mcp_servers"]["context-keeper"]["args"][-1] == "serve"
    _cli("install", "--client", "codex", "--write", "--project", str(project), cwd=project, home=home)
    assert path.read_text(encoding="utf-8") == text
    _cli("uninstall", "--client", "codex", "--project", str(project), cwd=project, home=home)
    assert tomllib.loads(path.read_text(encoding="utf-8")) == tomllib.loads(original)


def test_print_shows_a_config_without_writing(project: Path, tmp_path: Path):
    proc = _cli("install", "--client", "cursor", "--project", str(project), cwd=project, home=tmp_path / "home")
    assert '"mcpServers"' in proc.stdout and "--write" in proc.stdout
    assert not (project / ".cursor").exists()


def test_command_styles():
    console = install.hook_command("scope-guard", "console", script="/venv/bin/context-keeper-hook")
    assert console == '"/venv/bin/context-keeper-hook" scope-guard' and install.is_our_command(console)
    module = install.hook_command("scope-guard", "module", python="/py")
    assert module == '"/py" -m context_keeper.hookio scope-guard' and install.is_our_command(module)
    launcher = install.hook_command("scope-guard", "launcher", python="/py")
    assert launcher.startswith('"/py" -S "') and launcher.endswith('hooks/scope_guard.py" || exit 1')
    assert install.is_our_command(launcher)
    repo = install.PACKAGE_PARENT
    assert "$CLAUDE_PROJECT_DIR/hooks/scope_guard.py" in install.hook_command("scope-guard", "launcher", repo, "/py")


@pytest.mark.parametrize("command,ours", [
    ("context-keeper-hook session-start", True),  # the bare form older versions wrote
    ('"/home/me/.venv/bin/context-keeper-hook" session-start', True),
    ("python /path/to/context-keeper/hooks/session_start.py", True),
    ('"/home/bob/.venv/bin/python" -S "/home/bob/src/ck/hooks/session_start.py"', True),  # a teammate's launcher
    ('"/usr/bin/python3" -S "/opt/mine/hooks/lint.py"', False),
    ("python3 ~/tools/my-hooks/hooks/session_start.py", False),
    ("echo session_start.py", False),
    ("./guard.sh", False),
    (None, False),
])
def test_ownership_of_hook_commands(command, ours):
    assert install.is_our_command(command) is ours


def test_merge_refuses_a_non_object_hooks_key():
    with pytest.raises(StoreError, match="fix it by hand"):
        install.merge_claude_hooks({"hooks": []}, [("Stop", None, "context-keeper-hook post-compact", 30)])


def test_load_json_names_the_parse_position(tmp_path: Path):
    with pytest.raises(StoreError, match="line 1, column"):
        install._load_json(tmp_path / "x.json", "{nope")


# ------------------------------------------------------------------ settings of an unexpected shape


@pytest.mark.parametrize("value", [{"hooks": []}, {"matcher": "", "hooks": [{"type": "command", "command": "x"}]},
                                   "echo hi", None])
def test_an_event_that_is_not_a_list_is_refused_naming_file_and_key(project: Path, tmp_path: Path, value):
    path = project / ".claude" / "settings.json"
    _write(path, {"hooks": {"Stop": value, "PreToolUse": OTHER_SETTINGS["hooks"]["PreToolUse"]}})
    before = path.read_bytes()
    proc = _cli("install", "--project", str(project), cwd=project, home=tmp_path / "home")
    assert proc.returncode == 5 and "Traceback" not in proc.stderr
    assert str(path) in proc.stderr and '"hooks.Stop"' in proc.stderr and "expects a list" in proc.stderr
    assert path.read_bytes() == before and not (project / ".mcp.json").exists()
    assert not list(project.rglob("*.bak-*"))


@pytest.mark.parametrize("text", ['{"hooks": []}\n', '{"hooks": {},}\n', "[]\n", '{"mcpServers": []}\n'])
def test_a_config_install_cannot_edit_is_one_exit_code_whatever_is_wrong_with_it(project: Path, tmp_path: Path,
                                                                                    text):
    # Unparsable or of the wrong shape, the remedy is the same (fix the file by hand), so is the code.
    name = ".mcp.json" if "mcpServers" in text else ".claude/settings.json"
    path = project / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    proc = _cli("install", "--project", str(project), cwd=project, home=tmp_path / "home")
    assert proc.returncode == 5 and "Traceback" not in proc.stderr and str(path) in proc.stderr, proc.stderr
    assert path.read_text(encoding="utf-8") == text


def test_an_odd_event_we_do_not_write_to_is_left_alone():
    settings = {"hooks": {"Notification": {"hooks": []}}}
    merged = install.merge_claude_hooks(settings, [("Stop", None, "context-keeper-hook post-compact", 30)])
    assert merged["hooks"]["Notification"] == {"hooks": []} and len(merged["hooks"]["Stop"]) == 1


# ------------------------------------------------------------------ codex config.toml


CODEX_SPEC = {"command": "/venv/bin/context-keeper", "args": ["serve"]}


@needs_tomllib
@pytest.mark.parametrize("header", ['[mcp_servers."context-keeper"]', "[mcp_servers.'context-keeper']",
                                    "[ mcp_servers . context-keeper ]", "[mcp_servers.context-keeper]  # ours"])
def test_codex_recognises_every_spelling_of_our_table(header):
    text = f'model = "o4"\n\n{header}\ncommand = "context-keeper"\nargs = ["serve"]\n\n[profiles.fast]\nmodel = "m"\n'
    merged = install.merge_codex(text, CODEX_SPEC)
    parsed = tomllib.loads(merged)
    assert parsed["mcp_servers"]["context-keeper"] == CODEX_SPEC and parsed["profiles"] == {"fast": {"model": "m"}}
    assert install.merge_codex(merged, CODEX_SPEC) == merged
    assert tomllib.loads(install.merge_codex(merged, None)) == {"model": "o4", "profiles": {"fast": {"model": "m"}}}


@needs_tomllib
def test_codex_reinstall_keeps_keys_the_user_added(project: Path, tmp_path: Path):
    home, path = _codex_config(tmp_path, '[mcp_servers."context-keeper"]\n# pinned by me\ncommand = "context-keeper"\n'
                                         'args = [\n  "serve",\n]\nenv = { CONTEXT_KEEPER_PROJECT = "/src/app" }\n'
                                         'startup_timeout_sec = 30\n\n[mcp_servers."context-keeper".tools.get_context]\n'
                                         'enabled = true\n')
    proc = _cli("install", "--client", "codex", "--write", "--project", str(project), cwd=project, home=home)
    assert proc.returncode == 0, proc.stderr
    text = path.read_text(encoding="utf-8")
    ours = tomllib.loads(text)["mcp_servers"]["context-keeper"]
    assert ours["env"] == {"CONTEXT_KEEPER_PROJECT": "/src/app"} and ours["startup_timeout_sec"] == 30
    assert ours["tools"] == {"get_context": {"enabled": True}} and "# pinned by me" in text
    assert ours["args"][-1] == "serve" and Path(ours["command"]).is_absolute()


@needs_tomllib
@pytest.mark.parametrize("text", ['[mcp_servers]\ncontext-keeper = { command = "x", args = [] }\n',
                                  'mcp_servers.context-keeper.command = "x"\n', "[mcp_servers\n"])
def test_codex_refuses_what_it_cannot_edit_safely(project: Path, tmp_path: Path, text):
    home, path = _codex_config(tmp_path, text)
    proc = _cli("install", "--client", "codex", "--write", "--project", str(project), cwd=project, home=home)
    assert proc.returncode == 5 and "Traceback" not in proc.stderr and str(path) in proc.stderr
    assert path.read_text(encoding="utf-8") == text


# ------------------------------------------------------------------ absolute commands


def _fake_install(bin_dir: Path) -> None:
    """A venv-like bin directory whose console scripts answer with their name and arguments."""
    bin_dir.mkdir(parents=True)
    for name in ("context-keeper", "context-keeper-hook"):
        script = bin_dir / name
        script.write_text(f'#!/bin/sh\necho "{name} $*"\n', encoding="utf-8")
        script.chmod(script.stat().st_mode | stat.S_IXUSR)


def test_console_commands_are_absolute_paths(monkeypatch, tmp_path: Path):
    bin_dir = tmp_path / "venv" / "bin"
    _fake_install(bin_dir)
    monkeypatch.setattr(sys, "executable", str(bin_dir / "python"))
    monkeypatch.setenv("PATH", "/nonexistent")
    assert install.resolve_style("console") == "console"
    assert install.hook_command("session-start", "console") == f'"{bin_dir}/context-keeper-hook" session-start'
    assert install.server_spec("console") == {"command": str(bin_dir / "context-keeper"), "args": ["serve"]}
    assert install.server_spec("module")["command"] == str(bin_dir / "python")


@pytest.mark.skipif(os.name != "posix", reason="runs the written commands through /bin/sh")
def test_installed_wiring_runs_from_a_shell_without_the_venv_on_path(project: Path, tmp_path: Path):
    bin_dir = tmp_path / "venv" / "bin"
    _fake_install(bin_dir)
    env = hook_env(PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")  # an activated venv
    proc = subprocess.run([sys.executable, "-m", "context_keeper", "install", "--command-style", "console",
                           "--project", str(project), "--home", str(tmp_path / "home")],
                          cwd=project, capture_output=True, text=True, env=env, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    settings = json.loads((project / ".claude" / "settings.json").read_text(encoding="utf-8"))
    server = json.loads((project / ".mcp.json").read_text(encoding="utf-8"))["mcpServers"]["context-keeper"]
    bare_shell = {"PATH": "/nonexistent", "HOME": str(tmp_path)}
    for _, command in _commands(settings):
        assert Path(shlex.split(command)[0]).is_absolute(), command
        run = subprocess.run(["/bin/sh", "-c", command], capture_output=True, text=True, env=bare_shell,
                             timeout=60, check=False)
        assert run.returncode == 0 and "not found" not in run.stderr, (command, run.stderr)
    assert Path(server["command"]).is_absolute() and os.access(server["command"], os.X_OK)


def test_user_level_reinstall_replaces_the_bare_commands_older_versions_wrote(project: Path, tmp_path: Path):
    home = tmp_path / "home"
    path = home / ".claude" / "settings.json"
    _write(path, {"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "context-keeper-hook session-start"}]}]}})
    proc = _cli("install", "--user", "--project", str(project), cwd=project, home=home)
    assert proc.returncode == 0, proc.stderr
    commands = [c for _, c in _commands(json.loads(path.read_text(encoding="utf-8")))]
    assert len(commands) == len(install.CLAUDE_HOOKS) and "context-keeper-hook session-start" not in commands
    _cli("uninstall", "--user", "--project", str(project), cwd=project, home=home)
    assert not path.exists()  # it held only our hooks (a backup is kept)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_backups_of_project_files_stay_out_of_git(project: Path, tmp_path: Path):
    subprocess.run(["git", "init", "-q", str(project)], check=True, timeout=60)
    _write(project / ".mcp.json", OTHER_MCP)
    home = tmp_path / "home"
    for command in ("install", "uninstall", "install"):
        proc = _cli(command, "--project", str(project), cwd=project, home=home)
        assert proc.returncode == 0, proc.stderr
    assert "backup: .context/install-backups/.mcp.json.bak-" in proc.stdout
    assert len(list((project / ".context" / "install-backups").rglob("*.bak-*"))) >= 3
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=project,
                            capture_output=True, text=True, check=True, timeout=60).stdout
    assert ".bak-" not in status and "install-backups" not in status


def test_before_init_a_project_file_backup_goes_to_the_user_state_directory(tmp_path: Path):
    repo, home = tmp_path / "repo", tmp_path / "home"
    _write(repo / ".mcp.json", OTHER_MCP)
    proc = _cli("install", "--project", str(repo), cwd=repo, home=home)
    assert proc.returncode == 0, proc.stderr
    assert not (repo / ".context").exists() and not list(repo.rglob("*.bak-*"))
    backup = next(home.glob(".local/state/context-keeper/install-backups/repo-*/.mcp.json.bak-*"))
    assert json.loads(backup.read_text(encoding="utf-8")) == OTHER_MCP and str(backup) in proc.stdout


# ------------------------------------------------------------------ files a team commits


def _on_path(bin_dir: Path, **extra: str) -> dict[str, str]:
    """The environment of a machine whose PATH has context-keeper's console scripts in ``bin_dir``."""
    return hook_env(PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", **extra)


def _install_as(env: dict[str, str], *args: str, project: Path, home: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "context_keeper", *args, "--project", str(project),
                           "--home", str(home)], cwd=project, capture_output=True, text=True, env=env, timeout=60)


def test_teammates_installs_write_the_same_committed_files(project: Path, tmp_path: Path):
    shared = [project / ".claude" / "settings.json", project / ".mcp.json"]
    written = []
    for machine in ("alice", "bob"):
        bin_dir = tmp_path / machine / "venv" / "bin"
        _fake_install(bin_dir)
        proc = _install_as(_on_path(bin_dir), "install", project=project, home=tmp_path / machine)
        assert proc.returncode == 0, proc.stderr
        assert "so it can be committed" in proc.stdout
        written.append([p.read_bytes() for p in shared])
    assert written[0] == written[1]
    assert not any(str(tmp_path) in text.decode("utf-8") for text in written[0])
    settings = json.loads(written[0][0])
    assert ("SessionStart", "context-keeper-hook session-start") in _commands(settings)
    assert json.loads(written[0][1])["mcpServers"]["context-keeper"] == {
        "type": "stdio", "command": "context-keeper", "args": ["serve"]}


def test_portable_install_replaces_the_absolute_wiring_older_versions_committed(project: Path, tmp_path: Path):
    path = project / ".claude" / "settings.json"
    _write(path, {"hooks": {"SessionStart": [{"hooks": [
        {"type": "command", "command": '"/home/old/.venv/bin/context-keeper-hook" session-start', "timeout": 30},
        {"type": "command", "command": '"/home/old/.venv/bin/python" -S "/src/ck/hooks/session_start.py"'}]}]}})
    _write(project / ".mcp.json", {"mcpServers": {"context-keeper": {
        "type": "stdio", "command": "/home/old/.venv/bin/context-keeper", "args": ["serve"]}}})
    bin_dir = tmp_path / "venv" / "bin"
    _fake_install(bin_dir)
    proc = _install_as(_on_path(bin_dir), "install", project=project, home=tmp_path / "home")
    assert proc.returncode == 0, proc.stderr
    commands = [c for _, c in _commands(json.loads(path.read_text(encoding="utf-8")))]
    assert len(commands) == len(install.CLAUDE_HOOKS) and not any("/home/old" in c for c in commands)
    assert json.loads((project / ".mcp.json").read_text(encoding="utf-8"))["mcpServers"]["context-keeper"][
        "command"] == "context-keeper"


def test_without_the_scripts_on_path_a_committed_file_gets_absolute_paths_and_a_note(project: Path, tmp_path: Path):
    proc = _install_as(hook_env(PATH="/nonexistent"), "install", "--command-style", "auto", project=project,
                       home=tmp_path / "home")
    assert proc.returncode == 0, proc.stderr
    server = json.loads((project / ".mcp.json").read_text(encoding="utf-8"))["mcpServers"]["context-keeper"]
    assert Path(server["command"]).is_absolute()
    assert "is not on PATH" in proc.stderr and "--local" in proc.stderr


def test_an_explicit_command_style_is_kept_in_a_committed_file(project: Path, tmp_path: Path):
    bin_dir = tmp_path / "venv" / "bin"
    _fake_install(bin_dir)
    proc = _install_as(_on_path(bin_dir), "install", "--command-style", "console", project=project,
                       home=tmp_path / "home")
    assert proc.returncode == 0, proc.stderr
    server = json.loads((project / ".mcp.json").read_text(encoding="utf-8"))["mcpServers"]["context-keeper"]
    assert server["command"] == str(bin_dir / "context-keeper")


def test_local_install_keeps_machine_paths_out_of_the_committed_files(project: Path, tmp_path: Path):
    bin_dir = tmp_path / "venv" / "bin"
    _fake_install(bin_dir)
    env = _on_path(bin_dir)
    proc = _install_as(env, "install", "--local", "--command-style", "console", project=project,
                       home=tmp_path / "home")
    assert proc.returncode == 0, proc.stderr
    local = project / ".claude" / "settings.local.json"
    commands = [c for _, c in _commands(json.loads(local.read_text(encoding="utf-8")))]
    assert f'"{bin_dir}/context-keeper-hook" session-start' in commands
    assert not (project / ".claude" / "settings.json").exists() and not (project / ".mcp.json").exists()
    assert f"claude mcp add -s local context-keeper -- {bin_dir}/context-keeper serve" in proc.stdout
    again = _install_as(env, "install", "--local", "--command-style", "console", project=project,
                        home=tmp_path / "home")
    assert "already up to date" in again.stdout
    _install_as(env, "uninstall", "--local", project=project, home=tmp_path / "home")
    assert not local.exists()


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_local_install_says_when_git_would_pick_the_local_file_up(project: Path, tmp_path: Path):
    subprocess.run(["git", "init", "-q", str(project)], check=True, timeout=60)
    proc = _install_as(hook_env(), "install", "--local", project=project, home=tmp_path / "home")
    assert proc.returncode == 0 and "git does not ignore" in proc.stderr
    (project / ".gitignore").write_text(".claude/settings.local.json\n", encoding="utf-8")
    (project / ".claude" / "settings.local.json").unlink()
    proc = _install_as(hook_env(), "install", "--local", project=project, home=tmp_path / "home")
    assert proc.returncode == 0 and "git does not ignore" not in proc.stderr


def test_local_install_warns_when_the_committed_settings_wire_the_hooks_too(project: Path, tmp_path: Path):
    _install_as(hook_env(), "install", project=project, home=tmp_path / "home")
    proc = _install_as(hook_env(), "install", "--local", project=project, home=tmp_path / "home")
    assert proc.returncode == 0 and "would run twice" in proc.stderr


@pytest.mark.parametrize("args", [("--client", "cursor"), ("--user",), ("--client", "all")])
def test_local_is_refused_where_there_is_no_local_file(project: Path, tmp_path: Path, args):
    proc = _install_as(hook_env(), "install", "--local", *args, project=project, home=tmp_path / "home")
    assert proc.returncode == 2 and "settings.local.json" in proc.stderr and "Traceback" not in proc.stderr
    assert not (project / ".claude").exists() and not (project / ".cursor").exists()


def test_uninstall_deletes_files_that_held_only_our_entries(tmp_path: Path, monkeypatch):
    from context_keeper.cli import main

    project, home = tmp_path / "proj", tmp_path / "home"
    (project / ".context").mkdir(parents=True)
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    assert main(["install", "--client", "claude", "--project", str(project)]) == 0
    for client in ("vscode", "codex"):
        assert main(["install", "--client", client, "--project", str(project), "--write"]) == 0
    created = [project / ".claude" / "settings.json", project / ".mcp.json", project / ".vscode" / "mcp.json",
               home / ".codex" / "config.toml"]
    assert all(p.exists() for p in created)
    for client in ("claude", "vscode", "codex"):
        assert main(["uninstall", "--client", client, "--project", str(project)]) == 0
    assert [p for p in created if p.exists()] == []
    backups = project / ".context" / "install-backups"
    assert list(backups.glob(".claude/settings.json.bak-*")) and list(backups.glob(".mcp.json.bak-*"))
    assert list(backups.glob(".vscode/mcp.json.bak-*"))
    assert list(home.glob(".codex/config.toml.bak-*"))  # a user-level file's backup stays beside it
    assert [p for p in project.rglob("*.bak-*") if ".context" not in p.parts] == []  # none in the tree


def test_codex_uninstall_keeps_a_windows_file_clean():
    other = '[mcp_servers.other]\r\ncommand = "other"\r\n'
    written_on_windows = other + '\r\n[mcp_servers.context-keeper]\r\ncommand = "/x/ck"\r\nargs = []\r\n'
    assert install.merge_codex(written_on_windows, None) == other
    installed = install.merge_codex(other, {"command": "/x/context-keeper", "args": []})
    assert "\r\n" in installed and "\n" not in installed.replace("\r\n", "")  # one line-ending style
    assert install.merge_codex(installed, None) == other


def test_codex_uninstall_keeps_the_comments_above_the_next_table():
    ours = '[mcp_servers.context-keeper]\ncommand = "/x/context-keeper"\nargs = ["serve"]\n\n'
    other = 'model = "o4"\n\n# fast profile, for quick edits\n\n# (keep in sync with the team)\n[profiles.fast]\nmodel = "m"\n'
    text = other.replace("# fast", ours + "# fast", 1)
    assert install.merge_codex(text, None) == other
    assert install.merge_codex(other.replace("# fast", ours.rstrip("\n") + "\n# fast", 1), None) == other


def test_codex_install_into_a_windows_file_uses_its_line_endings():
    text = ('[mcp_servers.context-keeper]\r\ncommand = "/old/context-keeper"\r\nargs = []\r\n'
            'startup_timeout_sec = 30\r\n\r\n[profiles.fast]\r\nmodel = "m"')
    installed = install.merge_codex(text, {"command": "/x/context-keeper", "args": ["serve"]})
    assert '"/x/context-keeper"' in installed and "startup_timeout_sec = 30" in installed
    assert "\n" not in installed.replace("\r\n", "")


def test_install_in_a_subdirectory_of_an_uninitialised_repository_targets_its_root(tmp_path: Path):
    repo, home = tmp_path / "repo", tmp_path / "home"
    (repo / ".git").mkdir(parents=True)
    (repo / "src" / "deep").mkdir(parents=True)
    home.mkdir()
    result = _cli("install", "--client", "claude", "--dry-run", cwd=repo / "src" / "deep", home=home)
    assert result.returncode == 0, result.stderr
    assert f"{repo}/.claude/settings.json" in result.stdout and "src/deep/.claude" not in result.stdout
    assert "has no .context/ yet" in result.stderr and f"context-keeper init {repo}" in result.stderr


def test_install_in_an_initialised_project_gives_no_init_hint(project: Path, tmp_path: Path):
    result = _cli("install", "--client", "claude", "--dry-run", cwd=project, home=tmp_path)
    assert result.returncode == 0 and "has no .context/" not in result.stderr


def test_a_symlinked_settings_file_is_written_through_the_link_with_force(project: Path, tmp_path: Path):
    # Out of the project, the link is refused without --force (a cloned repository can commit one
    # into the user-level settings): test_untrusted_repo_hunt19 covers the refusal.
    dotfiles = tmp_path / "dotfiles" / "claude-settings.json"
    _write(dotfiles, {"model": "opus"})
    link = project / ".claude" / "settings.json"
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(dotfiles)
    result = _cli("install", "--client", "claude", "--force", cwd=project, home=tmp_path)
    assert result.returncode == 0, result.stderr
    assert link.is_symlink()
    settings = json.loads(dotfiles.read_text(encoding="utf-8"))
    assert settings["model"] == "opus" and "SessionStart" in settings["hooks"]
    assert f"updated {dotfiles} (through the link {link})" in result.stdout


@pytest.mark.parametrize("client", ["claude", "codex"])
def test_uninstall_cleans_a_symlinked_config_that_held_only_ours_and_keeps_the_link(
        project: Path, tmp_path: Path, client):
    home = tmp_path / "home"
    if client == "claude":
        link, extra = home / ".claude" / "settings.json", ["--user"]
    else:
        link, extra = home / ".codex" / "config.toml", ["--client", "codex"]
    dotfiles = tmp_path / "dotfiles" / link.name
    dotfiles.parent.mkdir(parents=True)
    dotfiles.write_text("", encoding="utf-8")
    link.parent.mkdir(parents=True)
    link.symlink_to(dotfiles)
    assert _cli("install", *extra, "--write", "--project", str(project), cwd=project, home=home).returncode == 0
    assert dotfiles.read_text(encoding="utf-8").strip()
    result = _cli("uninstall", *extra, "--project", str(project), cwd=project, home=home)
    assert result.returncode == 0, result.stderr
    assert link.is_symlink() and link.resolve() == dotfiles
    left = dotfiles.read_text(encoding="utf-8")
    assert (json.loads(left) == {}) if client == "claude" else not left.strip()


def test_vscode_user_level_is_refused_not_written_to_the_workspace(project: Path, tmp_path: Path):
    result = _cli("install", "--client", "vscode", "--user", "--write", cwd=project, home=tmp_path)
    assert result.returncode != 0 and "VS Code keeps its user-level MCP servers in your profile" in result.stderr
    assert not (project / ".vscode" / "mcp.json").exists()


@pytest.mark.parametrize("client", ["codex", "windsurf"])
def test_user_level_clients_get_no_init_hint(tmp_path: Path, client):
    repo, home = tmp_path / "repo", tmp_path / "home"
    (repo / ".git").mkdir(parents=True)
    home.mkdir()
    result = _cli("install", "--client", client, "--print", cwd=repo, home=home)
    assert result.returncode == 0 and "has no .context/" not in result.stderr


def _committed_portable(project: Path, tmp_path: Path) -> list[Path]:
    """The shared files as a teammate with context-keeper on PATH committed them."""
    bin_dir = tmp_path / "alice" / "venv" / "bin"
    _fake_install(bin_dir)
    assert _install_as(_on_path(bin_dir), "install", project=project, home=tmp_path / "alice").returncode == 0
    return [project / ".claude" / "settings.json", project / ".mcp.json"]


def test_without_the_scripts_on_path_a_committed_portable_wiring_is_left_alone(project: Path, tmp_path: Path):
    shared = _committed_portable(project, tmp_path)
    before = [p.read_bytes() for p in shared]
    proc = _install_as(hook_env(PATH="/nonexistent"), "install", project=project, home=tmp_path / "bob")
    assert proc.returncode == 0, proc.stderr
    assert [p.read_bytes() for p in shared] == before
    assert "already up to date" in proc.stdout
    assert "not on PATH here" in proc.stderr and "--local" in proc.stderr and "team's" in proc.stderr


def test_replacing_our_commands_keeps_the_order_of_events_and_groups():
    old = '"/home/bob/venv/bin/context-keeper-hook" {}'
    settings = {"hooks": {}}
    for event, matcher, ours, timeout in install.CLAUDE_HOOKS:
        group = {"matcher": matcher} if matcher else {}
        group["hooks"] = [{"type": "command", "command": old.format(ours), "timeout": timeout}]
        settings["hooks"].setdefault(event, []).append(group)
    settings["hooks"]["PreCompact"][0]["hooks"].insert(0, {"type": "command", "command": "./mine.sh"})
    desired = [(e, m, f"context-keeper-hook {ours}", t) for e, m, ours, t in install.CLAUDE_HOOKS]
    merged = install.merge_claude_hooks(settings, desired)
    assert list(merged["hooks"]) == list(settings["hooks"])
    for event, groups in settings["hooks"].items():
        assert [g.get("matcher") for g in merged["hooks"][event]] == [g.get("matcher") for g in groups]
    assert merged["hooks"]["PreCompact"][0]["hooks"] == [
        {"type": "command", "command": "./mine.sh"},
        {"type": "command", "command": "context-keeper-hook pre-compact", "timeout": 60}]
    assert install.merge_claude_hooks(merged, desired) == merged


def test_local_install_beside_committed_portable_hooks_not_runnable_here_keeps_the_team_s_wiring(
        project: Path, tmp_path: Path):
    _committed_portable(project, tmp_path)
    proc = _install_as(hook_env(PATH="/nonexistent"), "install", "--local", project=project, home=tmp_path / "bob")
    assert proc.returncode == 0, proc.stderr
    assert "not on PATH here" in proc.stderr and "it is the team's" in proc.stderr
    assert "(without --local)" not in proc.stderr and "would run twice" not in proc.stderr.split("Once")[0]


def test_user_install_warns_when_the_committed_settings_wire_the_hooks_too(project: Path, tmp_path: Path):
    _install_as(hook_env(), "install", project=project, home=tmp_path / "home")
    proc = _install_as(hook_env(), "install", "--user", project=project, home=tmp_path / "home")
    assert proc.returncode == 0, proc.stderr
    assert "would run twice" in proc.stderr and "session-start summary injected twice" in proc.stderr
    other = tmp_path / "elsewhere"
    other.mkdir()
    proc = _install_as(hook_env(), "install", "--user", project=other, home=tmp_path / "home2")
    assert proc.returncode == 0 and "would run twice" not in proc.stderr


def test_an_old_hook_name_that_cannot_be_confirmed_as_ours_is_left_with_a_note(project: Path, tmp_path: Path):
    dave = "python3 /Users/dave/src/ck/hooks/pre_compact.py"
    project_hook = "python3 $CLAUDE_PROJECT_DIR/.claude/hooks/post_compact.py"
    _write(project / ".claude" / "settings.json", {"hooks": {
        "PreCompact": [{"hooks": [{"type": "command", "command": dave}]}],
        "Stop": [{"hooks": [{"type": "command", "command": project_hook}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh"}]}]}})
    proc = _install_as(hook_env(), "install", project=project, home=tmp_path / "home")
    assert proc.returncode == 0, proc.stderr
    commands = _commands(json.loads((project / ".claude" / "settings.json").read_text(encoding="utf-8")))
    assert ("PreCompact", dave) in commands and ("Stop", project_hook) in commands  # could be the user's own
    for event, command in (("PreCompact", dave), ("Stop", project_hook)):
        assert f"left `{command}` ({event})" in proc.stderr
    assert "could not be confirmed as ours" in proc.stderr and "remove it if it is" in proc.stderr
    assert "guard.sh" not in proc.stderr
    mine = project / ".claude" / "hooks" / "post_compact.py"  # the user's own script of that name
    mine.parent.mkdir(parents=True)
    mine.write_text("print('my own')\n", encoding="utf-8")
    proc = _install_as(hook_env(), "install", project=project, home=tmp_path / "home")
    assert "(PreCompact)" in proc.stderr and "(Stop)" not in proc.stderr


def test_uninstall_from_the_committed_files_says_it_removes_them_for_the_team(project: Path, tmp_path: Path):
    _install_as(hook_env(), "install", project=project, home=tmp_path / "home")
    proc = _install_as(hook_env(), "uninstall", project=project, home=tmp_path / "home")
    assert proc.returncode == 0, proc.stderr
    for name in ("settings.json", ".mcp.json"):
        assert f"{name} is a project file a team commits" in proc.stderr
    assert "for the whole team" in proc.stderr and "uninstall --local" in proc.stderr
    assert "claude mcp remove" not in proc.stdout


@pytest.mark.parametrize("scope,args", [("user", ("--user",)), ("local", ("--local",))])
def test_uninstall_of_personal_wiring_prints_the_claude_mcp_remove_line(project: Path, tmp_path: Path, scope, args):
    home = tmp_path / "home"
    added = _install_as(hook_env(), "install", *args, project=project, home=home)
    assert f"claude mcp add -s {scope} context-keeper" in added.stdout
    proc = _install_as(hook_env(), "uninstall", *args, project=project, home=home)
    assert proc.returncode == 0, proc.stderr
    assert f"claude mcp remove -s {scope} context-keeper" in proc.stdout
    assert "for the whole team" not in proc.stderr
