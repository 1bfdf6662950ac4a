"""Guards carried as known gaps, each test failing before its fix: uninstall through a project
settings file linked out of the project."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.test_install import _cli
from tests.test_untrusted_repo_hunt19 import _init

# ------------------------------------------------------------------ 1. uninstall through a linked settings file


def _user_wired(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A project and a home whose user-level settings hold context-keeper's hooks beside the
    user's own key: (project, home, the user-level settings file)."""
    project, home = tmp_path / "evil", tmp_path / "home"
    _init(project)
    user_settings = home / ".claude" / "settings.json"
    user_settings.parent.mkdir(parents=True)
    user_settings.write_text('{"model": "opus"}\n', encoding="utf-8")
    assert _cli("install", "--user", "--project", str(project), cwd=project, home=home).returncode == 0
    assert "SessionStart" in json.loads(user_settings.read_text(encoding="utf-8"))["hooks"]
    return project, home, user_settings


@pytest.mark.parametrize("linked", ["settings.json", ".claude"])
def test_uninstall_refuses_a_project_settings_file_that_leads_out_of_the_project(tmp_path, linked):
    project, home, user_settings = _user_wired(tmp_path)
    if linked == "settings.json":
        (project / ".claude").mkdir()
        (project / ".claude" / "settings.json").symlink_to(user_settings)
    else:
        (project / ".claude").symlink_to(home / ".claude")
    before = user_settings.read_bytes()
    # Before: uninstall followed the link and stripped the user-level wiring every project uses.
    result = _cli("uninstall", "--client", "claude", cwd=project, home=tmp_path / "other-home")
    assert result.returncode == 2, result.stdout
    assert f"symbolic link to {user_settings}" in result.stderr and "--force" in result.stderr
    assert "uninstall --user" in result.stderr
    assert user_settings.read_bytes() == before


def test_uninstall_with_force_edits_a_settings_file_linked_out_of_the_project(tmp_path):
    project, _, user_settings = _user_wired(tmp_path)
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").symlink_to(user_settings)
    result = _cli("uninstall", "--client", "claude", "--force", cwd=project, home=tmp_path / "other-home")
    assert result.returncode == 0, result.stderr
    assert json.loads(user_settings.read_text(encoding="utf-8")) == {"model": "opus"}
    assert (project / ".claude" / "settings.json").is_symlink()


def test_uninstall_through_a_link_inside_the_project_needs_no_force(tmp_path):
    project, home = tmp_path / "p", tmp_path / "home"
    _init(project)
    real = project / "config" / "claude-settings.json"
    real.parent.mkdir()
    real.write_text('{"model": "opus"}\n', encoding="utf-8")
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").symlink_to(Path("..") / "config" / "claude-settings.json")
    assert _cli("install", "--client", "claude", cwd=project, home=home).returncode == 0
    result = _cli("uninstall", "--client", "claude", cwd=project, home=home)
    assert result.returncode == 0, result.stderr
    assert json.loads(real.read_text(encoding="utf-8")) == {"model": "opus"}
