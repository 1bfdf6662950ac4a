"""Portability defects found in round 18's hunt (Windows and case-insensitive file systems,
imitated on any OS), each test failing before its fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from context_keeper import install
from context_keeper.wiring_check import wiring_problems
from tests.test_install import _cli, _commands

# ------------------------------------------------------------------ Windows `.EXE` console scripts


@pytest.fixture
def exe_scripts(tmp_path: Path, monkeypatch) -> Path:
    """Console scripts as ``shutil.which`` finds them on Windows: with PATHEXT's ``.EXE``, upper case."""
    scripts = tmp_path / "Scripts"
    scripts.mkdir()
    for name in ("context-keeper-hook", "context-keeper"):
        (scripts / f"{name}.EXE").write_text("x", encoding="utf-8")
    monkeypatch.setattr(install, "console_script", lambda name: str(scripts / f"{name}.EXE"))
    return scripts


def test_a_second_install_with_exe_scripts_changes_nothing_and_uninstall_removes_them(
        empty_project: Path, tmp_path: Path, exe_scripts: Path):
    home = tmp_path / "home"
    settings = empty_project / ".claude" / "settings.local.json"
    first = _cli("install", "--local", "--command-style", "console", cwd=empty_project, home=home)
    assert first.returncode == 0, first.stderr
    written = settings.read_text(encoding="utf-8")
    assert ".EXE" in written
    second = _cli("install", "--local", "--command-style", "console", cwd=empty_project, home=home)
    assert second.returncode == 0, second.stderr
    assert settings.read_text(encoding="utf-8") == written
    assert len(_commands(json.loads(written))) == 8
    removed = _cli("uninstall", "--local", cwd=empty_project, home=home)
    assert removed.returncode == 0, removed.stderr
    assert not settings.exists() or not _commands(json.loads(settings.read_text(encoding="utf-8")))


@pytest.mark.parametrize("client", ["cursor", "codex", "windsurf"])
def test_a_second_client_install_with_an_exe_server_is_not_refused(
        empty_project: Path, tmp_path: Path, exe_scripts: Path, client: str):
    home = tmp_path / "home"
    for _ in range(2):
        proc = _cli("install", "--client", client, "--write", cwd=empty_project, home=home)
        assert proc.returncode == 0, proc.stderr
        assert "not context-keeper's" not in proc.stderr


@pytest.mark.parametrize("program", ["Context-Keeper-Hook.EXE", "context-keeper-hook.Exe",
                                     "context-keeper.EXE hook", "Context-Keeper hook"])
def test_our_hook_is_recognised_whatever_the_case_of_its_exe(program: str):
    command = f'"C:\\venv\\Scripts\\{program.split()[0]}" {" ".join(program.split()[1:] + ["session-start"])}'
    assert install.is_our_command(command)
    assert install.hook_run_by(command) == "session-start"


@pytest.mark.parametrize("program", ["context-keeper.EXE", "Context-Keeper.exe"])
def test_our_server_is_recognised_whatever_the_case_of_its_exe(program: str):
    assert install.is_our_server({"command": f"C:\\venv\\Scripts\\{program}", "args": ["serve"]})


def test_doctor_checks_hooks_and_server_named_with_an_upper_case_exe(empty_project: Path, tmp_path: Path):
    gone = tmp_path / "gone" / "Scripts"
    hook = {"type": "command", "command": f'"{gone / "context-keeper-hook.EXE"}" session-start'}
    (empty_project / ".claude").mkdir()
    (empty_project / ".claude" / "settings.json").write_text(
        json.dumps({"hooks": {"SessionStart": [{"hooks": [hook]}]}}), encoding="utf-8")
    (empty_project / ".mcp.json").write_text(json.dumps(
        {"mcpServers": {"context-keeper": {"command": str(gone / "context-keeper.EXE"), "args": ["serve"]}}}),
        encoding="utf-8")
    problems = dict(wiring_problems(empty_project, env={"PATH": ""}))
    assert "context-keeper-hook.EXE does not exist" in problems[".claude/settings.json"]
    assert "context-keeper.EXE does not exist" in problems[".mcp.json"]
