"""Three guards carried as known gaps, each test failing before its fix but for the controls, which
hold what was already right: uninstall through a
project settings file linked out of the project, a session's ``.seen`` file that is a FIFO or
far too large (links and recovery: tests/test_session_file_links.py), and a stored constraint
scope whose brace group is never closed."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from context_keeper import bounded_read
from context_keeper.hooks import state as hook_state
from context_keeper.scope import scope_covers, scope_parts
from tests.conftest import REPO
from tests.hook_helpers import hook_env, injected, payload, run_hook
from tests.test_hostile_files_hunt19 import posix_only
from tests.test_install import _cli
from tests.test_review2_hunt19 import _findings, _hand_written, _project
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
    # A control: the refusal must not catch a link that stays inside the project.
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


# ------------------------------------------------------------------ 2. a session's .seen file read with a cap


def _session_file(tmp_path: Path, session: str) -> tuple[Path, Path]:
    root = tmp_path / "p"
    _init(root, {"summary": "Orders live in Postgres", "problem": "P" * 45, "why_chosen": "W" * 65})
    path = root / ".context" / hook_state.session_file(session, hook_state.SUFFIX)
    path.parent.mkdir(parents=True, exist_ok=True)
    return root, path


STATE_OVER_A_FIFO = """
import sys
from context_keeper.hooks import state
s = state.SessionState(sys.argv[1], "s1")
before = s.unseen(["dec-001#0"])
s.mark(["dec-001#0"])
print(before, s.unseen(["dec-001#0"]))
"""


@posix_only
def test_a_fifo_in_place_of_the_seen_file_is_empty_state_and_nothing_hangs(tmp_path):
    root, path = _session_file(tmp_path, "s1")
    os.mkfifo(path)
    # In a child, so that a reader waiting on the FIFO fails the test instead of hanging it.
    # Before: opening the FIFO to read waited for a writer forever (and so did the append).
    proc = subprocess.run([sys.executable, "-c", STATE_OVER_A_FIFO, str(root / ".context")], capture_output=True,
                          text=True, env={**hook_env(), "PYTHONPATH": str(REPO)}, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[0] == "['dec-001#0'] []"
    assert stat.S_ISFIFO(os.lstat(path).st_mode)  # left as it was


def test_an_oversized_seen_file_is_empty_state(tmp_path):
    root, path = _session_file(tmp_path, "s1")
    with open(path, "wb") as handle:
        handle.write(b"dec-001#0\n")
        handle.truncate(bounded_read.SESSION_LIMIT + 1)  # sparse: no disk or memory spent
    state = hook_state.SessionState(str(root / ".context"), "s1")
    # Before: every line was read into memory, whatever the file's size. (That the session then
    # recovers is tests/test_session_file_links.py's.)
    assert state.unseen(["dec-001#0"]) == ["dec-001#0"]


def test_a_stray_byte_in_the_seen_file_spoils_only_its_own_line(tmp_path):
    root, path = _session_file(tmp_path, "s1")
    path.write_bytes(b"dec-001#0\n\xff\xfe\ndec-002#0\n")
    state = hook_state.SessionState(str(root / ".context"), "s1")
    # Before: UnicodeDecodeError, which is no OSError, escaped seen().
    assert state.unseen(["dec-001#0", "dec-002#0", "dec-003#0"]) == ["dec-003#0"]


@posix_only
def test_the_prompt_hook_still_answers_over_a_fifo_seen_file(tmp_path):
    root, path = _session_file(tmp_path, "s1")
    os.mkfifo(path)
    data = payload("user_prompt_submit", root, session_id="s1")
    data["prompt"] = "Where do orders live, Postgres?"
    result = run_hook("user_prompt_submit", data, env=hook_env(root))
    assert result.returncode == 0, result.stderr
    assert "Orders live in Postgres" in (injected(result) or ""), result.stdout


# ------------------------------------------------------------------ 3. a stored scope with an unclosed brace


def test_doctor_names_a_stored_scope_whose_brace_is_never_closed(tmp_path):
    root, _ = _project(tmp_path)
    (root / "src" / "api").mkdir(parents=True)
    (root / "src" / "api" / "a.py").write_text("x = 1\n", encoding="utf-8")
    _hand_written(root, "con-060", "src/{api,web/*.py")
    # Matching stays defined: the comma separates "src/{api" (a literal name) and "web/*.py".
    assert scope_parts("src/{api,web/*.py") == ["src/{api", "web/*.py"]
    assert scope_covers("src/{api,web/*.py", "web/x.py") and not scope_covers("src/{api,web/*.py", "src/api/a.py")
    (finding,) = _findings(root, "con-060")
    assert finding[:2] == ("warning", "unclosed_brace_in_scope")
    assert "'src/{api', 'web/*.py'" in finding[2] and "'src/{api,web}/*.py'" in finding[2]
    assert "constraints.json" in finding[2]
