"""install / uninstall defects found in round 17's hunt, each test failing before its fix."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from context_keeper.wiring_check import wiring_problems
from tests.test_install import _cli, _codex_config, needs_tomllib, tomllib

# ------------------------------------------------------------------ Codex without a TOML parser (Python 3.10)


@pytest.fixture
def no_tomllib(monkeypatch):
    """A Python with no TOML parser (3.10 without tomli): ``import tomllib`` and ``import tomli`` fail."""
    monkeypatch.setitem(sys.modules, "tomllib", None)
    monkeypatch.setitem(sys.modules, "tomli", None)


USER_TABLE = ('[mcp_servers.context-keeper]\ncommand = "/old/bin/context-keeper"\nargs = ["serve"]\n'
              'env = { CONTEXT_KEEPER_PROJECT = "/src/app" }\nstartup_timeout_sec = 30\n\n'
              '[mcp_servers.other]\ncommand = "other"\n')
INLINE_TABLE = '[mcp_servers]\ncontext-keeper = { command = "/old/bin/context-keeper", args = ["serve"] }\n'


@pytest.mark.parametrize("verb,text", [("uninstall", USER_TABLE), ("install", INLINE_TABLE),
                                       ("install", USER_TABLE)])
def test_codex_edit_without_a_toml_parser_refuses_and_writes_nothing(project: Path, tmp_path: Path, no_tomllib,
                                                                      verb, text):
    home, path = _codex_config(tmp_path, text)
    extra = ("--write",) if verb == "install" else ()
    proc = _cli(verb, "--client", "codex", *extra, "--project", str(project), cwd=project, home=home)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert str(path) in proc.stderr and "TOML parser" in proc.stderr and "nothing was written" in proc.stderr
    assert path.read_text(encoding="utf-8") == text and not list(path.parent.glob("*.bak-*"))
    if verb == "install":  # the block to paste by hand
        assert "[mcp_servers.context-keeper]\ncommand = " in proc.stderr


def test_codex_without_a_toml_parser_still_writes_a_new_file_and_leaves_one_without_us(
        project: Path, tmp_path: Path, no_tomllib):
    home, path = _codex_config(tmp_path, "")
    path.unlink()
    proc = _cli("install", "--client", "codex", "--write", "--project", str(project), cwd=project, home=home)
    assert proc.returncode == 0, proc.stderr
    assert path.read_text(encoding="utf-8").startswith("[mcp_servers.context-keeper]\ncommand = ")
    other = 'model = "o4"\n\n[mcp_servers.other]\ncommand = "other"\n'
    path.write_text(other, encoding="utf-8")
    proc = _cli("uninstall", "--client", "codex", "--project", str(project), cwd=project, home=home)
    assert proc.returncode == 0, proc.stderr
    assert path.read_text(encoding="utf-8") == other


# ------------------------------------------------------------------ Codex --force over a server that is not ours


@needs_tomllib
def test_codex_force_replaces_a_foreign_entry_with_ours_alone(project: Path, tmp_path: Path):
    from context_keeper import install

    text = ('model = "o4"\n\n[mcp_servers.context-keeper]\nurl = "https://mcp.example.com/ck"\n'
            'bearer_token_env_var = "CK_TOKEN"\n\n[mcp_servers.context-keeper.tools.get_context]\nenabled = true\n\n'
            '# my other server\n[mcp_servers.other]\ncommand = "other"\n')
    home, path = _codex_config(tmp_path, text)
    proc = _cli("install", "--client", "codex", "--write", "--force", "--project", str(project), cwd=project, home=home)
    assert proc.returncode == 0, proc.stderr
    written = path.read_text(encoding="utf-8")
    doc = tomllib.loads(written)
    assert set(doc["mcp_servers"]["context-keeper"]) == {"command", "args"}
    assert install.is_our_server(doc["mcp_servers"]["context-keeper"])
    assert doc["mcp_servers"]["other"] == {"command": "other"} and doc["model"] == "o4"
    assert "# my other server\n[mcp_servers.other]" in written
    proc = _cli("install", "--client", "codex", "--write", "--project", str(project), cwd=project, home=home)
    assert proc.returncode == 0 and "already up to date" in proc.stdout, proc.stderr
    proc = _cli("uninstall", "--client", "codex", "--project", str(project), cwd=project, home=home)
    assert proc.returncode == 0, proc.stderr
    assert tomllib.loads(path.read_text(encoding="utf-8")) == {"model": "o4", "mcp_servers": {"other": {"command": "other"}}}


# ------------------------------------------------------------------ advice on removing the team's wiring


@pytest.mark.parametrize("client", ["vscode", "cursor", "gemini"])
def test_the_opt_out_advice_of_a_shared_uninstall_works_for_that_client(project: Path, tmp_path: Path, client):
    home = tmp_path / "home"
    _cli("install", "--client", client, "--write", "--project", str(project), cwd=project, home=home)
    proc = _cli("uninstall", "--client", client, "--project", str(project), cwd=project, home=home)
    assert proc.returncode == 0 and "whole team" in proc.stderr
    if client == "vscode":
        assert "--user" not in proc.stderr
        refused = _cli("uninstall", "--client", "vscode", "--user", "--project", str(project), cwd=project, home=home)
        assert refused.returncode == 2  # which is why the advice must not name it
    else:
        assert f"uninstall --client {client} --user" in proc.stderr
        proc = _cli("uninstall", "--client", client, "--user", "--project", str(project), cwd=project, home=home)
        assert proc.returncode == 0, proc.stderr


# ------------------------------------------------------------------ --client all includes Claude Code


def test_client_all_user_says_how_to_register_claude_codes_server(project: Path, tmp_path: Path):
    from tests.test_install import _write

    home = tmp_path / "home"
    _write(project / ".claude" / "settings.json", {"hooks": {"Stop": [{"hooks": [
        {"type": "command", "command": "context-keeper-hook post-compact"}]}]}})
    proc = _cli("install", "--client", "all", "--user", "--write", "--project", str(project), cwd=project, home=home)
    assert proc.returncode == 0, proc.stderr
    assert "claude mcp add -s user context-keeper -- " in proc.stdout
    assert "wires context-keeper hooks" in proc.stderr  # the committed settings run them too
    proc = _cli("uninstall", "--client", "all", "--user", "--project", str(project), cwd=project, home=home)
    assert proc.returncode == 0 and "claude mcp remove -s user context-keeper" in proc.stdout


# ------------------------------------------------------------------ paths the shell would read


ODD_DIRS = ["env $HOME x", 'say "hi"', "it's `here`", "a\\$b"]


@pytest.mark.parametrize("odd", ODD_DIRS)
def test_a_hook_command_reaches_a_program_whose_path_the_shell_would_read(tmp_path: Path, odd):
    from context_keeper import install
    from tests.test_install import _fake_install

    bin_dir = tmp_path / odd / "bin"
    _fake_install(bin_dir)
    command = install.hook_command("session-start", "console", script=str(bin_dir / "context-keeper-hook"))
    proc = subprocess.run(["sh", "-c", command], capture_output=True, text=True, timeout=30,
                          env={**os.environ, "HOME": str(tmp_path / "elsewhere")})
    assert proc.returncode == 0 and proc.stdout == "context-keeper-hook session-start\n", (command, proc.stderr)
    assert install.is_our_command(command) and install.hook_run_by(command) == "session-start"


@pytest.mark.parametrize("odd", ODD_DIRS)
def test_install_local_from_an_odd_path_knows_its_own_hooks_again(project: Path, tmp_path: Path, monkeypatch, odd):
    from tests.test_install import _fake_install

    bin_dir = tmp_path / odd / "bin"
    _fake_install(bin_dir)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    home, local = tmp_path / "home", project / ".claude" / "settings.local.json"
    proc = _cli("install", "--local", "--command-style", "console", "--project", str(project), cwd=project, home=home)
    assert proc.returncode == 0, proc.stderr
    pasted = proc.stdout.split("claude mcp add -s local context-keeper -- ", 1)[1].splitlines()[0]
    echoed = subprocess.run(["sh", "-c", f"printf '%s\\n' {pasted}"], capture_output=True, text=True, timeout=30,
                            env={**os.environ, "HOME": str(tmp_path / "elsewhere")}).stdout
    assert echoed.splitlines() == [str(bin_dir / "context-keeper"), "serve"]
    first = local.read_bytes()
    proc = _cli("install", "--local", "--command-style", "console", "--project", str(project), cwd=project, home=home)
    assert "already up to date" in proc.stdout and "your own command" not in proc.stderr
    assert local.read_bytes() == first
    proc = _cli("uninstall", "--local", "--project", str(project), cwd=project, home=home)
    assert proc.returncode == 0 and not local.exists(), proc.stdout + proc.stderr


def test_doctor_checks_a_path_whose_dollar_sign_is_quoted(tmp_path: Path):
    from context_keeper.wiring_check import wiring_problems
    from tests.test_install import _write

    _write(tmp_path / ".claude" / "settings.local.json", {"hooks": {"SessionStart": [{"hooks": [
        {"type": "command", "command": "'/gone/env $HOME x/bin/context-keeper-hook' session-start"}]}]}})
    problems = wiring_problems(tmp_path, env={"PATH": os.defpath, "HOME": str(tmp_path)})
    assert len(problems) == 1 and "/gone/env $HOME x/bin/context-keeper-hook does not exist" in problems[0][1]


# ------------------------------------------------------------------ a launcher whose checkout moved


def _payload(event: str, project: Path) -> str:
    return json.dumps({"session_id": "s1", "transcript_path": "", "cwd": str(project), "hook_event_name": event,
                       "prompt": "hello", "tool_name": "Edit", "tool_input": {"file_path": str(project / "a.py")},
                       "stop_hook_active": False, "source": "startup", "trigger": "auto"})


def test_launcher_hooks_of_a_checkout_that_moved_never_exit_2(project: Path, tmp_path: Path, monkeypatch):
    from context_keeper import install

    checkout = tmp_path / "ck-clone"
    shutil.copytree(install.PACKAGE_PARENT / "hooks", checkout / "hooks")
    monkeypatch.setattr(install, "PACKAGE_PARENT", checkout)
    home, local = tmp_path / "home", project / ".claude" / "settings.local.json"
    proc = _cli("install", "--local", "--project", str(project), cwd=project, home=home)
    assert proc.returncode == 0, proc.stderr
    hooks = [(event, h["command"]) for event, groups in json.loads(local.read_text(encoding="utf-8"))["hooks"].items()
             for g in groups for h in g["hooks"]]
    assert len(hooks) == len(install.CLAUDE_HOOKS) and all(str(checkout) in c for _, c in hooks)
    checkout.rename(tmp_path / "ck-moved")
    for event, command in hooks:
        run = subprocess.run(["sh", "-c", command], input=_payload(event, project), capture_output=True, text=True,
                             cwd=project, timeout=60, env={**os.environ, "CLAUDE_PROJECT_DIR": str(project)})
        assert run.returncode not in (0, 2), (event, command, run.returncode)
    problems = [m for _, m in wiring_problems(project, env={"PATH": os.defpath, "HOME": str(home)})]
    assert problems and all("non-blocking" in m and "exit 2" not in m for m in problems)


def test_a_guarded_launcher_passes_on_what_the_hook_says(empty_project: Path):
    from context_keeper import install

    command = install.hook_command("session-start", "launcher", python=sys.executable)
    assert command.endswith(" || exit 1") and install.is_our_command(command)
    run = subprocess.run(["sh", "-c", command], input=_payload("SessionStart", empty_project), capture_output=True,
                         text=True, cwd=empty_project, timeout=60,
                         env={**os.environ, "CLAUDE_PROJECT_DIR": str(empty_project)})
    assert run.returncode == 0, run.stderr


def test_install_guards_a_launcher_an_earlier_install_wrote_and_doctor_names_the_block(project: Path, tmp_path: Path):
    from context_keeper import install
    from tests.test_install import _write

    local = project / ".claude" / "settings.local.json"
    old = f'"{sys.executable}" -S "{tmp_path}/gone/hooks/user_prompt_submit.py"'  # as install wrote it before
    _write(local, {"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": old, "timeout": 20}]}]}})
    problems = [m for _, m in wiring_problems(project, env={"PATH": os.defpath})]
    assert len(problems) == 1 and "exits 2" in problems[0] and "every prompt is refused" in problems[0]
    proc = _cli("install", "--local", "--command-style", "launcher", "--project", str(project), cwd=project,
                home=tmp_path / "home")
    assert proc.returncode == 0, proc.stderr
    commands = [h["command"] for g in json.loads(local.read_text(encoding="utf-8"))["hooks"]["UserPromptSubmit"]
                for h in g["hooks"]]
    assert len(commands) == 1 and commands[0].endswith(install.LAUNCHER_GUARD) and "gone" not in commands[0]


# ------------------------------------------------------------------ a rewrite keeps the text of other entries


VSCODE_MCP = ('{\n\t"inputs": [],\n\t"servers": {\n\t\t"github": {"type": "http", '
              '"url": "https://api.githubcopilot.com/mcp/"}\n\t}\n}\n')
CLAUDE_SETTINGS = ('{\r\n  "permissions": {"allow": ["Bash(npm test)", "Read(~/.zshrc)"]},\r\n  "hooks": {\r\n'
                   '    "PreToolUse": [\r\n      {"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh"}]}\r\n'
                   '    ],\r\n    "Notification": [{"hooks": [{"type": "command", "command": "notify-send hi"}]}]\r\n  }\r\n}\r\n')


@pytest.mark.parametrize("client,path,text", [("vscode", ".vscode/mcp.json", VSCODE_MCP),
                                              ("claude", ".claude/settings.json", CLAUDE_SETTINGS)])
def test_install_then_uninstall_gives_back_the_file_byte_for_byte(project: Path, tmp_path: Path, client, path, text):
    home, path = tmp_path / "home", project / path
    path.parent.mkdir(parents=True)
    path.write_bytes(text.encode("utf-8"))
    proc = _cli("install", "--client", client, "--write", "--project", str(project), cwd=project, home=home)
    assert proc.returncode == 0, proc.stderr
    installed = path.read_bytes().decode("utf-8")
    untouched = [line.rstrip(",") for line in text.splitlines() if "{" in line and "}" in line]  # one-line entries
    assert set(untouched) <= {line.rstrip(",") for line in installed.splitlines()}, installed
    proc = _cli("uninstall", "--client", client, "--project", str(project), cwd=project, home=home)
    assert proc.returncode == 0, proc.stderr
    assert path.read_bytes() == text.encode("utf-8")


def test_a_rewrite_that_cannot_keep_the_layout_still_writes_the_right_data():
    from context_keeper import json_layout

    text = '{"b": 1, "a": {"x": [1, 2]}}\n'
    reordered = json_layout.rewrite(text, {"a": {"x": [1, 5]}, "b": 1}, "  ", "\n")
    assert reordered is None or json.loads(reordered) == {"a": {"x": [1, 5]}, "b": 1}
    edited = json_layout.rewrite(text, {"b": 1, "a": {"x": [1, 3, 4]}, "c": None}, "  ", "\n")
    assert json.loads(edited) == {"b": 1, "a": {"x": [1, 3, 4]}, "c": None} and edited.startswith('{"b": 1, "a": ')
