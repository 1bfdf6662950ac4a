"""README and docs claims checked against the product in round 19's hunt, each test failing
before its fix."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from context_keeper.errors import CorruptStoreFile
from context_keeper.service import Service

RULE = {"rule": "Never edit applied migrations", "scope": "migrations/",
        "reason": "The runner checksums applied files; an edited one breaks every deploy."}
HAND_MADE = [{"id": "dec-001", "summary": "Use Postgres for orders", "problem": "need a db for orders",
              "why_chosen": "team knows it"}]


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


# ------------------------------------------------------------------ 3. error text

@pytest.mark.parametrize("name", ["decisions.json", "config.json"])
def test_a_json_message_that_ends_in_at_is_not_doubled_before_the_position(tmp_path: Path, name: str):
    Service(env={}).init_project(str(tmp_path))
    (tmp_path / ".context" / name).write_text('[{"summary": "a\tb"}]' if name == "decisions.json"
                                              else '{"project_name": "a\tb"}', encoding="utf-8")
    warnings = Service(env={}).get_context(query="anything", project_dir=str(tmp_path))["warnings"]
    said = [w for w in warnings if f"{name} does not parse" in w]
    assert said and all("Invalid control character at line 1" in w and "at at" not in w for w in said)
