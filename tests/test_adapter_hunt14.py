"""Adapter defects found in hunt 14: whose hook commands are whose, kept matchers, doctor on the wiring."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from context_keeper import install
from tests.hook_helpers import hook_env

ACTIVATE = "bash -lc 'source ~/venvs/ck/bin/activate && context-keeper-hook session-start'"
WITH_ENV = "/home/me/bin/with-env.sh context-keeper-hook scope-guard"


def _cli(*args: str, cwd: Path, home: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "context_keeper", *args, "--project", str(cwd), "--home", str(home)],
                          cwd=cwd, capture_output=True, text=True, env=env or hook_env(), timeout=60)


def _write(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def _read(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _commands(settings: dict) -> list[tuple[str, str]]:
    return [(event, h["command"]) for event, groups in settings.get("hooks", {}).items()
            for g in groups for h in g["hooks"]]


# ------------------------------------------------------------------ a wrapper is the user's


@pytest.mark.parametrize("command,ours", [
    (ACTIVATE, False),
    ("/home/me/bin/with-env.sh context-keeper-hook session-start", False),
    ("context-keeper-hook session-start || true", False),
    ("CONTEXT_KEEPER_PROJECT=/srv/mono context-keeper-hook session-start", False),
    ("uv run python -m context_keeper.hookio session-start", False),
    ("bash -c 'python /opt/context-keeper/hooks/session_start.py'", False),
    ("context-keeper-hook session-start", True),
    ('"/home/me/.venv/bin/context-keeper-hook" session-start', True),
    ("'/home/me/my venv/bin/context-keeper-hook' session-start", True),
    (r"C:\Users\me\venv\Scripts\context-keeper-hook.exe session-start", True),
    ('"/usr/bin/python3" -m context_keeper.hookio session-start', True),
    ("context-keeper hook session-start", True),
    ("python /opt/context-keeper/hooks/session_start.py", True),
])
def test_only_a_command_whose_program_is_the_hook_is_ours(command, ours):
    assert install.is_our_command(command) is ours
    assert install.hook_run_by(command) == "session-start"


def test_install_leaves_a_wrapper_and_does_not_add_the_hook_it_runs_beside_it(project: Path, tmp_path: Path):
    path = project / ".claude" / "settings.json"
    _write(path, {"hooks": {
        "SessionStart": [{"hooks": [{"type": "command", "command": ACTIVATE}]}],
        "PreToolUse": [{"matcher": install.EDIT_TOOLS, "hooks": [{"type": "command", "command": WITH_ENV}]}]}})
    home = tmp_path / "home"
    proc = _cli("install", cwd=project, home=home)
    assert proc.returncode == 0, proc.stderr
    commands = _commands(_read(path))
    assert ("SessionStart", ACTIVATE) in commands and ("PreToolUse", WITH_ENV) in commands
    assert [c for e, c in commands if e == "SessionStart"] == [ACTIVATE]
    assert [c for e, c in commands if e == "PreToolUse"] == [WITH_ENV]
    # No wrapper there: ours added, in whichever form install chose (the console script when it
    # is on PATH, else the launcher).
    assert any(e == "PostToolUse" and install.hook_run_by(c) == "scope-guard" for e, c in commands)
    assert (f"note: left `{ACTIVATE}` (SessionStart) in {path}: it is your own command, and it seems to run "
            "context-keeper's session-start hook, so install did not add") in proc.stderr
    assert "left `" + WITH_ENV + "` (PreToolUse)" in proc.stderr
    again = _cli("install", cwd=project, home=home)
    assert f"{path}: already up to date" in again.stdout
    proc = _cli("uninstall", cwd=project, home=home)
    assert proc.returncode == 0, proc.stderr
    assert _commands(_read(path)) == [("SessionStart", ACTIVATE), ("PreToolUse", WITH_ENV)]
    assert f"left `{ACTIVATE}` (SessionStart) in {path}: it is your own command, though it seems to run" in proc.stderr
    assert "remove it by hand" in proc.stderr


def test_install_says_when_a_wrapper_and_its_own_hook_both_run(project: Path, tmp_path: Path):
    path = project / ".claude" / "settings.json"
    proc = _cli("install", cwd=project, home=tmp_path / "home")
    assert proc.returncode == 0, proc.stderr
    settings = _read(path)
    settings["hooks"]["SessionStart"].append({"hooks": [{"type": "command", "command": ACTIVATE}]})
    _write(path, settings)
    proc = _cli("install", cwd=project, home=tmp_path / "home")
    assert proc.returncode == 0, proc.stderr
    assert _read(path) == settings
    assert "so that hook runs twice: remove one of them" in proc.stderr


def test_local_install_beside_a_committed_wrapper_says_the_hook_would_run_twice(project: Path, tmp_path: Path):
    _write(project / ".claude" / "settings.json", {"hooks": {
        "SessionStart": [{"hooks": [{"type": "command", "command": ACTIVATE}]}]}})
    proc = _cli("install", "--local", cwd=project, home=tmp_path / "home")
    assert proc.returncode == 0, proc.stderr
    assert "wires context-keeper hooks too" in proc.stderr and "twice" in proc.stderr


# ------------------------------------------------------------------ a matcher the user changed


def _narrow_the_edit_guard(path: Path, matcher: str) -> dict:
    settings = _read(path)
    group = next(g for g in settings["hooks"]["PreToolUse"] if g.get("matcher") == install.EDIT_TOOLS)
    group["matcher"] = matcher
    _write(path, settings)
    return settings


def test_reinstall_keeps_a_matcher_the_user_narrowed_and_says_so(project: Path, tmp_path: Path):
    path = project / ".claude" / "settings.json"
    home = tmp_path / "home"
    first = _cli("install", cwd=project, home=home)
    assert first.returncode == 0, first.stderr
    assert "kept the matcher" not in first.stdout
    untouched = _cli("install", cwd=project, home=home)
    assert f"{path}: already up to date" in untouched.stdout and "kept the matcher" not in untouched.stdout
    narrowed = _narrow_the_edit_guard(path, "Edit|Write")
    before = path.read_bytes()
    proc = _cli("install", cwd=project, home=home)
    assert proc.returncode == 0, proc.stderr
    assert path.read_bytes() == before
    assert _read(path) == narrowed
    kept = [line for line in proc.stdout.splitlines() if "kept the matcher" in line]
    assert kept == [f'{path}: kept the matcher "Edit|Write" you set on context-keeper\'s PreToolUse hook '
                    f'(scope-guard); install would have written "{install.EDIT_TOOLS}"']


def test_a_kept_matcher_stays_when_install_rewrites_the_command(project: Path, tmp_path: Path):
    path = project / ".claude" / "settings.json"
    old = '"/home/old/.venv/bin/context-keeper-hook" scope-guard'
    _write(path, {"hooks": {
        "PreToolUse": [{"matcher": "Write", "hooks": [{"type": "command", "command": old, "timeout": 10}]},
                       {"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh"}]}]}})
    proc = _cli("install", cwd=project, home=tmp_path / "home")
    assert proc.returncode == 0, proc.stderr
    groups = _read(path)["hooks"]["PreToolUse"]
    assert [g["matcher"] for g in groups] == ["Write", "Bash"]
    assert len(groups[0]["hooks"]) == 1 and groups[0]["hooks"][0]["command"] != old
    assert install.hook_run_by(groups[0]["hooks"][0]["command"]) == "scope-guard"
    assert "kept the matcher \"Write\" you set on context-keeper's PreToolUse hook (scope-guard)" in proc.stdout


def test_the_matcher_of_0x_wiring_is_replaced_with_the_current_one():
    old = "python /path/to/context-keeper/hooks/scope_guard.py"
    settings = {"hooks": {"PreToolUse": [{"matcher": "Edit|Write|NotebookEdit",  # 0.19's README
                                          "hooks": [{"type": "command", "command": old}]}]}}
    desired = [("PreToolUse", install.EDIT_TOOLS, "context-keeper-hook scope-guard", 10)]
    merged = install.merge_claude_hooks(settings, desired)
    assert merged["hooks"]["PreToolUse"] == [{"matcher": install.EDIT_TOOLS, "hooks": [
        {"type": "command", "command": "context-keeper-hook scope-guard", "timeout": 10}]}]
    assert install.kept_matchers(merged, desired) == []


# ------------------------------------------------------------------ doctor on the client wiring


def _doctor(project: Path, env: dict[str, str] | None = None) -> tuple[int, list[dict]]:
    proc = subprocess.run([sys.executable, "-m", "context_keeper", "doctor", "--json", "--project", str(project)],
                          cwd=project, capture_output=True, text=True, env=env or hook_env(), timeout=60)
    return proc.returncode, [f for f in json.loads(proc.stdout)["findings"] if f["code"] == "wiring"]


def test_doctor_names_wiring_whose_context_keeper_program_is_gone(project: Path, tmp_path: Path):
    from tests.test_install import _fake_install

    bin_dir = tmp_path / "venv" / "bin"
    _fake_install(bin_dir)
    proc = _cli("install", "--command-style", "console", cwd=project, home=tmp_path / "home",
                env=hook_env(PATH=f"{bin_dir}:/usr/bin:/bin"))
    assert proc.returncode == 0, proc.stderr
    assert _doctor(project) == (0, [])
    for script in bin_dir.iterdir():
        script.unlink()
    code, found = _doctor(project)
    assert code == 1
    assert [f["file"] for f in found] == [".claude/settings.json", ".mcp.json"]
    hooks, server = (f["message"] for f in found)
    assert all(f["severity"] == "warning" for f in found)
    assert hooks.startswith(f".claude/settings.json: {bin_dir}/context-keeper-hook does not exist, so "
                            "context-keeper's hooks there cannot run")
    assert f'SessionStart `"{bin_dir}/context-keeper-hook" session-start`' in hooks
    assert f'PreToolUse `"{bin_dir}/context-keeper-hook" scope-guard`' in hooks
    assert "Re-run `context-keeper install`" in hooks
    assert server.startswith(f".mcp.json: {bin_dir}/context-keeper does not exist, so Claude Code cannot start the "
                             f"server mcpServers.context-keeper (`{bin_dir}/context-keeper serve`)")
    assert "Re-run `context-keeper install`" in server


def test_doctor_names_bare_commands_that_are_not_on_path(project: Path, tmp_path: Path):
    _write(project / ".claude" / "settings.json", {"hooks": {
        "SessionStart": [{"hooks": [{"type": "command", "command": "context-keeper-hook session-start"}]}]}})
    _write(project / ".claude" / "settings.local.json", {"hooks": {
        "Stop": [{"hooks": [{"type": "command", "command": "context-keeper hook post-compact"}]}]}})
    _write(project / ".mcp.json", {"mcpServers": {"ck": {"type": "stdio", "command": "context-keeper",
                                                         "args": ["serve"]}}})
    code, found = _doctor(project, hook_env(PATH="/nonexistent"))
    assert code == 1
    shared, local, server = (f["message"] for f in found)
    assert shared.startswith(".claude/settings.json: `context-keeper-hook` is not on PATH, so context-keeper's hook "
                             "there cannot run")
    assert "SessionStart `context-keeper-hook session-start`" in shared
    assert "Put context-keeper on PATH" in shared and "context-keeper install --local" in shared
    assert "Stop `context-keeper hook post-compact`" in local
    assert "Re-run `context-keeper install --local`" in local and "on PATH" in local
    assert "server mcpServers.ck (`context-keeper serve`)" in server and "Put context-keeper on PATH" in server


def test_doctor_leaves_other_hooks_and_servers_alone(project: Path, tmp_path: Path):
    gone = tmp_path / "gone"
    _write(project / ".claude" / "settings.json", {"hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh"},
                                                      {"type": "command", "command": f"{gone}/lint --fast"}]}],
        "SessionStart": [{"hooks": [{"type": "command", "command": WITH_ENV},
                                    {"type": "command", "command": ACTIVATE},
                                    {"type": "command", "command": "not-a-program-anywhere"}]}]}})
    _write(project / ".mcp.json", {"mcpServers": {"github": {"type": "stdio", "command": f"{gone}/gh-mcp"}}})
    assert _doctor(project, hook_env(PATH="/nonexistent")) == (0, [])


def test_doctor_says_when_a_claude_code_file_does_not_parse(project: Path):
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_text('{"hooks": {,}}\n', encoding="utf-8")
    code, found = _doctor(project)
    assert code == 1
    assert found[0]["message"].startswith(".claude/settings.json does not parse as JSON (Expecting property name "
                                          "enclosed in double quotes at line 1, column 12)")
    assert "fix it by hand" in found[0]["message"]
