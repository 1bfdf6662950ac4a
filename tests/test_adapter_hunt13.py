"""Adapter defects found in hunt 13: install/uninstall, hooks, init, doctor and the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.hook_helpers import hook_env


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "context_keeper", *args], cwd=cwd, capture_output=True,
                          text=True, env=hook_env(), timeout=60)


def _write(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def test_install_keeps_the_users_own_project_variable_and_uninstall_keeps_their_entry(tmp_path: Path):
    project = tmp_path / "mono"
    (project / ".context").mkdir(parents=True)
    home = tmp_path / "home"
    path = project / ".vscode" / "mcp.json"
    users = {"type": "stdio", "command": "context-keeper", "args": ["serve"],
             "env": {"CONTEXT_KEEPER_PROJECT": "/srv/mono/services/billing"}}
    _write(path, {"servers": {"context-keeper": users}})
    proc = _cli("install", "--client", "vscode", "--write", "--project", str(project), "--home", str(home),
                cwd=project)
    assert proc.returncode == 0, proc.stderr
    entry = json.loads(path.read_text(encoding="utf-8"))["servers"]["context-keeper"]
    assert entry["env"] == {"CONTEXT_KEEPER_PROJECT": "/srv/mono/services/billing"}
    proc = _cli("uninstall", "--client", "vscode", "--project", str(project), "--home", str(home), cwd=project)
    assert proc.returncode == 0, proc.stderr
    entry = json.loads(path.read_text(encoding="utf-8"))["servers"]["context-keeper"]
    assert entry["env"] == {"CONTEXT_KEEPER_PROJECT": "/srv/mono/services/billing"}


def test_init_where_dot_context_is_a_file_says_so(tmp_path: Path):
    (tmp_path / ".context").write_text("notes\n", encoding="utf-8")
    proc = _cli("init", str(tmp_path), cwd=tmp_path)
    assert proc.returncode == 5
    assert "is a file, not a directory: move it aside" in proc.stderr
    assert "writable" not in proc.stderr
    assert (tmp_path / ".context").read_text(encoding="utf-8") == "notes\n"


def test_doctor_finds_files_a_rule_about_node_modules_covers(tmp_path: Path):
    (tmp_path / ".git").mkdir()
    assert _cli("init", str(tmp_path), cwd=tmp_path).returncode == 0
    (tmp_path / "node_modules" / "left-pad").mkdir(parents=True)
    (tmp_path / "node_modules" / "left-pad" / "index.js").write_text("module.exports = 1\n", encoding="utf-8")
    reason = "Hand patches vanish on the next npm ci; patch-package keeps them in patches/ under review."
    _write(tmp_path / ".context" / "constraints.json", [
        {"id": "con-001", "rule": "Never patch files in node_modules by hand", "reason": reason,
         "scope": "node_modules/**/*.js"},
        {"id": "con-002", "rule": "Never patch a package entry point by hand", "reason": reason,
         "scope": "**/node_modules/*/index.js"},
    ])
    proc = _cli("doctor", "--json", "--project", str(tmp_path), cwd=tmp_path)
    findings = json.loads(proc.stdout)["findings"]
    assert [f for f in findings if f["code"] == "unmatched_scope"] == []


def test_init_name_on_an_existing_config_says_it_was_not_written(tmp_path: Path):
    assert _cli("init", str(tmp_path), "--name", "billing", cwd=tmp_path).returncode == 0
    proc = _cli("init", str(tmp_path), "--name", "payments", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "'payments' was not written" in proc.stdout
    config = json.loads((tmp_path / ".context" / "config.json").read_text(encoding="utf-8"))
    assert config["project_name"] == "billing"
    again = _cli("init", str(tmp_path), "--name", "billing", cwd=tmp_path)
    assert "Warning" not in again.stdout


def test_install_where_dot_claude_is_a_file_names_it_not_the_store(tmp_path: Path):
    assert _cli("init", str(tmp_path), cwd=tmp_path).returncode == 0
    (tmp_path / ".claude").write_text("", encoding="utf-8")
    proc = _cli("install", "--project", str(tmp_path), "--home", str(tmp_path / "home"), cwd=tmp_path)
    assert proc.returncode == 5
    assert ".context/ directory is writable" not in proc.stderr
    assert f"{tmp_path / '.claude' / 'settings.json'} is a file where a directory belongs" in proc.stderr


def test_install_names_a_second_registration_of_the_server_under_another_name(tmp_path: Path):
    assert _cli("init", str(tmp_path), cwd=tmp_path).returncode == 0
    mine = {"type": "stdio", "command": "context-keeper", "args": [], "env": {}}  # `claude mcp add -s project ck ...`
    _write(tmp_path / ".mcp.json", {"mcpServers": {"ck": mine}})
    proc = _cli("install", "--project", str(tmp_path), "--home", str(tmp_path / "home"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    servers = json.loads((tmp_path / ".mcp.json").read_text(encoding="utf-8"))["mcpServers"]
    assert servers["ck"] == mine and "context-keeper" in servers
    assert "mcpServers.ck starts context-keeper too" in proc.stderr
    other = {"type": "stdio", "command": "gh-mcp", "args": []}
    _write(tmp_path / ".mcp.json", {"mcpServers": {"github": other}})
    proc = _cli("install", "--project", str(tmp_path), "--home", str(tmp_path / "home"), cwd=tmp_path)
    assert "starts context-keeper too" not in proc.stderr


LATIN1_DIR = b"caf\xe9"  # a directory name written by a Latin-1 system: not UTF-8


def _latin1_project(tmp_path: Path) -> Path:
    import os

    path = Path(os.fsdecode(os.path.join(os.fsencode(tmp_path), LATIN1_DIR)))
    path.mkdir()
    return path


def test_init_in_a_directory_whose_name_is_not_utf8(tmp_path: Path):
    project = _latin1_project(tmp_path)
    proc = _cli("init", str(project), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    config = json.loads((project / ".context" / "config.json").read_text(encoding="utf-8"))
    assert config["project_name"] == "caf\ufffd"


@pytest.mark.anyio
async def test_summary_of_a_project_whose_folder_name_is_not_utf8_reaches_the_client(tmp_path: Path):
    from context_keeper.service import Service
    from tests.mcp_helpers import connect, ok

    project = _latin1_project(tmp_path)
    (project / ".context").mkdir()  # created by a first record: no config.json, so no project_name
    async with connect(Service(env={}), "legacy") as client:
        answer = await ok(client, "get_project_summary", {"project_dir": str(project)})
    assert answer["summary"].startswith("Project memory for caf\ufffd:")


def test_install_backs_up_a_config_in_an_uninitialised_directory_whose_name_is_not_utf8(tmp_path: Path):
    project = _latin1_project(tmp_path)
    _write(project / ".mcp.json", {"mcpServers": {"github": {"type": "stdio", "command": "gh-mcp", "args": []}}})
    home = tmp_path / "home"
    proc = _cli("install", "--project", str(project), "--home", str(home), cwd=project)
    assert proc.returncode == 0, proc.stderr
    servers = json.loads((project / ".mcp.json").read_text(encoding="utf-8"))["mcpServers"]
    assert set(servers) == {"github", "context-keeper"}
    assert list((home / ".local" / "state" / "context-keeper" / "install-backups").glob("*/.mcp.json.bak-*"))
