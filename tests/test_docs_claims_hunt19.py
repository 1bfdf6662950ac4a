"""README and docs claims checked against the product in round 19's hunt, each test failing
before its fix."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from context_keeper import cli
from context_keeper.errors import CorruptStoreFile
from context_keeper.service import Service
from tests.hook_helpers import hook_env, injected, payload, run_hook

RULE = {"rule": "Never edit applied migrations", "scope": "migrations/",
        "reason": "The runner checksums applied files; an edited one breaks every deploy."}
HAND_MADE = [{"id": "dec-001", "summary": "Use Postgres for orders", "problem": "need a db for orders",
              "why_chosen": "team knows it"}]


needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def _git(repo: Path, *args: str) -> str:
    # The machine's own excludes must not hide what the store leaves untracked.
    done = subprocess.run(["git", "-c", "core.excludesFile=/dev/null", *args], cwd=repo, check=True,
                          capture_output=True, text=True)
    return done.stdout


def _untracked(repo: Path) -> list[str]:
    return sorted(line[3:] for line in _git(repo, "status", "--porcelain", "--untracked-files=all").splitlines()
                  if line.startswith("?? "))


@pytest.fixture
def hand_made(tmp_path: Path) -> Path:
    """A committed store written by hand: entry files, no .gitignore, nothing else."""
    repo = tmp_path / "repo"
    (repo / ".context").mkdir(parents=True)
    (repo / ".context" / "decisions.json").write_text(json.dumps(HAND_MADE), encoding="utf-8")
    _git(tmp_path, "init", "-q", str(repo))
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=T", "-c", "user.email=t@example.com", "commit", "-q", "-m", "store")
    return repo


def _broken_constraints(tmp_path: Path, *, with_last_good_copy: bool) -> tuple[Service, Path]:
    svc = Service(env={}, hook_cache_delay=None)
    svc.init_project(str(tmp_path))
    path = tmp_path / ".context" / "constraints.json"
    if with_last_good_copy:
        svc.record("constraint", RULE, project_dir=str(tmp_path))  # a write keeps .last-good/
        path.write_text(path.read_text(encoding="utf-8").replace('"rule"', "rule", 1), encoding="utf-8")
    else:  # a file only ever written by hand
        (tmp_path / ".context" / ".last-good" / "constraints.json").unlink(missing_ok=True)
        path.write_text('[{rule: "Never edit applied migrations"}]', encoding="utf-8")
    return svc, path


# ------------------------------------------------------------------ 1. reload_constraints and a broken file

def test_reload_constraints_answers_from_the_last_good_copy_of_a_broken_file_and_says_so(tmp_path: Path):
    svc, _ = _broken_constraints(tmp_path, with_last_good_copy=True)
    answer = svc.reload_constraints(project_dir=str(tmp_path))
    assert [c["id"] for c in answer["constraints"]] == ["con-001"] and answer["count"] == 1
    assert "Never edit applied migrations" in answer["text"]
    assert any("does not parse (" in w and ", column " in w for w in answer["warnings"])  # the file's own error
    assert any(".last-good/" in w for w in answer["warnings"])
    assert "last good copy" in answer["text"]  # a client that shows only the text is told too


def test_reload_constraints_without_a_last_good_copy_is_an_error_that_promises_no_restore(tmp_path: Path):
    svc, _ = _broken_constraints(tmp_path, with_last_good_copy=False)
    with pytest.raises(CorruptStoreFile) as raised:
        svc.reload_constraints(project_dir=str(tmp_path))
    message = str(raised.value)
    assert "constraints.json does not parse" in message
    # It said `doctor --fix` "restores the last good copy", of which there is none.
    assert "without one it cannot repair the file" in message and "version control" in message


# ------------------------------------------------------------------ 2. bookkeeping files in a store made by hand

def _exclude(repo: Path) -> str:
    return (repo / ".git" / "info" / "exclude").read_text(encoding="utf-8")


MARKER = "# context-keeper: bookkeeping files of /.context (a store without its own .gitignore)"


@needs_git
def test_hooks_in_a_store_made_by_hand_leave_nothing_untracked_and_no_file_in_the_work_tree(hand_made: Path):
    env = hook_env(hand_made)
    assert injected(run_hook("session_start", payload("session_start_startup", hand_made), env=env)) is not None
    prompt = payload("user_prompt_submit", hand_made, prompt="postgres orders database")
    run_hook("user_prompt_submit", prompt, env=env)
    edit = payload("pre_tool_use_edit", hand_made)
    run_hook("scope_guard", edit, env=env)
    context = hand_made / ".context"
    assert (context / "sessions").is_dir() and (context / "hook_state.json").is_file()  # they did their work
    assert _untracked(hand_made) == []
    # A .context/.gitignore written here would block checking out a branch that tracks one.
    assert not (context / ".gitignore").exists()
    assert _exclude(hand_made).count(MARKER) == 1
    log = (context / "hook.log").read_text(encoding="utf-8")
    assert log.count("to .git/info/exclude") == 1 and "session-start" in log


@needs_git
def test_a_hook_excludes_the_bookkeeping_of_a_store_an_older_version_already_keeps_hook_state_in(hand_made: Path):
    env = hook_env(hand_made)
    start = payload("session_start_startup", hand_made)
    run_hook("session_start", start, env=env)
    exclude = hand_made / ".git" / "info" / "exclude"
    exclude.write_text(_exclude(hand_made).split(MARKER)[0], encoding="utf-8")  # as an older version left it
    assert _untracked(hand_made) != []
    run_hook("session_start", start, env=env)  # the fast path, which skips project resolution
    assert _untracked(hand_made) == []


@needs_git
def test_a_hook_never_replaces_a_gitignore_someone_wrote(hand_made: Path):
    own = "# ours\n*_state.json\n"
    (hand_made / ".context" / ".gitignore").write_text(own, encoding="utf-8")
    run_hook("session_start", payload("session_start_startup", hand_made), env=hook_env(hand_made))
    assert (hand_made / ".context" / ".gitignore").read_text(encoding="utf-8") == own
    assert "context-keeper" not in _exclude(hand_made)  # theirs decides
    assert not (hand_made / ".context" / "hook.log").exists() or "exclude" not in (
        hand_made / ".context" / "hook.log").read_text(encoding="utf-8")


@needs_git
def test_a_hook_in_what_a_checkout_without_the_store_left_writes_no_gitignore(tmp_path: Path):
    # Only the ignored leftovers (.lock, .last-good/) stay behind; a .gitignore written there would
    # make git refuse to check the store's branch out again.
    repo = tmp_path / "repo"
    _git(tmp_path, "init", "-q", "-b", "main", str(repo))
    commit = ("-c", "user.name=T", "-c", "user.email=t@example.com", "commit", "-q")
    _git(repo, *commit, "--allow-empty", "-m", "root")
    _git(repo, "checkout", "-q", "-b", "with-store")
    Service(env={}, hook_cache_delay=None).record("constraint", RULE, project_dir=str(repo))
    _git(repo, "add", "-A")
    _git(repo, *commit, "-m", "store")
    _git(repo, "checkout", "-q", "main")
    assert (repo / ".context" / ".last-good").is_dir() and not (repo / ".context" / ".gitignore").exists()
    run_hook("session_start", payload("session_start_startup", repo), env=hook_env(repo))
    assert not (repo / ".context" / ".gitignore").exists()
    _git(repo, "checkout", "-q", "with-store")  # raises if git refuses


@needs_git
def test_a_tool_write_in_a_store_made_by_hand_leaves_only_the_changed_entry_file_untracked(hand_made: Path):
    # The lock file and the last good copies were left untracked beside the changed entry file.
    Service(env={}, hook_cache_delay=None).record("constraint", RULE, project_dir=str(hand_made))
    assert (hand_made / ".context" / ".last-good").is_dir()
    assert _untracked(hand_made) == [".context/constraints.json"]
    assert not (hand_made / ".context" / ".gitignore").exists()


@needs_git
def test_get_in_a_store_made_by_hand_saves_its_search_files_out_of_git(hand_made: Path, capsys):
    # get skipped them, so each run built the index again; now it follows the rule the hooks follow.
    assert cli.main(["get", "postgres orders database", "--project", str(hand_made)]) == 0
    assert "dec-001" in capsys.readouterr().out
    assert (hand_made / ".context" / "search_index_state.json").is_file()
    assert _untracked(hand_made) == []


# ------------------------------------------------------------------ 3. error text

@pytest.mark.parametrize("name", ["decisions.json", "config.json"])
def test_a_json_message_that_ends_in_at_is_not_doubled_before_the_position(tmp_path: Path, name: str):
    Service(env={}).init_project(str(tmp_path))
    (tmp_path / ".context" / name).write_text('[{"summary": "a\tb"}]' if name == "decisions.json"
                                              else '{"project_name": "a\tb"}', encoding="utf-8")
    warnings = Service(env={}).get_context(query="anything", project_dir=str(tmp_path))["warnings"]
    said = [w for w in warnings if f"{name} does not parse" in w]
    assert said and all("Invalid control character at line 1" in w and "at at" not in w for w in said)
